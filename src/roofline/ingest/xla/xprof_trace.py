"""XProf's trace-viewer JSON of an xplane (``*.trace.json.gz``, jax's ``perfetto_trace.json.gz``): timing only.

The JSON is the XSpace's events with their stats as string ``args``; the TPU ``flops`` stat and the
memory access breakdown do not survive the conversion, and GPU kernel events lose their
``program_id``. So the rows (the same as the xplane reader's: one per HLO op, plus IDLE) carry
occurrences and times, and FLOPs and bytes are unavailable with that reason.

Which events are ops follows the xplane reader: TPU ``XLA Ops`` events (timed by their
``device_offset_ps``/``device_duration_ps`` args, exact in picoseconds), GPU stream events with an
``hlo_op`` arg. Each op's program is the ``XLA Modules`` event (``jit_f(<program id>)``) of the
same device holding it in time. Told apart from a PyTorch (Kineto) trace by its content: XProf
writes ``"highres-ticks"`` metadata and ``/device:`` process names.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from operator import itemgetter
from pathlib import Path
from typing import Any

import pandas as pd

from roofline.errors import FormatMismatchError, NoGpuWorkError, NoKernelsError, path_text
from roofline.ingest.common import check_exists, gc_paused, load_json, provenance_record
from roofline.ingest.xla import xplane as xp
from roofline.ingest.xla import xplane_decode as xd
from roofline.schema import UNAVAILABLE, set_provenance

FORMAT = "xprof-trace"
SUFFIXES = (".trace.json.gz", ".trace.json")
TIMING_ONLY = (f"{UNAVAILABLE}: XProf's trace-viewer JSON keeps no FLOPs and no per-memory bytes (the 'flops' stat "
               "and memory_access_breakdown are dropped); analyse the .xplane.pb for them")
_MODULE = re.compile(r"^(.*)\((\d+)\)$")
_UNHASHABLE = (list, dict)  # (what JSON gives that cannot key a dict)


def looks_like(head: bytes) -> bool:
    """True for the head of an XProf trace-viewer JSON (never true for a Kineto trace)."""
    return b'"highres-ticks"' in head or b'"/device:TPU:' in head or b'"name": "/device:GPU:' in head


def read(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    check_exists(path)
    with gc_paused():  # (tens of thousands of event dicts, no cycles: the collector's passes were ~15% of the read)
        planes = _planes(path, _load(path))
        rows = xp.build_rows(planes, {}, None, False, timing_only=TIMING_ONLY)
    for i, r in enumerate(rows):
        r["kernel_id"] = i
        r["source_file"] = path_text(path)
        r["format"] = FORMAT
    frame = xp.frame_of(rows)
    import orjson

    meta = provenance_record(path, FORMAT, tool="XProf trace viewer (JSON)", reader=f"orjson {orjson.__version__}",
                             device_planes=[p.name for p in planes], op_occurrences=sum(len(p.ops) for p in planes),
                             device_time_s=sum(p.span_ps for p in planes) * 1e-12)
    return set_provenance(frame, [meta])


def _load(path: Path) -> list[Any]:
    data = load_json(path)
    events = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise FormatMismatchError(path, "is JSON but not an XProf trace (no traceEvents list)")
    return events


def _ps(v: Any) -> int | None:
    try:
        return round(float(v) * 1e6)  # µs -> ps
    except (TypeError, ValueError, OverflowError):  # (1e308 µs is no time: inf ps)
        return None


def _int(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):
        return None


def _planes(path: Path, events: list[Any]) -> list[xd.PlaneOps]:
    procs: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    every: dict[Any, list[dict[str, Any]]] = defaultdict(list)  # the X and i events of each process (one pass)
    for e in events:
        if not isinstance(e, dict):
            continue
        pid, tid, ph = e.get("pid"), e.get("tid"), e.get("ph")
        if pid.__class__ in _UNHASHABLE or tid.__class__ in _UNHASHABLE:
            continue  # keyed by an unhashable pid/tid: damage, not an event (it would crash the grouping)
        if ph == "X" or ph == "i":
            every[pid].append(e)
        elif ph == "M" and isinstance(e.get("args"), dict):
            if e.get("name") == "process_name":
                procs[pid] = str(e["args"].get("name", ""))
            elif e.get("name") == "thread_name":
                threads[(pid, tid)] = str(e["args"].get("name", ""))
    by_pid = {pid: evs for pid, evs in every.items() if str(procs.get(pid, "")).startswith("/device:")}
    if not by_pid:
        raise NoGpuWorkError(path, "no /device: process in the trace: a CPU-only run, nothing to put on a roofline")
    planes = [_plane(procs[pid], evs, threads) for pid, evs in by_pid.items()]
    if not any(p.ops for p in planes):
        raise NoKernelsError(path, f"{len(planes)} device process(es) but no XLA op (no 'XLA Ops' event, no kernel "
                                   "with an hlo_op arg)")
    return [p for p in planes if p.ops or p.span_ps > 0]


def _plane(name: str, evs: list[dict[str, Any]], threads: dict[tuple[Any, Any], str]) -> xd.PlaneOps:
    lines = [threads.get((e.get("pid"), e.get("tid")), "") for e in evs]  # by position: no id()-keyed state
    tpu = xd.OP_LINE in lines
    plane = xd.PlaneOps(name, "tpu" if tpu else "gpu", {}, [], None, None, [])
    modules = []  # (start, end, name, program id) of the XLA Modules events
    spans = []
    for e, line in zip(evs, lines):
        if (line != xd.OP_LINE if tpu else not line.startswith("Stream #")) and not line.startswith("XLA Modules"):
            continue  # a line that holds neither ops nor programs
        args = e.get("args")
        if not isinstance(args, dict):
            args = {}
        ts = _ps(e.get("ts"))  # the timeline's clock: what XLA Modules events are placed on
        start, dur = _int(args.get("device_offset_ps")), _int(args.get("device_duration_ps"))
        if start is None or dur is None:  # ts/dur are µs floats: the device args are exact picoseconds
            start, dur = ts, _ps(e.get("dur", 0))
        if start is None or dur is None or ts is None:
            continue
        if line.startswith("XLA Modules"):
            m = _MODULE.match(str(e.get("name", "")))
            if m:
                modules.append((start, start + dur, m.group(1), int(m.group(2))))
            continue
        if tpu and line == xd.OP_LINE:
            spans.append((start, -dur, str(e.get("name", "")), args, line, "", ts))
        elif not tpu and line.startswith("Stream #"):
            spans.append((start, -dur, str(args.get("hlo_op", "")).split("::")[-1], args, line, str(e.get("name", "")),
                          ts))
    modules.sort()
    mstarts = [m[0] for m in modules]
    spans.sort(key=itemgetter(0, 1))
    if spans:
        xd._widen(plane, spans[0][0], max(start - neg for start, neg, *_ in spans))
    if not tpu:
        plane.kernel_events += len(spans)
    stack: list[xd.Occurrence] = []
    for start, neg, op, args, line, kernel, ts in spans:
        end = start - neg
        if tpu:
            while stack and not (stack[-1].start_ps <= start and end <= stack[-1].end_ps):
                stack.pop()
            if stack:
                stack[-1].self_ps -= end - start
        j = bisect.bisect_right(mstarts, ts) - 1
        # no XLA Modules event holds it: no program id, the hlo_module arg names the program
        module = modules[j] if j >= 0 and ts < modules[j][1] else (0, 0, str(args.get("hlo_module", "")), None)
        if not op:
            plane.non_xla_events += 1
            plane.non_xla_ps += end - start
            continue
        meta = {"hlo_category": args.get("hlo_category"), "tf_op": args.get("tf_op"), "hlo_module": module[2]}
        occ = xd.Occurrence(module[3], op, start, end, end - start, meta, long_name=str(args.get("long_name", "")),
                            kernels=(kernel,) if kernel else (), line=line, module=module[2])
        if tpu:
            stack.append(occ)
        plane.ops.append(occ)
    return plane
