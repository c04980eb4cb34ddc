"""The shortcuts that cut the analysis' fixed cost per input (issue 36), each against what it stands for: shared
Categorical dtypes against ``from_codes``, a column read by position against ``Series.iat``, the null helpers
against ``notna``, and the pipe columns' place in the frame (one concat, or where an analysed frame has them)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import roofline
from conftest import shared
from roofline.analysis import analyze
from roofline.analysis.diagnose import FEW_ROWS
from roofline.analysis.pipes import PIPE_COLUMNS, nulls, present
from roofline.analysis.render import _CACHED_CATEGORIES, by_position, categorical

NCU = "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"


@pytest.mark.parametrize("categories", [[], ["memory-bound"], [f"note {i}" for i in range(_CACHED_CATEGORIES + 6)]])
def test_categorical_is_from_codes_with_the_same_dtype(categories):
    rng = np.random.default_rng(len(categories))
    codes = rng.integers(-1, len(categories), 50).astype(np.int8) if categories else np.full(3, -1, np.int8)
    mine, theirs = categorical(codes, categories), pd.Categorical.from_codes(codes, categories=categories)
    assert mine.dtype == theirs.dtype
    assert mine.categories.dtype == theirs.categories.dtype and mine.codes.dtype == theirs.codes.dtype
    pd.testing.assert_series_equal(pd.Series(mine), pd.Series(theirs), check_exact=True)


def test_a_few_categories_share_one_dtype_and_many_do_not():
    few, many = ["compute", "dram"], [f"t{i}" for i in range(_CACHED_CATEGORIES + 1)]
    codes = np.zeros(2, np.int8)
    assert categorical(codes, few).dtype is categorical(codes, list(few)).dtype
    assert categorical(codes, many).dtype is not categorical(codes, many).dtype  # (not kept: rarely repeated)


def _every_dtype(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(n)
    miss = rng.uniform(size=n) < 0.3
    text = np.array([f"k{i % 7}" for i in range(n)], dtype=object)
    text[miss] = None
    return pd.DataFrame({
        "float": np.where(miss, np.nan, rng.uniform(size=n)),
        "int": rng.integers(0, 9, n),
        "bool": ~miss,
        "object": pd.Series(text, dtype=object),
        "str_nan": pd.array(text, dtype="str"),
        "str_na": pd.array(text, dtype="string"),
        "Int64": pd.array(np.where(miss, None, rng.integers(0, 9, n)), dtype="Int64"),
        "boolean": pd.array(np.where(miss, None, ~miss), dtype="boolean"),
        "category": pd.Categorical(text),
        "time": pd.to_datetime(rng.integers(0, 10**9, n), unit="s"),
    })


@pytest.mark.parametrize("n", [3, FEW_ROWS + 1])
def test_a_column_by_position_gives_what_iat_gives(n):
    frame = _every_dtype(n)
    for c in frame.columns:
        col = by_position(frame[c], whole=n <= FEW_ROWS)
        for r in range(0, n, max(1, n // 40)):
            want, got = frame[c].iat[r], col[r]
            assert type(got) is type(want) and repr(got) == repr(want), (c, r)


@pytest.mark.parametrize("n", [1, 50])
def test_present_and_nulls_agree_with_notna(n):
    frame = _every_dtype(n)
    for c in frame.columns:
        np.testing.assert_array_equal(present(frame[c]), frame[c].notna().to_numpy(), err_msg=c)
        assert nulls(frame[c]) == int(frame[c].isna().sum()), c


def test_the_pipe_columns_follow_the_communication_columns():
    kernels = roofline.read(shared(NCU))
    out = analyze(kernels)
    cols = list(out.columns)
    first = cols.index(PIPE_COLUMNS[0])
    assert cols[first:first + len(PIPE_COLUMNS)] == list(PIPE_COLUMNS)
    assert cols[first - 1] == "pct_of_link_roof"  # the last communication column
    assert cols[first + len(PIPE_COLUMNS):] == ["next_step", "latency_cause"]


def test_a_frame_analysed_again_keeps_its_pipe_columns_in_place_with_fresh_values():
    kernels = roofline.read(shared(NCU))
    once = analyze(kernels)
    # an analysed frame as kernels: its pipe and diagnosis columns stay where they are (after the kernel columns),
    # refilled; the roofline and communication columns are recomputed and come after them
    again = analyze(once.assign(binding_pipe_pct=-1.0))
    kept = [*PIPE_COLUMNS, "next_step", "latency_cause"]
    n = len(kernels.columns)
    assert list(again.columns) == [*once.columns[:n], *kept, *(c for c in once.columns[n:] if c not in kept)]
    pd.testing.assert_frame_equal(again[list(once.columns)], once, check_exact=True)
