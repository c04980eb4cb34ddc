"""CPU ops per (pid, tid) sorted by start: the innermost op holding a launch, an op's caller, callees and
consumers. Split out of ``torch_trace.py`` (which re-exports it as ``_Threads``).

The index is three arrays over all ops at once, thread by thread and by start within a thread (a stable
sort: ops that start together keep their trace order): start, end, op index; a (pid, tid) maps to its
slice. Times are float64 where that is exact, that is where every start and duration is an int or float
below 2**52 in magnitude (so that ``ts + dur`` is exact too): float64 comparisons then decide as Python's
int/float comparisons do. Otherwise (a timestamp in ns past 2**52, NaN, a damaged value) the arrays hold
the trace's own Python numbers (object dtype) and numpy compares them with Python's operators: the same
results, only slower. A query value is handled the same way (a huge int query compares as Python does).

What costs here is touching the decoded events, not the arithmetic: each field of each op is read once,
in one pass that converts it (``np.fromiter``), and with a strict conversion (``operator.index`` for ints,
``float.__float__`` for floats) so that a string or None is never parsed into a number. On the V100
trace (56k ops, 22k launch lookups) inside read(): index and lookups ~28 ms against ~39 ms with Python
lists; nearly all of it is those seven passes over cold structs (~3.5 ms each), not numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from operator import attrgetter, index, itemgetter
from typing import Any

import numpy as np

from roofline.ingest.torch.decode import Event

#: |value| below this: an int and the sum of two such values convert to float64 exactly
EXACT = 2.0 ** 52
WALK = 64  # nested ops looked at, innermost first, before a lookup gives up (as it always has)
_TS, _DUR, _PID, _TID = attrgetter("ts"), attrgetter("dur"), attrgetter("pid"), attrgetter("tid")
_STRICT = ((index, np.int64), (float.__float__, np.float64))  # (ints only, floats only)
_BAD = (TypeError, ValueError, OverflowError)


def _strict(items: list[Any], get: Callable[[Any], Any]) -> np.ndarray | None:
    """``get`` of every item as int64 when all are ints, float64 when all are floats, else None."""
    for check, dtype in _STRICT:
        try:
            return np.fromiter(map(check, map(get, items)), dtype, len(items))
        except _BAD:  # (the first value of another type stops the pass)
            continue
    return None


def exact_floats(items: list[Any], get: Callable[[Any], Any]) -> np.ndarray | None:
    """``get`` of every item as float64 when each is an int or float that float64 holds exactly (and a sum
    of two stays exact), else None."""
    arr = _strict(items, get)
    if arr is None:  # ints and floats mixed, or not numbers: numpy's own dtype discovery is the check
        try:
            arr = np.array(list(map(get, items)))
        except _BAD:
            return None
        if arr.ndim != 1 or arr.dtype not in (np.int64, np.float64):  # (float32 would sum as float32)
            return None
    arr = arr.astype(np.float64, copy=False)
    # (NaN fails the comparison too: Python sorts NaN differently than numpy does)
    return arr if not arr.size or float(np.abs(arr).max()) < EXACT else None


def _group(items: list[Any], pid: Callable[[Any], Any], tid: Callable[[Any], Any]
           ) -> tuple[np.ndarray, list[int], list[tuple[Any, Any]]]:
    """Item positions grouped by (pid, tid), each group in item order: (positions, where each group starts
    in them and where the last ends, each group's (pid, tid)). Unhashable ids are in no group."""
    p, t = _strict(items, pid), _strict(items, tid)
    if p is not None and t is not None and p.dtype == t.dtype == np.int64:
        # integer ids (nearly every trace): equal as numbers is equal as dict keys, so group them in numpy
        order = np.lexsort((t, p))  # (stable)
        ps, ts = p[order], t[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = (ps[1:] != ps[:-1]) | (ts[1:] != ts[:-1])
        first = np.flatnonzero(new)
        return order, [*first.tolist(), len(order)], list(zip(ps[first].tolist(), ts[first].tolist()))
    keys = list(zip(map(pid, items), map(tid, items)))
    try:
        number = dict.fromkeys(keys)
        for i, k in enumerate(number):
            number[k] = i
        codes = np.fromiter(map(number.__getitem__, keys), np.intp, len(keys))
    except TypeError:  # an unhashable pid/tid (damaged trace): no thread to look that item up by
        number, codes = {}, np.full(len(keys), -1, dtype=np.intp)
        for i, k in enumerate(keys):
            try:
                codes[i] = number.setdefault(k, len(number))
            except TypeError:
                continue
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(number) + 1))  # (the -1s sort first: no group)
    return order[bounds[0]:], (bounds - bounds[0]).tolist(), list(number)


class Threads:
    """CPU ops per (pid, tid) sorted by start, for innermost-op lookups; built on first use."""

    def __init__(self, ops: list[Event]) -> None:
        self.ops = ops
        self.spans: dict[tuple[Any, Any], tuple[int, int]] | None = None  # (pid, tid) -> its slice
        self.starts: np.ndarray = np.empty(0)  # float64, or the trace's numbers (object)
        self.ends: np.ndarray = np.empty(0)
        self.order: np.ndarray = np.empty(0, dtype=np.intp)  # the op index at each position
        self._as_objects: tuple[np.ndarray, np.ndarray] | None = None
        self.durs: np.ndarray | None = None  # float64 durations at each position (where times are float64)
        self._walk: tuple[np.ndarray, ...] | None = None  # what callers_of() walks over, made on first use

    def _index(self) -> dict[tuple[Any, Any], tuple[int, int]]:
        if self.spans is not None:
            return self.spans
        ops = self.ops
        grouped, bounds, keys = _group(ops, _PID, _TID)
        ts, dur = exact_floats(ops, _TS), exact_floats(ops, _DUR)
        if ts is not None and dur is not None:
            codes = np.full(len(ops), -1, dtype=np.intp)  # each op's group; -1: none
            codes[grouped] = np.repeat(np.arange(len(keys)), np.diff(bounds))
            order = np.lexsort((ts, codes))[len(ops) - len(grouped):]  # stable: ties keep the trace's order
            self.starts, self.ends, self.durs = ts[order], (ts + dur)[order], dur[order]
        else:  # Python's comparisons and sums, thread by thread, exactly as a list sort by start
            raw_ts, raw_dur = list(map(_TS, ops)), list(map(_DUR, ops))
            order_list: list[int] = []
            for a, b in pairwise(bounds):
                order_list.extend(sorted(grouped[a:b].tolist(), key=raw_ts.__getitem__))
            order = np.array(order_list, dtype=np.intp)
            self.starts = _objects([raw_ts[i] for i in order_list])
            self.ends = _objects([raw_ts[i] + raw_dur[i] for i in order_list])
        self.order = order
        self.spans = {k: (bounds[g], bounds[g + 1]) for g, k in enumerate(keys)}
        return self.spans

    def _objects(self) -> tuple[np.ndarray, np.ndarray]:
        """starts and ends as Python numbers, for a query float64 cannot hold exactly."""
        if self._as_objects is None:
            self._as_objects = (self.starts.astype(object), self.ends.astype(object))
        return self._as_objects

    def _slice(self, op: Event) -> tuple[int, int, np.ndarray] | None:
        """(first, end position of ``op``'s thread, its starts) or None. The callers compare Python floats
        with them: exact against float64 and Python numbers alike."""
        try:
            found = self._index().get((op.pid, op.tid))
        except TypeError:  # an unhashable pid/tid
            return None
        if found is None:
            return None
        lo, hi = found
        return lo, hi, self.starts[lo:hi]

    def following(self, op: Event, limit: int = 8) -> list[Event]:
        """The ops that start after ``op`` ends on its thread, in order (at most ``limit``)."""
        found = self._slice(op)
        if found is None:
            return []
        lo, hi, starts = found
        j = lo + int(np.searchsorted(starts, float(op.ts) + float(op.dur), side="left"))
        return [self.ops[i] for i in self.order[j:min(hi, j + limit)].tolist()]

    def within(self, op: Event, limit: int = 4096) -> list[Event]:
        """The ops that start inside ``op``'s span on its thread, in order."""
        found = self._slice(op)
        if found is None:
            return []
        lo, _, starts = found
        a, b = np.searchsorted(starts, [float(op.ts), float(op.ts) + float(op.dur)], side="right").tolist()
        return [self.ops[i] for i in self.order[lo + a:lo + min(b, a + limit)].tolist()]

    def enclosing(self, op: Event, index: int | None = None) -> Event | None:
        """The innermost other op whose span holds ``op`` on its thread (its caller); with ``op``'s index
        in the ops, by :meth:`callers_of` where the times are float64."""
        if index is not None:
            callers = self.callers_of([index])
            if callers is not None:
                return self.ops[callers[0]] if callers[0] >= 0 else None
        found = self._slice(op)
        if found is None:
            return None
        lo, _, starts = found
        end = float(op.ts) + float(op.dur)
        j = int(np.searchsorted(starts, float(op.ts), side="right")) - 1
        for k in range(j, max(-1, j - WALK), -1):
            o = self.ops[self.order[lo + k]]
            if o is not op and float(o.ts) + float(o.dur) >= end and o.dur >= op.dur:
                return o
        return None

    def callers_of(self, indices: list[int]) -> list[int] | None:
        """:meth:`enclosing` of the ops at these indexes, all at once, as op indexes (-1: none); None where
        the times are not float64. Stack-free: each op walks back from the last op starting at or before it,
        all together, one NumPy step per position (at most WALK, as enclosing() walks one op's), and stops
        once no op before it on its thread ends at or after its end (a running maximum of the ends: a
        top-level op is settled before the first step)."""
        spans = self._index()
        if self.durs is None:
            return None
        if self._walk is None:
            self._walk = self._walk_arrays(spans)
        pos, lo, j, reach, before = self._walk
        ends, durs = self.ends, self.durs
        q = pos[np.asarray(indices, dtype=np.intp)]
        todo = np.flatnonzero(q >= 0)  # (an op with an unhashable pid/tid is in no thread: none)
        p = q[todo]
        # j past the op's own position: ops that start with it, walked; else only if one before ends late enough
        keep = (j[p] > p) | (before[p] >= ends[p])
        todo, p = todo[keep], p[keep]
        hit = np.full(len(q), -1, dtype=np.intp)
        for step in range(WALK):
            k = j[p] - step
            live = (k >= lo[p]) & (reach[np.maximum(k, 0)] >= ends[p])  # (none at or before k ends late enough)
            todo, p, k = todo[live], p[live], k[live]
            held = (k != p) & (ends[k] >= ends[p]) & (durs[k] >= durs[p])
            hit[todo[held]] = self.order[k[held]]
            todo, p = todo[~held], p[~held]
            if not todo.size:
                break
        return hit.tolist()  # type: ignore[no-any-return]

    def _walk_arrays(self, spans: dict[tuple[Any, Any], tuple[int, int]]) -> tuple[np.ndarray, ...]:
        """(each op's position, -1 if in no thread; then at each position: its thread's first position, the
        last position starting at or before it, the latest end up to it and before it, on its thread)."""
        n, starts = len(self.order), self.starts
        pos = np.full(len(self.ops), -1, dtype=np.intp)
        pos[self.order] = np.arange(n)
        lo, j = np.empty(n, dtype=np.intp), np.empty(n, dtype=np.intp)
        reach, before = np.empty(n), np.empty(n)
        for a, b in spans.values():
            lo[a:b] = a
            j[a:b] = a + np.searchsorted(starts[a:b], starts[a:b], side="right") - 1
            reach[a:b] = np.maximum.accumulate(self.ends[a:b])
            before[a] = -np.inf
            before[a + 1:b] = reach[a:b - 1]
        return pos, lo, j, reach, before

    def innermost(self, pid: Any, tid: Any, ts: Any) -> int | None:
        """The index of the innermost op on (pid, tid) whose span holds ``ts``: the latest start at or
        before ``ts`` whose end is at or after it, among the ``WALK`` latest. An unhashable pid/tid raises
        TypeError (the reader labels that launch's GPU work as having an unusable id)."""
        found = self._index().get((pid, tid))
        if found is None:
            return None
        return self._held([(np.zeros(1, dtype=np.intp), found)], [(ts,)], itemgetter(0))[0]

    def innermost_many(self, queries: list[tuple[Any, Any, Any]]) -> list[int | None]:
        """:meth:`innermost` of many (pid, tid, ts) at once (None also for an unhashable pid/tid)."""
        return self._many(queries, itemgetter(0), itemgetter(1), itemgetter(2))

    def innermost_of(self, events: list[Event]) -> list[int | None]:
        """:meth:`innermost` of each event's (pid, tid, ts): :meth:`innermost_many` without the tuples."""
        return self._many(events, _PID, _TID, _TS)

    def _many(self, items: list[Any], pid: Callable[[Any], Any], tid: Callable[[Any], Any],
              ts: Callable[[Any], Any]) -> list[int | None]:
        spans = self._index()
        grouped, bounds, keys = _group(items, pid, tid)
        found = [(grouped[a:b], spans.get(k)) for (a, b), k in zip(pairwise(bounds), keys)]
        return self._held([(who, s) for who, s in found if s is not None], items, ts)

    def _held(self, groups: list[tuple[np.ndarray, tuple[int, int]]], items: list[Any],
              ts: Callable[[Any], Any]) -> list[int | None]:
        """Per group of queries (their positions in ``items``, their thread's slice): the op index holding
        each. One searchsorted per thread, then one backward walk over all the still unresolved queries."""
        n = len(items)
        if not n:
            return []
        q = exact_floats(items, ts) if self.starts.dtype != object else None
        starts, ends = (self.starts, self.ends) if q is not None else self._objects()
        if q is None:
            q = _objects(list(map(ts, items)))
        lo = np.zeros(n, dtype=np.intp)
        j = np.full(n, -1, dtype=np.intp)  # the last position that starts at or before the query
        for who, (a, b) in groups:
            lo[who] = a
            j[who] = a + np.searchsorted(starts[a:b], q[who], side="right") - 1
        hit = np.full(n, -1, dtype=np.intp)
        todo = np.flatnonzero(j >= lo)
        for step in range(WALK):  # nested ops: the latest start that still holds ts
            k = j[todo] - step
            valid = k >= lo[todo]
            todo, k = todo[valid], k[valid]
            held = ends[k] >= q[todo]
            hit[todo[held]] = self.order[k[held]]
            todo = todo[~held]
            if not todo.size:
                break
        out: list[Any] = hit.tolist()
        return out if not (hit < 0).any() else [None if i < 0 else i for i in out]


def _objects(values: list[Any]) -> np.ndarray:
    """A 1-D object array of ``values`` as they are (np.array would unpack a sequence value)."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr
