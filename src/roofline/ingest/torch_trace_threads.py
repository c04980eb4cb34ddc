"""CPU ops per (pid, tid) sorted by start: the innermost op holding a launch, an op's caller, callees and
consumers. Split out of ``torch_trace.py`` (which re-exports it as ``_Threads``)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

import numpy as np

from roofline.ingest.torch_trace_decode import Event


class Threads:
    """CPU ops per (pid, tid) sorted by start, for innermost-op lookups; built on first use."""

    def __init__(self, ops: list[Event]) -> None:
        self.ops = ops
        self.threads: dict[tuple[Any, Any], tuple[list[float], list[int]]] | None = None
        self.ends: dict[tuple[Any, Any], list[Any]] = {}  # per thread, in the same order: each op's end

    def _index(self) -> dict[tuple[Any, Any], tuple[list[float], list[int]]]:
        if self.threads is None:
            per: dict[tuple[Any, Any], list[int]] = defaultdict(list)
            for i, o in enumerate(self.ops):
                try:
                    per[(o.pid, o.tid)].append(i)
                except TypeError:  # an unhashable pid/tid (damaged trace): no thread to look the op up by
                    continue
            self.threads = {}
            starts = [o.ts for o in self.ops]
            for key, idx in per.items():
                idx.sort(key=starts.__getitem__)  # (a C-level key: this sort ran a lambda per op)
                self.threads[key] = ([starts[i] for i in idx], idx)
                self.ends[key] = [self.ops[i].ts + self.ops[i].dur for i in idx]
        return self.threads

    def _thread(self, op: Event) -> tuple[list[float], list[int]] | None:
        """(start times, op indices) of ``op``'s thread."""
        try:
            return self._index().get((op.pid, op.tid))
        except TypeError:  # an unhashable pid/tid
            return None

    def following(self, op: Event, limit: int = 8) -> list[Event]:
        """The ops that start after ``op`` ends on its thread, in order (at most ``limit``)."""
        found = self._thread(op)
        if not found:
            return []
        starts, idx = found
        j = bisect.bisect_left(starts, float(op.ts) + float(op.dur))
        return [self.ops[i] for i in idx[j:j + limit]]

    def within(self, op: Event, limit: int = 4096) -> list[Event]:
        """The ops that start inside ``op``'s span on its thread, in order."""
        found = self._thread(op)
        if not found:
            return []
        starts, idx = found
        lo = bisect.bisect_right(starts, float(op.ts))
        hi = bisect.bisect_right(starts, float(op.ts) + float(op.dur))
        return [self.ops[i] for i in idx[lo:min(hi, lo + limit)]]

    def enclosing(self, op: Event) -> Event | None:
        """The innermost other op whose span holds ``op`` on its thread (its caller)."""
        found = self._thread(op)
        if not found:
            return None
        starts, idx = found
        end = float(op.ts) + float(op.dur)
        j = bisect.bisect_right(starts, float(op.ts)) - 1
        for k in range(j, max(-1, j - 64), -1):
            o = self.ops[idx[k]]
            if o is not op and float(o.ts) + float(o.dur) >= end and o.dur >= op.dur:
                return o
        return None

    def innermost(self, pid: Any, tid: Any, ts: float) -> int | None:
        threads = self.threads if self.threads is not None else self._index()
        found = threads.get((pid, tid))
        if not found:
            return None
        starts, idx = found
        ends = self.ends[(pid, tid)]
        j = bisect.bisect_right(starts, ts) - 1
        for k in range(j, max(-1, j - 64), -1):  # nested ops: the latest start that still holds ts
            if ends[k] >= ts:
                return idx[k]
        return None

    def innermost_many(self, queries: list[tuple[Any, Any, float]]) -> list[int | None]:
        """:meth:`innermost` of many (pid, tid, ts) at once: per thread, one ``searchsorted`` and a backward
        walk over the still unresolved queries (the V100 trace's 22k launches: 18 ms against 31 ms)."""
        threads = self.threads if self.threads is not None else self._index()
        out: list[int | None] = [None] * len(queries)
        per: dict[tuple[Any, Any], list[int]] = defaultdict(list)
        for i, (pid, tid, _) in enumerate(queries):
            try:
                per[(pid, tid)].append(i)
            except TypeError:  # an unhashable pid/tid: no thread
                continue
        for key, where in per.items():
            found = threads.get(key)
            if not found:
                continue
            starts = np.asarray(found[0], dtype="float64")
            ends = np.asarray(self.ends[key], dtype="float64")
            ts = np.fromiter((queries[i][2] for i in where), dtype="float64", count=len(where))
            j = np.searchsorted(starts, ts, side="right") - 1
            hit = np.full(len(where), -1, dtype=np.intp)
            todo = np.arange(len(where))
            for step in range(64):  # nested ops: the latest start that still holds ts, as innermost()
                k = j[todo] - step
                valid = k >= 0
                held = valid & (ends[np.where(valid, k, 0)] >= ts[todo])
                hit[todo[held]] = k[held]
                todo = todo[valid & ~held]
                if not todo.size:
                    break
            idx = found[1]
            for q, k in zip(where, hit.tolist()):
                if k >= 0:
                    out[q] = idx[k]
        return out
