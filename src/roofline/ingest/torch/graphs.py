"""CUDA/HIP graph replays joined to the trace recorded while the graphs were captured.

A replay trace shows one ``cudaGraphLaunch``/``hipGraphLaunch`` per graph and the graph's kernels,
all carrying that launch's correlation and no op: their shapes are not in it. The trace recorded
during capture (vLLM writes it to ``capture_traces/`` beside the replay) holds, between
``*StreamBeginCapture`` and ``*StreamEndCapture``, one launch event per captured kernel, with the
kernel's name and the ``External id`` of the op that launched it. The k-th kernel a replay runs
(by start time) is the k-th launch captured, when the graph's kernel names are the captured
sequence: each replayed kernel is then attributed to its captured op and priced from that op's
shapes. A replay whose kernel names match no captured sequence stays orphaned (its time is kept).

Each joined op also carries the iteration annotation its graph launch ran under (vLLM's
``execute_…_context_…(sq…)_generation_…(sq…)``), whose context lengths price paged attention
(``metrics/ops/attention.py``): the captured op's own arguments do not hold them.
"""

from __future__ import annotations

import contextvars
from collections import defaultdict
from pathlib import Path
from typing import Any

from roofline.ingest.common import gc_paused, json_bytes
from roofline.ingest.torch.decode import Event, decode

#: capture traces given explicitly (``roofline analyze REPLAY --capture CAPTURE``); else the
#: ``capture_traces/`` folder beside the replay is looked in
CAPTURES: contextvars.ContextVar[tuple[Path, ...] | None] = contextvars.ContextVar("roofline_captures", default=None)
MIN_MATCH = 0.95  # share of kernel names that must equal the captured ones, position by position


def capture_paths(replay: Path) -> list[Path]:
    given = CAPTURES.get()
    if given is not None:
        return list(given)
    folder = replay.parent / "capture_traces"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith((".pt.trace.json", ".pt.trace.json.gz")))


class Captured:
    """The captured graphs of one capture trace: per capture window, the kernels' names and ops. Only
    complete events (``"ph": "X"``, as Kineto writes ops and launches) are read, as in the replay trace."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with gc_paused():
            events, _ = decode(path, json_bytes(path))
        ops: dict[Any, Event] = {}
        cpu: list[Event] = []
        windows: list[tuple[float, float]] = []
        begin = None
        launches: list[Event] = []
        for e in events:
            name = str(e.name)
            if e.cat in ("cpu_op", "Operator", "operator") and e.args is not None:
                if e.ts.__class__ in (int, float) and e.dur.__class__ in (int, float):
                    cpu.append(e)
                ext = e.args.external_id
                if ext is not None and ext.__class__ is not list and ext not in ops:
                    ops[ext] = e
            elif e.cat in ("cuda_runtime", "cuda_driver"):
                if name.endswith("StreamBeginCapture"):
                    begin = e.ts
                elif name.endswith("StreamEndCapture") and begin is not None:
                    windows.append((float(begin), float(e.ts)))
                    begin = None
                elif "Launch" in name and "Graph" not in name and e.args is not None and e.args.kernel is not None:
                    launches.append(e)
        launches.sort(key=lambda e: float(e.ts))
        from roofline.ingest.torch.threads import Threads

        self.threads = Threads(cpu)  # the captured ops by thread: an op's callees (a MoE's routing)
        self.graphs: list[tuple[list[str], list[Event | None]]] = []
        for lo, hi in windows:
            inside = [e for e in launches if lo <= float(e.ts) <= hi]
            self.graphs.append(([str(e.args.kernel) for e in inside],  # type: ignore[union-attr]
                                [ops.get(e.args.external_id) for e in inside]))  # type: ignore[union-attr]


class CaptureContext:
    """A captured op's surroundings: its capture trace's ops by thread (callees, consumers) and the
    iteration annotation its replay ran under (None when the replay has none)."""

    def __init__(self, threads: Any, iteration: str | None) -> None:
        self.threads = threads
        self.iteration = iteration

    def __getattr__(self, name: str) -> Any:  # within/following/enclosing: the capture trace's
        return getattr(self.threads, name)


def iterations(events: list[Event], correlations: set[Any]) -> dict[Any, str]:
    """Graph launch correlation -> the vLLM iteration annotation whose span holds the launch (same thread)."""
    spans = Iterations(events)
    if not spans.spans:
        return {}
    found = {}
    for e in events:
        a = e.args
        if e.cat in ("cuda_runtime", "cuda_driver") and a is not None and a.correlation in correlations \
                and e.ts.__class__ in (int, float):
            name = spans.enclosing(e)
            if name is not None:
                found[a.correlation] = name
    return found


class Iterations:
    """vLLM iteration annotations by thread, for ops that ran outside a graph (eager steps, or the
    attention between the pieces of vLLM's piecewise CUDA graphs): an op's iteration is the
    annotation whose span holds it on its thread. Built on first use, from the replay's events."""

    def __init__(self, events: list[Event]) -> None:
        from roofline.metrics.ops.attention import ITERATION

        self.spans: dict[tuple[Any, Any], list[tuple[float, float, str]]] = defaultdict(list)
        for e in events:
            if e.cat == "user_annotation" and e.name.__class__ is str and e.ts.__class__ in (int, float) \
                    and e.dur.__class__ in (int, float) and ITERATION.search(e.name):
                try:
                    self.spans[(e.pid, e.tid)].append((float(e.ts), float(e.ts) + float(e.dur), e.name))
                except TypeError:  # an unhashable pid/tid (damaged trace)
                    continue

    def enclosing(self, op: Event) -> str | None:
        try:
            spans = self.spans.get((op.pid, op.tid), ())
            ts = float(op.ts)
        except (TypeError, ValueError):
            return None
        return next((name for lo, hi, name in spans if lo <= ts <= hi), None)


def attribute(replay: Path, orphans: list[tuple[Event, str]], events: list[Event] | None = None
              ) -> tuple[dict[Any, tuple[Event, list[Event], Any]], list[tuple[Event, str]], list[str]]:
    """((capture trace, captured op's External id, graph launch) -> (op, its replayed kernels, its
    CaptureContext), the orphans left, notes). Keyed by values, never by ``id()``: ``id(op) ^ hash(corr)``
    collided, merging two ops' kernels at random (the vLLM trace gave 311-327 rows from one file)."""
    graph = [(i, e) for i, (e, label) in enumerate(orphans) if label.startswith("orphan: graph replay")]
    paths = capture_paths(replay) if graph else []
    if not paths:
        return {}, orphans, []
    captured = [Captured(p) for p in paths]
    by_launch: dict[Any, list[tuple[int, Event]]] = defaultdict(list)
    for i, e in graph:
        by_launch[e.args.correlation if e.args is not None else None].append((i, e))
    joined: dict[Any, tuple[Event, list[Event], Any]] = {}
    try:
        steps = iterations(events or [], set(by_launch) - {None})
    except TypeError:  # an unhashable correlation (damaged trace): no iteration known
        steps = {}
    done: set[int] = set()
    notes = []
    for corr, launched in by_launch.items():
        launched.sort(key=lambda ie: float(ie[1].ts))
        kernels = [e for _, e in launched]
        names = [str(k.name) for k in kernels]
        match = _match(names, captured)
        if match is None:
            notes.append(f"graph launch {corr}: {len(kernels)} kernels match no captured graph")
            continue
        cap, ops = match
        notes.append(f"graph launch {corr}: {len(kernels)} kernels joined to {cap.path.name}")
        for (i, k), op in zip(launched, ops):
            if op is None:
                continue
            done.add(i)
            key = (str(cap.path), op.args.external_id if op.args is not None else None, corr)  # type: ignore[union-attr]
            slot = joined.setdefault(key, (op, [], CaptureContext(cap.threads, steps.get(corr))))
            slot[1].append(k)
    left = [(e, label) for i, (e, label) in enumerate(orphans) if i not in done]
    return joined, left, notes


def _match(names: list[str], captured: list[Captured]) -> tuple[Captured, list[Event | None]] | None:
    for cap in captured:
        for cap_names, ops in cap.graphs:
            if len(cap_names) != len(names) or not names:
                continue
            same = sum(a == b for a, b in zip(names, cap_names))
            if same >= MIN_MATCH * len(names):
                return cap, ops
    return None
