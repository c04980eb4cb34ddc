"""CUDA/HIP graph replays joined to the trace recorded while the graphs were captured.

A replay trace shows one ``cudaGraphLaunch``/``hipGraphLaunch`` per graph and the graph's kernels,
all carrying that launch's correlation and no op: their shapes are not in it. The trace recorded
during capture (vLLM writes it to ``capture_traces/`` beside the replay) holds, between
``*StreamBeginCapture`` and ``*StreamEndCapture``, one launch event per captured kernel, with the
kernel's name and the ``External id`` of the op that launched it. The k-th kernel a replay runs
(by start time) is the k-th launch captured, when the graph's kernel names are the captured
sequence: each replayed kernel is then attributed to its captured op and priced from that op's
shapes. A replay whose kernel names match no captured sequence stays orphaned (its time is kept).

A graph launched inside an op (torch.compile's ``Torch-Compiled Region``, whose cudagraph trees replay the
compiled graph) has its kernels tied to that op, which has no shapes: they are offered to the join too, and
stay with their op only where no captured graph matches. A replay may run a few kernels fewer or more than
were captured (a capture-time kernel the replay skips): the two name sequences are then aligned (longest
matching blocks) and the kernels that match are joined, the others reported. Where the capture folder's
index (``execution_details.json``: file, batch size, mode, as vLLM, SGLang and TraceLens write it) gives each
capture trace's batch size, a launch is joined to the capture of the smallest batch size that holds its own
(the iteration annotation's ``execute_<N>_`` or SGLang's ``bs=<N>``), as the engines pad a batch up to it.

Each joined op also carries the iteration annotation its graph launch ran under (vLLM's
``execute_…_context_…(sq…)_generation_…(sq…)``), whose context lengths price paged attention
(``metrics/ops/attention.py``): the captured op's own arguments do not hold them.
"""

from __future__ import annotations

import contextvars
import json
import math
import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from contextlib import suppress
from operator import attrgetter
from pathlib import Path
from typing import Any

from roofline.ingest.common import gc_paused
from roofline.ingest.torch.decode import Event
from roofline.ingest.torch.stream import all_events

#: capture traces given explicitly (``roofline analyze REPLAY --capture CAPTURE``); else the
#: ``capture_traces/`` folder beside the replay is looked in
CAPTURES: contextvars.ContextVar[tuple[Path, ...] | None] = contextvars.ContextVar("roofline_captures", default=None)
_NAME = attrgetter("name")
MIN_MATCH = 0.95  # share of kernel names that must equal the captured ones, position by position
#: the capture folder's index (vLLM, SGLang, TraceLens): [{"file": ..., "batch_size": N, "mode": "FULL"}, ...]
INDEX = "execution_details.json"
#: SGLang names one capture trace per batch size bs_<N>_rank<R>.json.gz (newer: bs_<N>_q_<Q>_rank<R>)
_BS_FILE = re.compile(r"^bs_(\d+)_.*\.json(\.gz)?$")
#: a replay's batch size: vLLM's iteration annotation execute_<N>_…, SGLang's step[DECODE bs=<N>]
_BATCH = re.compile(r"^execute_(\d+)_|\bbs=(\d+)\b")


def graph_launched(groups: dict[int, list[Event]], runtimes: dict[Any, Event]) -> list[tuple[int, int, Event]]:
    """(op, position in its group, event) of the GPU events of CUDA/HIP graphs launched inside an op (their launch has the op's External id: a
    torch.compile region replaying its cudagraph): the op has no shapes of them, the capture trace has."""
    names = list(map(_NAME, runtimes.values()))
    with suppress(TypeError):  # (a name that is not a str: each is looked at below)
        if "GraphLaunch" not in "\0".join(names):  # the usual trace: one C search, no str() per launch
            return []
    launches = {c for c, rt in runtimes.items() if "GraphLaunch" in str(rt.name)}
    if not launches:
        return []
    return [(op, i, e) for op, evs in groups.items() for i, e in enumerate(evs)
            if e.args is not None and e.args.correlation in launches]


def capture_index(path: Path) -> dict[str, int | None] | None:
    """{capture file name: batch size (None if not an integer)} of a capture folder's index file, or None when
    ``path`` is not one (not a JSON list of objects each naming a ``file``)."""
    try:
        if path.name != INDEX or path.stat().st_size > 1 << 20:
            return None
        entries = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(entries, list) or not entries or \
            not all(isinstance(e, dict) and isinstance(e.get("file"), str) for e in entries):
        return None
    return {Path(e["file"]).name: (e["batch_size"] if e.get("batch_size").__class__ is int else None)
            for e in entries}


def _folder_captures(folder: Path) -> list[Path]:
    """The capture traces of a folder: the files its index names and its Kineto traces (``*.pt.trace.json[.gz]``,
    SGLang's ``bs_<N>_…json.gz``; a copied folder may hold a trace under another name than its index says)."""
    index = capture_index(folder / INDEX) or {}
    listed = [folder / name for name in index if (folder / name).is_file()]
    return listed + sorted(p for p in folder.iterdir() if p.is_file() and p not in listed and (
        p.name.endswith((".pt.trace.json", ".pt.trace.json.gz")) or _BS_FILE.match(p.name)))


def capture_paths(replay: Path) -> list[Path]:
    """The capture traces for ``replay``: those given (``--capture``: files, or folders of them), else the
    ``capture_traces/`` folder beside it."""
    given = CAPTURES.get()
    if given is not None:
        return [c for p in given for c in (_folder_captures(p) if p.is_dir() else [p])]
    folder = replay.parent / "capture_traces"
    return _folder_captures(folder) if folder.is_dir() else []


def capture_batch_size(path: Path) -> int | None:
    """A capture trace's batch size: its folder's index entry, else SGLang's ``bs_<N>_`` file name."""
    index = capture_index(path.parent / INDEX)
    if index and index.get(path.name) is not None:
        return index[path.name]
    m = _BS_FILE.match(path.name)
    return int(m.group(1)) if m else None


class Captured:
    """The captured graphs of one capture trace: per capture window, the kernels' names and ops. Only
    complete events (``"ph": "X"``, as Kineto writes ops and launches) are read, as in the replay trace."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.batch_size = capture_batch_size(path)
        with gc_paused():
            events = all_events(path)  # (streamed as read() streams, its Python frames skipped: 91% of vLLM's)
        ops: dict[Any, Event] = {}
        cpu: list[Event] = []
        windows: list[tuple[float, float]] = []
        begin = None
        launches: list[Event] = []
        for e in events:
            if e.cat in ("cpu_op", "Operator", "operator") and e.args is not None:
                if e.ts.__class__ in (int, float) and e.dur.__class__ in (int, float):
                    cpu.append(e)
                ext = e.args.external_id
                if ext is not None and ext.__class__ is not list and ext not in ops:
                    ops[ext] = e
            elif e.cat in ("cuda_runtime", "cuda_driver"):
                name = str(e.name)
                if name.endswith("StreamBeginCapture"):
                    begin = e.ts
                elif name.endswith("StreamEndCapture") and begin is not None:
                    windows.append((float(begin), float(e.ts)))
                    begin = None
                elif "Launch" in name and "Graph" not in name and e.args is not None and e.args.kernel is not None:
                    launches.append(e)
        launches.sort(key=lambda e: float(e.ts))
        times = [float(e.ts) for e in launches]
        from roofline.ingest.torch.threads import Threads

        self.threads = Threads(cpu)  # the captured ops by thread: an op's callees (a MoE's routing)
        self.graphs: list[tuple[list[str], list[Event | None]]] = []
        ordered = not any(map(math.isnan, times))  # (a NaN start leaves the sort's order unusable)
        for lo, hi in windows:
            if ordered and not (math.isnan(lo) or math.isnan(hi)):  # (a scan of every launch per window: 80 ms on vLLM's)
                inside = launches[bisect_left(times, lo):bisect_right(times, hi)]
            else:
                inside = [e for e, t in zip(launches, times) if lo <= t <= hi]
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


def iterations(events: list[Event], correlations: set[Any], pattern: Any = None) -> dict[Any, str]:
    """Graph launch correlation -> the vLLM iteration annotation (or one ``pattern`` matches) whose span holds
    the launch (same thread)."""
    spans = Iterations(events, pattern)
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


def batch_sizes(events: list[Event], correlations: set[Any]) -> dict[Any, int]:
    """Graph launch correlation -> the batch size the annotation holding the launch (same thread) names:
    vLLM's ``execute_<N>_…``, SGLang's ``step[DECODE bs=<N>]``."""
    out = {}
    for corr, name in iterations(events, correlations, _BATCH).items():
        m = _BATCH.search(name)
        out[corr] = int(m.group(1) or m.group(2))  # type: ignore[union-attr]
    return out


class Iterations:
    """vLLM iteration annotations by thread, for ops that ran outside a graph (eager steps, or the
    attention between the pieces of vLLM's piecewise CUDA graphs): an op's iteration is the
    annotation whose span holds it on its thread. Built on first use, from the replay's events.
    (``pattern``: annotations it matches instead, e.g. those naming a batch size.)"""

    def __init__(self, events: list[Event], pattern: Any = None) -> None:
        from roofline.metrics.ops.attention import ITERATION

        pattern = pattern or ITERATION
        self.spans: dict[tuple[Any, Any], list[tuple[float, float, str]]] = defaultdict(list)
        for e in events:
            if e.cat == "user_annotation" and e.name.__class__ is str and e.ts.__class__ in (int, float) \
                    and e.dur.__class__ in (int, float) and pattern.search(e.name):
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


def attribute(replay: Path, orphans: list[tuple[Event, str]], events: list[Event] | None = None,
              owned: list[tuple[Event, str]] | None = None
              ) -> tuple[dict[Any, tuple[Event, list[Event], Any]], list[tuple[Event, str]], list[str], set[int]]:
    """((capture trace, captured op's External id, graph launch) -> (op, its replayed kernels, its
    CaptureContext), the orphans left, notes, the positions in ``owned`` of the kernels joined). ``owned``:
    replayed kernels of graphs launched inside an op (a compiled region), offered to the join too; those not
    joined stay with their op. Keyed by values and positions, never by ``id()``: ``id(op) ^ hash(corr)``
    collided, merging two ops' kernels at random (the vLLM trace gave 311-327 rows from one file)."""
    owned = list(owned or ())
    n = len(orphans)
    graph = [(i, e) for i, (e, label) in enumerate(orphans) if label.startswith("orphan: graph replay")]
    graph += [(n + j, e) for j, (e, _) in enumerate(owned)]
    paths = capture_paths(replay) if graph else []
    if not paths:
        return {}, orphans, [], set()
    captured = [Captured(p) for p in paths]
    by_launch: dict[Any, list[tuple[int, Event]]] = defaultdict(list)
    for i, e in graph:
        by_launch[e.args.correlation if e.args is not None else None].append((i, e))
    joined: dict[Any, tuple[Event, list[Event], Any]] = {}
    try:
        steps = iterations(events or [], set(by_launch) - {None})
        sizes = batch_sizes(events or [], set(by_launch) - {None})
    except TypeError:  # an unhashable correlation (damaged trace): no iteration known
        steps, sizes = {}, {}
    done: set[int] = set()
    notes = []
    aligned_memo: dict[Any, Any] = {}
    for corr, launched in by_launch.items():
        launched.sort(key=lambda ie: float(ie[1].ts))
        kernels = [e for _, e in launched]
        names = [str(k.name) for k in kernels]
        match = _match(names, captured, sizes.get(corr), aligned_memo)
        if match is None:
            notes.append(f"graph launch {corr}: {len(kernels)} kernels match no captured graph")
            continue
        cap, cap_names, ops, aligned = match
        notes.append(f"graph launch {corr}: {len(kernels)} kernels joined to {cap.path.name}"
                     + _unmatched(names, cap_names, aligned))
        for (i, k), j in zip(launched, aligned):
            op = ops[j] if j is not None else None
            if op is None:
                continue
            done.add(i)
            key = (str(cap.path), op.args.external_id if op.args is not None else None, corr)  # type: ignore[union-attr]
            slot = joined.setdefault(key, (op, [], CaptureContext(cap.threads, steps.get(corr))))
            slot[1].append(k)
    left = [(e, label) for i, (e, label) in enumerate(orphans) if i not in done]
    return joined, left, notes, {i - n for i in done if i >= n}


def _unmatched(names: list[str], cap_names: list[str], aligned: list[int | None]) -> str:
    """What an aligned (not position-by-position) join left out, for its note ("" when nothing)."""
    if len(names) == len(cap_names):
        return ""
    used = {j for j in aligned if j is not None}
    extra = [cap_names[j] for j in range(len(cap_names)) if j not in used]
    lost = [n for n, j in zip(names, aligned) if j is None]

    def said(what: list[str]) -> str:
        return ", ".join(sorted({w[:60] for w in what})[:3]) + (" …" if len(set(what)) > 3 else "")

    return (f" (aligned by name: {len(names) - len(lost)} of {len(names)} replayed, {len(cap_names)} captured"
            + (f"; captured, not replayed: {len(extra)} ({said(extra)})" if extra else "")
            + (f"; replayed, not captured: {len(lost)} ({said(lost)})" if lost else "") + ")")


def _match(names: list[str], captured: list[Captured], batch: int | None, memo: dict[Any, Any]
           ) -> tuple[Captured, list[str], list[Event | None], list[int | None]] | None:
    """The first captured graph whose kernels the replayed ``names`` are (see :func:`_align`), the captures of
    the smallest batch size ≥ the replay's ``batch`` tried first: (capture, its names, its ops, alignment)."""
    if not names:
        return None
    windows = [(ci, gi, cap, g) for ci, cap in enumerate(captured) for gi, g in enumerate(cap.graphs)]
    sizes = sorted({cap.batch_size for cap in captured if cap.batch_size is not None and batch is not None
                    and cap.batch_size >= batch})
    if sizes:  # (stable: the chosen batch size's windows first, the others in their order)
        windows.sort(key=lambda w: w[2].batch_size != sizes[0])
    key = tuple(names)
    for ci, gi, cap, (cap_names, ops) in windows:
        k = (ci, gi, key)
        if k not in memo:
            memo[k] = _align(names, cap_names)
        if memo[k] is not None:
            return cap, cap_names, ops, memo[k]
    return None


def _align(names: list[str], cap_names: list[str]) -> list[int | None] | None:
    """For each replayed kernel, the index of its captured launch; None when the graphs differ.

    Equal lengths: position by position, when ≥ MIN_MATCH of the names agree (as before). Otherwise the
    sequences are aligned by their longest matching blocks, and accepted when ≥ MIN_MATCH of the replayed
    kernels match and the captured ones left over are a few (≤ 5%, or 2 in a small graph): a replay a few
    kernels shorter or longer than its capture."""
    n, m = len(names), len(cap_names)
    if n == m:
        same = sum(a == b for a, b in zip(names, cap_names))
        return list(range(n)) if same >= MIN_MATCH * n else None
    few = max(2.0, (1 - MIN_MATCH) * m)
    if abs(n - m) > few:
        return None
    from difflib import SequenceMatcher

    blocks = SequenceMatcher(None, names, cap_names, autojunk=False).get_matching_blocks()
    matched = sum(b.size for b in blocks)
    if matched < MIN_MATCH * n or m - matched > few:
        return None
    out: list[int | None] = [None] * n
    for a, b, size in blocks:
        out[a:a + size] = range(b, b + size)
    return out
