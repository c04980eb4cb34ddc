"""The memory layout and in-place helpers of the hierarchical analysis (analysis/hierarchy.py), each
against the plain numpy it replaces: the float result columns are rows of one block, the boost
columns of ``analyze(clock="both")`` do not keep a second block alive, and the helpers that write
into given arrays give the values of the expressions they stand for."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from roofline.analysis import analyze, hierarchical
from roofline.analysis.hierarchy import (
    _float_columns,
    _gather,
    _Packer,
    _positive,
    _time_at,
    roofline_columns,
)
from roofline.analysis.render import Source
from roofline.schema import conform_kernels

RNG = np.random.default_rng(20261124)


def _root(a: np.ndarray) -> np.ndarray:
    """The array that owns ``a``'s memory."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _frame(n: int) -> pd.DataFrame:
    return conform_kernels(pd.DataFrame({
        "kernel_id": np.arange(n), "kernel_name": "k", "kernel_short_name": "k",
        "device_name": "NVIDIA H100 80GB HBM3", "duration_s": 10 ** RNG.uniform(-6, -2, n),
        "sm_clock_hz": 1.755e9, "sm_boost_clock_hz": 1.98e9,
        "flop_fp32": 10 ** RNG.uniform(6, 12, n), "flop_tensor": np.where(RNG.uniform(size=n) < 0.4, 1e12, 0.0),
        "dram_bytes": 10 ** RNG.uniform(4, 10, n), "l2_bytes": 10 ** RNG.uniform(4, 10, n),
        "l1_bytes": 10 ** RNG.uniform(4, 10, n),
        "peak_flop_per_s_fp32": 6.7e13, "peak_flop_per_s_tensor": 9.9e14,
        "peak_flop_per_s_fp32_source": "counters: x", "peak_flop_per_s_tensor_source": "counters: y",
        "peak_dram_bytes_per_s": 3.35e12, "peak_l2_bytes_per_s": 1e13, "peak_l1_bytes_per_s": 3e13,
    }))


@pytest.mark.parametrize("levels", [("dram", "l2", "l1"), ("dram",), ("l1", "l2")])
def test_float_columns_are_rows_of_one_block(levels):
    kernels = _frame(500)
    out = hierarchical(kernels, levels)
    names = _float_columns(levels)
    assert list(out.columns) == roofline_columns(levels)
    assert [c for c in out.columns if out[c].dtype == np.float64] == names
    roots = {id(_root(out[c].to_numpy())) for c in names}
    assert len(roots) == 1
    block = _root(out[names[0]].to_numpy())
    assert block.shape == (len(names), len(kernels))
    for i, c in enumerate(names):  # each column is its own row, not a copy
        np.testing.assert_array_equal(block[i], out[c].to_numpy())
        assert np.shares_memory(block[i], out[c].to_numpy())


def test_analyze_keeps_the_block_and_copies_the_boost_columns():
    kernels = _frame(400)
    both = analyze(kernels, clock="both")
    alone = hierarchical(kernels)
    main = _root(both["pct_of_roof"].to_numpy())
    assert main.ndim == 2 and np.shares_memory(main, both["flop_total"].to_numpy())  # the concat did not copy
    for c in ("peak_flop_per_s_boost", "attainable_flop_per_s_boost", "pct_of_roof_boost"):
        own = _root(both[c].to_numpy())
        assert own.size == len(kernels), c  # a column of its own, not a view of the boost analysis' block
    same = [c for c in alone.columns if c != "analysis_note"]
    pd.testing.assert_frame_equal(both[same], alone[same], check_exact=True)
    # the notes keep every part of the hierarchy's, the evidence added (diagnose.py): nothing recorded here
    for mine, base in zip(both["analysis_note"].astype(object), alone["analysis_note"].astype(object)):
        assert base is None or str(mine).startswith(str(base))


def test_positive_into_a_buffer():
    x = RNG.normal(size=1000)
    x[::7] = np.nan
    buf = np.empty_like(x)
    got = _positive(x, buf)
    assert got is buf
    np.testing.assert_array_equal(got, np.where(x > 0, x, np.nan))
    pos = np.abs(x[~np.isnan(x)]) + 1.0
    assert _positive(pos, np.empty_like(pos)) is pos  # all positive: the array itself, nothing copied


def test_gather_into_out_is_choose():
    n = 2000
    cols = [RNG.uniform(size=n) for _ in range(4)]
    which = RNG.choice(5, n, p=[0.1, 0.5, 0.05, 0.05, 0.3]).astype(np.int8)
    out = np.empty(n)
    assert _gather([*cols, np.nan], which, out=out) is out
    np.testing.assert_array_equal(out, np.choose(which, [*cols, np.full(n, np.nan)]))
    keys = [RNG.integers(1, 9, n).astype(np.int32) for _ in range(4)]
    got = _gather([*keys, 0], which)  # no out: the dtype of the columns (int keys stay int)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.choose(which, [*keys, np.zeros(n, np.int32)]))


def test_time_at_is_the_masked_expression():
    f = RNG.normal(size=3000) * 1e9
    f[::11] = np.nan
    pk = RNG.normal(size=3000) * 1e12
    pk[::13] = np.nan
    ref = np.fmax(f / np.where(pk > 0, pk, np.nan), 0.0)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(_time_at(f.copy(), pk), ref)


def test_packer_words_equal_exactly_when_keys_equal():
    n = 3000
    dense = RNG.integers(0, 5, n)
    sparse_rows = [np.flatnonzero(RNG.uniform(size=n) < 0.2) for _ in range(40)]  # 40 keys: several words
    sparse_keys = [RNG.integers(0, 2**20, len(r)) for r in sparse_rows]
    packer = _Packer(n)
    packer.add_dense(dense, 5)
    for r, k in zip(sparse_rows, sparse_keys):
        packer.add(r, k.copy())
    packer.add(np.zeros(0, np.int64), np.zeros(0, np.int64))  # nothing quoted: no change
    assert len(packer.words) > 1
    full = np.zeros((n, 1 + len(sparse_rows)), np.int64)
    full[:, 0] = dense
    for j, (r, k) in enumerate(zip(sparse_rows, sparse_keys), 1):
        full[r, j] = k
    words = np.stack(packer.words, axis=1)
    assert len(np.unique(words, axis=0)) == len(np.unique(full, axis=0))
    assert len(np.unique(np.concatenate([words, full], axis=1), axis=0)) == len(np.unique(full, axis=0))


@pytest.mark.parametrize("values", [
    ["counters", "model: shapes", None, "model:"],  # a match in the data's last 7 bytes
    ["mod", "model:", "", "x model:", "modelx", "model:"],
    ["model:", "m"],  # 7 bytes of data: the byte loop
    ["", "model: " * 3, "MODEL:", "model;", "model:\u00e9"],
])
@pytest.mark.parametrize("prefix", ["model:", "m", "model: m", "counters", "model: shapes"])
def test_starts_with_equals_str_startswith(values, prefix):
    col = pd.Series(values, dtype="string[pyarrow]")
    src = Source(pd.DataFrame({"s": col}), "s")
    rows = np.arange(len(values))[::-1].copy()
    ref = [isinstance(values[r], str) and values[r].startswith(prefix) for r in rows]
    np.testing.assert_array_equal(src.starts_with(rows, prefix), ref)


def test_gather_any_value_where_none():
    n = 2000
    keys = [RNG.integers(1, 9, n).astype(np.int32) for _ in range(4)]
    which = RNG.choice(5, n, p=[0.05, 0.5, 0.05, 0.05, 0.35]).astype(np.int8)
    got = _gather([*keys, None], which)
    ref = np.choose(np.minimum(which, 3), keys)
    np.testing.assert_array_equal(got[which < 4], ref[which < 4])  # the None rows: any value
