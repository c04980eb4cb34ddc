"""roofline compare: matching, hand-computed changes, the regression gate, the HTML diff in Chromium."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import roofline
from browser import _browser, _open
from conftest import analysed, kernel_row, shared
from conftest import cli as _cli
from roofline.analysis.compare import (
    CompareError,
    compare,
    gate,
    group_changes,
    normalise_name,
    parse_rules,
    program_change,
)

A10G = "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"


@pytest.fixture(scope="module")
def a10g():
    return roofline.analyze(roofline.read(shared(A10G)))


def test_a_profile_against_itself_changes_nothing(a10g):
    d = compare(a10g, a10g)
    assert (d["match"] == "name+nvtx+order").all() and len(d) == len(a10g)
    for col in [c for c in d.columns if c.endswith(("_change_pct", "_change_pts"))]:
        assert (d[col].fillna(0) == 0).all(), col
    assert not d["bound_moved"].any()
    assert program_change(d) == pytest.approx({"time_base_s": a10g["duration_s"].sum(),
                                               "time_cand_s": a10g["duration_s"].sum(), "time_change_pct": 0.0,
                                               "matched": 4, "new": 0, "vanished": 0})


def test_sgemm_variants_as_two_profiles_give_the_hand_computed_changes(a10g, tmp_path):
    one = a10g[a10g["kernel_short_name"] == "one_blocktiling"]
    two = a10g[a10g["kernel_short_name"] == "two_blocktiling"]
    d = compare(one, two, mapping={normalise_name(two["kernel_name"].iloc[0]): normalise_name(one["kernel_name"].iloc[0])})
    (row,) = d.itertuples()
    t1, t2 = one["duration_s"].iloc[0], two["duration_s"].iloc[0]
    assert row.match == "name+nvtx+order"
    assert row.duration_s_change_pct == pytest.approx((t2 - t1) / t1 * 100)
    f1, f2 = one["flop_total"].iloc[0], two["flop_total"].iloc[0]
    assert row.flop_total_change_pct == pytest.approx((f2 - f1) / f1 * 100) and abs(row.flop_total_change_pct) < 0.2
    a1, a2 = f1 / t1, f2 / t2
    assert row.achieved_flop_per_s_change_pct == pytest.approx((a2 - a1) / a1 * 100)
    assert row.pct_of_roof_change_pts == pytest.approx(two["pct_of_roof"].iloc[0] - one["pct_of_roof"].iloc[0])
    i1, i2 = one["intensity_dram_flop_per_byte"].iloc[0], two["intensity_dram_flop_per_byte"].iloc[0]
    assert row.intensity_dram_flop_per_byte_change_pct == pytest.approx((i2 - i1) / i1 * 100)
    # without the mapping nothing matches: one vanished, one new
    assert sorted(compare(one, two)["match"]) == ["new", "vanished"]


def test_repeated_launches_match_in_order_and_group():
    base = analysed([kernel_row(kernel_id=i, kernel_name="void k<1>(float*)", duration_s=1e-3) for i in range(3)])
    cand = analysed([kernel_row(kernel_id=i, kernel_name="void k<2>(float*)", duration_s=2e-3) for i in range(2)])
    d = compare(base, cand)
    assert list(d["match"]) == ["name+nvtx+order"] * 2 + ["vanished"]
    g = group_changes(d)
    assert g.loc[0, "launches_base"] == 3 and g.loc[0, "launches_cand"] == 2
    assert g.loc[0, "duration_s_change_pct"] == pytest.approx((4e-3 - 3e-3) / 3e-3 * 100)


@pytest.mark.parametrize("rule, slower, expect", [
    ("time>5%", 1.049, 0), ("time>5%", 1.051, 1), ("achieved<-5%", 1.06, 1), ("achieved<-5%", 1.04, 0),
    ("total_time>2%", 1.019, 0), ("total_time>2%", 1.021, 1), ("roof<-1", 1.0, 0),
])
def test_gate_both_sides_of_each_threshold(rule, slower, expect):
    base = analysed([kernel_row()])
    cand = analysed([kernel_row(duration_s=1e-3 * slower)])
    assert len(gate(compare(base, cand), parse_rules(rule))) == expect


def test_gate_on_bound_moves_and_vanished():
    base = analysed([kernel_row(), kernel_row(kernel_id=1, kernel_name="gone")])
    cand = analysed([kernel_row(dram_bytes=1e10, duration_s=1.0)])  # now DRAM-bound
    d = compare(base, cand)
    assert [v.split(":")[0] for v in gate(d, parse_rules("bound,vanished"))] == ["bound", "vanished"]
    for bad in ("time>>5", "speed>5%", "roof<-5%", ""):
        with pytest.raises(CompareError):
            parse_rules(bad)


def test_cli_gate_exit_codes_and_messages(tmp_path):
    same = _cli("compare", shared(A10G), shared(A10G), "--fail-on", "time>5%,bound")
    assert same.returncode == 0, same.stderr
    one = _cli("compare", shared(A10G))
    assert one.returncode == 2 and "baseline and at least one candidate" in one.stderr
    bad = _cli("compare", shared(A10G), shared(A10G), "--fail-on", "time>>5")
    assert bad.returncode == 2 and "bad --fail-on rule" in bad.stderr
    other = _cli("compare", shared(A10G), shared("ncu/sm75_t4_wmma-gemm-fp16_full-hier.ncu-rep"))
    assert other.returncode == 0 and "nothing matched" in other.stdout and "different devices" in other.stdout
    slow = _cli("compare", shared("ncu/sm86_a10g_gemm-variants_metrics-all-regex.ncu-rep"), shared(A10G),
                "--fail-on", "time>5%", "--format", "json")
    assert slow.returncode == 4 and "regression: time>5%: warptiling" in slow.stderr
    assert json.loads(slow.stdout)


def test_html_diff_has_one_arrow_per_matched_pair(tmp_path, a10g):
    from roofline.report import compare_html

    cand = a10g.copy()
    cand["duration_s"] = cand["duration_s"] * np.array([1.0, 0.5, 0.8, 1.2])
    cand = roofline.analyze(cand.drop(columns=[c for c in cand.columns if c.startswith(("achieved_", "pct_", "attainable"))]))
    d = compare(a10g, cand)
    path = compare_html.write(d, a10g, cand, tmp_path / "diff.html", "a → b", "summary")
    with _browser() as p:
        browser, page, problems = _open(p, path, ready="window.rooflineDiff && window.rooflineDiff.ready")
        try:
            assert page.evaluate("window.rooflineDiff.arrows") == 4
            assert page.evaluate("document.getElementById('diff-chart').layout.annotations.length") == 4
            assert page.locator("#diff-table tbody tr").count() == 4
            assert problems == []
        finally:
            browser.close()


def test_a_trace_against_itself_and_against_a_report(tmp_path):
    trace = shared("traces/torch2.6_h100_bert-small_infer_flops-flag.pt.trace.json.gz")
    same = _cli("compare", trace, trace, "--fail-on", "time>0%,vanished,new", "--out", tmp_path / "d.csv")
    assert same.returncode == 0, same.stderr
    d = pd.read_csv(tmp_path / "d.csv")
    assert len(d) > 0 and (d["match"] != "new").all() and (d["match"] != "vanished").all()
    mixed = _cli("compare", shared(A10G), trace)
    assert mixed.returncode == 0, mixed.stderr
    assert "different devices" in mixed.stdout and "different formats" in mixed.stdout
    assert "Traceback" not in mixed.stderr


def test_a_kernel_without_a_duration_makes_its_sides_program_time_unavailable():
    base = analysed([kernel_row(kernel_id=i, kernel_name=f"k{i}", kernel_short_name=f"k{i}", duration_s=1e-3)
                     for i in range(2)])
    cand = analysed([kernel_row(kernel_id=i, kernel_name=f"k{i}", kernel_short_name=f"k{i}",
                                duration_s=float("nan") if i == 1 else 5e-4) for i in range(2)])
    p = program_change(compare(base, cand))
    assert p["time_base_s"] == pytest.approx(2e-3)
    assert np.isnan(p["time_cand_s"]) and np.isnan(p["time_change_pct"])  # not 0.5 ms, a -75% that never happened
