"""Summary views of a roofline frame that are frames themselves: what ``--by category`` and ``--by summary``
write with ``--out`` and print, and what the API's ``by_category()`` / ``summary()`` return."""

from __future__ import annotations

import pandas as pd

from roofline.analysis.categories import by_category
from roofline.analysis.headline import headline_frame, headlines

VIEWS = ("category", "summary")


def view(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    """``category``: one row per op category (:func:`~roofline.analysis.categories.by_category`); ``summary``:
    one row per profile, device and step (:func:`~roofline.analysis.headline.headline_frame`)."""
    if by == "category":
        return by_category(frame)
    if by == "summary":
        return headline_frame(headlines(frame))
    raise ValueError(f"by must be one of {', '.join(VIEWS)}; got {by!r}")


__all__ = ["VIEWS", "view"]
