"""The hierarchical roofline against the report's own values, read with the real ncu_report.

For every fixture that carries ncu's hierarchical roofline sections, the per-level achieved
bandwidths, the achieved FLOP/s per precision and every roof agree with the expressions of the
section files (``formulas.md`` §1: ``.peak_sustained`` × the unit's cycles per second; achieved
= ``.per_second`` or ``.per_cycle_elapsed`` × cycles per second) within 0.5%.
"""

from __future__ import annotations

import math

import pytest

import roofline
from conftest import ncu_actions as _actions
from conftest import shared

HIERARCHICAL = [
    "ncu/sm75_t4_wmma-gemm-fp16_full-hier.ncu-rep",  # ncu 2025.1, lts2xbar / lsu_writeback_mem_lg
    "ncu/sm90_gh200_triton-silu_full-hier.ncu-rep",  # ncu 2025.1, Hopper: lsu_writeback_mem_lgds
    "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep",  # ncu 2023.1 --set roofline: L2 = xbar2l1tex read
]



def _v(a, name):
    m = a.metric_by_name(name)
    if m is None:
        return None
    v = m.value()
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _first(a, names):
    for n in names:
        if _v(a, n + ".sum.per_second") is not None:
            return n
    return None


def _own_values(a):
    """(column, report's own value) pairs from the section expressions."""
    out = []
    peak = lambda base, unit: (
        None if _v(a, base + ".sum.peak_sustained") is None or _v(a, f"{unit}__cycles_elapsed.avg.per_second") is None
        else _v(a, base + ".sum.peak_sustained") * _v(a, f"{unit}__cycles_elapsed.avg.per_second")
    )
    levels = {
        "dram": (["dram__bytes"], "dram"),
        "l2": (["derived__lts__lts2xbar_bytes", "l1tex__m_xbar2l1tex_read_bytes"], "lts"),
        "l1": (["derived__l1tex__lsu_writeback_bytes_mem_lgds", "derived__l1tex__lsu_writeback_bytes_mem_lg"], "l1tex"),
    }
    for lv, (bases, unit) in levels.items():
        base = _first(a, bases)
        if base:
            out.append((f"achieved_{lv}_bytes_per_s", _v(a, base + ".sum.per_second")))
            out.append((f"peak_{lv}_bytes_per_s", peak(base, unit)))
    smsp = _v(a, "smsp__cycles_elapsed.avg.per_second")
    sm = _v(a, "sm__cycles_elapsed.avg.per_second")
    for letter, p in (("f", "fp32"), ("d", "fp64")):
        base = "smsp__sass_thread_inst_executed_op_" + letter
        parts = [_v(a, f"{base}{op}_pred_on.sum.per_cycle_elapsed") for op in ("add", "mul", "fma")]
        if None not in parts and smsp:
            out.append((f"achieved_{p}", (parts[0] + parts[1] + 2 * parts[2]) * smsp))
        pk = _v(a, f"sm__sass_thread_inst_executed_op_{letter}fma_pred_on.sum.peak_sustained")
        if pk is not None and sm:
            out.append((f"peak_flop_per_s_{p}", 2 * pk * sm))
    return out


@pytest.mark.parametrize("name", HIERARCHICAL)
def test_per_level_values_and_peaks_match_the_reports_own(name):
    path = shared(name)
    result = roofline.analyze(roofline.read(path))
    checked: set[str] = set()
    for (_, row), a in zip(result.iterrows(), _actions(path)):
        if not row["replay_ok"] or not row["duration_s"] > 0:
            continue
        for col, own in _own_values(a):
            if own is None:
                continue
            if col.startswith("achieved_fp"):
                ours = row["flop_" + col.split("_")[1]] / row["duration_s"]
            else:
                ours = row[col]
            if own == 0:
                assert ours == pytest.approx(0, abs=1e-3 * max(1.0, row["duration_s"])), col
                continue
            assert ours == pytest.approx(own, rel=5e-3), (name, row["kernel_id"], col)
            checked.add(col)
        path_name = row["tensor_path"]
        if isinstance(path_name, str) and not path_name.startswith(("hmma", "imma")):
            own_rate = _v(a, f"sm__ops_path_tensor_{path_name}.sum.per_second")
            own_peak = _v(a, f"sm__ops_path_tensor_{path_name}.sum.peak_sustained_elapsed.per_second")
            assert row["flop_tensor"] / row["duration_s"] == pytest.approx(own_rate, rel=5e-3)
            assert row["peak_flop_per_s_tensor"] == pytest.approx(own_peak, rel=5e-3)
            checked.update({"tensor", "peak_tensor"})
    # every level, its roof and the fp32 FLOP rate were checked on each report
    for must in ("achieved_dram_bytes_per_s", "peak_dram_bytes_per_s", "achieved_l2_bytes_per_s",
                 "peak_l2_bytes_per_s", "achieved_l1_bytes_per_s", "peak_l1_bytes_per_s", "peak_flop_per_s_fp32"):
        assert must in checked, (name, must)
    if "wmma" in name:
        assert {"tensor", "peak_tensor"} <= checked


def test_the_wmma_gemm_point_on_every_level():
    """T4 WMMA GEMM 4096³: 2·4096³ tensor FLOPs; each level's intensity is FLOPs over its own bytes."""
    r = roofline.analyze(roofline.read(shared(HIERARCHICAL[0])))
    g = r[r["kernel_short_name"] == "wmma_gemm"].iloc[0]
    assert g["flop_tensor"] == 2 * 4096**3
    for lv in ("dram", "l2", "l1"):
        assert g[f"intensity_{lv}_flop_per_byte"] == pytest.approx(g["flop_total"] / g[f"{lv}_bytes"])
        assert g[f"ridge_{lv}_flop_per_byte"] == pytest.approx(g["peak_flop_per_s"] / g[f"peak_{lv}_bytes_per_s"])
    # % of roof is the busiest roof's utilisation (XProf's roofline efficiency)
    utils = [g["pct_of_peak_flop"]] + [g[f"pct_of_peak_{lv}_bandwidth"] for lv in ("dram", "l2", "l1")]
    assert g["pct_of_roof"] == pytest.approx(max(utils))
    assert g["pct_of_roof"] == pytest.approx(100 * g["achieved_flop_per_s"] / g["attainable_flop_per_s"])
