"""The batch dataset on disk: layout, explicit Arrow schemas, and reading it back.

Layout 2 (issue 36: parts per chunk of inputs, not three files per input)::

    dataset/
      _roofline_dataset.json       versions and table schemas; checked on every read and before every write
      kernels/<part>.parquet       canonical kernel rows, as ingested          key (file_id, part, row)
      roofline/<part>.parquet      peaks used + roofline columns               key (file_id, part, row)
      runs/<part>.parquet          one row per input read: hash, format, provenance   (file_id, part, gen)
      errors/<part>.parquet        one row per input that failed: type and message    (file_id, part, gen)
      <table>/compact.parquet      what compaction made of the live rows (``roofline dataset compact``)

A part holds the rows of a chunk of inputs; its name is unique (``<gen>-<writer>-<n>``). Nothing is ever
rewritten in place: an input read again gets new rows in a new part with a higher generation (``gen``, one
per batch), and the *live* row of an input is its ``runs``/``errors`` row with the highest ``(gen, part)``.
Kernel and roofline rows count only where their ``(file_id, part)`` is that live row's, so rows of an input
read again, of a part whose ``runs`` rows were never written (a kill mid-chunk), of a part moved aside, or
in a compact file whose compaction was cut short before its ``runs``/``errors`` files, are never seen. The
resume state is those two tables (a few columns per input): no file per input.

Layout 1 (one part per input and table under ``run=<run>/``, ``_state/`` markers) is still read; a batch
or ``roofline dataset compact`` upgrades it to layout 2 (:mod:`roofline.batch.compact`).
Names starting with ``.`` or ``_`` are invisible to Arrow's dataset reader: temporaries stay out of sight.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from roofline._version import __version__
from roofline.batch.files import (  # noqa: F401 - re-exported: the dataset's public names
    LOCK,
    DamagedPartError,
    DatasetError,
    DatasetGoneError,
    DatasetLock,
    _host,
    _zombie,
    atomic_write_bytes,
    check_part,
    temporary,
    writer_gone,
)
from roofline.batch.packed import decoded, packed_format, unpacked
from roofline.errors import path_text
from roofline.schema import SCHEMA_VERSION, kernel_dtypes, set_provenance

#: bump when a table's columns change meaning; readers refuse versions they do not know
DATASET_VERSION = "2"
READABLE_DATASET_VERSIONS = ("1", "2")
MANIFEST = "_roofline_dataset.json"
TABLES = ("kernels", "roofline", "runs", "errors")
#: the part name of compacted rows (one file per table; generation 0, below every batch's)
COMPACT = "compact"
#: input-level tables (one row per input) and row-level ones
INPUT_TABLES = ("runs", "errors")

_ARROW = {"string": pa.string(), "Int64": pa.int64(), "float64": pa.float64(), "boolean": pa.bool_(),
          "category": pa.string(), "int64": pa.int64(), "bool": pa.bool_(), "object": pa.string()}
_KEY_V1 = [pa.field("file_id", pa.string(), nullable=False), pa.field("run", pa.string(), nullable=False),
           pa.field("row", pa.int64(), nullable=False)]
_ID = [pa.field("file_id", pa.string(), nullable=False), pa.field("run", pa.string(), nullable=False),
       pa.field("part", pa.string(), nullable=False)]
_ROW_KEY = [*_ID, pa.field("row", pa.int64(), nullable=False)]
_INPUT_KEY = [*_ID, pa.field("gen", pa.int64(), nullable=False)]
#: bookkeeping columns of layout 2 that readers do not hand out
INTERNAL = ("part", "gen")
_PEAK_COLUMNS = [c for c in kernel_dtypes() if c.startswith("peak_")]

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


def table_dtypes(table: str) -> dict[str, str]:
    if table == "roofline":
        return ({c: kernel_dtypes()[c] for c in _PEAK_COLUMNS} | _extra_peak_dtypes()
                | _roofline_analysis_dtypes())
    return {"kernels": _kernel_table_dtypes(), "runs": RUN_COLUMNS, "errors": ERROR_COLUMNS}[table]


@functools.lru_cache(maxsize=8)
def table_schema(table: str, version: str = DATASET_VERSION) -> pa.Schema:
    """The explicit Arrow schema of one table of a layout, built once per process when first needed: a read of the
    kernels table never learns the roofline table's columns (an analysis of an empty frame, ~30-70 ms)."""
    rows, inputs = (_KEY_V1, _KEY_V1[:2]) if version == "1" else (_ROW_KEY, _INPUT_KEY)
    fields = [pa.field(c, _ARROW[d]) for c, d in table_dtypes(table).items()]
    return pa.schema((inputs if table in INPUT_TABLES else rows) + fields,
                     metadata={b"roofline.dataset_version": version.encode()})


@functools.lru_cache(maxsize=2)
def table_schemas(version: str = DATASET_VERSION) -> dict[str, pa.Schema]:
    """The explicit Arrow schema of every table of a layout (built once per process)."""
    return {t: table_schema(t, version) for t in TABLES}


def run_partition(run: str) -> str:
    """Layout 1's file-system-safe partition folder name for a run label."""
    import re

    return "run=" + (re.sub(r"[^A-Za-z0-9._-]+", "_", run).strip("._") or "_")


def part_path(root: Path, table: str, part: str) -> Path:
    return root / table / f"{part}.parquet"


# ---- the manifest --------------------------------------------------------------------------------------

def manifest_body(version: str = DATASET_VERSION) -> bytes:
    body = {"dataset_version": version, "kernel_schema_version": SCHEMA_VERSION,
            "created_by": f"roofline {__version__}",
            "tables": {t: s.remove_metadata().to_string(show_schema_metadata=False)
                       for t, s in table_schemas(version).items()}}
    return json.dumps(body, indent=2).encode()


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
        atomic_write_bytes(manifest, manifest_body())
    except OSError as exc:  # a parent that is a file, a read-only file system: the user's to fix
        raise DatasetError(f"{path_text(root)}: cannot create the dataset: {exc.strerror or exc}") from None


def check_manifest(root: Path) -> dict[str, Any]:
    manifest = root / MANIFEST
    if not manifest.is_file():
        raise DatasetError(f"{path_text(root)}: not a roofline dataset (no {MANIFEST})")
    try:
        body = json.loads(manifest.read_text())
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path_text(manifest)}: unreadable manifest: {exc}") from None
    version = body.get("dataset_version") if isinstance(body, dict) else None
    if version not in READABLE_DATASET_VERSIONS:
        raise DatasetError(f"{path_text(root)}: dataset version {version!r}; this roofline {__version__} reads "
                           f"{', '.join(READABLE_DATASET_VERSIONS)}")
    return body


def layout_version(root: Path) -> str:
    return str(check_manifest(root)["dataset_version"])


def is_dataset(path: str | Path) -> bool:
    return (Path(path) / MANIFEST).is_file()


# ---- the parts of a table ------------------------------------------------------------------------------

def part_files(root: Path, table: str, version: str = DATASET_VERSION) -> list[Path]:
    """The parts of a table, sorted, each checked to be a whole Parquet file (:class:`DamagedPartError`
    names the first that is not). Layout 2's parts lie in the table's folder, layout 1's in its ``run=*``
    folders: each layout's reader sees only its own (a layout-1 dataset being upgraded holds both)."""
    folder = root / table
    if not folder.is_dir():
        return []
    files = sorted(folder.glob("run=*/*.parquet" if version == "1" else "*.parquet"))
    files = [f for f in files if not f.name.startswith((".", "_"))]  # temporaries
    for f in files:
        check_part(f)
    return files


def _scan(root: Path, table: str, version: str, packed: bool = False) -> ds.Dataset:
    """The table's parts as one Arrow dataset. ``packed``: its text columns other than the keys read as
    dictionaries (:mod:`roofline.batch.packed`)."""
    schema = table_schema(table, version)
    fmt: str | ds.ParquetFileFormat = "parquet"
    if packed:
        schema, fmt = packed_format(schema)
    return ds.dataset(part_files(root, table, version), schema=schema, format=fmt)


def _read(root: Path, table: str, version: str, columns: Sequence[str] | None = None,
          filter_: Any = None, packed: bool = False) -> pa.Table:
    try:
        return _scan(root, table, version, packed).to_table(columns=list(columns) if columns else None,
                                                            filter=filter_)
    except (pa.ArrowInvalid, OSError) as exc:  # damaged inside (its magic bytes intact): Arrow names the file
        raise DatasetError(f"{path_text(root)}: a damaged {table} part: {exc}") from None


# ---- which rows are live ---------------------------------------------------------------------------------

_STATE_COLUMNS = ["file_id", "run", "part", "gen", "content_sha256"]
_SEP = "\x1f"  # between file_id and part in a row's key (neither holds it)


def _keys(t: pa.Table) -> pa.Array | pa.ChunkedArray:
    return pc.binary_join_element_wise(t.column("file_id"), t.column("part"), _SEP)


@dataclass
class Live:
    """Which rows of a dataset count. ``inputs``: one row per input, its live ``runs``/``errors`` row's key
    (file_id, run, part, gen), content hash, ``status`` ("ok"/"failed") and ``error_kind``. ``stale``: the keys
    (file_id, part) of every other row of those two tables, ``failed``: of the live failed ones, and
    ``uncompacted``: ``(file_id, "compact")`` of the inputs live in a part while inputs are live in the compact
    files too. A kernels or roofline row counts when its part holds live ``runs`` rows (``ok_parts``, pushed
    into the scan) and its key is none of these (few, checked on each batch in order): every key but the live
    one a row can have, as a batch's part holds ``runs``/``errors`` rows of all its inputs, and a compaction
    writes the row tables' compact files before the input tables' (one cut short between the two leaves rows
    of inputs live in parts in the compact files, see :mod:`roofline.batch.compact`)."""

    version: str
    inputs: pa.Table
    stale: pa.Array
    failed: pa.Array
    uncompacted: pa.Array

    @functools.cached_property
    def _not_live(self) -> pa.Array:
        return pa.concat_arrays([self.stale, self.failed, self.uncompacted])

    @property
    def ok(self) -> pa.Table:
        return self.inputs.filter(pc.equal(self.inputs.column("status"), "ok"))

    def scan_filter(self) -> Any:
        """What the scan of a row table may skip: parts (layout 1: inputs) with no live ``runs`` row."""
        if self.version == "1":
            return isin("file_id", self.ok.column("file_id"))
        return isin("part", pc.unique(self.ok.column("part")))

    def rows(self, t: pa.Table) -> pa.Table:
        """The rows of a kernels/roofline batch that count (order kept), the scan filter already applied."""
        if self.version == "1" or t.num_rows == 0:
            return t
        return _drop_keys(t, self._not_live)

    def input_rows(self, t: pa.Table) -> pa.Table:
        """The rows of a runs/errors table that are live (order kept)."""
        if self.version == "1" or t.num_rows == 0:
            return t
        return _drop_keys(t, self.stale)


def _drop_keys(t: pa.Table, drop: pa.Array) -> pa.Table:
    """``t`` without the rows whose (file_id, part) key is in ``drop``. The keys are joined only for rows whose
    file_id is among the dropped ones: usually none or few (the failed inputs of a compacted dataset have no
    kernel rows; an input read again has its live rows among them), and joining a key per row was a fifth of
    ``open_dataset``."""
    if len(drop) == 0:
        return t
    fids = pc.list_element(pc.split_pattern(drop, _SEP, max_splits=1), 0)
    maybe = pc.indices_nonzero(pc.is_in(t.column("file_id"), value_set=pc.unique(fids)).combine_chunks())
    if len(maybe) == 0:
        return t
    gone = maybe.filter(pc.is_in(_keys(t.select(["file_id", "part"]).take(maybe)), value_set=drop))
    if len(gone) == 0:
        return t
    keep = np.ones(t.num_rows, dtype=bool)
    keep[gone.to_numpy()] = False
    return t.filter(pa.array(keep))


def live_state(root: Path, runs: Sequence[str] | None = None, version: str | None = None) -> Live:
    """The :class:`Live` rows of a dataset (of these run labels): read from the ``runs`` and ``errors`` tables'
    key columns, the newest row of each input winning."""
    version = version or layout_version(root)
    only = isin("run", list(runs)) if runs is not None else None
    cols = _STATE_COLUMNS if version != "1" else ["file_id", "run", "content_sha256"]
    ok = _read(root, "runs", version, cols, only)
    bad = _read(root, "errors", version, [*cols, "error_kind"], only)
    if version == "1":  # one part per input, replaced in place: every row is live
        ok, bad = (t.append_column("part", pa.array([""] * t.num_rows, pa.string()))
                   .append_column("gen", pa.array([0] * t.num_rows, pa.int64())) for t in (ok, bad))
    ok = ok.append_column("status", pa.array(["ok"] * ok.num_rows, pa.string())) \
        .append_column("error_kind", pa.nulls(ok.num_rows, pa.string()))
    bad = bad.append_column("status", pa.array(["failed"] * bad.num_rows, pa.string()))
    names = [*_STATE_COLUMNS, "status", "error_kind"]
    both = pa.concat_tables([ok.select(names), bad.select(names)])
    empty = pa.array([], pa.string())
    if both.num_rows == 0:
        return Live(version, both, empty, empty, empty)
    # the newest row per input: sorted by (file_id, gen desc, part desc), the first of each file_id
    both = both.take(pc.sort_indices(both, [("file_id", "ascending"), ("gen", "descending"),
                                            ("part", "descending")]))
    fid = both.column("file_id").combine_chunks()
    first = pc.not_equal(fid[1:], fid[:-1]) if len(fid) > 1 else pa.array([], pa.bool_())
    keep = pa.concat_arrays([pa.array([True]), first.cast(pa.bool_())])
    live = both.filter(keep)
    if version == "1":
        return Live(version, live, empty, empty, empty)
    stale = _keys(both.filter(pc.invert(keep))).combine_chunks()
    failed = live.filter(pc.equal(live.column("status"), "failed"))
    return Live(version, live, stale, _keys(failed).combine_chunks(), _uncompacted(live))


def _uncompacted(live: pa.Table) -> pa.Array:
    """``(file_id, "compact")`` of the inputs live outside the compact files: rows of theirs there are left by a
    compaction cut short (they are not its ``runs``/``errors`` rows'). None when the compact files are not
    read (no input live in them: the scan filter skips them already)."""
    parts = live.column("part")
    ok_in_compact = pc.and_(pc.equal(parts, COMPACT), pc.equal(live.column("status"), "ok"))
    if not pc.any(ok_in_compact).as_py():
        return pa.array([], pa.string())
    elsewhere = live.column("file_id").filter(pc.not_equal(parts, COMPACT))
    return pc.binary_join_element_wise(elsewhere, pa.scalar(COMPACT), _SEP).combine_chunks()


def live_inputs(root: Path, runs: Sequence[str] | None = None, version: str | None = None) -> pa.Table:
    """One row per input: its live ``runs``/``errors`` row's key (file_id, run, part, gen), its content hash,
    ``status`` ("ok"/"failed") and ``error_kind`` (null when ok). What resume and every reader start from."""
    return live_state(root, runs, version).inputs


def next_generation(root: Path) -> int:
    """The generation of the next batch's rows: above every row written so far (compacted rows are 0)."""
    if layout_version(root) == "1":
        return 1
    gens = [_read(root, t, "2", ["gen"]).column("gen") for t in INPUT_TABLES]
    top = max((pc.max(g).as_py() or 0 for g in gens if len(g)), default=0)
    return int(top) + 1


def _pandas(table: pa.Table, dtypes: dict[str, str]) -> pd.DataFrame:
    """The frame of a table read back: each column of ``dtypes`` in its dtype, built from Arrow once (no
    numpy intermediate and ``astype`` after it: an Int64 column with nulls went through float64). Dictionary
    columns (a packed read) are decoded here, straight to the large strings pandas' Arrow strings hold."""
    # Arrow-backed strings: no Python object per cell, so millions of kernel rows fit in memory
    text = pd.StringDtype("pyarrow")
    nullable = {pa.string(): text, pa.large_string(): text, pa.int64(): pd.Int64Dtype(), pa.bool_(): pd.BooleanDtype()}
    plain = [c for c in table.column_names if dtypes.get(c) in (None, "int64", "bool", "object")
             and table.schema.field(c).type in (pa.int64(), pa.bool_())]  # (the row key: numpy int64)
    rest = decoded(table.drop_columns(plain))
    frame = rest.to_pandas(types_mapper=nullable.get, split_blocks=True)
    del rest
    for c in plain:
        frame.insert(table.column_names.index(c), c, table.column(c).to_numpy())
    todo = {c: d for c, d in dtypes.items() if c in frame.columns and d not in ("string", "category", "object")
            and str(frame[c].dtype) != d}
    return frame.astype(todo) if todo else frame


def _is_sorted(t: pa.Table, keys: list[str]) -> bool:
    """Whether ``t``'s rows are already in ascending order of ``keys`` (no nulls among them): then the sort's
    take, a copy of every column, can be skipped (a compacted dataset is written in this order)."""
    n = t.num_rows
    if n < 2:
        return True
    if any(t.column(k).null_count for k in keys):
        return False
    ok: Any = None
    for k in reversed(keys):  # row i ≤ row i+1 when its key is less, or equal and the later keys are in order
        col = t.column(k)
        a, b = col.slice(0, n - 1), col.slice(1)
        ok = pc.less_equal(a, b) if ok is None else pc.or_(pc.less(a, b), pc.and_(pc.equal(a, b), ok))
    return bool(pc.all(ok).as_py())


def _sorted(t: pa.Table, keys: list[str]) -> pa.Table:
    """``t`` in ascending order of ``keys``; those of a packed read are compared decoded (Arrow sorts no
    dictionary column), and its other columns are taken as dictionaries: a copy of indices, not of texts."""
    by = unpacked(t.select(keys))
    if _is_sorted(by, keys):
        return t
    return t.take(pc.sort_indices(by, [(k, "ascending") for k in keys]))


def open_dataset(path: str | Path, table: str = "roofline", engine: str = "pandas",
                 runs: list[str] | None = None, columns: Sequence[str] | None = None,
                 filter: Any = None) -> pd.DataFrame | pa.Table:
    """Read a batch dataset back.

    ``table``: ``"roofline"`` (kernel rows with the peaks used and every roofline column: what
    :func:`roofline.analyze` gives for the inputs), ``"kernels"`` (as ingested), ``"runs"`` (one row
    per input read) or ``"errors"`` (one row per input that failed). Only live rows are read: an input's
    latest reading, and no rows of an input whose ``runs`` row was never written (a batch killed while
    writing it). ``engine="pyarrow"`` returns an Arrow table. Pandas frames carry the inputs' provenance
    in ``attrs`` as ``roofline.read`` does.

    Pushed into the Parquet scan: ``runs`` (only these run labels), ``columns`` (only these columns;
    the key columns ``file_id``, ``run`` and, for row tables, ``row`` are always there) and ``filter``
    (a ``pyarrow.dataset`` expression on the table's columns, e.g. ``ds.field("kernel_name") == "gemm"``).
    A damaged part is a :class:`DamagedPartError` naming it.
    """
    root = Path(path)
    version = layout_version(root)
    if table not in TABLES:
        raise DatasetError(f"{path_text(root)}: no table {table!r}; tables are {', '.join(TABLES)}")
    live = live_state(root, runs, version)
    # a frame of kernel rows reads its texts as dictionaries and decodes each column once, in _pandas: the
    # Parquet decode, the sort and the live-row filter then move indices, not ~3 KB of text a row (a filter
    # may call string functions Arrow has no dictionary kernel for: it reads plain strings)
    packed = engine == "pandas" and table not in INPUT_TABLES and filter is None
    out = live_table(root, table, live, runs, columns, filter, packed=packed)
    if table in INPUT_TABLES:
        out = out.sort_by([("source_file", "ascending")]) if "source_file" in out.column_names else out
    else:
        out = _sorted(out, [k for k in ("run", "source_file", "file_id", "row") if k in out.column_names])
    out = out.drop_columns([c for c in INTERNAL if c in out.column_names])
    if engine == "pyarrow":  # (joins and sorts drop the schema's metadata: it says the layout read)
        return out.replace_schema_metadata(table_schema(table, version).metadata)
    dtypes = _kernel_table_dtypes() | (table_dtypes("roofline") if table == "roofline" else {}) \
        if table not in INPUT_TABLES else table_dtypes(table)
    if table in INPUT_TABLES:
        return _pandas(out, dtypes)
    front = [c for c in kernel_dtypes() if c in out.column_names]  # (ordered in Arrow: no pandas copy)
    frame = _pandas(out.select(front + [c for c in out.column_names if c not in front]), dtypes)
    del out
    if packed:  # the scan's buffers, freed: Arrow's pool keeps their pages unless told (~130 MB per 1,000 inputs)
        pa.default_memory_pool().release_unused()
    return set_provenance(frame, provenance(root, live))


def _with_keys(columns: Sequence[str] | None, table: str, version: str) -> list[str] | None:
    if columns is None:
        return None
    keys = ["file_id", "run"] + (["part"] if version != "1" else []) + (["row"] if table not in INPUT_TABLES else [])
    schema = table_schema(table, version)
    unknown = [c for c in columns if c not in schema.names]
    if unknown:
        raise DatasetError(f"no columns {unknown} in the {table} table")
    return keys + [c for c in columns if c not in keys]


def isin(column: str, values: Any) -> Any:
    """``column`` in ``values`` as a scan filter, the set typed as text: an empty one (no chunks, ``[]``) reaches
    Arrow typed null, which fails to bind ("string vs null"): a dataset of failed inputs only could not open."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    return ds.field(column).isin(values.cast(pa.string()) if isinstance(values, pa.Array)
                                 else pa.array(values, pa.string()))


def _and(*exprs: Any) -> Any:
    given = [e for e in exprs if e is not None]
    out = given[0] if given else None
    for e in given[1:]:
        out = out & e
    return out


def live_table(root: Path, table: str, live: Live, runs: Sequence[str] | None = None,
               columns: Sequence[str] | None = None, filter_: Any = None, packed: bool = False) -> pa.Table:
    """The live rows of one table (the roofline table joined to its kernels), columns and filter pushed down.
    ``packed`` (row tables): text columns but the keys as dictionaries (:mod:`roofline.batch.packed`)."""
    version = live.version
    by_run = isin("run", list(runs)) if runs is not None else None
    if table in INPUT_TABLES:
        got = _read(root, table, version, _with_keys(columns, table, version), _and(by_run, filter_))
        return live.input_rows(got)
    if table == "kernels":
        return row_table(root, "kernels", live, _with_keys(columns, "kernels", version), _and(by_run, filter_),
                         packed)
    roof_cols = table_schema("roofline", version).names
    # the kernels table's peak columns are not read: the roofline table's (the roofs used) replace them
    kcols = [c for c in (table_schema("kernels", version).names if columns is None else columns)
             if c not in roof_cols]
    rcols = None if columns is None else [c for c in columns if c in roof_cols]
    kernels = row_table(root, "kernels", live, _with_keys(kcols, "kernels", version), by_run, packed)
    kernels = kernels.drop_columns([c for c in _PEAK_COLUMNS if c in kernels.column_names])
    roof = row_table(root, "roofline", live, _with_keys(rcols, "roofline", version), by_run, packed)
    keys = ["file_id", "row"] + (["part"] if version != "1" else [])
    roof = roof.drop_columns([c for c in roof.column_names if c in kernels.column_names and c not in keys])
    joined = _side_by_side(kernels, roof, keys)
    # a filter may name roofline columns (bound, pct_of_roof): applied to the joined rows
    return joined if filter_ is None else joined.filter(filter_)


def _side_by_side(kernels: pa.Table, roof: pa.Table, keys: list[str]) -> pa.Table:
    """The roofline columns beside their kernel rows. A part's two tables hold the same rows in the same order
    (written from one chunk; compacted both in one sort order) and are filtered alike: placed side by side
    when their keys agree row by row (checked), joined on the keys otherwise."""
    if kernels.num_rows == roof.num_rows and all(kernels.column(k).equals(roof.column(k)) for k in keys):
        out = kernels
        for name in roof.column_names:
            if name not in keys:
                out = out.append_column(roof.schema.field(name), roof.column(name))
        return out
    # (Arrow's join carries no dictionary column: rows that need it are decoded)
    return unpacked(kernels).join(unpacked(roof), keys=keys, join_type="inner")


def row_table(root: Path, table: str, live: Live, columns: list[str] | None, where: Any,
              packed: bool = False) -> pa.Table:
    """The live rows of the kernels or roofline table (the part filter prunes whole files: a part's column
    statistics hold its one name); ``packed``: see :func:`live_table`."""
    return live.rows(_read(root, table, live.version, columns, _and(live.scan_filter(), where), packed))


def provenance(root: Path, live: Live) -> list[dict[str, Any]]:
    """The provenance records of the live inputs, in source_file order (from their ``runs`` rows)."""
    ok = live.ok
    runs_t = live.input_rows(_read(root, "runs", live.version,
                                   _with_keys(["source_file", "provenance_json"], "runs", live.version),
                                   isin("file_id", ok.column("file_id"))))
    texts = runs_t.sort_by("source_file").column("provenance_json").to_pylist()
    return [rec for t in texts if t for rec in json.loads(t)]


def iter_live(path: str | Path, table: str = "kernels", columns: Sequence[str] | None = None,
              filter: Any = None, runs: Sequence[str] | None = None,
              batch_rows: int = 1 << 17, live: Live | None = None) -> Iterator[pa.Table]:
    """The live rows of a row table (``kernels`` or ``roofline``) in record batches of at most ``batch_rows``,
    in file order, columns and filter pushed into the scan: memory is one batch, whatever the dataset's size
    (the key columns are included, as in :func:`open_dataset`; no sorting).

    Read one row group at a time on this thread: a dataset scanner reads ahead (up to 16 batches per file and 4
    files), which on a dataset larger than memory is all of it (the streamed summary's peak grew ~0.55 MB per
    input). Arrow's buffers come from jemalloc where the build has it: with mimalloc the RSS kept the pages of
    every batch read while the bytes allocated stayed one batch's."""
    root = Path(path)
    if table not in ("kernels", "roofline"):
        raise DatasetError(f"iter_live reads kernels or roofline, not {table!r}")
    live = live or live_state(root, runs)
    by_run = isin("run", list(runs)) if runs is not None else None
    scan = _scan(root, table, live.version)
    cols = _with_keys(None if columns is None else list(columns), table, live.version)
    keep = _and(live.scan_filter(), by_run, filter)
    pool = _batch_pool()
    try:
        for fragment in scan.get_fragments(filter=keep):
            for group in fragment.split_by_row_group(filter=keep, schema=scan.schema):
                for batch in group.to_batches(schema=scan.schema, columns=cols, filter=keep, batch_size=batch_rows,
                                              use_threads=False, memory_pool=pool):
                    rows = live.rows(pa.Table.from_batches([batch])) if batch.num_rows else None
                    del batch  # one batch alive at a time
                    if rows is not None and rows.num_rows:
                        yield rows
                    del rows
    except (pa.ArrowInvalid, OSError) as exc:  # damaged inside: Arrow names the file
        raise DatasetError(f"{path_text(root)}: a damaged {table} part: {exc}") from None


def _batch_pool() -> pa.MemoryPool:
    try:
        return pa.jemalloc_memory_pool()
    except (NotImplementedError, pa.ArrowNotImplementedError):  # (a build without it)
        return pa.default_memory_pool()
