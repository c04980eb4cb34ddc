"""Small frame utilities shared by the stages."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def distinct_rows(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """(codes, firsts): each row's index into the frame's distinct rows over ``columns``, and the position
    of each distinct row's first occurrence (in order of first appearance); missing values are equal to
    each other. None when a column holds unhashable values (lists, dicts in a damaged trace)."""
    n = len(frame)
    combined = np.zeros(n, dtype=np.int64)
    for col in columns:
        try:
            codes, uniques = pd.factorize(frame[col], use_na_sentinel=True)
        except TypeError:
            return None
        # (missing -> its own code; the pair re-factorized at once, so the combined codes stay < n)
        combined, _ = pd.factorize(combined * (len(uniques) + 1) + (codes + 1))
        combined = combined.astype(np.int64, copy=False)
    _, firsts, codes = np.unique(combined, return_index=True, return_inverse=True)
    order = np.argsort(firsts, kind="stable")  # distinct rows in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[codes.reshape(-1)], firsts[order]
