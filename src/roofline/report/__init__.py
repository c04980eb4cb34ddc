"""Stage 4: what people read and look at: terminal tables, PNG/SVG charts, the HTML report."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from roofline.hardware.peaks import LEVELS

#: file names stop at 255 bytes: a longer device name is cut and told apart by a hash of the whole
SLUG_MAX = 60


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "device"
    if len(slug) <= SLUG_MAX:
        return slug
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return f"{slug[:SLUG_MAX - 11].rstrip('-')}-{digest}"


def write_charts(result: pd.DataFrame, out_dir: str | Path, levels: Sequence[str] = LEVELS, clock: str = "profiled",
                 svg: bool = False) -> list[Path]:
    """``roofline.png`` for the device with the most kernel time, ``roofline-<device>.png`` for others;
    a device whose kernels used different roof sets (clock, source) gets one chart per set
    (``…-set2.png``, up to ``MAX_ROOF_SETS``), each drawing only the roofs its kernels used."""
    from roofline.report import png
    from roofline.report.chart_data import MAX_ROOF_SETS, plottable, roof_sets

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if result.empty or "device_name" not in result:
        groups = [("", result)]
    else:
        dev = result["device_name"].astype("string").fillna("unknown device")
        order = result.groupby(dev)["duration_s"].sum().sort_values(ascending=False).index
        groups = [(str(d), result[(dev == d).to_numpy()]) for d in order]
    written = []
    stems: set[str] = set()
    for i, (device, frame) in enumerate(groups):
        stem = "roofline" if i == 0 else f"roofline-{_slug(device)}"
        if stem in stems:  # two devices whose names differ only in case or punctuation
            stem = f"{stem}-{i}"
        stems.add(stem)
        sets = roof_sets(frame, levels)
        rest = sum(st.kernels for st in sets[MAX_ROOF_SETS:])
        more = (f"; {rest} kernel(s) under {len(sets) - MAX_ROOF_SETS} further roof set(s) have no chart: see the table"
                if rest else "")
        # a set whose kernels have no point (no FLOPs) gets no chart of its own, unless it is the only one
        charted = [st for st in sets[:MAX_ROOF_SETS] if plottable(frame[st.mask]).any()] or sets[:1]
        for st in charted:
            part = frame[st.mask] if len(sets) > 1 else frame
            name = stem if st.index == 0 else f"{stem}-set{st.index + 1}"
            for suffix in (".png", ".svg") if svg else (".png",):
                written.append(png.write(part, out / f"{name}{suffix}", levels, clock=clock,
                                         note=png.set_note(st, len(frame), more)))
    return written


def write_report(result: pd.DataFrame, out_dir: str | Path, levels: Sequence[str] = LEVELS, clock: str = "profiled",
                 svg: bool = False, top: int = 10) -> list[Path]:
    """The charts and ``report.html`` in ``out_dir``; returns the files written."""
    from roofline.report import html

    written = write_charts(result, out_dir, levels, clock, svg)
    written.append(html.write(result, Path(out_dir) / "report.html", levels, clock=clock, top=top))
    return written


__all__ = ["write_charts", "write_report"]
