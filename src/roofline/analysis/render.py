"""Per-row text (notes, sources) for a million rows without a Python loop per row.

Text in a roofline frame depends on a few flags and on source strings that repeat across kernels.
Rows are grouped by everything a text depends on (small integer keys), each group's text is
rendered once from a representative row, and the column is a Categorical of the results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa


class Factor:
    """A string column as integer codes (-1 for missing) and its distinct values."""

    def __init__(self, frame: pd.DataFrame, column: str) -> None:
        if column in frame:
            codes, uniques = pd.factorize(frame[column], use_na_sentinel=True)
            self.codes = np.asarray(codes, dtype=np.int64)
            self.values = [str(u) for u in uniques]
        else:
            self.codes = np.full(len(frame), -1, dtype=np.int64)
            self.values = []

    def key(self) -> np.ndarray:
        """Codes shifted to be non-negative (0 = missing), usable as a group key."""
        return self.codes + 1

    def text(self, row: int, missing: str = "") -> str:
        c = int(self.codes[row])
        return self.values[c] if c >= 0 else missing


def group_ids(parts: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense group ids of rows by the tuple of ``parts``, and the first row of each group."""
    key = np.zeros(n, dtype=np.int64)
    span = 1
    for p in parts:
        p = np.asarray(p, dtype=np.int64)
        m = int(p.max()) + 1 if n else 1
        if span * m >= 2**62:  # re-densify before the packed key could overflow
            key, uniq = pd.factorize(key)
            key = key.astype(np.int64)
            span = len(uniq)
        key = key * m + p
        span *= m
    ids, uniq = pd.factorize(key)
    first = np.empty(len(uniq), dtype=np.int64)
    # the reversed scatter leaves each group's first row (factorize numbers groups by first sight)
    first[ids[::-1]] = np.arange(n, dtype=np.int64)[::-1]
    return ids.astype(np.int64), first


def render(parts: Sequence[np.ndarray], n: int, fn: Callable[[int], str | None]) -> pd.Categorical:
    """A Categorical whose value for each row is ``fn(first row of its group)`` (None = missing)."""
    if n == 0:
        return pd.Categorical([], categories=[])
    ids, first = group_ids(parts, n)
    texts = [fn(int(r)) for r in first]
    categories: list[str] = []
    index: dict[str, int] = {}
    remap = np.empty(len(texts), dtype=np.int64)
    for g, t in enumerate(texts):
        if t is None:
            remap[g] = -1
            continue
        if t not in index:
            index[t] = len(categories)
            categories.append(t)
        remap[g] = index[t]
    return pd.Categorical.from_codes(remap[ids], categories=categories)


def fixed(codes: np.ndarray, categories: Sequence[str]) -> pd.Categorical:
    """A Categorical from codes into a fixed, known list of values."""
    return pd.Categorical.from_codes(np.asarray(codes, dtype=np.int64), categories=list(categories))


def as_string(cat: pd.Categorical, index: pd.Index) -> pd.Series:
    """A Categorical as a ``string`` Series, decoded by Arrow (pandas' own astype goes through Python objects)."""
    # pandas' default string dtype is Arrow large_string
    return pd.Series(pd.arrays.ArrowStringArray(pa.array(cat).cast(pa.large_string())), index=index)
