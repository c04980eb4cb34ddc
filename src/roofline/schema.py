"""The canonical schema: column names, their types and units, and provenance that survives Parquet.

Described for people in ``docs/schema.md``; this module is the source of truth for code.
Every unit is SI and sits in the column name (``_s``, ``_bytes``, ``_hz``, ``_per_s``).
A quantity that could not be derived is NaN and its ``*_source`` column starts with
``"unavailable:"`` followed by the reason and the ncu option that would collect it.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from roofline.errors import SchemaError

SCHEMA_VERSION = "2"
#: versions this roofline still reads (2 added `rank` and `attribution`; older tables lack them)
READABLE_SCHEMA_VERSIONS = ("1", "2")
PROVENANCE_KEY = "roofline.provenance"
#: key under which Arrow schema metadata stores the provenance JSON
PARQUET_META_KEY = b"roofline"

UNAVAILABLE = "unavailable"
#: how the source of a recorded roof that the spec table outranks ends ("... (<device> is not in the spec
#: table)"): the roofs stage (``hardware/attach.py``) keeps it only where that holds and the table gave none
NOT_IN_SPEC_TABLE = "is not in the spec table)"

# Identity of one profiled launch.
IDENTITY_COLUMNS: dict[str, str] = {
    "source_file": "string",
    "format": "string",
    "range_id": "Int64",
    "nvtx_range": "string",
    "kernel_id": "Int64",
    "kernel_name": "string",  # demangled
    "kernel_short_name": "string",  # function base name
    "mangled_name": "string",
    "grid_x": "Int64",
    "grid_y": "Int64",
    "grid_z": "Int64",
    "block_x": "Int64",
    "block_y": "Int64",
    "block_z": "Int64",
    "device_name": "string",
    "compute_capability": "string",
    "sm_count": "Int64",
    "metric_set": "string",
    "rank": "Int64",  # distributed rank of a trace (distributedInfo.rank); None for ncu reports
    "rank_source": "string",  # nsys: where the rank came from, or why there is none (ingest/nsys_ranks.py)
    # timelines (nsys exports): where and when a launch ran, and how it was launched
    "process": "string",  # "<name> (pid N)" of the launching process
    "device_id": "Int64",
    "stream_id": "Int64",
    "correlation_id": "Int64",  # CUPTI correlation id (ties a launch to its runtime API call)
    "start_ns": "Int64",  # launch start on the profile's own clock (nsys: ns since session start)
    "registers_per_thread": "Int64",
    "shared_memory_bytes": "Int64",  # static + dynamic shared memory per block
    "graph_id": "Int64",  # CUDA graph of a graph-launched kernel
    "graph_node_id": "Int64",
    "copy_kind": "string",  # memcpy/memset rows: HtoD, DtoH, DtoD, PtoP, memset...; NA for kernels
}

# Measured and derived quantities; each has a companion ``<name>_source`` string column.
QUANTITY_COLUMNS: dict[str, str] = {
    "duration_s": "float64",
    "flop_fp64": "float64",
    "flop_fp32": "float64",
    "flop_fp16": "float64",
    "flop_tensor": "float64",
    "dram_bytes": "float64",
    "l2_bytes": "float64",
    "l1_bytes": "float64",
    "sm_clock_hz": "float64",
    "dram_clock_hz": "float64",
    "l2_clock_hz": "float64",
    "l1_clock_hz": "float64",
    "sm_boost_clock_hz": "float64",
    "peak_flop_per_s_fp64": "float64",
    "peak_flop_per_s_fp32": "float64",
    "peak_flop_per_s_fp16": "float64",
    "peak_flop_per_s_tensor": "float64",
    "peak_dram_bytes_per_s": "float64",
    "peak_l2_bytes_per_s": "float64",
    "peak_l1_bytes_per_s": "float64",
    "copy_bytes": "float64",  # bytes a memcpy/memset moved, as the API reported them (any direction)
}

# Quantities whose source is worth a column of its own (clocks only say where they came from
# through the peaks that use them).
SOURCED_COLUMNS: tuple[str, ...] = (
    "duration_s",
    "flop_fp64",
    "flop_fp32",
    "flop_fp16",
    "flop_tensor",
    "dram_bytes",
    "l2_bytes",
    "l1_bytes",
    "peak_flop_per_s_fp64",
    "peak_flop_per_s_fp32",
    "peak_flop_per_s_fp16",
    "peak_flop_per_s_tensor",
    "peak_dram_bytes_per_s",
    "peak_l2_bytes_per_s",
    "peak_l1_bytes_per_s",
)

STATUS_COLUMNS: dict[str, str] = {
    "tensor_path": "string",  # dominant tensor data path, e.g. src_fp16_bf16_tf32_dst_fp32
    "replay_ok": "boolean",
    "flags": "string",
    "attribution": "string",  # traces: how a GPU row was tied to its CPU op ("op", "orphan: ...")
    "op_input_dims": "string",  # traces: the op's Input Dims as recorded (JSON)
    "op_input_types": "string",  # traces: the op's Input type as recorded (JSON)
    "op_args": "string",  # traces: schema overload and the named arguments the op model read
    "precision_evidence": "string",  # traces: what decided the FLOPs' precision (dtype, kernel name)
    "host_link_bytes": "float64",  # traces: bytes over the host link (host<->device, peer copies), not DRAM
    "match_method": "string",  # --counters: how the row found its counters (see docs/nsys.md)
    "counter_samples": "Int64",  # --counters: sampled launches averaged into the row's counters
    "counter_spread": "float64",  # --counters: relative std dev of those launches' FLOPs (else DRAM bytes)
    # why a kernel sits where it does (docs/analysis.md, "Why a kernel sits where it does"): what the profile records
    "pipe_pct_json": "string",  # ncu full sets / rocprof-compute: {pipe metric: its % of peak (JSON)}
    "ncu_rules_json": "string",  # ncu: the report's own rule results (guided analysis), JSON list
    "achieved_occupancy_pct": "float64",  # ncu: sm__warps_active.avg.pct_of_peak_sustained_active
    "theoretical_occupancy_pct": "float64",  # ncu: sm__maximum_warps_per_active_cycle_pct
    "waves_per_sm": "float64",  # ncu: launch__waves_per_multiprocessor
    "warp_stalls_json": "string",  # ncu: {stall reason: warps stalled per issued instruction} (JSON)
    "op_kernels": "string",  # traces: the distinct kernels a matmul/conv op launched, one per line
    # collectives (NCCL/RCCL; docs/collectives.md): what the profile records of each; null on other rows
    "collective": "string",  # nccl-tests' name: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, ...
    "collective_source": "string",
    "message_bytes": "float64",  # nccl-tests' size S: the message as the collective moves it (all-gather: n× input)
    "message_bytes_source": "string",
    "group_size": "Int64",  # ranks in the collective's process group (n of the bus factor)
    "group_size_source": "string",
    "process_group": "string",  # "<name> (<description>): ranks [...]" where recorded
    "comm_exposed_s": "float64",  # its NCCL/RCCL kernels' time with no other kernel running on the device
    "comm_overlapped_s": "float64",  # their time while another (non-collective) kernel ran on the device
    "comm_overlap_source": "string",
}

FLOP_COLUMNS = ("flop_fp64", "flop_fp32", "flop_fp16", "flop_tensor")
PRECISIONS = ("fp64", "fp32", "fp16", "tensor")


def source_column(name: str) -> str:
    return f"{name}_source"


def kernel_columns() -> list[str]:
    """Column order of the canonical kernels frame."""
    cols = list(IDENTITY_COLUMNS)
    for q in QUANTITY_COLUMNS:
        cols.append(q)
        if q in SOURCED_COLUMNS:
            cols.append(source_column(q))
    cols.extend(STATUS_COLUMNS)
    return cols


def kernel_dtypes() -> dict[str, str]:
    dtypes: dict[str, str] = {}
    dtypes.update(IDENTITY_COLUMNS)
    for q, t in QUANTITY_COLUMNS.items():
        dtypes[q] = t
        if q in SOURCED_COLUMNS:
            dtypes[source_column(q)] = "string"
    dtypes.update(STATUS_COLUMNS)
    return dtypes


METRICS_COLUMNS: dict[str, str] = {
    "source_file": "string",
    "range_id": "Int64",
    "kernel_id": "Int64",
    "metric": "string",
    "instance": "string",  # key of an instanced metric's value (opcode, PC...); <NA> for scalars
    "value": "float64",  # numeric value (NaN for strings and unreadable kinds)
    "value_text": "string",  # string value, or the raw text a CSV held
    "unit": "string",
}


def empty_kernels_frame() -> pd.DataFrame:
    return conform_kernels(pd.DataFrame(columns=kernel_columns()))


def kernels_from_records(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Build a canonical kernels frame straight from row dicts, one typed array per column.

    Much cheaper than a generic DataFrame plus :func:`conform_kernels` (about 1 ms instead of
    10 ms per report), which matters for batches of small reports.
    """
    keys = {k for r in records for k in r}
    return kernels_from_columns({c: [r.get(c) for r in records] for c in kernel_dtypes() if c in keys},
                                len(records))


def kernels_from_columns(columns: dict[str, Any], n: int, only: Collection[str] | None = None) -> pd.DataFrame:
    """Build a canonical kernels frame from columns: a sequence of ``n`` values (None: missing) or
    one scalar for every row. Canonical columns not given are all-missing; unknown ones are an error.
    ``only``: just these canonical columns, in canonical order (a computation's inputs on a few rows).
    """
    unknown = set(columns) - set(kernel_dtypes())
    if unknown:
        raise SchemaError(f"not kernels-frame columns: {sorted(unknown)}")
    out: dict[str, Any] = {}
    for col, dtype in kernel_dtypes().items():
        if only is None or col in only:
            out[col] = _typed(columns.get(col), n, dtype)
    return pd.DataFrame(out)


#: where the frames' Arrow string columns are allocated: the C library's allocator, not pyarrow's default
#: (mimalloc on Linux and macOS), which keeps a heap of its own: a reader's frame is built right after it
#: frees its decoded events, and the C allocator reuses that freed memory where mimalloc takes new pages
#: (the 216k-event V100 trace's read: peak 189 MB above the imports with mimalloc, 164 MB with this)
COLUMN_POOL = pa.system_memory_pool()


#: pandas' "string" dtype stores Arrow large_string: the array is then wrapped as it is (pd.array finds the
#: dtype and casts first, ~30 us a column, 45 text columns a frame); another storage goes through pd.array
_ARROW_STRINGS = pd.StringDtype().storage == "pyarrow" and pd.StringDtype().na_value is pd.NA


def _strings(arr: pa.Array) -> Any:
    """A large_string Arrow array as pandas' "string" array."""
    return pd.arrays.ArrowStringArray(arr) if _ARROW_STRINGS else pd.array(arr, dtype="string")


def _typed(values: Any, n: int, dtype: str) -> Any:
    """One column as its canonical array type; built without a per-element Python loop where it can."""
    scalar = values is None or isinstance(values, (str, bool, int, float))
    if dtype == "float64":
        if scalar:
            return np.full(n, np.nan if values is None else values, dtype="float64")
        return np.array(values, dtype="float64")  # numpy reads None as NaN
    if dtype == "string":
        # (large_string: the storage of pandas' Arrow-backed "string" dtype, so no cast and no copy)
        if values is None:
            return _strings(pa.nulls(n, pa.large_string(), memory_pool=COLUMN_POOL))
        try:
            if scalar:
                return _strings(pa.repeat(pa.scalar(values, pa.large_string()), n, memory_pool=COLUMN_POOL))
            return _strings(pa.array(values, pa.large_string(), memory_pool=COLUMN_POOL))
        except (pa.ArrowTypeError, pa.ArrowInvalid):  # not all str: pandas converts what it can
            return pd.array([values] * n if scalar else list(values), dtype="string")
    if dtype == "boolean" and values.__class__ is bool:
        return pd.arrays.BooleanArray(np.full(n, values), np.zeros(n, dtype=bool))
    if dtype == "Int64":
        if scalar:
            return pd.arrays.IntegerArray(np.full(n, 0 if values is None else values, dtype="int64"),
                                          np.full(n, values is None))
        if isinstance(values, pd.arrays.IntegerArray) and values.dtype == "Int64" and len(values) == n:
            return values  # already the canonical array (a reader built it with its missing mask)
        if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
            return pd.arrays.IntegerArray(values.astype("int64"), np.zeros(n, dtype=bool))
        obj = np.empty(n, dtype=object)
        obj[:] = list(values)  # (not np.array(values): that would nest lists)
        missing = pd.isna(obj)
        if set(map(type, obj[~missing])) <= {int}:  # (type() in C: a per-element Python check costs 1 ms/20k)
            try:
                return pd.arrays.IntegerArray(np.where(missing, 0, obj).astype("int64"), missing)
            except OverflowError:
                pass
        obj[:] = [_as_int64(v) for v in obj]  # integral floats kept; anything else is missing, not a crash
        missing = pd.isna(obj)
        return pd.arrays.IntegerArray(np.where(missing, 0, obj).astype("int64"), missing)
    return pd.array([values] * n if scalar else list(values), dtype=dtype)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _as_int64(v: Any) -> int | None:
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and v == v \
            and INT64_MIN <= v <= INT64_MAX and float(v).is_integer():
        return int(v)
    return None


def conform_kernels(frame: pd.DataFrame) -> pd.DataFrame:
    """Give a kernels frame every canonical column, in order, with canonical dtypes.

    Extra columns (added by later stages) are kept after the canonical ones.
    """
    dtypes = kernel_dtypes()
    # a shallow copy: only whole columns are added below (astype makes new ones), which never reach the
    # caller's frame; a deep one copied every numeric column of a dataset's frame (~50 MB per 1,000 inputs)
    out = frame.copy(deep=False)
    missing = [c for c in dtypes if c not in out.columns]
    if missing:  # added in one step: one insert per column cost ~0.25 ms each, ~60 per frame of a reader
        n = len(out)
        add = pd.DataFrame({c: _typed(None, n, dtypes[c]) for c in missing}, index=out.index)
        out = pd.concat([out, add], axis=1) if len(out.columns) else add
    have = dict(zip(out.columns, out.dtypes)) if out.columns.is_unique else {c: out[c].dtype for c in dtypes}
    todo = {c: d for c, d in dtypes.items() if str(have[c]) != d}
    if todo:  # one astype call: per-column calls cost ~7 ms per report
        try:
            out = out.astype(todo)
        except (TypeError, ValueError) as exc:
            raise SchemaError(f"kernels frame does not fit the schema: {exc}") from exc
    extra = [c for c in out.columns if c not in dtypes]
    out = out[list(dtypes) + extra]
    out.columns.name = frame.columns.name  # (the concat above drops it)
    out.attrs = dict(frame.attrs)
    return out


def conform_metrics(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col, dtype in METRICS_COLUMNS.items():
        if col not in out.columns:
            fill = float("nan") if dtype == "float64" else pd.NA
            out[col] = pd.Series([fill] * len(out), dtype=dtype, index=out.index)
        else:
            out[col] = out[col].astype(dtype)
    out = out[list(METRICS_COLUMNS)]
    out.attrs = dict(frame.attrs)
    return out


# --------------------------------------------------------------------------------------------
# Provenance: one dict per input file, kept in ``frame.attrs`` (in an immutable holder) and Parquet metadata.


class Provenance(tuple):  # type: ignore[type-arg]
    """The provenance records of a frame: an immutable tuple that pandas' deep copies share instead of copying.

    pandas deep-copies ``DataFrame.attrs`` on nearly every operation (a column read, ``isna``, a groupby):
    with one record per input that is quadratic at dataset scale (issue 36: 8.9 ms per copy at 500 records,
    83% of ``report DATASET``). This holder's ``__deepcopy__`` returns itself, so a copy costs O(1) whatever
    the number of inputs; every ``get_provenance``/``set_provenance`` caller is unchanged. Measured against a
    side object carried beside the frames (/tmp probe, pandas 3.1, 500 records, 100 x (column read, isna,
    groupby) on a 100k-row frame): list in attrs 4.71 s, this holder 0.054 s, no attrs at all 0.088 s; the
    holder needs no change in the ~20 readers and stages that pass frames along, a side object would.

    The records are never changed in place: :func:`get_provenance` hands out copies, :func:`set_provenance`
    makes a new holder.
    """

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> Provenance:
        return self

    def __copy__(self) -> Provenance:
        return self

    def __eq__(self, other: object) -> bool:  # equal to a list of the same records, as the list it replaced was
        return isinstance(other, (list, tuple)) and tuple.__eq__(self, tuple(other))

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # (records are dicts: never hashable)

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (to batch workers, Dask) as a plain holder of dicts
        return (Provenance, (tuple(self),))


def get_provenance(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [dict(r) for r in frame.attrs.get(PROVENANCE_KEY, ())]


def set_provenance(frame: pd.DataFrame, records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    frame.attrs[PROVENANCE_KEY] = Provenance(dict(r) for r in records)
    return frame


def merge_provenance(frames: list[pd.DataFrame]) -> list[dict[str, Any]]:
    """Every frame's records, each once, in order (linear: records are compared by their JSON text)."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for f in frames:
        for rec in f.attrs.get(PROVENANCE_KEY, ()):
            key = json.dumps(rec, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(rec)
    return out


def write_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a frame to ``.parquet`` or ``.csv``; Parquet keeps the provenance in its metadata.

    CSV cannot carry metadata, so a ``<name>.provenance.json`` is written beside it.
    The write is atomic: a temporary file is renamed into place.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    meta = {"schema_version": SCHEMA_VERSION, "provenance": get_provenance(frame)}
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        table = pa.Table.from_pandas(frame, preserve_index=False)
        md = dict(table.schema.metadata or {})
        md[PARQUET_META_KEY] = json.dumps(meta, default=str).encode()
        table = table.replace_schema_metadata(md)
        pq.write_table(table, tmp)
    elif suffix == ".csv":
        frame.to_csv(tmp, index=False)
        side = path.with_name(path.name + ".provenance.json")
        side.write_text(json.dumps(meta, indent=2, default=str))
    else:
        raise SchemaError(f"{path}: output must end in .parquet or .csv")
    tmp.replace(path)
    return path


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a table written by :func:`write_table`, provenance included."""
    path = Path(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        table = pq.read_table(path)
        frame = table.to_pandas()
        raw = (table.schema.metadata or {}).get(PARQUET_META_KEY)
        if raw is not None:
            meta = json.loads(raw)
            if meta.get("schema_version") not in READABLE_SCHEMA_VERSIONS:
                raise SchemaError(
                    f"{path}: schema version {meta.get('schema_version')!r}, "
                    f"this roofline reads {SCHEMA_VERSION!r}"
                )
            set_provenance(frame, meta.get("provenance", []))
        return frame
    frame = pd.read_csv(path)
    side = path.with_name(path.name + ".provenance.json")
    if side.exists():
        set_provenance(frame, json.loads(side.read_text()).get("provenance", []))
    return frame
