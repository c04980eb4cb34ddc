"""Hierarchical roofline rules: properties on random kernels, and the edge cases by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import roofline
from roofline.analysis import analyze, hierarchical
from roofline.analysis.aggregate import aggregate
from roofline.analysis.select import select
from roofline.hardware.peaks import Peak, Peaks
from roofline.schema import conform_kernels

LEVELS = ("dram", "l2", "l1")


def kernels(rows: list[dict]) -> pd.DataFrame:
    return conform_kernels(pd.DataFrame(rows))


def base(**kw) -> dict:
    row = {
        "kernel_id": 0, "kernel_name": "k", "kernel_short_name": "k", "device_name": "GPU", "duration_s": 1e-3,
        "flop_fp64": 0.0, "flop_fp32": 1e9, "flop_fp16": 0.0, "flop_tensor": 0.0,
        "dram_bytes": 1e8, "l2_bytes": 2e8, "l1_bytes": 4e8,
        "peak_flop_per_s_fp64": 1e13, "peak_flop_per_s_fp32": 2e13, "peak_flop_per_s_fp16": 4e13,
        "peak_flop_per_s_tensor": 3e14,
        "peak_dram_bytes_per_s": 2e12, "peak_l2_bytes_per_s": 6e12, "peak_l1_bytes_per_s": 2e13,
    }
    row.update(kw)
    return row


positive = st.floats(min_value=1e3, max_value=1e16, allow_nan=False, allow_infinity=False)
maybe_zero = st.one_of(st.just(0.0), positive)


@st.composite
def kernel_rows(draw):
    n = draw(st.integers(1, 12))
    rows = []
    for i in range(n):
        rows.append(base(
            kernel_id=i,
            duration_s=draw(st.floats(1e-7, 10.0)),
            flop_fp64=draw(maybe_zero), flop_fp32=draw(maybe_zero), flop_fp16=draw(maybe_zero),
            flop_tensor=draw(maybe_zero),
            dram_bytes=draw(maybe_zero), l2_bytes=draw(maybe_zero), l1_bytes=draw(maybe_zero),
            peak_flop_per_s_fp64=draw(st.floats(1e11, 1e14)), peak_flop_per_s_fp32=draw(st.floats(1e11, 1e14)),
            peak_flop_per_s_fp16=draw(st.floats(1e11, 1e15)), peak_flop_per_s_tensor=draw(st.floats(1e12, 1e16)),
            peak_dram_bytes_per_s=draw(st.floats(1e10, 1e13)), peak_l2_bytes_per_s=draw(st.floats(1e10, 1e14)),
            peak_l1_bytes_per_s=draw(st.floats(1e10, 1e14)),
        ))
    return rows


@settings(max_examples=150, deadline=None)
@given(kernel_rows())
def test_roofline_properties(rows):
    r = hierarchical(kernels(rows))
    for _, k in r.iterrows():
        if k["bound"] == "unavailable" or not k["flop_total"] > 0:
            continue
        att, peak = k["attainable_flop_per_s"], k["peak_flop_per_s"]
        assert att <= peak * (1 + 1e-12)  # attainable never above the compute roof ...
        for lv in LEVELS:
            i, ridge = k[f"intensity_{lv}_flop_per_byte"], k[f"ridge_{lv}_flop_per_byte"]
            bw = peak / ridge
            if math.isinf(i):
                assert k[f"attainable_{lv}_flop_per_s"] == peak
                continue
            assert att <= i * bw * (1 + 1e-12)  # ... nor above any bandwidth roof
            if i < ridge:  # below the ridge the level's roof is the slanted one
                assert k[f"attainable_{lv}_flop_per_s"] == pytest.approx(i * bw, rel=1e-12)
            else:
                assert k[f"attainable_{lv}_flop_per_s"] == pytest.approx(peak, rel=1e-12)
        # the binding roof agrees with the ridge points
        below = [lv for lv in LEVELS if k[f"intensity_{lv}_flop_per_byte"] < k[f"ridge_{lv}_flop_per_byte"]]
        if k["binding_roof"] == "compute":
            assert not below
        else:
            assert k["binding_roof"] in below
            lv = k["binding_roof"]
            assert att == pytest.approx(k[f"intensity_{lv}_flop_per_byte"] * peak / k[f"ridge_{lv}_flop_per_byte"])
        pct = k["pct_of_roof"]
        assert pct == pytest.approx(100 * k["achieved_flop_per_s"] / att, rel=1e-9)
        assert pct > 0
        assert pct <= 100 * (1 + 1e-9) or k["over_roof"]
        if k["over_roof"]:
            assert "above the" in k["analysis_note"]
        assert k["time_at_roof_s"] == pytest.approx(k["flop_total"] / att, rel=1e-9)
        if k["bound"] == "latency-limited":
            assert pct < 20


def test_mixed_precision_kernel_gets_one_point_against_the_effective_peak():
    # FlashAttention-like: 90% tensor at 300 TFLOP/s, 10% fp32 at 20 TFLOP/s
    k = kernels([base(flop_tensor=9e11, flop_fp32=1e11, duration_s=1e-2)])
    r = hierarchical(k).iloc[0]
    expected = 1e12 / (9e11 / 3e14 + 1e11 / 2e13)
    assert r["peak_flop_per_s"] == pytest.approx(expected)
    assert r["compute_precision"] == "mixed"
    assert r["flop_share_tensor"] == pytest.approx(0.9) and r["flop_share_fp32"] == pytest.approx(0.1)
    assert "effective" in r["peak_flop_per_s_source"]


def test_zero_bytes_infinite_intensity_zero_duration_flagged_missing_level_absent():
    rows = [
        base(kernel_id=0, dram_bytes=0.0),
        base(kernel_id=1, duration_s=0.0),
        base(kernel_id=2, l2_bytes=np.nan, l2_bytes_source="unavailable: no L2 byte counters; collect with ncu --set full"),
    ]
    r = hierarchical(kernels(rows))
    assert math.isinf(r.loc[0, "intensity_dram_flop_per_byte"])
    assert r.loc[0, "attainable_dram_flop_per_s"] == 2e13
    assert "zero duration" in r.loc[1, "analysis_note"] and math.isnan(r.loc[1, "pct_of_roof"])
    assert math.isnan(r.loc[2, "intensity_l2_flop_per_byte"]) and math.isnan(r.loc[2, "attainable_l2_flop_per_s"])
    assert "L2 level absent" in r.loc[2, "analysis_note"] and "ncu --set full" in r.loc[2, "analysis_note"]
    assert r.loc[2, "bound"] != "unavailable"  # the other levels still give a point


def test_kernel_without_flops_is_judged_by_its_busiest_level():
    r = hierarchical(kernels([base(flop_fp32=0.0, dram_bytes=1.6e9, duration_s=1e-3)])).iloc[0]
    assert r["binding_roof"] == "dram" and r["bound"] == "memory-bound"
    assert r["pct_of_roof"] == pytest.approx(80.0)
    assert r["compute_precision"] == "none"


def test_above_the_roof_is_flagged_with_the_likely_cause():
    r = hierarchical(kernels([base(dram_bytes=3e9, duration_s=1e-3)])).iloc[0]  # 3 TB/s on a 2 TB/s roof
    assert r["over_roof"] and r["pct_of_roof"] > 100
    assert "above the dram roof" in r["analysis_note"] and "clock basis" in r["analysis_note"]


def test_latency_limited_threshold():
    slow = base(duration_s=1.0)  # 1 GFLOP/s on a 20 TFLOP/s machine
    r = hierarchical(kernels([slow])).iloc[0]
    assert r["bound"] == "latency-limited" and r["binding_roof"] in ("compute", "dram", "l2", "l1")
    r = hierarchical(kernels([slow]), latency_threshold_pct=0.0).iloc[0]
    assert r["bound"] in ("compute-bound", "memory-bound")


def test_levels_subset_and_validation():
    k = kernels([base()])
    out = analyze(k, levels=("dram",))
    assert "intensity_dram_flop_per_byte" in out and "intensity_l2_flop_per_byte" not in out
    with pytest.raises(ValueError, match="levels"):
        analyze(k, levels=("l3",))


def test_user_peaks_replace_counters_and_carry_their_provenance():
    k = kernels([base()])
    p = Peaks("mine", {"fp32": Peak(1e13, "measured", "sgemm 8192³", "as profiled", 1.4e9)},
              {"dram": Peak(1e12, "user", "stream triad", "as published")})
    r = analyze(k, peaks=p).iloc[0]
    assert r["peak_flop_per_s_fp32"] == 1e13 and "measured" in r["peak_flop_per_s_fp32_source"]
    assert "1400 MHz" in r["peak_flop_per_s_fp32_source"] and "dense" in r["peak_flop_per_s_fp32_source"]
    assert r["peak_dram_bytes_per_s"] == 1e12
    assert math.isnan(r["peak_l2_bytes_per_s"]) and r["peak_l2_bytes_per_s_source"].startswith("unavailable")
    assert p.ridge("fp32", "dram") == 10.0


def test_sparse_tensor_path_gets_twice_the_dense_peak():
    k = kernels([base(flop_tensor=1e12, tensor_path="src_fp16_dst_fp32_sparsity_on")])
    r = analyze(k, peaks="A100 SXM4 80GB", clock="boost").iloc[0]
    assert r["peak_flop_per_s_tensor"] == pytest.approx(2 * 312e12)
    assert "sparse" in r["peak_flop_per_s_tensor_source"]


def test_boost_view_rescales_counter_compute_and_l1_not_dram():
    k = kernels([base(sm_clock_hz=1e9, sm_boost_clock_hz=1.5e9,
                      peak_flop_per_s_fp32_source="counters: x", peak_l1_bytes_per_s_source="counters: y",
                      peak_dram_bytes_per_s_source="counters: z")])
    r = analyze(k, clock="both").iloc[0]
    b = analyze(k, clock="boost").iloc[0]
    assert b["peak_flop_per_s_fp32"] == pytest.approx(3e13) and b["peak_l1_bytes_per_s"] == pytest.approx(3e13)
    assert b["peak_dram_bytes_per_s"] == 2e12 and "as profiled" in b["peak_dram_bytes_per_s_source"]
    assert r["peak_flop_per_s_boost"] == pytest.approx(3e13) and r["peak_flop_per_s"] == 2e13
    assert r["pct_of_roof_boost"] <= r["pct_of_roof"]


def test_aggregate_is_total_flops_over_total_time_with_harmonic_peaks():
    rows = [
        base(kernel_id=0, nvtx_range="attn", flop_fp32=1e9, duration_s=1e-3, peak_flop_per_s_fp32=2e13),
        base(kernel_id=1, nvtx_range="attn", flop_fp32=3e9, duration_s=3e-3, peak_flop_per_s_fp32=1e13),
        base(kernel_id=2, nvtx_range="mlp", flop_fp32=5e9, duration_s=1e-3),
    ]
    res = analyze(kernels(rows))
    g = aggregate(res, by="nvtx").set_index("nvtx")
    attn = g.loc["attn"]
    assert attn["kernel_count"] == 2 and attn["duration_s"] == pytest.approx(4e-3)
    assert attn["achieved_flop_per_s"] == pytest.approx(4e9 / 4e-3)
    assert attn["peak_flop_per_s"] == pytest.approx(4e9 / (1e9 / 2e13 + 3e9 / 1e13))
    assert attn["intensity_dram_flop_per_byte"] == pytest.approx(4e9 / 2e8)
    # compute-bound kernels: the group's time at its roofs is the sum of theirs
    assert attn["time_at_roof_s"] == pytest.approx(res.loc[0:1, "time_at_roof_s"].sum(), rel=1e-9)
    assert list(g.index) == ["attn", "mlp"]  # longest total time first


def test_select_filters_and_top_n_sorted_by_time():
    rows = [base(kernel_id=i, kernel_name=f"gemm_{i}" if i % 2 else f"softmax_{i}", duration_s=(i + 1) * 1e-3,
                 nvtx_range="fwd" if i < 3 else "bwd") for i in range(6)]
    res = analyze(kernels(rows))
    assert select(res)["kernel_id"].tolist() == [5, 4, 3, 2, 1, 0]
    assert select(res, name="GEMM", top=2)["kernel_id"].tolist() == [5, 3]
    assert select(res, nvtx="^fwd$")["kernel_id"].tolist() == [2, 1, 0]
    assert select(res, precision="fp32")["kernel_id"].tolist() == [5, 4, 3, 2, 1, 0]
    assert select(res, precision="tensor").empty
    assert set(select(res, bound="latency")["bound"]) <= {"latency-limited"}
    with pytest.raises(ValueError):
        select(res, bound="quantum")


def test_analyze_keeps_rows_order_and_provenance_on_a_real_report():
    from conftest import shared

    k = roofline.read(shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"))
    r = roofline.analyze(k)
    assert len(r) == len(k) and (r.index == k.index).all()
    assert r.attrs["roofline.provenance"] == k.attrs["roofline.provenance"]
    # the L2 level is the 2023.1 section's xbar2l1tex read traffic, with its own roof
    assert r["l2_bytes_source"].str.startswith("L2[xbar2l1tex_read]").all()
    assert r["pct_of_peak_l2_bandwidth"].between(0, 100).all()


def test_no_flops_and_no_bytes_anywhere_is_no_work_not_a_slow_kernel():
    """XProf's IDLE row (0 FLOP, 0 bytes) and an empty kernel: no roofline point, no bound, the note says
    why; a kernel with 0 FLOP but bytes moved is still judged by its busiest level."""
    idle = base(flop_fp32=0.0, dram_bytes=0.0, l2_bytes=0.0, l1_bytes=0.0)
    copy = base(flop_fp32=0.0, dram_bytes=1.6e9, duration_s=1e-3)
    out = hierarchical(kernels([idle, copy]))
    assert out.loc[0, "bound"] == "unavailable" and pd.isna(out.loc[0, "pct_of_roof"])
    assert "no work: 0 FLOP and 0 bytes at every level" in out.loc[0, "analysis_note"]
    assert out.loc[1, "bound"] == "memory-bound" and out.loc[1, "pct_of_roof"] == pytest.approx(80.0)
