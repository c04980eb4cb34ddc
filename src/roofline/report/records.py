"""Roofline records for scripts: JSON (an array, one record per line) or NDJSON, streamed.

Written a chunk of rows at a time with orjson, so that a 20,000-row trace never holds its whole
text (about 100 MB) at once. NaN becomes null and infinities the strings "inf" / "-inf".
"""

from __future__ import annotations

import math
import sys

import pandas as pd


def stream_json(result: pd.DataFrame, ndjson: bool, chunk: int = 2000, header: dict | None = None) -> None:
    """Records written a chunk at a time (orjson), so a 20k-row trace never holds all of its text at
    once: a JSON array with one record per line, or NDJSON (one record per line, no brackets).

    ``header`` (JSON only): the envelope (:mod:`roofline.report.envelope`) the array is the ``rows`` of, written
    first, so a streaming reader meets the headline before any row."""
    import orjson

    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)  # bytes straight out; a text-only stream gets text
    write = buffer.write if buffer is not None else (lambda b: sys.stdout.write(b.decode()))
    first = True
    if not ndjson and header is not None:
        opened = orjson.dumps(header)
        write(opened[:-1] + (b',"rows":' if len(opened) > 2 else b'"rows":'))
    if not ndjson:
        write(b"[")
    for start in range(0, len(result), chunk):
        part = result.iloc[start:start + chunk]
        for rec in part.to_dict("records"):
            line = orjson.dumps({k: jsonable(v) for k, v in rec.items()})
            if ndjson:
                write(line + b"\n")
            else:
                write((b"\n" if first else b",\n") + line)
            first = False
    if not ndjson:
        write(b"\n]}\n" if header is not None else b"\n]\n")
    (buffer or sys.stdout).flush()


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
