"""What ``roofline.analyze`` returns in a notebook: the roofline frame, displayed compactly.

:class:`RooflineResult` is a ``pandas.DataFrame`` (every column, every row, indexed and sliced as before: it
*is* today's frame); only its own display differs. Jupyter (``_repr_html_``) and ``repr`` show the headline in
a line and the longest rows in at most 12 formatted columns (:func:`compact`), where the full frame's 100+
columns would hide time, FLOPs and intensity behind "…". Frames derived from it (a slice, ``head()``, a
copy) are plain DataFrames, displayed in full; ``result.frame`` is the plain frame too.

The methods are the API's functions on the result: ``summary()`` (the headline per profile, device and step),
``by_category()``, ``headlines()``, ``compact()``; ``roofline.plot(result)`` draws it (``DataFrame.plot`` stays
pandas' own).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pandas as pd

#: rows a compact display shows (the longest)
SHOW = 20


def _si(v: Any, unit: str) -> str:
    from roofline.report.table import _si as si

    try:
        f = float(v)
    except (TypeError, ValueError):
        return "n/a"
    return si(f, unit) if not math.isnan(f) else "n/a"


def _number(v: Any, fmt: str) -> str:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "n/a"
    return format(f, fmt) if math.isfinite(f) else "n/a"


def compact(frame: pd.DataFrame, top: int | None = SHOW) -> pd.DataFrame:
    """The ``top`` longest rows (all with None) in at most 12 formatted columns, longest first: kernel,
    device (when several), category, time, % time, FLOP, bytes (DRAM), intensity (DRAM), achieved, roof,
    bound, % of roof. Idle rows (XLA's IDLE) are time, not kernels: they are in the headline, not here. The
    index is the frame's, so a row is found again with ``frame.loc[i]``."""
    from roofline.analysis.categories import IDLE, categorize
    from roofline.report.table import display_names

    if frame.empty:
        return pd.DataFrame(columns=["kernel", "time", "% time", "FLOP", "bytes", "intensity", "achieved", "roof",
                                     "bound", "% of roof"])
    dur = pd.to_numeric(frame["duration_s"], errors="coerce") if "duration_s" in frame \
        else pd.Series(np.nan, index=frame.index)
    total = float(dur.clip(lower=0).sum())
    cats = categorize(frame)
    order = dur[(cats != IDLE).to_numpy()].sort_values(ascending=False, na_position="last", kind="stable").index
    rows = frame.loc[order[:top] if top else order]
    names = display_names(rows)[0] if "kernel_short_name" in rows else \
        rows.get("kernel_name", pd.Series("", index=rows.index)).astype("string").fillna("").tolist()
    out = pd.DataFrame({"kernel": names}, index=rows.index)
    if "device_name" in frame and frame["device_name"].nunique() > 1:
        out["device"] = rows["device_name"].astype("string").fillna("n/a")
    out["category"] = cats.loc[rows.index]

    def col(name: str) -> pd.Series:
        return rows[name] if name in rows else pd.Series(np.nan, index=rows.index)

    out["time"] = [_si(v, "s") for v in col("duration_s")]
    out["% time"] = [_number(100 * v / total, ".1f") if total > 0 else "n/a" for v in col("duration_s")]
    out["FLOP"] = [_si(v, "FLOP") for v in col("flop_total")]
    out["bytes"] = [_si(v, "B") for v in col("dram_bytes")]
    out["intensity"] = [_number(v, ".3g") for v in col("intensity_dram_flop_per_byte")]
    out["achieved"] = [_si(v, "FLOP/s") for v in col("achieved_flop_per_s")]
    out["roof"] = col("binding_roof").astype("string").fillna("n/a")
    out["bound"] = col("bound").astype("string").fillna("n/a")
    out["% of roof"] = [_number(v, ".1f") for v in col("pct_of_roof")]
    return out


def headline_line(frame: pd.DataFrame) -> str:
    """One line: GPU time, the share with a roofline point, the biggest kinds, MFU."""
    from roofline.analysis.headline import headlines
    from roofline.report.summary import pct, scope_title

    items = headlines(frame, by_step=False)
    if not items:
        return "no rows"
    h = items[0]
    kinds = sorted(((k, v) for k, v in h.shares.items() if v > 0), key=lambda kv: -kv[1])[:3]
    text = (f"{scope_title(h)}: GPU time {_si(h.gpu_time_s, 's')}, {pct(h.coverage)} with a roofline point; "
            + ", ".join(f"{k} {pct(v)}" for k, v in kinds))
    if h.compute_peak:
        text += f"; MFU {pct(h.mfu)} of the {h.compute_peak.key} peak"
    return text


class RooflineResult(pd.DataFrame):
    """The roofline frame (one row per kernel or op, every column), displayed compactly. See the module doc."""

    _metadata: ClassVar[list[str]] = []

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame  # derived frames are plain: only the result itself is displayed compactly

    @property
    def frame(self) -> pd.DataFrame:
        """The plain DataFrame (every column), provenance included."""
        out = pd.DataFrame(self)
        out.attrs.update(self.attrs)
        return out

    def compact(self, top: int | None = SHOW) -> pd.DataFrame:
        return compact(self, top)

    def summary(self) -> pd.DataFrame:
        """The headline per profile, device and step as a frame (GPU time, coverage, time by kind, MFU, MBU)."""
        from roofline.analysis.views import view

        return view(self, "summary")

    def headlines(self, by_step: bool = True) -> list[Any]:
        """The headlines as objects (:class:`roofline.analysis.headline.Headline`: reasons with their fixes)."""
        from roofline.analysis.headline import headlines

        return headlines(self, by_step)

    def by_category(self) -> pd.DataFrame:
        """Time per op category (GEMM, attention, …), longest first, the shares adding up to 100%."""
        from roofline.analysis.views import view

        return view(self, "category")

    def findings(self) -> pd.DataFrame:
        """Nsight Compute's own rule results (guided analysis), one row per launch and result, ranked across the
        profile by estimated time saved (speedup × the launch's time): ``roofline.findings``."""
        from roofline.analysis.pipes import findings

        return findings(self)

    def _footer(self, shown: int) -> str:
        return (f"{shown} of {len(self):,} rows, longest first; {len(self.columns)} columns in "
                "result.frame; result.summary(), result.by_category(), roofline.plot(result)")

    def __repr__(self) -> str:
        table = compact(self)
        return "\n".join([headline_line(self), table.to_string(index=False), self._footer(len(table))])

    def _repr_html_(self) -> str:
        table = compact(self)
        return (f"<p>{html.escape(headline_line(self))}</p>" + table.to_html(escape=True, index=False)
                + f"<p><small>{html.escape(self._footer(len(table)))}</small></p>")


def as_result(frame: pd.DataFrame) -> RooflineResult:
    """``frame`` as a :class:`RooflineResult` (its provenance kept)."""
    out = RooflineResult(frame)
    out.attrs.update(frame.attrs)
    return out


def plot(result: pd.DataFrame, device: str | None = None, levels: Sequence[str] | None = None,
         title: str | None = None) -> Any:
    """The kernel roofline chart of the HTML report as a plotly Figure, for one device (default: the one with
    the most drawable time): its roofs (the result's, ``chart_data.roofs``) and one point per kernel and level."""
    from roofline.report.figure import figure

    frame = result.frame if isinstance(getattr(result, "frame", None), pd.DataFrame) else result
    return figure(frame, title, levels=levels, device=device)


__all__ = ["RooflineResult", "as_result", "compact", "headline_line", "plot"]
