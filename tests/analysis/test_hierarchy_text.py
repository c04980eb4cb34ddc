"""The vectorised helpers behind the hierarchical analysis (analysis/hierarchy.py, analysis/render.py),
each against an independent computation: numpy's own reductions, pandas' factorize, and the analysis
of each row on its own (one row cannot be grouped with another, so its text is its own)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from roofline.analysis import hierarchical
from roofline.analysis.hierarchy import _arg, _gather
from roofline.analysis.render import Factor, Source, flag_word, render, render_rare
from roofline.schema import conform_kernels

RNG = np.random.default_rng(20261124)


@pytest.mark.parametrize("better", [np.less, np.greater])
def test_arg_is_numpy_argmin_argmax_with_ties_and_nan(better):
    n = 5000
    cols = [RNG.integers(0, 4, n).astype(float) for _ in range(4)]  # small integers: many ties
    for c in cols[1:]:
        c[RNG.uniform(size=n) < 0.2] = np.nan  # NaN (never the best) only after the first column
    fill = np.inf if better is np.less else -np.inf
    stack = np.stack([np.where(np.isnan(c), fill, c) for c in cols], axis=1)
    idx, best = _arg(better, cols)
    ref = np.argmin(stack, axis=1) if better is np.less else np.argmax(stack, axis=1)
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_array_equal(best, stack[np.arange(n), ref])


def test_gather_is_choose():
    n = 3000
    cols = [RNG.uniform(size=n) for _ in range(4)]
    which = RNG.choice(5, n, p=[0.1, 0.5, 0.05, 0.05, 0.3]).astype(np.int8)
    got = _gather([*cols, np.nan], which)
    ref = np.choose(which, [*cols, np.full(n, np.nan)])
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("k", [1, 7, 9, 32, 40])
def test_flag_word_equal_exactly_when_flags_equal(k):
    n = 2000
    flags = [RNG.uniform(size=n) < 0.1 for _ in range(k)]
    word = flag_word(flags)
    assert word.min() >= 0
    rows = np.stack(flags, axis=1)
    # as many distinct words as distinct flag tuples, and each word decodes to its bits
    assert len(np.unique(word)) == len(np.unique(rows, axis=0))
    bits = (word.astype(np.uint64)[:, None] >> np.arange(k, dtype=np.uint64)) & np.uint64(1)
    np.testing.assert_array_equal(bits.astype(bool), rows)


def test_render_rare_is_render_over_all_keys():
    n = 4000
    common = RNG.integers(0, 3, n)
    rare = RNG.uniform(size=n) < 0.15
    detail = np.where(rare, RNG.integers(0, 50, n), 0)
    texts = {}

    def fn(r: int) -> str | None:
        texts[r] = None if common[r] == 0 and not rare[r] else f"c{common[r]} d{detail[r]} r{int(rare[r])}"
        return texts[r]

    got = render_rare([common], rare, lambda rows: [detail[rows], common[rows]], n, fn)
    ref = render([common, rare, detail], n, fn)
    assert list(got.categories) == list(ref.categories)  # by first appearance, as render
    np.testing.assert_array_equal(got.codes, ref.codes)


def _strings(dtype: str) -> pd.Series:
    values = ["model: shapes", None, "mod", "", "counters", "model:", "x model: y", "model: shapes"]
    if dtype == "arrow-chunked":
        chunked = pa.chunked_array([pa.array(values[:3], pa.large_string()), pa.array(values[3:], pa.large_string())])
        return pd.Series(pd.arrays.ArrowStringArray(chunked))
    return pd.Series(values, dtype=dtype)


@pytest.mark.parametrize("dtype", ["string[pyarrow]", "string[python]", "object", "arrow-chunked"])
def test_source_reads_only_the_rows_asked(dtype):
    col = _strings(dtype)
    frame = pd.DataFrame({"src": col})
    src = Source(frame, "src")
    rows = np.arange(len(col))
    ref = [isinstance(x, str) and x.startswith("model:") for x in col.astype(object)]
    np.testing.assert_array_equal(src.starts_with(rows, "model:"), ref)
    np.testing.assert_array_equal(src.starts_with(rows[::-2], "model:"), np.array(ref)[::-2])
    keys = src.key_at(rows)
    codes = pd.factorize(col.astype(object), use_na_sentinel=True)[0]
    np.testing.assert_array_equal(keys == 0, codes < 0)  # 0: missing
    for i in rows:  # equal keys exactly for equal strings
        np.testing.assert_array_equal(keys == keys[i], codes == codes[i])
    assert [src.text(int(r), "-") for r in rows] == [x if isinstance(x, str) else "-" for x in col.astype(object)]
    assert not Source(frame, "absent").starts_with(rows, "m").any()


@pytest.mark.parametrize("dtype", ["string[pyarrow]", "object"])
def test_factor_keys_and_texts(dtype):
    col = pd.Series(["a", "b", None, "a", "c", "b"] * 50, dtype=dtype)
    frame = pd.DataFrame({"s": col})
    picked = np.zeros(len(col), bool)
    picked[[0, 4, 7]] = True
    for rows in (None, picked):
        f = Factor(frame, "s", rows=rows)
        where = np.ones(len(col), bool) if rows is None else rows
        for r in np.flatnonzero(where):
            assert f.text(int(r), "-") == (col[r] if isinstance(col[r], str) else "-")
        assert (f.key()[~where] == 0).all() and (f.codes[~where] == -1).all()


def _edge_frame(n: int) -> pd.DataFrame:
    """Kernels with every condition a note or a text column depends on, mixed row by row."""
    u = lambda: RNG.uniform(size=n)
    kind = u()
    cols: dict[str, object] = {
        "kernel_id": np.arange(n), "kernel_name": "k", "kernel_short_name": "k",
        "device_name": np.where(u() < 0.5, "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"),
        "duration_s": np.select([u() < 0.02, u() < 0.02, u() < 0.02, u() < 0.1], [0.0, -1e-3, np.nan, 1e-12],
                                10 ** RNG.uniform(-6, -2, n)),
        "flop_fp32": np.where(kind > 0.85, 0.0, 10 ** RNG.uniform(6, 12, n)),
        "flop_tensor": np.where(kind < 0.35, 10 ** RNG.uniform(9, 13, n), 0.0),
        "flop_fp64": np.where(kind > 0.95, 1e8, 0.0),
        "flop_fp16": np.where(u() < 0.05, np.nan, 0.0),
        "tensor_path": np.where(u() < 0.5, "src_bf16_dst_fp32_sparsity_off", "src_fp16_dst_fp16_sparsity_on"),
    }
    cols["flop_fp32"] = np.where(u() < 0.03, np.nan, cols["flop_fp32"])
    for lv, scale in (("dram", 1.0), ("l2", 2.0), ("l1", 6.0)):
        b = 10 ** RNG.uniform(4, 10, n) * scale
        b[u() < 0.03] = 0.0
        b[u() < 0.03] = np.nan
        b[u() < 0.01] = -5.0
        cols[f"{lv}_bytes"] = b
        cols[f"{lv}_bytes_source"] = np.where(np.isnan(b), "unavailable: no counters",
                                              np.where(u() < 0.3, "model: shapes", "counters"))
        bw = np.where(u() < 0.02, np.nan, {"dram": 3.35e12, "l2": 1e13, "l1": 3e13}[lv])
        cols[f"peak_{lv}_bytes_per_s"] = bw
        cols[f"peak_{lv}_bytes_per_s_source"] = np.where(np.isnan(bw), "unavailable: no roof",
                                                          np.where(u() < 0.5, f"spec {lv}", f"counters {lv}"))
    for p, v in {"fp64": 6.7e13, "fp32": 6.7e13, "fp16": 1.3e14, "tensor": 9.9e14}.items():
        pk = v * RNG.uniform(0.9, 1.0, n)
        pk[u() < 0.03] = np.nan
        cols[f"peak_flop_per_s_{p}"] = pk
        cols[f"peak_flop_per_s_{p}_source"] = np.where(np.isnan(pk), f"unavailable: no {p} peak",
                                                       np.where(u() < 0.5, f"counters {p}", f"spec {p}"))
    cols["flop_fp32_source"] = np.where(np.isnan(cols["flop_fp32"]), "unavailable: no fp32 counter", "counters")
    return conform_kernels(pd.DataFrame(cols))


def test_each_row_as_if_analysed_alone():
    kernels = _edge_frame(3000)
    full = hierarchical(kernels)
    notes = full["analysis_note"].astype(object)
    # every distinct note, precision and peak source, plus random rows
    picks = set(RNG.choice(len(kernels), 300, replace=False).tolist())
    for col in ("analysis_note", "compute_precision", "peak_flop_per_s_source", "bound", "binding_roof"):
        picks |= set(full.reset_index(drop=True).groupby(col, observed=True, dropna=False).head(1).index.tolist())
    assert notes.str.contains("modelled", na=False).any() and notes.str.contains("absent", na=False).any()
    assert notes.str.contains("duration", na=False).any() and notes.str.contains("no compute roof", na=False).any()
    for r in sorted(picks):
        alone = hierarchical(kernels.iloc[[r]])
        expect = full.iloc[[r]]
        for c in full.columns:
            a, b = alone[c].astype(object).iloc[0], expect[c].astype(object).iloc[0]
            assert (pd.isna(a) and pd.isna(b)) or a == b, (r, c, a, b)
