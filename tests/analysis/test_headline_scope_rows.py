"""The headline's shortcuts give what pandas gives: the longest names of a reason (equal sums too), a scope's
NaN-skipping sums, and its count of distinct values."""

from __future__ import annotations

import numpy as np
import pandas as pd

from roofline.analysis.headline import _longest
from roofline.analysis.scope_rows import Rows


def test_longest_names_are_in_pandas_descending_order_with_equal_sums():
    rng = np.random.default_rng(3)
    for n in (2, 3, 5, 17, 40):
        for _ in range(50):
            sums = rng.choice([0.5, 1.0, 2.0, 1e-9, 3.0], size=n)  # many equal sums: the order among them counts
            names = np.array([f"k{i}" for i in range(n)], dtype=object)
            want = list(pd.Series(sums, index=names).sort_values(ascending=False).head(3).items())
            assert [(str(a), float(b)) for a, b in _longest(names, sums)] == [(str(a), float(b)) for a, b in want]


def test_scope_nansum_is_the_slices_sum_to_the_last_bit():
    rng = np.random.default_rng(5)
    values = rng.random(5000) * 10.0 ** rng.integers(-9, 3, 5000)
    values[rng.random(5000) < 0.3] = np.nan
    rows = Rows(pd.DataFrame({"x": values}))
    for ix in (np.sort(rng.choice(5000, 1200, replace=False)), slice(100, 4000), np.flatnonzero(np.isnan(values))):
        for min_count in (0, 1):
            got, want = rows.nansum("x", ix, min_count), pd.Series(values[ix]).sum(min_count=min_count)
            assert got == want or (np.isnan(got) and np.isnan(want))


def test_scope_distinct_counts_missing_as_one_value_like_nunique():
    frame = pd.DataFrame({"d": pd.array(["a", None, "b", "a", None, "c"], dtype="string"),
                          "o": np.array(["a", None, np.nan, "a", "b", "b"], dtype=object)})
    rows = Rows(frame)
    for ix in (slice(None), np.array([0, 3]), np.array([1, 4]), np.array([0, 1, 2]), np.array([2, 4, 5])):
        for col in ("d", "o"):
            assert rows.distinct(col, ix) == frame[col].iloc[ix].nunique(dropna=False)
