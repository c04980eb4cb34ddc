"""The headline's numbers on frames small enough to check by hand (analysis/headline.py, analysis/coverage.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from conftest import analysed, kernel_row
from roofline.analysis.coverage import classify
from roofline.analysis.headline import headline, headlines, kinds

NO_SHAPES = "unavailable: no Input Dims for aten::mm; record with torch.profiler.profile(record_shapes=True)"


def _frame():
    rows = [
        # 4 ms compute-bound GEMM: 8e10 FLOP at 2e13 FLOP/s peak -> 2e13 FLOP/s achieved would be 100%
        kernel_row(kernel_id=0, kernel_name="gemm", kernel_short_name="gemm", duration_s=4e-3, flop_fp32=4e10,
                   dram_bytes=1e7),
        # 2 ms memory-bound copy kernel: 0 FLOP, 2e9 bytes
        kernel_row(kernel_id=1, kernel_name="copy_kernel", kernel_short_name="copy_kernel", duration_s=2e-3,
                   flop_fp32=0.0, dram_bytes=2e9),
        # 3 ms without shapes: no FLOPs, no bytes
        kernel_row(kernel_id=2, kernel_name="aten::mm", kernel_short_name="aten::mm", duration_s=3e-3,
                   flop_fp32=np.nan, flop_fp64=np.nan, flop_fp16=np.nan, flop_tensor=np.nan, dram_bytes=np.nan,
                   l2_bytes=np.nan, l1_bytes=np.nan, flop_fp32_source=NO_SHAPES, flop_fp64_source=NO_SHAPES,
                   dram_bytes_source=NO_SHAPES),
        # 1 ms of NCCL: communication, whatever its point
        kernel_row(kernel_id=3, kernel_name="ncclDevKernel_Generic", kernel_short_name="ncclDevKernel_Generic",
                   duration_s=1e-3, flop_fp32=np.nan, dram_bytes=np.nan, l2_bytes=np.nan, l1_bytes=np.nan,
                   flop_fp32_source="unavailable: a collective moves data; its reduction FLOPs are not modelled"),
    ]
    return analysed(rows)


def test_kinds_coverage_reasons_and_rates_by_hand():
    res = _frame()
    assert kinds(res).tolist() == ["compute-bound", "memory-bound", "unmodelled", "communication"]
    h = headline(res)
    assert h.gpu_time_s == pytest.approx(10e-3)
    assert h.kinds["compute-bound"] == pytest.approx(4e-3) and h.kinds["memory-bound"] == pytest.approx(2e-3)
    assert h.kinds["unmodelled"] == pytest.approx(3e-3) and h.kinds["communication"] == pytest.approx(1e-3)
    assert h.coverage == pytest.approx(0.6)  # (4 + 2) ms of 10 ms have FLOPs and bytes
    (shapes, comm) = h.reasons
    assert (shapes.reason, shapes.share, shapes.rows) == ("no shapes recorded", pytest.approx(0.3), 1)
    assert "record_shapes=True" in shapes.fix and shapes.ops == (("aten::mm", pytest.approx(0.3)),)
    assert comm.reason.startswith("collectives") and comm.share == pytest.approx(0.1)
    # 4e10 FLOP over 10 ms = 4 TFLOP/s; the fp32 peak is 20 TFLOP/s: MFU 20%
    assert h.achieved_flop_per_s == pytest.approx(4e12) and h.compute_peak.key == "fp32"
    assert h.compute_peak.value == 2e13 and h.mfu == pytest.approx(0.2)
    # (1e7 + 2e9) bytes over 10 ms = 201 GB/s of 2 TB/s: MBU 10.05%
    assert h.achieved_dram_bytes_per_s == pytest.approx(2.01e11) and h.mbu == pytest.approx(0.1005)
    assert h.notes  # lower bounds while 40% of the time has no point
    d = h.to_dict()
    assert d["reasons"][0]["ops"] == [{"name": "aten::mm", "share": pytest.approx(0.3)}] and d["span_s"] is None


def test_steps_devices_and_timeline_gaps():
    res = _frame()
    res["nvtx_range"] = ["ProfilerStep#2", "ProfilerStep#2", "ProfilerStep#10/fwd", None]
    res["start_ns"] = pd.array([0, 5_000_000, 5_500_000, 20_000_000], dtype="Int64")  # 4 ms, gap, overlap, gap
    items = headlines(res)
    assert [(h.step, round(h.gpu_time_s * 1e3, 6)) for h in items] == [(None, 10.0), ("ProfilerStep#2", 6.0),
                                                                         ("ProfilerStep#10", 3.0)]
    whole = items[0]
    # launches [0, 4] ms, [5, 7] ms, [5.5, 8.5] ms, [20, 21] ms: span 21 ms, nothing running 1 + 11.5 = 12.5 ms
    assert whole.span_s == pytest.approx(21e-3) and whole.gap_s == pytest.approx(12.5e-3)
    two = pd.concat([res, res.assign(device_name="B", source_file="other.ncu-rep")], ignore_index=True)
    items = headlines(two, by_step=False)
    assert [(h.profile, h.device) for h in items] == [(None, None), ("synthetic.ncu-rep", "GPU"),
                                                      ("other.ncu-rep", "B")]
    assert items[0].compute_peak is None and math.isnan(items[0].mfu)  # two devices: no one peak to name
    assert items[0].span_s is None  # two profiles' clocks: no span across them


def test_idle_rows_are_idle_not_coverage_and_no_durations_give_no_shares():
    res = analysed([kernel_row(kernel_id=0, duration_s=1e-3),
                    kernel_row(kernel_id=1, kernel_name="IDLE", kernel_short_name="IDLE", duration_s=3e-3,
                               flop_fp32=0.0, dram_bytes=0.0, l2_bytes=0.0, l1_bytes=0.0)])
    h = headline(res)
    assert h.kinds["idle"] == pytest.approx(3e-3) and h.coverage == pytest.approx(0.25) and h.reasons == ()
    h = headline(analysed([kernel_row(duration_s=0.0)]))
    assert h.gpu_time_s == 0 and math.isnan(h.coverage) and math.isnan(h.shares["idle"])


@pytest.mark.parametrize(("text", "reason", "fix"), [
    (NO_SHAPES, "no shapes recorded", "record_shapes=True: torch.profiler.profile(record_shapes=True)"),
    ("unavailable: an Nsight Systems timeline has no FLOP counters; add them from Nsight Compute with `roofline "
     "analyze TIMELINE --counters REPORT.ncu-rep`", "a timeline without counters",
     "roofline analyze TIMELINE --counters REPORT.ncu-rep (Nsight Compute counters joined onto the launches)"),
    ("unavailable: a GPU xplane holds no FLOPs or bytes; install the extra roofline[xla] (xprof) for XLA's GPU cost "
     "analysis", "a GPU xplane holds no FLOPs or bytes",
     "install the extra roofline[xla] (xprof) for XLA's GPU cost analysis"),
    ("unavailable: no FLOP model for aten::mse_loss (time is counted; see docs/traces.md for the ops modelled)",
     "no op model for these ops", "the ops modelled are listed in docs/traces.md; their time is counted"),
    ("unavailable: something new; collect with tool --flag", "something new", "collect with tool --flag"),
])
def test_reasons_from_the_rows_own_texts(text, reason, fix):
    assert classify(text) == (reason, fix)
