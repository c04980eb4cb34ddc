"""CSV records on stdout (``--format csv``): the text of ``DataFrame.to_csv(index=False)``, built column by column.

pandas writes CSV one row at a time through Python's ``csv`` module (~1.5 µs a cell: 25 s for the 63,000 rows ×
143 columns of a 500-input dataset), and the terminal-escape pass (:mod:`roofline.cli.safe`) then reads all of
its text again (4 s). Here each column is factorised and only its distinct values are formatted, by pandas'
own ``to_csv`` (so numbers, missing values and quoting are written as it writes them) and escaped once each;
the rows are then joined (a row of several cells: one of a single empty cell is quoted). Escaping cell by
cell gives the text escaping all of it gives: the escapes replace single characters, and quoting adds only ``"``.

The distinct values of every column of one dtype whose cells ``to_csv`` formats each on its own go through
one ``to_csv`` (its fixed cost is ~2 ms a call). Joining 143 pieces a row was then most of what was left, so
adjacent columns whose cells repeat together (a profile's device, format, sources, notes) are joined once per
distinct combination, and the text is one ``join`` of those blocks and the separators per 32k rows, written
as it is made (the whole text of 5,000 inputs at once was 2.5 GB). Where stdout is
UTF-8 text over a byte buffer, the cells are encoded once each and the bytes written to the buffer: the same
bytes the text layer would write (UTF-8 encodes character by character), without a ``str`` of 2 bytes a
character (one "−" makes every character of the 250 MB that wide) and its encoding pass.

Whatever this path cannot vouch for goes the old way, whole: cells with ESC (``click.echo`` strips ANSI
sequences from text written to a non-terminal), object columns (values of several types may hash alike and
print differently: they are formatted row by row) and a cell that holds the marker that separates formatted
values.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO, TypeVar

import click
import numpy as np
import pandas as pd

from roofline.cli.safe import SafeText, raw, terminal_safe, write_all
from roofline.frames import group_ids

#: ends each formatted value in the per-column ``to_csv`` (no character the CSV writer quotes)
_MARK = "\x02roofline\x03"

Piece = TypeVar("Piece", str, bytes)


def echo_csv(frame: pd.DataFrame) -> None:
    """Print ``frame.to_csv(index=False)`` as ``click.echo`` does through the CLI's safe stdout."""
    out = sys.stdout
    escape = isinstance(out, SafeText)  # (then the cells are escaped here: the pass over the whole text is not needed)
    if not len(frame) or not len(frame.columns):
        click.echo(frame.to_csv(index=False), nl=False)
        return
    stream = raw(out)
    header = frame.iloc[:0].to_csv(index=False)
    header = terminal_safe(header) if escape else header
    errors = _utf8_bytes(stream)
    if errors is None:
        body = _rows(frame, escape, str)
        if body is None:
            click.echo(frame.to_csv(index=False), nl=False)
            return
        write_all(stream, header)
        for text in body:
            write_all(stream, text)
        stream.flush()
        return
    pieces = _rows(frame, escape, lambda s: s.encode("utf-8", errors))
    if pieces is None:
        click.echo(frame.to_csv(index=False), nl=False)
        return
    stream.flush()  # (what the text layer holds goes first)
    write_all(stream.buffer, header.encode("utf-8", errors))  # type: ignore[attr-defined]
    for piece in pieces:
        write_all(stream.buffer, piece)  # type: ignore[attr-defined]
    stream.buffer.flush()  # type: ignore[attr-defined]


def csv_text(frame: pd.DataFrame, escape: bool = False) -> str | None:
    """The rows of ``frame.to_csv(index=False)`` without the header (terminal-escaped with ``escape``), or None
    where this path does not apply (see the module's note)."""
    blocks = _rows(frame, escape, str)
    return None if blocks is None else "".join(blocks)


def _utf8_bytes(stream: TextIO) -> str | None:
    """The stream's encoding error handler where bytes written to its buffer are what writing the text would
    write (UTF-8, no newline translation); else None."""
    buffer, encoding = getattr(stream, "buffer", None), getattr(stream, "encoding", None)
    if buffer is None or not isinstance(encoding, str) or os.linesep != "\n":
        return None
    try:
        if codecs.lookup(encoding).name != "utf-8":
            return None
    except LookupError:
        return None
    return getattr(stream, "errors", None) or "strict"


def _rows(frame: pd.DataFrame, escape: bool, encode: Callable[[str], Piece]) -> Iterator[Piece] | None:
    """The rows of ``frame.to_csv(index=False)``, each cell through ``encode`` (``str`` or an encoder to bytes), in
    pieces of :data:`_BLOCK_ROWS` rows; None where this path does not apply (decided before the first piece)."""
    if len(frame.columns) < 2:  # (a row of one empty cell is written '""')
        return None
    codes: list[np.ndarray] = []
    values: list[pd.Series] = []
    for j in range(len(frame.columns)):
        col = frame.iloc[:, j]
        if col.dtype == object:
            return None
        c, v = _distinct(col)
        codes.append(c)
        values.append(v)
    texts = _formatted(values)
    if texts is None:
        return None
    columns = [(c, [encode(terminal_safe(t) if escape else t) for t in ts]) for c, ts in zip(codes, texts)]
    sep, end = encode(","), encode(os.linesep)
    return _joined(_blocks(columns, len(frame), sep), len(frame), sep, end)


#: rows joined into one piece of output: the text of the whole frame at once was 2.5 GB at 5,000 inputs (plus a
#: cell table of 8 bytes a cell); a piece of this many rows is a few MB, and its fixed costs are negligible
_BLOCK_ROWS = 32_768


def _joined(blocks: list[tuple[np.ndarray, list[Any]]], n: int, sep: Piece, end: Piece) -> Iterator[Piece]:
    """The rows' text, every piece and separator in order joined once per :data:`_BLOCK_ROWS` rows (no string per
    row)."""
    texts = [np.array(pieces, dtype=object) for _, pieces in blocks]
    for start in range(0, n, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, n)
        cells = np.empty((stop - start, 2 * len(blocks)), dtype=object)
        for j, (ids, _) in enumerate(blocks):
            cells[:, 2 * j] = texts[j][ids[start:stop]]
        cells[:, 1:-1:2] = sep
        cells[:, -1] = end
        yield sep[:0].join(cells.ravel().tolist())


def _distinct(col: pd.Series) -> tuple[np.ndarray, pd.Series]:
    """Each row's code (int64) into ``col``'s distinct values, and those values (first appearance order)."""
    if col.dtype == np.float64:  # by bit pattern: 0.0 and -0.0 are written apart
        codes, uniq = pd.factorize(col.to_numpy().view(np.int64))
    else:
        codes, uniq = pd.factorize(col, use_na_sentinel=False)
    codes = np.asarray(codes, dtype=np.int64)
    return codes, col.iloc[_first_rows(codes, len(uniq))].reset_index(drop=True)


#: dtypes whose cells ``to_csv`` formats each on its own (a number's repr, a string quoted when it must be): the
#: distinct values of every column of one of them are formatted by one ``to_csv`` (~2 ms of fixed cost a call)
_ALONE = ("float64", "int64", "bool")


def _formatted(values: list[pd.Series]) -> list[list[str]] | None:
    """Each column's distinct values as ``to_csv`` writes them; None where a cell holds ESC or the marker."""
    groups: dict[object, list[int]] = {}
    for j, v in enumerate(values):
        arrow = isinstance(v.array, pd.arrays.ArrowStringArray)
        key = (str(v.dtype), arrow) if arrow or str(v.dtype) in _ALONE else j  # (other dtypes: column by column)
        groups.setdefault(key, []).append(j)
    out: list[list[str]] = [[] for _ in values]
    for members in groups.values():
        together = values[members[0]] if len(members) == 1 else pd.concat([values[j] for j in members],
                                                                          ignore_index=True)
        if str(together.dtype) == "float64":  # what to_csv does to float64 (no float_format): no csv writer needed
            floats = together.to_numpy()
            cells = floats.astype(str).astype(object)
            cells[np.isnan(floats)] = ""
            cells = [*cells.tolist(), ""]
        else:
            text = pd.DataFrame({"v": together, "m": _MARK}).to_csv(index=False, header=False)
            cells = text.split("," + _MARK + os.linesep)
        if len(cells) != len(together) + 1 or cells[-1] or any("\x1b" in c for c in cells):
            return None
        at = 0
        for j in members:
            out[j] = cells[at:at + len(values[j])]
            at += len(values[j])
    return out


def _first_rows(codes: np.ndarray, k: int) -> np.ndarray:
    """The first row of each of ``k`` codes (the reversed scatter leaves each one's first: the last write wins)."""
    first = np.full(k, -1, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return first


def _blocks(columns: list[tuple[np.ndarray, list[Piece]]], n: int, sep: Piece) -> list[tuple[np.ndarray, list[Any]]]:
    """Runs of adjacent columns whose combinations of cells number at most a quarter of the rows, each as one
    column: its codes and each combination's cells joined by ``sep`` (a row then joins fewer pieces; a
    combination's text is built once)."""
    limit = max(n // 4, 1)
    out: list[tuple[np.ndarray, list[Any]]] = []
    run: list[tuple[np.ndarray, list[Piece]]] = []
    ids = np.zeros(n, np.int64)
    first = np.zeros(1, np.int64)

    def close() -> None:
        if len(run) == 1:
            out.append(run[0])
            return
        parts = np.empty((len(first), 2 * len(run) - 1), dtype=object)
        for j, (c, t) in enumerate(run):
            parts[:, 2 * j] = np.array(t, dtype=object)[c[first]]
        parts[:, 1::2] = sep
        out.append((ids, [sep[:0].join(p) for p in parts.tolist()]))

    for codes, texts in columns:
        if run and len(texts) <= limit:  # (a column of more distinct cells than that is a block of its own)
            joint = _joint(ids, first, codes, len(texts))
            if joint is None:
                joint = group_ids([ids, codes], n)
            if len(joint[1]) <= limit:
                run.append((codes, texts))
                ids, first = joint
                continue
        if run:
            close()
        run = [(codes, texts)]
        ids, first = codes, _first_rows(codes, len(texts))
    if run:
        close()
    return out


def _joint(ids: np.ndarray, first: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The groups (and their first rows) of (``ids``, ``codes``) where one of them determines the other (a
    profile's device beside its source file: most adjacent columns of a dataset), found without hashing the
    pairs; else None. ``first``: the first row of each id."""
    of = np.full(len(first), -1, np.int64)
    of[ids] = codes
    if np.array_equal(of[ids], codes):  # each id has one code: the ids' groups
        return ids, first
    back = np.full(k, -1, np.int64)
    back[codes] = ids
    if np.array_equal(back[codes], ids):
        return codes, _first_rows(codes, k)
    return None


__all__ = ["csv_text", "echo_csv"]
