"""The vectorised thread index of the Kineto reader (torch_trace_threads.Threads) against a plain
reference: per (pid, tid) a list of ops sorted by start, ``bisect`` on the raw Python numbers, and a
walk of at most 64 nested ops -- the lookups the reader had before they were vectorised."""

from __future__ import annotations

import bisect
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from roofline.ingest.torch.decode import Event, decode
from roofline.ingest.torch.threads import Threads

SAMPLE = Path(__file__).resolve().parents[2] / "src/roofline/samples/h100_bert-small.pt.trace.json.gz"


class Reference:
    """The plain implementation: Python lists, Python comparisons."""

    def __init__(self, ops: list[Event]) -> None:
        self.ops = ops
        self.per: dict[Any, list[int]] = {}
        for i, o in enumerate(ops):
            try:
                self.per.setdefault((o.pid, o.tid), []).append(i)
            except TypeError:
                continue
        for idx in self.per.values():
            idx.sort(key=lambda i: ops[i].ts)

    def _thread(self, op: Event) -> tuple[list[Any], list[int]] | None:
        try:
            idx = self.per.get((op.pid, op.tid))
        except TypeError:
            return None
        return ([self.ops[i].ts for i in idx], idx) if idx else None

    def innermost(self, pid: Any, tid: Any, ts: Any) -> int | None:
        idx = self.per.get((pid, tid))  # (an unhashable pid/tid raises, as the reader expects)
        if not idx:
            return None
        j = bisect.bisect_right([self.ops[i].ts for i in idx], ts) - 1
        for k in range(j, max(-1, j - 64), -1):
            o = self.ops[idx[k]]
            if o.ts + o.dur >= ts:
                return idx[k]
        return None

    def following(self, op: Event, limit: int = 8) -> list[Event]:
        found = self._thread(op)
        if not found:
            return []
        starts, idx = found
        j = bisect.bisect_left(starts, float(op.ts) + float(op.dur))
        return [self.ops[i] for i in idx[j:j + limit]]

    def within(self, op: Event, limit: int = 4096) -> list[Event]:
        found = self._thread(op)
        if not found:
            return []
        starts, idx = found
        lo = bisect.bisect_right(starts, float(op.ts))
        hi = bisect.bisect_right(starts, float(op.ts) + float(op.dur))
        return [self.ops[i] for i in idx[lo:min(hi, lo + limit)]]

    def enclosing(self, op: Event) -> Event | None:
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


def nested(rng: random.Random, threads: list[tuple[Any, Any]], base: int, floats: bool) -> list[Event]:
    """Random call trees per thread, shuffled together: ties (siblings and parents starting at once, zero
    durations, one op ending where the next starts) and chains deeper than the 64-op walk."""
    ops: list[Event] = []

    def tree(pid: Any, tid: Any, start: int, length: int, depth: int) -> None:
        ts: Any = base + start
        dur: Any = length
        if floats and rng.random() < 0.5:
            ts, dur = ts + rng.choice((0.0, 0.25, 0.5)), float(dur)
        ops.append(Event(cat="cpu_op", name=f"op{len(ops)}", ts=ts, dur=dur, pid=pid, tid=tid))
        t = start + rng.choice((0, 0, 1, 2))  # children often start with their parent
        while depth and t < start + length and rng.random() < 0.8:
            n = rng.randint(0, max(0, start + length - t))
            tree(pid, tid, t, n, depth - 1)
            t += n + rng.choice((0, 0, 1))
    for pid, tid in threads:
        t = 0
        for _ in range(rng.randint(1, 6)):
            n = rng.randint(0, 400)
            tree(pid, tid, t, n, rng.randint(0, 8))
            t += n + rng.choice((0, 1, 5))
        for d in range(90):  # a chain 90 deep: lookups at its bottom stop after 64 ops
            ops.append(Event(cat="cpu_op", name=f"deep{d}", ts=base + t + d, dur=200 - 2 * d, pid=pid, tid=tid))
    rng.shuffle(ops)
    return ops


def queries(rng: random.Random, ops: list[Event], threads: list[tuple[Any, Any]]) -> list[tuple[Any, Any, Any]]:
    out: list[tuple[Any, Any, Any]] = []
    for o in ops:  # at starts, ends, just inside and outside of spans
        out += [(o.pid, o.tid, o.ts), (o.pid, o.tid, o.ts + o.dur), (o.pid, o.tid, o.ts + o.dur + 0.5),
                (o.pid, o.tid, o.ts - 1)]
    pid, tid = threads[0]
    out += [(pid, tid, -10 ** 18), (pid, tid, 10 ** 18), ("nope", tid, 5), (pid, "nope", 5)]
    rng.shuffle(out)
    return out


def check(ops: list[Event], qs: list[tuple[Any, Any, Any]]) -> Threads:
    ref, fast = Reference(ops), Threads(ops)
    expected = [ref.innermost(*q) for q in qs]
    assert fast.innermost_many(qs) == expected
    assert [fast.innermost(*q) for q in qs[:300]] == expected[:300]
    events = [Event(cat="cuda_runtime", ts=ts, dur=1, pid=p, tid=t) for p, t, ts in qs]
    assert fast.innermost_of(events) == expected
    for o in ops:
        assert fast.following(o) == ref.following(o)
        assert fast.within(o) == ref.within(o)
        assert fast.within(o, limit=3) == ref.within(o, limit=3)
        assert fast.enclosing(o) is ref.enclosing(o)
    assert sum(e is not None for e in expected) > len(qs) // 3  # the lookups found ops, not only None
    check_callers(ops, fast, ref)
    return fast


def check_callers(ops: list[Event], fast: Threads, ref: Reference) -> None:
    """callers_of (all at once, a NumPy walk) and enclosing with an index: the reference's enclosing."""
    expected = [ref.enclosing(o) for o in ops]
    some = list(range(len(ops)))[::-3] * 2  # (any order, repeated)
    for indices in (list(range(len(ops))), some):
        found = fast.callers_of(indices)
        if fast.starts.dtype == object:  # times past float64: the one-by-one walk decides
            assert found is None
        else:
            assert [ops[i] if i >= 0 else None for i in found] == [expected[i] for i in indices]
            assert all(ops[i] is expected[j] for i, j in zip(found, indices) if i >= 0)
    assert all(fast.enclosing(o, i) is expected[i] for i, o in enumerate(ops))
    assert len(ops) < 5 or sum(e is not None for e in expected) > len(ops) // 4  # callers were found


@pytest.mark.parametrize("seed", range(6))
def test_integer_microseconds_match_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    threads = [(rng.randint(1, 3), rng.randint(1, 40)) for _ in range(rng.randint(1, 12))]
    ops = nested(rng, list(dict.fromkeys(threads)), 1669783687464181, floats=False)  # the V100 trace's clock
    fast = check(ops, queries(rng, ops, threads))
    assert fast.starts.dtype == np.float64  # exact in float64: the fast path was the one tested


@pytest.mark.parametrize("seed", range(4))
def test_float_times_and_string_thread_ids_match_the_reference(seed: int) -> None:
    rng = random.Random(100 + seed)
    threads = [(7, f"thread {i}") for i in range(rng.randint(1, 6))] + [(7, 3)]
    ops = nested(rng, threads, 1700000000000000, floats=True)
    fast = check(ops, queries(rng, ops, threads))
    assert fast.starts.dtype == np.float64


def test_times_past_float64_precision_compare_as_python_numbers() -> None:
    """Nanosecond ints past 2**53: float64 would merge 2**60 and 2**60 + 1; Python's comparisons do not."""
    rng = random.Random(7)
    threads = [(1, 1), (1, 2)]
    ops = nested(rng, threads, 2 ** 60, floats=False)
    ops += [Event(cat="cpu_op", name=n, ts=2 ** 60 + t, dur=d, pid=1, tid=3)
            for n, t, d in (("a", 0, 1), ("b", 1, 0), ("c", 1, 1))]
    qs = queries(rng, ops, threads) + [(1, 3, 2 ** 60 + 1), (1, 3, 2 ** 60 + 2), (1, 3, float(2 ** 60))]
    fast = check(ops, qs)
    assert fast.starts.dtype == object
    assert fast.innermost_many([(1, 3, 2 ** 60 + 1), (1, 3, 2 ** 60 + 2)]) == [len(ops) - 1, len(ops) - 1]


def test_a_huge_int_query_against_float64_starts_is_exact() -> None:
    ops = [Event(cat="cpu_op", name="a", ts=0, dur=2 ** 51, pid=1, tid=1)]
    fast = Threads(ops)
    # 2**53 + 1 is past the op's end, though float64(2**53 + 1) == 2.0**53 ... and 2**51 is its end exactly
    assert fast.innermost_many([(1, 1, 2 ** 51), (1, 1, 2 ** 51 + 1), (1, 1, 2 ** 64)]) == [0, None, None]
    assert fast.starts.dtype == np.float64


def test_unhashable_and_odd_ids() -> None:
    ops = [Event(cat="cpu_op", name="a", ts=0, dur=10, pid=[1], tid=1),
           Event(cat="cpu_op", name="b", ts=0, dur=10, pid=1, tid=True),
           Event(cat="cpu_op", name="c", ts=2, dur=2, pid=1.0, tid=1),
           Event(cat="cpu_op", name="d", ts=5, dur=10, pid=None, tid="x")]
    fast, ref = Threads(ops), Reference(ops)
    qs = [(1, 1, 3), (1, True, 1), (1.0, 1.0, 3), (None, "x", 6), ([1], 1, 3), (1, {}, 3)]
    # (1, True), (1.0, 1) and (1, 1) are one dict key: b [0, 10) holds c [2, 4) on that one thread
    assert fast.innermost_many(qs) == [2, 1, 2, 3, None, None]
    assert [ref.innermost(*q) for q in qs[:4]] == [2, 1, 2, 3]
    with pytest.raises(TypeError):
        fast.innermost([1], 1, 3)  # the reader labels that launch's GPU work as having an unusable id
    for o in ops:
        assert fast.following(o) == ref.following(o) and fast.within(o) == ref.within(o)
        assert fast.enclosing(o) is ref.enclosing(o)
    check_callers(ops, fast, ref)  # (a: in no thread, no caller; c's caller is b, on the thread (1, 1))
    assert fast.callers_of([0, 1, 2, 3]) == [-1, -1, 1, -1]


def test_no_ops_and_no_queries() -> None:
    fast = Threads([])
    assert fast.innermost_many([]) == [] and fast.innermost_many([(1, 1, 5)]) == [None]
    assert fast.innermost(1, 1, 5) is None and fast.innermost_of([]) == []


def test_the_bert_sample_matches_the_reference() -> None:
    from roofline.ingest.common import json_bytes

    events, _ = decode(SAMPLE, json_bytes(SAMPLE))
    ops = [e for e in events if e.cat == "cpu_op" and e.ph == "X"]
    launches = [e for e in events if e.cat == "cuda_runtime" and e.ph == "X"]
    assert len(ops) > 400 and len(launches) > 100
    ref, fast = Reference(ops), Threads(ops)
    found = fast.innermost_of(launches)
    assert found == [ref.innermost(e.pid, e.tid, e.ts) for e in launches]
    assert sum(i is not None for i in found) > 100
    for o in ops:
        assert fast.following(o) == ref.following(o) and fast.within(o) == ref.within(o)
        assert fast.enclosing(o) is ref.enclosing(o)
    check_callers(ops, fast, ref)


def frame_of(rng: random.Random, n: int) -> Any:
    """A reader-like frame: names (some missing), GPU times with ties, costs and reasons (some missing)."""
    import pandas as pd

    from roofline.schema import UNAVAILABLE

    names = [rng.choice(["aten::mm", "aten::add", "nccl:all_reduce", "aten::conv2d", None]) for _ in range(n)]
    why = [rng.choice([f"{UNAVAILABLE}: no Input Dims", "modelled", None]) for _ in range(n)]
    bwhy = [rng.choice([f"{UNAVAILABLE}: no bytes model", None]) for _ in range(n)]
    return pd.DataFrame({
        "kernel_short_name": pd.array(names, dtype="string"),
        "duration_s": [rng.choice([1e-6, 2e-6, 3.5e-6]) for _ in range(n)],  # ties in the groups' sums
        "flop_fp32": [rng.choice([1.0, float("nan")]) for _ in range(n)],
        "dram_bytes": [rng.choice([8.0, 8.0, float("nan")]) for _ in range(n)],
        "flop_fp32_source": pd.array(why, dtype="string"), "dram_bytes_source": pd.array(bwhy, dtype="string")})


@pytest.mark.parametrize("seed", range(8))
def test_unmodelled_matches_the_groupby_by_name(seed: int) -> None:
    from roofline.ingest.torch.summary import _unmodelled_by_name, unmodelled

    rng = random.Random(seed)
    frame = frame_of(rng, rng.choice([3, 40, 2000]))
    total = float(frame["duration_s"].sum())
    for top in (10, 2):
        got = unmodelled(frame, top)
        assert got == _unmodelled_by_name(frame, total, top)
        assert [r["op"] for r in got] and all(isinstance(r["gpu_time_share"], float) for r in got)
    frame.loc[frame["kernel_short_name"] == "aten::mm", "flop_fp32_source"] = None  # a group without reasons
    frame.loc[frame["kernel_short_name"] == "aten::mm", "dram_bytes_source"] = None
    assert unmodelled(frame) == _unmodelled_by_name(frame, total, 10)


def test_unmodelled_of_the_bert_sample() -> None:
    from roofline.ingest.torch.summary import _unmodelled_by_name, unmodelled
    from roofline.ingest.torch.trace import read

    frame = read(SAMPLE)
    got = unmodelled(frame)
    assert got == _unmodelled_by_name(frame, float(frame["duration_s"].sum()), 10)
    assert got and got[0]["gpu_time_share"] > 0


def test_unmodelled_ties_keep_the_order_of_the_unmodelled_rows() -> None:
    """Groups come in the order their first unmodelled row appears (not the name's first row): with equal
    GPU times that order decides the ranking."""
    import pandas as pd

    from roofline.ingest.torch.summary import _unmodelled_by_name, unmodelled

    frame = pd.DataFrame({"kernel_short_name": pd.array(["A", "B", "A", "C"], dtype="string"),
                          "duration_s": [1e-6] * 4, "flop_fp32": [1.0, float("nan"), float("nan"), float("nan")],
                          "dram_bytes": [8.0] * 4,
                          "flop_fp32_source": pd.array(["ok", "unavailable: b", "unavailable: a", "unavailable: c"],
                                                       dtype="string"),
                          "dram_bytes_source": pd.array(["ok"] * 4, dtype="string")})
    got = unmodelled(frame)
    assert got == _unmodelled_by_name(frame, 4e-6, 10)
    assert [r["op"] for r in got] == ["B", "A", "C"] and got[1]["reason"] == "unavailable: a"
