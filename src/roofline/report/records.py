"""Roofline records for scripts: JSON (an array, one record per line) or NDJSON, streamed.

Written a chunk of rows at a time with orjson, so that a 20,000-row trace never holds its whole
text (about 100 MB) at once. NaN becomes null and infinities the strings "inf" / "-inf".

Each chunk is converted a column at a time (:func:`column_values`): one vectorised pass per column
instead of one ``jsonable`` call per cell, the values exactly those of ``DataFrame.to_dict("records")``
then :func:`jsonable` (the bytes are the same; a 500-input dataset is 9 million cells).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
from pandas.core.dtypes.cast import maybe_box_native  # what to_dict boxes values with

#: rows per chunk: large enough that the per-column work is amortised, small enough that a chunk's objects and
#: text (about 10 KB a row at most) stay in the tens of megabytes
CHUNK = 4096


def stream_json(result: pd.DataFrame, ndjson: bool, chunk: int = CHUNK, header: dict | None = None) -> None:
    """Records written a chunk at a time (orjson), so a 20k-row trace never holds all of its text at
    once: a JSON array with one record per line, or NDJSON (one record per line, no brackets).

    ``header`` (JSON only): the envelope (:mod:`roofline.report.envelope`) the array is the ``rows`` of, written
    first, so a streaming reader meets the headline before any row."""
    import orjson

    from roofline.cli.safe import write_all

    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)  # bytes straight out; a text-only stream gets text

    def write(b: bytes) -> None:
        if buffer is not None:
            write_all(buffer, b)
        else:
            write_all(sys.stdout, b.decode())

    opened = b""
    if not ndjson and header is not None:
        head = orjson.dumps(header)
        opened = head[:-1] + (b',"rows":' if len(head) > 2 else b'"rows":')
    if not ndjson:
        opened += b"["
    if opened:
        write(opened)
    lead = b"\n"  # before each JSON record: a newline, after the first a comma too
    for part in record_chunks(result, chunk):
        # each record's bytes are copied out at once: orjson's result for a 7 KB record holds a 64 KB buffer,
        # so a chunk's records kept as bytes objects took nine times their text
        text = bytearray()
        for rec in part:
            if ndjson:
                text += orjson.dumps(rec)
                text += b"\n"
            else:
                text += lead
                text += orjson.dumps(rec)
                lead = b",\n"
        write(text)
    if not ndjson:
        write(b"\n]}\n" if header is not None else b"\n]\n")
    (buffer or sys.stdout).flush()


def record_chunks(frame: pd.DataFrame, chunk: int = CHUNK) -> Iterator[list[dict[str, Any]]]:
    """The rows of ``frame`` as JSON-ready dicts (NaN and NA as None, infinities as "inf"/"-inf", NumPy scalars
    as Python ones), ``chunk`` rows at a time: ``[{k: jsonable(v) ...} for ... in frame.to_dict("records")]``."""
    keys = frame.columns.tolist()
    columns = [column_values(frame.iloc[:, i]) for i in range(len(keys))]
    if not columns:  # rows without columns: empty records, as to_dict gives
        for start in range(0, len(frame), chunk):
            yield [{} for _ in range(start, min(start + chunk, len(frame)))]
        return
    for start in range(0, len(frame), chunk):
        stop = min(start + chunk, len(frame))
        # dict(zip(...)): a repeated column name keeps its first place and its last value, as to_dict does
        yield [dict(zip(keys, row)) for row in zip(*(c(start, stop) for c in columns))]


def column_values(column: pd.Series) -> Callable[[int, int], list[Any]]:
    """A function of (start, stop) giving that slice of ``column`` as JSON-ready values: what
    ``DataFrame.to_dict("records")`` and :func:`jsonable` make of each, taken a column at a time."""
    dtype = column.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "fiubO":
        values = column.to_numpy()
        if dtype.kind == "f":
            return lambda a, b: _floats(values[a:b])
        if dtype.kind == "O":  # text (the common case) as it is; anything else boxed as to_dict boxes it
            return lambda a, b: [v if type(v) is str or v is None else jsonable(maybe_box_native(v))
                                 for v in values[a:b].tolist()]
        return lambda a, b: values[a:b].tolist()  # Python ints and bools
    array = column.array
    if isinstance(array, pd.arrays.FloatingArray):
        return lambda a, b: _floats(array[a:b].to_numpy(dtype="float64", na_value=np.nan))
    if isinstance(array, pd.arrays.IntegerArray | pd.arrays.BooleanArray):
        return lambda a, b: _masked(array[a:b])
    if isinstance(dtype, pd.StringDtype):
        return lambda a, b: array[a:b].to_numpy(dtype=object, na_value=None).tolist()
    if isinstance(dtype, pd.CategoricalDtype) and all(type(c) is str for c in dtype.categories.tolist()):
        lookup = np.array([*dtype.categories.tolist(), None], dtype=object)  # code -1 (missing): the last, None
        codes = np.asarray(array.codes)
        return lambda a, b: lookup[codes[a:b]].tolist()
    # anything else (dates, other categories) as to_dict takes it: Series iteration, extension values boxed
    boxed = isinstance(dtype, pd.api.extensions.ExtensionDtype) or dtype == np.dtype(object)
    return lambda a, b: [jsonable(maybe_box_native(v) if boxed else v) for v in column.iloc[a:b]]


def _floats(x: np.ndarray) -> list[Any]:
    out = x.astype(object)  # Python floats, as Series iteration gives
    nan = np.isnan(x)
    if nan.any():
        out[nan] = None
    inf = np.isinf(x)
    if inf.any():
        out[inf & (x > 0)] = "inf"
        out[inf & (x < 0)] = "-inf"
    return out.tolist()


def _masked(array: Any) -> list[Any]:
    """An Int64 or boolean slice: Python ints or bools, None where missing."""
    mask = np.asarray(array.isna())
    out = array.to_numpy(dtype=array.dtype.numpy_dtype, na_value=array.dtype.numpy_dtype.type(0)).astype(object)
    if mask.any():
        out[mask] = None
    return out.tolist()


def jsonable(v: object) -> object:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    if hasattr(v, "item"):
        return v.item()  # numpy scalars
    return v
