"""Typed columns of the Kineto reader's frame, built from its row tuples without a per-cell conversion.

``schema.kernels_from_columns`` converts a column of ``n`` Python values cell by cell (strings to
Arrow, ints through an object array and a missing mask): ~0.11 s for the 20k rows of the V100
trace. Most of those cells repeat: the rows of an op signature share one cost (14 columns), and a
trace usually has one device. Here the distinct values are converted once and expanded with an index
(``pyarrow.Array.take``, NumPy fancy indexing): the same values and dtypes; the cost columns take
~17 ms instead of ~32 ms on that trace, a repeated string column 0.3 ms instead of 1-2 ms.
"""

from __future__ import annotations

from itertools import count
from typing import Any

import numpy as np
import pyarrow as pa

from roofline.schema import kernel_dtypes


def factorized(tuples: tuple[Any, ...], names: tuple[str, ...]) -> dict[str, Any]:
    """Columns ``names`` of row tuples, most of which repeat (an op signature's cost): each distinct tuple's
    values are converted once. (Tuples compare by identity first, so a shared NaN object matches itself.)"""
    first: dict[tuple[Any, ...], int] = {}
    try:
        rows = np.fromiter(map(first.setdefault, tuples, count()), dtype=np.intp, count=len(tuples))
    except TypeError:  # an unhashable value (a damaged trace's list): the plain transposition
        return dict(zip(names, zip(*tuples)))
    # each row's first row with an equal tuple -> that tuple's place among the distinct ones (in first order)
    codes = np.searchsorted(np.fromiter(first.values(), dtype=np.intp, count=len(first)), rows)
    dtypes = kernel_dtypes()
    return {name: expand(values, codes, dtypes[name]) for name, values in zip(names, zip(*first))}


def expand(values: tuple[Any, ...], codes: np.ndarray, dtype: str) -> Any:
    """``[values[c] for c in codes]`` as the column type ``kernels_from_columns`` takes as is."""
    if dtype == "float64":
        return np.array(values, dtype="float64")[codes]  # (None reads as NaN, as in kernels_from_columns)
    if dtype == "string":
        try:
            return pa.array(values, pa.large_string()).take(codes)
        except (pa.ArrowTypeError, pa.ArrowInvalid):  # not all str: the generic conversion decides
            pass
    return [values[c] for c in codes]


def repeated(value: Any, n: int, dtype: str) -> Any:
    """One value for every row, in the column type ``kernels_from_columns`` takes as is."""
    if value is None:
        return None  # all missing
    if (dtype == "string" and value.__class__ is str) or \
            (dtype == "Int64" and value.__class__ is int and -(2**63) <= value < 2**63):
        return value  # a scalar: kernels_from_columns broadcasts it
    return [value] * n  # anything else (a damaged trace's value): converted as any column is


def step_column(steps: list[tuple[float, float, str]], ts: tuple[Any, ...], marks: tuple[Any, ...],
                step: object) -> list[str | None]:
    """The ProfilerStep holding each row's start (the latest-starting step that starts at or before it and
    has not ended), for the rows marked ``step`` (CUPTI range rows are not put in a step): one searchsorted."""
    starts = np.array([s[0] for s in steps], dtype="float64")  # (sorted: steps are sorted tuples)
    ends = np.array([s[1] for s in steps], dtype="float64")
    at = np.array(ts, dtype="float64")
    j = np.searchsorted(starts, at, side="right") - 1
    held = (j >= 0) & (ends[np.maximum(j, 0)] >= at)
    names = [s[2] for s in steps]
    return [names[k] if h and m is step else None for m, k, h in zip(marks, j.tolist(), held.tolist())]
