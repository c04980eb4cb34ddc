"""The MCP tools as plain functions (roofline.agent.tools), in process: the roots check and what collect_next ranks,
against values taken from the CLI's JSON rather than from the tools' own code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import cli as _cli
from conftest import shared
from roofline.agent import tools as t

BERT = "traces/torch2.6_h100_bert-small_infer_flops-flag.pt.trace.json.gz"


def test_missing_levels_are_ranked_by_the_gpu_time_they_leave_unexplained():
    path = shared(BERT)
    rows = json.loads(_cli("analyze", path, "--format", "json").stdout)["rows"]
    session = t.Session(t.Roots([path.parent]))
    got = t.collect_next(session, [str(path)])
    by_q = {(m["quantity"], m["why_and_how"]): m for m in got["missing_quantities"]}
    for q in ("l2_bytes", "l1_bytes", "dram_bytes"):
        lacking = [r for r in rows if r[q] is None and str(r[f"{q}_source"]).startswith("unavailable")]
        for why in {r[f"{q}_source"] for r in lacking}:
            mine = [r for r in lacking if r[f"{q}_source"] == why]
            item = by_q[(q, why)]
            assert item["rows"] == len(mine)
            assert item["gpu_time_s"] == pytest.approx(sum(max(r["duration_s"], 0) for r in mine), rel=1e-12)
    times = [m["gpu_time_s"] for m in got["missing_quantities"]]
    assert times == sorted(times, reverse=True) and "ncu --section" in got["missing_quantities"][0]["why_and_how"]


def test_roots_follow_links_and_take_relative_paths_from_the_first_root(tmp_path):
    a, b, outside = tmp_path / "a", tmp_path / "b", tmp_path / "outside"
    for d in (a, b, outside):
        d.mkdir()
    (a / "link").symlink_to(outside)
    roots = t.Roots([a, b])
    assert roots.check("x.ncu-rep") == Path(os.path.realpath(a / "x.ncu-rep"))
    assert roots.check(str(b / "y.csv")) == Path(os.path.realpath(b / "y.csv"))
    for bad in ("link/z.ncu-rep", "../outside/z.ncu-rep", str(outside / "z"), "/"):
        with pytest.raises(t.ToolInputError, match="outside the allowed roots"):
            roots.check(bad)
    assert t.Roots([]).roots == [Path(os.path.realpath(Path.cwd()))]  # default: the current directory


def test_a_cursor_only_pages_its_own_query():
    q = {"tool": "analyze", "paths": ["a"]}
    cur = t._cursor(q, 20)
    assert t._offset(cur, q) == 20
    with pytest.raises(t.ToolInputError, match="another query"):
        t._offset(cur, {**q, "paths": ["b"]})
    with pytest.raises(t.ToolInputError, match="not one this server gave"):
        t._offset("garbage!", q)


def test_mcp_without_the_sdk_says_what_to_install_in_one_line(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp raises ImportError
    p = _cli("mcp")
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.strip().splitlines() == ["roofline: mcp: needs the MCP SDK (version 2): pip install 'roofline[mcp]'"]


def test_long_envelope_lists_are_cut_and_counted():
    steps = [{"profile": "p", "device": "d", "step": None}] + [{"profile": "p", "device": "d", "step": f"ProfilerStep#{i}"}
                                                              for i in range(100)]
    answer = t._bounded({"headline": steps, "notes": [{"text": str(i)} for i in range(70)], "inputs": [{}],
                         "page": {"offset": 0}})
    assert len(answer["headline"]) == t.MAX_ITEMS["headline"] and answer["headline"][0]["step"] is None
    assert answer["headline"][1]["step"] == "ProfilerStep#0"  # the profile's own headline first, then its steps
    assert answer["page"]["left_out"] == {"headline": 101 - t.MAX_ITEMS["headline"], "notes": 20}
    assert len(answer["inputs"]) == 1
