"""A row-wise fill of a small frame, cached by its distinct rows' exact cells (the roofs stage's, ``attach.py``).

On a 1-kernel report the spec table's fill is pandas' fixed cost per column call (~3-5 ms), the same for every
report of a device at its clock: :func:`small_fill` pays it once a process for each distinct set of rows.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from roofline.frames import column_array

#: cached fills kept at most (the oldest go first)
CACHED = 256
#: a frame of more distinct rows is not cached: a report of many launches has one per launch (each its own clock
#: and counter peaks) and would be a miss every time, holding every cell of its rows (~60 MB at 154 launches)
MOST_DISTINCT = 16


def small_fill(frame: pd.DataFrame, key: Hashable, fill: Callable[[pd.DataFrame], pd.DataFrame],
               inputs: Sequence[str], written: Sequence[str], most_rows: int) -> pd.DataFrame | None:
    """``fill(frame)`` for a frame of up to ``most_rows`` rows, where ``fill`` reads only the ``inputs`` columns,
    writes only (existing) ``written`` ones and fills each row from its own cells alone; ``key`` tells fills
    apart (a policy). None where the frame is larger or a column is not one :func:`exact_cells` keys.

    Rows are distinct by the exact cells of ``inputs`` (floats by their bits), so every row of a group is the
    same input to ``fill`` and gets its representative's values; the frame's other columns, and those the fill
    left as they were, are the caller's. A frame the cache does not hold is filled by ``fill`` itself."""
    if len(frame) > most_rows:
        return None
    cols = {c: column_array(frame, c) for c in inputs if c in frame}
    if any(a is None for a in cols.values()):
        return None
    cells = [exact_cells(a) for a in cols.values()]
    if any(c is None for c in cells):
        return None
    distinct: dict[tuple[Any, ...], int] = {}
    codes = np.fromiter((distinct.setdefault(r, len(distinct)) for r in zip(*cells)), dtype=np.int64,
                        count=len(frame))
    if len(distinct) > MOST_DISTINCT:  # (a report of many launches, each its own clock: never seen again)
        return None
    # the fill's text columns take pandas' string storage: an entry holds the storage it was filled with
    whole = (key, pd.get_option("mode.string_storage"), tuple((c, str(a.dtype)) for c, a in cols.items()),
             tuple(distinct))
    changed = _FILLS.get(whole)
    if changed is None:  # the fill itself, as without the cache; what it changed is kept for the next such frame
        filled = fill(frame)
        firsts = np.unique(codes, return_index=True)[1]
        given = dict(zip(cols, cells))
        kept = {}
        for c in written:
            if c not in cols:
                continue
            values = column_array(filled, c)
            # left as it was: same kind, dtype and exact cells (anything else is kept, which is never wrong)
            if not (type(values) is type(cols[c]) and values.dtype == cols[c].dtype
                    and exact_cells(values) == given[c]):
                kept[c] = values.take(firsts)  # (read, never written: shared by the cache)
        _FILLS[whole] = kept
        evict(_FILLS, CACHED)
        return filled
    if not changed:
        return frame.copy(deep=False)  # (a new frame, as the fill gives: never the caller's own)
    out = frame.copy(deep=False)  # (the columns written are replaced, not written into: the input is untouched)
    for c, values in changed.items():
        out[c] = spread(values, codes, len(distinct) == 1)
    return out


def evict(cache: dict[Any, Any], most: int) -> None:
    """The oldest entries of ``cache`` dropped until it holds ``most``."""
    while len(cache) > most:
        try:
            cache.pop(next(iter(cache)), None)
        except (RuntimeError, StopIteration):  # another thread evicting at the same time
            break


def exact_cells(values: Any) -> list[Any] | None:
    """A column's cells as hashable values equal only where the cells are the same input to a fill: floats
    by their bits (NaN payloads and -0.0 apart), missing strings and integers as None; None for a column of
    another kind (an object column's 1 and 1.0 are equal keys but not the same cell)."""
    if isinstance(values, pd.arrays.ArrowStringArray):
        return values.__arrow_array__().to_pylist()
    if isinstance(values, pd.arrays.IntegerArray):
        return values.to_numpy(dtype=object, na_value=None).tolist()
    arr = values.to_numpy() if isinstance(values, pd.arrays.NumpyExtensionArray) else values
    if isinstance(arr, np.ndarray) and arr.dtype == np.float64:
        return arr.view(np.int64).tolist()
    return None


def spread(values: Any, codes: np.ndarray, one: bool) -> Any:
    """``values.take(codes)``, with NumPy or Arrow where the column is theirs (``one``: every code is 0)."""
    if values.dtype == "float64":
        v = values if isinstance(values, np.ndarray) else values.to_numpy(dtype="float64", na_value=np.nan)
        return np.full(len(codes), v[0]) if one else v[codes]
    if type(values) is pd.arrays.ArrowStringArray:
        arrow = values.__arrow_array__().combine_chunks()
        if one:
            return pd.arrays.ArrowStringArray(pa.repeat(arrow[0], len(codes)))
        return pd.arrays.ArrowStringArray(arrow.take(codes))
    return values.take(codes)


#: :func:`small_fill`'s columns changed on distinct rows, by the fill's key, the columns' dtypes and the rows' cells
_FILLS: dict[Any, dict[str, Any]] = {}
