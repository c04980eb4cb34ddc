"""CSV records on stdout (``--format csv``): the text of ``DataFrame.to_csv(index=False)``, built column by column.

pandas writes CSV one row at a time through Python's ``csv`` module (~1.5 µs a cell: 25 s for the 63,000 rows ×
143 columns of a 500-input dataset), and the terminal-escape pass (:mod:`roofline.cli.safe`) then reads all of
its text again (4 s). Here each column is factorised and only its distinct values are formatted, by pandas'
own ``to_csv`` (so numbers, missing values and quoting are written as it writes them) and escaped once each;
the rows are then joined (a row of several cells: one of a single empty cell is quoted). Escaping cell by
cell gives the text escaping all of it gives: the escapes replace single characters, and quoting adds only ``"``.

Whatever this path cannot vouch for goes the old way, whole: cells with ESC (``click.echo`` strips ANSI
sequences from text written to a non-terminal), object columns (values of several types may hash alike and
print differently: they are formatted row by row) and a cell that holds the marker that separates formatted
values.
"""

from __future__ import annotations

import os
import sys

import click
import numpy as np
import pandas as pd

from roofline.cli.safe import SafeText, raw, terminal_safe

#: ends each formatted value in the per-column ``to_csv`` (no character the CSV writer quotes)
_MARK = "\x02roofline\x03"


def echo_csv(frame: pd.DataFrame) -> None:
    """Print ``frame.to_csv(index=False)`` as ``click.echo`` does through the CLI's safe stdout."""
    out = sys.stdout
    escape = isinstance(out, SafeText)  # (then the cells are escaped here: the pass over the whole text is not needed)
    text = csv_text(frame, escape) if len(frame) and len(frame.columns) else None
    if text is None:
        click.echo(frame.to_csv(index=False), nl=False)
        return
    header = frame.iloc[:0].to_csv(index=False)
    out = raw(out)
    out.write((terminal_safe(header) if escape else header) + text)
    out.flush()


def csv_text(frame: pd.DataFrame, escape: bool = False) -> str | None:
    """The rows of ``frame.to_csv(index=False)`` without the header (terminal-escaped with ``escape``), or None
    where this path does not apply (see the module's note)."""
    if len(frame.columns) < 2:  # (a row of one empty cell is written '""')
        return None
    columns: list[np.ndarray] = []
    for j in range(len(frame.columns)):
        cells = _column(frame.iloc[:, j], escape)
        if cells is None:
            return None
        columns.append(cells)
    return os.linesep.join(map(",".join, zip(*columns))) + os.linesep


def _column(col: pd.Series, escape: bool) -> np.ndarray | None:
    """Each row's cell of ``col`` as ``to_csv`` writes it (escaped with ``escape``), an object array; or None."""
    if col.dtype == object:
        return None
    if col.dtype == np.float64:  # by bit pattern: 0.0 and -0.0 are written apart
        codes, uniq = pd.factorize(col.to_numpy().view(np.int64))
    else:
        codes, uniq = pd.factorize(col, use_na_sentinel=False)
    first = np.full(len(uniq), -1, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    values = col.iloc[first].reset_index(drop=True)
    text = pd.DataFrame({"v": values, "m": _MARK}).to_csv(index=False, header=False)
    cells = text.split("," + _MARK + os.linesep)
    if len(cells) != len(first) + 1 or cells[-1] or any("\x1b" in c for c in cells):
        return None
    return np.array([terminal_safe(c) for c in cells[:-1]] if escape else cells[:-1], dtype=object)[codes]


__all__ = ["csv_text", "echo_csv"]
