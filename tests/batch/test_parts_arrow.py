"""A part's rows as Arrow: a small frame's columns converted together give the tables the per-column
conversion gives (large frames convert column by column)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from roofline.batch import parts

SCHEMA = pa.schema([("file_id", pa.string()), ("row", pa.int64()), ("x", pa.float64()), ("name", pa.string()),
                    ("bound", pa.string()), ("empty_cat", pa.string()), ("n", pa.int64()), ("flag", pa.bool_()),
                    ("absent", pa.float64()), ("y", pa.float64()), ("note", pa.string()), ("obj_cat", pa.string())])


def _frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(n)
    x = rng.random(n)
    x[::3] = np.nan
    names = pd.array([None if i % 4 == 1 else f"k{i % 5}" for i in range(n)], dtype="string")
    bound = pd.Categorical([None if i % 5 == 2 else ("memory-bound", "compute-bound")[i % 2] for i in range(n)])
    return pd.DataFrame({
        "x": x, "name": names, "bound": bound,
        "empty_cat": pd.Categorical([None] * n, categories=pd.Index([], dtype=object)),
        "n": pd.array([None if i % 3 == 0 else i for i in range(n)], dtype="Int64"),
        "flag": pd.array([i % 2 == 0 for i in range(n)], dtype="boolean"),
        "y": np.arange(n, dtype=float) - 0.0,
        "note": pd.Categorical([f"note {i % 2}" for i in range(n)], categories=["note 2", "note 0", "note 1"]),
        "obj_cat": pd.Categorical(["a"] * n, categories=pd.Index(["a"], dtype=object)),
    })


@pytest.mark.parametrize("n", [0, 1, 7, 40])
def test_a_small_frames_joint_conversion_gives_the_per_column_table(n, monkeypatch):
    frame = _frame(n)
    constants = {"file_id": "abc"}
    joint = parts.to_arrow(frame, SCHEMA, constants)
    monkeypatch.setattr(parts, "_JOINT_ROWS", -1)  # every column on its own, as large frames go
    alone = parts.to_arrow(frame, SCHEMA, constants)
    assert joint.schema == alone.schema == SCHEMA
    assert joint.equals(alone)
    assert joint.column("x").null_count == len(range(0, n, 3))  # NaN is null, as from_pandas makes it
    assert joint.column("bound").to_pylist() == [None if pd.isna(v) else v for v in frame["bound"]]
    assert joint.column("empty_cat").null_count == n


def test_a_float_column_of_another_dtype_goes_its_own_way():
    frame = pd.DataFrame({"x": np.arange(3, dtype=np.float32), "y": [1.5, np.nan, 2.0]})
    table = parts.to_arrow(frame, pa.schema([("x", pa.float64()), ("y", pa.float64())]), {})
    assert table.column("x").to_pylist() == [0.0, 1.0, 2.0]
    assert table.column("y").to_pylist() == [1.5, None, 2.0]
