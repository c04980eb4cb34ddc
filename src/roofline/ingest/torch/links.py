"""Launch links of a Kineto trace: each GPU event's op, through its launch (the runtime event with the same
``correlation``) and that launch's ``External id``, else the innermost op holding the launch on its thread
(one sorted search per thread for all of them: ``Threads.innermost_of``), else the event's own External id.
Split out of ``trace.py``."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from roofline.ingest.torch.decode import Args, Event
from roofline.ingest.torch.threads import Threads

_UNUSABLE = "orphan: unusable correlation or External id"


def link(gpu: list[Event], runtimes: dict[Any, Event], by_ext: dict[Any, int],
         threads: Threads) -> tuple[dict[int, list[Event]], list[tuple[Event, str]]]:
    """(the GPU events of each op index, in the order first linked; the events linked to no op, with why)."""
    groups: dict[int, list[Event]] = defaultdict(list)
    orphans: list[tuple[Event, str]] = []
    # the usual case first: a launch whose External id names an op (an int), or whose launch (a runtime
    # event, kept here) is looked up on its thread below, all at once; _link decides the rest (labels,
    # a launch-less event, an unusable id)
    linked: list[Any] = []
    for e in gpu:
        try:
            a = e.args
            rt = runtimes.get(a.correlation) if a is not None and a.correlation is not None else None
            if rt is not None:
                ra = rt.args
                ext = ra.external_id if ra.external_id is not None else ra.external_id_lc
                op = by_ext.get(ext) if ext is not None else None
                linked.append(rt if op is None else op)
                continue
        except TypeError:
            pass
        linked.append(None)
    lookups = [x for x in linked if x.__class__ is not int and x is not None]  # (launches: the others, op indexes)
    held = iter(threads.innermost_of(lookups) if lookups else ())
    for e, op in zip(gpu, linked):
        if op.__class__ is not int and op is not None:  # (a launch, of whichever event class decoded it)
            launch, op = op, next(held)
            if op is None:  # held by no op: _link would look it up again (a 64-step walk each; a graph
                # trace's ~420 replay launches cost 0.3 s) only to find the same, so its reason now
                try:
                    orphans.append((e, _launch_orphan(launch)))
                except TypeError:
                    orphans.append((e, _UNUSABLE))
                continue
        if op is None:
            try:
                op, label = _link(e.args, runtimes, by_ext, threads)
            except TypeError:
                op, label = None, _UNUSABLE
            if op is None:
                orphans.append((e, label))
                continue
        groups[op].append(e)
    return groups, orphans


def _launch_orphan(rt: Event) -> str:
    """Why a launch held by no op links its GPU work to none. An unhashable pid/tid is in no thread:
    ``Threads.innermost`` raises TypeError for it, as ``_link`` reports."""
    hash((rt.pid, rt.tid))
    if "Graph" in str(rt.name):
        return "orphan: graph replay (the graph's ops are not in the trace)"
    return "orphan: launch outside any CPU op"


def _ext(a: Args) -> Any:
    return a.external_id if a.external_id is not None else a.external_id_lc


def _link(args: Args | None, runtimes: dict[Any, Event], by_ext: dict[Any, int],
          threads: Threads) -> tuple[int | None, str]:
    rt = runtimes.get(args.correlation) if args is not None and args.correlation is not None else None
    if rt is not None:
        ext = _ext(rt.args)  # type: ignore[arg-type]  # a runtime event is kept only with its args
        op = by_ext.get(ext) if ext is not None else None
        if op is None:
            op = threads.innermost(rt.pid, rt.tid, rt.ts)
        if op is not None:
            return op, "op"
        return None, _launch_orphan(rt)
    ext = _ext(args) if args is not None else None
    op = by_ext.get(ext) if ext is not None else None
    if op is not None:
        return op, "op"
    return None, "orphan: launched outside the capture window (no launch event)"
