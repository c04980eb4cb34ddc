"""The communication roofline: bus bandwidth vs message size with the link roofs, as drawn in the PNG (coordinates
read back from the artists) and in the HTML report (real headless Chromium), names escaped."""

from __future__ import annotations

import pytest

from browser import browser, open_page  # noqa: F401 - pytest fixtures (one Chromium per module)
from kineto_synthetic import kineto
from roofline.pipeline import run
from roofline.report import comm_chart, html, write_charts

XSS = "<img src=x onerror=alert(5)>"


def _frame(tmp_path):
    trace = kineto(tmp_path / "c.pt.trace.json",
                   [{"name": "allreduce", "in": 1 << 20, "out": 1 << 20, "n": 8, "ts": 100.0, "dur": 50.0,
                     "ranks": XSS},
                    {"name": "_allgather_base", "in": 1 << 18, "out": 1 << 21, "n": 8, "ts": 300.0, "dur": 40.0},
                    {"name": "alltoall", "in": 1 << 16, "out": 1 << 16, "n": 0, "ts": 500.0, "dur": 20.0}],
                   compute=[(90.0, 30.0)])
    return run([trace]).frame


def test_png_draws_each_collective_at_its_bus_bandwidth_and_the_nvlink_roof(tmp_path):
    frame = _frame(tmp_path)
    fig = comm_chart.draw(frame)
    by_gid = {a.get_gid(): a for ax in fig.axes for a in (*ax.collections, *ax.lines) if a.get_gid()}
    ar = by_gid["comm:all_reduce"].get_offsets()
    assert ar.tolist()[0] == pytest.approx([4 * (1 << 20), 4 * (1 << 20) / 50e-6 * 2 * 7 / 8])
    ag = by_gid["comm:all_gather"].get_offsets()
    assert ag.tolist()[0] == pytest.approx([4 * (1 << 21), 4 * (1 << 21) / 40e-6 * 7 / 8])
    alg = by_gid["comm-alg:all_to_all"].get_offsets()
    assert alg.tolist()[0] == pytest.approx([4 * (1 << 16), 4 * (1 << 16) / 20e-6])  # no group size: hollow, at algbw
    roof = next(a for g, a in by_gid.items() if g.startswith("link:NVLink 4"))
    assert set(roof.get_ydata()) == {450e9}  # H100 SXM: 900 GB/s bidirectional, 450 one way
    written = write_charts(frame, tmp_path / "out")
    assert tmp_path / "out" / "communication.png" in written


def test_html_section_in_headless_chromium(tmp_path, open_page):  # noqa: F811
    frame = _frame(tmp_path)
    path = html.write(frame, tmp_path / "comm.html")
    assert XSS not in path.read_text()
    page, problems = open_page(path)
    assert page.evaluate("window.rooflineReport.state.comm") == 3
    assert not page.evaluate("document.getElementById('communication').hidden")
    traces = page.evaluate("document.getElementById('comm-chart').data.map(t => [t.name, t.x, t.y])")
    names = {t[0] for t in traces}
    assert {"all_reduce (busbw)", "all_gather (busbw)", "all_to_all (algbw: group size unrecorded)"} <= names
    roof = next(t for t in traces if t[0].startswith("intra-node roof"))
    assert roof[2] == [450e9, 450e9]
    cells = page.evaluate("[...document.querySelectorAll('#comm-table tbody td')].map(td => td.textContent)")
    assert len(cells) == 6 and cells[3].startswith("90") and cells[4].startswith("20")  # exposed 90 µs, overlapped 20
    line = page.evaluate("document.getElementById('headline-comm').textContent")
    assert line.startswith("collectives: 110 µs of NCCL/RCCL kernels, 90.0 µs exposed") and "2 of 3 with a bus" in line
    assert XSS not in page.content().split("<script")[0]
    assert not problems


def test_several_ranks_get_a_marker_each(tmp_path):
    frames = [kineto(tmp_path / f"r{r}.pt.trace.json", [{"name": "allreduce", "in": 1 << 20, "out": 1 << 20, "n": 2,
                                                         "ts": 100.0, "dur": 40.0 + 10 * r}], rank=r, world=2)
              for r in (0, 1)]
    fig = comm_chart.draw(run(frames).frame)
    gids = {a.get_gid(): a for ax in fig.axes for a in ax.collections if a.get_gid()}
    assert set(gids) == {"comm:all_reduce:rank0", "comm:all_reduce:rank1"}
    assert gids["comm:all_reduce:rank1"].get_offsets().tolist()[0][1] == pytest.approx(4 * (1 << 20) / 50e-6)


def test_the_page_draws_at_most_max_points_collectives_the_longest(tmp_path, monkeypatch):
    monkeypatch.setattr(comm_chart, "MAX_POINTS", 2)
    data = comm_chart.comm_data(_frame(tmp_path))
    assert [p["collective"] for p in data["points"]] == ["all_reduce", "all_gather"]  # 50 and 40 µs; not the 20 µs
    assert data["not_drawn"] == 1
