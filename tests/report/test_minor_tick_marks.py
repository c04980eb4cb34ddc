"""A log axis's minor ticks drawn as one line of markers (report/ticks.py) give the very PNG bytes that
matplotlib's own minor ticks give, and an axis whose minor ticks carry labels keeps matplotlib's ticks; major ticks
made only where the axis draws them (``drawn_majors``) give the same bytes with fewer ticks made."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from conftest import analysed, kernel_row
from kineto_synthetic import kineto
from roofline.pipeline import run
from roofline.report import comm_chart, png
from roofline.report.ticks import drawn_majors, minor_marks


def _png(fig, marks: bool, drawn_only: bool = False) -> bytes:
    for axis in (fig.axes[0].xaxis, fig.axes[0].yaxis):
        if marks:
            minor_marks(axis)
        if drawn_only:
            drawn_majors(axis)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _roofline_figure(empty: bool = False):
    rows = [kernel_row(kernel_id=i, kernel_short_name=f"k{i}", kernel_name=f"k{i}",
                       flop_fp32=0.0 if empty else 10 ** (8 + i), dram_bytes=10 ** (6 + i % 3), duration_s=1e-3 * (i + 1))
            for i in range(6)]
    return png.draw(analysed(rows))


def test_roofline_chart_with_minor_marks_is_byte_identical_to_matplotlibs_ticks():
    plain, marked = _roofline_figure(), _roofline_figure()
    try:
        assert len(plain.axes[0].xaxis.get_minorticklocs()) > 10  # the chart has minor ticks to replace
        expected, got = _png(plain, marks=False), _png(marked, marks=True)
        assert all(isinstance(ax.get_minor_locator(), NullLocator)
                   for ax in (marked.axes[0].xaxis, marked.axes[0].yaxis))  # the marks were used
        assert got == expected
    finally:
        plt.close(plain)
        plt.close(marked)


def test_communication_chart_with_minor_marks_is_byte_identical(tmp_path):
    trace = kineto(tmp_path / "c.pt.trace.json",
                   [{"name": "allreduce", "in": 1 << 20, "out": 1 << 20, "n": 8, "ts": 100.0, "dur": 50.0},
                    {"name": "_allgather_base", "in": 1 << 10, "out": 1 << 13, "n": 8, "ts": 300.0, "dur": 40.0}],
                   compute=[(90.0, 30.0)])
    frame = run([trace]).frame
    assert _png(comm_chart.draw(frame), marks=True) == _png(comm_chart.draw(frame), marks=False)
    written = comm_chart.write(frame, tmp_path / "communication.png")
    assert written is not None and written.read_bytes() == _png(comm_chart.draw(frame), marks=False)


def _decade_figure() -> Figure:
    fig = Figure(figsize=(4, 3), dpi=100)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.plot([2, 3, 5], [20, 40, 70])
    ax.set_xlim(2, 8)  # under a decade: matplotlib labels the minor ticks (3, 4, 6…)
    ax.set_ylim(15, 1500)
    return fig


def test_an_axis_whose_minor_ticks_are_labelled_keeps_matplotlibs_ticks():
    plain, marked = _decade_figure(), _decade_figure()
    got = _png(marked, marks=True)
    assert not isinstance(marked.axes[0].xaxis.get_minor_locator(), NullLocator)  # labelled: kept
    assert isinstance(marked.axes[0].yaxis.get_minor_locator(), NullLocator)  # two decades: marks
    assert any(t.get_text() for t in marked.axes[0].xaxis.get_minorticklabels())
    assert got == _png(plain, marks=False)


def test_major_ticks_made_only_where_drawn_give_the_same_png_with_fewer_ticks():
    for empty in (False, True):  # a chart with points (SI labels), and the empty chart (matplotlib's labels)
        plain, drawn = _roofline_figure(empty), _roofline_figure(empty)
        try:
            assert _png(drawn, marks=True, drawn_only=True) == _png(plain, marks=True)
            for before, after in zip((plain.axes[0].xaxis, plain.axes[0].yaxis), (drawn.axes[0].xaxis, drawn.axes[0].yaxis)):
                lo, hi = sorted(before.get_view_interval())
                locs = before.get_majorticklocs()
                assert len(locs) > len(after.get_majorticklocs())  # the plain locator gave ticks outside the view
                assert list(after.get_majorticklocs()) == [x for x in locs if lo <= x <= hi]
                assert len(after.majorTicks) < len(before.majorTicks)
        finally:
            plt.close(plain)
            plt.close(drawn)
