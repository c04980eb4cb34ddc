"""The hierarchical roofline as a static chart (matplotlib, Agg): PNG, or SVG on request.

Log-log axes in FLOP/byte and FLOP/s (SI tick labels, one per decade); a sloped roof per memory level and a
flat roof per precision the kernels used, each labelled with its value and source (roofs of one value share a
line and a label); ridge points marked; one marker per kernel and level (coloured by bound as in the HTML
report, a shape per level, joined by a thin line as in NERSC's hierarchical charts; legend and key beside the
axes); the longest kernels numbered without overlap and named in a key; notes below the axes. A dotted "pipe
roof" across a kernel's points where its busiest SM pipe caps it below the FLOP roof (``analysis/pipes.py``).

Every artist carries a ``gid`` (``roof:dram``, ``roof:fp32``, ``ridge:dram:fp32``, ``level:dram``
for the kernels' markers at a level, in the order of ``chart_data.points``, ``pipe:<row>``) so tests read the drawn
coordinates back and compare them with the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on clusters; must precede pyplot
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.text import Text

from roofline.hardware.peaks import LEVELS
from roofline.report.chart_data import (
    LEVEL_LABELS,
    Roof,
    RoofSet,
    axis_limits,
    points,
    ridges,
    roof_sets,
    unplotted_count,
)
from roofline.report.figure import BOUND_COLOURS
from roofline.report.ticks import for_png

LEVEL_MARKERS = {"dram": "o", "l2": "s", "l1": "^", "lds": "D"}
LEVEL_STYLES = {"dram": "-", "l2": "--", "l1": ":", "lds": "-."}
JOIN_LIMIT = 500
PRECISION_COLOURS = {"fp64": "#6a3d9a", "fp32": "#1f78b4", "fp16": "#33a02c", "tensor": "#e31a1c"}


def title_for(frame: pd.DataFrame, clock: str = "profiled") -> str:
    # each distinct value converted once (an Arrow-backed column converted row by row cost ~5 ms per chart)
    devices = sorted({str(d) for d in frame["device_name"].dropna().unique()}) if "device_name" in frame else []
    files = sorted({Path(str(f)).name for f in frame["source_file"].dropna().unique()}) if "source_file" in frame else []
    profile = files[0] if len(files) == 1 else f"{len(files)} profiles"
    return f"{', '.join(devices) or 'unknown device'} · clock: {clock} · {profile}"


def set_note(st: RoofSet, total: int, more: str = "") -> str | None:
    """The visible note of a chart that shows one of several roof sets of a device."""
    if st.count <= 1:
        return None
    return (f"roof set {st.index + 1} of {st.count}: {st.kernels} of {total} kernel(s) were measured against "
            f"these roofs; the others ran at another clock or took their roofs from another source{more}")


#: the axes' place in the figure (fractions): fixed, so labels placed on the canvas stay where they were put
#: (a layout pass after placing them moved the axes under them: labels that had been apart overlapped);
#: the legend and the key of numbered kernels sit to the right of the axes, notes below the x label
AXES_RECT = (0.075, 0.11, 0.6, 0.81)
NOTE_SPACE = 0.06
#: points whose number labels are tried around them (offsets in points), nearest first
LABEL_OFFSETS = [(dx, dy) for r in (7, 13, 20, 28) for dx, dy in ((r, r), (r, -r), (-r, r), (-r, -r), (r, 0), (-r, 0),
                                                                    (0, r), (0, -r))]


def coinciding(roof_list: Sequence[Roof], tol: float = 0.005) -> dict[str, list[Roof]]:
    """Roofs of one kind whose values agree within ``tol`` (relative), by the key of the first of them: drawn
    as one line, they are labelled together."""
    groups: dict[str, list[Roof]] = {}
    for r in roof_list:
        for members in groups.values():
            h = members[0]
            if h.kind == r.kind and abs(h.value - r.value) <= tol * max(h.value, r.value):
                members.append(r)
                break
        else:
            groups[r.key] = [r]
    return groups


def _joint_label(members: list[Roof]) -> str:
    if len(members) == 1:
        return members[0].label
    head = members[0].label
    names = " = ".join(m.label.split(" ")[0] for m in members)
    return names + head[len(head.split(" ")[0]):] + " (the same roof)"


def chart_view(frame: pd.DataFrame, levels: Sequence[str] = LEVELS) -> pd.DataFrame:
    """The columns :func:`draw` reads when it is given its roofs (``roof_list``; without them it reads the roofs'
    columns too, :func:`roof_view`): a chart's rows taken from this copy ~15 columns, not all ~140."""
    wanted = {"kernel_id", "kernel_name", "kernel_short_name", "device_name", "source_file", "duration_s",
              "achieved_flop_per_s", "bound", "pipe_ceiling_flop_per_s", "binding_pipe", "binding_pipe_pct",
              "peak_flop_per_s"} | {f"intensity_{lv}_flop_per_byte" for lv in levels}
    return frame[[c for c in frame.columns if c in wanted]]


def draw(frame: pd.DataFrame, levels: Sequence[str] = LEVELS, title: str | None = None, label_top: int = 10,
         clock: str = "profiled", note: str | None = None, roof_list: Sequence[Roof] | None = None) -> Figure:
    """The roofline figure of one device's roofline frame.

    Only roofs the drawn kernels' % of roof used are drawn: where the kernels fall into several roof
    sets (clock, source), this draws the set with the most kernel time and says so in a note
    (:func:`roofline.report.write_charts` writes one chart per set). Points are coloured by bound (the HTML
    report's colours) with a shape per memory level, both keyed in the legend; the ``label_top`` longest
    kernels are numbered beside their point, the numbers placed apart, and named in a key beside the legend.

    ``roof_list``: the roofs of ``frame``'s kernels where the caller has them (``frame`` is then one roof set:
    ``roof_sets(frame)[0].roofs``, as :func:`roofline.report.write_charts` plans them): not computed again, and
    ``frame`` needs only the columns of :func:`chart_view`.
    """
    if roof_list is None:
        sets = roof_sets(frame, levels)
        if len(sets) > 1:
            note = note or set_note(sets[0], len(frame), "; they are not drawn here")
            frame = frame[sets[0].mask]
        roof_list = sets[0].roofs
    roof_list = list(roof_list)
    fig = plt.figure(figsize=(12, 6.5), dpi=110)
    left, bottom, width, height = AXES_RECT
    if note:
        bottom, height = bottom + NOTE_SPACE, height - NOTE_SPACE
    ax = fig.add_axes((left, bottom, width, height))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (FLOP/s)")
    # names may hold "$"; y=1.0: where matplotlib's automatic placement puts it (no tick labels or offset text above
    # the axes here), without measuring every tick label of both axes at each save (~0.7 s of a chart's CPU)
    ax.set_title(title or title_for(frame, clock), fontsize=10, parse_math=False, y=1.0)
    if note:  # below the x label, wrapped to the figure: never over the axes
        fig.text(0.01, 0.01, note, fontsize=7, color="#a00", gid="note", parse_math=False, wrap=True, va="bottom")
    pts = points(frame, levels)
    skipped = unplotted_count(frame)
    pts, roof_list, off_scale = drawable(pts, roof_list)
    if pts.empty:
        ax.text(0.5, 0.5, "nothing to plot: no kernel has both FLOPs and bytes"
                + (f" ({skipped} kernel(s) without)" if skipped else ""),
                transform=ax.transAxes, ha="center", va="center", gid="empty", parse_math=False)
        ax.set_xlim(1e-2, 1e3)
        ax.set_ylim(1e9, 1e15)
        return fig
    (x0, x1), (y0, y1) = axis_limits(pts, roof_list)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    _si_ticks(ax)
    top_compute = max((r.value for r in roof_list if r.kind == "compute"), default=y1)
    joint = {m.key: (head, members) for head, members in coinciding(roof_list).items() for m in members}
    for r in roof_list:
        head, members = joint[r.key]
        label = _joint_label(members) if r.key == head else "_nolegend_"  # one line, one label naming each roof
        if r.kind == "bandwidth":
            x_end = top_compute / r.value
            ax.plot([x0, x_end], [r.value * x0, top_compute], LEVEL_STYLES[r.key.split("#")[0]], color="0.25", lw=1.4,
                    gid=f"roof:{r.key}", label=label)
        else:
            x_start = min((r.value / b.value for b in roof_list if b.kind == "bandwidth"), default=x0)
            ax.plot([x_start, x1], [r.value, r.value], "-", lw=1.6, gid=f"roof:{r.key}", label=label,
                    color=PRECISION_COLOURS.get(r.key.split(":")[0].split("#")[0], "0.3"))
    for lv, p, x, y in ridges(roof_list):
        ax.plot([x], [y], "o", ms=4, mfc="white", mec="0.2", gid=f"ridge:{lv}:{p}", zorder=4)

    # one scatter per level (a million markers stay one artist each), coloured by the kernel's bound
    order = _longest_first(pts)
    bound = _bounds(frame)
    for lv in levels:
        part = pts[pts["level"] == lv]
        if part.empty:
            continue
        colours = [BOUND_COLOURS.get(str(b), BOUND_COLOURS["unavailable"]) for b in bound[part["row"].to_numpy()]]
        ax.scatter(part["intensity_flop_per_byte"], part["achieved_flop_per_s"], c=colours, marker=LEVEL_MARKERS[lv],
                   s=34, edgecolors="black", linewidths=0.4, zorder=5, gid=f"level:{lv}")
    # thin lines join a kernel's levels, for the longest kernels (all of them join into noise past that)
    joined = _joins(pts[pts["row"].isin(order.index[:JOIN_LIMIT])])
    if joined:
        ax.add_collection(LineCollection(joined, colors="0.45", linewidths=0.6, alpha=0.5, gid="joins"))
    drawn = set(bound[pts["row"].unique()])
    drawn_bounds = [b for b in BOUND_COLOURS if b in drawn]
    handles = [Line2D([], [], color=BOUND_COLOURS[b], marker="o", ls="none", markeredgecolor="black",
                      markeredgewidth=0.4, label=b) for b in drawn_bounds]
    drawn_levels = set(pts["level"].unique())  # (an Arrow-backed column read row by row cost more)
    handles += [Line2D([], [], color="0.3", marker=LEVEL_MARKERS[lv], ls="none", label=f"at {LEVEL_LABELS[lv]}")
                for lv in levels if lv in drawn_levels]
    extra = [Line2D([], [], ls="none", label=f"{skipped} kernel(s) without FLOPs or bytes: not drawn")] if skipped else []
    if off_scale:
        extra.append(Line2D([], [], ls="none", label=f"{off_scale} point(s) or roof(s) non-finite or beyond "
                                                     f"1e±{DRAWABLE_EXP}: not drawn"))
    roof_handles, _ = ax.get_legend_handles_labels()
    legend = ax.legend(handles=roof_handles + handles + extra, fontsize=7.5, loc="upper left",
                       bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, framealpha=0.9,
                       title="roofs; colour = bound, shape = memory level", title_fontsize=7.5)
    ax.grid(True, which="major", alpha=0.25)
    top_rows = list(order.index[:label_top])
    top_pts = pts[pts["row"].isin(top_rows)]  # the few points looked up per labelled kernel below
    _pipe_roofs(ax, frame, top_pts, top_rows)
    _label_top(ax, frame, top_pts, top_rows, legend)
    return fig


def _bounds(frame: pd.DataFrame) -> np.ndarray:
    """Each kernel's bound as text, "unavailable" where it has none (objects). A categorical column's categories
    are converted, not its rows (the rows' conversion of an Arrow-backed text copy cost ~2 ms per chart)."""
    if "bound" not in frame:
        return np.full(len(frame), "unavailable", dtype=object)
    col = frame["bound"]
    if isinstance(col.dtype, pd.CategoricalDtype):
        texts = pd.Series(col.cat.categories).astype("string").tolist() + ["unavailable"]
        return np.array(texts, dtype=object)[col.cat.codes.to_numpy()]  # (a missing value's code -1: the last)
    return col.astype("string").fillna("unavailable").to_numpy()


def _longest_first(pts: pd.DataFrame) -> pd.Series:
    """Each kernel's time by its row, longest first (``pts.groupby("row")["duration_s"].first()`` sorted as pandas
    sorts it, ties included): a kernel's points share its time, so its first point's is the one."""
    rows, first = np.unique(pts["row"].to_numpy(), return_index=True)  # (rows ascending, as a groupby's keys)
    dur = pts["duration_s"].iloc[first]
    if dur.isna().any():  # the first time that is not missing, as groupby's first() takes it
        return pts.groupby("row")["duration_s"].first().sort_values(ascending=False)
    return pd.Series(dur.to_numpy(), index=pd.Index(rows, name="row"), name="duration_s").sort_values(ascending=False)


def _joins(pts: pd.DataFrame) -> list[np.ndarray]:
    """Per kernel with points at several levels (in order of first appearance), its points by intensity: the
    polyline joining them. One sort for all (a groupby and a sort per kernel cost ~1 ms each, 500 per chart)."""
    if pts.empty:
        return []
    group = pd.factorize(pts["row"])[0]
    xy = pts[["intensity_flop_per_byte", "achieved_flop_per_s"]].to_numpy()
    order = np.lexsort((xy[:, 0], group))  # by kernel, then intensity; stable, as each kernel's sort of its few points
    xy, group = xy[order], group[order]
    cuts = np.flatnonzero(np.diff(group)) + 1
    return [part for part in np.split(xy, cuts) if len(part) > 1]


def _si_ticks(ax) -> None:  # type: ignore[no-untyped-def]
    """One tick label per decade on both axes, in SI prefixes (10k, 1M, 100T): never 10¹⁶ beside 100T."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    def si(v: float, _pos: int) -> str:
        for scale, p in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m")):
            if v >= scale * 0.999:
                return f"{v / scale:g}{p}"
        return f"{v:g}"

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, numticks=30))
        axis.set_major_formatter(FuncFormatter(si))


#: log axes and matplotlib's tick locator overflow near float's limits (10**309): points and roofs
#: with a value past 1e±250 (or non-finite) are left out of the chart and counted in its legend
DRAWABLE_EXP = 250


def drawable(pts: pd.DataFrame, roof_list: list[Roof]) -> tuple[pd.DataFrame, list[Roof], int]:
    """(points, roofs) that can be drawn on log axes, and how many were left out."""
    lo, hi = 10.0 ** -DRAWABLE_EXP, 10.0 ** DRAWABLE_EXP
    cols = pts[["intensity_flop_per_byte", "achieved_flop_per_s"]]
    if all(dt == np.float64 for dt in cols.dtypes):  # as numbers already (as points() gives them): NaN compares False
        v = cols.to_numpy()
        ok = ((v >= lo) & (v <= hi)).all(axis=1)
    else:
        cols = cols.apply(pd.to_numeric, errors="coerce")
        ok = ((cols >= lo) & (cols <= hi)).all(axis=1).to_numpy()
    kept = [r for r in roof_list if lo <= r.value <= hi]
    return pts[ok], kept, int((~ok).sum()) + len(roof_list) - len(kept)


def _pipe_roofs(ax, frame: pd.DataFrame, pts: pd.DataFrame, rows: list[int]) -> None:  # type: ignore[no-untyped-def]
    """A short horizontal "pipe roof" across each of the longest kernels' points whose binding pipe caps it below
    its FLOP roof (``analysis/pipes.py``): the FLOP/s at which that pipe would be saturated."""
    from roofline.analysis.pipes import pipe_bound

    if "pipe_ceiling_flop_per_s" not in frame:
        return
    bound = pipe_bound(frame)
    ceilings = frame["pipe_ceiling_flop_per_s"].to_numpy()  # (read once: a column read per kernel cost more)
    y0, y1 = ax.get_ylim()
    labelled: list[tuple[str, float]] = []  # (pipe, ceiling): launches of one kernel share a roof and one label
    for row in rows:
        ceiling = float(ceilings[row])
        if not bound[row] or not y0 < ceiling < y1:
            continue
        xs = pts.loc[pts["row"] == row, "intensity_flop_per_byte"]
        lo, hi = float(xs.min()) / 1.6, float(xs.max()) * 1.6
        pipe = str(frame["binding_pipe"].iloc[row]).upper()
        ax.plot([lo, hi], [ceiling, ceiling], ":", color="#b15928", lw=1.3, gid=f"pipe:{row}", zorder=4)
        if any(p == pipe and abs(c - ceiling) <= 0.02 * ceiling for p, c in labelled):
            continue
        labelled.append((pipe, ceiling))
        ax.text(hi, ceiling, f" {pipe} pipe roof", fontsize=6.5, color="#b15928", va="center", parse_math=False,
                gid=f"pipe-label:{row}")


#: the number labels' style (their boxes are measured with it before they are placed)
LABEL_STYLE = {"fontsize": 7.5, "fontweight": "bold", "ha": "center", "va": "center", "parse_math": False}


def _label_top(ax, frame: pd.DataFrame, pts: pd.DataFrame, rows: list[int], legend) -> None:  # type: ignore[no-untyped-def]
    """Number the longest kernels beside their DRAM (else first) point, each number placed where it overlaps
    no other number (positions tried nearest first; a kernel with no free place keeps its key entry), and name
    them in a key under the legend. The axes are fixed before this runs, so what is placed stays apart.

    No draw: the axes' place (AXES_RECT) and limits are set, so a point's pixel is known, and a label's text box
    is its size (measured once per number) moved to the offset tried. Every offset of a label is tested at once
    against the labels placed (the same boxes and the same first free offset as placing an annotation at each
    offset and measuring it, which drew the whole figure twice per chart: ~0.5 s of CPU per chart)."""
    from matplotlib.transforms import IdentityTransform

    from roofline.report.table import _si

    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    axes_box = ax.get_window_extent(renderer)
    scale = fig.dpi / 72  # points to pixels, as an annotation's "offset points" transform scales them
    offsets = np.array(LABEL_OFFSETS, dtype=float) * scale
    taken = np.empty((0, 4))  # placed boxes: x0, y0, x1, y1 (display pixels)
    names = _display_names(frame, rows)
    entries = []
    at_row, at_dram = pts["row"].to_numpy(), (pts["level"] == "dram").to_numpy()
    xs, ys = pts["intensity_flop_per_byte"].to_numpy(), pts["achieved_flop_per_s"].to_numpy()
    times = pts["duration_s"].to_numpy()
    for n, row in enumerate(rows, start=1):
        mine = np.flatnonzero(at_row == row)
        dram = mine[at_dram[mine]]
        at = dram[0] if len(dram) else mine[0]  # its DRAM point, else its first
        x, y = xs[at], ys[at]
        # the text's own box at the origin (an Annotation's extent also covers its arrow back to the point)
        probe = Text(0, 0, str(n), transform=IdentityTransform(), figure=fig, **LABEL_STYLE)
        (bx0, by0), (bx1, by1) = Text.get_window_extent(probe, renderer).get_points()
        px, py = ax.transData.transform((x, y))
        cx, cy = offsets[:, 0] + px, offsets[:, 1] + py
        boxes = np.column_stack([bx0 + cx, by0 + cy, bx1 + cx, by1 + cy])  # Bbox.translated, then .expanded(1.15):
        dw, dh = (1.15 * (boxes[:, 2] - boxes[:, 0]) - (boxes[:, 2] - boxes[:, 0])) / 2, \
            (1.15 * (boxes[:, 3] - boxes[:, 1]) - (boxes[:, 3] - boxes[:, 1])) / 2
        boxes += np.column_stack([-dw, -dh, dw, dh])
        inside = ((boxes[:, 0] >= axes_box.x0) & (boxes[:, 2] <= axes_box.x1)
                  & (boxes[:, 1] >= axes_box.y0) & (boxes[:, 3] <= axes_box.y1)
                  & (boxes[:, 0] <= axes_box.x1) & (boxes[:, 2] >= axes_box.x0)
                  & (boxes[:, 1] <= axes_box.y1) & (boxes[:, 3] >= axes_box.y0))
        # Bbox.overlaps: touching boxes overlap
        clash = ((taken[None, :, 2] >= boxes[:, None, 0]) & (taken[None, :, 0] <= boxes[:, None, 2])
                 & (taken[None, :, 3] >= boxes[:, None, 1]) & (taken[None, :, 1] <= boxes[:, None, 3])).any(axis=1)
        free = np.flatnonzero(inside & ~clash)
        placed = bool(len(free))
        if placed:
            k = int(free[0])
            taken = np.vstack([taken, boxes[k]])
            ax.annotate(str(n), (x, y), xytext=LABEL_OFFSETS[k], textcoords="offset points", gid=f"label:{row}",
                        arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.4", "shrinkA": 0, "shrinkB": 2},
                        annotation_clip=True, **LABEL_STYLE)
        name = names[row]
        name = name if len(name) <= 40 else name[:39] + "…"
        entries.append(f"{n if placed else '·':>2} {_si(float(times[at]), 's'):>8}  {name}")
    if not entries:
        return
    # the key below the legend, in the figure's right margin (the legend's place needs no draw either)
    lb = legend.get_window_extent(renderer).transformed(fig.transFigure.inverted())
    fig.text(lb.x0, lb.y0 - 0.02, "longest kernels (numbered on the chart):\n" + "\n".join(entries), fontsize=6.5,
             va="top", ha="left", family="monospace", gid="key", parse_math=False)


def _display_names(frame: pd.DataFrame, rows: Sequence[int]) -> dict[int, str]:
    """The short names of the kernels at positions ``rows``, falling back to the full name, then to the row
    number (only the rows named: converting every row's name cost more than the rest of the labelling)."""
    rows = list(rows)
    index = frame.index[rows]
    short = frame["kernel_short_name"].iloc[rows] if "kernel_short_name" in frame else pd.Series(pd.NA, index=index)
    full = frame["kernel_name"].iloc[rows] if "kernel_name" in frame else pd.Series(pd.NA, index=index)
    both = short.astype("string").fillna(full.astype("string"))
    return {i: str(v) if not pd.isna(v) else f"kernel {i}" for i, v in zip(rows, both)}


def write(frame: pd.DataFrame, path: str | Path, levels: Sequence[str] = LEVELS, clock: str = "profiled",
          title: str | None = None, note: str | None = None, roof_list: Sequence[Roof] | None = None) -> Path:
    """Write the chart to ``path`` (format from its suffix: .png or .svg); ``roof_list`` as in :func:`draw`."""
    path = Path(path)
    fig = draw(frame, levels, title=title, clock=clock, note=note, roof_list=roof_list)
    fmt = path.suffix.lstrip(".").lower() or "png"
    try:
        if fmt == "png":
            for_png(fig.axes[0])
        fig.savefig(path, format=fmt)
    finally:
        plt.close(fig)
    return path
