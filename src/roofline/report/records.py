"""Roofline records for scripts: JSON (an array, one record per line) or NDJSON, streamed.

Written a chunk of rows at a time with orjson, so that a 20,000-row trace never holds its whole
text (about 100 MB) at once. NaN becomes null and infinities the strings "inf" / "-inf".

A chunk is converted a column at a time, never a cell at a time (a 500-input dataset is 9 million cells): each
column's distinct values are serialised once (:func:`json_cells`) and a record's text is its columns' pieces
joined (:func:`record_text`). The values are exactly those of ``DataFrame.to_dict("records")`` then
:func:`jsonable` (:func:`column_values`), so the bytes are those of ``orjson.dumps`` of each record's dict.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
from pandas.core.dtypes.cast import maybe_box_native  # what to_dict boxes values with

#: rows per chunk: large enough that the per-column calls are amortised, small enough that a chunk's text (7 KB a
#: row in the dataset of 500 inputs) and the column pieces it is joined from stay under a hundred megabytes (500
#: inputs: 8,192 rows took 0.1 s less CPU than 4,096 and 70 MB more memory, 2,048 0.15 s more and 40 MB less)
CHUNK = 4096


def stream_json(result: pd.DataFrame, ndjson: bool, chunk: int = CHUNK, header: dict | None = None) -> None:
    """Records written a chunk at a time (orjson), so a 20k-row trace never holds all of its text at
    once: a JSON array with one record per line, or NDJSON (one record per line, no brackets).

    ``header`` (JSON only): the envelope (:mod:`roofline.report.envelope`) the array is the ``rows`` of, written
    first, so a streaming reader meets the headline before any row."""
    import orjson

    from roofline.cli.safe import escape_json, write_all

    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)  # bytes straight out; a text-only stream gets text
    # the CLI's stdout escapes C1 and bidi controls in what it is given: the records' pieces are escaped instead,
    # before they are joined, so that their whole text is not searched again
    escaped = getattr(buffer, "write_escaped", None)

    def write(b: bytes | memoryview) -> None:
        if buffer is not None:
            write_all(buffer, b)
        else:
            write_all(sys.stdout, bytes(b).decode())

    opened = b""
    if not ndjson and header is not None:
        head = orjson.dumps(header)
        opened = head[:-1] + (b',"rows":' if len(head) > 2 else b'"rows":')
    if not ndjson:
        opened += b"["
    if opened:
        write(opened)
    for text in record_text(result, ndjson, chunk, escape_json if escaped is not None else None):
        if escaped is not None:
            escaped(text)
        else:
            write(text)
    if not ndjson:
        write(b"\n]}\n" if header is not None else b"\n]\n")
    (buffer or sys.stdout).flush()


def record_text(frame: pd.DataFrame, ndjson: bool, chunk: int = CHUNK,
                escape: Callable[[bytes], bytes] | None = None) -> Iterator[bytes | memoryview]:
    """The records' text, ``chunk`` rows at a time: one line per record, NDJSON's each ended by a newline, JSON's
    each begun by one (and after the first by a comma), as ``orjson.dumps`` of each record's dict writes them.
    ``escape``: applied to every piece of JSON (a key, a value, a record), each whole UTF-8 characters."""
    import orjson

    esc = escape or (lambda b: b)

    keys = frame.columns.tolist()
    if not keys or not frame.columns.is_unique or any(type(k) is not str for k in keys):
        # (a dict keeps a repeated name once, and orjson refuses keys that are not text: as the dicts do)
        lead = b"\n"
        for part in record_chunks(frame, chunk):
            text = bytearray()
            for rec in part:
                text += esc(orjson.dumps(rec)) + b"\n" if ndjson else lead + esc(orjson.dumps(rec))
                lead = b",\n"
            yield bytes(text)
        return
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = [json_cells(frame.iloc[:, i], escape) for i in range(len(keys))]
    names = [esc(orjson.dumps(k)) + b":" for k in keys]
    # a record is piece 0, cell 0, piece 1, cell 1, ..., the closing piece: '{"a":' 1 ',"b":' 2 '}', joined row by
    # row by Arrow; a cell the same in every row of the chunk joins the pieces around it. Each JSON record is
    # begun by ",\n" (the first's comma is dropped below)
    pieces = [(b"{" if ndjson else b",\n{") + names[0], *(b"," + n for n in names[1:])]
    closing = b"}\n" if ndjson else b"}"
    for start in range(0, len(frame), chunk):
        stop = min(start + chunk, len(frame))
        parts: list[Any] = []
        same = b""
        for piece, cell in zip(pieces, cells):
            got = cell(start, stop)
            if isinstance(got, bytes):
                same += piece + got
            else:
                parts += [pa.scalar(same + piece, pa.large_binary()), got]
                same = b""
        same += closing
        if parts:
            lines = pc.binary_join_element_wise(*parts, pa.scalar(same, pa.large_binary()),
                                                pa.scalar(b"", pa.large_binary()))
            _, offsets, data = lines.buffers()
            ends = np.frombuffer(offsets, dtype=np.int64)[[lines.offset, lines.offset + len(lines)]]
            text: bytes | memoryview = memoryview(data)[ends[0]:ends[1]]  # the lines, back to back
        else:
            text = same * (stop - start)
        yield text[1:] if not ndjson and start == 0 else text


def json_cells(column: pd.Series, escape: Callable[[bytes], bytes] | None = None) -> Callable[[int, int], Any]:
    """A function of (start, stop) giving that slice of ``column`` as each cell's JSON text, as orjson writes the
    :func:`column_values` value (an Arrow binary array, or one ``bytes`` where every cell is the same): the
    slice's distinct values serialised once each (``escape``: then passed through it), then taken by code. Floats
    are told apart by their bits, so 0.0 and -0.0 stay apart."""
    dtype = column.dtype

    def _by_code(codes: np.ndarray, uniques: Any, plain: Callable[[Any], list[Any]]) -> Any:
        return _taken(_serialised(plain(uniques), escape), codes)
    if isinstance(dtype, np.dtype) and dtype.kind in "fiub":
        values = column.to_numpy()
        if dtype.kind == "f":
            bits = values.view(f"i{values.itemsize}")
            return lambda a, b: _by_code(*pd.factorize(bits[a:b]), lambda u: _floats(u.view(values.dtype)))
        return lambda a, b: _by_code(*pd.factorize(values[a:b]), lambda u: u.tolist())
    array = column.array
    if isinstance(array, pd.arrays.FloatingArray):
        def floats(a: int, b: int) -> Any:
            bits = array[a:b].to_numpy(dtype="float64", na_value=np.nan).view("i8")
            return _by_code(*pd.factorize(bits), lambda u: _floats(u.view("f8")))
        return floats
    if isinstance(array, pd.arrays.IntegerArray | pd.arrays.BooleanArray):
        return lambda a, b: _by_code(*pd.factorize(array[a:b]), _masked)
    if isinstance(dtype, pd.StringDtype):
        return lambda a, b: _by_code(*pd.factorize(array[a:b]), lambda u: u.tolist())
    if isinstance(dtype, pd.CategoricalDtype) and all(type(c) is str for c in dtype.categories.tolist()):
        lookup = _serialised(dtype.categories.tolist(), escape)
        codes = np.asarray(array.codes)
        return lambda a, b: _taken(lookup, codes[a:b])
    import pyarrow as pa

    values_of = column_values(column)
    return lambda a, b: pa.array(_serialised(values_of(a, b), escape)[:-1], pa.large_binary())


def _serialised(values: list[Any], escape: Callable[[bytes], bytes] | None) -> list[bytes]:
    """Each value's JSON text, then ``null`` (for code -1); passed through ``escape`` where it changes any."""
    import orjson

    out = [*map(orjson.dumps, values), b"null"]
    if escape is not None:
        joined = b"".join(out)  # (one search; an escaped sequence never spans two values)
        if escape(joined) != joined:
            out = [escape(x) for x in out]
    return out


def _taken(lookup: list[bytes], codes: np.ndarray) -> Any:
    """The text of each code (-1, missing: the last, null): one ``bytes`` where every code is the same, else an
    Arrow binary array."""
    import pyarrow as pa

    if not len(codes):
        return pa.array([], pa.large_binary())
    first = codes[0]
    if (codes == first).all():
        return lookup[first]
    return pa.array(lookup, pa.large_binary()).take(np.where(codes < 0, len(lookup) - 1, codes))


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
