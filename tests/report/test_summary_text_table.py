"""The headline's per-scope tables, written without a DataFrame, read as pandas writes them."""

from __future__ import annotations

import random

import pandas as pd

from roofline.report.summary import text_table


def test_text_table_matches_pandas_to_string_for_text_cells():
    rng = random.Random(7)
    pieces = ["a", " ", "…", "é", "中", "\t", "\n", "\r", "\x0c", "\u2028", "n/a", "", "1.0", "NaN", "'"]
    heads = ["profile and device", "GPU time", "point", "most time", "MFU", "step"]
    for _ in range(500):
        columns = {f"{rng.choice(heads)}{j}": ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
                                              for _ in range(nrows)]
                   for nrows in [rng.randint(1, 4)] for j in range(rng.randint(1, 6))}
        assert text_table(columns) == pd.DataFrame(columns).to_string(index=False).splitlines()


def test_text_table_right_aligns_each_column_to_its_widest_cell():
    assert text_table({"a": ["x", "yyy"], "GPU time": ["1 ms", ""]}) == \
        ["  a GPU time", "  x     1 ms", "yyy         "]
