"""Stages that work on a shallow copy of their input (issue 36: a deep copy of a dataset's frame per stage was
memory for nothing) still leave the caller's frame as it was: they set whole columns, never rows."""

from __future__ import annotations

import pandas as pd

from conftest import shared
from roofline.analysis.analyze import at_boost_clock, choose_peaks
from roofline.hardware.attach import attach_roofs
from roofline.pipeline import read_one
from roofline.schema import conform_kernels, kernel_dtypes

_REPORT = "ncu/sm80_a100_mistic-selfjoin-fp64_full.ncu-rep"


def _kernels() -> pd.DataFrame:
    return attach_roofs(read_one(shared(_REPORT)))


def _snapshot(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.copy(deep=True)


def test_conform_kernels_leaves_the_given_frame_as_it_was():
    given = _kernels()
    given = given.drop(columns=["flop_fp64", "kernel_short_name"]).assign(sm_count=given["sm_count"].astype("float64"))
    before = _snapshot(given)
    out = conform_kernels(given)
    assert list(out.columns[: len(kernel_dtypes())]) == list(kernel_dtypes())
    assert str(out["sm_count"].dtype) == "Int64" and out["flop_fp64"].isna().all()
    pd.testing.assert_frame_equal(given, before, check_exact=True)


def test_the_boost_clock_and_spec_peaks_leave_the_given_frame_as_it_was():
    given = _kernels()
    before = _snapshot(given)
    boosted = at_boost_clock(given)
    spec = choose_peaks(given, "spec")
    assert not boosted["peak_flop_per_s_fp64"].equals(given["peak_flop_per_s_fp64"])  # it did rescale
    assert spec["peak_flop_per_s_fp64_source"].str.contains("spec").any()
    pd.testing.assert_frame_equal(given, before, check_exact=True)
