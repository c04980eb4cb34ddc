"""XLA profiles (XSpace ``*.xplane.pb``: JAX, TensorFlow, PyTorch/XLA; TPU or GPU): one row per HLO op.

A row is one HLO op of one program (``program_id``) over all its occurrences on the device planes
of one device type (and one step, where a ``Steps`` line marks them), like XProf's ``hlo_stats``:
``occurrences``, self time (``duration_s``; ``total_time_s`` includes nested ops), FLOPs and HBM
bytes, with the per-memory-space split in ``hbm_{read,write}_bytes`` / ``onchip_{read,write}_bytes``.
Each device type (and step) also gets an ``IDLE`` row: the device time no op covered, which XProf
counts in its program-level time, so ``aggregate(by="program")`` (``--by program``) reproduces
XProf's program row and ``--by nvtx`` its per-step rows.

FLOPs and bytes: TPU ops carry XLA's cost analysis as stats of their event metadata (one
occurrence's worth: × occurrences). GPU xplanes carry none; ``xla_cost`` runs the ``xprof``
converter (extra ``roofline[xla]``) for them, else they are unavailable and say so.
Peaks: the device plane's own peaks where it has them (TPU: ``peak_teraflops_per_second``,
``peak_hbm_bw_gigabytes_per_second``), else the spec table (the roofs stage, ``hardware/attach.py``), else
the plane's recorded memory bandwidth and xprof's peak (the table outranks them). Decisions: ``docs/xla.md``.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from roofline.errors import CorruptReportError, path_text
from roofline.hardware.names import by_capabilities
from roofline.ingest.common import provenance_record
from roofline.ingest.xla import cost as xc
from roofline.ingest.xla import xplane_decode as xd
from roofline.schema import (
    FLOP_COLUMNS,
    INT64_MAX,
    INT64_MIN,
    NOT_IN_SPEC_TABLE,
    UNAVAILABLE,
    conform_kernels,
    kernel_dtypes,
    kernels_from_records,
    set_provenance,
    source_column,
)

FORMAT = "xplane"
SUFFIXES = (".xplane.pb",)
IDLE = "IDLE"
NO_CACHE = (f"{UNAVAILABLE}: an xplane holds no cache counters; XLA's cost analysis counts HBM bytes (and on "
            "TPU on-chip VMEM/CMEM bytes: onchip_read_bytes, onchip_write_bytes)")
NO_XPROF = (f"{UNAVAILABLE}: a GPU xplane holds no FLOPs or bytes; install the extra roofline[xla] (xprof) "
            "for XLA's GPU cost analysis")
SKIPPED = (f"{UNAVAILABLE}: XLA's cost analysis was not run (read(..., cost_analysis=False)); a GPU xplane holds "
           "no FLOPs or bytes of its own")
NO_BREAKDOWN = (f"{UNAVAILABLE}: XLA gave this op no per-memory breakdown (async and host copies): its "
                "bytes_accessed, all memory spaces, is in xla_accessed_bytes; XProf counts it as HBM for the op but "
                "not in its program total")
NOT_XLA = (f"{UNAVAILABLE}: no XLA op on any device plane (TensorFlow ops outside XLA, or another runtime): the "
           "xplane records the kernels' times but no FLOPs or bytes, and XLA's cost analysis covers only XLA ops")
_NAN = float("nan")
#: GPUs named from the device plane's capabilities (the plane has no name): vendor, compute
#: capability, SMs/CUs, memory GiB -> spec-table name. Only parts one combination identifies.
_GPU_BY_CAPS = {
    ("AMD", "9.4", 304, 192): "MI300X",
    ("NVIDIA", "9.0", 132, 80): "H100 SXM",
    ("NVIDIA", "8.0", 108, 80): "A100 SXM4 80GB",
    ("NVIDIA", "8.0", 108, 40): "A100 SXM4 40GB",
}


def read(path: str | Path, cost_analysis: bool = True) -> pd.DataFrame:
    """The canonical frame of an xplane: one row per HLO op (and step), plus IDLE rows.

    ``cost_analysis=False`` skips the xprof converter for GPU planes (times only, much faster).
    """
    path = Path(path)
    space = xd.load(path)
    try:
        return _read(path, space, cost_analysis)
    except (TypeError, ValueError, OverflowError) as exc:  # a stat of another type than XLA writes, or past 64 bits
        raise CorruptReportError(path, f"an XSpace stat of an unexpected type or size ({type(exc).__name__}: "
                                       f"{str(exc)[:200]})") from None


def _read(path: Path, space: Any, cost_analysis: bool) -> pd.DataFrame:
    planes = xd.device_planes(path, space)
    modules = xd.module_names(space)
    needs_cost = any(p.style == "gpu" for p in planes if p.ops)
    costs = xc.cost_table(path) if needs_cost and cost_analysis else None
    skipped = None if cost_analysis else SKIPPED
    if any(p.style == xd.KERNELS for p in planes):
        skipped, needs_cost = NOT_XLA, True
    rows = build_rows(planes, modules, costs, needs_cost, skipped if needs_cost else None)
    for i, r in enumerate(rows):
        r["kernel_id"] = i
        r["source_file"] = path_text(path)
    frame = _peaks(frame_of(rows), planes, costs)
    from google.protobuf import __version__ as pb_version

    meta = provenance_record(path, FORMAT, tool="XLA profiler (XSpace)", reader=f"protobuf {pb_version}",
                             cost_reader=(costs.reader if costs else None),
                             cost_error=(costs.error if costs else None) if needs_cost else None)
    meta.update(_space_meta(space, planes, costs))
    return set_provenance(frame, [meta])


def frame_of(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as a kernels frame: the canonical columns built typed, one array each (a generic frame conformed
    column by column cost ~40 ms for a few rows), then the XLA columns outside the schema (``hlo_op``,
    ``occurrences``...) with the types ``DataFrame.from_records`` infers for them, as the conformed frame had."""
    canonical = kernel_dtypes()
    keys = list(dict.fromkeys(k for r in rows for k in r))
    ints = [k for k in keys if canonical.get(k) == "Int64"]
    if any(not INT64_MIN <= v <= INT64_MAX for r in rows for k in ints if (v := r.get(k)) is not None):
        # a damaged stat past 64 bits (a core count): the conforming cast refuses it, and the file is said damaged
        # (the typed build would read it as missing)
        return conform_kernels(pd.DataFrame.from_records(rows))
    extra = [k for k in keys if k not in canonical]
    frame = kernels_from_records(rows)
    if not extra:
        return frame
    return pd.concat([frame, pd.DataFrame.from_records(rows, columns=extra)], axis=1)


def device_name(stats: dict[str, Any], plane_name: str) -> str:
    if stats.get("device_type_string"):
        return str(stats["device_type_string"])
    kind = "TPU" if "TPU" in plane_name else "GPU"
    if "core_count" not in stats:
        return kind  # no capabilities recorded (XProf's trace JSON): the device is unknown
    raw = str(stats.get("device_vendor") or "NVIDIA").strip()  # CUDA planes may carry no vendor stat
    vendor = "AMD" if "amd" in raw.lower() else "NVIDIA" if "nvidia" in raw.lower() else raw
    cc = f"{stats.get('compute_cap_major', '?')}.{stats.get('compute_cap_minor', '?')}"
    cores = int(stats.get("core_count") or 0)
    gib = round(float(stats.get("memory_size") or 0) / 2**30)
    # the one table GPU these capabilities fit (NVIDIA: CUDA's bandwidth and max clock match the datasheets)
    bw, clock_hz = float(stats.get("memory_bandwidth") or 0), float(stats.get("clock_rate") or 0) * 1e3
    named = by_capabilities(vendor, cc, cores, bw, clock_hz) or _GPU_BY_CAPS.get((vendor, cc, cores, gib))
    if named:
        return named
    return f"{vendor + ' ' if vendor else ''}{kind} cc{cc} {cores} {'CUs' if vendor == 'AMD' else 'SMs'} {gib} GiB"


def build_rows(planes: list[xd.PlaneOps], modules: dict[int, str], costs: xc.CostTable | None,
               needs_cost: bool, timing_only: str | None = None) -> list[dict[str, Any]]:
    """Rows of the canonical frame (without source_file and kernel_id): ops by (device, step, program,
    op), then one IDLE row per device and step. ``timing_only``: the reason FLOPs and bytes are not read."""
    groups: dict[tuple[str, str | None, int | None, str, str], dict[str, Any]] = {}
    idle: dict[tuple[str, str | None], list[Any]] = defaultdict(lambda: [0, 0, 0, None])
    for plane in planes:
        dev = device_name(plane.stats, plane.name)
        starts = [s[0] for s in plane.steps]
        busy: dict[str | None, int] = defaultdict(int)
        steps, name = plane.steps, plane.name
        for occ in plane.ops:  # (thousands on a TPU plane: kept to plain operations)
            step = _step_of(steps, starts, occ.start_ps) if steps else None
            own = max(occ.self_ps, 0)
            busy[step] += own
            pid = occ.program_id
            # without a program_id the module name tells apart ops named alike in different programs
            key = (dev, step, pid, occ.module if pid is None else "", occ.op)
            g = groups.get(key)
            if g is None:
                g = groups[key] = {
                    "first": occ, "plane": plane, "occ": 0, "self": 0, "time": 0, "kernels": {}, "planes": set()}
            g["occ"] += 1
            g["self"] += own
            g["time"] += occ.end_ps - occ.start_ps
            if occ.kernels:
                g["kernels"].update(dict.fromkeys(occ.kernels))
            g["planes"].add(name)
        spans = {s[2]: s[1] - s[0] for s in plane.steps}
        spans[None] = plane.span_ps - sum(spans.values())
        for step, span in spans.items():
            rec = idle[(dev, step)]
            rec[0] += span - busy.get(step, 0)
            rec[1] += plane.non_xla_events if step is None else 0
            rec[2] += plane.non_xla_ps if step is None else 0
            rec[3] = plane
    fallback = {dev for (dev, *_), g in groups.items()} - {
        dev for (dev, *_), g in groups.items() if g["first"].meta.get("memory_access_breakdown")}
    rows = [_op_row(dev, step, pid, op, g, modules, costs, timing_only, dev in fallback)
            for (dev, step, pid, _, op), g in sorted(groups.items(), key=lambda kv: kv[1]["first"].start_ps)]
    rows += [_idle_row(dev, step, *rec) for (dev, step), rec in idle.items() if rec[0] > 0]
    return rows


def _step_of(steps: list[tuple[int, int, str]], starts: list[int], t: int) -> str | None:
    j = bisect.bisect_right(starts, t) - 1
    return steps[j][2] if j >= 0 and t < steps[j][1] else None


def _base(dev: str, step: str | None, plane: xd.PlaneOps) -> dict[str, Any]:
    s = plane.stats
    row: dict[str, Any] = {"format": FORMAT, "range_id": 0, "nvtx_range": step, "device_name": dev,
                           "replay_ok": True, "l2_bytes": _NAN, "l1_bytes": _NAN,
                           "l2_bytes_source": NO_CACHE, "l1_bytes_source": NO_CACHE}
    if plane.style in ("gpu", xd.KERNELS) and "compute_cap_major" in s:
        row["compute_capability"] = f"{s['compute_cap_major']}.{s.get('compute_cap_minor', 0)}"
        row["sm_count"] = int(s.get("core_count") or 0) or None
        # the plane's clock_rate is the device's maximum clock, not the clock the ops ran at
        row["sm_boost_clock_hz"] = float(s.get("clock_rate") or 0) * 1e3 or None
    return row


def _op_row(dev: str, step: str | None, pid: int | None, op: str, g: dict[str, Any], modules: dict[int, str],
            costs: xc.CostTable | None, timing_only: str | None, fallback: bool) -> dict[str, Any]:
    first: xd.Occurrence = g["first"]
    plane: xd.PlaneOps = g["plane"]
    tpu = plane.style == "tpu"
    meta = first.meta
    module = (modules.get(pid) if pid is not None else None) or first.module or str(meta.get("hlo_module") or "")
    n = g["occ"]
    row = _base(dev, step, plane)
    if pid is None:  # the events name no program: the module name alone says which
        name = f"{module}/{op}" if module else op
        short = name
    else:
        # the name says which program: a jit's ops are often named alike (custom-call.1 in every dot)
        name = f"{module}({pid})/{op}" if module else f"program {pid}/{op}"
        short = (f"{module}({pid})/{op}" if len(str(pid)) <= 6 else f"{module}/{op}") if module else op
    row.update({
        "kernel_name": name, "kernel_short_name": short,
        "hlo_op": op,
        "mangled_name": "; ".join(k for k in g["kernels"] if k) or None,
        "duration_s": g["self"] * 1e-12, "attribution": "hlo op",
        "duration_s_source": (f"xplane: Σ self time of {n} occurrence(s) on the XLA Ops line (device_duration_ps, "
                              "nested ops' time left out)" if tpu else
                              f"xplane: Σ duration of {n} kernel event(s) with hlo_op {op} ({first.line})"),
        "occurrences": n, "total_time_s": g["time"] * 1e-12, "program_id": None if pid is None else str(pid),
        "hlo_module": module or None,
        "framework_op": str(meta.get("tf_op") or "") or None, "devices": len(g["planes"]),
    })
    if plane.style == xd.KERNELS:  # a framework op's kernels, not an XLA op
        row.update({"hlo_op": None, "framework_op": op, "attribution": "framework op",
                    "duration_s_source": f"xplane: Σ duration of {n} kernel/copy event(s) of op {op} ({first.line}); "
                                         "no XLA op on any device plane"})
    if timing_only:
        row.update({"hlo_category": str(meta.get("hlo_category") or "") or None,
                    "hlo_expression": first.long_name or None, "dram_bytes": _NAN, "dram_bytes_source": timing_only})
        _put_flops(row, _NAN, "flop_fp32", None, timing_only)
    elif tpu:
        _tpu_cost(row, meta, n, first.long_name, fallback)
    else:
        _gpu_cost(row, pid, op, n, costs)
    row["flags"] = _caveat(row, n, first.long_name or str(row.get("hlo_expression") or ""))
    return row


#: async halves (copy-start, all-reduce-done, send/recv...): the op's time is not its transfer's
_ASYNC = re.compile(r"-(start|done|update)(\.\d+)?$|^(send|recv)(-done)?(\.\d+)?$")
#: XLA FLOPs per element of an op's largest array above which they are cost units, not arithmetic
COST_UNIT_FLOP_PER_ELEMENT = 64


def _caveat(row: dict[str, Any], n: int, long_name: str) -> str | None:
    """Why an op's point can sit above a roof without a wrong peak: said in ``flags``, values unchanged."""
    op, category = str(row.get("hlo_op") or ""), str(row.get("hlo_category") or "")
    if _ASYNC.search(op) or _ASYNC.search(category):
        return ("async op: its time is the issue (start) or the wait (done), while the transfer runs in the "
                "background, so its bandwidth and % of roof do not describe the transfer")
    flops = row.get("xla_flop")
    if row.get("tensor_path") is None and isinstance(flops, float) and flops > 0 and n:
        elems = xc.largest_shape_elements(long_name)
        per = flops / n / elems if elems else 0.0
        if per > COST_UNIT_FLOP_PER_ELEMENT:
            return (f"XLA's cost analysis gives {per:.0f} FLOP per element of the op's largest array: its GPU model "
                    "counts transcendental functions (sin, exp, log, tanh...) by their cycle cost, so this FLOP count "
                    "and rate are cost units and can exceed the vector roof")
    return None


def _put_flops(row: dict[str, Any], total: float, col: str, path: str | None, source: str) -> None:
    for c in FLOP_COLUMNS:
        row[c] = total if c == col else (0.0 if not math.isnan(total) else _NAN)
        row[source_column(c)] = source
    row["tensor_path"] = path


def _tpu_cost(row: dict[str, Any], meta: dict[str, Any], n: int, long_name: str, fallback: bool) -> None:
    category = str(meta.get("hlo_category") or "")
    row.update({"hlo_category": category or None, "hlo_expression": long_name or None})
    flops = meta.get("flops")
    total = float(flops) * n if flops is not None else _NAN
    row["xla_flop"] = total
    row["xla_model_flop"] = float(meta["model_flops"]) * n if meta.get("model_flops") is not None else _NAN
    src = (f"xplane: XLA cost analysis 'flops' stat of the op × {n} occurrence(s)" if flops is not None else
           f"{UNAVAILABLE}: the op's metadata has no 'flops' stat")
    accessed = float(meta["bytes_accessed"]) * n if meta.get("bytes_accessed") is not None else _NAN
    breakdown = tuple((t, s, b * n) for t, s, b in _breakdown(meta.get("memory_access_breakdown")))
    split = xc.split_bytes(accessed, breakdown, fallback)
    bsrc = (f"xplane: memory_access_breakdown HBM read + write × {n} occurrence(s)" if breakdown else
            f"xplane: bytes_accessed × {n} occurrence(s) (no op has a per-memory breakdown: all counted as HBM, "
            "as XProf)" if fallback else NO_BREAKDOWN)
    _finish_cost(row, category, total, src, accessed, split, bsrc, xc.flop_column(category, row["hlo_op"], long_name,
                                                                                  True))


def _breakdown(raw: Any) -> list[tuple[int, int, float]]:
    if not isinstance(raw, bytes) or not raw:
        return []
    from google.protobuf.message import DecodeError

    from roofline.ingest.xla.protos import xplane_pb2

    msg = xplane_pb2.MemoryAccessBreakdown()
    try:
        msg.ParseFromString(raw)
    except DecodeError:
        return []  # a damaged breakdown: bytes_accessed still gives the total
    return [(m.operation_type, m.memory_space, float(m.bytes_accessed)) for m in msg.memory_accessed]


def _gpu_cost(row: dict[str, Any], pid: int | None, op: str, n: int, costs: xc.CostTable | None) -> None:
    cost = costs.ops.get((pid, op)) if costs and pid is not None else None
    if cost is None:
        why = (NO_XPROF if costs is None else
               f"{UNAVAILABLE}: the op's kernel events carry no program_id, so XLA's cost analysis (keyed by program "
               "and op) cannot be tied to it; the times are kept" if pid is None else
               f"{UNAVAILABLE}: {costs.error}" if costs.error else
               f"{UNAVAILABLE}: xprof's cost analysis has no op {op} of program {pid} (its HLO module is missing "
               "from the /host:metadata plane)")
        _put_flops(row, _NAN, "flop_fp32", None, why)
        row.update({"dram_bytes": _NAN, "dram_bytes_source": why, "xla_flop": _NAN})
        return
    scale = n / cost.occurrences if cost.occurrences else 1.0  # XProf's totals are over its occurrences
    row.update({"hlo_category": cost.category or None, "hlo_expression": cost.long_name or None})
    total, accessed = cost.flops * scale, cost.bytes_accessed * scale
    row["xla_flop"], row["xla_model_flop"] = total, cost.model_flops * scale
    src = f"{costs.reader}: flops of {n} occurrence(s)"
    fallback = not any(c.breakdown for c in costs.ops.values())
    split = xc.split_bytes(accessed, tuple((t, s, b * scale) for t, s, b in cost.breakdown), fallback)
    bsrc = (f"{costs.reader}: HBM read + write of the memory access breakdown" if cost.breakdown else
            f"{costs.reader}: bytes_accessed (no op has a per-memory breakdown: all counted as HBM, as XProf)"
            if fallback else NO_BREAKDOWN)
    gemm = xc.library_gemm(cost.long_name) if total == 0 else None
    if gemm is not None:  # XLA's analysis gives library GEMM calls 0: use their shapes
        total = gemm.flops * n
        src = f"model: {gemm.formula} × {n} occurrence(s) (XLA's cost analysis gives this library GEMM 0 FLOPs)"
        if not split["hbm_bytes"] > 0:  # 0 or NaN: XLA gave no bytes either
            split["hbm_bytes"] = gemm.bytes * n
            bsrc = f"model: operands + result from the HLO shapes × {n} (XLA's cost analysis gives 0 bytes)"
    opaque = xc.unknown_custom_call(cost.long_name) if total == 0 and gemm is None else None
    if opaque is not None:  # unknown is not zero
        total, src = _NAN, f"{UNAVAILABLE}: {opaque}"
    _finish_cost(row, row["hlo_category"] or "", total, src, accessed, split, bsrc,
                 xc.flop_column(cost.category, op, cost.long_name, False))


def _finish_cost(row: dict[str, Any], category: str, total: float, src: str, accessed: float,
                 split: dict[str, float], bsrc: str, where: tuple[str, str | None]) -> None:
    if category in xd.OUTER_CATEGORIES:
        # a while/call/conditional's work is its inner ops' (rows of their own): count it once
        why = f"xla: a {category} op's work is that of the ops it runs, which have rows of their own (as XProf)"
        _put_flops(row, 0.0, where[0], where[1], why)
        row.update({"dram_bytes": 0.0, "dram_bytes_source": why})
    else:
        _put_flops(row, total, where[0], where[1], src)
        row.update({"dram_bytes": split["hbm_bytes"], "dram_bytes_source": bsrc})
    row["xla_accessed_bytes"] = accessed
    for k in ("hbm_read_bytes", "hbm_write_bytes", "onchip_read_bytes", "onchip_write_bytes"):
        row[k] = split[k]


def _idle_row(dev: str, step: str | None, idle_ps: int, non_xla: int, non_xla_ps: int, plane: xd.PlaneOps
              ) -> dict[str, Any]:
    why = ("idle: no kernel or copy ran (device time between events: no FLOPs, no bytes)" if plane.style == xd.KERNELS
           else "idle: no XLA op ran (XProf's IDLE: counted in the program's time, no FLOPs, no bytes)")
    row = _base(dev, step, plane)
    row.update({"kernel_name": IDLE, "kernel_short_name": IDLE, "hlo_op": IDLE, "duration_s": idle_ps * 1e-12,
                "duration_s_source": "xplane: device time (first to last event of each device plane"
                                     + (", per step" if step else "") + ") minus the ops' self time",
                "attribution": why, "occurrences": 0, "total_time_s": idle_ps * 1e-12, "hlo_category": IDLE,
                "dram_bytes": 0.0, "dram_bytes_source": why, "xla_flop": 0.0, "xla_accessed_bytes": 0.0,
                "flags": (f"includes {non_xla} device event(s) that are not XLA ops ({non_xla_ps * 1e-6:.1f} µs: "
                          "runtime copies or kernels without hlo_op)") if non_xla else None})
    _put_flops(row, 0.0, "flop_fp32", None, why)
    return row


def _peaks(frame: pd.DataFrame, planes: list[xd.PlaneOps], costs: xc.CostTable | None) -> pd.DataFrame:
    """The roofs the xplane records: the device plane's own peaks (XProf's); on GPU planes also its
    memory_bandwidth and xprof's peak from its compute-capability table, which the spec table outranks (the
    roofs stage keeps them only where the device has no table entry, as their source says)."""
    if frame.empty:
        return frame
    by_dev = {device_name(p.stats, p.name): p for p in planes}
    for dev, plane in by_dev.items():
        rows = (frame["device_name"] == dev).fillna(False).to_numpy()
        s = plane.stats
        tflops, hbm = s.get("peak_teraflops_per_second"), s.get("peak_hbm_bw_gigabytes_per_second")
        if tflops:
            frame.loc[rows, "peak_flop_per_s_tensor"] = float(tflops) * 1e12
            frame.loc[rows, "peak_flop_per_s_tensor_source"] = (
                f"xprof: device plane peak_teraflops_per_second {float(tflops):g} ({dev}; XProf's one compute roof)")
        if hbm:
            frame.loc[rows, "peak_dram_bytes_per_s"] = float(hbm) * 1e9
            frame.loc[rows, "peak_dram_bytes_per_s_source"] = (
                f"xprof: device plane peak_hbm_bw_gigabytes_per_second {float(hbm):g} (GB/s = 1e9 B/s; XProf shows "
                f"{float(hbm) * 1e9 / 2**30:.1f} GiB/s)")
        if plane.style == "tpu":
            for c in ("fp64", "fp32", "fp16"):
                frame.loc[rows, f"peak_flop_per_s_{c}_source"] = (
                    f"{UNAVAILABLE}: a TPU device plane gives one compute peak (the matrix unit's), used for every op")
            continue
        rows = ((frame["device_name"] == dev).fillna(False) & frame["peak_dram_bytes_per_s"].isna()).to_numpy()
        bw = s.get("memory_bandwidth")
        if bw and rows.any():
            frame.loc[rows, "peak_dram_bytes_per_s"] = float(bw)
            frame.loc[rows, "peak_dram_bytes_per_s_source"] = (
                f"xprof: device plane memory_bandwidth {float(bw) / 1e9:g} GB/s (driver-reported; {dev} "
                + NOT_IN_SPEC_TABLE)
        if costs and costs.peak_flop_per_s:
            rows = ((frame["device_name"] == dev).fillna(False) & frame["peak_flop_per_s_tensor"].isna()).to_numpy()
            frame.loc[rows, "peak_flop_per_s_tensor"] = costs.peak_flop_per_s
            frame.loc[rows, "peak_flop_per_s_tensor_source"] = (
                f"xprof: {costs.peak_flop_per_s / 1e12:g} TFLOP/s from its compute-capability table ({dev} "
                + NOT_IN_SPEC_TABLE)
    return frame


def _space_meta(space: Any, planes: list[xd.PlaneOps], costs: xc.CostTable | None) -> dict[str, Any]:
    env: dict[str, Any] = {}
    for p in space.planes:
        if p.name == "Task Environment":
            env = xd.plane_stats(p)
    start, stop = env.get("profile_start_time"), env.get("profile_stop_time")
    return {
        "hostnames": list(space.hostnames), "planes": [p.name for p in space.planes],
        "device_planes": [p.name for p in planes], "device_time_s": sum(p.span_ps for p in planes) * 1e-12,
        "op_occurrences": sum(len(p.ops) for p in planes),
        "non_xla_device_events": sum(p.non_xla_events for p in planes),
        "non_xla_device_time_s": sum(p.non_xla_ps for p in planes) * 1e-12,
        "steps": sum(len(p.steps) for p in planes),
        "profile_duration_s": (int(stop) - int(start)) * 1e-9 if start and stop else None,
        "xprof_device_type": costs.device_type if costs else None,
        "xprof_peak_flop_per_s": costs.peak_flop_per_s if costs else None,
        "xprof_peak_hbm_bytes_per_s": costs.peak_hbm_bytes_per_s if costs else None,
        "errors": list(space.errors)[:20], "warnings": list(space.warnings)[:20],
    }
