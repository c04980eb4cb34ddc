"""The hierarchical roofline as a static chart (matplotlib, Agg): PNG, or SVG on request.

Log-log axes in FLOP/byte and FLOP/s; a sloped roof per memory level and a flat roof per precision
the kernels used, each labelled with its value and source; ridge points marked; one marker per
kernel and level (a colour per kernel, a shape per level, joined by a thin line as in NERSC's
hierarchical charts); the longest kernels labelled without overlap, with a dotted "pipe roof" across a
kernel's points where its busiest SM pipe caps it below the FLOP roof (``analysis/pipes.py``).

Every artist carries a ``gid`` (``roof:dram``, ``roof:fp32``, ``ridge:dram:fp32``, ``level:dram``
for the kernels' markers at a level, in the order of ``chart_data.points``, ``pipe:<row>``) so tests read the drawn
coordinates back and compare them with the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on clusters; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from roofline.hardware.peaks import LEVELS  # noqa: E402
from roofline.report.chart_data import (  # noqa: E402
    LEVEL_LABELS,
    Roof,
    RoofSet,
    axis_limits,
    points,
    ridges,
    roof_sets,
    unplotted_count,
)

LEVEL_MARKERS = {"dram": "o", "l2": "s", "l1": "^", "lds": "D"}
LEVEL_STYLES = {"dram": "-", "l2": "--", "l1": ":", "lds": "-."}
JOIN_LIMIT = 500
PRECISION_COLOURS = {"fp64": "#6a3d9a", "fp32": "#1f78b4", "fp16": "#33a02c", "tensor": "#e31a1c"}


def title_for(frame: pd.DataFrame, clock: str = "profiled") -> str:
    devices = sorted(set(frame["device_name"].dropna().astype(str))) if "device_name" in frame else []
    files = sorted({Path(str(f)).name for f in frame["source_file"].dropna()}) if "source_file" in frame else []
    profile = files[0] if len(files) == 1 else f"{len(files)} profiles"
    return f"{', '.join(devices) or 'unknown device'} · clock: {clock} · {profile}"


def set_note(st: RoofSet, total: int, more: str = "") -> str | None:
    """The visible note of a chart that shows one of several roof sets of a device."""
    if st.count <= 1:
        return None
    return (f"roof set {st.index + 1} of {st.count}: {st.kernels} of {total} kernel(s) were measured against "
            f"these roofs; the others ran at another clock or took their roofs from another source{more}")


def draw(frame: pd.DataFrame, levels: Sequence[str] = LEVELS, title: str | None = None, label_top: int = 8,
         clock: str = "profiled", note: str | None = None) -> Figure:
    """The roofline figure of one device's roofline frame.

    Only roofs the drawn kernels' % of roof used are drawn: where the kernels fall into several roof
    sets (clock, source), this draws the set with the most kernel time and says so in a note
    (:func:`roofline.report.write_charts` writes one chart per set).
    """
    sets = roof_sets(frame, levels)
    if len(sets) > 1:
        note = note or set_note(sets[0], len(frame), "; they are not drawn here")
        frame = frame[sets[0].mask]
    roof_list = sets[0].roofs
    fig = plt.figure(figsize=(10, 6.5), dpi=110)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("performance (FLOP/s)")
    ax.set_title(title or title_for(frame, clock), fontsize=10, parse_math=False)  # names may hold "$"
    if note:
        fig.text(0.01, 0.005, note, fontsize=7, color="#a00", gid="note", parse_math=False, wrap=True)
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
    top_compute = max((r.value for r in roof_list if r.kind == "compute"), default=y1)
    for r in roof_list:
        if r.kind == "bandwidth":
            x_end = top_compute / r.value
            ax.plot([x0, x_end], [r.value * x0, top_compute], LEVEL_STYLES[r.key], color="0.25", lw=1.4,
                    gid=f"roof:{r.key}", label=r.label)
        else:
            x_start = min((r.value / b.value for b in roof_list if b.kind == "bandwidth"), default=x0)
            ax.plot([x_start, x1], [r.value, r.value], "-", color=PRECISION_COLOURS.get(r.key, "0.3"), lw=1.6,
                    gid=f"roof:{r.key}", label=r.label)
    for lv, p, x, y in ridges(roof_list):
        ax.plot([x], [y], "o", ms=4, mfc="white", mec="0.2", gid=f"ridge:{lv}:{p}", zorder=4)

    # one scatter per level (a million markers stay one artist each), colour by kernel rank in time
    order = pts.groupby("row")["duration_s"].first().sort_values(ascending=False)
    rank = pd.Series(range(len(order)), index=order.index)
    cmap = plt.get_cmap("tab10")
    for lv in levels:
        part = pts[pts["level"] == lv]
        if part.empty:
            continue
        colours = cmap(rank.loc[part["row"]].to_numpy() % 10)
        ax.scatter(part["intensity_flop_per_byte"], part["achieved_flop_per_s"], c=colours, marker=LEVEL_MARKERS[lv],
                   s=34, edgecolors="black", linewidths=0.4, zorder=5, gid=f"level:{lv}")
    # thin lines join a kernel's levels, for the longest kernels (all of them join into noise past that)
    joined = [grp.sort_values("intensity_flop_per_byte")[["intensity_flop_per_byte", "achieved_flop_per_s"]].to_numpy()
              for row, grp in pts[pts["row"].isin(order.index[:JOIN_LIMIT])].groupby("row", sort=False) if len(grp) > 1]
    if joined:
        colours = [cmap(rank[row] % 10) for row in pts[pts["row"].isin(order.index[:JOIN_LIMIT])]
                   .groupby("row", sort=False).size().index if (pts["row"] == row).sum() > 1]
        ax.add_collection(LineCollection(joined, colors=colours, linewidths=0.6, alpha=0.6, gid="joins"))
    _pipe_roofs(ax, frame, pts, list(order.index[:label_top]))
    _label_top(ax, frame, pts, list(order.index[:label_top]))
    handles = [Line2D([], [], color="0.3", marker=LEVEL_MARKERS[lv], ls="none", label=f"kernel at {LEVEL_LABELS[lv]}")
               for lv in levels if lv in set(pts["level"])]
    extra = [Line2D([], [], ls="none", label=f"{skipped} kernel(s) without FLOPs or bytes: not drawn")] if skipped else []
    if off_scale:
        extra.append(Line2D([], [], ls="none", label=f"{off_scale} point(s) or roof(s) non-finite or beyond "
                                                     f"1e±{DRAWABLE_EXP}: not drawn"))
    roof_handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=roof_handles + handles + extra, fontsize=7.5, loc="lower right", framealpha=0.9)
    ax.grid(True, which="major", alpha=0.25)
    fig.tight_layout()
    return fig


#: log axes and matplotlib's tick locator overflow near float's limits (10**309): points and roofs
#: with a value past 1e±250 (or non-finite) are left out of the chart and counted in its legend
DRAWABLE_EXP = 250


def drawable(pts: pd.DataFrame, roof_list: list[Roof]) -> tuple[pd.DataFrame, list[Roof], int]:
    """(points, roofs) that can be drawn on log axes, and how many were left out."""
    lo, hi = 10.0 ** -DRAWABLE_EXP, 10.0 ** DRAWABLE_EXP
    cols = pts[["intensity_flop_per_byte", "achieved_flop_per_s"]].apply(pd.to_numeric, errors="coerce")
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
    y0, y1 = ax.get_ylim()
    for row in rows:
        ceiling = float(frame["pipe_ceiling_flop_per_s"].iloc[row])
        if not bound[row] or not y0 < ceiling < y1:
            continue
        xs = pts.loc[pts["row"] == row, "intensity_flop_per_byte"]
        lo, hi = float(xs.min()) / 1.6, float(xs.max()) * 1.6
        pipe = str(frame["binding_pipe"].iloc[row]).upper()
        ax.plot([lo, hi], [ceiling, ceiling], ":", color="#b15928", lw=1.3, gid=f"pipe:{row}", zorder=4)
        ax.text(hi, ceiling, f" {pipe} pipe roof", fontsize=6.5, color="#b15928", va="center", parse_math=False,
                gid=f"pipe-label:{row}")


def _label_top(ax, frame: pd.DataFrame, pts: pd.DataFrame, rows: list[int]) -> None:  # type: ignore[no-untyped-def]
    """Name the longest kernels next to their DRAM (else first) point, moving labels apart."""
    fig = ax.figure
    fig.canvas.draw()
    taken = []
    names = _display_names(frame)
    for row in rows:
        grp = pts[pts["row"] == row]
        pt = grp[grp["level"] == "dram"].iloc[0] if (grp["level"] == "dram").any() else grp.iloc[0]
        name = names[row]
        name = name if len(name) <= 32 else name[:31] + "…"
        x, y = pt["intensity_flop_per_byte"], pt["achieved_flop_per_s"]
        dy = 8
        for _ in range(12):
            ann = ax.annotate(name, (x, y), xytext=(8, dy), textcoords="offset points", fontsize=7, parse_math=False,
                              arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.4"}, gid=f"label:{row}")
            # the text's own box: an Annotation's extent also covers its arrow back to the point
            box = Text.get_window_extent(ann, fig.canvas.get_renderer()).expanded(1.05, 1.15)
            if not any(box.overlaps(t) for t in taken):
                taken.append(box)
                break
            ann.remove()
            dy = -dy if dy > 0 else -dy + 12  # alternate above and below, further out each time
        else:
            continue


def _display_names(frame: pd.DataFrame) -> list[str]:
    """Short names, falling back to the full name, then to the row number."""
    short = frame["kernel_short_name"] if "kernel_short_name" in frame else pd.Series(pd.NA, index=frame.index)
    full = frame["kernel_name"] if "kernel_name" in frame else pd.Series(pd.NA, index=frame.index)
    both = short.astype("string").fillna(full.astype("string"))
    return [str(v) if not pd.isna(v) else f"kernel {i}" for i, v in enumerate(both)]


def write(frame: pd.DataFrame, path: str | Path, levels: Sequence[str] = LEVELS, clock: str = "profiled",
          title: str | None = None, note: str | None = None) -> Path:
    """Write the chart to ``path`` (format from its suffix: .png or .svg)."""
    path = Path(path)
    fig = draw(frame, levels, title=title, clock=clock, note=note)
    try:
        fig.savefig(path, format=path.suffix.lstrip(".").lower() or "png")
    finally:
        plt.close(fig)
    return path
