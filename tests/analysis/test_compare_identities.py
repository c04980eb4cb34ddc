"""compare by identity: names kept whole, per-identity sums by hand, normalisation, bootstrap intervals worked out
by hand, the gate's noise floor and communication rules, the summary as plain dicts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import analysed, kernel_row
from roofline.analysis.compare_gate import Floor, gate, parse_rules, unevaluated
from roofline.analysis.compare_runs import Side, compare_sides
from roofline.analysis.compare_summary import summary
from roofline.analysis.identity import identity_name, per_run


@pytest.mark.parametrize("raw, ident", [
    ("[CUDA memcpy Device-to-Device]", "[CUDA memcpy Device-to-Device]"),
    ("[CUDA memset]", "[CUDA memset]"),
    ("void gemm<128, 64>(float*, int)", "gemm<128, 64>"),
    ("void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>>(int, T2)",
     "at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>>"),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)", "ncclDevKernel_SendRecv"),
    ("triton_poi_fused_add_0", "triton_poi_fused_add_0"), ("Cijk_Ailk_Bljk_SB.kd", "Cijk_Ailk_Bljk_SB"),
    ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN", "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN"),
])
def test_identity_names_are_whole_names_without_parameters(raw, ident):
    assert identity_name(raw) == ident


def _k(i, name="k", dur=1e-3, **kw):
    return kernel_row(kernel_id=i, kernel_name=name, kernel_short_name=name, duration_s=dur, **kw)


def test_one_capture_sums_per_identity_by_hand():
    rows = [_k(0, dur=1e-3), _k(1, dur=3e-3), _k(2, dur=2e-3), _k(3, "void g<1>(int)", dur=5e-3),
            _k(4, "void g<1>(int)", dur=5e-3, grid_x=2, grid_y=1, grid_z=1, block_x=64, block_y=1, block_z=1)]
    r = per_run(analysed(rows))
    k = r[r["identity_name"] == "k"].iloc[0]
    assert (k["count"], k["total_s"], k["median_s"]) == (3, pytest.approx(6e-3), pytest.approx(2e-3))
    assert k["flop_total"] == pytest.approx(3e9)  # 1e9 each
    # FLOP/s over the identity's time: 3e9 / 6e-3; % of roof against min(2e13, 10 FLOP/B × 2e12 B/s)
    assert k["achieved_flop_per_s"] == pytest.approx(3e9 / 6e-3)
    assert k["pct_of_roof"] == pytest.approx(3e9 / 6e-3 / 2e13 * 100)
    assert sorted(r.loc[r["identity_name"] == "g<1>", "config"]) == ["(none)", "grid [2, 1, 1] block [64, 1, 1]"]


def test_a_kernel_without_duration_makes_its_identity_total_unknown_not_smaller():
    r = per_run(analysed([_k(0), _k(1, dur=float("nan"))]))
    assert np.isnan(r["total_s"].iloc[0]) and r["median_s"].iloc[0] == pytest.approx(1e-3)


def _side(label, *captures):
    return Side(label, [(f"{label}{i}", analysed(rows)) for i, rows in enumerate(captures)])


def test_captures_of_different_length_compare_per_launch():
    # the candidate capture holds half the launches of "a": per-launch normalisation scales it to the baseline's 4
    base = _side("b", [_k(0, "a"), _k(1, "a"), _k(2, "b", dur=2e-3), _k(3, "b", dur=2e-3)])
    cand = _side("c", [_k(0, "a"), _k(1, "b", dur=2e-3), _k(2, "b", dur=2e-3)])
    comp = compare_sides([base, cand])
    assert comp.normalisation == "per launch"
    p = comp.programs[0]
    assert (p["time_base_s"], p["time_cand_s"]) == (pytest.approx(6e-3), pytest.approx(5e-3))
    assert p["time_norm_cand_s"] == pytest.approx(5e-3 * 4 / 3)
    a = comp.table.set_index("identity_name").loc["a"]
    assert a["median_s_change_pct"] == 0 and a["total_norm_s_cand"] == pytest.approx(1e-3 * 4 / 3)


def test_captures_with_steps_compare_per_step():
    one = [_k(i, nvtx_range=f"ProfilerStep#{i // 2}") for i in range(4)]  # 2 steps
    three = [_k(i, nvtx_range=f"ProfilerStep#{i // 2}") for i in range(6)]  # 3 steps, same time per step
    comp = compare_sides([_side("b", one), _side("c", three)])
    assert comp.normalisation == "per step"
    assert comp.programs[0]["time_norm_change_pct"] == pytest.approx(0.0)
    assert comp.programs[0]["time_change_pct"] == pytest.approx(50.0)


def test_the_interval_over_two_captures_a_side_is_the_extreme_ratios():
    # medians of 2 resampled captures take their min with probability 1/4, so the 2.5% and 97.5% points of
    # the change are min(c)/max(b) - 1 and max(c)/min(b) - 1 (each has probability 1/16 > 2.5%)
    base = _side("b", [_k(0, dur=1.00e-3)], [_k(0, dur=1.04e-3)])
    cand = _side("c", [_k(0, dur=1.10e-3)], [_k(0, dur=1.20e-3)])
    comp = compare_sides([base, cand])
    row = comp.table.iloc[0]
    assert row["median_s_change_pct"] == pytest.approx((1.15 / 1.02 - 1) * 100)
    assert row["median_s_change_pct_lo"] == pytest.approx((1.10 / 1.04 - 1) * 100)
    assert row["median_s_change_pct_hi"] == pytest.approx((1.20 / 1.00 - 1) * 100)
    # the gate fails only when the whole interval is past the threshold: lo = +5.8%
    assert len(gate(comp, parse_rules("time>5%"))) == 1
    assert gate(comp, parse_rules("time>6%")) == []


def test_the_same_inputs_give_the_same_interval():
    caps = [[_k(0, dur=d)] for d in (1e-3, 1.03e-3, 0.98e-3)]
    a = compare_sides([_side("b", *caps), _side("c", *caps[::-1])]).table
    b = compare_sides([_side("b", *caps), _side("c", *caps[::-1])]).table
    assert a["median_s_change_pct_lo"].tolist() == b["median_s_change_pct_lo"].tolist()
    assert a["median_s_change_pct_lo"].iloc[0] < 0 < a["median_s_change_pct_hi"].iloc[0]


def _pair(big_slow=1.0, small_slow=1.0, comm_slow=1.0):
    def rows(f_big, f_small, f_comm):
        return [_k(0, "big", dur=10e-3 * f_big), _k(1, "small", dur=0.05e-3 * f_small),  # small: 0.45% of the time
                _k(2, "ncclDevKernel_AllReduce_Sum_f32", dur=1e-3 * f_comm)]
    return compare_sides([_side("b", rows(1, 1, 1)), _side("c", rows(big_slow, small_slow, comm_slow))])


def test_the_noise_floor_and_communication_rules():
    small, big, comm = _pair(small_slow=2.0), _pair(big_slow=1.06), _pair(comm_slow=3.0)
    assert gate(small, parse_rules("time>5%")) == []  # under 1% of program time
    assert len(gate(small, parse_rules("time>5%"), Floor(min_share_pct=0.1))) == 1
    assert gate(big, parse_rules("time>5%"), Floor(min_change_s=1e-3)) == []  # 0.6 ms < 1 ms
    (line,) = gate(big, parse_rules("time>5%"))
    assert line.startswith("time>5%: big per-launch median +6.0%") and "one capture a side" in line
    # a communication kernel 3x slower: not a compute regression; its own rule sees it
    assert gate(comm, parse_rules("time>5%")) == []
    assert "ncclDevKernel_AllReduce_Sum_f32" in gate(comm, parse_rules("comm_time>50%"))[0]


def test_rules_that_cannot_be_evaluated():
    plain = compare_sides([_side("b", [_k(0)]), _side("c", [_k(0)])])
    assert "no communication kernel identity" in unevaluated(plain, parse_rules("comm_time>5%"))[0]
    renamed = compare_sides([_side("b", [_k(0)]), _side("c", [_k(0, "other")])])
    assert "no compute kernel identity is in both" in unevaluated(renamed, parse_rules("time>5%"))[0]
    lost = compare_sides([_side("b", [_k(0)]), _side("c", [_k(0, l2_bytes=np.nan)])])
    assert "known in one profile only for 1 identity(ies): k" in unevaluated(lost, parse_rules("l2_bytes>5%"))[0]
    assert unevaluated(plain, parse_rules("time>5%,total_time>1%,bound,new,vanished")) == []


def test_one_sided_identities_and_the_summary_as_plain_dicts():
    comp = compare_sides([_side("b", [_k(0, "a"), _k(1, "gone", dur=5e-3)]), _side("c", [_k(0, "a"), _k(1, "new")])])
    s = summary(comp, top=10)
    json.dumps(s, allow_nan=False)  # plain dicts, no NaN
    c = s["candidates"][0]
    assert [e["identity"] for e in c["baseline_only"]] == ["gone"] and c["baseline_only"][0]["total_s"] == 5e-3
    assert [e["identity"] for e in c["candidate_only"]] == ["new"]
    assert [v.split(":")[0] for v in gate(comp, parse_rules("vanished,new"))] == ["vanished", "new"]


def test_n_way_one_table_for_every_candidate():
    sides = [_side(str(n), [_k(0, dur=1e-3 * n)]) for n in (1, 2, 4)]
    comp = compare_sides(sides)
    assert comp.table["candidate"].tolist() == ["2", "4"]
    assert comp.table["median_s_change_pct"].tolist() == pytest.approx([100.0, 300.0])
    assert [p["candidate"] for p in comp.programs] == ["2", "4"]


def test_the_spread_of_one_programs_captures_by_hand():
    from roofline.analysis.compare_runs import spread

    caps = [(f"run{i}", analysed([_k(0, dur=d, source_file=f"run{i}"), _k(1, "other", dur=1e-3, source_file=f"run{i}")]))
            for i, d in enumerate((1.0e-3, 1.04e-3, 1.02e-3))]
    t = spread(caps).set_index("identity")
    k = t.loc["k"]
    assert (k["captures"], k["median_s"], k["median_s_min"], k["median_s_max"]) == (
        3, pytest.approx(1.02e-3), pytest.approx(1.0e-3), pytest.approx(1.04e-3))
    assert k["spread_pct"] == pytest.approx(0.04 / 1.02 * 100)
    assert k["share_pct"] == pytest.approx(1.02 / 2.02 * 100)  # of the median program time, 2.02 ms
    assert t.loc["other", "spread_pct"] == 0


def test_an_identity_missing_from_a_capture_counts_0_there():
    # "rare" runs in one capture of three: its median total over the captures is 0, its launch time is its own
    base = _side("b", [_k(0), _k(1, "rare", dur=3e-3)], [_k(0)], [_k(0)])
    comp = compare_sides([base, _side("c", [_k(0)])])
    rare = comp.table.set_index("identity_name").loc["rare"]
    assert rare["presence"] == "baseline only" and rare["runs_present_base"] == 1
    assert rare["total_s_base"] == 0 and rare["count_base"] == 0 and rare["median_s_base"] == pytest.approx(3e-3)


def test_communication_carries_bus_bandwidth_where_the_frame_has_it():
    def cap(bw):
        f = analysed([_k(0, "ncclDevKernel_AllReduce_Sum_f32", dur=2e-3), _k(1)])
        f["bus_bandwidth_bytes_per_s"] = [bw, float("nan")]  # as the collectives analysis would add it
        return f

    comp = compare_sides([Side("b", [("b", cap(1e11))]), Side("c", [("c", cap(5e10))])])
    (e,) = summary(comp)["candidates"][0]["communication"]
    assert e["bus_bandwidth_bytes_per_s"] == [1e11, 5e10]
    plain = compare_sides([_side("b", [_k(0, "ncclDevKernel_AllReduce_Sum_f32")]), _side("c", [_k(0, "ncclDevKernel_AllReduce_Sum_f32")])])
    assert "bus_bandwidth_bytes_per_s" not in summary(plain)["candidates"][0]["communication"][0]  # absent: not shown


def test_a_candidate_named_twice_keeps_its_rows_apart():
    one = analysed([_k(0)])
    comp = compare_sides([Side("a", [("a", one)]), Side("b", [("b", one)]), Side("b", [("b", one)])])
    assert comp.table["candidate"].tolist() == ["b", "b (2)"] and len(gate(comp, parse_rules("time>0%"))) == 0


def test_a_launch_without_duration_hides_no_regression_from_the_gate():
    # the program's time is unavailable, so shares are of the known time: "a" (+100%) is still checked, "b" (its
    # time unknown in the baseline) cannot be, and says so; nothing is ranked on an unknown total
    nan = float("nan")
    comp = compare_sides([_side("b", [_k(0, "a"), _k(1, "b", dur=nan), _k(2, "gone")]),
                          _side("c", [_k(0, "a", dur=2e-3), _k(1, "b"), _k(2, "new", dur=nan)])])
    rules = parse_rules("time>5%,new,vanished")
    assert [v.split(" per-launch")[0] for v in gate(comp, rules)] == ["time>5%: a", "new: new (its time unavailable)",
                                                                       "vanished: gone (50.0% of program time)"]
    assert unevaluated(comp, rules) == ["time>5%: median_s known in one profile only for 1 identity(ies): b"]
    c = summary(comp)["candidates"][0]
    assert [e["identity"] for e in c["regressions"]] == ["a"] and [e["identity"] for e in c["unknown"]] == ["b"]
