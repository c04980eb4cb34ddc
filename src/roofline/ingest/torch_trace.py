"""PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzip: one row per GPU operation.

Every schema era is read (``shared/reference/trace_formats.md`` §2): the 1.8-era bare array with
capitalised categories and ``external id``; 1.9 with ``schemaVersion``; 1.10+ ``cpu_op``/``kernel``/
``ac2g``; 2.x with ``cuda_driver`` and float ``ts``. NVIDIA and ROCm alike.

A row is a CPU operator with the GPU work it launched (kernels, memcpys, memsets): its GPU time
is the sum of their durations, FLOPs and bytes come from the op's shapes (``metrics/op_models.py``),
memcpy/memset bytes and NCCL message sizes from their own args. GPU events are tied to their op by
the launch's ``correlation`` → runtime event → ``External id`` (or, failing that, the innermost op
whose span holds the launch on the same thread), then by the event's own ``External id``. GPU
events that cannot be tied (launched before the window opened, graph replays) are rows of their
own, labelled in ``attribution``: GPU time is never dropped. CUPTI range-profiler events carry
measured FP instruction counts; their rows use those.
"""

from __future__ import annotations

import bisect
import gc
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from roofline.errors import FormatMismatchError, NoKernelsError
from roofline.ingest.common import check_exists, load_json, provenance_record
from roofline.metrics.flops import flops_from_counts
from roofline.metrics.op_models import collective_bytes, cost
from roofline.schema import UNAVAILABLE, conform_kernels, set_provenance

CPU_CATS = frozenset({"cpu_op", "Operator", "operator"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "runtime"})
KERNEL_CATS = frozenset({"kernel", "Kernel"})
COPY_CATS = frozenset({"gpu_memcpy", "Memcpy", "gpu_memset", "Memset"})
RANGE_CAT = "cuda_profiler_range"
#: category -> what the reader does with it: 1 CPU op, 2 GPU event, 3 launch, 4 CUPTI range, 5 annotation
KINDS = {**{c: 1 for c in CPU_CATS}, **{c: 2 for c in KERNEL_CATS | COPY_CATS}, **{c: 3 for c in RUNTIME_CATS},
         RANGE_CAT: 4, "user_annotation": 5}
NUMBER = (int, float)
FLOP_SOURCES = tuple(f"flop_{p}_source" for p in ("fp64", "fp32", "fp16", "tensor"))
ZERO_FLOPS = {f"flop_{p}": 0.0 for p in ("fp64", "fp32", "fp16", "tensor")}
NAN_FLOPS = {f"flop_{p}": float("nan") for p in ("fp64", "fp32", "fp16", "tensor")}
NO_CACHE = (f"{UNAVAILABLE}: a PyTorch trace has no cache counters; profile the kernel with "
            "ncu --section SpeedOfLight_HierarchicalSingleRooflineChart for L2/L1")
NO_MODEL = "{u}: no FLOP model for {op} (time is counted; see docs/traces.md for the ops modelled)"


def _load(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    data = load_json(path)
    if isinstance(data, list):
        return data, {}
    if isinstance(data, dict) and isinstance(data.get("traceEvents"), list):
        return data["traceEvents"], data
    raise FormatMismatchError(path, "is JSON but not a PyTorch profiler trace (no traceEvents list)")


class _Ops:
    """CPU operators: by External id, and per thread for innermost-op lookups by time."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, Any, Any, dict[str, Any]]] = []
        self.by_ext: dict[Any, int] = {}
        self.threads: dict[tuple[Any, Any], tuple[list[float], list[int]]] = {}

    def add(self, e: dict[str, Any], ts: float, dur: float) -> None:
        args = e.get("args") or {}
        ext = args.get("External id")
        if ext is None:
            ext = args.get("external id")
        if ext is not None and ext not in self.by_ext:
            self.by_ext[ext] = len(self.rows)
        self.rows.append((e.get("name", ""), ts, ts + dur, e.get("pid"), e.get("tid"), args))

    def index(self) -> None:
        per: dict[tuple[Any, Any], list[int]] = defaultdict(list)
        for i, r in enumerate(self.rows):
            per[(r[3], r[4])].append(i)
        for key, idx in per.items():
            idx.sort(key=lambda i: self.rows[i][1])
            self.threads[key] = ([self.rows[i][1] for i in idx], idx)

    def innermost(self, pid: Any, tid: Any, ts: float) -> int | None:
        found = self.threads.get((pid, tid))
        if not found:
            return None
        starts, idx = found
        j = bisect.bisect_right(starts, ts) - 1
        for k in range(j, max(-1, j - 64), -1):  # nested ops: the latest start that still holds ts
            if self.rows[idx[k]][2] >= ts:
                return idx[k]
        return None


def read(path: str | Path) -> pd.DataFrame:
    """The canonical frame of a Kineto trace: one row per CPU op with GPU work, plus orphan GPU events."""
    path = Path(path)
    check_exists(path)
    enabled = gc.isenabled()
    gc.disable()  # the parse makes millions of small objects; cyclic GC only slows it down
    try:
        events, top = _load(path)
        return _build(path, events, top)
    finally:
        if enabled:
            gc.enable()


def _build(path: Path, events: list[dict[str, Any]], top: dict[str, Any]) -> pd.DataFrame:
    devices = {p.get("id"): p for p in (top.get("deviceProperties") or []) if isinstance(p, dict)}
    rank = (top.get("distributedInfo") or {}).get("rank") if isinstance(top.get("distributedInfo"), dict) else None
    ops, runtimes, gpu, ranges, steps = _Ops(), {}, [], [], []
    skipped = 0
    kinds = KINDS
    for e in events:
        try:
            kind = kinds.get(e.get("cat"))
        except (AttributeError, TypeError):  # not an event object, or an unhashable cat
            continue
        if kind is None or e.get("ph") != "X":
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if ts.__class__ not in NUMBER or dur.__class__ not in NUMBER:
            skipped += 1
            continue
        if kind == 1:
            ops.add(e, ts, dur)
        elif kind == 2:
            gpu.append(e)
        elif kind == 3:
            args = e.get("args")
            corr = args.get("correlation") if args else None
            if corr is not None:
                runtimes[corr] = (ts, e.get("pid"), e.get("tid"), args.get("External id", args.get("external id")),
                                  e.get("name", ""))
        elif kind == 4:
            ranges.append(e)
        elif str(e.get("name", "")).startswith("ProfilerStep#"):
            steps.append((ts, ts + dur, e["name"]))
    if not gpu and not ranges:
        why = "no GPU events (kernel, memcpy, memset or CUPTI range): a CPU-only trace, nothing to put on a GPU roofline"
        if skipped:
            why += f"; {skipped} events lacked ts or dur"
        raise NoKernelsError(path, why)
    ops.index()
    steps.sort()
    groups: dict[int, list[dict[str, Any]]] = defaultdict(list)
    orphans: list[tuple[dict[str, Any], str]] = []
    for e in gpu:
        args = e.get("args") or {}
        op, label = _link(args, runtimes, ops)
        if op is None:
            orphans.append((e, label))
        else:
            groups[op].append(e)

    rows = []
    for op, evs in groups.items():
        rows.append(_op_row(ops.rows[op], evs, devices, steps, "op"))
    for e, label in orphans:
        rows.append(_op_row(None, [e], devices, steps, label))
    for e in ranges:
        rows.append(_range_row(e, devices))
    rows.sort(key=lambda r: r.pop("_ts"))
    for i, r in enumerate(rows):
        r["kernel_id"] = i
        r["rank"] = rank
        r["source_file"] = str(path)
    from roofline.hardware.specs import fill_spec_peaks

    columns = dict.fromkeys(k for r in rows[:1] for k in r)  # first row's keys, then any others
    for r in rows:
        if len(r) != len(columns) or r.keys() != columns.keys():
            columns.update(dict.fromkeys(r))
    # from_records fills missing keys itself, in C: ~3x faster than a list per column
    frame = fill_spec_peaks(conform_kernels(pd.DataFrame.from_records(rows, columns=list(columns))))
    import orjson

    meta = provenance_record(path, "torch-trace", reader=f"orjson {orjson.__version__}")
    meta.update(_trace_meta(top, events, gpu + ranges, orphans, groups, skipped))
    return set_provenance(frame, [meta])


def _link(args: dict[str, Any], runtimes: dict[Any, Any], ops: _Ops) -> tuple[int | None, str]:
    rt = runtimes.get(args.get("correlation"))
    if rt is not None:
        op = ops.by_ext.get(rt[3]) if rt[3] is not None else None
        if op is None:
            op = ops.innermost(rt[1], rt[2], rt[0])
        if op is not None:
            return op, "op"
        if "Graph" in rt[4]:
            return None, "orphan: graph replay (the graph's ops are not in the trace)"
        return None, "orphan: launch outside any CPU op"
    ext = args.get("External id", args.get("external id"))
    op = ops.by_ext.get(ext) if ext is not None else None
    if op is not None:
        return op, "op"
    return None, "orphan: launched outside the capture window (no launch event)"


def _step(steps: list[tuple[float, float, str]], ts: float) -> str | None:
    j = bisect.bisect_right(steps, (ts, float("inf"), "")) - 1
    return steps[j][2] if j >= 0 and steps[j][1] >= ts else None


def _op_row(op: tuple | None, evs: list[dict[str, Any]], devices: dict[Any, Any], steps: list, label: str) -> dict:
    if len(evs) == 1:
        main = evs[0]
        dur_us = float(main["dur"])
    else:
        dur_us = sum(float(e["dur"]) for e in evs)
        main = max(evs, key=lambda e: float(e["dur"]))
    margs = main.get("args") or {}
    dev = margs.get("device", main.get("pid"))
    prop = devices.get(dev) or (next(iter(devices.values())) if len(devices) == 1 else {})
    copies = [e for e in evs if e.get("cat") in COPY_CATS]
    copies_only = len(copies) == len(evs)
    copied, host = _copy_bytes(copies) if copies else (0.0, 0.0)
    name = op[0] if op else main.get("name", "")
    row: dict[str, Any] = {
        "_ts": op[1] if op else float(main["ts"]), "format": "torch-trace", "kernel_name": name,
        "kernel_short_name": name if op else _short(name), "mangled_name": main.get("name"),
        "nvtx_range": _step(steps, op[1] if op else float(main["ts"])) if steps else None,
        "device_name": prop.get("name"), "sm_count": prop.get("numSms"),
        "compute_capability": f"{prop['computeMajor']}.{prop['computeMinor']}" if "computeMajor" in prop else None,
        "duration_s": dur_us * 1e-6, "duration_s_source": f"Σ dur of {len(evs)} GPU event(s) ({main.get('cat')})",
        "attribution": label, "replay_ok": True,
    }
    grid, block = margs.get("grid"), margs.get("block")
    if isinstance(grid, list) and len(grid) == 3:
        row["grid_x"], row["grid_y"], row["grid_z"] = grid
    if isinstance(block, list) and len(block) == 3:
        row["block_x"], row["block_y"], row["block_z"] = block
    args = op[5] if op else {}
    c = cost(name, args.get("Input Dims", args.get("Input dims")), args.get("Input type"), args.get("Concrete Inputs")) \
        if op else None
    row.update(ZERO_FLOPS if c else NAN_FLOPS)
    nelems = margs.get("In msg nelems", args.get("In msg nelems"))
    coll = collective_bytes(nelems, margs.get("dtype", args.get("dtype"))) if nelems is not None else None
    if c is not None:
        col = {"tensor": "flop_tensor", "fp16": "flop_fp16", "bf16": "flop_fp16", "fp32": "flop_fp32",
               "fp64": "flop_fp64"}.get(c.precision)
        if col:
            row[col] = c.flops
        row.update(dict.fromkeys(FLOP_SOURCES, f"model: {c.formula} (from Input Dims; {len(evs)} GPU event(s))"))
        row["tensor_path"] = c.tensor_path
        row["dram_bytes"], row["dram_bytes_source"] = c.bytes, "model: inputs + outputs from shapes, each once"
    elif coll is not None:
        row["dram_bytes"] = coll
        row["dram_bytes_source"] = "NCCL message: In msg nelems × dtype size"
        row.update(dict.fromkeys(FLOP_SOURCES, f"{UNAVAILABLE}: a collective moves data; its reduction FLOPs are not modelled"))
    elif copies_only:
        if host:
            row["dram_bytes"] = float("nan")
            row["dram_bytes_source"] = (f"{UNAVAILABLE}: host<->device copy of {host:.0f} B: bound by PCIe/NVLink, "
                                        "not by device memory")
        else:
            row["dram_bytes"] = copied
            row["dram_bytes_source"] = "memcpy/memset args: bytes (device-to-device copies read and write: × 2)"
        row.update(ZERO_FLOPS)
        row.update(dict.fromkeys(FLOP_SOURCES, "memcpy/memset: no FLOPs"))
    else:
        why = NO_MODEL.format(u=UNAVAILABLE, op=name) if op else f"{UNAVAILABLE}: {label}; no CPU op shapes to model it"
        if op and not args.get("Input Dims", args.get("Input dims")):
            why = f"{UNAVAILABLE}: no Input Dims for {name}; record with torch.profiler.profile(record_shapes=True)"
        row.update(dict.fromkeys(FLOP_SOURCES, why))
        row["dram_bytes"], row["dram_bytes_source"] = float("nan"), why
    row["l2_bytes_source"] = row["l1_bytes_source"] = NO_CACHE
    return row


def _copy_bytes(evs: list[dict[str, Any]]) -> tuple[float, float]:
    """(device-memory bytes, host<->device bytes) of the memcpy/memset events among ``evs``."""
    device = host = 0.0
    for e in evs:
        if e.get("cat") not in COPY_CATS:
            continue
        n = float((e.get("args") or {}).get("bytes") or 0)
        name = str(e.get("name", ""))
        if "memset" in name.lower() or "Memset" in str(e.get("cat")):
            device += n
        elif "DtoD" in name:
            device += 2 * n
        else:  # HtoD, DtoH, HtoH, PtoP: the link bounds them
            host += n
    return device, host


def _short(name: str) -> str:
    base = name.split("(")[0].split("<")[0].strip()
    return base.rsplit(" ", 1)[-1].rsplit("::", 1)[-1] or name[:60]


def _range_row(e: dict[str, Any], devices: dict[Any, Any]) -> dict[str, Any]:
    """A CUPTI range-profiler event: measured FP instruction counts, FLOPs = add + mul + 2·fma."""
    args = e.get("args") or {}
    prop = next(iter(devices.values())) if devices else {}
    row: dict[str, Any] = {
        "_ts": float(e["ts"]), "format": "torch-trace", "kernel_name": e.get("name", ""),
        "kernel_short_name": _short(e.get("name", "")), "device_name": prop.get("name"),
        "duration_s": float(e["dur"]) * 1e-6, "duration_s_source": "cuda_profiler_range dur",
        "attribution": "measured: CUPTI range profiler", "replay_ok": True,
        "l2_bytes_source": NO_CACHE, "l1_bytes_source": NO_CACHE,
        "dram_bytes": float("nan"), "dram_bytes_source": f"{UNAVAILABLE}: the range profiler recorded no DRAM counters",
    }
    for letter, p in (("d", "fp64"), ("f", "fp32"), ("h", "fp16")):
        vals = [args.get(f"smsp__sass_thread_inst_executed_op_{letter}{op}_pred_on.sum") for op in ("add", "mul", "fma")]
        if all(isinstance(v, (int, float)) for v in vals):
            row[f"flop_{p}"] = flops_from_counts(*vals, p)
            row[f"flop_{p}_source"] = f"measured: CUPTI range profiler {letter}add + {letter}mul + 2·{letter}fma"
        else:
            row[f"flop_{p}"] = float("nan")
            row[f"flop_{p}_source"] = f"{UNAVAILABLE}: the range profiler did not record {letter}add/{letter}mul/{letter}fma"
    row["flop_tensor"], row["flop_tensor_source"] = float("nan"), f"{UNAVAILABLE}: no tensor counters in the range profiler"
    return row


def _trace_meta(top: dict, events: list, gpu: list, orphans: list, groups: dict, skipped: int) -> dict[str, Any]:
    total = sum(float(e["dur"]) for e in gpu)
    orphan = sum(float(e["dur"]) for e, _ in orphans)
    return {
        "trace_events": len(events), "gpu_events": len(gpu), "ops_with_gpu_work": len(groups),
        "gpu_time_s": total * 1e-6, "orphan_gpu_time_s": orphan * 1e-6,
        "attributed_share": (total - orphan) / total if total else None,
        "events_without_ts_or_dur": skipped,
        "distributed": top.get("distributedInfo"),
        "with_flops": top.get("with_flops"), "schema_version": top.get("schemaVersion"),
    }
