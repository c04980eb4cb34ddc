"""Small frame utilities shared by the stages."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd


def distinct_rows(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """(codes, firsts): each row's index into the frame's distinct rows over ``columns``, and the position
    of each distinct row's first occurrence (in order of first appearance); missing values are equal to
    each other. None when a column holds unhashable values (lists, dicts in a damaged trace)."""
    parts = []
    for col in columns:
        try:
            codes, _ = pd.factorize(frame[col], use_na_sentinel=True)
        except TypeError:
            return None
        parts.append(codes + 1)  # (missing -> 0, its own value)
    return group_ids(parts, len(frame))


def group_ids(parts: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense group ids of rows by the tuple of ``parts`` (numbered by first appearance), and the
    first row of each group."""
    key: np.ndarray | None = None
    span = 1
    for p in parts:
        p = np.asarray(p)
        top = int(p.max()) if n else 0
        if top <= 0:  # an all-zero part (a condition no row meets) does not split any group (keys are >= 0)
            continue
        m = top + 1
        if key is None:
            key = p.astype(np.int64)  # a copy: parts are never written
            span = m
            continue
        if span * m >= 2**62:  # re-densify before the packed key could overflow
            key, uniq = pd.factorize(key)
            key = key.astype(np.int64)
            span = len(uniq)
        key *= m  # in place: no new million-row temporaries per part
        key += p
        span *= m
    if key is None:
        key = np.zeros(n, dtype=np.int64)
    rows = np.arange(n, dtype=np.int64)
    if span <= 1 << 18:
        # few possible keys: a table indexed by key (2 MB at most, cache-resident) instead of a hash
        # table; twice as fast as pd.factorize on a million rows (a larger table is slower: cache misses)
        first_of = np.full(span, n, dtype=np.int64)
        # the reversed scatter leaves each key's first row (the last write wins)
        first_of[key[::-1]] = rows[::-1]
        seen = np.flatnonzero(first_of < n)
        seen = seen[np.argsort(first_of[seen], kind="stable")]  # numbered by first appearance
        number = np.empty(span, dtype=np.int64)
        number[seen] = np.arange(len(seen), dtype=np.int64)
        return number[key], first_of[seen]
    ids, uniq = pd.factorize(key)
    first = np.empty(len(uniq), dtype=np.int64)
    # the reversed scatter leaves each group's first row (factorize numbers groups by first sight)
    first[ids[::-1]] = rows[::-1]
    return ids.astype(np.int64), first


def column_array(frame: pd.DataFrame, name: str) -> Any | None:
    """The array (numpy or pandas extension array) of the column ``name``, taken without a Series (~2 µs against
    ~25 for a column read: a fixed cost per column on small frames); None where the column is absent or its name
    not unique, or pandas has no such access. Read it, never write into it: it is the frame's own."""
    get = getattr(frame, "_get_column_array", None)
    if get is None or name not in frame:
        return None
    at = frame.columns.get_loc(name)
    return get(at) if isinstance(at, int) else None


def row_dicts(frame: pd.DataFrame) -> Iterator[dict[str, Any]]:
    """Each row as {column: value}, the values as ``iterrows`` gives them (taken from the one object array
    ``.values`` makes) without building a Series per row: ~70 µs a row, a dataset's groups number thousands."""
    names = list(frame.columns)
    return (dict(zip(names, values)) for values in frame.values)
