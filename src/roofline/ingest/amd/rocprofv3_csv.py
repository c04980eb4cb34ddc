"""rocprofv3 ``--output-format csv``: ``<prefix>kernel_trace.csv`` (+ its ``counter_collection.csv``).

rocprofv3 writes one CSV per domain with a common prefix (``<pid>_``): ``kernel_trace.csv`` (one
row per dispatch: agent, queue, dispatch id, kernel id and name, start/end ns, workgroup and grid
sizes per axis), ``counter_collection.csv`` (long form: one row per dispatch and counter instance,
``Counter_Name``, ``Counter_Value``, with the dispatch's timestamps), ``agent_info.csv``,
``memory_copy_trace.csv`` and API traces. The kernel trace is the input; the counter collection
and agent info beside it (same prefix) are read with it, and a counter collection alone is an
input too (its rows carry the dispatches). The other CSVs of the set are not profiles:
:func:`is_companion` lets folder expansion skip them. Rows are built by
:func:`roofline.ingest.amd.rocprofv3.dispatch_rows`, so CSV and JSON outputs of one run give the
same frame.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from roofline.errors import FormatMismatchError, NoKernelsError
from roofline.ingest.amd import rocprofv3 as v3
from roofline.ingest.amd.arch import read_csv
from roofline.ingest.common import check_exists, provenance_record
from roofline.ingest.validate import as_int, int_or_none
from roofline.schema import conform_kernels, set_provenance

FORMAT = "rocprofv3-csv"
KERNELS, COUNTERS, AGENTS, COPIES = ("kernel_trace.csv", "counter_collection.csv", "agent_info.csv",
                                     "memory_copy_trace.csv")
#: the rest of a rocprofv3 CSV set: read with the kernel trace or not at all, never inputs of their own
AUX = (AGENTS, COPIES, "hip_api_trace.csv", "hsa_api_trace.csv", "marker_api_trace.csv", "rccl_api_trace.csv",
       "memory_allocation_trace.csv", "scratch_memory_trace.csv", "rocdecode_api_trace.csv",
       "rocjpeg_api_trace.csv", "kernel_stats.csv", "hip_stats.csv", "hsa_stats.csv", "memory_copy_stats.csv",
       "marker_stats.csv", "rccl_stats.csv", "domain_stats.csv", "memory_allocation_stats.csv",
       "scratch_memory_stats.csv")


def looks_like(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0].replace(b'"', b"")
    kernel = b"Kind,Agent_Id,Queue_Id" in first and b"Kernel_Name" in first and b"Grid_Size_X" in first
    counters = b"Dispatch_Id" in first and b"Counter_Name" in first and b"Counter_Value" in first
    return kernel or counters


def _prefix(name: str, suffix: str) -> str | None:
    return name[: -len(suffix)] if name == suffix or name.endswith("_" + suffix) else None


def is_companion(path: Path) -> bool:
    """A CSV of a rocprofv3 set that the set's kernel trace (or counter collection) reads or stands for."""
    name = path.name
    for suffix in (COUNTERS, *AUX):
        prefix = _prefix(name, suffix)
        if prefix is None:
            continue
        owners = (KERNELS,) if suffix == COUNTERS else (KERNELS, COUNTERS)
        return any((path.parent / f"{prefix}{o}").is_file() for o in owners)
    return False


def _csv(path: Path) -> pd.DataFrame:
    return read_csv(path, dtype=str, keep_default_na=False)


def _int(v: Any, default: int = 0) -> int:
    """An optional integer field: its digits (e.g. "1" or "Agent 1"), within 64 bits, else ``default``."""
    m = re.search(r"-?\d+", str(v))
    out = int_or_none(m.group()) if m else None
    return default if out is None else out


def _col(frame: pd.DataFrame, *names: str) -> pd.Series | None:
    lower = {c.lower(): c for c in frame.columns}
    for n in names:
        if n.lower() in lower:
            return frame[lower[n.lower()]]
    return None


def _agents(path: Path) -> dict[int, v3.Agent]:
    """``agent_info.csv`` by logical node id (what the traces' Agent_Id holds); {} when absent."""
    if not path.is_file():
        return {}
    frame = _csv(path)
    out: dict[int, v3.Agent] = {}
    for _, row in frame.iterrows():
        r = {k.lower(): v for k, v in row.items()}
        node = _int(r.get("logical_node_id", r.get("node_id", "")), -1)
        kind = str(r.get("agent_type", "")).upper()
        out[node] = v3.Agent(
            id=v3.Handle(node), type=2 if "GPU" in kind or kind == "2" else 1, name=str(r.get("name", "")),
            product_name=str(r.get("product_name", "")), cu_count=_int(r.get("cu_count", 0)),
            num_xcc=_int(r.get("num_xcc", 0)), wave_front_size=_int(r.get("wave_front_size", 0)),
            max_engine_clk_fcompute=_int(r.get("max_engine_clk_fcompute", 0)), node_id=_int(r.get("node_id", -1)),
            logical_node_id=node)
    return out


def _dispatches_from_trace(frame: pd.DataFrame, where: Path) -> tuple[list[v3.Dispatch], dict[int, str]]:
    need = ("Dispatch_Id", "Kernel_Name", "Start_Timestamp", "End_Timestamp")
    missing = [c for c in need if _col(frame, c) is None]
    if missing:
        raise FormatMismatchError(where, f"lacks {', '.join(missing)}: not a rocprofv3 kernel_trace.csv")
    names: dict[int, str] = {}
    disp = []
    kernel_ids = _col(frame, "Kernel_Id")
    by_name: dict[str, int] = {}
    for i, r in enumerate(frame.to_dict("records")):
        r = {k.lower(): v for k, v in r.items()}
        name = str(r["kernel_name"])
        kid = _int(kernel_ids.iloc[i]) if kernel_ids is not None else by_name.setdefault(name, len(by_name))
        names.setdefault(kid, name)
        disp.append(v3.Dispatch(  # the fields every row needs: a typed error naming the file, row and column
            start_timestamp=as_int(where, f"row {i + 2}: Start_Timestamp", r["start_timestamp"]),
            end_timestamp=as_int(where, f"row {i + 2}: End_Timestamp", r["end_timestamp"]),
            dispatch_info=v3.DispatchInfo(
                agent_id=v3.Handle(_int(r.get("agent_id", -1), -1)), queue_id=v3.Handle(_int(r.get("queue_id", 0))),
                kernel_id=kid, dispatch_id=as_int(where, f"row {i + 2}: Dispatch_Id", r["dispatch_id"]),
                workgroup_size=_dim(r, "workgroup_size"), grid_size=_dim(r, "grid_size"))))
    return disp, names


def _dim(r: dict[str, Any], base: str) -> v3.Dim3:
    """Per-axis sizes (kernel_trace.csv), else one total (counter_collection.csv) taken as x."""
    if f"{base}_x" in r:
        return v3.Dim3(*(_int(r.get(f"{base}_{a}", 1), 1) for a in "xyz"))
    return v3.Dim3(_int(r.get(base, 1), 1), 1, 1)


def _counter_values(frame: pd.DataFrame, where: Path) -> dict[int, dict[str, float]]:
    """Long form -> {dispatch id: {counter: Σ value}} (one row per counter instance: summed, like X_sum)."""
    ids, names, raw = _col(frame, "Dispatch_Id"), _col(frame, "Counter_Name"), _col(frame, "Counter_Value")
    if ids is None or names is None or raw is None:
        lack = [c for c, v in (("Dispatch_Id", ids), ("Counter_Name", names), ("Counter_Value", raw)) if v is None]
        raise FormatMismatchError(where, f"lacks {', '.join(lack)}: not a rocprofv3 counter_collection.csv")
    values = pd.to_numeric(raw, errors="coerce")
    out: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    grouped = pd.DataFrame({"d": ids.map(_int), "n": names, "v": values}).groupby(["d", "n"], sort=False)["v"].sum()
    for (d, n), v in grouped.items():
        out[int(d)][str(n)] = float(v)
    return out


def read(path: str | Path, definitions: str = "3.6") -> pd.DataFrame:
    path = Path(path)
    check_exists(path)
    frame = _csv(path)
    if frame.empty:
        raise NoKernelsError(path, "has a header but no dispatch")
    is_counters = _col(frame, "Counter_Name") is not None
    suffix = COUNTERS if is_counters else KERNELS
    prefix = _prefix(path.name, suffix) or ""
    counters_path = path if is_counters else path.parent / f"{prefix}{COUNTERS}"
    per_dispatch = _counter_values(_csv(counters_path), counters_path) if counters_path.is_file() else None
    if is_counters:  # the counter collection alone: one dispatch per Dispatch_Id, its first row
        ids = _col(frame, "Dispatch_Id")
        if ids is None:
            raise FormatMismatchError(path, "lacks Dispatch_Id: not a rocprofv3 counter_collection.csv")
        first = frame.drop_duplicates(subset=[ids.name])
        disp, names = _dispatches_from_trace(first.reset_index(drop=True), path)
    else:
        disp, names = _dispatches_from_trace(frame, path)
    agents = _agents(path.parent / f"{prefix}{AGENTS}")
    gpus = [a for a in agents.values() if a.type == 2]
    if len(gpus) == 1:  # one GPU: dispatches naming it by another number (a GPU index) are still its
        agents = {**{d.dispatch_info.agent_id.handle: gpus[0] for d in disp}, **agents}
    rows = v3.dispatch_rows(path, FORMAT, disp, names, agents, per_dispatch, definitions, path.name,
                            counters_path.name)
    copies = path.parent / f"{prefix}{COPIES}"
    n_copies = max(0, sum(1 for _ in copies.open()) - 1) if copies.is_file() else None
    meta = provenance_record(path, FORMAT, tool="rocprofv3 (rocprofiler-sdk)", reader="pandas",
                             counters=counters_path.name if per_dispatch else None,
                             agents=(f"{prefix}{AGENTS}" if agents else None), memory_copies=n_copies,
                             dispatches=len(rows), definitions=definitions)
    return set_provenance(conform_kernels(rows), [meta])
