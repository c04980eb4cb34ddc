"""NVTX ranges of an nsys export attached to the launches they enclose (vectorised per thread and domain).

NVTX ranges are CPU-side. A launch is inside a range when the runtime API call that made it (same
correlation id, same process) ran on the range's thread between its start and end. Push/pop ranges
nest within a (thread, domain): the innermost one holding a time ``t`` is the latest-starting range
with start <= t, or the nearest of its ancestors that is still open at ``t``, so one
``searchsorted`` and a few vectorised steps up a parent array find it for every launch at once.
Start/end ranges need not nest: each launch is tested against them directly.

The label (the schema's ``nvtx_range``): per domain, the enclosing push/pop ranges outermost first,
then the start/end ranges, joined by ``/``; domains other than the default are prefixed with their
name (``NvtxDomainCreate``) and joined by ``;``.
"""

from __future__ import annotations

import sqlite3
from itertools import chain, repeat
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

PUSHPOP, STARTEND, DOMAIN_CREATE = 59, 60, 75
OPEN = np.iinfo(np.int64).max  # a range never closed in the capture encloses everything after its start
CHUNK = 65536
MATRIX_LIMIT = 4_000_000  # launches × start/end ranges tested at once
PACK_THREADS = 64  # launching threads named in one CASE


def attach(con: sqlite3.Connection, have: set[str], strings: bool, tid: np.ndarray, t: np.ndarray,
           null: int) -> pa.Array | None:
    """Per launch made on thread ``tid`` at ``t``: its ranges' label (an Arrow string array; null: no range)."""
    if not {"start", "eventType", "globalTid"} <= have:
        return None
    launched = np.unique(tid[tid != null])
    if not len(launched):
        return None
    # a range's name: its text, else its registered string (textId), fetched as one column
    name = ("IFNULL(n.text, n.textId)" if "textId" in have and strings else "n.text") if "text" in have else \
        ("n.textId" if "textId" in have and strings else "NULL")
    end = f"IFNULL(n.end, {OPEN})" if "end" in have else str(OPEN)
    dom = "IFNULL(n.domainId, 0)" if "domainId" in have else "0"
    tids = ",".join(str(int(x)) for x in launched)  # integers from the export: safe to inline
    # one scan for the ranges and the domain names; no ORDER BY, no per-row StringIds subquery (NumPy sorts,
    # registered strings are looked up once). Every value fetched costs ~150 ns in sqlite3, so the thread
    # (as its index among the launching threads), domain and event type travel packed in one integer
    # where they fit (a few launching threads, domain ids below 2^31), else as three columns.
    doms = f" OR n.eventType = {DOMAIN_CREATE}" if "domainId" in have and "text" in have else ""
    packed = len(launched) <= PACK_THREADS and ("domainId" not in have or con.execute(
        f"SELECT 1 FROM NVTX_EVENTS WHERE domainId < 0 OR domainId >= {2**31} LIMIT 1").fetchone() is None)
    if packed:
        which = " ".join(f"WHEN {int(x)} THEN {i}" for i, x in enumerate(launched))
        key = f"((CASE n.globalTid {which} ELSE {len(launched)} END) << 40) | ({dom} << 8) | n.eventType"
    else:
        key = f"IFNULL(n.globalTid, {null}), {dom}, n.eventType"
    cur = con.execute(f"SELECT {key}, n.start, {end}, {name} "
                      f"FROM NVTX_EVENTS n WHERE (n.eventType IN ({PUSHPOP}, {STARTEND}) AND n.start IS NOT NULL "
                      f"AND n.globalTid IN ({tids})){doms}")
    width = 3 if packed else 5
    nums, texts, packs = [], [], []
    while True:
        batch = cur.fetchmany(CHUNK)
        if not batch:
            break
        block = flat(batch, object)  # one C-level pass; the name column stays objects
        part = block[:, :width].astype(np.int64)
        if packed:  # back to (thread, domain, event type, start, end)
            k = part[:, 0]
            packs.append(k)
            thread = np.append(launched, null)[k >> 40]
            part = np.column_stack([thread, (k >> 8) & 0xFFFFFFFF, k & 0xFF, part[:, 1], part[:, 2]])
        nums.append(part)
        texts.append(block[:, width])
    if not nums:
        return None
    r = np.concatenate(nums)
    names = np.concatenate(texts)
    created = r[:, 2] == DOMAIN_CREATE
    domains = {int(d): x for d, x in zip(r[created, 1].tolist(), names[created].tolist()) if isinstance(x, str)}
    keep = ~created if created.any() else slice(None)  # no copy of every range when no domain was created
    r, names = r[keep], names[keep]
    if not len(r):
        return None
    _resolve_names(con, names)
    order = _range_order(r, np.concatenate(packs)[keep] if packed else None)
    return _label_launches(r[order], names[order], domains, tid, t)


def _range_order(r: np.ndarray, packs: np.ndarray | None) -> np.ndarray:
    """Ranges ``r`` (thread, domain, event type, start, end) by (thread, domain, event type, start, longer first).

    The packed key orders the first three alike (thread indices follow the sorted launching threads; the others
    were domain rows, dropped), one sort key not three. Exports list ranges by start: then a stable sort by that
    one key alone is the order, unless two ranges of a group start together (then end decides: the full sort)."""
    s = r[:, 3]
    if packs is not None and bool((s[1:] >= s[:-1]).all()):
        order = np.argsort(packs, kind="stable")
        k, ss = packs[order], s[order]
        if not ((k[1:] == k[:-1]) & (ss[1:] == ss[:-1])).any():
            return order
    first = (packs,) if packs is not None else (r[:, 2], r[:, 1], r[:, 0])
    return np.lexsort((-r[:, 4], s, *first))


def flat(batch: list[tuple[Any, ...]], dtype: Any) -> np.ndarray:
    """Fetched rows (non-empty) as a 2-D array: one pass over the values flattened (``np.array`` of the
    tuples first discovers their shape and types: 1.5-2x slower); the same errors on values not ``dtype``."""
    width = len(batch[0])
    return np.fromiter(chain.from_iterable(batch), dtype=dtype, count=len(batch) * width).reshape(-1, width)


def _resolve_names(con: sqlite3.Connection, names: np.ndarray) -> None:
    """Registered strings (the ints among the names) from StringIds, in place; no name: ``(unnamed)``."""
    other = np.flatnonzero(~np.fromiter(map(isinstance, names.tolist(), repeat(str)), bool, len(names)))
    if not len(other):
        return
    ids = names[other].tolist()
    want = sorted({int(i) for i in ids if isinstance(i, int)})
    found: dict[int, str] = {}
    for lo in range(0, len(want), 900):
        part = want[lo:lo + 900]
        found.update(con.execute(f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(part))})",
                                 part).fetchall())
    names[other] = [found.get(i, "(unnamed)") if isinstance(i, int) else "(unnamed)" for i in ids]


def _label_launches(r: np.ndarray, names: np.ndarray, domains: dict[int, str], tid: np.ndarray,
                    t: np.ndarray) -> pa.Array:
    """Per launch, the label of the ranges enclosing it, built per (thread, domain, kind) group with Arrow
    string kernels (no Python string per launch)."""
    # group boundaries: column by column (one 2-D compare over the strided key columns costs 5x more)
    cut = np.flatnonzero((np.diff(r[:, 0]) != 0) | (np.diff(r[:, 1]) != 0) | (np.diff(r[:, 2]) != 0)) + 1
    bounds = np.concatenate([[0], cut, [len(r)]])
    by_tid: dict[int, list[tuple[int, int]]] = {}
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        by_tid.setdefault(int(r[lo, 0]), []).append((lo, hi))
    order = np.argsort(tid, kind="stable")
    sorted_tid = tid[order]
    pieces, where = [], []
    for g_tid, gs in by_tid.items():
        idx = order[np.searchsorted(sorted_tid, g_tid, "left"):np.searchsorted(sorted_tid, g_tid, "right")]
        if not len(idx):
            continue
        tt = t[idx]
        per_domain: dict[int, pa.Array] = {}  # groups come sorted by domain, push/pop before start/end
        for lo, hi in gs:
            d, kind = int(r[lo, 1]), int(r[lo, 2])
            s, e = r[lo:hi, 3], r[lo:hi, 4]
            if kind == PUSHPOP:
                part = _pushpop(s, e, names[lo:hi], tt)
            else:
                code, dec = _startend(s, e, names[lo:hi], tt)
                uniq, inv = np.unique(code, return_inverse=True)
                part = pa.array([dec(c) if c >= 0 else None for c in uniq.tolist()], pa.large_string()).take(
                    pa.array(inv.reshape(-1)))
            per_domain[d] = _join(per_domain.get(d), part, "/")
        label = None
        for d, part in per_domain.items():
            if d:  # named domains are prefixed with their name (NvtxDomainCreate)
                part = pc.binary_join_element_wise(_big(domains.get(d, f"domain {d}") + ":"), part, _big(""))
            label = _join(label, part, ";")
        pieces.append(label)
        where.append(idx)
    out = pa.nulls(len(tid), pa.large_string())
    if pieces:
        idx = np.concatenate(where)
        pos = np.full(len(tid), len(idx), dtype=np.int64)
        pos[idx] = np.arange(len(idx))
        out = pa.concat_arrays([*pieces, pa.nulls(1, pa.large_string())]).take(pa.array(pos))
    return pc.if_else(pc.equal(out, ""), pa.scalar(None, pa.large_string()), out)  # an empty label is no label


def _big(text: str) -> pa.Scalar:
    """A literal as large_string: labels are built as large_string, the type pandas stores (no cast at the end)."""
    return pa.scalar(text, pa.large_string())


def _join(a: pa.Array | None, b: pa.Array, sep: str) -> pa.Array:
    """``a + sep + b`` where both are set, else whichever is (Arrow's own null skipping drops rows)."""
    if a is None:
        return b
    return pc.coalesce(pc.binary_join_element_wise(a, b, _big(sep)), a, b)


def _pushpop(s: np.ndarray, e: np.ndarray, names: np.ndarray, t: np.ndarray) -> pa.Array:
    """Per launch, the path outer/.../inner of the push/pop ranges enclosing it (null: none).

    Ranges are sorted by start (equal starts: longer first). Push/pop ranges nest, so a range's depth is
    the number of ranges still open at its start, (its index) - (ranges ended before it), and its parent
    the last range one level up before it; a set that does not nest (damaged export) falls back to a stack."""
    n = len(s)
    idx = np.arange(n, dtype=np.int64)
    depth = idx - np.searchsorted(np.sort(e), s, side="left")
    key = depth * (n + 1) + idx
    by_level = np.argsort(key, kind="stable")
    pos = np.searchsorted(key[by_level], (depth - 1) * (n + 1) + idx) - 1
    parent = np.where(depth > 0, by_level[np.maximum(pos, 0)], -1)
    has = parent >= 0
    nested = bool((depth >= 0).all() and (e >= s).all() and (depth[parent[has]] == depth[has] - 1).all()
                  and (e[has] <= e[parent[has]]).all() and (s[parent[has]] <= s[has]).all())
    if not nested:
        parent, depth = _stack_parents(s, e)
    j = np.searchsorted(s, t, side="right") - 1
    while True:  # the latest-starting range before t, or its nearest ancestor still open at t
        bad = (j >= 0) & (e[np.maximum(j, 0)] < t)
        if not bad.any():
            break
        j[bad] = parent[j[bad]]
    # paths only of the ranges some launch is in (and their ancestors), level by level: a range's path is
    # its parent's path + "/" + its name (most ranges of a PyTorch run hold no launch: aten::view, ...)
    need = np.zeros(n, dtype=bool)
    front = j[j >= 0]
    while len(front):  # up the tree; a range already marked stops its branch (no sort: repeats are harmless)
        front = front[~need[front]]
        need[front] = True
        front = parent[front]
        front = front[front >= 0]
    levels: list[pa.Array] = []
    at = np.zeros(n, dtype=np.int64)  # a range's position in its level's array
    base = np.zeros(n, dtype=np.int64)  # ... and in all levels concatenated
    total = 0
    for d in range(int(depth[need].max()) + 1 if need.any() else 0):
        sel = np.flatnonzero(need & (depth == d))
        mine = pa.array(names[sel].tolist(), pa.large_string())
        if d:
            mine = pc.binary_join_element_wise(levels[-1].take(pa.array(at[parent[sel]])), mine, _big("/"))
        at[sel] = np.arange(len(sel))
        base[sel] = total + at[sel]
        total += len(sel)
        levels.append(mine)
    where = np.where(j >= 0, base[np.maximum(j, 0)], total)
    return pa.concat_arrays([*levels, pa.nulls(1, pa.large_string())]).take(pa.array(where))


def _stack_parents(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parent and depth of each range by a stack walk (ranges that overlap without nesting)."""
    n = len(s)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    stack: list[int] = []
    el = e.tolist()
    for i, si in enumerate(s.tolist()):  # ranges by start: pop those closed before this one opens
        while stack and el[stack[-1]] < si:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
            depth[i] = len(stack)
        stack.append(i)
    return parent, depth


def _startend(s: np.ndarray, e: np.ndarray, names: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, Any]:
    """Per launch, a code for the set of start/end ranges holding it; a decoder to their names by start."""
    sets: dict[tuple[int, ...], int] = {(): -1}
    code = np.full(len(t), -1, dtype=np.int64)
    step = max(1, MATRIX_LIMIT // max(1, len(s)))
    for lo in range(0, len(t), step):
        tt = t[lo:lo + step, None]
        inside = (s[None, :] <= tt) & (e[None, :] >= tt)
        hit = np.flatnonzero(inside.any(axis=1))
        if not len(hit):
            continue
        uniq, inv = np.unique(np.packbits(inside[hit], axis=1), axis=0, return_inverse=True)
        found = np.array([sets.setdefault(tuple(np.flatnonzero(np.unpackbits(u)[:len(s)]).tolist()), len(sets) - 1)
                          for u in uniq], dtype=np.int64)
        code[lo + hit] = found[inv.reshape(-1)]
    members = {v: k for k, v in sets.items()}

    def decode(c: int) -> str:
        return "/".join(str(names[i]) for i in members.get(c, ()))

    return code, decode
