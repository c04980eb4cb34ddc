"""rocprofv3 ``--output-format json``: one canonical row per kernel dispatch.

The file is ``{"rocprofiler-sdk-tool": [process, ...]}``; each process holds ``agents`` (CPUs and
GPUs: name ``gfx950``, product name, CU count, max engine clock), ``kernel_symbols`` (names by
``kernel_id``), ``buffer_records.kernel_dispatch`` (one record per dispatch: start/end ns, agent,
queue, grid and workgroup sizes), ``counters`` (id → name) and, when counters were collected,
``callback_records.counter_collection`` (per dispatch: ``records`` of ``{counter_id, value}``, one
per hardware instance; summed per counter, as rocprof's ``_sum`` counters are).

Decoded with msgspec into typed structs that name only the fields read: the agents' cache tables,
the string tables and every API-trace record are skipped without building Python objects, which
keeps a 37 MB (43,915-dispatch) file at a fraction of a generic parse's memory.

Counters go through the rocprof-compute definitions (``rocprof_compute.derive_counters``); without
counters, FLOPs and bytes are unavailable with that reason. Peaks: the architecture model of each
GPU agent (``amd_arch``: CUs × per-CU rate × max engine clock); rocprofv3 records no HBM bandwidth,
so the HBM roof is unavailable unless given with ``--peaks``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from roofline.errors import CorruptReportError, FormatMismatchError, NoKernelsError
from roofline.ingest.amd import arch as amd_arch
from roofline.ingest.amd import rocprof_compute
from roofline.ingest.common import check_exists, json_bytes, provenance_record
from roofline.ingest.ncu.csv_export import short_name
from roofline.schema import (
    COLUMN_POOL,
    UNAVAILABLE,
    conform_kernels,
    kernels_from_columns,
    set_provenance,
    source_column,
)

FORMAT = "rocprofv3"
TOP_KEY = b'"rocprofiler-sdk-tool"'
NO_COUNTERS = (f"{UNAVAILABLE}: the rocprofv3 output has no counter_collection record for this dispatch "
               "(a timeline only); collect with rocprofv3 --pmc <counters> or rocprof-compute")


def looks_like(head: bytes) -> bool:
    return TOP_KEY in head[:4096]


class Handle(msgspec.Struct):
    handle: int = 0


class Dim3(msgspec.Struct):
    x: int = 1
    y: int = 1
    z: int = 1


class Agent(msgspec.Struct):
    id: Handle = msgspec.field(default_factory=Handle)
    type: int = 0  # 1 CPU, 2 GPU
    name: str = ""
    product_name: str = ""
    cu_count: int = 0
    num_xcc: int = 0
    wave_front_size: int = 0
    max_engine_clk_fcompute: int = 0  # MHz
    node_id: int = -1
    logical_node_id: int = -1


class KernelSymbol(msgspec.Struct):
    kernel_id: int = 0
    kernel_name: str = ""
    formatted_kernel_name: str = ""
    demangled_kernel_name: str = ""


class DispatchInfo(msgspec.Struct):
    agent_id: Handle = msgspec.field(default_factory=Handle)
    queue_id: Handle = msgspec.field(default_factory=Handle)
    kernel_id: int = 0
    dispatch_id: int = 0
    workgroup_size: Dim3 = msgspec.field(default_factory=Dim3)
    grid_size: Dim3 = msgspec.field(default_factory=Dim3)


class Correlation(msgspec.Struct):
    internal: int = 0
    external: int = 0


class Dispatch(msgspec.Struct):
    start_timestamp: int = 0
    end_timestamp: int = 0
    thread_id: int = 0
    correlation_id: Correlation = msgspec.field(default_factory=Correlation)
    dispatch_info: DispatchInfo = msgspec.field(default_factory=DispatchInfo)
    stream_id: Handle = msgspec.field(default_factory=Handle)


class CounterRecord(msgspec.Struct):
    counter_id: Handle = msgspec.field(default_factory=Handle)
    value: float = math.nan


class DispatchData(msgspec.Struct):
    dispatch_info: DispatchInfo = msgspec.field(default_factory=DispatchInfo)


class CounterCollection(msgspec.Struct):
    dispatch_data: DispatchData = msgspec.field(default_factory=DispatchData)
    records: list[CounterRecord] = []


class CounterInfo(msgspec.Struct):
    id: Handle = msgspec.field(default_factory=Handle)
    name: str = ""


class BufferRecords(msgspec.Struct):
    kernel_dispatch: list[Dispatch] = []
    memory_copy: list[msgspec.Raw] = []


class CallbackRecords(msgspec.Struct):
    counter_collection: list[CounterCollection] = []


class Metadata(msgspec.Struct):
    pid: int = 0
    command: list[str] = []


class Process(msgspec.Struct):
    metadata: Metadata = msgspec.field(default_factory=Metadata)
    agents: list[Agent] = []
    counters: list[CounterInfo] = []
    kernel_symbols: list[KernelSymbol] = []
    buffer_records: BufferRecords = msgspec.field(default_factory=BufferRecords)
    callback_records: CallbackRecords = msgspec.field(default_factory=CallbackRecords)


class Tool(msgspec.Struct, rename={"processes": "rocprofiler-sdk-tool"}):
    processes: list[Process]


def _decode(path: Path) -> Tool:
    raw = json_bytes(path)
    try:
        return msgspec.json.decode(raw, type=Tool)
    except msgspec.ValidationError as exc:
        if not looks_like(raw[:4096]):
            raise FormatMismatchError(path, "is JSON but not a rocprofv3 JSON (no 'rocprofiler-sdk-tool' list)") \
                from None
        raise CorruptReportError(path, f"rocprofv3 JSON does not have the expected shape ({exc})") from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # (invalid UTF-8 in a string: a flipped bit)
        raise CorruptReportError(path, f"not valid JSON ({exc})") from None


def read(path: str | Path, definitions: str = "3.6") -> pd.DataFrame:
    path = Path(path)
    check_exists(path)
    tool = _decode(path)
    frames = [_process_rows(path, proc, definitions) for proc in tool.processes]
    frames = [f for f in frames if not f.empty]
    if not frames:
        raise NoKernelsError(path, "no kernel_dispatch record (was rocprofv3 run with --kernel-trace?)")
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    frame["kernel_id"] = np.arange(len(frame), dtype="int64")
    frame = conform_kernels(frame)
    meta = provenance_record(path, FORMAT, tool="rocprofv3 (rocprofiler-sdk)", reader=f"msgspec {msgspec.__version__}",
                             command_line=" ".join(tool.processes[0].metadata.command) or None,
                             processes=len(tool.processes), dispatches=len(frame), definitions=definitions,
                             memory_copies=sum(len(p.buffer_records.memory_copy) for p in tool.processes))
    return set_provenance(frame, [meta])


def _process_rows(path: Path, proc: Process, definitions: str) -> pd.DataFrame:
    symbols = {k.kernel_id: k for k in proc.kernel_symbols}
    names = {kid: (sym.formatted_kernel_name or sym.demangled_kernel_name or sym.kernel_name)
             for kid, sym in symbols.items()}
    per_dispatch: dict[int, dict[str, float]] | None = None
    if proc.callback_records.counter_collection:
        counter_names = {c.id.handle: c.name for c in proc.counters}
        per_dispatch = defaultdict(lambda: defaultdict(float))
        for rec in proc.callback_records.counter_collection:
            values = per_dispatch[rec.dispatch_data.dispatch_info.dispatch_id]
            for r in rec.records:  # one record per hardware instance: summed, like rocprof's X_sum counters
                values[counter_names.get(r.counter_id.handle, f"counter {r.counter_id.handle}")] += r.value
    return dispatch_rows(path, FORMAT, proc.buffer_records.kernel_dispatch, names,
                         {a.id.handle: a for a in proc.agents}, per_dispatch, definitions,
                         "buffer_records.kernel_dispatch", "callback_records.counter_collection (rocprofv3 JSON)")


def dispatch_rows(path: Path, fmt: str, dispatches: list[Dispatch], names: dict[int, str], agents: dict[int, Agent],
                  per_dispatch: dict[int, dict[str, float]] | pd.DataFrame | None, definitions: str, where: str,
                  counters_where: str) -> pd.DataFrame:
    """Canonical rows of rocprofv3 dispatches (JSON or CSV): names by kernel id, agents by handle, and
    summed counter values by dispatch id (None: no counters were collected). A field past 64 bits (JSON
    integers have no bound) or of another type is a typed error naming it."""
    try:
        return _column_rows(path, fmt, dispatch_columns(dispatches), names, agents, per_dispatch, definitions, where,
                            counters_where)
    except (OverflowError, TypeError, ValueError) as exc:  # found again only on this path: the common one is free
        raise CorruptReportError(path, f"{where}: {bad_field(dispatches, agents) or exc}") from None


#: the dispatch fields :func:`column_rows` takes, each an int64 array, named as rocpd's dispatch table names them
#: (grid and workgroup sizes in work-items)
DISPATCH_FIELDS = ("start", "end", "agent_id", "queue_id", "kernel_id", "dispatch_id", "workgroup_size_x",
                   "workgroup_size_y", "workgroup_size_z", "grid_size_x", "grid_size_y", "grid_size_z")


def dispatch_columns(dispatches: list[Dispatch]) -> dict[str, np.ndarray]:
    """The dispatch records as :data:`DISPATCH_FIELDS` arrays (a field that is not a 64-bit int raises)."""
    n = len(dispatches)
    infos = [d.dispatch_info for d in dispatches]
    got = {"start": (d.start_timestamp for d in dispatches), "end": (d.end_timestamp for d in dispatches),
           "agent_id": (i.agent_id.handle for i in infos), "queue_id": (i.queue_id.handle for i in infos),
           "kernel_id": (i.kernel_id for i in infos), "dispatch_id": (i.dispatch_id for i in infos)}
    for a in "xyz":  # (the axis bound now: a generator reads its variables when consumed)
        got[f"workgroup_size_{a}"] = (getattr(i.workgroup_size, ax) for ax in (a,) for i in infos)
        got[f"grid_size_{a}"] = (getattr(i.grid_size, ax) for ax in (a,) for i in infos)
    return {k: np.fromiter(got[k], dtype="int64", count=n) for k in DISPATCH_FIELDS}


def column_rows(path: Path, fmt: str, columns: dict[str, np.ndarray], names: dict[int, str], agents: dict[int, Agent],
                per_dispatch: pd.DataFrame | None, definitions: str, where: str, counters_where: str) -> pd.DataFrame:
    """:func:`dispatch_rows` of dispatches given as :data:`DISPATCH_FIELDS` int64 arrays (the rocpd reader's
    columns, with no object per dispatch)."""
    try:
        return _column_rows(path, fmt, columns, names, agents, per_dispatch, definitions, where, counters_where)
    except (OverflowError, TypeError, ValueError) as exc:
        raise CorruptReportError(path, f"{where}: {bad_field([], agents) or exc}") from None


def _column_rows(path: Path, fmt: str, c: dict[str, np.ndarray], names: dict[int, str], agents: dict[int, Agent],
                 per_dispatch: dict[int, dict[str, float]] | pd.DataFrame | None, definitions: str, where: str,
                 counters_where: str) -> pd.DataFrame:
    n = len(c["start"])
    if n == 0:
        return pd.DataFrame()
    order = np.lexsort((c["dispatch_id"], c["start"]))  # by (start, dispatch id); stable, as sorted() was
    c = {k: v[order] for k, v in c.items()}
    kids, kinv = np.unique(c["kernel_id"], return_inverse=True)  # each kernel's names computed once
    named = [rocprof_compute.kernel_name(names.get(int(k)) or f"kernel_id {k}") for k in kids]
    handles, first, ainv = np.unique(c["agent_id"], return_index=True, return_inverse=True)
    known = [agents.get(int(h)) for h in handles]
    by_first_row = [known[i] for i in np.argsort(first, kind="stable")]

    def per_agent(value: Any) -> np.ndarray:  # one value per agent, spread to its dispatches
        return np.array([value(a) for a in known] + [None], dtype=object)[:-1][ainv]

    start, end = c["start"], c["end"]
    span = (end - start).astype(float)
    ok = span > 0
    cols: dict[str, Any] = {
        "source_file": str(path), "format": fmt, "range_id": 0, "kernel_id": np.arange(n, dtype="int64"),
        "kernel_name": _spread(named, kinv),
        "kernel_short_name": _spread([short_name(x) for x in named], kinv),
        "duration_s": np.where(ok, span * 1e-9, np.nan),
        "duration_s_source": _spread([f"end − start timestamp of {where} (ns)",
                                     f"{UNAVAILABLE}: end timestamp ≤ start timestamp in {where}"], ~ok),
        "device_name": _spread([_device(a) for a in known], ainv),
        "compute_capability": _spread([a.name or None if a else None for a in known], ainv),
        "sm_count": per_agent(lambda a: a.cu_count or None if a else None),
        "sm_boost_clock_hz": per_agent(lambda a: a.max_engine_clk_fcompute * 1e6
                                       if a and a.max_engine_clk_fcompute else None),
        "metric_set": "rocprofv3",
        **{f"grid_{a}": _blocks(c[f"grid_size_{a}"], c[f"workgroup_size_{a}"]) for a in "xyz"},
        **{f"block_{a}": c[f"workgroup_size_{a}"] for a in "xyz"},
        "replay_ok": True,
    }
    logical = np.array([a.logical_node_id if a else int(h) for a, h in zip(known, handles)] + [0], dtype="int64")
    extra: dict[str, Any] = {"dispatch_id": c["dispatch_id"], "agent_id": logical[:-1][ainv],
                             "queue_id": c["queue_id"]}
    _counters(per_dispatch, c["dispatch_id"], by_first_row, definitions, cols, extra, counters_where)
    _peaks(known, ainv, cols, extra)
    frame = kernels_from_columns(cols, n)
    for k, v in extra.items():
        frame[k] = pd.array(v, dtype="Int64") if k in ("dispatch_id", "agent_id", "queue_id") else v
    return frame


#: the dtype pandas gives a column assigned Python strings (pandas ≥ 3: "str"; object before), as the extra
#: columns' strings always were
_TEXT = pd.Series(np.array(["text"], dtype=object)).dtype


def _spread(values: list[str | None], codes: np.ndarray, extra: bool = False) -> Any:
    """``values[codes]`` as a column of strings, each distinct value converted once (Arrow's take: no Python object
    per dispatch, as an object array handed to the schema would need): a canonical ``string`` column, or (``extra``)
    what assigning Python strings to a frame makes, for the extra columns."""
    if extra and _TEXT == object:
        return np.array([*values, None], dtype=object)[:-1][codes]
    taken = pc.take(pa.array(values, pa.large_string()), pa.array(np.asarray(codes, dtype=np.int64)),
                    memory_pool=COLUMN_POOL)
    return pd.array(taken, dtype=_TEXT if extra else "string")


_INT64 = (-(2**63), 2**63 - 1)


def bad_field(dispatches: list[Dispatch], agents: dict[int, Agent]) -> str | None:
    """The first dispatch or agent field that is not a 64-bit integer (what the frame's columns hold), said."""
    lo, hi = _INT64
    for d in dispatches:
        i = d.dispatch_info
        for name, v in (("start_timestamp", d.start_timestamp), ("end_timestamp", d.end_timestamp),
                        ("dispatch_id", i.dispatch_id), ("kernel_id", i.kernel_id), ("agent_id", i.agent_id.handle),
                        ("queue_id", i.queue_id.handle), *((f"grid_size.{a}", getattr(i.grid_size, a)) for a in "xyz"),
                        *((f"workgroup_size.{a}", getattr(i.workgroup_size, a)) for a in "xyz")):
            if v.__class__ is not int or not lo <= v <= hi:
                return f"dispatch {i.dispatch_id!r}: {name} {v!r} is not a 64-bit integer"
    for a in agents.values():
        for name, v in (("cu_count", a.cu_count), ("max_engine_clk_fcompute", a.max_engine_clk_fcompute),
                        ("wave_front_size", a.wave_front_size), ("num_xcc", a.num_xcc),
                        ("logical_node_id", a.logical_node_id), ("id", a.id.handle)):
            if v.__class__ is not int or not lo <= v <= hi:
                return f"agent {a.id.handle!r}: {name} {v!r} is not a 64-bit integer"
    return None


def _device(a: Agent | None) -> str | None:
    if a is None:
        return None
    return a.product_name.removeprefix("AMD Instinct ").strip() or a.name or None


def _blocks(work_items: np.ndarray, group: np.ndarray) -> pd.arrays.IntegerArray:
    """HSA grid sizes count work-items; the schema's grid counts workgroups (CUDA's blocks), rounded up;
    missing where the workgroup size is not positive (as quotient and remainder: no overflow near 2**63)."""
    bad = group <= 0
    safe = np.where(bad, 1, group)
    q, r = np.divmod(work_items, safe)
    return pd.arrays.IntegerArray(np.where(bad, 0, q + (r != 0)), bad)


def _counters(per_dispatch: dict[int, dict[str, float]] | pd.DataFrame | None, dispatch_ids: np.ndarray,
              agent_of: list[Agent | None], definitions: str, cols: dict[str, Any], extra: dict[str, Any],
              where: str) -> None:
    """The counters' FLOPs and bytes; ``agent_of``: the dispatches' agents, each once, in the order of their first
    dispatch (the first known one gives the architecture and wave size)."""
    if per_dispatch is None or len(per_dispatch) == 0:
        for q in ("flop_fp64", "flop_fp32", "flop_fp16", "flop_tensor", "dram_bytes", "l2_bytes", "l1_bytes"):
            cols[source_column(q)] = NO_COUNTERS
        extra["lds_bytes_source"] = NO_COUNTERS
        return
    ids = dispatch_ids.tolist()
    if isinstance(per_dispatch, pd.DataFrame):  # already wide: dispatch id × counter (the rocpd reader)
        wide = per_dispatch.reindex(ids).reset_index(drop=True)
        counted = np.asarray(pd.Index(ids).isin(per_dispatch.index))
    else:
        wide = pd.DataFrame([dict(per_dispatch.get(i, {})) for i in ids])
        counted = np.array([i in per_dispatch for i in ids])
    ctr = rocprof_compute.Counters(wide, where,
                                   "collect with rocprofv3 --pmc <the counters named in docs/amd.md>")
    arch = next((a.name for a in agent_of if a), "")
    wave = next((a.wave_front_size for a in agent_of if a and a.wave_front_size), 64)
    # LDS banks per CU: rocprofv3 does not record it; CDNA GPUs have 32 (rocprof-compute sysinfo)
    banks = 32.0 if amd_arch.family(arch) else None
    rocprof_compute.derive_counters(ctr, arch, wave, banks, definitions, cols, extra)
    if not counted.all():  # dispatches without a counter record: unavailable, not 0
        for q in ("flop_fp64", "flop_fp32", "flop_fp16", "flop_tensor", "dram_bytes", "l2_bytes", "l1_bytes",
                  "lds_bytes"):
            target = extra if q == "lds_bytes" else cols
            target[q] = np.where(counted, target[q], np.nan)
            src = target[source_column(q)]
            if src is None or isinstance(src, str):  # (one source for every counted dispatch)
                target[source_column(q)] = _spread([NO_COUNTERS, src], counted, extra=target is extra)
                continue
            out = np.full(len(ids), NO_COUNTERS, dtype=object)
            out[counted] = np.asarray(src, dtype=object)[counted]
            target[source_column(q)] = out


def _peaks(known: list[Agent | None], ainv: np.ndarray, cols: dict[str, Any], extra: dict[str, Any]) -> None:
    """Architecture-model roofs per GPU agent (CUs × rate × max engine clock); no HBM figure in rocprofv3.
    ``known``: the agents (None: not in the agent table), ``ainv``: each dispatch's index into them."""
    n = len(ainv)
    paths = cols.get("tensor_path") or [None] * n
    wanted = ("peak_flop_per_s_fp64", "peak_flop_per_s_fp32", "peak_flop_per_s_fp16", "peak_l2_bytes_per_s",
              "peak_l1_bytes_per_s", "peak_dram_bytes_per_s", "peak_flop_per_s_tensor", "peak_lds_bytes_per_s")
    pcode, found = pd.factorize(np.asarray(paths, dtype=object))
    pcode, ps = pcode + 1, [None, *found]  # (no path: code 0, None)
    combos, group = np.unique(ainv * len(ps) + pcode, return_inverse=True)  # each row's (agent, MFMA path)
    # LDS banks per CU: not recorded; 32 on every CDNA GPU (rocprof-compute sysinfo), as the LDS bytes assume
    models = {i: amd_arch.model_peaks({"gpu_arch": a.name, "gpu_model": a.product_name, "cu_per_gpu": a.cu_count,
                                       "max_sclk": a.max_engine_clk_fcompute,
                                       "lds_banks_per_cu": 32 if amd_arch.family(a.name) else None})
              for i, a in enumerate(known) if a}
    values = {c: np.full(len(combos), np.nan) for c in wanted}  # per group, then spread to its rows
    sources: dict[str, list[str | None]] = {c: [] for c in wanted}
    for g, combo in enumerate(combos.tolist()):
        agent, path = combo // len(ps), ps[combo % len(ps)]
        model = models.get(agent, {})
        name = known[agent].name if known[agent] else "?"  # type: ignore[union-attr]
        for c in wanted:
            key = f"peak_flop_per_s_tensor:{path or 'mfma_fp16'}" if c == "peak_flop_per_s_tensor" else c
            if key in model:
                values[c][g], src = model[key]
                src = src.replace("(sysinfo.csv)", "(rocprofv3 agent)")
                if c == "peak_lds_bytes_per_s":
                    src += "; 32 LDS banks per CU assumed (every CDNA GPU; rocprofv3 does not record it)"
            elif c == "peak_dram_bytes_per_s":
                src = f"{UNAVAILABLE}: rocprofv3 records no HBM bandwidth; give it with --peaks FILE.toml"
            elif c == "peak_l2_bytes_per_s":
                src = f"{UNAVAILABLE}: rocprofv3 records no L2 channel count; give it with --peaks FILE.toml"
            else:
                src = f"{UNAVAILABLE}: no architecture model for agent {name}"
            sources[c].append(src)
    for c in wanted:
        target = extra if c == "peak_lds_bytes_per_s" else cols  # LDS: an extra column, as in rocprof-compute rows
        target[c], target[source_column(c)] = values[c][group], _spread(sources[c], group, extra=target is extra)
