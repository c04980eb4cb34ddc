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


def _repeating(n: int = 400) -> pd.DataFrame:
    """Columns whose cells repeat together (a profile's device, format, sources) beside ones unique per row, with
    characters beyond Latin-1 (one makes a ``str`` 2 bytes a character)."""
    rng = np.random.default_rng(5)
    profile = rng.integers(0, 7, n)
    return pd.DataFrame({
        "duration_s": rng.random(n),
        "device": pd.array(np.array(["A100", "MI300X", None, "H100 µ", "V100", "T4", "B200"], dtype=object)[profile],
                           dtype="string"),
        "source": pd.array([f"bus (n−1)/n, n={p}" for p in profile], dtype="string"),
        "sm_count": (profile * 10).astype(float),
        "kernel_id": np.arange(n),
        "note": pd.Categorical(np.where(profile % 2 == 0, "a, \"quoted\" note", "plain")),
        "flop": np.where(profile == 3, np.nan, profile * 1e9),
    })


@pytest.mark.parametrize("safe", [False, True])
def test_a_utf8_stdout_gets_to_csvs_bytes_written_to_its_buffer(monkeypatch, safe):
    for frame in (_frame(), _repeating()):
        buffer = io.BytesIO()
        stdout = io.TextIOWrapper(buffer, encoding="utf-8", newline="")
        stdout.write("before\n")  # (text the layer holds goes out first)
        monkeypatch.setattr(sys, "stdout", SafeText(stdout) if safe else stdout)
        echo_csv(frame)
        stdout.flush()
        text = frame.to_csv(index=False)
        assert buffer.getvalue() == ("before\n" + (terminal_safe(text) if safe else text)).encode("utf-8")


def test_a_stdout_in_another_encoding_gets_the_text_it_encodes(monkeypatch):
    frame = _repeating()
    buffer = io.BytesIO()
    stdout = io.TextIOWrapper(buffer, encoding="latin-1", errors="replace", newline="")
    monkeypatch.setattr(sys, "stdout", stdout)
    echo_csv(frame)
    stdout.flush()
    assert buffer.getvalue() == frame.to_csv(index=False).encode("latin-1", "replace")
    assert "µ".encode("latin-1") in buffer.getvalue() and b"(n?1)/n" in buffer.getvalue()


def test_columns_whose_cells_repeat_together_are_written_as_to_csv_writes_them():
    frame = _repeating(2000)
    header = frame.iloc[:0].to_csv(index=False)
    assert header + csv_text(frame) == frame.to_csv(index=False)
    shuffled = frame[["device", "duration_s", "note", "source", "kernel_id", "sm_count", "flop"]]
    assert shuffled.iloc[:0].to_csv(index=False) + csv_text(shuffled) == shuffled.to_csv(index=False)


class _ShortWrites(io.RawIOBase):
    """A binary sink that takes at most ``most`` bytes a call, as Linux's write(2) takes at most 0x7ffff000 (a
    2.5 GB CSV printed in one write lost its last 0.4 GB, exit status 0)."""

    def __init__(self, most: int) -> None:
        self.most, self.got = most, bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        n = min(len(b), self.most)
        self.got += bytes(b[:n])
        return n


def test_an_output_is_written_whole_when_the_stream_takes_less_than_it_is_given(monkeypatch):
    from roofline.cli import safe

    monkeypatch.setattr(safe, "CHUNK", 1000)
    data = bytes(range(256)) * 40
    sink = _ShortWrites(300)
    safe.write_all(sink, data)
    assert bytes(sink.got) == data
    text = io.StringIO()
    safe.write_all(text, "ab\u2212" * 1500)  # text goes in pieces of CHUNK characters
    assert text.getvalue() == "ab\u2212" * 1500
    sink = _ShortWrites(300)
    out = io.TextIOWrapper(io.BufferedWriter(sink, buffer_size=64), encoding="utf-8", newline="\n")
    SafeText(out).write("k\x1b" * 2000)  # the CLI's stdout: escaped, then written whole
    out.flush()
    assert sink.got.decode() == "k\\x1b" * 2000


def test_a_stream_that_takes_nothing_is_an_error_not_a_lost_tail():
    from roofline.cli.safe import write_all

    with pytest.raises(OSError, match="took no bytes"):
        write_all(_ShortWrites(0), b"rows")


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_rows_written_a_block_at_a_time_are_to_csvs_text(monkeypatch, encoding):
    # (blocks of 7 rows: the block edges fall inside runs of repeating cells, and the last block is short)
    monkeypatch.setattr("roofline.cli.csv_text._BLOCK_ROWS", 7)
    for frame in (_frame(), _repeating(100)):
        buffer = io.BytesIO()
        stdout = io.TextIOWrapper(buffer, encoding=encoding, errors="replace", newline="")
        monkeypatch.setattr(sys, "stdout", stdout)
        echo_csv(frame)
        stdout.flush()
        assert buffer.getvalue() == frame.to_csv(index=False).encode(encoding, "replace")
        header = frame.iloc[:0].to_csv(index=False)
        assert header + csv_text(frame) == frame.to_csv(index=False)
