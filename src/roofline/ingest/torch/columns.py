"""Typed columns of the Kineto reader's frame, built from its row tuples without a per-cell conversion.

``schema.kernels_from_columns`` converts a column of ``n`` Python values cell by cell (strings to
Arrow, ints through an object array and a missing mask). Most of the reader's cells repeat: the rows
of an op signature share one cost tuple (14 columns), a trace usually has one device, a few
ProfilerSteps. Here the distinct values are
converted once and expanded with an index (``pyarrow.Array.take``, NumPy fancy indexing), and launch
dimensions go to NumPy in one pass: the same values and dtypes as the cell-by-cell conversion, which
stays the fallback for anything a damaged trace may hold. On the V100 trace (20,540 rows) the frame
takes 55-64 ms instead of 77-82 ms (process time, medians of 21 alternating runs on a shared 2-core
machine); what is left is mostly reading scattered Python objects once per column (launch dims
~15 ms, names) and the DataFrame's copies (~6 ms).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import count, repeat
from operator import is_
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from roofline.schema import COLUMN_POOL, kernel_dtypes

NONE3 = (None, None, None)


def first_codes(values: Sequence[Any], key: Callable[[Any], Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(codes, firsts): each value's index among the distinct values (numbered by first appearance) and
    the position of each distinct value's first appearance. Distinct by ``key`` (``id``: by identity),
    else by value (a dict's equality; raises TypeError on an unhashable value)."""
    if key is id:  # object addresses are int64s: NumPy's and pandas' hash table, not a dict of Python ints
        codes, _ = pd.factorize(np.fromiter(map(id, values), dtype=np.int64, count=len(values)))
        # codes are numbered by first appearance: a code's first row is where the running maximum rises
        return codes, np.flatnonzero(np.diff(np.maximum.accumulate(codes), prepend=-1) > 0)
    first: dict[Any, int] = {}
    keys = values if key is None else map(key, values)
    rows = np.fromiter(map(first.setdefault, keys, count()), dtype=np.intp, count=len(values))
    # each row's first row with an equal key -> that key's place among the distinct ones (firsts are sorted)
    firsts = np.fromiter(first.values(), dtype=np.intp, count=len(first))
    return np.searchsorted(firsts, rows), firsts


def factorized(tuples: Sequence[tuple[Any, ...]], names: tuple[str, ...]) -> dict[str, Any]:
    """Columns ``names`` of row tuples, most of which are the same object (an op signature's cost):
    each distinct tuple's values are converted once."""
    codes, firsts = first_codes(tuples, id)  # by identity: no hashing of 14 values per row
    return expanded([tuples[i] for i in firsts], codes, names)


def expanded(distinct: Sequence[tuple[Any, ...]], codes: np.ndarray, names: tuple[str, ...]) -> dict[str, Any]:
    """Columns ``names`` of the rows ``distinct[c] for c in codes``."""
    dtypes = kernel_dtypes()
    return {name: expand(values, codes, dtypes[name]) for name, values in zip(names, zip(*distinct))}


def expand(values: Sequence[Any], codes: np.ndarray, dtype: str) -> Any:
    """``[values[c] for c in codes]`` as the column type ``kernels_from_columns`` takes as is."""
    if dtype == "float64":
        return np.array(values, dtype="float64")[codes]  # (None reads as NaN, as in kernels_from_columns)
    if dtype == "string":
        try:
            return pc.take(pa.array(values, pa.large_string(), memory_pool=COLUMN_POOL), codes, memory_pool=COLUMN_POOL)
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


def dim3(v: Any) -> Any:
    """A launch's grid or block: three integers, or None for anything else a damaged trace may hold."""
    if v.__class__ is list and len(v) == 3 and v[0].__class__ is int and v[1].__class__ is int \
            and v[2].__class__ is int:
        return v
    return None


def dim3_columns(values: Sequence[Any], names: tuple[str, str, str]) -> dict[str, Any]:
    """The x, y, z columns of launches' grids (or blocks) as recorded: ``dim3`` of each value, missing where
    that is None. The whole column is checked and parsed at once (``_dim3_ints``); anything else takes
    the per-row path."""
    n = len(values)
    found = _dim3_ints(values, n)
    if found is not None:
        xyz, missing = found
        return {c: pd.arrays.IntegerArray(xyz[:, i].copy(), missing.copy()) for i, c in enumerate(names)}
    checked = [d if d is not None else NONE3 for d in map(dim3, values)]
    return dict(zip(names, zip(*checked))) if n else dict.fromkeys(names, ())


_INT64_MAX = np.iinfo(np.int64).max


def _dim3_ints(values: Sequence[Any], n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """((n, 3) int64, missing) when every value is None or a list of three ints in int64 (what ``dim3``
    keeps), else None. The column is read once, by one JSON encoding (C), and the text checked and
    parsed by NumPy: no per-row Python, and one pass over the scattered list objects, which is what
    costs. Why the checks suffice: every value is None or a list (the types); the text holds only ints,
    brackets, commas and ``null`` (a float has '.' or 'e', a bool letters, a str quotes, a dict braces);
    lists nest no deeper than the column's (depth <= 2); each element starts with '[' or 'n' (no bare
    int); the only nulls are the None elements (NaN and None inside a list also encode as null); each
    list holds two commas, so three ints; an int beyond int64 parses as int64's max, which is sent to
    the per-row path."""
    try:
        text = msgspec.json.encode(values)
    except (TypeError, OverflowError, msgspec.EncodeError):
        return None
    if not set(map(type, values)) <= {list, type(None)}:  # (after the encoding: the lists are in cache)
        return None
    if text.translate(None, b"0123456789-,[]nul") or n == 0:
        return (np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=bool)) if n == 0 else None
    b = np.frombuffer(text, dtype=np.uint8)
    depth = np.cumsum(b == ord("["), dtype=np.int32)
    depth -= np.cumsum(b == ord("]"), dtype=np.int32)  # (1 between the column's elements, 2 inside a list)
    if depth.max() > 2:
        return None
    commas = b == ord(",")
    between = np.flatnonzero(commas & (depth == 1))
    if len(between) != n - 1:
        return None
    starts = np.concatenate(([1], between + 1))  # each element's first byte
    first = b[starts]
    missing = first == ord("n")
    if not (missing | (first == ord("["))).all() or text.count(b"null") != int(missing.sum()):
        return None
    inner = np.cumsum(commas & (depth == 2))
    ends = np.concatenate((between, [len(b) - 1]))  # the byte after each element
    if ((inner[ends] - inner[starts])[~missing] != 2).any():
        return None
    try:
        ints = np.fromstring(text.replace(b"null", b"0,0,0").translate(None, b"[]"), dtype=np.int64, sep=",")
    except ValueError:  # (not expected after the checks above: the per-row path decides)
        return None
    if len(ints) != 3 * n or ints.max() == _INT64_MAX:
        return None
    return ints.reshape(n, 3), missing


def step_column(steps: list[tuple[float, float, str]], ts: Sequence[Any], marks: Sequence[Any],
                step: object) -> Any:
    """The ProfilerStep holding each row's start (the latest-starting step that starts at or before it and
    has not ended), for the rows marked ``step`` (CUPTI range rows are not put in a step): one searchsorted,
    and the few step names expanded by index."""
    starts = np.array([s[0] for s in steps], dtype="float64")  # (sorted: steps are sorted tuples)
    ends = np.array([s[1] for s in steps], dtype="float64")
    at = np.array(ts, dtype="float64")
    j = np.searchsorted(starts, at, side="right") - 1
    held = (j >= 0) & (ends[np.maximum(j, 0)] >= at)
    if marks.count(step) != len(marks):  # (all rows are marked unless the trace has CUPTI range rows)
        held &= np.fromiter(map(is_, marks, repeat(step)), dtype=bool, count=len(marks))
    names = [s[2] for s in steps]
    return expand([*names, None], np.where(held, j, len(names)), "string")
