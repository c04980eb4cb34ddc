"""Issue 36: ``--format json``/``ndjson`` records are converted a column at a time (``report/records.py``) instead of
``to_dict("records")`` and a ``jsonable`` call per cell. The bytes must be those of the per-cell path for every
dtype a roofline frame holds (float NaN/±inf, Int64 and boolean with NA, Arrow and Python strings, categoricals),
for the ones it may hold (object cells of any kind, categories that are not text), across chunk boundaries, and through the CLI's safe
stream (which escapes C1 and bidi controls in JSON bytes, now after a quicker look for them)."""

from __future__ import annotations

import io
import math
import random
import sys

import numpy as np
import orjson
import pandas as pd
import pytest

from roofline.cli.safe import _UNSAFE_JSON, SafeText, _may_be_unsafe
from roofline.report.envelope import records
from roofline.report.records import jsonable, stream_json


def _per_cell(frame: pd.DataFrame, ndjson: bool, header: dict | None = None) -> bytes:
    """The writer before issue 36's pass: to_dict, then jsonable per value, orjson per record."""
    out = []
    if not ndjson and header is not None:
        opened = orjson.dumps(header)
        out.append(opened[:-1] + b',"rows":')
    if not ndjson:
        out.append(b"[")
    for i, rec in enumerate(frame.to_dict("records")):
        line = orjson.dumps({k: jsonable(v) for k, v in rec.items()})
        out.append(line + b"\n" if ndjson else (b"\n" if i == 0 else b",\n") + line)
    if not ndjson:
        out.append(b"\n]}\n" if header is not None else b"\n]\n")
    return b"".join(out)


def _streamed(frame: pd.DataFrame, ndjson: bool, chunk: int, header: dict | None = None,
              monkeypatch: pytest.MonkeyPatch | None = None) -> bytes:
    raw = io.BytesIO()
    text = io.TextIOWrapper(raw, encoding="utf-8")
    assert monkeypatch is not None
    monkeypatch.setattr(sys, "stdout", text)
    stream_json(frame, ndjson=ndjson, chunk=chunk, header=header)
    text.flush()
    return raw.getvalue()


def _every_dtype() -> pd.DataFrame:
    n = 11
    floats = np.array([0.1, np.nan, np.inf, -np.inf, 1e300, -0.0, 5e-324, 1 / 3, 2.5, 123456789.123, 7.0])
    return pd.DataFrame({
        "row_key": pd.Series([f"k{i}" for i in range(n)], dtype="str"),
        "f64": floats,
        "f32": np.where(np.abs(floats) > 1e30, -np.inf, floats).astype(np.float32),
        "i64": np.arange(n, dtype=np.int64) - 5,
        "u64": np.arange(n, dtype=np.uint64) * (2 ** 60),
        "flag": np.arange(n) % 2 == 0,
        "Int64": pd.array([1, None, -3, 2 ** 62, None, 0, 5, None, 7, 8, 9], dtype="Int64"),
        "boolean": pd.array([True, None, False] + [None, True] * 4, dtype="boolean"),
        "Float64": pd.array([0.1, None, np.inf, -np.inf, 2.0, None, 1e-7, 3.0, None, 4.5, 6.25], dtype="Float64"),
        "arrow": pd.Series(["é", None, "日本", "a\x1bb", "\u0085c1", "\u202eabc", "x" * 300, "", "q\"uote", "\\",
                            "🚀"], dtype="string[pyarrow]"),
        "python": pd.Series(["p", None] * 5 + ["z"], dtype="string[python]"),
        "str": pd.Series(["s", None, "t"] * 3 + ["u", "v"], dtype="str"),
        "cat": pd.Categorical(["memory", "compute", None, "latency", "memory", None, "é", "compute", "x", "y", "z"]),
        "cat_int": pd.Categorical([1, 2, None, 3, 1, 2, 3, None, 1, 2, 3]),
        "obj": pd.Series(["a", None, np.nan, np.float64(2.5), np.int64(4), math.inf, pd.NA, True, 3, [1, "b"],
                          {"k": None}], dtype=object),
        "dup": np.arange(n, dtype=float),
    })


@pytest.mark.parametrize("ndjson", [False, True])
@pytest.mark.parametrize("chunk", [1, 3, 4096])
def test_column_records_write_the_bytes_of_the_per_cell_path_for_every_dtype(ndjson, chunk, monkeypatch):
    frame = _every_dtype()
    header = None if ndjson else {"schema": "roofline.output", "note": "ü", "n": float("nan")}
    assert _streamed(frame, ndjson, chunk, header, monkeypatch) == _per_cell(frame, ndjson, header)


def test_a_repeated_column_name_keeps_its_first_place_and_last_value_as_to_dict_does(monkeypatch):
    frame = pd.DataFrame([[1.0, "a", 2.0], [np.nan, None, np.inf]], columns=["x", "y", "x"])
    got = _streamed(frame, True, 4096, None, monkeypatch)
    assert got == _per_cell(frame, True)
    assert got.splitlines()[0] == b'{"x":2.0,"y":"a"}'


def test_empty_frames_and_frames_without_columns_write_what_the_per_cell_path_wrote(monkeypatch):
    for frame in (pd.DataFrame({"a": pd.Series([], dtype=float)}), pd.DataFrame(index=range(3))):
        for ndjson in (False, True):
            assert _streamed(frame, ndjson, 2, None, monkeypatch) == _per_cell(frame, ndjson)


def test_mcp_records_are_the_per_cell_values():
    frame = _every_dtype()
    want = [{k: jsonable(v) for k, v in rec.items()} for rec in frame.to_dict("records")]
    got = records(frame)
    assert orjson.dumps(got) == orjson.dumps(want)
    assert got[1]["f64"] is None and got[2]["f64"] == "inf" and got[1]["Int64"] is None
    assert type(got[0]["Int64"]) is int and type(got[0]["f32"]) is float and type(got[0]["flag"]) is bool


def test_the_quick_look_agrees_with_the_escape_pattern_on_every_placement():
    rng = random.Random(36)
    pieces = [b"\xc2", b"\xe2", b"\x1b", b"\x80", b"\x81", b"\x9f", b"\xa0", b"\xa6", b"\xa8", b"\xa9", b"\xae",
              b"\xaf", b"a", b"\xc3"]
    pad = b"x" * 5000
    for _ in range(3000):
        s = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))
        for data in (s, pad + s, s + pad, pad + s + pad):
            assert _may_be_unsafe(data) == (_UNSAFE_JSON.search(data) is not None), data[:8] + data[-8:]


def test_large_json_writes_through_the_safe_stream_still_escape_c1_and_bidi_controls():
    raw = io.BytesIO()
    safe = SafeText(io.TextIOWrapper(raw, encoding="utf-8"))
    body = orjson.dumps({"name": "x" * 10_000 + "\u0085\u202e—±"})
    safe.buffer.write(body)
    out = raw.getvalue()
    assert b"\\u0085\\u202e" in out and "—±".encode() in out and b"\xc2\x85" not in out
    safe.buffer.write(b"y" * 10_000)  # nothing to escape: written as it is
    assert raw.getvalue().endswith(b"y" * 10_000)


@pytest.mark.parametrize("ndjson", [False, True])
def test_records_escaped_piece_by_piece_equal_the_whole_text_escaped_by_the_safe_stream(ndjson, monkeypatch):
    """Through the CLI's stdout the records' pieces are escaped before they are joined (the whole text is not
    searched again): every path (column pieces, a categorical's, other objects', repeated names' dicts) must
    give what escaping the whole per-cell text gives."""
    from roofline.cli.safe import _UNSAFE_JSON, _json_escape

    bad = ["ok", "c1\u0085", "\u202eflip", None, "esc\x1b[2J", "nel\u2028x", "—±µ×"]
    frame = pd.DataFrame({"name\u0085": bad, "n": range(7), "cat": pd.Categorical(bad),
                          "obj": pd.Series([["\u009b"], "a", None, 1.5, {"k": "\u2066"}, "b", "c"], dtype=object)})
    repeated = pd.DataFrame([["\u0085", 1], ["x", 2]], columns=["k", "k"])
    for f in (repeated, frame):
        raw = io.BytesIO()
        monkeypatch.setattr(sys, "stdout", SafeText(io.TextIOWrapper(raw, encoding="utf-8")))
        stream_json(f, ndjson=ndjson, chunk=3, header=None if ndjson else {"h": "\u0085"})
        sys.stdout.flush()
        want = _UNSAFE_JSON.sub(_json_escape, _per_cell(f, ndjson, None if ndjson else {"h": "\u0085"}))
        assert raw.getvalue() == want
        assert b"\xc2\x85" not in raw.getvalue()
    assert b"\\u0085" in want and b"\\u202e" in want and b"\\u009b" in want  # (the mixed frame's text was escaped)
