"""XSpace (``*.xplane.pb``) decoding: planes, stats and the HLO-op occurrences of each device plane.

The protobuf schema is the project's own (``protos/xplane.proto``); nothing here needs TensorFlow
or XLA. Which events are ops, how long they take and which device time counts follows XProf
(``xprof/convert/xplane_to_op_metrics_db.cc``) so that times, occurrences and the idle time match
its ``hlo_stats`` / ``roofline_model`` tools:

* **TPU-style planes** (an ``XLA Ops`` line): one occurrence per event, timed by its
  ``device_offset_ps``/``device_duration_ps`` stats (else the event's own span), keyed by the
  ``program_id``/``symbol_id`` of its event metadata (symbol 0 is the module's root: not an op).
  Events nested in another on the same line give their time to the parent's children, so the
  parent's *self* time is what is left. FLOPs and bytes are stats of the metadata (one occurrence).
* **GPU-style planes** (stream lines of kernels and copies): an event with an ``hlo_op`` stat (its
  last ``::`` part) is an XLA op; back-to-back events of the same op on one stream are one
  occurrence (an op that launches several kernels) when both carry the same ``group_id`` (the step
  group XProf's grouping adds); raw profiles have none, so each event is one occurrence, as in XProf. Lines with derived ids (XProf's own "Steps",
  "TensorFlow Ops"...) are skipped.
* **Device time** of a plane is first event start to last event end (TPU: over ``XLA Ops`` and
  ``Steps``; GPU: over every non-derived line); what the ops' self time does not cover is idle.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

from roofline.errors import CorruptReportError, FormatMismatchError, NoGpuWorkError
from roofline.ingest.common import check_exists, check_size

OP_LINE = "XLA Ops"
STEP_LINE = "Steps"
#: XProf's derived lines (Steps, TensorFlow Ops, XLA Modules "from #16"...) use ids from 0xdeadbeef up
_DERIVED_MIN, _DERIVED_SPAN = 0xDEADBEEF, 64
#: HLO categories whose ops contain others (XProf's MayHaveInnerOps): their work is in the inner ops
OUTER_CATEGORIES = frozenset({"call", "conditional", "while", "megacore fusion"})
_MODULE_NAME = re.compile(r"^(.*)\((\d+)\)$")


def load(path: Path) -> Any:
    """The decoded XSpace of a file, or a typed error naming it."""
    from google.protobuf.message import DecodeError

    from roofline.ingest.xla.protos import xplane_pb2

    check_exists(path)
    check_size(path)  # protobuf objects take several times the file: past the cap, refused before it is read
    data = path.read_bytes()
    head = data[:64].lstrip()
    if data[:2] == b"\x1f\x8b" or head[:1] in (b"{", b"["):
        what = "gzip data" if data[:2] == b"\x1f\x8b" else "JSON"
        raise FormatMismatchError(path, f"named like an XSpace protobuf (.xplane.pb) but it holds {what}; an "
                                        "XProf trace-viewer JSON should be named *.trace.json.gz")
    space = xplane_pb2.XSpace()
    try:
        space.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:  # upb raises DecodeError; old runtimes others
        raise CorruptReportError(path, f"not a readable XSpace protobuf (truncated or damaged: {exc})") from None
    if not space.planes or not any(p.name for p in space.planes):
        raise FormatMismatchError(path, "decodes as protobuf but holds no named XPlane: not an XSpace (xplane.pb)")
    return space


def is_derived_line(line_id: int) -> bool:
    u = line_id & 0xFFFFFFFF if -(1 << 31) <= line_id < 0 else line_id
    return _DERIVED_MIN <= u < _DERIVED_MIN + _DERIVED_SPAN


class Stats:
    """Stat names of one plane, and stat values with ``ref_value`` resolved to its string."""

    def __init__(self, plane: Any) -> None:
        self.names = {k: m.name for k, m in plane.stat_metadata.items()}

    def value(self, stat: Any) -> Any:
        kind = stat.WhichOneof("value")
        if kind == "ref_value":
            return self.names.get(stat.ref_value, "")
        return getattr(stat, kind) if kind else None

    def of(self, stats: Iterable[Any]) -> dict[str, Any]:
        return {self.names.get(s.metadata_id, ""): self.value(s) for s in stats}


def plane_stats(plane: Any) -> dict[str, Any]:
    return Stats(plane).of(plane.stats)


def is_device_plane(plane: Any) -> bool:
    # SparseCore planes ("/device:TPU:0 SparseCore 0") are left out: XProf counts their work as children of
    # the TensorCore ops that offload to them, and their time is inside those ops' time already
    return plane.name.startswith("/device:") and not plane.name.startswith("/device:CUSTOM") \
        and "SparseCore" not in plane.name


def module_names(space: Any) -> dict[int, str]:
    """program_id -> module name (``jit_f``), from the metadata plane's ``jit_f(<id>)`` entries."""
    names: dict[int, str] = {}
    for plane in space.planes:
        if plane.name != "/host:metadata":
            continue
        for md in plane.event_metadata.values():
            m = _MODULE_NAME.match(md.name)
            if m:
                names[int(m.group(2))] = m.group(1)
    return names


@dataclass
class Occurrence:
    """One execution of an HLO op on one device plane (several kernels when it launched several)."""

    program_id: int | None  # None: the profile names no program (keyed by ``module`` instead)
    op: str
    start_ps: int
    end_ps: int
    self_ps: int
    meta: dict[str, Any] = field(default_factory=dict)  # op-level stats (TPU metadata; GPU first event)
    kernels: tuple[str, ...] = ()
    long_name: str = ""
    line: str = ""
    module: str = ""  # hlo_module stat of GPU events (the key when there is no program_id)

    @property
    def time_ps(self) -> int:
        return self.end_ps - self.start_ps


@dataclass
class PlaneOps:
    """The XLA ops of one device plane and its device time."""

    name: str
    style: str  # "tpu" (XLA Ops line) or "gpu" (stream lines)
    stats: dict[str, Any]
    ops: list[Occurrence]
    first_ps: int | None
    last_ps: int | None
    steps: list[tuple[int, int, str]]  # (start, end, label) from the plane's Steps line
    non_xla_events: int = 0
    non_xla_ps: int = 0
    kernel_events: int = 0

    @property
    def span_ps(self) -> int:
        return (self.last_ps - self.first_ps) if self.first_ps is not None and self.last_ps is not None else 0


#: style of a GPU plane read as kernels (no XLA op on any plane): rows are framework ops, timing only
KERNELS = "kernels"


def device_ops(plane: Any, kernels: bool = False) -> PlaneOps:
    """The XLA ops of a device plane; ``kernels``: every kernel and copy event as an occurrence of the
    framework op that launched it (for planes with no XLA op at all, see :func:`device_planes`)."""
    stats = Stats(plane)
    tpu = not kernels and any(ln.name == OP_LINE and not is_derived_line(ln.id) for ln in plane.lines)
    style = "tpu" if tpu else KERNELS if kernels else "gpu"
    out = PlaneOps(plane.name, style, stats.of(plane.stats), [], None, None, _steps(plane, stats))
    for lo, hi, _ in out.steps:
        _widen(out, lo, hi)
    if tpu:
        _tpu_ops(plane, stats, out)
    else:
        _gpu_ops(plane, stats, out, kernels)
    return out


def _widen(out: PlaneOps, lo: int, hi: int) -> None:
    out.first_ps = lo if out.first_ps is None else min(out.first_ps, lo)
    out.last_ps = hi if out.last_ps is None else max(out.last_ps, hi)


def _steps(plane: Any, stats: Stats) -> list[tuple[int, int, str]]:
    steps = []
    for ln in plane.lines:
        if ln.name != STEP_LINE:
            continue
        base = ln.timestamp_ns * 1000
        for ev in ln.events:
            if ev.WhichOneof("data") != "offset_ps":
                continue
            md = plane.event_metadata.get(ev.metadata_id)
            evs = stats.of(ev.stats)
            label = evs.get("step_num", evs.get("step_name", md.name if md is not None else ""))
            start = base + ev.offset_ps
            steps.append((start, start + ev.duration_ps, f"step {label}"))
    return sorted(steps)


#: the stats of a TPU op event that are read (its others, e.g. all_reduce_unique_id, are not)
_TPU_EVENT_STATS = frozenset({"device_offset_ps", "device_duration_ps", "program_id", "symbol_id"})


def _tpu_ops(plane: Any, stats: Stats, out: PlaneOps) -> None:
    meta_cache: dict[int, dict[str, Any]] = {}
    # only the stats read below are decoded (as Stats.of would, the last of a name winning): a TPU plane has
    # thousands of op events, and a dict of every stat of each was most of the read's time
    wanted = {k: name for k, name in stats.names.items() if name in _TPU_EVENT_STATS}
    value = stats.value
    for ln in plane.lines:
        if ln.name != OP_LINE or is_derived_line(ln.id):
            continue
        base = ln.timestamp_ns * 1000
        spans = []
        for ev in ln.events:
            if ev.WhichOneof("data") != "offset_ps":
                continue  # an aggregated event has no start: it cannot be placed on the timeline
            evs: dict[str, Any] = {}
            for st in ev.stats:
                name = wanted.get(st.metadata_id)
                if name is not None:
                    evs[name] = value(st)
            if "device_offset_ps" in evs and "device_duration_ps" in evs:
                start, dur = int(evs["device_offset_ps"]), int(evs["device_duration_ps"])
            else:
                start, dur = base + ev.offset_ps, ev.duration_ps
            # XProf keys an op by the program_id/symbol_id of the event first, then of its metadata
            spans.append((start, -dur, ev.metadata_id, (evs.get("program_id"), evs.get("symbol_id"))))
        spans.sort(key=itemgetter(0, 1))  # by start, longest first: a parent precedes its nested ops
        if spans:
            _widen(out, spans[0][0], max(start - neg for start, neg, *_ in spans))
        stack: list[Occurrence] = []
        for start, neg, mid, (ev_pid, ev_sym) in spans:
            end = start - neg
            while stack and not (stack[-1].start_ps <= start and end <= stack[-1].end_ps):
                stack.pop()
            if stack:
                stack[-1].self_ps -= end - start  # a child's whole time leaves its parent's self time
            meta = meta_cache.get(mid)
            if meta is None:
                md = plane.event_metadata.get(mid)
                meta = stats.of(md.stats) if md is not None else {}
                meta["_name"] = (md.display_name or md.name) if md is not None else ""
                meta["_long"] = md.name if md is not None else ""
                meta_cache[mid] = meta
            pid = ev_pid if ev_pid is not None else meta.get("program_id")
            sym = ev_sym if ev_sym is not None else meta.get("symbol_id")
            occ = Occurrence(_int(pid), meta["_name"], start, end, end - start, meta,
                             long_name=meta["_long"], line=ln.name)
            stack.append(occ)
            if pid is not None and sym not in (None, 0, "0"):
                out.ops.append(occ)


def _gpu_ops(plane: Any, stats: Stats, out: PlaneOps, kernels: bool = False) -> None:
    names = {k: m.name for k, m in plane.event_metadata.items()}
    for ln in plane.lines:
        if is_derived_line(ln.id):
            continue
        base = ln.timestamp_ns * 1000
        prev: Occurrence | None = None
        for ev in ln.events:
            if ev.WhichOneof("data") != "offset_ps":
                continue
            start = base + ev.offset_ps
            end = start + ev.duration_ps
            _widen(out, start, end)
            out.kernel_events += 1
            evs = stats.of(ev.stats)
            hlo = evs.get("hlo_op")
            kernel = names.get(ev.metadata_id, "")
            if kernels:  # the op that launched it: TensorFlow's `level 0` name without its #args#, else the event
                op = str(evs.get("level 0") or evs.get("annotation") or kernel).split("#")[0] or kernel
                pid, module = None, ""
            elif not hlo:
                out.non_xla_events += 1
                out.non_xla_ps += ev.duration_ps
                prev = None
                continue
            else:
                op = str(hlo).split("::")[-1]
                # XProf's GPU test for an XLA op is the hlo_op stat alone; runtimes that write no program_id
                # (TensorFlow's XLA clusters, older JAX) keep their ops, keyed by module name instead
                pid = _int(evs["program_id"]) if evs.get("program_id") is not None else None
                module = str(evs.get("hlo_module") or "")
            group = evs.get("group_id")
            if prev is not None and prev.op == op and prev.program_id == pid and prev.module == module \
                    and group is not None and prev.meta.get("group_id") == group:
                prev.end_ps = max(prev.end_ps, end)
                prev.self_ps += ev.duration_ps
                if kernel not in prev.kernels:
                    prev.kernels += (kernel,)
            else:
                prev = Occurrence(pid, op, start, end, ev.duration_ps, evs, kernels=(kernel,), line=ln.name,
                                  module=module)
                out.ops.append(prev)


def _int(v: Any) -> int:
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):
        return 0


def device_planes(path: Path, space: Any) -> list[PlaneOps]:
    """Every device plane with events (XLA ops or not); a typed error when no plane ran an XLA op."""
    devices = [p for p in space.planes if is_device_plane(p)]
    if not devices:
        hosts = ", ".join(sorted({p.name for p in space.planes})) or "none"
        raise NoGpuWorkError(path, f"no device plane (planes: {hosts}): a CPU-only run, nothing to put on a "
                                   "roofline")
    found = [device_ops(p) for p in devices]
    with_ops = [p for p in found if p.ops]
    if not with_ops and any(p.kernel_events for p in found):
        # TensorFlow ops outside XLA (or another runtime): no op has an hlo_op, yet the device planes hold
        # the kernels and copies that ran. XProf's framework-op view shows them; so do we, one row per op
        found = [device_ops(p, kernels=True) for p in devices]
        return [p for p in found if p.ops or p.span_ps > 0]
    if not with_ops:
        why = f"{len(devices)} device plane(s) but no events on them (an idle device, or the trace stopped before any op)"
        raise NoGpuWorkError(path, why)
    # planes that only copied data still count: XProf's device time is the sum over every busy plane
    return [p for p in found if p.ops or p.span_ps > 0]

