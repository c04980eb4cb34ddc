"""Nsight Systems exports (``nsys export --type sqlite``, export schemas 3.x): one row per GPU launch.

A row is a kernel launch, a memcpy or a memset, in start order. Kernel names live in ``StringIds``
(the kernel table holds ids of the demangled, short and mangled names). NVTX ranges are CPU-side:
a launch is tied to its ranges through the runtime API call that made it (same ``correlationId``
in the same process), whose thread and start time decide which push/pop and start/end ranges
enclose it. Device properties come from ``TARGET_INFO_GPU``: name, SMs, compute capability and
max clock go into the device columns (the roofs stage derives the spec table's peaks from them), the
memory bandwidth is the DRAM roof, labelled with its source. A timeline has no FLOP or cache
counters: those columns are unavailable and say how to add them (``--counters``, ``analysis/join.py``).

Profiles are untrusted: the database is opened read-only (URI ``mode=ro``, ``query_only``,
``trusted_schema`` off). Rows are fetched in chunks straight into NumPy integer arrays (no Python
object per value), and names are resolved once per distinct id, so memory grows with the frame only.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from roofline.errors import (
    CorruptReportError,
    FormatMismatchError,
    NoKernelsError,
    UnsupportedFormatError,
)
from roofline.ingest.common import gc_paused, head, open_sqlite, provenance_record, sqlite_error, sqlite_tables
from roofline.ingest.nsys import nvtx as nsys_nvtx
from roofline.ingest.nsys import ranks as nsys_ranks
from roofline.ingest.validate import as_float, as_int
from roofline.schema import UNAVAILABLE, kernel_dtypes, set_provenance, source_column

MAGIC = b"SQLite format 3\x00"
SUFFIXES = (".sqlite", ".sqlite3")
REP_SUFFIXES = (".nsys-rep", ".qdrep")
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")  # newer, older export schemas
KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
ACTIVITY_TABLES = (KERNEL_TABLE, MEMCPY_TABLE, MEMSET_TABLE)
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
#: NULL in an integer column, as fetched (SQL IFNULL): keeps every chunk one int64 array
NULL = -(2**63)
CHUNK = 65536
#: globalTid / globalPid: (vm id << 56) | (pid << 24) | tid; the process is everything above the tid
TID_BITS = 24
#: fields of a launch, in the order of every query's columns
FIELDS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "demangledName", "shortName",
          "mangledName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread",
          "staticSharedMemory", "dynamicSharedMemory", "graphId", "graphNodeId", "bytes", "copyKind",
          "memKind", "srcDeviceId", "dstDeviceId", "_rt_tid", "_rt_start", "_kind")
F = {name: i for i, name in enumerate(FIELDS)}
KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET = 0, 1, 2
#: ENUM_CUDA_MEMCPY_OPER ids (stable across 3.x; the export's own enum table labels them when present)
COPY_KINDS = {0: "unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
              8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "UVM HtoD", 12: "UVM DtoH", 13: "UVM DtoD"}
#: copies inside one GPU's memory: each byte is read and written there
ON_DEVICE_COPIES = {"DtoD", "AtoD", "DtoA", "AtoA", "UVM DtoD"}
MEMKIND_DEVICE = 2
NO_FLOPS = (f"{UNAVAILABLE}: an Nsight Systems timeline has no FLOP counters; add them from Nsight Compute "
            "with `roofline analyze TIMELINE --counters REPORT.ncu-rep`")
NO_BYTES = (f"{UNAVAILABLE}: an Nsight Systems timeline has no memory counters; add them from Nsight Compute "
            "with `roofline analyze TIMELINE --counters REPORT.ncu-rep`")
NO_L2_ROOF = f"{UNAVAILABLE}: L2 bandwidth is not published and a timeline has no L2 counters"
COPY_NOTE = "memcpy/memset: no FLOPs"
LINK = (f"{UNAVAILABLE}: {{kind}} copy over the host/peer link (PCIe/NVLink), not device memory; its bytes "
        "are in copy_bytes (no host-link roof in the schema)")


def export_command(rep: Path) -> list[str]:
    return ["nsys", "export", "--type", "sqlite", "--output", str(rep.with_suffix(".sqlite")), str(rep)]


def read(path: str | Path) -> pd.DataFrame:
    """The canonical frame of an nsys SQLite export (or of a ``.nsys-rep``, exported with ``nsys`` first)."""
    path = Path(path)
    data = head(path, 16)
    if not data.startswith(MAGIC) and path.name.lower().endswith(REP_SUFFIXES):
        return _read_rep(path)
    con, tables = _connect(path)
    # every fetched row is a tuple the cyclic GC tracks (~32,000 on the 4,010-kernel export): with it on, a
    # young-generation pass every 700 of them finds nothing to free (ints and strings only)
    try:
        with gc_paused():
            return _read(path, con, tables)
    except sqlite3.DatabaseError as exc:  # damaged pages, a table that is not what its name says, a budget
        raise sqlite_error(path, con, exc, "SQLite error while reading the nsys export") from None
    finally:
        con.close()


def _read_rep(path: Path) -> pd.DataFrame:
    """A ``.nsys-rep`` has no public format: only ``nsys export`` reads it."""
    cmd = " ".join(export_command(path))
    nsys = shutil.which("nsys")
    if nsys is None:
        raise UnsupportedFormatError(
            path, f"is an Nsight Systems report; `nsys` is not on PATH to export it: run `{cmd}` and read the .sqlite")
    with tempfile.TemporaryDirectory(prefix="roofline-nsys-") as tmp:
        out = Path(tmp) / (path.stem + ".sqlite")
        run = subprocess.run([nsys, "export", "--type", "sqlite", "--output", str(out), str(path)],
                             capture_output=True, text=True, check=False)
        if run.returncode != 0 or not out.exists():
            why = (run.stderr or run.stdout).strip().splitlines()[-1:] or [f"exit {run.returncode}"]
            raise CorruptReportError(path, f"`{cmd}` failed: {why[0]}")
        frame = read(out)
    frame["source_file"] = _const(str(path), len(frame))
    for rec in frame.attrs.get("roofline.provenance", []):
        rec.update(source_file=str(path), exported_with=f"{nsys} export --type sqlite")
    return frame


def connect(path: Path) -> sqlite3.Connection:
    """Open an export read-only; a file that is not SQLite or not an nsys export is a typed error."""
    return _connect(path)[0]


def _connect(path: Path) -> tuple[sqlite3.Connection, set[str]]:
    """:func:`connect`, and the export's tables and views (read once per export)."""
    con = open_sqlite(path)
    try:
        tables = _tables(con)
    except sqlite3.DatabaseError as exc:
        con.close()
        raise sqlite_error(path, con, exc, "not a readable SQLite database") from None
    if not any(t in tables for t in META_TABLES) and KERNEL_TABLE not in tables:
        con.close()
        raise FormatMismatchError(
            path, "is an SQLite database but not an Nsight Systems export (no META_DATA_EXPORT, EXPORT_META_DATA "
                  f"or {KERNEL_TABLE} table)")
    return con, tables


def _tables(con: sqlite3.Connection) -> set[str]:
    return sqlite_tables(con)  # tables only: a view is the file author's query (a cross join ran for ever)


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return set(_table_info(con, table))


def _table_info(con: sqlite3.Connection, table: str) -> dict[str, bool]:
    """A table's columns and whether each is declared NOT NULL (one PRAGMA per table)."""
    return {r[1]: bool(r[3]) for r in con.execute(f'PRAGMA table_info("{table}")')}


def meta(con: sqlite3.Connection, tables: set[str]) -> dict[str, str]:
    for t in META_TABLES:
        if t in tables and {"name", "value"} <= _columns(con, t):
            return {str(n): str(v) for n, v in con.execute(f'SELECT name, value FROM "{t}"')}
    return {}


def _read(path: Path, con: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    info = meta(con, tables)
    rows = _fetch(path, con, tables)
    if not len(rows):
        absent = [t for t in ACTIVITY_TABLES if t not in tables]
        raise NoKernelsError(path, "the nsys export has no kernel, memcpy or memset rows (CUDA trace off, or a "
                                   "trimmed export)" + (f"; no {', '.join(absent)} table" if absent else ""))
    rows = rows[np.argsort(rows[:, F["start"]], kind="stable")]
    try:
        nvtx = _nvtx(con, tables, rows) if "NVTX_EVENTS" in tables else None
    except (TypeError, ValueError, OverflowError) as exc:  # SQLite columns hold any type: text where ids belong
        raise CorruptReportError(path, f"NVTX_EVENTS: a thread, domain, type, start or end that is not an integer "
                                       f"({str(exc)[:200]})") from None
    gpus = _gpus(path, con, tables)  # (table, properties by device id): read once, for the columns and provenance
    frame = _frame(path, con, tables, rows, nvtx, gpus)
    rec = provenance_record(path, "nsys-sqlite", tool="nsys", tool_version=info.get("EXPORT_PRODUCT_VERSION"),
                            export_schema=info.get("EXPORT_SCHEMA_VERSION"), reader=f"sqlite3 {sqlite3.sqlite_version}",
                            kernels=int((rows[:, F["_kind"]] == KIND_KERNEL).sum()),
                            copies=int((rows[:, F["_kind"]] != KIND_KERNEL).sum()),
                            devices={str(k): v[0] for k, v in gpus[1].items()},
                            device_table=next((t for t, _ in GPU_TABLES if t in tables), None),
                            missing_tables=missing_tables(tables))
    return set_provenance(frame, [rec])


#: tables of an export besides the activity tables, and what a reading loses without them (trimmed exports)
OPTIONAL_TABLES = {
    "StringIds": "kernel names (kernel_name, kernel_short_name, mangled_name are NA)",
    RUNTIME_TABLE: "the runtime calls that made the launches (no NVTX range, no rank from NVTX; attribution: orphan)",
    "NVTX_EVENTS": "NVTX ranges (nvtx_range is NA: NVTX not traced, or trimmed away)",
    "PROCESSES": "process names (process is 'pid N')",
    "META_DATA_EXPORT or EXPORT_META_DATA": "the export schema and nsys version",
    "TARGET_INFO_GPU or TARGET_INFO_CUDA_GPU": "the device's name and properties (no roofs from the export)",
}


def missing_tables(tables: set[str]) -> dict[str, str]:
    """{table: what is lost} for the tables of :data:`OPTIONAL_TABLES` this export lacks."""
    return {t: lost for t, lost in OPTIONAL_TABLES.items() if not any(x in tables for x in t.split(" or "))}


def _select(info: dict[str, bool], table: str, fields: tuple[str, ...]) -> tuple[str, list[int]]:
    """A query of a table's columns among ``fields`` (``info``: :func:`_table_info`) and their positions in
    ``fields``. NULL becomes the sentinel (IFNULL) only in columns the schema lets be NULL: every other column
    is fetched as is, which costs about a third less per value (a crafted file breaking its own NOT NULL is
    then a typed error)."""
    exprs, pos = [], []
    for i, f in enumerate(fields):
        if f in info:
            exprs.append(f'"{f}"' if info[f] else f'IFNULL("{f}", {NULL})')
            pos.append(i)
    return f'SELECT {", ".join(exprs)} FROM "{table}"', pos


def _fetch(path: Path, con: sqlite3.Connection, tables: set[str]) -> np.ndarray:
    """Every kernel, memcpy and memset row as an (n, len(FIELDS)) int64 array, with its runtime call.

    One query per activity table with only the columns it has (no padding of NULLs through SQL): each
    chunk is placed into the full-width layout in NumPy."""
    parts = []
    for table, kind in ((KERNEL_TABLE, KIND_KERNEL), (MEMCPY_TABLE, KIND_MEMCPY), (MEMSET_TABLE, KIND_MEMSET)):
        if table not in tables:
            continue
        if not {"start", "end"} <= (have := _table_info(con, table)).keys():
            lack = " and ".join(c for c in ("start", "end") if c not in have)
            raise CorruptReportError(path, f"the nsys export's {table} table has no {lack} column")
        sql, pos = _select(have, table, FIELDS)
        for chunk in _int_chunks(path, con, sql):
            wide = np.full((len(chunk), len(FIELDS)), NULL, dtype=np.int64)
            wide[:, pos] = chunk
            wide[:, F["_kind"]] = kind
            parts.append(wide)
    if not parts:
        return np.empty((0, len(FIELDS)), dtype=np.int64)
    rows = np.concatenate(parts)
    del parts
    if RUNTIME_TABLE in tables and \
            {"correlationId", "globalTid", "start"} <= (have := _table_info(con, RUNTIME_TABLE)).keys():
        sql, _ = _select(have, RUNTIME_TABLE, ("correlationId", "globalTid", "start"))
        chunks = list(_int_chunks(path, con, sql))
        rt = np.concatenate(chunks) if chunks else np.empty((0, 3), dtype=np.int64)
        _link_runtime(rows, rt)
    return rows


def _int_chunks(path: Path, con: sqlite3.Connection, sql: str) -> Iterator[np.ndarray]:
    """A query's rows as int64 arrays of up to CHUNK rows (one C-level conversion per chunk)."""
    cur = con.execute(sql)
    while True:
        batch = cur.fetchmany(CHUNK)
        if not batch:
            return
        try:
            yield nsys_nvtx.flat(batch, np.int64)
        except (TypeError, ValueError, OverflowError) as exc:  # text, floats or NULL where ids and ns belong
            raise CorruptReportError(path, f"non-integer value in an activity table ({exc})") from None


def _link_runtime(rows: np.ndarray, rt: np.ndarray) -> None:
    """Each launch's runtime API call (thread, start): same correlation id in the same process.

    CUPTI correlation ids are 32-bit and unique within a process, so (process index << 32 | id) is one
    int64 key on both sides; a sorted search joins them (SQLite's own join rebuilt an index per table)."""
    corr, gpid = rows[:, F["correlationId"]], rows[:, F["globalPid"]]
    r_corr, r_tid = rt[:, 0], rt[:, 1]
    pids = np.unique(np.concatenate([gpid[gpid != NULL] >> TID_BITS, r_tid[r_tid != NULL] >> TID_BITS]))
    ok = (corr != NULL) & (gpid != NULL) & (corr >= 0) & (corr < 2**32)
    r_ok = (r_corr != NULL) & (r_tid != NULL) & (r_corr >= 0) & (r_corr < 2**32)
    key = (np.searchsorted(pids, gpid[ok] >> TID_BITS) << 32) | corr[ok]
    r_key = (np.searchsorted(pids, r_tid[r_ok] >> TID_BITS) << 32) | r_corr[r_ok]
    order = np.argsort(r_key, kind="stable")  # the first call with a key wins, as listed
    r_key, r_sel = r_key[order], np.flatnonzero(r_ok)[order]
    pos = np.minimum(np.searchsorted(r_key, key), max(len(r_key) - 1, 0))
    found = (r_key[pos] == key) if len(r_key) else np.zeros(len(key), dtype=bool)
    idx = np.flatnonzero(ok)[found]
    rows[idx, F["_rt_tid"]] = rt[r_sel[pos[found]], 1]
    rows[idx, F["_rt_start"]] = rt[r_sel[pos[found]], 2]


def _masked(col: np.ndarray) -> pd.arrays.IntegerArray:
    return pd.arrays.IntegerArray(col.copy(), col == NULL)


def _strings(con: sqlite3.Connection, ids: np.ndarray) -> dict[int, str]:
    """``StringIds`` values of the distinct ids given (in batches under SQLite's parameter limit)."""
    want = [int(i) for i in np.unique(ids) if i != NULL]
    out: dict[int, str] = {}
    for i in range(0, len(want), 900):
        part = want[i:i + 900]
        q = f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(part))})"
        out.update((int(k), str(v)) for k, v in con.execute(q, part))
    return out


class _Labels:
    """A string column as distinct labels and one int code per row (0: missing): built without a Python
    object per row, turned into an Arrow string column by one ``take``."""

    def __init__(self, n: int) -> None:
        self.labels: list[str | None] = [None]
        self.code = np.zeros(n, dtype=np.int64)
        self._ids: dict[str, int] = {}
        self._built: pa.Array | None = None  # one Arrow column for every array() until the next set()

    def set(self, mask: np.ndarray | slice, label: str | None) -> None:
        self._built = None
        if label is None:
            self.code[mask] = 0
            return
        i = self._ids.get(label)
        if i is None:
            i = self._ids[label] = len(self.labels)
            self.labels.append(label)
        self.code[mask] = i

    def array(self) -> pd.api.extensions.ExtensionArray:
        # the four FLOP source columns are one _Labels: built once, each column its own (immutable) wrapper
        if self._built is None:
            self._built = _arrow_take(self.labels, self.code)
        return pd.arrays.ArrowStringArray(self._built)


def _names(vals: list[str | None], idx: np.ndarray, fixed: _Labels | None = None) -> pd.api.extensions.ExtensionArray:
    """Names ``vals[idx]`` (rows with a ``fixed`` label take that instead), by one Arrow take."""
    if fixed is None:
        return _take(vals, idx)
    own = fixed.code > 0
    return _take(vals + fixed.labels[1:], np.where(own, len(vals) - 1 + fixed.code, idx))


def _take(values: list[Any], idx: np.ndarray) -> pd.api.extensions.ExtensionArray:
    # straight into pandas' Arrow-backed string array: pd.array(..., dtype="string") re-validates every value;
    # built as large_string, the type pandas stores, so its constructor does not cast (copy) the column again
    return pd.arrays.ArrowStringArray(_arrow_take(values, idx))


def _arrow_take(values: list[Any], idx: np.ndarray) -> pa.Array:
    """``values[idx]`` as a large_string array; the same text on every row (most source columns, also when
    listed once per device) is repeated, half the cost of a gather."""
    uniq = dict.fromkeys(values)
    if len(uniq) < len(values):
        pos = {v: i for i, v in enumerate(uniq)}
        idx, values = np.array([pos[v] for v in values], dtype=np.int64)[idx], list(uniq)
    if len(idx) and values[int(idx[0])] is not None and (idx == idx[0]).all():
        return pa.repeat(pa.scalar(values[int(idx[0])], pa.large_string()), len(idx))
    return pa.array(values, pa.large_string()).take(pa.array(idx))


def _const(value: str, n: int) -> pd.api.extensions.ExtensionArray:
    return _take([value], np.zeros(n, dtype=np.int64))


def _frame(path: Path, con: sqlite3.Connection, tables: set[str], rows: np.ndarray,
           nvtx: pd.api.extensions.ExtensionArray | None,
           gpus: tuple[str | None, dict[int, tuple[Any, ...]]]) -> pd.DataFrame:
    """The canonical frame, every column built as an array first and the frame made once."""
    n = len(rows)
    col = {f: rows[:, i] for i, f in enumerate(FIELDS)}
    kind = col["_kind"]
    start, end = col["start"], col["end"]
    ok = (start != NULL) & (end != NULL) & (end >= start)
    copy_labels = _copy_labels(con, tables)
    # memcpy/memset rows are named after their kind, as `nsys stats` names them
    names, kinds = _Labels(n), _Labels(n)
    ck = col["copyKind"]
    memcpy = kind == KIND_MEMCPY
    for k in np.unique(ck[memcpy]).tolist():
        on = memcpy & (ck == k)
        names.set(on, f"[CUDA memcpy {copy_labels.get(k, COPY_KINDS.get(k, f'kind {k}'))}]")
        kinds.set(on, COPY_KINDS.get(k, f"kind {k}"))
    names.set(kind == KIND_MEMSET, "[CUDA memset]")
    kinds.set(kind == KIND_MEMSET, "memset")
    # the three name columns' distinct ids at once: one sort, one StringIds lookup per distinct id
    uniq, inv = np.unique(np.concatenate([col["demangledName"], col["shortName"], col["mangledName"]]),
                          return_inverse=True)
    strings = _strings(con, uniq) if "StringIds" in tables else {}
    vals, inv = [strings.get(u) for u in uniq.tolist()], inv.reshape(3, n)
    nums, texts = _costs(col, kinds)
    procs = _processes(con, tables, col["globalPid"])
    shm = col["staticSharedMemory"], col["dynamicSharedMemory"]
    out: dict[str, Any] = {
        "kernel_id": pd.arrays.IntegerArray(np.arange(n, dtype=np.int64), np.zeros(n, dtype=bool)),
        "duration_s": np.where(ok, (end - start) * 1e-9, np.nan), **nums,
        **{c: lab.array() for c, lab in texts.items()},
        "replay_ok": pd.arrays.BooleanArray(np.ones(n, dtype=bool), np.zeros(n, dtype=bool)),
        "kernel_name": _names(vals, inv[0], names),
        "kernel_short_name": _names(vals, inv[1], names),
        "mangled_name": _names(vals, inv[2]),
        "copy_kind": kinds.array(),
        "shared_memory_bytes": pd.arrays.IntegerArray(np.where(shm[0] == NULL, 0, shm[0]) +
                                                      np.where(shm[1] == NULL, 0, shm[1]),
                                                      (shm[0] == NULL) & (shm[1] == NULL)),
        "attribution": _take(["runtime launch (correlationId)",
                              "orphan: no runtime API call with its correlationId in the export" if RUNTIME_TABLE in tables
                              else f"orphan: the export has no {RUNTIME_TABLE} table (trimmed export)"],
                             (col["_rt_tid"] == NULL).astype(np.int64)),
        "process": _take(*procs),
        "flags": _take([None, "no valid start/end in the export", "no kernel name: the export has no StringIds table",
                        "no valid start/end in the export; no kernel name: the export has no StringIds table"],
                       (~ok).astype(np.int64) + 2 * ((kind == KIND_KERNEL) & ("StringIds" not in tables))),
    }
    if nvtx is not None:
        out["nvtx_range"] = nvtx
    rank, rank_texts, rank_code = nsys_ranks.ranks(con, tables, *procs, nvtx)
    out["rank"] = pd.arrays.IntegerArray(rank, rank < 0)
    out["rank_source"] = _take(rank_texts, rank_code)
    for c, v in (("source_file", str(path)), ("format", "nsys-sqlite"), ("metric_set", "nsys timeline"),
                 ("duration_s_source", "nsys: CUPTI activity end - start"), ("l2_bytes_source", NO_BYTES),
                 ("l1_bytes_source", NO_BYTES), ("peak_l2_bytes_per_s_source", NO_L2_ROOF)):
        out[c] = _const(v, n)
    for axis in "xyz":
        out[f"grid_{axis}"] = _masked(col[f"grid{axis.upper()}"])
        out[f"block_{axis}"] = _masked(col[f"block{axis.upper()}"])
    for name, field in (("start_ns", "start"), ("device_id", "deviceId"), ("stream_id", "streamId"),
                        ("correlation_id", "correlationId"), ("registers_per_thread", "registersPerThread"),
                        ("graph_id", "graphId"), ("graph_node_id", "graphNodeId")):
        out[name] = _masked(col[field])
    _devices(out, *gpus, col["deviceId"])
    return _assemble(out, n)


def _assemble(out: dict[str, Any], n: int) -> pd.DataFrame:
    """One DataFrame in the canonical column order; columns not given are all-missing of their dtype."""
    cols: dict[str, Any] = {}
    for c, dtype in kernel_dtypes().items():
        if c in out:
            cols[c] = out[c]
        elif dtype == "float64":
            cols[c] = np.full(n, np.nan)
        elif dtype == "string":
            cols[c] = pd.arrays.ArrowStringArray(pa.nulls(n, pa.large_string()))  # pandas' own type: no cast
        elif dtype == "Int64":
            cols[c] = pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
        else:
            cols[c] = pd.array([None] * n, dtype=dtype)
    return pd.DataFrame(cols, copy=False)


def _copy_labels(con: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    if "ENUM_CUDA_MEMCPY_OPER" not in tables:
        return {}
    return {int(i): str(lbl) for i, lbl in con.execute("SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER")}


def _costs(col: dict[str, np.ndarray], kinds: _Labels) -> tuple[dict[str, np.ndarray], dict[str, _Labels]]:
    """FLOP and DRAM columns: unavailable for kernels; for copies, bytes by where they move."""
    n, code = len(kinds.code), kinds.code
    is_copy = code > 0

    def coded(labels: set[str]) -> np.ndarray:  # rows whose kind is among labels: compared as codes, not strings
        return np.isin(code, [i for i, lbl in enumerate(kinds.labels) if lbl in labels])
    flop = np.where(is_copy, 0.0, np.nan)
    flop_src = _Labels(n)
    flop_src.set(slice(None), NO_FLOPS)
    flop_src.set(is_copy, COPY_NOTE)
    nbytes = col["bytes"].astype(np.float64)
    nbytes[col["bytes"] == NULL] = np.nan
    dram = np.full(n, np.nan)
    dram_src = _Labels(n)
    dram_src.set(slice(None), NO_BYTES)
    on_dev = coded(ON_DEVICE_COPIES)
    dram[on_dev] = 2 * nbytes[on_dev]
    dram_src.set(on_dev, "nsys memcpy bytes × 2 (a device-to-device copy reads and writes device memory)")
    memset = coded({"memset"})
    dev_set = memset & ((col["memKind"] == MEMKIND_DEVICE) | (col["memKind"] == NULL))
    dram[dev_set] = nbytes[dev_set]
    dram_src.set(dev_set, "nsys memset bytes (written once to device memory)")
    dram_src.set(memset & ~dev_set, f"{UNAVAILABLE}: memset of host or managed memory, not device DRAM")
    link = is_copy & ~on_dev & ~memset
    for i in np.unique(code[link]).tolist():
        dram_src.set(link & (code == i), LINK.format(kind=kinds.labels[i]))
    peer = on_dev & (col["srcDeviceId"] != NULL) & (col["dstDeviceId"] != NULL) & \
        (col["srcDeviceId"] != col["dstDeviceId"])
    dram[peer] = np.nan
    dram_src.set(peer, LINK.format(kind="device-to-device between two GPUs"))
    no_bytes = is_copy & np.isnan(nbytes)
    dram[no_bytes] = np.nan
    dram_src.set(no_bytes, f"{UNAVAILABLE}: the export has no bytes for this memcpy/memset")
    # host<->device and peer copies: the same column the Kineto reader fills (the link, not DRAM, bounds them)
    host_link = np.full(n, np.nan)
    over_link = (link | peer) & ~np.isnan(nbytes)
    host_link[over_link] = nbytes[over_link]
    nums = {"dram_bytes": dram, "copy_bytes": nbytes, "host_link_bytes": host_link, **{f"flop_{p}": flop for p in ("fp64", "fp32", "fp16", "tensor")}}
    texts = {"dram_bytes_source": dram_src, **{source_column(f"flop_{p}"): flop_src
                                                for p in ("fp64", "fp32", "fp16", "tensor")}}
    return nums, texts


def _processes(con: sqlite3.Connection, tables: set[str], gpid: np.ndarray) -> tuple[list[str | None], np.ndarray]:
    """Process labels ``<name> (pid N)`` and per row an index into them."""
    uniq, inv = np.unique(gpid, return_inverse=True)
    present = [int(g) for g in uniq.tolist() if g != NULL]
    names: dict[int, str] = {}
    if present and "PROCESSES" in tables and {"globalPid", "pid", "name"} <= _columns(con, "PROCESSES"):
        names = {int(g): f"{nm} (pid {p})" for g, p, nm in con.execute(
            f"SELECT globalPid, pid, name FROM PROCESSES WHERE globalPid IN ({','.join(map(str, present))})")}
    labels = [names.get(int(g), f"pid {(int(g) >> TID_BITS) & 0xFFFFFF}") if g != NULL else None
              for g in uniq.tolist()]
    return labels, inv.reshape(-1)


#: device-property tables, newest first, and their column for (id, name, SMs, CC major, CC minor, clock Hz,
#: memory bandwidth B/s); exports of early 2021 and before have TARGET_INFO_CUDA_GPU keyed by deviceId
GPU_TABLES = (("TARGET_INFO_GPU", ("id", "name", "smCount", "computeMajor", "computeMinor", "clockRate",
                                   "memoryBandwidth")),
              ("TARGET_INFO_CUDA_GPU", ("deviceId", "name", "numMultiprocessors", "computeCapabilityMajor",
                                        "computeCapabilityMinor", "coreClockRate", "memoryBandwidth")))


def _gpus(path: Path, con: sqlite3.Connection, tables: set[str]) -> tuple[str | None, dict[int, tuple[Any, ...]]]:
    """(table, device properties by device id: (name, SMs, compute capability, clock Hz, memory bandwidth B/s)).
    A value of another type than the column's (SQLite columns hold any) is a typed error naming it; a number
    that cannot be true of a GPU is made unavailable later, with a warning (``ingest/validate.py``)."""
    for table, want in GPU_TABLES:
        if table not in tables:
            continue
        have = _columns(con, table)
        if want[0] not in have:
            continue
        sel = ", ".join(f'"{c}"' if c in have else "NULL" for c in want)
        out: dict[int, tuple[Any, ...]] = {}
        for i, name, sms, major, minor, clock, bw in con.execute(f'SELECT {sel} FROM "{table}"'):
            if i is None:
                continue
            i = as_int(path, f"{table}.{want[0]}", i)
            sms = None if sms is None else as_int(path, f"{table}.{want[2]}", sms)
            bw = None if bw is None else as_float(path, f"{table}.memoryBandwidth", bw, finite=False)
            cc = f"{major}.{minor}" if major is not None and minor is not None else None
            if not (isinstance(clock, (int, float)) and 1e8 <= clock <= 1e10):
                clock = None  # a clock not in Hz (or damaged) is no clock, never a rescaled guess
            out.setdefault(i, (name, sms, cc, clock, bw))  # several VMs may list a device: the first wins
        if out:
            return table, out
    return None, {}


def _devices(out: dict[str, Any], table: str | None, gpus: dict[int, tuple[Any, ...]], dev: np.ndarray) -> None:
    """Device columns from the device table (``table``, ``gpus``: :func:`_gpus`); its memoryBandwidth is the
    DRAM roof (device property). Built per distinct device and spread by one take."""
    uniq, inv = np.unique(dev, return_inverse=True)
    why = ("no TARGET_INFO_GPU (or TARGET_INFO_CUDA_GPU) row for this device in the export (trimmed export?); "
           "pass --peaks '<GPU>'" if not gpus else "no memoryBandwidth in the export's device table")
    per: dict[str, list[Any]] = {c: [] for c in ("device_name", "compute_capability", "sm_count", "sm_boost_clock_hz",
                                                 "peak_dram_bytes_per_s", source_column("peak_dram_bytes_per_s"))}
    for d in uniq.tolist():
        nm, sm, c, clk, b = gpus.get(d, (None,) * 5)
        for col, v in zip(per.values(), (
                None if nm is None else str(nm), c, None if sm is None else int(sm), float(clk) if clk else None,
                float(b) if b else None,
                f"nsys {table} memoryBandwidth (device property): {float(b) / 1e12:.4g} TB/s" if b
                else f"{UNAVAILABLE}: {why}")):
            col.append(v)
    inv = inv.reshape(-1)
    for c in ("device_name", "compute_capability", source_column("peak_dram_bytes_per_s")):
        out[c] = _take(per[c], inv)
    out["sm_count"] = _masked(np.array([NULL if v is None else v for v in per["sm_count"]], dtype=np.int64)[inv])
    # CUDA's clockRate is the max clock; the clock during a launch is unknown
    for c in ("sm_boost_clock_hz", "peak_dram_bytes_per_s"):
        out[c] = np.array([np.nan if v is None else v for v in per[c]], dtype=np.float64)[inv]


def _nvtx(con: sqlite3.Connection, tables: set[str], rows: np.ndarray) -> pd.api.extensions.ExtensionArray | None:
    found = nsys_nvtx.attach(con, _columns(con, "NVTX_EVENTS"), "StringIds" in tables, rows[:, F["_rt_tid"]],
                             rows[:, F["_rt_start"]], NULL)
    return None if found is None else pd.arrays.ArrowStringArray(found)
