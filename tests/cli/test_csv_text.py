"""``--format csv`` builds its text column by column: it must be ``DataFrame.to_csv``'s text, escaped as the
terminal-safe stdout escapes it, whatever the dtypes, missing values, quoting and control characters."""

from __future__ import annotations

import io
import sys

import numpy as np
import pandas as pd
import pytest

from roofline.cli.csv_text import csv_text, echo_csv
from roofline.cli.safe import SafeText, terminal_safe


def _frame() -> pd.DataFrame:
    n = 12
    names = ["gemm", None, "a,b", 'say "hi"', "two\nlines", "cr\rhere", "", " ", "bell\x07", "\u202ertl", "x", "gemm"]
    return pd.DataFrame({
        "f": [0.0, -0.0, np.nan, 1e16, 1e-5, 0.1, np.inf, -np.inf, 123456789.123, 5e-324, 0.1, 2.5],
        "s": pd.array(names, dtype="string"),
        "c": pd.Categorical(names),
        "i": pd.array([1, None, *range(3, n + 1)], dtype="Int64"),
        "n": np.arange(n),
        "b": [True, False] * (n // 2),
        "bn": pd.array([True, None] * (n // 2), dtype="boolean"),
        "p": pd.array(names, dtype="string[pyarrow]"),
    })


def test_rows_are_to_csvs_text_for_every_dtype_quoting_and_missing_value():
    frame = _frame()
    header = frame.iloc[:0].to_csv(index=False)
    assert header + csv_text(frame) == frame.to_csv(index=False)


def test_escaped_rows_are_the_escaped_text_of_to_csv():
    frame = _frame()
    text = csv_text(frame, escape=True)
    assert terminal_safe(frame.iloc[:0].to_csv(index=False)) + text == terminal_safe(frame.to_csv(index=False))
    assert "\x07" not in text and "\\x07" in text and "\\u202e" in text


@pytest.mark.parametrize("frame", [
    pd.DataFrame({"only": pd.array(["a", None, ""], dtype="string")}),  # one column: an empty row is quoted
    pd.DataFrame({"o": ["a", 1, 1.0], "n": [1, 2, 3]}),  # object values of several types
    pd.DataFrame({"s": pd.array(["\x1b[31mred", "x"], dtype="string"), "n": [1, 2]}),  # ESC: click strips it
])
def test_what_the_column_path_cannot_vouch_for_goes_the_old_way(frame):
    assert csv_text(frame) is None


def test_echo_csv_writes_to_csvs_text_escaped_through_a_safe_stdout(monkeypatch):
    frame = _frame()
    inner = io.StringIO()
    monkeypatch.setattr(sys, "stdout", SafeText(inner))
    echo_csv(frame)
    assert inner.getvalue() == terminal_safe(frame.to_csv(index=False))
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stdout", plain)
    echo_csv(frame)
    assert plain.getvalue() == frame.to_csv(index=False)
