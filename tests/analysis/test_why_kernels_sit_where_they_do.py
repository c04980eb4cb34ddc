"""Why a kernel sits where it does (analysis/diagnose.py, pipes.py, collect.py) against independent values:
the reports' own metrics and rule results read with the real ncu_report, the trace's own events, and rules
checked by hand on synthetic rows."""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

import roofline
from browser import browser, open_page  # noqa: F401 - pytest fixtures
from conftest import REPORTS, analysed, cli, kernel_row, ncu_actions, shared
from roofline.analysis import collect
from roofline.analysis.diagnose import evidence_data, match
from roofline.analysis.pipes import CO_CRITICAL_POINTS, binding, findings, pipe_bound, pipe_columns
from roofline.ingest.ncu.csv_export import short_name

_PIPE = re.compile(r"^sm__(?:inst_executed_pipe_(\w+?)|pipe_(\w+?)_cycles_active)\.avg\.pct_of_peak_sustained_active$")
RESNET = "traces/torch1.9_v100_resnet50_train_shapes.pt.trace.json.gz"
SHAPELESS = "traces/torch_v100_2rank-nccl_rank1_large216k.pt.trace.json.gz"
BASIC = "ncu/sm75_rtx2060s_strategy-kernel-10launches_basic.ncu-rep"


def _finite(v):
    return v is not None and not isinstance(v, str) and math.isfinite(float(v))


@pytest.mark.parametrize("name", REPORTS)
def test_pipe_utilisations_equal_the_reports_own_metrics(name):
    path = shared(f"ncu/{name}")
    frame = roofline.read(path)
    pipes = pipe_columns(frame)
    for k, a in enumerate(ncu_actions(path)):
        own = {n: float(a[n].value()) for n in a.metric_names() if _PIPE.match(n) and _finite(a[n].value())}
        text = frame["pipe_pct_json"].iloc[k]
        if not own:
            assert pd.isna(text) and pd.isna(pipes["binding_pipe"].iloc[k])
            continue
        assert json.loads(text) == own  # every pipe metric, exactly as the report holds it
        # the binding pipe is the busiest: its % is the largest of the report's pipe metrics
        assert pipes["binding_pipe_pct"].iloc[k] == max(own.values())
        top = pipes["binding_pipe"].iloc[k]
        assert any(v == max(own.values()) and (m.group(1) or m.group(2)) == top
                   for n, v in own.items() if (m := _PIPE.match(n)))


def test_the_h800_report_gives_the_issues_pipe_figures():
    """The issue's own numbers (H800 flash-attention report, its first kernel): ALU 55.7%, FMA 39.0%, XU 15.6%,
    tensor 0.7%; ALU binds (ncu's HighPipeUtilization rule names it too)."""
    frame = roofline.read(shared("ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep"))
    util = json.loads(frame["pipe_pct_json"].iloc[0])
    assert round(util["sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"], 1) == 55.7
    assert round(util["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"], 1) == 39.0
    assert round(util["sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active"], 1) == 15.6
    assert round(util["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"], 1) == 0.7
    assert pipe_columns(frame)["binding_pipe"].iloc[0] == "alu"
    rule = next(r for r in json.loads(frame["ncu_rules_json"].iloc[0]) if r["rule"] == "HighPipeUtilization")
    assert rule["message"].startswith("ALU is the highest-utilized pipeline (55.7%)")


@pytest.mark.parametrize("name", REPORTS)
def test_rule_results_equal_rule_results_as_dicts(name):
    path = shared(f"ncu/{name}")
    frame = roofline.read(path)
    for k, a in enumerate(ncu_actions(path)):
        theirs = a.rule_results_as_dicts()
        text = frame["ncu_rules_json"].iloc[k]
        if not theirs:
            assert pd.isna(text)
            continue
        ours = json.loads(text)
        assert [r["title"] for r in ours] == [(d.get("rule_message") or {}).get("title", "") for d in theirs]
        assert [r["rule"] for r in ours] == [d["rule_identifier"] for d in theirs]
        assert [r["speedup_pct"] for r in ours] == [d["speedup_estimation"]["speedup"] if "speedup_estimation" in d
                                                   else None for d in theirs]
        assert [[f["metric"] for f in r["focus"]] for r in ours] == \
            [[f["name"] for f in d.get("focus_metrics", [])] for d in theirs]


def test_findings_are_ranked_by_estimated_time_saved():
    path = shared("ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep")
    frame = roofline.read(path)
    table = findings(frame)
    # the notebook API gives the same table (top level, a result's method, a run's method)
    result = roofline.analyze(frame)
    for same in (roofline.findings(result), result.findings(), roofline.run([path]).findings()):
        pd.testing.assert_frame_equal(same, table)
    expected = []
    for k, a in enumerate(ncu_actions(path)):
        dur = frame["duration_s"].iloc[k]
        for d in a.rule_results_as_dicts():
            if "speedup_estimation" in d and math.isfinite(dur):
                expected.append(d["speedup_estimation"]["speedup"] / 100 * dur)
    ranked = table.dropna(subset=["est_time_saved_s"])
    assert sorted(expected, reverse=True) == pytest.approx(ranked["est_time_saved_s"].tolist(), rel=1e-12)
    assert ranked["rank"].tolist() == list(range(1, len(ranked) + 1))
    first = ranked.iloc[0]  # the tail effect of a 34 µs launch: 50% of it (ncu's global estimate)
    assert first["title"] == "Tail Effect" and first["speedup_type"] == "global" and first["est_speedup_pct"] == 50.0


def test_terminal_and_html_rank_the_findings_by_estimated_time_saved(tmp_path, open_page):
    from roofline.report import html

    path = shared("ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep")
    # independently: every estimate of the report × its launch's gpu__time_duration, largest first
    saved = sorted(((d["speedup_estimation"]["speedup"] / 100 * a["gpu__time_duration.sum"].value() * 1e-9,
                     d["rule_message"]["title"]) for a in ncu_actions(path) for d in a.rule_results_as_dicts()
                    if "speedup_estimation" in d and _finite(a["gpu__time_duration.sum"].value())), reverse=True)
    out = cli("analyze", path).stdout
    block = out[out.index("ncu's findings by estimated time saved"):].splitlines()
    assert block[0].startswith(f"ncu's findings by estimated time saved ({len(saved)} with an estimate")
    assert [ln.split(": ")[0].strip() for ln in block[1:4]] == [f"{i}. {t}" for i, (_, t) in enumerate(saved[:3], 1)]
    assert block[1].endswith(f"= {saved[0][0] * 1e6:.3g} µs")
    page, problems = open_page(html.write(roofline.analyze(roofline.read(path)), tmp_path / "r.html"))
    rows = page.locator("#findings-table tbody tr").all_inner_texts()
    assert len(rows) == min(10, len(saved)) and rows[0].split("\t")[:2] == ["1", saved[0][1]]
    assert problems == []


def test_terminal_notes_carry_the_top_two_findings():
    frame = roofline.analyze(roofline.read(shared("ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep")))
    note = frame["analysis_note"].iloc[1]
    assert "ncu: Small Grid (est. global speedup 94%" in note and "ncu: Achieved Occupancy (est. global speedup 83%" in note
    assert note.count("ncu: ") == 2


def test_resnet_winograd_rows_say_winograd_and_no_row_says_wrong_peak():
    frame = roofline.run([shared(RESNET)]).frame
    over = frame[frame["over_roof"].fillna(False).astype(bool) & (frame["binding_roof"] == "compute")]
    assert len(over) == 216  # every one a 3×3 convolution whose op launched cuDNN Winograd kernels
    assert over["analysis_note"].astype(str).str.contains("above the compute roof: Winograd: cuDNN kernel").all()
    assert over["op_kernels"].str.contains("winograd", case=False).all()
    forward = over[over["kernel_name"] == "aten::cudnn_convolution"]
    assert len(forward) and forward["op_input_dims"].str.contains(r",3,3\]", regex=True).all()  # 3×3 weights
    assert not frame["analysis_note"].astype(str).str.contains("wrong peak").any()


def test_resnet_conv_kernels_are_the_ops_own_events():
    """op_kernels against the trace itself: the kernels launched under one cudnn_convolution op (its correlation)."""
    frame = roofline.read(shared(RESNET))
    row = frame[(frame["kernel_name"] == "aten::cudnn_convolution") & frame["op_kernels"].notna()].iloc[0]
    with gzip.open(shared(RESNET)) as fh:
        events = json.loads(fh.read())["traceEvents"]
    names = {e["name"] for e in events if e.get("cat") == "Kernel"}
    assert set(row["op_kernels"].split("\n")) <= names


@pytest.mark.parametrize("rel", ["ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep", "traces/jax0.8_rocm_mi300x_elementwise.xplane.pb",
                                 "traces/jax_tpuv6e-4chip_host-offload-allreduce.xplane.pb"])
def test_points_above_a_roof_name_their_flags_not_a_wrong_peak(rel):
    frame = roofline.run([shared(rel)]).frame
    over = frame[frame["over_roof"].fillna(False).astype(bool)]
    assert not frame["analysis_note"].astype(str).str.contains("wrong peak").any()
    for note, flags in zip(over["analysis_note"].astype(str), over["flags"].astype(str)):
        assert ("cost units" in note) == ("cost units" in flags) and ("async op" in note) == ("async op" in flags)


def _over(**kw):
    """One kernel 5× above its fp32 roof (1e14 FLOP/s against 2e13)."""
    row = kernel_row(flop_fp32=1e11, duration_s=1e-3, **kw)
    return analysed([row]).iloc[0]


def test_a_fallback_peak_is_a_likely_wrong_peak():
    r = _over(peak_flop_per_s_fp32_source="spec: X fp32: arch model gfx942 (no datasheet figure)")
    assert "likely a wrong peak: the compute peak is the architecture model" in r["analysis_note"]
    assert r["next_step"].startswith("fix the roof")


def test_counters_past_a_spec_roof_contradict_it():
    r = _over(flop_fp32_source="counters: smsp__sass_thread_inst_executed_op_ffma_pred_on", 
              peak_flop_per_s_fp32_source="spec: X fp32 20 T/s: datasheet; dense, as published (boost)")
    assert "a wrong peak for this device or clock: the profile's own FLOP counters measured more" in r["analysis_note"]


def test_tensor_core_kernel_with_fp32_flops_misses_a_pipe():
    r = _over(kernel_name="volta_h884gemm_64x64_ldg8_nn", flop_fp32_source="model: 2·M·N·K (from Input Dims)")
    assert "runs on tensor cores, but its FLOPs are filed under fp32" in r["analysis_note"]
    assert "wrong peak" not in r["analysis_note"]


def test_a_busy_tensor_pipe_without_tensor_flops_misses_a_pipe():
    util = {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 40.0,
            "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": 20.0}
    r = _over(pipe_pct_json=json.dumps(util), flop_fp32_source="counters: x")
    assert "the tensor pipe was 40.0% busy but the FLOP counters hold no tensor FLOPs" in r["analysis_note"]


def test_a_clock_above_the_peaks_basis():
    # the peak at a 1095 MHz base clock; the kernel ran at 1410 MHz: the roof at its clock is 1.288x higher
    r = _over(peak_flop_per_s_fp32_source="user: base-locked benchmark (base-locked 1095 MHz, dense)", sm_clock_hz=1410e6)
    assert "the kernel ran at 1410 MHz, above the 1095 MHz its peak is taken at" in r["analysis_note"]
    assert f"{1410 / 1095:.3f}× higher" in r["analysis_note"]


def test_sparse_work_against_a_dense_peak():
    row = kernel_row(flop_fp32=0.0, flop_tensor=1e12, duration_s=1e-3, peak_flop_per_s_tensor=5e14,
                     tensor_path="src_fp16_dst_fp32_sparsity_on", peak_flop_per_s_tensor_source="counters: dense path")
    r = analysed([row]).iloc[0]
    assert "2:4 sparse tensor work (sparsity_on) against a dense peak" in r["analysis_note"]


def test_no_evidence_says_what_to_check_not_wrong_peak():
    r = _over()
    assert "above the compute roof: no recorded evidence explains it: check the peak source" in r["analysis_note"]
    assert "wrong peak" not in r["analysis_note"] and pd.isna(r["next_step"])


def test_every_pattern_matches_its_example():
    for kind, entries in evidence_data().items():
        for e in entries:
            if "example" in e:
                assert e["rx"].search(e["example"]), (kind, e["pattern"])
    assert match("algorithm", ["volta_sgemm_64x64_nt", "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>()"])
    assert match("algorithm", ["implicit_convolve_sgemm<float>"]) is None


# ---- pipes ---------------------------------------------------------------------------------------


def test_co_critical_pipes_are_within_a_few_points_of_the_top():
    # flash-attention #2701 on B300 FP8: tensor 55%, SFU (XU) 56%: co-critical
    text = json.dumps({"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": 55.0,
                       "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": 55.0,
                       "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active": 56.0,
                       "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": 56.0 - CO_CRITICAL_POINTS - 0.1})
    top, pct, co = binding(text)
    assert (top, pct, co) == ("xu", 56.0, ("tensor",))  # its sub-pipe is the same limit; FMA is 5.1 points down


def test_a_pipe_bound_kernel_gets_its_pipe_roof_and_step():
    util = {"sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active": 91.0,
            "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": 88.0}
    r = analysed([kernel_row(flop_fp32=2e9, duration_s=1e-3, pipe_pct_json=json.dumps(util))]).iloc[0]
    # 2 TFLOP/s achieved with XU at 91%: saturated it caps the kernel at 2e12 / 0.91
    assert r["binding_pipe"] == "xu" and r["co_critical_pipes"] == "fma"
    assert r["pipe_ceiling_flop_per_s"] == pytest.approx(2e12 / 0.91, rel=1e-12)
    assert "pipe: XU (special functions" in r["analysis_note"] and "co-critical: FMA 88.0%" in r["analysis_note"]
    assert f"caps the kernel at {2e12 / 0.91 / 1e12:.3g} TFLOP/s" in r["analysis_note"]
    assert r["next_step"].startswith("reduce transcendental work")


def test_pipe_roofs_are_drawn_at_the_pipe_ceiling():
    from roofline.report import png

    frame = roofline.run([shared("ncu/sm89_rtx4060_kmeans-cartoonizer_full.ncu-rep")]).frame
    fig = png.draw(frame)
    drawn = sorted(a.get_ydata()[0] for a in fig.axes[0].lines if (a.get_gid() or "").startswith("pipe:"))
    # assign_pixels_to_centroids (two launches): LSU at 97.8% of its issue rate, far below the fp32 roof
    bound = frame[pipe_bound(frame)]
    assert set(bound["binding_pipe"]) == {"lsu"} and len(bound) == 2
    assert drawn == sorted(bound["pipe_ceiling_flop_per_s"])
    # the two launches' roofs lie within 2% of each other: one label for both
    labels = [t.get_text() for t in fig.axes[0].texts if (t.get_gid() or "").startswith("pipe-label:")]
    assert labels == [" LSU pipe roof"] and max(drawn) <= 1.02 * min(drawn)


def test_amd_pipes_follow_rocprof_computes_speed_of_light_formulas():
    folder = shared("rocprof/rocprof-compute_vcopy_MI200")
    frame = roofline.read(folder)
    with open(folder / "sysinfo.csv") as fh:
        info = next(csv.DictReader(fh))
    with open(folder / "pmc_perf.csv") as fh:
        pmc = list(csv.DictReader(fh))
    cus, xcd = float(info["cu_per_gpu"]), float(info.get("num_xcd") or 1)
    for k, row in enumerate(pmc):
        active = float(row["GRBM_GUI_ACTIVE"]) / xcd * cus
        util = json.loads(frame["pipe_pct_json"].iloc[k])
        assert util["VALU Utilization"] == pytest.approx(100 * float(row["SQ_ACTIVE_INST_VALU"]) / active, rel=1e-5)
        assert util["SALU Utilization"] == pytest.approx(100 * float(row["SQ_ACTIVE_INST_SCA"]) / active, rel=1e-5)
        assert util["MFMA Utilization"] == pytest.approx(100 * float(row["SQ_VALU_MFMA_BUSY_CYCLES"]) / (4 * active),
                                                         rel=1e-5, abs=1e-6)


# ---- latency-limited with evidence ---------------------------------------------------------------


def test_latency_evidence_from_the_report():
    path = shared("ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep")
    frame = roofline.analyze(roofline.read(path))
    a = list(ncu_actions(path))[1]
    waves = a["launch__waves_per_multiprocessor"].value()
    ach, theo = a["sm__warps_active.avg.pct_of_peak_sustained_active"].value(), a["sm__maximum_warps_per_active_cycle_pct"].value()
    note = frame["analysis_note"].iloc[1]
    assert frame["bound"].iloc[1] == "latency-limited"
    assert f"under one wave (launch__waves_per_multiprocessor {waves:.2f}" in note
    assert f"achieved occupancy {ach:.1f}% of a theoretical {theo:.1f}%" in note
    assert frame["next_step"].iloc[1].startswith("more parallelism per launch")
    tail = frame["analysis_note"].iloc[0]  # 1.33 waves: the partial wave is up to half the time (ncu's Tail Effect)
    assert "tail effect: 1.33 waves, the partial last wave up to 50% of the time" in tail


def test_latency_from_a_trace_grid_and_without_evidence():
    small = kernel_row(flop_fp32=1e6, dram_bytes=1e5, l2_bytes=1e5, l1_bytes=1e5, grid_x=4, grid_y=1, grid_z=1, sm_count=80)
    bare = kernel_row(kernel_id=1, flop_fp32=1e6, dram_bytes=1e5, l2_bytes=1e5, l1_bytes=1e5)
    out = analysed([small, bare])
    assert (out["bound"] == "latency-limited").all()
    assert "under 20% of every roof: under one wave: 4 blocks for 80 SMs" in out["analysis_note"].iloc[0]
    assert ("under 20% of every roof: latency- or occupancy-limited; nothing recorded tells which: ncu --section "
            "LaunchStats --section Occupancy --section WarpStateStats would") in out["analysis_note"].iloc[1]
    assert pd.isna(out["next_step"].iloc[1])


# ---- next steps ----------------------------------------------------------------------------------


def test_fp32_matmul_on_cuda_cores_of_an_ampere_gpu_is_told_tensor_cores():
    row = kernel_row(kernel_name="ampere_sgemm_128x64_nn", flop_fp32=1.5e10, duration_s=1e-3, compute_capability="8.0",
                     dram_bytes=1e7, l2_bytes=1e7, l1_bytes=1e7)
    r = analysed([row]).iloc[0]
    assert r["bound"] == "compute-bound" and r["next_step"].startswith("use tensor cores: TF32")


def test_an_amd_gpu_that_a_trace_gives_cc_9_0_is_told_matrix_cores_not_tf32():
    # a ROCm PyTorch trace reports an MI250's gfx90a as compute capability 9.0, as Hopper's: the device name tells
    row = kernel_row(kernel_name="aten::mm", op_kernels="Cijk_Ailk_Bljk_SB_MT64x64x16_SN_1LDSB0", flop_fp32=1.5e10,
                     duration_s=1e-3, compute_capability="9.0", device_name="AMD Instinct MI250X / MI250",
                     dram_bytes=1e7, l2_bytes=1e7, l1_bytes=1e7)
    r = analysed([row]).iloc[0]
    assert r["bound"] == "compute-bound" and r["next_step"].startswith("use the matrix cores if this GPU has them (MFMA")
    hopper = analysed([dict(row, device_name="NVIDIA H100 80GB HBM3")]).iloc[0]
    assert hopper["next_step"].startswith("use tensor cores: TF32")


def test_memory_bound_well_under_its_roof_is_told_the_access_pattern():
    r = analysed([kernel_row(flop_fp32=1e6, dram_bytes=8e8, duration_s=1e-3)]).iloc[0]  # 0.8 TB/s of 2: 40%
    assert r["bound"] == "memory-bound" and r["next_step"].startswith("memory-bound well under the DRAM roof")


# ---- what to collect next ------------------------------------------------------------------------


def test_collect_next_names_the_basic_reports_kernel_and_its_missing_sections():
    path = shared(BASIC)
    frame = roofline.run([path]).frame
    sections = {s.identifier() for s in next(ncu_actions(path)).sections()}  # LaunchStats, Occupancy, SpeedOfLight, ...
    lines = collect.summary(frame)
    text = "\n".join(lines)
    # --launch-skip: the launches of Baseline before its longest one, as the report orders them (ncu_report)
    times = [a["gpu__time_duration.sum"].value() for a in ncu_actions(path)]
    assert f"ncu --kernel-name Baseline --launch-skip {int(np.argmax(times))} --launch-count 1" in text
    longest_first = frame.sort_values("duration_s", ascending=False)  # (as the CLI's table orders them)
    assert collect.summary(longest_first) == lines
    needed = ["SpeedOfLight_RooflineChart", "SpeedOfLight_HierarchicalSingleRooflineChart", "ComputeWorkloadAnalysis",
              "WarpStateStats"]
    for s in needed:
        assert s not in sections and f"--section {s}" in text
    assert "--section Occupancy" not in text and "--section LaunchStats" not in text  # the basic set has them
    assert pd.Series(collect.collect_next_column(frame)).notna().all()  # on every launch of it, for the JSON records
    assert "collect_next" not in frame  # (it reads whole profiles: no column of the per-row analysis)


def test_collect_next_for_a_shapeless_trace_names_its_longest_kernels():
    frame = roofline.run([shared(SHAPELESS)]).frame
    # independently: the GPU kernels of the rows without shapes, by their total time
    no_shapes = frame["flop_fp32_source"].astype(str).str.contains("record_shapes")
    by_kernel = defaultdict(float)
    for name, d in zip(frame.loc[no_shapes, "mangled_name"], frame.loc[no_shapes, "duration_s"]):
        by_kernel[short_name(str(name))] += d
    ranked = sorted(by_kernel, key=by_kernel.get, reverse=True)[:3]
    text = "\n".join(collect.summary(frame))
    assert text.count("record_shapes=True") == 1  # printed once
    # the longest, NCCL's all-reduce, gets record_shapes only: a collective waits on its peers and ncu serialises
    # launches; the next two kernels get an ncu command each
    assert ranked[0].startswith("ncclKernel_AllReduce") and f"ncu --kernel-name {ranked[0]}" not in text
    assert f"  {ranked[0]} (op record_param_comms; " in text
    for name in ranked[1:]:
        assert f"ncu --kernel-name {name} " in text
    # a V100: current Nsight Compute does not profile Volta; the command names the last one that does
    assert "Nsight Compute 2025.2" in text and "--section SpeedOfLight_RooflineChart" in text


def test_collect_next_never_profiles_a_copy_and_names_rocprof_for_amd():
    # AlexNet on an A100: Memcpy HtoD is 84% of the GPU time, but a copy is no kernel ncu could profile
    alex = roofline.run([shared("traces/torch_a100_alexnet_train_small.pt.trace.json.gz")]).frame
    text = "\n".join(collect.summary(alex))
    assert "Memcpy" not in text and "ncu --kernel-name ampere_sgemm_32x32_sliced1x4_tn " in text
    # a ROCm trace of an MI250 (compute capability "9.0", as torch reports gfx90a): rocprof-compute, never ncu
    mi250 = roofline.run([shared("traces/torch_rocm6.2_mi250_minitoy_train.pt.trace.json.gz")]).frame
    lines = collect.summary(mi250)
    assert lines and not any("ncu " in ln or "Memcpy" in ln for ln in lines)
    assert any(ln.strip().startswith("rocprof-compute profile -n roofline-next -k ") for ln in lines)


def test_collect_next_for_a_timeline_adds_the_gpu_metrics_command_once():
    frame = roofline.run([shared("nsys/nsys2026.2_h100x2_mfu-before.sqlite")]).frame
    text = "\n".join(collect.summary(frame))
    assert text.count("nsys profile --gpu-metrics-devices=all") == 1 and text.count("ncu --kernel-name ") == 3


def test_collect_next_is_per_profile_as_a_dataset_of_each_input_alone_holds_it():
    paths = [shared(BASIC), shared("ncu/sm80_a100_mistic-cub-154launches_basic.ncu-rep")]
    together = roofline.run(paths).frame
    for path in paths:
        alone = roofline.run([path]).frame
        mine = together[together["source_file"] == alone["source_file"].iloc[0]]
        ours = pd.Series(collect.collect_next_column(together), index=together.index)[mine.index]
        assert ours.astype(str).tolist() == pd.Series(collect.collect_next_column(alone)).astype(str).tolist()
    text = "\n".join(collect.summary(together))  # each profile's own under its file name
    assert all(f" {p}:" in text for p in together["source_file"].unique())
    assert "ncu --kernel-name Baseline " in text and "ncu --kernel-name distanceCalculationsKernel " in text


def test_collect_next_for_pascal_names_nvprof_and_the_last_nsight_compute():
    cmd = collect.ncu_command("k", 0, ["SpeedOfLight_RooflineChart"], "pascal")
    assert cmd.startswith("nvprof --kernels k --metrics flop_count_sp") and "Nsight Compute 2019.5" in cmd


def test_cli_prints_collect_next_once_and_json_carries_it():
    path = shared(BASIC)
    table = cli("analyze", path)
    assert table.returncode == 0 and table.stdout.count("collect next (") == 1
    out = cli("analyze", path, "--format", "json")
    records = json.loads(out.stdout)["rows"]  # the envelope (docs/agents.md)
    assert all(r["collect_next"].startswith("ncu --kernel-name Baseline") for r in records)
    assert all(r["next_step"] for r in records) and all("binding_pipe" in r for r in records)


def test_the_notes_split_into_their_parts_in_the_terminal():
    from roofline.report.table import split_note

    frame = roofline.analyze(roofline.read(shared("ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep")))
    parts = split_note(frame["analysis_note"].iloc[1])
    assert [p.split(":")[0] for p in parts] == ["FLOPs are a lower bound", "under 20% of every roof", "ncu", "ncu",
                                               "next step"]


def test_diagnose_groups_rows_so_a_large_frame_renders_each_text_once():
    rows = [kernel_row(kernel_id=i, flop_fp32=1e6, dram_bytes=1e5, l2_bytes=1e5, l1_bytes=1e5, grid_x=4, grid_y=1,
                       grid_z=1, sm_count=80) for i in range(2000)]
    out = analysed(rows)
    assert out["analysis_note"].nunique() == 1 and out["next_step"].nunique() == 1
    assert np.all(out["analysis_note"].cat.codes.to_numpy() == 0)


def test_html_report_shows_the_pipe_findings_next_step_and_collect_next(tmp_path, open_page):
    from roofline.report import html

    frame = roofline.run([shared("ncu/sm89_rtx4060_kmeans-cartoonizer_full.ncu-rep")]).frame
    page, problems = open_page(html.write(frame, tmp_path / "report.html"))
    # the collect-next block, once, naming the launch whose replay did not complete
    assert page.locator("#collect").is_visible()
    assert "ncu --kernel-name update_centroids" in page.locator("#collect-list").inner_text()
    # the details of the LSU-bound kernel: its binding pipe, pipe roof and next step
    k = page.evaluate("window.rooflineReport.kernels.name.findIndex(n => n.includes('assign_pixels_to_centroids'))")
    page.evaluate(f"window.rooflineReport.showDetails({k})")
    details = page.locator("#details-list").inner_text()
    assert "binding pipe" in details and "LSU (loads, stores, shared memory)" in details
    assert "pipe roof" in details and "next step" in details and "issue fewer load/store instructions" in details
    # the latency-limited launch of update_centroids (the other one's replay did not complete): its cause
    k = page.evaluate("window.rooflineReport.kernels.name.findIndex((n, i) => n.includes('update_centroids') && "
                      "window.rooflineReport.kernels.time[i] > 0)")
    page.evaluate(f"window.rooflineReport.showDetails({k})")
    details = page.locator("#details-list").inner_text()
    cause = frame.loc[frame["bound"] == "latency-limited", "latency_cause"].item()
    assert cause.startswith("under one wave; low achieved occupancy; stall: ") and f"latency cause\n{cause}" in details
    # the chart's pipe roofs: dotted lines at the pipe ceilings of the pipe-bound kernels
    ys = sorted(page.evaluate("document.getElementById('kernel-chart').data.filter(t => (t.meta || '').startsWith('pipe:'))"
                              ".map(t => t.y[0])"))
    bound = frame[pipe_bound(frame)]
    assert ys == pytest.approx(sorted(bound["pipe_ceiling_flop_per_s"]), rel=1e-4)  # (5 significant digits in the page)
    assert problems == []


def test_latency_cause_is_the_evidence_as_a_tidy_column():
    path = shared("ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep")
    frame = roofline.analyze(roofline.read(path))
    a = list(ncu_actions(path))[1]  # 8 blocks, 12.4% of a theoretical 75% occupancy: ncu's Small Grid rule
    # warps stalled per issued instruction, by reason ("selected" is issuing, not a stall)
    stalls = {n: a[n].value() for n in a.metric_names() if n.startswith("smsp__average_warps_issue_stalled_")
              and n.endswith("_per_issue_active.ratio") and "_stalled_selected_" not in n}
    top = sorted(((v, n.removeprefix("smsp__average_warps_issue_stalled_").removesuffix("_per_issue_active.ratio"))
                  for n, v in stalls.items() if v >= 1.0), reverse=True)[:2]
    assert frame["latency_cause"].iloc[1] == "; ".join(["under one wave", "low achieved occupancy",
                                                        *(f"stall: {k}" for _, k in top)])
    bare = analysed([kernel_row(flop_fp32=1e6, dram_bytes=1e5, l2_bytes=1e5, l1_bytes=1e5),
                     kernel_row(kernel_id=1, flop_fp32=1e11, duration_s=1e-3, dram_bytes=1e5, l2_bytes=1e5,
                                l1_bytes=1e5)])
    assert bare["latency_cause"].iloc[0] == ("unavailable: nothing recorded tells which (collect with ncu --section "
                                             "LaunchStats --section Occupancy --section WarpStateStats)")
    assert pd.isna(bare["latency_cause"].iloc[1])  # not latency-limited: no cause


def test_grouped_texts_equal_each_row_analysed_alone():
    """Over 64 rows the texts are rendered once per group of rows that agree on what they read; each row analysed
    alone (no grouping) gives the same notes, next steps and latency causes."""
    util = json.dumps({"sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active": 91.0,
                       "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": 88.0})
    kinds = [
        {"peak_flop_per_s_fp32_source": "spec: X fp32: arch model gfx942 (no datasheet figure)", "flop_fp32": 1e11},
        {"kernel_name": "volta_h884gemm_64x64_ldg8_nn", "flop_fp32": 1e11, "flop_fp32_source": "model: 2·M·N·K"},
        {"flop_fp32": 1e6, "dram_bytes": 1e5, "l2_bytes": 1e5, "l1_bytes": 1e5, "grid_x": 4, "grid_y": 1, "grid_z": 1,
         "sm_count": 80},
        {"flop_fp32": 1e6, "dram_bytes": 1e5, "l2_bytes": 1e5, "l1_bytes": 1e5, "compute_capability": "9.0",
         "device_name": "AMD Instinct MI250X / MI250"},
        {"flop_fp32": 2e9, "pipe_pct_json": util},
        {"kernel_name": "ampere_sgemm_128x64_nn", "flop_fp32": 1.5e10, "compute_capability": "8.0", "dram_bytes": 1e7,
         "l2_bytes": 1e7, "l1_bytes": 1e7},
        {"flop_fp32": 1e6, "dram_bytes": 8e8},
    ]
    rows = [kernel_row(kernel_id=i, duration_s=1e-3, **kinds[i % len(kinds)]) for i in range(10 * len(kinds))]
    together = analysed(rows)
    assert len(together) > 64 and together["analysis_note"].nunique() == len(kinds)
    for i in range(len(kinds)):
        alone = analysed([rows[i]]).iloc[0]
        same = together[together["kernel_id"] == i].iloc[0]
        for c in ("analysis_note", "next_step", "latency_cause"):
            assert (pd.isna(alone[c]) and pd.isna(same[c])) or alone[c] == same[c], (i, c)
