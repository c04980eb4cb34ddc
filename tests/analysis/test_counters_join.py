"""Counters of a few sampled launches carried onto every launch of a timeline (analysis/join.py)."""

from __future__ import annotations

import numpy as np
import pytest

import roofline
from conftest import shared
from nsys_synthetic import export_of_launches
from roofline.analysis.join import NOT_A_KERNEL, UNMATCHED, join_counters, unmatched_summary

TIMELINE = "ncu/sm86_a10g_gemm-variants_metrics-all-regex.ncu-rep"  # 12 launches, time only
COUNTERS = "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"  # 4 SGEMMs with FLOPs and bytes


@pytest.fixture(scope="module")
def a10g():
    timeline, counters = roofline.read(shared(TIMELINE)), roofline.read(shared(COUNTERS))
    return timeline, counters, join_counters(timeline, counters)


def test_a10g_gemms_carry_the_counters(a10g):
    timeline, counters, joined = a10g
    assert timeline["flop_fp32"].isna().all()  # the timeline report has no FLOP counters
    got = joined[joined["flop_fp32"].notna()]
    assert got["kernel_short_name"].tolist() == ["one_blocktiling", "two_blocktiling", "vectorized_blocktiling",
                                                 "warptiling"]
    # each is a 1024³ SGEMM: 2·1024³ FLOPs (the counters give rate × duration, so within 0.1%)
    assert got["flop_fp32"].to_numpy() == pytest.approx(2 * 1024**3, rel=1e-3)
    by_name = counters.set_index("kernel_short_name")
    for _, row in got.iterrows():
        src = by_name.loc[row["kernel_short_name"]]
        assert row["flop_fp32"] == src["flop_fp32"] and row["dram_bytes"] == src["dram_bytes"]
        assert row["l2_bytes"] == src["l2_bytes"] and row["counter_samples"] == 1
        assert row["duration_s"] == timeline.loc[row.name, "duration_s"]  # time stays the timeline's
    assert got["match_method"].tolist()[:3] == ["exact: mangled name, grid, block"] * 3
    # warptiling was profiled with other template arguments and block (128 vs 256): flagged
    warp = got.iloc[3]
    assert warp["match_method"].startswith("short name only") and "short name" in warp["flags"]
    assert warp["block_x"] == 256 and by_name.loc["warptiling", "block_x"] == 128


def test_a10g_others_listed_with_their_time_share(a10g):
    timeline, _, joined = a10g
    lost = joined[joined["match_method"] == UNMATCHED]
    assert len(lost) == 8 and lost["flop_fp32"].isna().all()
    assert lost["flop_fp32_source"].str.startswith("unavailable").all()
    s = unmatched_summary(joined)
    total = sum(timeline["duration_s"])
    assert s["unmatched_time_share"] == pytest.approx(sum(lost["duration_s"]) / total)
    assert s["unmatched_launches"] == 8 and s["launches"] == 12
    assert {k["kernel_name"] for k in s["unmatched_kernels"]} == set(lost["kernel_name"])
    assert s["unmatched_kernels"][0]["kernel_name"].startswith("basic(")  # the longest first
    result = roofline.analyze(joined)
    assert result.loc[joined["flop_fp32"].notna(), "bound"].isin(["compute-bound", "latency-limited"]).all()


def test_nsys_timeline_of_the_reports_own_launches(tmp_path):
    """No nsys/ncu fixture pair shares kernels, so the timeline is an nsys export written from the
    counters report's own launches: each 5 times with other durations, plus one kernel ncu did not see."""
    counters = roofline.read(shared(COUNTERS))
    launches = []
    for rep in range(5):
        for _, k in counters.iterrows():
            dims = tuple(int(k[c]) for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"))
            launches.append((k["kernel_name"], k["kernel_short_name"], k["mangled_name"], dims, 100_000 + 1000 * rep))
    launches.append(("void other(float*)", "other", "_Z5otherPf", (1, 1, 1, 32, 1, 1), 50_000))
    from roofline.ingest.nsys import export as nsys

    timeline = nsys.read(export_of_launches(tmp_path / "run.sqlite", launches, device="NVIDIA A10G"))
    joined = join_counters(timeline, counters)
    assert (joined["match_method"][:20] == "exact: mangled name, grid, block").all()
    assert joined["match_method"].iloc[20] == UNMATCHED
    want = np.tile(counters["flop_fp32"].to_numpy(), 5)
    assert joined["flop_fp32"][:20].tolist() == want.tolist()
    assert (joined["counter_samples"][:20] == 1).all() and (joined["counter_spread"][:20] == 0).all()
    # the L2 roof comes with the L2 bytes from the ncu report (same GPU); DRAM stays the timeline's
    assert joined["peak_l2_bytes_per_s_source"][:20].str.startswith("from --counters").all()
    s = unmatched_summary(joined)
    assert s["unmatched_time_share"] == pytest.approx(50e-6 / (sum(d for *_, d in launches) * 1e-9))


def test_means_over_samples_and_copies_untouched(tmp_path):
    counters = roofline.read(shared(COUNTERS))
    twice = counters.iloc[[0, 0]].copy()
    twice["flop_fp32"] = [1e9, 3e9]
    timeline = counters.iloc[[0]].copy()
    timeline["flop_fp32"] = np.nan
    joined = join_counters(timeline, twice)
    assert joined["flop_fp32"].iloc[0] == 2e9 and joined["counter_samples"].iloc[0] == 2
    assert joined["counter_spread"].iloc[0] == pytest.approx(0.5, rel=1e-3)  # std 1e9 over mean 2e9 (FLOPs sum)
    assert "mean of 2 sampled" in joined["flop_fp32_source"].iloc[0]
    copy = timeline.assign(copy_kind="DtoD", dram_bytes=8.0)
    assert join_counters(copy, twice)["match_method"].iloc[0] == NOT_A_KERNEL
    assert join_counters(copy, twice)["dram_bytes"].iloc[0] == 8.0


def test_cli_analyze_with_counters():
    from click.testing import CliRunner

    from roofline.cli import cli

    res = CliRunner().invoke(cli, ["analyze", str(shared(TIMELINE)), "--counters", str(shared(COUNTERS)),
                                   "--format", "csv"])
    assert res.exit_code == 0, res.output
    assert "counters: 4 of 12 kernel launches matched (3 exact, 1 short name only); 92.3% of kernel time" in res.stderr
    assert "match_method" in res.stdout.splitlines()[0]


def test_kineto_ops_keep_the_model_next_to_the_counters():
    """A Kineto row is an op; one with a single kernel gets that kernel's counters by name, grid and
    block, and keeps its modelled FLOPs beside them. Counters here are hand values on the trace's own
    kernels (no ncu report of this AlexNet run exists)."""
    trace = roofline.read(shared("traces/torch_a100_alexnet_train_small.pt.trace.json.gz"))
    src = trace["duration_s_source"]
    one = trace[src.str.contains("of 1 GPU event(s) (kernel)", regex=False)].copy()
    counters = one.drop_duplicates(["mangled_name", "grid_x", "block_x"]).copy()
    counters["kernel_name"], counters["mangled_name"], counters["format"] = counters["mangled_name"], None, "ncu-rep"
    counters["flop_fp32"], counters["flop_fp32_source"] = 2e6, "hand value"
    timeline = trace.copy()
    timeline.loc[one.index, "flop_fp32"] = 1e6  # the model's count, by hand
    joined = join_counters(timeline, counters)
    got = joined.loc[one.index]
    assert (got["match_method"] == "exact: name, grid, block").all()
    assert (got["flop_fp32"] == 2e6).all() and (got["model_flop_total"] >= 1e6).all()
    ratio = got["counters_to_model_flop_ratio"]
    assert (ratio == 2e6 / got["model_flop_total"]).all()
    several = joined[src.str.contains(r"of [2-9] GPU event\(s\) \(kernel\)", regex=True)]
    assert several["match_method"].str.startswith("unmatched: an op with several").all()
    copies = joined[src.str.contains("gpu_mem", regex=False)]
    assert len(copies) and (copies["match_method"] == NOT_A_KERNEL).all()


def test_demangler_spellings_match_as_one_name():
    """ncu writes template arguments as <(int)32, (bool)0>, CUPTI (nsys, Kineto) as <32, false>."""
    counters = roofline.read(shared(COUNTERS)).iloc[[0]].copy()
    counters["kernel_name"], counters["mangled_name"] = "void k<(int)32, (bool)0, (unsigned int)7>(int)", None
    timeline = counters.copy()
    timeline["kernel_name"], timeline["flop_fp32"] = "void k<32, false, 7>(int)", np.nan
    joined = join_counters(timeline, counters)
    assert joined["match_method"].iloc[0] == "exact: name, grid, block"
    assert joined["flop_fp32"].iloc[0] == counters["flop_fp32"].iloc[0]


def test_counters_from_another_gpu_are_flagged():
    counters = roofline.read(shared(COUNTERS)).iloc[[0]].copy()
    timeline = counters.assign(device_name="NVIDIA H100 80GB HBM3", flop_fp32=np.nan)
    joined = join_counters(timeline, counters)
    assert joined["flop_fp32"].iloc[0] == counters["flop_fp32"].iloc[0]
    assert joined["flags"].iloc[0] == "counters profiled on another GPU (NVIDIA A10G)"


def test_tensor_path_and_its_spec_roof_follow_the_counters():
    """The T4 WMMA GEMM's tensor path comes from ncu; the timeline row's tensor roof is then the spec
    table's for that path (a timeline row had none: its roof was the default one)."""
    counters = roofline.read(shared("ncu/sm75_t4_wmma-gemm-fp16_full-hier.ncu-rep"))
    gemm = counters[counters["kernel_short_name"] == "wmma_gemm"]
    timeline = gemm.assign(tensor_path=None, flop_tensor=np.nan, peak_flop_per_s_tensor=np.nan,
                           peak_flop_per_s_tensor_source=None)
    joined = join_counters(timeline, counters)
    row = joined.iloc[0]
    assert row["tensor_path"] == "src_fp16_bf16_tf32_dst_fp32" and row["flop_tensor"] == gemm["flop_tensor"].iloc[0]
    assert row["peak_flop_per_s_tensor_source"].startswith("spec: T4")
    from roofline.hardware.names import lookup
    from roofline.hardware.specs import spec_tensor_figure

    spec = lookup("Tesla T4")
    key, _ = spec_tensor_figure(spec, row["tensor_path"])
    assert row["peak_flop_per_s_tensor"] == pytest.approx(spec.flop_per_s_at(key, row["sm_clock_hz"]))


def test_an_ncu_csv_export_as_counters():
    """CSV exports have no mangled names: their launches match by name, grid and block; two launches of
    randomInit with other grids are each their own key."""
    counters = roofline.read(shared("ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv"))
    timeline = counters.assign(flop_fp32=np.nan, flop_fp32_source="unavailable: timeline")
    joined = join_counters(timeline, counters)
    assert (joined["match_method"] == "exact: name, grid, block").all()
    assert joined["flop_fp32"].tolist() == counters["flop_fp32"].tolist()
    assert (joined["counter_samples"] == 1).all()
