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
from typing import Any

import numpy as np

PUSHPOP, STARTEND, DOMAIN_CREATE = 59, 60, 75
OPEN = np.iinfo(np.int64).max  # a range never closed in the capture encloses everything after its start
CHUNK = 65536
MATRIX_LIMIT = 4_000_000  # launches × start/end ranges tested at once


def attach(con: sqlite3.Connection, have: set[str], strings: bool, tid: np.ndarray, t: np.ndarray,
           null: int) -> tuple[list[str | None], np.ndarray] | None:
    """(labels, per-launch index into labels; 0 is no range) for launches made on thread ``tid`` at ``t``."""
    if not {"start", "eventType", "globalTid"} <= have:
        return None
    launched = np.unique(tid[tid != null])
    if not len(launched):
        return None
    text = "n.text" if "text" in have else "NULL"
    text_id = f"IFNULL(n.textId, {null})" if "textId" in have and strings else str(null)
    end = f"IFNULL(n.end, {OPEN})" if "end" in have else str(OPEN)
    dom = "IFNULL(n.domainId, 0)" if "domainId" in have else "0"
    tids = ",".join(str(int(x)) for x in launched)  # integers from the export: safe to inline
    # no ORDER BY and no per-row StringIds subquery: NumPy sorts, registered strings are looked up once
    cur = con.execute(f"SELECT n.globalTid, {dom}, n.eventType, n.start, {end}, {text_id}, {text} "
                      f"FROM NVTX_EVENTS n WHERE n.eventType IN ({PUSHPOP}, {STARTEND}) AND n.start IS NOT NULL "
                      f"AND n.globalTid IN ({tids})")
    nums, texts = [], []
    while True:
        batch = cur.fetchmany(CHUNK)
        if not batch:
            break
        cols = list(zip(*batch))
        nums.append(np.array(cols[:6], dtype=np.int64).T)
        texts.extend(cols[6])
    if not nums:
        return None
    r = np.concatenate(nums)
    names = np.array(texts, dtype=object)
    unnamed = np.flatnonzero(np.equal(names, None))
    if len(unnamed):
        ids = r[unnamed, 5]
        want = sorted({int(i) for i in ids.tolist() if i != null})
        found: dict[int, str] = {}
        for lo in range(0, len(want), 900):
            part = want[lo:lo + 900]
            found.update(con.execute(f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(part))})",
                                     part).fetchall())
        names[unnamed] = [found.get(int(i), "(unnamed)") for i in ids.tolist()]
    order = np.lexsort((-r[:, 4], r[:, 3], r[:, 2], r[:, 1], r[:, 0]))  # equal starts: the outer (longer) first
    r, names = r[order, :5], names[order]
    domains: dict[int, str] = {}
    if "domainId" in have and "text" in have:
        domains = {int(d): str(x) for d, x in con.execute(
            f"SELECT domainId, text FROM NVTX_EVENTS WHERE eventType = {DOMAIN_CREATE} AND text IS NOT NULL")}
    return _label_launches(r, names, domains, tid, t)


def _label_launches(r: np.ndarray, names: np.ndarray, domains: dict[int, str], tid: np.ndarray,
                    t: np.ndarray) -> tuple[list[str | None], np.ndarray]:
    out = np.zeros(len(tid), dtype=np.int64)
    labels: list[str | None] = [None]
    cut = np.flatnonzero(np.any(r[1:, :3] != r[:-1, :3], axis=1)) + 1
    groups = np.split(np.arange(len(r)), cut)
    by_tid: dict[int, list[np.ndarray]] = {}
    for g in groups:
        by_tid.setdefault(int(r[g[0], 0]), []).append(g)
    for g_tid, gs in by_tid.items():
        idx = np.flatnonzero(tid == g_tid)
        if not len(idx):
            continue
        tt = t[idx]
        # one column per (domain, kind) group: a code for the ranges that enclose each launch
        codes, decoders, doms = [], [], []
        for g in gs:
            d, kind = int(r[g[0], 1]), int(r[g[0], 2])
            s, e = r[g, 3], r[g, 4]
            if kind == PUSHPOP:
                code, dec = _pushpop(s, e, names[g], tt)
            else:
                code, dec = _startend(s, e, names[g], tt)
            codes.append(code)
            decoders.append(dec)
            doms.append(d)
        base = len(labels)
        if len(codes) == 1:  # one domain, one kind on this thread (the usual case): a path per range
            uniq, inv = np.unique(codes[0], return_inverse=True)
            dec, prefix = decoders[0], _prefix(doms[0], domains)
            labels.extend(prefix + dec(c) if c >= 0 else "" for c in uniq.tolist())
            combos = uniq
        else:
            combos, inv = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
            labels.extend(_label(combo, decoders, doms, domains) for combo in combos.tolist())
        out[idx] = base + inv.reshape(-1)
    # combinations without any range were given labels too: map those to 0
    none = [i for i, x in enumerate(labels) if x == ""]
    if none:
        out[np.isin(out, none)] = 0
    return [x if x != "" else None for x in labels], out


def _pushpop(s: np.ndarray, e: np.ndarray, names: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, Any]:
    """Index of the innermost enclosing range per launch (-1: none) and a decoder to the outer→inner names."""
    n = len(s)
    parent = np.full(n, -1, dtype=np.int64)
    stack: list[int] = []
    el = e.tolist()
    for i, si in enumerate(s.tolist()):  # ranges by start: pop those closed before this one opens
        while stack and el[stack[-1]] < si:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    j = np.searchsorted(s, t, side="right") - 1
    while True:
        bad = (j >= 0) & (e[np.maximum(j, 0)] < t)
        if not bad.any():
            break
        j[bad] = parent[j[bad]]

    memo: dict[int, str] = {}
    pl, nl = parent.tolist(), names.tolist()

    def decode(code: int) -> str:  # "outer/.../inner"; each range's path is built once, from its parent's
        todo = []
        while code >= 0 and code not in memo:
            todo.append(code)
            code = pl[code]
        path = memo.get(code, "")
        for c in reversed(todo):
            path = memo[c] = f"{path}/{nl[c]}" if path else str(nl[c])
        return path

    return j, decode


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


def _label(combo: list[int], decoders: list[Any], doms: list[int], domains: dict[int, str]) -> str:
    """One launch's label from its code per (domain, kind) group; groups come sorted by domain."""
    parts: list[str] = []
    cur_d, cur = None, []
    for c, dec, d in zip(combo, decoders, doms):
        if c < 0:
            continue
        if d != cur_d and cur:
            parts.append(_prefix(cur_d, domains) + "/".join(cur))
            cur = []
        cur_d = d
        cur.append(dec(c))
    if cur:
        parts.append(_prefix(cur_d, domains) + "/".join(cur))
    return ";".join(parts)


def _prefix(d: int | None, domains: dict[int, str]) -> str:
    return "" if not d else f"{domains.get(d, f'domain {d}')}:"
