"""The roofs stage's cache of small frames' fills: a cached fill is the fill itself, cell for cell, and a
frame that differs in any cell the fill reads (a float's bits included) is filled on its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from roofline.hardware import attach, fill_cache
from roofline.schema import source_column

POLICY = attach.POLICIES["ncu-rep"]


def _cached(frame: pd.DataFrame) -> pd.DataFrame | None:
    return fill_cache.small_fill(frame, POLICY, lambda given: attach._fill_policy(given, POLICY), attach.FILL_INPUTS,
                                 attach.FILLED_COLUMNS, attach._SMALL_FRAME)


def _frame(clocks: list[float], fp32: list[float] | None = None) -> pd.DataFrame:
    n = len(clocks)
    frame = pd.DataFrame({
        "format": pd.array(["ncu-rep"] * n, dtype="string"),
        "device_name": pd.array(["NVIDIA A100-SXM4-80GB"] * n, dtype="string"),
        "compute_capability": pd.array(["8.0"] * n, dtype="string"),
        "sm_count": pd.array([108] * n, dtype="Int64"),
        "sm_boost_clock_hz": np.full(n, 1.41e9),
        "sm_clock_hz": np.array(clocks, dtype=float),
        "tensor_path": pd.array([None, "fp16"] * (n // 2) + [None] * (n % 2), dtype="string"),
        "kernel_name": pd.array([f"k{i}" for i in range(n)], dtype="string"),
    })
    for col in attach._PEAK_COLUMNS:
        frame[col] = np.nan
        frame[source_column(col)] = pd.array([None] * n, dtype="string")
    if fp32 is not None:
        frame["peak_flop_per_s_fp32"] = np.array(fp32, dtype=float)
        frame[source_column("peak_flop_per_s_fp32")] = pd.array([None if np.isnan(v) else "counters: sm__inst"
                                                                   for v in fp32], dtype="string")
    return frame


@pytest.mark.parametrize("clocks", [[1.2e9], [1.2e9, 1.2e9, 1.2e9], [1.2e9, np.nan, 1.2e9, 0.0]])
def test_a_small_frames_fill_from_the_cache_is_its_own_fill(clocks):
    frame = _frame(clocks)
    before = frame.copy()
    expected = attach._fill_policy(frame.copy(), POLICY)
    first = attach._table_roofs(frame)  # (one format: the stage's way through the cache)
    cached = len(fill_cache._FILLS)
    again = attach._table_roofs(frame.copy())  # the cached fill: NaN cells key equal to each other
    assert len(fill_cache._FILLS) == cached
    for got in (first, again):
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
        assert list(got.dtypes) == list(expected.dtypes)
    pd.testing.assert_frame_equal(frame, before, check_exact=True)  # the input is not written
    assert expected["peak_dram_bytes_per_s"].notna().all()  # (the fill did fill something)


def test_frames_differing_in_a_floats_bits_are_filled_apart():
    # the second row's roof is filled, so the column is rewritten: each frame's first row keeps its own zero
    plus, minus = _frame([1.2e9, 1.2e9], fp32=[0.0, np.nan]), _frame([1.2e9, 1.2e9], fp32=[-0.0, np.nan])
    for frame in (plus, minus, plus):
        got = _cached(frame)
        np.testing.assert_array_equal(np.signbit(got["peak_flop_per_s_fp32"].to_numpy()),
                                      np.signbit(frame["peak_flop_per_s_fp32"].to_numpy()))
        pd.testing.assert_frame_equal(got, attach._fill_policy(frame.copy(), POLICY), check_exact=True)


def test_a_frame_above_the_small_size_or_with_an_object_column_is_left_to_the_plain_fill():
    assert _cached(_frame([1e9] * (attach._SMALL_FRAME + 1))) is None
    odd = _frame([1e9])
    odd["sm_count"] = odd["sm_count"].astype(object)
    assert _cached(odd) is None


def test_a_frame_of_many_distinct_rows_is_filled_without_being_held():
    """A report of many launches, each at its own clock, would never be seen again: it is not cached."""
    held = len(fill_cache._FILLS)
    many = _frame([1.0e9 + i for i in range(fill_cache.MOST_DISTINCT + 1)])
    assert _cached(many) is None and len(fill_cache._FILLS) == held
    few = _frame([1.0e9 + i for i in range(fill_cache.MOST_DISTINCT)])
    assert _cached(few) is not None


def test_a_cached_fill_follows_pandas_string_storage_and_is_never_the_callers_frame():
    frame = _frame([1.3e9])
    attach._table_roofs(frame)  # cached under the default storage
    with pd.option_context("mode.string_storage", "python"):
        expected = attach._fill_policy(frame.copy(), POLICY)
        got = attach._table_roofs(frame.copy())
    col = source_column("peak_dram_bytes_per_s")
    assert got[col].dtype == expected[col].dtype and got[col].dtype.storage == "python"
    filled = attach._fill_policy(frame.copy(), POLICY)
    assert attach._table_roofs(filled) is not filled  # (a fill that changes nothing still gives a new frame)
