"""Stage 4: what people read and look at: terminal tables, PNG/SVG charts, the HTML report."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from roofline.hardware.peaks import LEVELS

if TYPE_CHECKING:
    from roofline.analysis.headline import RowFacts
    from roofline.report.chart_data import Roof

#: file names stop at 255 bytes: a longer device name is cut and told apart by a hash of the whole
SLUG_MAX = 60


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "device"
    if len(slug) <= SLUG_MAX:
        return slug
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return f"{slug[:SLUG_MAX - 11].rstrip('-')}-{digest}"


def chart_devices(result: pd.DataFrame) -> tuple[list[tuple[str, pd.DataFrame]], list[tuple[str, pd.DataFrame]]]:
    """(devices with something to draw, most drawable time first; devices with nothing drawable): each with its
    rows. A device whose kernels all lack FLOPs or bytes gets no chart (an empty chart says nothing); the
    table and the page say why (:func:`undrawable_reasons`)."""
    drawn, undrawn = _device_masks(result)
    return [(d, result[m]) for d, m in drawn], [(d, result[m]) for d, m in undrawn]


def _device_masks(result: pd.DataFrame) -> tuple[list[tuple[str, np.ndarray]], list[tuple[str, np.ndarray]]]:
    """:func:`chart_devices` as row masks: a caller slices only the devices it uses (all the columns of each)."""
    from roofline.report.chart_data import device_order

    if result.empty:
        return [], []
    dev = result["device_name"].astype("string").fillna("unknown device") if "device_name" in result \
        else pd.Series("unknown device", index=result.index, dtype="string")
    g = device_order(result)
    groups = [(str(d), (dev == d).to_numpy()) for d in g.index]
    drawn = set(g.index[g["drawn"] > 0])
    return [x for x in groups if x[0] in drawn], [x for x in groups if x[0] not in drawn]


def undrawable_reasons(result: pd.DataFrame) -> list[str]:
    """One line per device with nothing drawable: why (the first reason its rows have no roofline point)."""
    from roofline.analysis.coverage import has_point
    from roofline.analysis.headline import narrow, reasons

    out = []
    undrawn = _device_masks(result)[1]
    slim = narrow(result) if undrawn else result  # (what a reason reads: ~45 of ~140 columns taken per device)
    for device, mask in undrawn:
        rows = slim[mask]
        gpu = float(pd.to_numeric(rows["duration_s"], errors="coerce").clip(lower=0).sum())
        why = reasons(rows[~has_point(rows).to_numpy()], gpu)
        if why:
            text = f"{why[0].reason}" + (f" (fix: {why[0].fix})" if why[0].fix else "")
        else:  # points, but none with FLOPs above 0: nothing sits on a log FLOP/s axis
            text = "its kernels have no FLOPs (copies and data movement): no point on a FLOP/s axis"
        out.append(f"no chart for {device}: nothing drawable ({len(rows):,} row(s)): {text}")
    return out


def _chart_jobs(result: pd.DataFrame, out: Path, levels: Sequence[str], clock: str,
                svg: bool) -> tuple[list[Callable[[], object]], list[Path]]:
    """The device charts :func:`write_charts` draws: a job per file (largest first) and the files in their
    order (the jobs take their rows and draw: the independent part, shared among processes). The plan reads
    only the columns of the charts; no device's rows are held until its job runs (only their positions)."""
    from roofline.report import png
    from roofline.report.chart_data import MAX_ROOF_SETS, plottable, roof_sets, roof_view

    view = png.chart_view(result, levels)  # what the jobs read (column selections: no copy of the rows)
    roof_columns = roof_view(result, levels)  # what the plan reads
    paths: list[Path] = []
    sized: list[tuple[int, Callable[[], object]]] = []
    stems: set[str] = set()
    for i, (device, rows) in enumerate(_device_masks(result)[0]):
        stem = "roofline" if i == 0 else f"roofline-{_slug(device)}"
        if stem in stems:  # two devices whose names differ only in case or punctuation
            stem = f"{stem}-{i}"
        stems.add(stem)
        at = np.flatnonzero(rows)
        frame = roof_columns.take(at)
        sets = roof_sets(frame, levels)
        rest = sum(st.kernels for st in sets[MAX_ROOF_SETS:])
        more = (f"; {rest} kernel(s) under {len(sets) - MAX_ROOF_SETS} further roof set(s) have no chart: see the table"
                if rest else "")
        drawable = plottable(frame).to_numpy()  # row by row: a set's rows are drawable where the device's are
        # a set whose kernels have no point (no FLOPs) gets no chart of its own
        charted = [st for st in sets[:MAX_ROOF_SETS] if drawable[st.mask].any()]
        for st in charted:
            name = stem if st.index == 0 else f"{stem}-set{st.index + 1}"
            # the set's roofs go with its rows: the job draws them without computing the device's sets again
            job = partial(_write_set, view, at if len(sets) == 1 else at[st.mask], levels, clock,
                          png.set_note(st, len(frame), more), st.roofs)
            for suffix in (".png", ".svg") if svg else (".png",):
                paths.append(out / f"{name}{suffix}")
                sized.append((st.kernels, partial(job, paths[-1])))
    order = sorted(range(len(sized)), key=lambda k: -sized[k][0])  # stable: the largest charts are taken first
    return [sized[k][1] for k in order], paths


def _write_set(view: pd.DataFrame, at: np.ndarray, levels: Sequence[str], clock: str, note: str | None,
               roof_list: Sequence[Roof], path: Path) -> Path:
    """One chart: the rows at positions ``at`` of ``view`` (:func:`png.chart_view`: no roof's columns, as the
    roofs are given): a device's, or one roof set of them, whose roofs are ``roof_list``."""
    from roofline.report import png

    return png.write(view.take(at), path, levels, clock=clock, note=note, roof_list=roof_list)


def _comm_charts(result: pd.DataFrame, out: Path, clock: str, svg: bool) -> list[Path]:
    from roofline.report import comm_chart, png

    written = []
    if comm_chart.has_collectives(result):  # the collectives on their links (docs/collectives.md)
        for suffix in (".png", ".svg") if svg else (".png",):
            drawn = comm_chart.write(result, out / f"communication{suffix}", png.title_for(result, clock))
            if drawn is not None:
                written.append(drawn)
    return written


def write_charts(result: pd.DataFrame, out_dir: str | Path, levels: Sequence[str] = LEVELS, clock: str = "profiled",
                 svg: bool = False, workers: int | None = None) -> list[Path]:
    """``roofline.png`` for the device with the most drawable kernel time, ``roofline-<device>.png`` for the
    other devices with something to draw (none for a device with nothing drawable: :func:`undrawable_reasons`
    says why); a device whose kernels used different roof sets (clock, source) gets one chart per set
    (``…-set2.png``, up to ``MAX_ROOF_SETS``), each drawing only the roofs its kernels used. The charts are
    drawn by up to ``workers`` processes at once (default: one per CPU; :mod:`roofline.report.forked`)."""
    from roofline.report.forked import run_shared

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs, paths = _chart_jobs(result, out, levels, clock, svg)
    return paths + run_shared(jobs, partial(_comm_charts, result, out, clock, svg), workers)


def write_report(result: pd.DataFrame, out_dir: str | Path, levels: Sequence[str] = LEVELS, clock: str = "profiled",
                 svg: bool = False, top: int = 10, workers: int | None = None,
                 also: Callable[[], object] | None = None,
                 longest_first: pd.DataFrame | Callable[[], pd.DataFrame] | None = None,
                 facts: RowFacts | Callable[[], RowFacts | None] | None = None) -> list[Path]:
    """The charts and ``report.html`` in ``out_dir``; returns the files written. The page is rendered while
    other processes draw the charts (``workers`` as in :func:`write_charts`); ``also``: further work of this
    process done then, after the page (the command line's table), its result dropped. ``longest_first``: the
    same rows sorted longest first (``analysis.select.select(result)``), where the caller has them: the page
    reads them instead of a sorted copy of its own; ``facts``: the
    :func:`~roofline.analysis.headline.row_facts` of the rows the page reads, where the caller has them. Each
    may be given as a function that gives it, called once the charts' processes are started (work done before
    they start delays the charts: the critical path)."""
    from roofline.report import html
    from roofline.report.forked import run_shared

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    jobs, paths = _chart_jobs(result, out, levels, clock, svg)

    def rest() -> list[Path]:
        page = longest_first() if callable(longest_first) else longest_first
        written = [*_comm_charts(result, out, clock, svg),
                   html.write(result if page is None else page, out / "report.html", levels,
                              clock=clock, top=top, facts=facts() if callable(facts) else facts)]
        if also is not None:
            also()
        return written
    return paths + run_shared(jobs, rest, workers)


__all__ = ["chart_devices", "undrawable_reasons", "write_charts", "write_report"]
