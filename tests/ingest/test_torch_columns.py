"""The Kineto reader's column helpers give exactly what the cell-by-cell conversion gives."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from roofline.ingest.torch.columns import factorized, repeated
from roofline.schema import kernels_from_columns

NAN = float("nan")
NAMES = ("flop_fp32", "flop_fp32_source", "tensor_path", "dram_bytes", "op_args")


def _frames(tuples: tuple[tuple, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    n = len(tuples)
    plain = kernels_from_columns(dict(zip(NAMES, zip(*tuples))), n)
    return kernels_from_columns(factorized(tuples, NAMES), n), plain


def test_factorized_equals_plain_transposition() -> None:
    shared = (1.5e9, "model: 2·M·N·K", None, 4096.0, "[M=8]")
    other = (NAN, "unavailable: no model", "tf32", NAN, None)
    # the same tuple object many times, an equal but distinct tuple, a tuple with a distinct NaN object
    rows = (shared, other, shared, (1.5e9, "model: 2·M·N·K", None, 4096.0, "[M=8]"),
            (float("nan"), "unavailable: no model", "tf32", float("nan"), None), other, shared)
    got, want = _frames(rows)
    pd.testing.assert_frame_equal(got, want)
    assert list(got["flop_fp32_source"][:3]) == ["model: 2·M·N·K", "unavailable: no model", "model: 2·M·N·K"]
    assert math.isnan(got["dram_bytes"][1]) and got["dram_bytes"][6] == 4096.0
    assert got["tensor_path"].isna().tolist() == [True, False, True, True, False, False, True]


def test_factorized_keeps_rows_in_order() -> None:
    rows = tuple((float(i % 3), f"s{i % 3}", None, float(i), None) for i in range(10))
    got, want = _frames(rows)
    pd.testing.assert_frame_equal(got, want)
    assert got["dram_bytes"].tolist() == [float(i) for i in range(10)]
    assert got["flop_fp32_source"].tolist() == [f"s{i % 3}" for i in range(10)]


def test_factorized_damaged_values_fall_back() -> None:
    # an unhashable value (a list from a damaged trace) and a non-str in a string column
    rows = ((1.0, "a", None, 2.0, ["x"]), (1.0, 7, None, 2.0, None), (1.0, "a", None, 2.0, ["x"]))
    got, want = _frames(rows)
    pd.testing.assert_frame_equal(got, want)
    rows = ((1.0, "a", None, 2.0, None), (1.0, 7, None, 2.0, None), (1.0, "a", None, 2.0, None))
    got, want = _frames(rows)
    pd.testing.assert_frame_equal(got, want)
    assert got["flop_fp32_source"].tolist() == ["a", "7", "a"]


def test_repeated_equals_broadcast() -> None:
    n = 5
    for col, value in (("device_name", "NVIDIA H100"), ("device_name", None), ("sm_count", 132),
                       ("sm_count", None), ("sm_count", "132"), ("sm_count", True), ("sm_count", 2**70),
                       ("compute_capability", "9.0")):
        dtype = "string" if col != "sm_count" else "Int64"
        got = kernels_from_columns({col: repeated(value, n, dtype)}, n)[col]
        want = kernels_from_columns({col: [value] * n}, n)[col]
        pd.testing.assert_series_equal(got, want)
    assert kernels_from_columns({"sm_count": repeated(132, 3, "Int64")}, 3)["sm_count"].tolist() == [132] * 3
    assert np.all(kernels_from_columns({"sm_count": repeated("x", 3, "Int64")}, 3)["sm_count"].isna())
