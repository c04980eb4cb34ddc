"""The batch dataset on disk: layout, explicit Arrow schemas, atomic writes, and reading it back.

Layout (one Parquet file per input file and table, named by the input's id, so a re-run or a
second worker writing the same input replaces a file instead of adding a duplicate)::

    dataset/
      _roofline_dataset.json          versions and table schemas; checked on every read
      kernels/run=<run>/<file_id>.parquet    canonical kernel rows, as ingested
      roofline/run=<run>/<file_id>.parquet   peaks used + roofline columns, keyed by (file_id, row)
      runs/run=<run>/<file_id>.parquet       one row per input that was read: hash, format, provenance
      errors/run=<run>/<file_id>.parquet     one row per input that failed: type and message
      _state/<ab>/<file_id>                   "<sha256> ok|failed": what a re-run may skip

An input's ``runs`` (or ``errors``) row is written after its data, so a reader that keeps only
kernels whose ``file_id`` has a ``runs`` row never sees half an input, even after a SIGKILL.
Names starting with ``.`` or ``_`` are invisible to Arrow's dataset reader: temporary files use
that to stay out of sight until they are renamed into place.
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from roofline._version import __version__
from roofline.errors import RooflineError, path_text
from roofline.schema import SCHEMA_VERSION, kernel_dtypes, set_provenance

#: bump when a table's columns change meaning; readers refuse versions they do not know
DATASET_VERSION = "1"
READABLE_DATASET_VERSIONS = ("1",)
MANIFEST = "_roofline_dataset.json"
TABLES = ("kernels", "roofline", "runs", "errors")


class DatasetError(RooflineError):
    """A folder that is not a roofline dataset, or one written by an incompatible version."""


_ARROW = {"string": pa.string(), "Int64": pa.int64(), "float64": pa.float64(), "boolean": pa.bool_(),
          "category": pa.string(), "int64": pa.int64(), "bool": pa.bool_(), "object": pa.string()}
_KEY = [pa.field("file_id", pa.string(), nullable=False), pa.field("run", pa.string(), nullable=False),
        pa.field("row", pa.int64(), nullable=False)]
_PEAK_COLUMNS = [c for c in kernel_dtypes() if c.startswith("peak_")]


def _extra_dtypes() -> dict[str, str]:
    """Format-specific columns kept typed beside the canonical ones (AMD: MFMA per type, LDS, dispatch and
    agent ids; null on other rows); the peak ones go to the roofline table with the roofs used."""
    from roofline.ingest.amd.rocprof_compute import EXTRA_DTYPES

    return EXTRA_DTYPES


def _kernel_table_dtypes() -> dict[str, str]:
    return kernel_dtypes() | {c: d for c, d in _extra_dtypes().items() if not c.startswith("peak_")}


def _extra_peak_dtypes() -> dict[str, str]:
    return {c: d for c, d in _extra_dtypes().items() if c.startswith("peak_")}


@functools.lru_cache(maxsize=1)
def _roofline_analysis_dtypes() -> dict[str, str]:
    """The columns :func:`roofline.analyze` adds with the batch's settings (all levels, one clock)."""
    from roofline.analysis import analyze
    from roofline.analysis.hierarchy import level_columns
    from roofline.hardware.peaks import OPTIONAL_LEVELS
    from roofline.schema import empty_kernels_frame

    empty = analyze(empty_kernels_frame())
    canonical = kernel_dtypes()
    out = {c: str(empty[c].dtype) for c in empty.columns if c not in canonical}
    # optional levels (AMD LDS): analysed where a format records them, null on the other rows
    return out | {c: "float64" for lv in OPTIONAL_LEVELS for c in level_columns(lv)}


def _schema_of(dtypes: dict[str, str], key: list[pa.Field]) -> pa.Schema:
    return pa.schema(key + [pa.field(c, _ARROW[d]) for c, d in dtypes.items()],
                     metadata={b"roofline.dataset_version": DATASET_VERSION.encode()})


def table_schemas() -> dict[str, pa.Schema]:
    """The explicit Arrow schema of every table (built once per process)."""
    global _SCHEMAS
    if _SCHEMAS is None:
        roof = table_dtypes("roofline")
        file_key = [f for f in _KEY if f.name != "row"]
        _SCHEMAS = {
            "kernels": _schema_of(_kernel_table_dtypes(), _KEY),
            "roofline": _schema_of(roof, _KEY),
            "runs": _schema_of(RUN_COLUMNS, file_key),
            "errors": _schema_of(ERROR_COLUMNS, file_key),
        }
    return _SCHEMAS


_SCHEMAS: dict[str, pa.Schema] | None = None

RUN_COLUMNS: dict[str, str] = {
    "source_file": "string",  # absolute path, as the batch saw it
    "content_sha256": "string",
    "size_bytes": "Int64",
    "format": "string",
    "kernels": "Int64",
    "device_names": "string",  # ';'-joined, as recorded in the profile
    "peaks": "string",  # the --peaks choice the roofline table was computed with
    "provenance_json": "string",  # the reader's provenance record(s), without wall-clock fields
    "roofline_version": "string",
}
ERROR_COLUMNS: dict[str, str] = {
    "source_file": "string",
    "content_sha256": "string",
    "size_bytes": "Int64",
    "format": "string",  # what the content looked like ("unknown" when nothing matched)
    "error_type": "string",  # the exception class, e.g. CorruptReportError
    "error_kind": "string",  # roofline's short kind for input errors, e.g. "corrupt"
    "message": "string",
}


def run_partition(run: str) -> str:
    """A file-system-safe partition folder name for a run label."""
    return "run=" + (re.sub(r"[^A-Za-z0-9._-]+", "_", run).strip("._") or "_")


def part_path(root: Path, table: str, run: str, file_id: str) -> Path:
    return root / table / run_partition(run) / f"{file_id}.parquet"


def state_path(root: Path, file_id: str) -> Path:
    return root / "_state" / file_id[:2] / file_id


def init_dataset(root: Path) -> None:
    """Create the folder and its manifest, or check that an existing one is compatible."""
    if root.exists() and not root.is_dir():
        raise DatasetError(f"{path_text(root)}: exists and is not a folder; --out takes a dataset folder")
    manifest = root / MANIFEST
    if manifest.exists():
        check_manifest(root)
        return
    try:
        if root.exists() and any(root.iterdir()):
            raise DatasetError(f"{path_text(root)}: exists, is not empty and is not a roofline dataset (no {MANIFEST})")
        root.mkdir(parents=True, exist_ok=True)
        body = {"dataset_version": DATASET_VERSION, "kernel_schema_version": SCHEMA_VERSION,
                "created_by": f"roofline {__version__}",
                "tables": {t: s.remove_metadata().to_string(show_schema_metadata=False)
                           for t, s in table_schemas().items()}}
        atomic_write_bytes(manifest, json.dumps(body, indent=2).encode())
    except OSError as exc:  # a parent that is a file, a read-only file system: the user's to fix
        raise DatasetError(f"{path_text(root)}: cannot create the dataset: {exc.strerror or exc}") from None


LOCK = "_roofline.lock"


class DatasetLock:
    """One writer per dataset: an exclusive ``flock`` on ``<dataset>/_roofline.lock``, held for a batch.

    The kernel drops the lock when its holder dies (even by SIGKILL), so a killed batch never leaves
    the dataset locked. ``flock`` is per host on some network file systems: two hosts writing one
    dataset are not excluded there.
    """

    def __init__(self, root: Path) -> None:
        import fcntl

        self.path = root / LOCK
        try:
            self.fh = open(self.path, "a+")  # noqa: SIM115 - held open for the batch
        except OSError as exc:  # a read-only dataset, a folder where the lock file goes
            raise DatasetError(f"{path_text(self.path)}: cannot open the dataset's lock file: "
                               f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.fh.seek(0)
            holder = self.fh.read().strip() or "another process"
            self.fh.close()
            raise DatasetError(f"{path_text(root)}: another batch is writing this dataset ({holder}); wait for it to "
                               "finish or give another --out") from None
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        self.fh.flush()

    def release(self) -> None:
        import fcntl

        if not self.fh.closed:
            self.fh.truncate(0)  # no holder any more (and equal datasets stay byte-identical)
            fcntl.flock(self.fh, fcntl.LOCK_UN)
            self.fh.close()

    def __enter__(self) -> DatasetLock:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


def check_manifest(root: Path) -> dict[str, Any]:
    manifest = root / MANIFEST
    if not manifest.is_file():
        raise DatasetError(f"{root}: not a roofline dataset (no {MANIFEST})")
    try:
        body = json.loads(manifest.read_text())
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{manifest}: unreadable manifest: {exc}") from None
    version = body.get("dataset_version") if isinstance(body, dict) else None
    if version not in READABLE_DATASET_VERSIONS:
        raise DatasetError(f"{root}: dataset version {version!r}; this roofline {__version__} reads "
                           f"{', '.join(READABLE_DATASET_VERSIONS)}")
    return body


def is_dataset(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).is_file()


def temporary(path: Path) -> Path:
    """The temporary file a writer fills before renaming it to ``path``: hidden from Arrow (leading
    '.'), and naming its writer (host, pid) so a later batch removes it only once the writer is gone."""
    return path.with_name(f".{path.name}.{_host()}.{os.getpid()}.tmp")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def writer_gone(tmp: Path, stale_s: float = 24 * 3600) -> bool:
    """Whether the writer of a temporary file is gone: its pid is dead on this host; on another
    host (a Dask worker), the file has not changed for ``stale_s``."""
    parts = tmp.name.rsplit(".", 3)  # .<name>.<host>.<pid>.tmp
    if len(parts) == 4 and parts[3] == "tmp" and parts[2].isdigit():
        host, pid = parts[1], int(parts[2])
        if host == _host():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                return False  # alive, someone else's
            return _zombie(pid)  # killed but not yet reaped (its parent died with it): gone all the same
    try:
        return time.time() - tmp.stat().st_mtime > stale_s
    except OSError:
        return False


def _zombie(pid: int) -> bool:
    """Whether a pid that still exists is a zombie (Linux /proc; elsewhere: assume alive)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ')'
    return stat_line.rpartition(")")[2].split()[:1] == ["Z"]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary(path)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_part(root: Path, table: str, run: str, file_id: str, frame: pd.DataFrame) -> None:
    """Write one input's rows of one table, typed by the table's schema, atomically."""
    schema = table_schemas()[table]
    frame = frame.copy()
    frame["file_id"] = file_id
    frame["run"] = run
    if "row" in schema.names:
        frame["row"] = range(len(frame))
    cols = {}
    for field in schema:
        s = frame[field.name] if field.name in frame.columns else pd.Series([None] * len(frame), dtype="object")
        if isinstance(s.dtype, pd.CategoricalDtype):
            s = s.astype("string")
        cols[field.name] = pa.array(s, type=field.type, from_pandas=True)
    table_ = pa.Table.from_pydict(cols, schema=schema)
    path = part_path(root, table, run, file_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary(path)
    try:
        pq.write_table(table_, tmp)
        os.replace(tmp, path)
    finally:  # a failed write leaves nothing behind
        tmp.unlink(missing_ok=True)


def remove_parts(root: Path, run: str, file_id: str, tables: tuple[str, ...] = TABLES) -> None:
    for t in tables:
        try:
            part_path(root, t, run, file_id).unlink()
        except (FileNotFoundError, NotADirectoryError):  # no part, or no partition folder: nothing to remove
            pass


def _arrow_table(root: Path, table: str, filter_: Any = None) -> pa.Table:
    folder = root / table
    schema = table_schemas()[table]
    if not folder.is_dir():
        return schema.empty_table()
    dataset = ds.dataset(folder, schema=schema, format="parquet")  # '.'/'_' names (temporaries) are skipped
    return dataset.to_table(filter=filter_)


def _pandas(table: pa.Table, dtypes: dict[str, str]) -> pd.DataFrame:
    # Arrow-backed strings: no Python object per cell, so millions of kernel rows fit in memory
    frame = table.to_pandas(types_mapper={pa.string(): pd.StringDtype("pyarrow")}.get)
    todo = {c: d for c, d in dtypes.items() if c in frame.columns and d not in ("string", "category", "object")}
    return frame.astype(todo)


def open_dataset(path: str | Path, table: str = "roofline", engine: str = "pandas",
                 runs: list[str] | None = None) -> pd.DataFrame | pa.Table:
    """Read a batch dataset back.

    ``table``: ``"roofline"`` (kernel rows with the peaks used and every roofline column: what
    :func:`roofline.analyze` gives for the inputs), ``"kernels"`` (as ingested), ``"runs"`` (one row
    per input read) or ``"errors"`` (one row per input that failed). Kernel rows of an input that
    has no ``runs`` row (a batch killed while writing it) are left out. ``engine="pyarrow"`` returns
    an Arrow table. Pandas frames carry the inputs' provenance in ``attrs`` as ``roofline.read`` does.
    ``runs``: only these run labels (the other partitions are not read). The table is loaded whole:
    reading peaks at about 6x the result's size, so select runs for datasets of millions of rows.
    """
    root = Path(path)
    check_manifest(root)
    if table not in TABLES:
        raise DatasetError(f"{root}: no table {table!r}; tables are {', '.join(TABLES)}")
    only = ds.field("run").isin(runs) if runs is not None else None
    runs_t = _arrow_table(root, "runs", only)
    if table in ("runs", "errors"):
        out = runs_t if table == "runs" else _arrow_table(root, "errors", only)
        out = out.sort_by([("source_file", "ascending")])
        if engine == "pyarrow":
            return out
        return _pandas(out, RUN_COLUMNS if table == "runs" else ERROR_COLUMNS)
    done = ds.field("file_id").isin(runs_t.column("file_id"))
    kernels = _arrow_table(root, "kernels", done)
    if table == "roofline":
        roof = _arrow_table(root, "roofline", done).drop_columns(["run"])
        kernels = kernels.drop_columns(_PEAK_COLUMNS).join(roof, keys=["file_id", "row"], join_type="inner")
    kernels = kernels.sort_by([("run", "ascending"), ("source_file", "ascending"), ("row", "ascending")])
    if engine == "pyarrow":
        return kernels
    dtypes = _kernel_table_dtypes() | (table_dtypes("roofline") if table == "roofline" else {})
    frame = _pandas(kernels, dtypes)
    front = [c for c in kernel_dtypes() if c in frame.columns]
    frame = frame[front + [c for c in frame.columns if c not in front]].reset_index(drop=True)
    provenance = [json.loads(p) for p in runs_t.sort_by("source_file").column("provenance_json").to_pylist() if p]
    return set_provenance(frame, [rec for recs in provenance for rec in recs])


def table_dtypes(table: str) -> dict[str, str]:
    if table == "roofline":
        return ({c: kernel_dtypes()[c] for c in _PEAK_COLUMNS} | _extra_peak_dtypes()
                | _roofline_analysis_dtypes())
    return {"kernels": _kernel_table_dtypes(), "runs": RUN_COLUMNS, "errors": ERROR_COLUMNS}[table]
