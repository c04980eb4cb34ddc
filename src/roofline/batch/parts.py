"""Writing a chunk of inputs as one part per table: rows buffered as Arrow, written durably in order.

A worker reads a chunk of inputs, keeps each input's rows as Arrow tables (the pandas frames are freed as
it goes), and :meth:`PartWriter.flush` writes one part per table: first ``kernels`` and ``roofline``,
fsync'ed with their folders, then ``runs`` and ``errors``, which make the inputs count (an input is live
only through its ``runs``/``errors`` row, see :mod:`roofline.batch.dataset`). A part that cannot be written
fails the inputs in it, never the batch; the dataset's manifest is checked before every write, so a dataset
folder deleted during a batch is not silently re-created (:class:`~roofline.batch.files.DatasetGoneError`).
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from roofline.batch import dataset as dset
from roofline.batch.files import DatasetGoneError, fsync_dir, new_token, write_durably
from roofline.errors import path_text

#: a chunk's buffer is written out once it holds this many kernel rows (bounds a worker's memory)
FLUSH_ROWS = 1 << 19
#: errno values that say the environment failed (full or failing disk, lost NFS handle), not the input:
#: such failures are read again on the next run without --retry-errors
ENVIRONMENT_ERRNOS = frozenset(getattr(errno, n) for n in ("ENOSPC", "EIO", "EDQUOT", "ENOMEM", "ESTALE",
                                                            "ETIMEDOUT", "ENOLCK", "EAGAIN") if hasattr(errno, n))


def environment_kind(exc: BaseException) -> str | None:
    """``"environment"`` when ``exc`` (or what caused it) is an OSError of :data:`ENVIRONMENT_ERRNOS`."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS:
            return "environment"
        if isinstance(exc, MemoryError):
            return "environment"
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
        seen += 1
    return None


def to_arrow(frame: pd.DataFrame, schema: pa.Schema, constants: dict[str, Any]) -> pa.Table:
    """One input's frame as a table of ``schema``: each column's array handed to Arrow as it is (no pandas
    Series per column: ``from_pandas`` took 11-19 ms a frame that way, this ~1 ms), constants (``file_id``,
    ``run``, ``part``...) repeated, ``row`` numbered, the rest null."""
    n = len(frame)
    columns = _column_arrays(frame)
    arrays: list[Any] = []
    joint = _Joint() if n <= _JOINT_ROWS else None
    for field in schema:
        if field.name in constants:
            arr: Any = pa.repeat(pa.scalar(constants[field.name], field.type), n)
        elif field.name == "row" and "row" not in columns:
            arr = pa.array(np.arange(n, dtype="int64"))
        elif field.name in columns:
            values = columns[field.name]
            joined = joint is not None and joint.add(len(arrays), values, field.type)
            arr = None if joined else _arrow(values, field.type)
        else:
            arr = pa.nulls(n, field.type)
        arrays.append(arr)
    if joint is not None:
        joint.convert(arrays, n)
    return pa.Table.from_arrays(arrays, schema=schema)


#: frames up to this many rows convert their float and string columns together (:class:`_Joint`)
_JOINT_ROWS = 4096


class _Joint:
    """A small frame's float64 and Arrow string columns converted together: each column's own conversion (an
    Arrow cast, a dictionary decoded) is a fixed ~10-200 µs, ~4 ms a 1-kernel report over its ~130 columns;
    joined, the casts are one per kind and each column a slice of the result. Values as ``_arrow`` gives them:
    NaN as null, a Categorical as its categories' text (its dictionary taken), strings cast to ``string``."""

    def __init__(self) -> None:
        self.floats: list[tuple[int, np.ndarray]] = []
        self.strings: list[tuple[int, Any]] = []  # (place, Arrow strings | Categorical codes and categories)

    def add(self, at: int, values: Any, type_: pa.DataType) -> bool:
        """Whether ``values`` (a column for the field at ``at``) is taken here; else ``_arrow`` converts it."""
        if type_ == pa.float64():
            if isinstance(values, np.ndarray) and values.dtype == np.float64:
                self.floats.append((at, values))
                return True
            return False
        if type_ != pa.string():
            return False
        if isinstance(values, pd.arrays.ArrowStringArray):
            arrow = values.__arrow_array__()
            if arrow.type == pa.large_string():
                self.strings.append((at, arrow))
                return True
        elif isinstance(values, pd.Categorical):
            cats = values.categories
            if not len(cats):  # (no category: every row null, whatever the categories' dtype)
                arrow = pa.chunked_array([], pa.large_string())
            elif isinstance(cats.array, pd.arrays.ArrowStringArray):
                arrow = cats.array.__arrow_array__()
            else:
                return False
            if arrow.type == pa.large_string():
                self.strings.append((at, (np.asarray(values.codes), arrow)))
                return True
        return False

    def convert(self, arrays: list[Any], n: int) -> None:
        """Each taken column's array put at its place."""
        if self.floats:
            joined = pa.array(np.concatenate([v for _, v in self.floats]), type=pa.float64(), from_pandas=True)
            for i, (at, _) in enumerate(self.floats):
                arrays[at] = joined.slice(i * n, n)
        if not self.strings:
            return
        coded = [v for _, v in self.strings if isinstance(v, tuple)]
        taken = None
        if coded:  # every Categorical's codes into the joined categories (-1: null), one take
            offsets = np.cumsum([0] + [len(cats) for _, cats in coded[:-1]])
            codes = np.concatenate([c.astype(np.int64) + np.where(c < 0, 0, off)
                                    for (c, _), off in zip(coded, offsets)])
            chunks = [ch for _, cats in coded for ch in cats.chunks]
            taken = (pa.concat_arrays(chunks).take(pa.array(np.where(codes < 0, 0, codes), mask=codes < 0))
                     if any(len(ch) for ch in chunks) else pa.nulls(len(codes), pa.large_string()))
        pieces, k = [], 0
        for _, v in self.strings:
            if isinstance(v, tuple):
                pieces.append(taken.slice(k * n, n))  # type: ignore[union-attr]
                k += 1
            else:
                pieces.extend(v.chunks)
        joined = (pa.concat_arrays(pieces) if pieces else pa.array([], pa.large_string())).cast(pa.string())
        for i, (at, _) in enumerate(self.strings):
            arrays[at] = joined.slice(i * n, n)


def record_to_arrow(record: dict[str, Any], schema: pa.Schema, constants: dict[str, Any]) -> pa.Table:
    """One ``runs``/``errors`` row as a table of ``schema``: built from the values (a third of the time of
    a one-row frame); a value Arrow will not take this way goes the frame's way (its error, if any)."""
    try:
        return pa.Table.from_pylist([record | constants], schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return to_arrow(pd.DataFrame([record]), schema, constants)


def _column_arrays(frame: pd.DataFrame) -> dict[str, Any]:
    """Each column's array (numpy or pandas extension array), without a Series per column where pandas lets
    us (``_get_column_array``; else the public per-column access). The first of duplicate names wins."""
    get = getattr(frame, "_get_column_array", None)
    out: dict[str, Any] = {}
    for i, name in enumerate(frame.columns):
        if name not in out:
            out[name] = get(i) if get is not None else frame.iloc[:, i].array
    return out


def _arrow(values: Any, type_: pa.DataType) -> pa.Array:
    if isinstance(values, pd.Categorical):  # (as its text: Arrow's dictionary cast keeps nulls null)
        return pa.array(values, from_pandas=True).cast(type_)
    try:
        arr = pa.array(values, type=type_, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        arr = pa.array(values, from_pandas=True)  # (a string column of Arrow's large strings, an odd object column)
    return arr if arr.type == type_ else arr.cast(type_)


class PartWriter:
    """The rows of the inputs a worker has read since its last flush, and the summaries they will settle.

    ``add_ok``/``add_error`` take one input (its conversion to the tables' schemas may raise: the input then
    fails, the others do not); :meth:`flush` writes them as one part per table and updates the summaries of
    inputs whose rows could not be written to ``failed``."""

    def __init__(self, root: Path, gen: int, flush_rows: int = FLUSH_ROWS) -> None:
        self.root, self.gen, self.flush_rows = root, gen, flush_rows
        self.schemas = dset.table_schemas()
        self.token = new_token()
        self.seq = 0
        self._clear()

    def _clear(self) -> None:
        self.tables: dict[str, list[pa.Table]] = {t: [] for t in dset.TABLES}
        self.pending: list[tuple[dict[str, Any], dict[str, Any] | None]] = []  # (summary, runs record if ok)
        self.rows = 0
        self.part = f"{self.gen:06d}-{self.token}-{self.seq:05d}"

    @property
    def full(self) -> bool:
        return self.rows >= self.flush_rows

    def add_ok(self, fid: str, run: str, kernels: pd.DataFrame, result: pd.DataFrame, record: dict[str, Any],
               summary: dict[str, Any]) -> None:
        key = {"file_id": fid, "run": run, "part": self.part}
        k = to_arrow(kernels, self.schemas["kernels"], key)
        r = to_arrow(result, self.schemas["roofline"], key)
        runs = record_to_arrow(record, self.schemas["runs"], key | {"gen": self.gen})
        self.tables["kernels"].append(k)
        self.tables["roofline"].append(r)
        self.tables["runs"].append(runs)
        self.pending.append((summary, record))
        self.rows += k.num_rows

    def add_error(self, fid: str, run: str, record: dict[str, Any], summary: dict[str, Any] | None = None) -> None:
        key = {"file_id": fid, "run": run, "part": self.part, "gen": self.gen}
        self.tables["errors"].append(record_to_arrow(record, self.schemas["errors"], key))
        if summary is not None:
            self.pending.append((summary, None))

    def _write(self, tables: tuple[str, ...]) -> None:
        if not (self.root / dset.MANIFEST).is_file():
            raise DatasetGoneError(f"{path_text(self.root)}: the dataset folder (its {dset.MANIFEST}) is gone; "
                                   "the batch stops rather than re-create it without its manifest")
        written = []
        for t in tables:
            if not self.tables[t]:
                continue
            table = pa.concat_tables(self.tables[t])
            folder = self.root / t
            folder.mkdir(exist_ok=True)  # (not parents=True: the dataset folder itself is never re-created)
            write_durably(dset.part_path(self.root, t, self.part), lambda fh, tb=table: pq.write_table(tb, fh),
                          sync_dir=False)
            written.append(folder)
        for folder in written:  # the renames are durable before anything refers to these parts
            fsync_dir(folder)

    def flush(self) -> None:
        """Write the buffered rows as one part per table: data first, then the rows that make the inputs count."""
        if not self.pending and not any(self.tables.values()):
            return
        try:
            try:
                self._write(("kernels", "roofline"))
            except DatasetGoneError:
                raise
            except OSError as exc:  # the inputs read fine; their rows could not be written: each fails
                self._data_failed(exc)
            try:
                self._write(("runs", "errors"))
            except DatasetGoneError:
                raise
            except OSError as exc:  # not even their runs/errors rows: no row at all, so the next run reads them
                for summary, _ in self.pending:
                    summary["status"] = "failed"
                    summary["error"] = (summary.get("error") or f"{summary['path']}: not written") + \
                        f" (and its row could not be written: {path_text(str(exc))})"
        finally:
            self.seq += 1
            self._clear()

    def _data_failed(self, exc: OSError) -> None:
        kind = environment_kind(exc) or "write-error"
        text = path_text(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
        self.tables["kernels"], self.tables["roofline"], self.tables["runs"] = [], [], []
        for summary, record in self.pending:
            if record is None:
                continue
            message = f"{record['source_file']}: its rows could not be written ({kind}): {text}"
            self.add_error(summary["file_id"], summary["run"], {
                "source_file": record["source_file"], "content_sha256": record["content_sha256"],
                "size_bytes": record["size_bytes"], "format": record["format"], "error_type": type(exc).__name__,
                "error_kind": kind, "message": message})
            summary.update(status="failed", error=message, kernels=0)
