"""Summary views of a roofline frame that are frames themselves: what ``--by category``, ``--by summary`` and
``--by collective``
write with ``--out`` and print, and what the API's ``by_category()`` / ``summary()`` return."""

from __future__ import annotations

import pandas as pd

from roofline.analysis.categories import by_category
from roofline.analysis.comm import by_collective
from roofline.analysis.headline import headline_frame, headlines

VIEWS = ("category", "summary", "collective")


def view(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    """``category``: one row per op category (:func:`~roofline.analysis.categories.by_category`); ``summary``:
    one row per profile, device and step (:func:`~roofline.analysis.headline.headline_frame`); ``collective``: one
    row per collective identity (:func:`~roofline.analysis.comm.by_collective`, docs/collectives.md)."""
    if by == "category":
        return by_category(frame)
    if by == "collective":
        return by_collective(frame)
    if by == "summary":
        return headline_frame(headlines(frame))
    raise ValueError(f"by must be one of {', '.join(VIEWS)}; got {by!r}")


def table_rows(frame: pd.DataFrame, *, by: str | None, levels: tuple[str, ...], latency_threshold_pct: float,
               name: str | None = None, nvtx: str | None = None, bound: str | None = None,
               precision: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``analyze``'s rows (before ``--top``) and the kernels they come from (the headline's scope): name and NVTX
    filters pick kernels before any grouping; bound and precision pick kernels for a view, rows otherwise.
    The CLI and the MCP tools (``roofline.agent``) both take their rows from here. Raises ValueError on a bad
    pattern or grouping."""
    from roofline.analysis.aggregate import aggregate
    from roofline.analysis.select import select

    result = select(frame, name=name, nvtx=nvtx)
    kernels_view = select(result, bound=bound, precision=precision)
    if by in VIEWS:  # views of the selected kernels, not roofline points
        return view(kernels_view, by), kernels_view
    if by:
        result = aggregate(result, by=by, levels=levels, latency_threshold_pct=latency_threshold_pct)
    return select(result, bound=bound, precision=precision), kernels_view


__all__ = ["VIEWS", "table_rows", "view"]
