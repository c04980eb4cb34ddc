"""Roofline arithmetic against independent computations."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest

import roofline
from roofline.analysis import effective_peak, roofline_analysis
from roofline.schema import conform_kernels


def _reference(op, peak, bw):
    # written independently of the implementation, straight from the definition
    f, b = op["flops"], op["memory_bytes"]
    ai = float("inf") if b == 0 else f / b
    att = peak if ai == float("inf") else min(peak, ai * bw)
    return {
        "name": op["name"],
        "arithmetic_intensity": round(ai, 4),
        "attainable_flops": round(att, 4),
        "bound": "compute-bound" if ai >= peak / bw else "memory-bound",
        "efficiency": round(100 * att / peak, 2),
        "estimated_time_s": round(float("inf") if att == 0 else f / att, 8),
    }


def test_roofline_analysis_known_values():
    ops = [
        {"name": "gemm", "flops": 2 * 1024**3, "memory_bytes": 3 * 1024**2 * 4},
        {"name": "copy", "flops": 0, "memory_bytes": 1e9},
        {"name": "pure", "flops": 1e9, "memory_bytes": 0},
    ]
    out = roofline_analysis(ops, peak_compute=19.5e12, peak_bandwidth=1.555e12)
    gemm, copy, pure = out
    assert gemm["bound"] == "compute-bound" and gemm["attainable_flops"] == 19.5e12
    assert gemm["estimated_time_s"] == round(2 * 1024**3 / 19.5e12, 8)
    assert copy["arithmetic_intensity"] == 0 and copy["bound"] == "memory-bound"
    assert copy["attainable_flops"] == 0 and math.isinf(copy["estimated_time_s"])
    assert math.isinf(pure["arithmetic_intensity"]) and pure["bound"] == "compute-bound"
    assert pure["efficiency"] == 100.0


def test_roofline_analysis_matches_definition_on_random_inputs():
    rng = random.Random(20261122)
    for _ in range(200):
        peak = 10 ** rng.uniform(10, 15)
        bw = 10 ** rng.uniform(9, 13)
        ops = [
            {
                "name": f"op{i}",
                "flops": rng.choice([0, 10 ** rng.uniform(0, 14)]),
                "memory_bytes": rng.choice([0, 10 ** rng.uniform(0, 12)]),
            }
            for i in range(rng.randint(1, 8))
        ]
        got = roofline_analysis(ops, peak, bw)
        assert got == [_reference(op, peak, bw) for op in ops]


def test_effective_peak_weights_by_flop_share():
    # 90% tensor at 100 T, 10% fp32 at 10 T: time = 0.9/100 + 0.1/10 = 0.019 -> 52.6 T
    peak, desc = effective_peak({"tensor": 90.0, "fp32": 10.0}, {"tensor": 100e12, "fp32": 10e12})
    assert peak == pytest.approx(1 / 0.019 * 1e12)
    assert "tensor 90.0%" in desc
    assert effective_peak({"fp32": 5.0, "fp64": 0.0}, {"fp32": 7.0, "fp64": math.nan}) == (7.0, "fp32")


def _frame(**cols):
    return conform_kernels(pd.DataFrame([cols]))


def test_analyze_single_kernel():
    k = _frame(
        kernel_id=0, duration_s=1e-3, flop_fp64=0.0, flop_fp32=2e9, flop_fp16=0.0, flop_tensor=0.0,
        dram_bytes=1e8, peak_flop_per_s_fp32=10e12, peak_dram_bytes_per_s=1e12,
    )
    r = roofline.analyze(k).iloc[0]
    assert r["intensity_dram_flop_per_byte"] == 20
    assert r["ridge_dram_flop_per_byte"] == 10
    assert r["bound"] == "compute-bound"
    assert r["achieved_flop_per_s"] == pytest.approx(2e12)
    assert r["pct_of_roof"] == pytest.approx(20.0)
    assert r["time_at_roof_s"] == pytest.approx(2e-4)
    assert r["pct_of_peak_dram_bandwidth"] == pytest.approx(10.0)


def test_analyze_partial_flops_are_a_lower_bound_and_missing_roof_is_unavailable():
    k = _frame(kernel_id=0, duration_s=1e-3, flop_fp32=2e9, dram_bytes=1e8, peak_flop_per_s_fp32=1e13)
    r = roofline.analyze(k).iloc[0]
    assert r["flop_total"] == 2e9
    assert "lower bound" in r["analysis_note"]
    assert r["bound"] == "unavailable" and math.isnan(r["pct_of_roof"])


def test_analyze_keeps_rows_order_and_provenance():
    k = _frame(kernel_id=3, duration_s=1.0)
    k.attrs["roofline.provenance"] = [{"source_file": "x"}]
    r = roofline.analyze(k)
    assert r["kernel_id"].tolist() == [3]
    assert r.attrs["roofline.provenance"] == [{"source_file": "x"}]
