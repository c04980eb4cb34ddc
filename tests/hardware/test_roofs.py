"""Roofs for every device (issue 17): derived L2 roofs, model-filled tensor roofs, missing roofs warn."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import roofline
from conftest import fixture_analysis, fixture_names, fixture_params, shared
from conftest import ncu_actions as _actions
from roofline.hardware.attach import fill_spec_peaks
from roofline.hardware.roofs import missing_roofs
from roofline.schema import kernels_from_columns


def test_v100_full_set_l2_roof_is_achieved_over_pct_of_peak():
    """The 2022 full set stores no L2 .peak_sustained; the roof is the achieved L2 rate ÷ the report's
    own lts__t_sectors.avg.pct_of_peak_sustained_elapsed, computed here from the raw report."""
    path = shared("ncu/sm70_v100_miniweather-openacc-fp64_full.ncu-rep")
    result = roofline.analyze(roofline.read(path))
    assert result["peak_l2_bytes_per_s"].notna().all()
    assert result["peak_l2_bytes_per_s_source"].str.contains("derived").all()
    for a, (_, row) in zip(_actions(path), result.iterrows(), strict=True):
        sectors = a.metric_by_name("lts__t_sectors.sum").value()
        pct = a.metric_by_name("lts__t_sectors.avg.pct_of_peak_sustained_elapsed").value()
        dur_s = a.metric_by_name("gpu__time_duration.sum").value() * 1e-9  # ns
        expected = sectors * 32 / dur_s / (pct / 100)
        assert row["peak_l2_bytes_per_s"] == pytest.approx(expected, rel=0.005)
        # so the L2 point sits at ncu's own % of peak
        assert row["l2_bytes"] / row["duration_s"] / row["peak_l2_bytes_per_s"] * 100 == pytest.approx(pct, rel=0.005)


def test_a40_tensor_gemm_gets_a_tensor_roof_from_the_model():
    k = kernels_from_columns({"device_name": "NVIDIA A40", "compute_capability": "8.6", "sm_count": 84,
                              "sm_clock_hz": 1.74e9, "flop_tensor": 1e12, "duration_s": 1e-2,
                              "tensor_path": "src_fp16_bf16_tf32_dst_fp32"}, 1)
    out = fill_spec_peaks(k)
    assert out["peak_flop_per_s_tensor"].iloc[0] == pytest.approx(1024 * 84 * 1.74e9)
    assert "1024 FLOP/cycle/SM" in out["peak_flop_per_s_tensor_source"].iloc[0]
    assert out["peak_dram_bytes_per_s"].iloc[0] == 696e9


def test_geforce_ga102_fp32_accumulate_tensor_roof_is_half_the_pro_rate():
    cols = {"flop_tensor": 1e12, "duration_s": 1e-2, "sm_clock_hz": 1.5e9, "tensor_path": "src_fp16_dst_fp32"}
    pro = fill_spec_peaks(kernels_from_columns({**cols, "device_name": "NVIDIA RTX A6000"}, 1))
    gf = fill_spec_peaks(kernels_from_columns({**cols, "device_name": "NVIDIA GeForce RTX 3080"}, 1))
    assert pro["peak_flop_per_s_tensor"].iloc[0] / 84 == pytest.approx(2 * gf["peak_flop_per_s_tensor"].iloc[0] / 68)


def test_unknown_device_with_cc_and_sms_gets_model_roofs_but_no_dram():
    k = kernels_from_columns({"device_name": "NVIDIA Prototype", "compute_capability": "9.0", "sm_count": 100,
                              "sm_clock_hz": 1.5e9, "flop_fp32": 1e9, "duration_s": 1e-3}, 2)
    out = fill_spec_peaks(k)
    assert np.allclose(out["peak_flop_per_s_fp32"], 256 * 100 * 1.5e9)
    assert out["peak_dram_bytes_per_s"].isna().all()
    assert out["peak_dram_bytes_per_s_source"].str.startswith("unavailable").all()
    found = list(missing_roofs(roofline.analyze(out)))
    assert len(found) == 1 and found[0][1] == "NVIDIA Prototype" and found[0][2] == "DRAM"


def test_unresolvable_device_says_why_in_every_peak_source():
    out = fill_spec_peaks(kernels_from_columns({"device_name": "Mystery", "flop_fp32": 1.0, "duration_s": 1.0}, 1))
    assert out["peak_flop_per_s_fp32_source"].iloc[0].startswith(
        "unavailable: no roofs for this device: 'Mystery' is not in the spec table")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from roofline.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=300)


def test_missing_roofs_warn_and_exit_0_unless_strict(tmp_path):
    csv = shared("ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv")  # names no device
    p = _cli("analyze", str(csv))
    assert p.returncode == 0, p.stderr
    warn = [ln for ln in p.stderr.splitlines() if "warning" in ln]
    assert len(warn) == 1 and "--device" in warn[0] and "Traceback" not in p.stderr
    assert _cli("analyze", str(csv), "--strict").returncode == 1
    fixed = _cli("analyze", str(csv), "--device", "A100 SXM4 40GB")
    assert fixed.returncode == 0 and "warning" not in fixed.stderr


def test_devices_explain_shows_the_steps():
    p = _cli("devices", "--explain", "Tesla V100-DGXS-32GB")
    assert p.returncode == 0 and "V100 SXM2" in p.stdout and "read model 'v100 dgxs'" in p.stdout


def test_device_map_picks_one_of_the_candidates_of_an_ambiguous_name():
    """"NVIDIA H100" with 132 SMs is an H100 SXM or an H100 NVL: the roofs are the higher of the two until
    --device-map names the part."""
    trace = str(shared("traces/torch_h100_cuda-sync-unittest_uncompressed.pt.trace.json"))
    import json

    p = _cli("analyze", trace, "--format", "json")
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout)["rows"][0]
    assert row["peak_dram_bytes_per_s"] == 3.9e12 and "one of H100 SXM, H100 NVL" in row["peak_dram_bytes_per_s_source"]
    p = _cli("analyze", trace, "--format", "json", "--device-map", "NVIDIA H100=H100 SXM")
    assert p.returncode == 0, p.stderr
    row = json.loads(p.stdout)["rows"][0]
    assert row["peak_dram_bytes_per_s"] == 3.35e12 and row["peak_dram_bytes_per_s_source"].startswith("spec: H100 SXM")
    bad = _cli("analyze", trace, "--device-map", "NVIDIA H100")
    assert bad.returncode == 2 and "NAME=KNOWN" in bad.stderr


def test_cpu_only_trace_is_valid_exit_0_with_an_empty_result_that_says_why():
    """A trace of a run with no GPU work (HTA loads it: 15 CPU rows) is not bad input: one stderr line,
    exit 0, the table says why it has no rows, the JSON is an empty list; --strict does not change it."""
    import json

    trace = str(shared("traces/torch_cpu-only_gloo-300rank_rank34.pt.trace.json.gz"))
    p = _cli("analyze", trace)
    assert p.returncode == 0, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "CPU-only trace (gloo backend)" in p.stderr
    assert "no GPU kernels" in p.stdout and "Traceback" not in p.stderr
    j = _cli("analyze", trace, "--format", "json", "--strict")
    assert j.returncode == 0 and json.loads(j.stdout)["rows"] == []
    with pytest.raises(roofline.errors.NoGpuWorkError):  # the Python API has no row to return: typed
        roofline.read(trace)


def test_tf2_xplane_without_xla_ops_gives_timed_kernel_rows_from_the_device_planes():
    """TensorFlow 2 (not XLA) ops: the GPU planes hold 7,774 kernel/copy events and no hlo_op. Rows are
    the TF ops (their `level 0` name) with the summed event durations; FLOPs and bytes unavailable with
    the reason; the device (cc 7.0, 80 SMs, 898 GB/s, 1530 MHz) resolves to V100 SXM2 for its roofs."""
    path = shared("traces/tf2_v100_multiworker_host0.xplane.pb")
    k = roofline.read(path)
    ops = k[k["kernel_name"] != "IDLE"]
    assert len(ops) > 100 and (ops["duration_s"] > 0).all()
    assert ops["flop_fp32"].isna().all() and ops["flop_fp32_source"].str.contains("no XLA op").all()
    assert ops["dram_bytes_source"].str.startswith("unavailable").all() and ops["hlo_op"].isna().all()
    assert set(k["device_name"]) == {"V100 SXM2"} and k["peak_dram_bytes_per_s"].notna().all()
    # the events' time is all there: ops + idle = the busy planes' device time
    prov = k.attrs["roofline.provenance"][0]
    assert prov["op_occurrences"] > 0
    assert k["duration_s"].sum() == pytest.approx(prov["device_time_s"], rel=1e-6)
    p = _cli("analyze", str(path), "--top", "3")
    assert p.returncode == 0 and "V100 SXM2" in p.stdout, p.stderr


def test_gb300_sparse_fp4_roof_is_the_published_sparse_figure_not_twice_dense():
    """NVIDIA's Blackwell Ultra NVFP4: 15 PFLOPS dense, 20 sparse (not 30): the sparse roof follows the
    model's sparse rate (65536 vs 49152 FLOP/clk/SM), dense kernels keep the dense one."""
    cols = {"device_name": "NVIDIA GB300", "compute_capability": "10.3", "sm_count": 160, "sm_clock_hz": 1.9e9,
            "flop_tensor": 1e12, "duration_s": 1e-3}
    dense = fill_spec_peaks(kernels_from_columns({**cols, "tensor_path": "src_fp4_dst_fp32"}, 1))
    sparse = fill_spec_peaks(kernels_from_columns({**cols, "tensor_path": "src_fp4_dst_fp32_sparsity_on"}, 1))
    assert dense["peak_flop_per_s_tensor"].iloc[0] == pytest.approx(49152 * 160 * 1.9e9)
    assert sparse["peak_flop_per_s_tensor"].iloc[0] == pytest.approx(65536 * 160 * 1.9e9)
    assert "sparse" in sparse["peak_flop_per_s_tensor_source"].iloc[0]


def _report_as(path, name: str, cc: tuple[int, int], sms: int, boost_khz: int):
    """The frame the ncu reader builds for ``path`` (its real ncu_report launches, through the reader's own
    build_kernels_frame) with the device attributes of another GPU, and without any ``.peak_sustained``
    counter: an older full set, as the A40 / A6000 reports of the issue hold (their L2 roof must come from
    lts__t_sectors.avg.pct_of_peak_sustained_elapsed, their tensor roof from the model)."""
    from roofline.ingest.common import build_kernels_frame
    from roofline.ingest.ncu import report as ncu_rep

    launches, meta = ncu_rep.read_raw(path)
    for launch in launches:
        raw = launch["raw"]
        for k in [k for k in raw if k.endswith(".peak_sustained")]:
            del raw[k]
        raw.update({"device__attribute_display_name": name, "device__attribute_compute_capability_major": cc[0],
                    "device__attribute_compute_capability_minor": cc[1],
                    "device__attribute_multiprocessor_count": sms, "device__attribute_max_gpu_frequency_khz": boost_khz,
                    "device__attribute_clock_rate": boost_khz})
    return launches, build_kernels_frame(path, ncu_rep.FORMAT, launches, meta)


@pytest.mark.parametrize(("name", "entry", "boost_khz", "dram"), [
    ("NVIDIA A40", "A40", 1_740_000, 696e9), ("NVIDIA RTX A6000", "RTX A6000", 1_800_000, 768e9)])
def test_ga102_pro_full_report_gets_full_rate_tensor_roof_and_a_derived_l2_roof(name, entry, boost_khz, dram):
    """A real full-set report with a tensor GEMM (the T4 WMMA FP16 GEMM, FP32 accumulate), read by the real
    ncu reader, with the device attributes of an A40 / RTX A6000 (CC 8.6, 84 SMs) put in its launches (the
    shared fixtures hold no GA102 pro report). GA102 whitepaper appendix A: RTX A6000 / A40 run FP16 tensor math
    with FP32 accumulate at the full rate (1024 FLOP/clk/SM), GeForce GA102 at half (512)."""
    path = shared("ncu/sm75_t4_wmma-gemm-fp16_full-hier.ncu-rep")
    launches, k = _report_as(path, name, (8, 6), 84, boost_khz)
    result = roofline.analyze(k)
    assert set(result["device_name"]) == {name}
    gemm = result[result["kernel_short_name"] == "wmma_gemm"].iloc[0]
    assert gemm["flop_tensor"] > 0 and gemm["tensor_path"] == "src_fp16_bf16_tf32_dst_fp32"
    assert gemm["peak_flop_per_s_tensor"] == pytest.approx(1024 * 84 * gemm["sm_clock_hz"], rel=1e-9)
    assert entry in gemm["peak_flop_per_s_tensor_source"] and "1024 FLOP/cycle/SM" in gemm["peak_flop_per_s_tensor_source"]
    assert result["peak_dram_bytes_per_s"].eq(dram).all()
    # L2: achieved ÷ ncu's own % of peak, per launch, from the raw counters (within 0.5%)
    for launch, (_, row) in zip(launches, result.iterrows(), strict=True):
        raw = launch["raw"]
        dur_s = raw["gpu__time_duration.sum"] * 1e-9
        expected = raw["lts__t_sectors.sum"] * 32 / dur_s / (raw["lts__t_sectors.avg.pct_of_peak_sustained_elapsed"] / 100)
        assert row["peak_l2_bytes_per_s"] == pytest.approx(expected, rel=0.005)
        assert "derived" in row["peak_l2_bytes_per_s_source"]
    # the same report as a GeForce GA102 part: half the tensor rate with FP32 accumulate
    _, geforce = _report_as(path, "NVIDIA GeForce RTX 3090", (8, 6), 82, 1_695_000)
    g = roofline.analyze(geforce)
    g = g[g["kernel_short_name"] == "wmma_gemm"].iloc[0]
    assert g["peak_flop_per_s_tensor"] == pytest.approx(512 * 82 * g["sm_clock_hz"], rel=1e-9)


#: the gaps a fixture may have, each because the profile does not say (matched against the stated reason)
_KNOWN_GAPS = {
    "torch1.8-dev_gpu-unrecorded": "names no GPU",  # the 2021 trace records no deviceProperties
    "nsys2026.2_h100x2_mfu": "TARGET_INFO_GPU",  # a trimmed export: no GPU table, no device name anywhere
    "torch_cuda12.9_b200": "not published",  # NVIDIA publishes no CUDA-core FP16 rate for B200 (fp16 only)
}


@pytest.mark.parametrize("rel", fixture_params(fixture_names()))
def test_every_fixture_device_gets_its_roofs_each_with_a_source_or_says_why(rel):
    """Every device of every shared fixture: a compute roof for each precision its kernels use and a DRAM
    roof, each with a source; the gaps are the three the profiles themselves leave open, and say why."""
    from roofline.schema import source_column

    analysis = fixture_analysis(rel)  # a CSV export with its --device; shared with the other every-fixture tests
    if analysis.frame.empty:  # the pipeline's word for a profile without GPU work
        assert "cpu-only" in rel and not analysis.failed
        return
    result = analysis.frame
    gaps = list(missing_roofs(result))
    known = next((why for stem, why in _KNOWN_GAPS.items() if stem in rel), None)
    if known is None:
        assert gaps == [], gaps
    else:
        assert gaps and all(known in reason for *_, reason in gaps), gaps
    for col in [c for c in result.columns if c.startswith("peak_") and c.endswith(("_per_s", "_bytes_per_s"))]:
        src = source_column(col)
        if src in result:
            has = result[col].notna().to_numpy()
            assert result.loc[has, src].astype("string").str.len().gt(0).all(), (rel, col)


def test_missing_roofs_name_each_input_and_device_once_with_the_first_reason_given():
    """Rows of inputs and devices interleaved (a dataset's frame): one line per (input, device) lacking a roof,
    in order of first appearance, its reason the first one said among the rows that lack it (a row without a
    reason is passed over), and rows with their roof or no work at that precision say nothing."""
    import pandas as pd

    nan = float("nan")
    frame = pd.DataFrame({
        "source_file": pd.array(["a", "b", "a", "a", "b", "c"], dtype="string"),
        "device_name": pd.array(["X", "Y", "X", "X", "Y", None], dtype="string"),
        "flop_fp64": [1.0, 0.0, 1.0, 1.0, 2.0, 1.0],
        "peak_flop_per_s_fp64": [nan, nan, nan, 5.0, nan, 7.0],
        "peak_flop_per_s_fp64_source": pd.array([None, "unused", "why a", "counters", "why b", "spec"], dtype="string"),
        "dram_bytes": [1.0] * 6,
        "peak_dram_bytes_per_s": [1.0] * 6,
    })
    assert list(missing_roofs(frame)) == [("a", "X", "fp64", "why a"), ("b", "Y", "fp64", "why b")]
