"""Damaged collective args (counts that are strings, negative, infinite or booleans; group sizes that are not
positive integers; names of no collective; ranks that are not lists) never crash a read and never become a
number: the value is missing and its source says why."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from kineto_synthetic import kineto
from roofline.pipeline import run

ODD = [
    {"in": "lots", "out": 8, "n": 8},
    {"in": -5, "out": -5, "n": 8},
    {"in": "Infinity", "out": "inf", "n": 8},
    {"in": True, "out": True, "n": True},
    {"in": 1000, "out": 1000, "n": -3},
    {"in": 1000, "out": 1000, "n": "eight"},
    {"in": 1000, "out": 1000, "n": 2.5},
    {"in": [1, 2], "out": {"a": 1}, "n": None},
    {"in": 10**19, "out": 1000, "n": 8},  # past int64: a size all the same (no overflow)
]


@pytest.mark.parametrize("odd", ODD, ids=[str(i) for i in range(len(ODD))])
def test_damaged_counts_and_groups_are_missing_with_a_reason(tmp_path, odd):
    trace = kineto(tmp_path / "t.pt.trace.json", [{"name": "allreduce", "ts": 100.0, "dur": 10.0, **odd}])
    r = run([trace]).frame.query("collective == 'all_reduce'").iloc[0]
    def count(v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    size_ok = count(odd["in"]) or count(odd["out"])  # an all-reduce's output is its input: either will do
    group_ok = isinstance(odd["n"], int) and not isinstance(odd["n"], bool) and odd["n"] > 0
    if not size_ok:
        assert math.isnan(r["message_bytes"]) and r["message_bytes_source"].startswith("unavailable: ")
    if not group_ok:
        assert pd.isna(r["group_size"])
        assert r["bus_bandwidth_bytes_per_s_source"].startswith("unavailable: ")
    for c in ("message_bytes", "algorithm_bandwidth_bytes_per_s", "bus_bandwidth_bytes_per_s", "pct_of_link_roof"):
        v = r[c]
        assert math.isnan(v) or (math.isfinite(v) and v >= 0)


def test_a_name_of_no_collective_and_odd_ranks_are_not_a_collective_row(tmp_path):
    trace = kineto(tmp_path / "t.pt.trace.json",
                   [{"name": 12345, "in": 10, "out": 10, "n": 8, "ts": 100.0, "dur": 10.0, "ranks": {"x": [1]}},
                    {"name": "allreduce", "in": 10, "out": 10, "n": 2, "ts": 200.0, "dur": 10.0, "ranks": "[0, 1"}])
    frame = run([trace]).frame
    named = frame[frame["collective"].notna()]
    # the first: its kernel's name spells AllReduce (the args' name is no collective); the second as recorded
    assert sorted(named["collective"]) == ["all_reduce", "all_reduce"]
    assert named["link_placement"].str.contains("assumed").all()
