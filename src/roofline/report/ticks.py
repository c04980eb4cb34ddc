"""The minor tick marks of a log axis drawn as one marker line, and only the major ticks drawn made (matplotlib
only, no pyplot).

matplotlib makes a ``Tick`` (two lines, a grid line, two texts) per minor tick of a log axis at each save: ~110
per roofline chart, about a third of its CPU. A minor tick whose label is empty draws only its tick mark, so the
same marks drawn as the markers of one line give the same pixels at a fraction of the cost. It also makes a
``Tick`` (~1.5 ms) for each location its major locator gives, drawn or not: a log locator gives a decade beyond
each end of the view (4 of ~12 major ticks of a roofline chart are never drawn).
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backend_bases import RendererBase
from matplotlib.lines import Line2D
from matplotlib.ticker import Locator, NullLocator


def minor_marks(axis: Axis) -> None:
    """Replace ``axis``'s minor ticks by one line of the same tick-mark markers, drawn right after the axis.

    The marks copy the first minor tick's own mark (``update_from``: marker, size, width, colour, transform) at
    the locations matplotlib would draw for the limits set now, so the figure must be saved as it is (no change
    of limits afterwards): for a chart written once to a file. They are stamped after the axis's own draw, in
    the order matplotlib drew the ticks (after the major ticks; before the axis label, which is further out:
    no pixel in common). An axis whose minor ticks draw anything else (labels, which matplotlib puts on an axis
    under about a decade; a grid; marks on the far side) keeps matplotlib's ticks."""
    tick = axis.get_minor_ticks(1)[0]  # the first minor tick, as matplotlib makes it
    if not axis.get_visible() or any(a.get_visible() for a in (tick.gridline, tick.tick2line, tick.label2)):
        return
    locs = np.asarray(axis.get_minorticklocs(), dtype=float)
    if any(axis.minor.formatter.format_ticks(locs)):
        return
    # the ticks matplotlib draws: those within the view, with its tolerance (Axis._update_ticks)
    a, b = sorted(axis.get_transform().transform(np.asarray(axis.get_view_interval(), dtype=float)))
    t = axis.get_transform().transform(locs) if len(locs) else locs
    locs = locs[(t >= a - (b - a) * 1e-10) & (t <= b + (b - a) * 1e-10)]
    marks = Line2D([], [])
    marks.update_from(tick.tick1line)
    marks.set_figure(axis.get_figure(root=False))
    zeros = np.zeros(len(locs))
    marks.set_data((locs, zeros) if axis.axis_name == "x" else (zeros, locs))
    axis.set_minor_locator(NullLocator())
    draw_axis = axis.draw

    def draw_with_marks(renderer: RendererBase) -> None:
        draw_axis(renderer)
        if axis.get_visible():
            marks.draw(renderer)
    axis.draw = draw_with_marks  # type: ignore[method-assign]


def _in_view(axis: Axis, locs: np.ndarray) -> np.ndarray:
    """The locations of ``locs`` that matplotlib draws on ``axis``: within the view, with its tolerance, each
    transformed alone (as Axis._update_ticks tests each tick)."""
    transform = axis.get_transform()
    a, b = sorted(transform.transform(np.asarray(axis.get_view_interval(), dtype=float)))
    tol = (b - a) * 1e-10
    return np.array([a - tol <= transform.transform(loc) <= b + tol for loc in locs], dtype=bool)


class _InView(Locator):
    """``locator``'s locations that its axis draws (the others would make a ``Tick`` each, never drawn)."""

    def __init__(self, locator: Locator) -> None:
        self.locator = locator

    def set_axis(self, axis: Axis) -> None:  # type: ignore[override]
        super().set_axis(axis)
        self.locator.set_axis(axis)

    def __call__(self) -> np.ndarray:
        locs = np.asarray(self.locator(), dtype=float)
        return locs[_in_view(self.axis, locs)] if len(locs) else locs

    def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
        return self.locator.tick_values(vmin, vmax)

    def nonsingular(self, v0: float, v1: float) -> tuple[float, float]:
        return self.locator.nonsingular(v0, v1)

    def view_limits(self, vmin: float, vmax: float) -> tuple[float, float]:
        return self.locator.view_limits(vmin, vmax)


def drawn_majors(axis: Axis) -> None:
    """Let a log ``axis`` make major ticks only at the locations it draws (the same ticks drawn, the same pixels);
    for a chart written once to a file, like :func:`minor_marks` (``axis.get_majorticklocs`` then gives no location
    beyond the view). A linear axis is left as it is: its formatter's precision and offset, and an automatic minor
    locator, read the off-view locations too."""
    if axis.get_scale() == "log":
        axis.set_major_locator(_InView(axis.get_major_locator()))


def for_png(ax: Axes) -> None:
    """Both axes of a chart written once to a PNG: :func:`minor_marks` and :func:`drawn_majors` (the same pixels,
    cheaper; an SVG keeps an element per tick, as editors expect)."""
    for axis in (ax.xaxis, ax.yaxis):
        minor_marks(axis)
        drawn_majors(axis)


__all__ = ["drawn_majors", "for_png", "minor_marks"]
