"""Major ticks made only where the axis draws them (report/ticks.py ``drawn_majors``): the very PNG bytes of
matplotlib's own ticks, with fewer ticks made (a log locator gives a decade beyond each end of the view)."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt

from conftest import analysed, kernel_row
from roofline.report import png
from roofline.report.ticks import drawn_majors


def _roofline_figure(empty: bool = False):
    rows = [kernel_row(kernel_id=i, kernel_short_name=f"k{i}", kernel_name=f"k{i}", flop_fp32=0.0 if empty else 10 ** (8 + i),
                       dram_bytes=10 ** (6 + i % 3), duration_s=1e-3 * (i + 1)) for i in range(6)]
    return png.draw(analysed(rows))


def _png(fig, drawn_only: bool) -> bytes:
    if drawn_only:
        for axis in (fig.axes[0].xaxis, fig.axes[0].yaxis):
            drawn_majors(axis)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def test_major_ticks_made_only_where_drawn_give_the_same_png_with_fewer_ticks():
    for empty in (False, True):  # a chart with points (SI labels), and the empty chart (matplotlib's labels)
        plain, drawn = _roofline_figure(empty), _roofline_figure(empty)
        try:
            expected, got = _png(plain, drawn_only=False), _png(drawn, drawn_only=True)
            assert got == expected
            for before, after in zip((plain.axes[0].xaxis, plain.axes[0].yaxis), (drawn.axes[0].xaxis, drawn.axes[0].yaxis)):
                lo, hi = sorted(before.get_view_interval())
                locs = before.get_majorticklocs()
                assert len(locs) > len(after.get_majorticklocs())  # the plain locator gave ticks outside the view
                assert list(after.get_majorticklocs()) == [x for x in locs if lo <= x <= hi]
                assert len(after.majorTicks) < len(before.majorTicks)
        finally:
            plt.close(plain)
            plt.close(drawn)
