"""The headline of a roofline frame: the answers before any row, per profile, device and step.

For each (profile, device) — and each training step where the profile marks steps (ProfilerStep#N, an NVTX
"step N" range) — :func:`headlines` gives a :class:`Headline`:

* **GPU time**: the sum of the rows' durations (kernels, ops, copies, and idle where the format records it
  as rows: XLA's IDLE). Concurrent kernels each count, as in every per-kernel breakdown.
* **coverage**: the share of that time in rows with a roofline point (:func:`~roofline.analysis.coverage.has_point`);
  for the rest, one :class:`Reason` per cause with its share and its fix (``coverage.RULES``).
* **time by kind**, adding up to the GPU time: compute-bound, memory-bound, latency-limited, no roof (a point
  but no roof to judge it by), communication, copies/memsets, idle, unmodelled (no point) — see :func:`kinds`.
* **achieved** FLOP/s and DRAM bytes/s over the GPU time, and their share of the device's peak (MFU, MBU),
  the peak named with its source. Only rows with FLOPs (bytes) add to the numerator: while coverage is under
  100% the MFU is a lower bound, and the headline says so.
* **timeline gaps** where the rows carry start times (Nsight Systems): the span from the first launch to the
  end of the last and the part of it with no row running, outside the 100% (a gap is not any row's time).

Pure functions of the frame; the terminal (``report/summary.py``), the HTML page, JSON (``--format json``'s
``headline`` records) and the API (``roofline.summary``) render the same objects.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from roofline.analysis.aggregate import step_ranges
from roofline.analysis.categories import IDLE, categorize
from roofline.analysis.coverage import BYTE_LEVELS, has_point, row_codes, row_reasons
from roofline.analysis.scope_rows import FLOP, Rows, grouped_sums
from roofline.schema import FLOP_COLUMNS, PRECISIONS, source_column

#: the kinds of GPU time, in the order they are shown; they partition every row
KINDS = ("compute-bound", "memory-bound", "latency-limited", "no roof", "communication", "copies/memsets", "idle",
         "unmodelled")
#: rows the copy engines run (memcpy/memset API calls and XLA's asynchronous copies), not kernels
_COPY_NAME = re.compile(r"^\s*(\[CUDA mem|\[HIP mem|Memcpy|Memset|memcpy|memset)|/copy-(start|done)", re.IGNORECASE)
#: reasons shown per headline (the rest are summed into one "other reasons" line)
MAX_REASONS = 6


@dataclass(frozen=True)
class Reason:
    """GPU time without a roofline point, for one cause."""

    reason: str
    fix: str
    time_s: float
    share: float  # of the headline's GPU time
    rows: int
    ops: tuple[tuple[str, float], ...] = ()  # the longest names among its rows, with their share of GPU time


@dataclass(frozen=True)
class Peak:
    """The roof a rate is compared with: its key (a precision, a tensor path, "dram"), value and source."""

    key: str
    value: float
    source: str


@dataclass(frozen=True)
class Headline:
    profile: str | None  # source_file; None: every profile of the frame
    device: str | None  # None: every device (then no MFU: the peaks differ)
    step: str | None  # a training step's range, or None for the whole profile
    gpu_time_s: float
    rows: int
    coverage: float  # share of GPU time in rows with a roofline point (NaN without GPU time)
    kinds: dict[str, float]  # seconds per kind, every kind of KINDS
    reasons: tuple[Reason, ...]
    flop: float  # FLOPs of the rows that have FLOPs
    dram_bytes: float
    achieved_flop_per_s: float
    achieved_dram_bytes_per_s: float
    compute_peak: Peak | None = None
    dram_peak: Peak | None = None
    span_s: float | None = None  # timelines: first launch to the end of the last
    gap_s: float | None = None  # timelines: the part of the span with nothing running
    notes: tuple[str, ...] = field(default_factory=tuple)
    # collectives' NCCL/RCCL kernel time that ran alone (exposed) and while other kernels ran (overlapped), where
    # the profile's timeline gives both (Kineto: analysis/comm.py, docs/collectives.md); None otherwise
    comm_exposed_s: float | None = None
    comm_overlapped_s: float | None = None
    # collectives on the links: how many have a bus bandwidth (of how many), and the time-weighted median of their
    # % of the link roof, with that row's roof (analysis/comm.py)
    comm_with_busbw: int = 0
    comm_rows: int = 0
    comm_median_pct_of_link_roof: float | None = None
    comm_median_link: str | None = None

    @property
    def shares(self) -> dict[str, float]:
        """Each kind's share of the GPU time (they add up to 1)."""
        t = self.gpu_time_s
        return {k: (v / t if t > 0 else math.nan) for k, v in self.kinds.items()}

    @property
    def mfu(self) -> float:
        """Achieved FLOP/s over the compute peak (a lower bound while coverage < 100%)."""
        return self.achieved_flop_per_s / self.compute_peak.value if self.compute_peak else math.nan

    @property
    def mbu(self) -> float:
        return self.achieved_dram_bytes_per_s / self.dram_peak.value if self.dram_peak else math.nan

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON (NaN as None)."""
        d = asdict(self)
        d["shares"] = self.shares
        d["mfu"], d["mbu"] = self.mfu, self.mbu
        d["reasons"] = [{**asdict(r), "ops": [{"name": n, "share": s} for n, s in r.ops]} for r in self.reasons]
        return _finite(d)


def _finite(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, np.integer):
        return int(v)
    return v


# ---- per row ---------------------------------------------------------------------------------------------

def kinds(frame: pd.DataFrame, categories: pd.Series | None = None, point: pd.Series | None = None) -> pd.Series:
    """The kind of every row's time (one of :data:`KINDS`), decided in this order: idle (the format's idle
    rows), communication (its op category), copies/memsets (the copy engines' rows), then by the roofline:
    the row's bound where it has a point (``no roof`` when the bound is unavailable), ``unmodelled`` where not."""
    if frame.empty:
        return pd.Series([], index=frame.index, dtype="string", name="time_kind")
    return pd.Series(_kind_array(frame, categories, point), index=frame.index, dtype="string", name="time_kind")


def _kind_array(frame: pd.DataFrame, categories: pd.Series | None = None, point: pd.Series | None = None
                ) -> np.ndarray:
    """:func:`kinds` as an object array (what :func:`row_facts` keeps: no string Series made and read back)."""
    cat = (categorize(frame) if categories is None else categories).to_numpy()
    point = has_point(frame) if point is None else point
    names = frame["kernel_name"].astype("string") if "kernel_name" in frame else pd.Series("", index=frame.index)
    copy = frame["copy_kind"].notna() if "copy_kind" in frame else pd.Series(False, index=frame.index)
    codes, uniq = pd.factorize(names.fillna(""))
    named_copy = np.array([bool(_COPY_NAME.search(u)) for u in uniq] or [False])[codes]
    copy = copy.to_numpy() | named_copy
    # the bound where it is a kind, else "no roof" (missing too): looked up once per distinct bound
    if "bound" in frame:
        codes, uniq = pd.factorize(frame["bound"].astype("string"))
        by_bound = np.array([u if u in KINDS[:3] else "no roof" for u in uniq] + ["no roof"], dtype=object)[codes]
    else:
        by_bound = np.full(len(frame), "no roof", dtype=object)
    out = np.where(point.to_numpy(), by_bound, "unmodelled")
    out = np.where(copy, "copies/memsets", out)
    out = np.where(cat == "communication", "communication", out)
    return np.where(cat == IDLE, "idle", out)


def steps(frame: pd.DataFrame) -> pd.Series:
    """The training step of every row (its NVTX path's ProfilerStep#N or "step N" range), NA outside any."""
    if "nvtx_range" not in frame:
        return pd.Series(pd.NA, index=frame.index, dtype="string")
    return step_ranges(frame["nvtx_range"])


# ---- per scope -------------------------------------------------------------------------------------------

def _weighted_median(v: np.ndarray, weights: np.ndarray) -> tuple[float, int] | None:
    """(time-weighted median, position of the row that holds it) of the positive finite values (``weights``:
    missing as 0)."""
    ok = np.isfinite(v) & (v > 0)
    if not ok.any():
        return None
    w = weights[ok]
    w = w if w.sum() > 0 else np.ones(ok.sum())
    idx = np.flatnonzero(ok)
    order = np.argsort(v[ok], kind="stable")
    cum = np.cumsum(w[order])
    pos = idx[order[np.searchsorted(cum, cum[-1] / 2)]]
    return float(v[pos]), int(pos)


def _peak(rows: Rows, ix: slice | np.ndarray, col: str, key: str, mask: np.ndarray) -> Peak | None:
    if col not in rows.columns or not mask.any():
        return None
    found = _weighted_median(rows.num(col)[ix][mask], rows.weights[ix][mask])
    if found is None:
        return None
    src = rows.at(source_column(col), int(rows.positions(ix)[mask][found[1]])) \
        if source_column(col) in rows.columns else ""
    return Peak(key, found[0], "" if pd.isna(src) else str(src))


def compute_peak(frame: pd.DataFrame) -> Peak | None:
    """The peak of the precision that did the most FLOPs (the tensor path named where one dominates)."""
    return _compute_peak(Rows(frame), slice(None))


def _compute_peak(rows: Rows, ix: slice | np.ndarray) -> Peak | None:
    has = rows.columns
    flops = {p: rows.nansum(c, ix) for p, c in zip(PRECISIONS, FLOP_COLUMNS) if c in has}
    if not flops or max(flops.values()) <= 0:
        return None
    p = max(flops, key=lambda k: flops[k])
    mask = rows.num(f"flop_{p}")[ix] > 0
    key = p
    if p == "tensor" and "tensor_path" in has:
        codes, uniq = rows.codes("tensor_path")
        scope = codes[ix]
        used = np.unique(scope[mask & (scope >= 0)])
        if len(used):
            # the most common path (one path: no count needed; several: pandas' order among equal counts)
            top = uniq[used[0]] if len(used) == 1 else \
                rows.column("tensor_path", ix).astype("string")[mask].dropna().value_counts().index[0]
            key = f"tensor {top}"
            mask = mask & (scope == (used[0] if len(used) == 1 else int(np.flatnonzero(uniq == top)[0])))
    return _peak(rows, ix, f"peak_flop_per_s_{p}", key, mask)


def _gaps(rows: Rows, ix: slice | np.ndarray) -> tuple[float | None, float | None]:
    """(span, idle gaps) of a timeline's rows in seconds; (None, None) without start times."""
    if "start_ns" not in rows.columns:
        return None, None
    start = rows.num("start_ns")[ix]
    dur = rows.num("duration_s")[ix] * 1e9
    ok = ~np.isnan(start) & ~np.isnan(dur)
    if not ok.any():
        return None, None
    s, e = start[ok], (start + dur)[ok]
    order = np.argsort(s, kind="stable")
    s, e = s[order], np.maximum.accumulate(e[order])
    gaps = np.clip(s[1:] - e[:-1], 0, None).sum() if len(s) > 1 else 0.0
    return float((e.max() - s.min()) / 1e9), float(gaps / 1e9)


#: what :func:`reasons` reads of the rows when given their reasons: the names it lists, and the durations
REASON_COLUMNS = ("kernel_short_name", "kernel_name", "duration_s")


def reasons(frame: pd.DataFrame, gpu_time_s: float,
            why: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[Reason, ...]:
    """One :class:`Reason` per cause over the rows of ``frame`` (rows without a roofline point), longest
    first, each share of ``gpu_time_s`` (the GPU time of the scope they were taken from). ``why``: the rows'
    reasons and fixes (:class:`RowFacts`), when already known (then only :data:`REASON_COLUMNS` are read)."""
    frame = narrow(frame)
    if frame.empty:
        return ()
    rows = Rows(frame)
    return _reasons([(_why(rows, slice(None), np.ones(len(frame), dtype=bool), rows.dur, why), gpu_time_s)])[0]


def _why(rows: Rows, ix: slice | np.ndarray, missing: np.ndarray, dur: np.ndarray,
         why: pd.DataFrame | tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, ...]:
    """(reason, fix, name, duration) of the ``missing`` rows of the scope ``ix`` (``dur``: its durations), in row
    order; ``why``: their :func:`row_reasons` (or its reasons and fixes), when known."""
    if why is None:
        sub = rows.frame.iloc[ix]
        why = row_reasons(sub, pd.Series(missing, index=sub.index))
    reason, fix = (why["reason"].to_numpy(), why["fix"].to_numpy()) if isinstance(why, pd.DataFrame) else why
    return reason, fix, rows.names[ix][missing], dur[missing]


def _reasons(scopes: list[tuple[tuple[np.ndarray, ...], float]]) -> list[tuple[Reason, ...]]:
    """Per scope, given the :func:`_why` of its rows without a point and its GPU time: one Reason per (reason,
    fix), longest first, with its three longest names. Every scope's grouped sums are taken at once."""
    lengths = [len(w[0]) for w, _ in scopes]
    if not sum(lengths):
        return [() for _ in scopes]
    reason, fix, names, t = (np.concatenate([w[j] for w, _ in scopes]) for j in range(4))
    return _flat_reasons(reason, fix, names, t, lengths, [total for _, total in scopes])


def _flat_reasons(reason: np.ndarray, fix: np.ndarray, names: np.ndarray, t: np.ndarray, lengths: list[int],
                  totals: list[float]) -> list[tuple[Reason, ...]]:
    """:func:`_reasons` of the scopes' :func:`_why` concatenated, scope after scope (``lengths``: each one's
    rows)."""
    # per scope: (reason, fix, rows of the concatenation) per pair
    found: list[list[tuple[Any, Any, np.ndarray]]] = [[] for _ in lengths]
    if not len(reason):
        return [() for _ in lengths]
    pair, _ = row_codes([pd.Series(reason), pd.Series(fix)])
    # every scope's pairs in one sort: each (scope, pair)'s rows in row order; a scope's rows are contiguous, so
    # ordered by their first row the groups run scope by scope, each scope's in order of first appearance
    scope_of = np.repeat(np.arange(len(lengths)), lengths)
    key = scope_of * (int(pair.max()) + 1) + pair
    for part in _parts(key):
        found[scope_of[part[0]]].append((reason[part[0]], fix[part[0]], part))
    rank, uniq = pd.factorize(names, sort=True)
    groups = [rows for pairs in found for _, _, rows in pairs]
    by_name = iter(grouped_sums(t, groups, rank))
    out = []
    for total, pairs in zip(totals, found):
        items = []
        for why, fixed_by, rows in pairs:
            ranks, sums = next(by_name)
            top = zip(uniq[ranks], sums) if len(sums) < 2 else _longest(uniq[ranks], sums)
            time_s = float(t[rows].sum())
            items.append(Reason(str(why), str(fixed_by), time_s, time_s / total if total > 0 else math.nan, len(rows),
                                tuple((str(n), float(v) / total if total > 0 else math.nan) for n, v in top)))
        out.append(tuple(sorted(items, key=lambda r: (-r.time_s, r.reason))))
    return out


def _longest(names: np.ndarray, sums: np.ndarray, n: int = 3) -> Iterator[tuple[Any, Any]]:
    """The ``n`` largest sums with their names, largest first, as pandas' descending sort orders them (equal
    sums too): without NaN, the steps of its ``nargsort`` (the reversed values' quicksort argsort, reversed),
    not a Series sorted per reason; with NaN, pandas' own."""
    if np.isnan(sums).any():
        return pd.Series(sums, index=names).sort_values(ascending=False).head(n).items()
    at = np.arange(len(sums))[::-1][sums[::-1].argsort(kind="quicksort")][::-1][:n]
    return zip(names[at], sums[at])


def _seconds(dur: np.ndarray, kind: np.ndarray, segments: list[np.ndarray]) -> list[dict[str, float]]:
    """Seconds per kind of each scope (``segments``: its rows' positions into ``dur`` and ``kind``)."""
    names = sorted(KINDS)
    # (Categorical(kind, categories=names).codes, the distinct kinds looked up once: a fifth of its time)
    codes, uniq = pd.factorize(kind)
    rank = np.array([names.index(u) if u in names else -1 for u in uniq] + [-1], dtype=np.int64)[codes]
    out = []
    for ranks, sums in grouped_sums(dur, segments, rank):
        got = {names[r]: float(v) for r, v in zip(ranks, sums)}
        out.append({k: got.get(k, 0.0) for k in KINDS})
    return out


def headline(frame: pd.DataFrame, profile: str | None = None, device: str | None = None, step: str | None = None,
             time_kinds: pd.Series | None = None, point: pd.Series | None = None,
             why: pd.DataFrame | None = None) -> Headline:
    """The headline of one scope's rows (``frame`` holds just them). ``time_kinds``, ``point`` and ``why`` (the
    :func:`row_reasons` of its rows without a point, idle aside) when already computed for a larger frame."""
    point = has_point(frame) if point is None else point
    k = kinds(frame, point=point) if time_kinds is None else time_kinds
    return _headline(Rows(frame), slice(None), profile, device, step, k.to_numpy(dtype=object), point.to_numpy(),
                     why)


def _headline(rows: Rows, ix: slice | np.ndarray, profile: str | None, device: str | None, step: str | None,
              k: np.ndarray, pt: np.ndarray, why: pd.DataFrame | None,
              seconds: dict[str, float] | None = None, reasons: tuple[Reason, ...] | None = None) -> Headline:
    """The headline of the rows ``ix`` of ``rows``: ``k`` and ``pt`` their kinds and points (the scope's own);
    ``seconds`` (per kind) and ``reasons`` when already taken for several scopes at once."""
    dur = rows.dur[ix]
    total = float(dur.sum())
    seconds = _seconds(dur, k, [np.arange(len(dur))])[0] if seconds is None else seconds
    covered = float(dur[pt].sum())
    if reasons is None:
        missing = ~pt & (k != "idle")
        reasons = _reasons([(_why(rows, ix, missing, dur, why), total)])[0] if missing.any() else ()
    flops = rows.nansum(FLOP, ix, min_count=1)  # NaN when no row has FLOPs: unavailable, not 0
    moved = rows.nansum("dram_bytes", ix, min_count=1)
    one_device = device is not None or ("device_name" in rows.columns and rows.distinct("device_name", ix) == 1)
    one_file = profile is not None or "source_file" not in rows.columns or rows.distinct("source_file", ix) <= 1
    span, gap = _gaps(rows, ix) if one_file else (None, None)  # one profile's clock: spans of two files do not add up
    notes = []
    if total > 0 and covered < total - seconds["idle"] and flops > 0:
        notes.append("FLOP/s and bytes/s count only the rows that have FLOPs (bytes): lower bounds")
    n = len(dur)
    return Headline(
        profile=profile, device=device, step=step, gpu_time_s=total, rows=n,
        coverage=covered / total if total > 0 else math.nan, kinds=seconds,
        reasons=reasons,
        flop=flops, dram_bytes=moved,
        achieved_flop_per_s=flops / total if total > 0 else math.nan,
        achieved_dram_bytes_per_s=moved / total if total > 0 else math.nan,
        compute_peak=_compute_peak(rows, ix) if one_device else None,
        dram_peak=_peak(rows, ix, "peak_dram_bytes_per_s", "dram", np.ones(n, dtype=bool)) if one_device else None,
        span_s=span, gap_s=gap, notes=tuple(notes), **_comm_time(rows, ix))


def _comm_time(rows: Rows, ix: slice | np.ndarray) -> dict[str, Any]:
    """Σ exposed and Σ overlapped collective time of the rows that record them (None where none does), and the
    collectives' standing against their link roofs."""
    out: dict[str, Any] = {}
    has = rows.columns
    if "comm_exposed_s" in has and rows.known("comm_exposed_s", ix):
        out.update(comm_exposed_s=rows.nansum("comm_exposed_s", ix), comm_overlapped_s=rows.nansum("comm_overlapped_s", ix))
    if "collective" in has and (coll := rows.notna("collective")[ix]).any():
        bus = rows.num("bus_bandwidth_bytes_per_s")[ix][coll]
        out.update(comm_rows=int(coll.sum()), comm_with_busbw=int((~np.isnan(bus)).sum()))
        found = _weighted_median(rows.num("pct_of_link_roof")[ix][coll],
                                 rows.weights[ix][coll])
        if found is not None:
            col = "link_roof_bytes_per_s_source"
            src = rows.at(col, int(rows.positions(ix)[coll][found[1]])) if col in has else None
            out.update(comm_median_pct_of_link_roof=found[0],
                       comm_median_link=str(src).removeprefix("spec: ").split(" (")[0] if isinstance(src, str) else None)
    return out


def _runs(keys: list[pd.Series]) -> Iterator[tuple[tuple[Any, ...], np.ndarray]]:
    """(the keys' values, row positions in row order) per distinct combination, in order of first appearance
    (NA as '')."""
    codes, first = row_codes(keys)
    values = [k.iloc[first].fillna("").to_numpy(dtype=object) for k in keys]  # (each group's first row only)
    for part in _parts(codes):
        yield tuple(v[codes[part[0]]] for v in values), part


def _in_order(codes: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(code, its positions in row order) per distinct code, in order of first appearance."""
    for part in _parts(codes):
        yield int(codes[part[0]]), part


def _parts(codes: np.ndarray) -> list[np.ndarray]:
    """Each distinct code's positions (in row order), in order of first appearance: one stable sort."""
    order = np.argsort(codes, kind="stable")
    parts = [part for part in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1) if len(part)]
    parts.sort(key=lambda x: x[0])
    return parts


@dataclass(frozen=True)
class RowFacts:
    """What a headline reads of every row, taken once for a frame: its category, whether it has a point, its
    kind, and the reason and fix of the rows without a point (idle aside; None elsewhere). Each is a function of
    the row alone, so the facts of the same rows in another order are these taken in that order
    (:meth:`take`): ``roofline report`` computes them once for its table and its page."""

    categories: pd.Series
    point: np.ndarray
    kinds: np.ndarray
    reason: np.ndarray
    fix: np.ndarray

    def take(self, positions: np.ndarray) -> RowFacts:
        """The facts of the rows at ``positions`` (in that order), on a fresh range index."""
        cats = self.categories.to_numpy(dtype=object)[positions]
        return RowFacts(pd.Series(cats, dtype="string", name=self.categories.name), self.point[positions],
                        self.kinds[positions], self.reason[positions], self.fix[positions])

    def of(self, frame: pd.DataFrame) -> pd.Series:
        """The categories on ``frame``'s index (``frame``: the rows these facts are of, in their order)."""
        return pd.Series(self.categories.to_numpy(dtype=object), index=frame.index, dtype="string",
                         name=self.categories.name)


def row_facts(frame: pd.DataFrame) -> RowFacts:
    """The :class:`RowFacts` of ``frame``'s rows."""
    frame = narrow(frame)
    cat = categorize(frame)
    point = has_point(frame)
    k = _kind_array(frame, cat, point) if len(frame) else np.zeros(0, dtype=object)
    missing = ~point.to_numpy() & (k != "idle")
    why_all = row_reasons(frame, pd.Series(missing, index=frame.index))
    reason = np.full(len(frame), None, dtype=object)
    fix = np.full(len(frame), None, dtype=object)
    reason[missing], fix[missing] = why_all["reason"].to_numpy(), why_all["fix"].to_numpy()
    return RowFacts(cat, point.to_numpy(), k, reason, fix)


def _row_facts(frame: pd.DataFrame, facts: RowFacts | None
               ) -> tuple[np.ndarray, np.ndarray, Callable[[np.ndarray | slice], tuple[np.ndarray, np.ndarray]]]:
    """Every row's point and kind, and a function giving the reasons and fixes of the rows without a point (idle
    aside) among given row positions, in row order: taken once for every scope (``facts``: when already known)."""
    facts = row_facts(frame) if facts is None else facts
    pt, k = facts.point, facts.kinds
    missing = ~pt & (k != "idle")

    def why(rows: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        m = missing[rows]
        return facts.reason[rows][m], facts.fix[rows][m]

    return pt, k, why


def headlines(frame: pd.DataFrame, by_step: bool = True, facts: RowFacts | None = None) -> list[Headline]:
    """One headline per (profile, device), in order of GPU time, each followed by its steps' headlines
    (``by_step``, where the profile marks steps); plus, first, the whole frame's when it holds several.
    ``facts``: the :func:`row_facts` of ``frame``, when already taken."""
    if frame.empty:
        return []
    frame = narrow(frame)
    pt_arr, k_arr, why = _row_facts(frame, facts)
    src = frame["source_file"].astype("string") if "source_file" in frame else pd.Series("", index=frame.index)
    dev = frame["device_name"].astype("string") if "device_name" in frame else pd.Series("", index=frame.index)
    step = steps(frame) if by_step else pd.Series(pd.NA, index=frame.index, dtype="string")
    runs = list(_runs([src, dev]))
    # a scope is its rows' positions (in row order) into arrays of the whole frame: no frame is taken per scope
    whole = Rows(frame)
    # every scope first (a profile's, then its steps'), so that their grouped sums are taken at once
    specs: list[tuple[int, np.ndarray, str | None, str | None, str | None]] = []
    # the steps factorized once: a profile's steps are its rows' codes (a Series sliced per profile cost ~1 ms)
    scodes, suniq = pd.factorize(step, use_na_sentinel=True)
    snames = np.asarray(suniq, dtype=object)
    for i, ((f, d), rows) in enumerate(runs):
        specs.append((i, rows, f or None, d or None, None))
        mine = scodes[rows]
        if (mine >= 0).any():  # (most profiles mark no steps)
            specs += [(i, rows[srows], f or None, d or None, snames[c]) for c, srows in _in_order(mine)
                      if c >= 0 and snames[c]]
    # the whole frame's sums too, when it has a headline of its own (several scopes): in the same grouped sums
    every = [np.arange(len(frame))] if len(runs) > 1 else []
    seconds, found = _scope_sums(whole, pt_arr, k_arr, why, [ix for _, ix, *_ in specs] + every)
    heads: list[Headline] = [_headline(whole, ix, f, d, s, k_arr[ix], pt_arr[ix], None, sec, r)
                             for (_, ix, f, d, s), sec, r in zip(specs, seconds, found)]
    scopes: list[tuple[Headline, list[Headline]]] = []
    for (i, _, _, _, s), h in zip(specs, heads):
        if s is None:
            scopes.append((h, []))
        else:
            scopes[i][1].append(h)
    for _, parts in scopes:
        parts.sort(key=lambda x: _step_number(x.step))
    scopes.sort(key=lambda x: -x[0].gpu_time_s)
    out = [x for h, parts in scopes for x in (h, *parts)]
    if len(scopes) > 1:
        out.insert(0, _headline(whole, slice(None), None, None, None, k_arr, pt_arr, None, seconds[-1], found[-1]))
    return out


def _scope_sums(whole: Rows, pt: np.ndarray, k: np.ndarray,
                why: Callable[[np.ndarray | slice], tuple[np.ndarray, np.ndarray]],
                scopes: list[np.ndarray]) -> tuple[list[dict[str, float]], list[tuple[Reason, ...]]]:
    """Every scope's seconds per kind and reasons at once (``scopes``: row positions into ``whole``), the rows'
    reasons taken from the whole frame's."""
    if not scopes:
        return [], []
    dur = whole.dur
    gone = pt | (k == "idle")  # (rows with a point, and idle rows, have no reason)
    # the scopes' rows without a reason, all at once (scope after scope): no arrays taken per scope
    at = np.concatenate(scopes)
    keep = ~gone[at]
    lengths = np.bincount(np.repeat(np.arange(len(scopes)), [len(ix) for ix in scopes])[keep],
                          minlength=len(scopes)).tolist()
    rows = at[keep]
    reason, fix = why(rows)
    found = _flat_reasons(reason, fix, whole.names[rows], dur[rows], lengths, [float(dur[ix].sum()) for ix in scopes])
    return _seconds(dur, k, scopes), found


def by_device(frame: pd.DataFrame, facts: RowFacts | None = None) -> dict[str | None, Headline]:
    """One headline per device over every profile (the HTML report's device view), by device name (None: rows
    that name no device). ``facts``: the :func:`row_facts` of ``frame``, when already taken."""
    if frame.empty:
        return {}
    frame = narrow(frame)
    pt_arr, k_arr, why = _row_facts(frame, facts)
    dev = frame["device_name"].astype("string") if "device_name" in frame else pd.Series("", index=frame.index)
    runs = list(_runs([dev]))
    whole = Rows(frame)
    seconds, found = _scope_sums(whole, pt_arr, k_arr, why, [rows for _, rows in runs])
    return {d or None: _headline(whole, ix, None, d or None, None, k_arr[ix], pt_arr[ix], None, sec, r)
            for ((d,), ix), sec, r in zip(runs, seconds, found)}


#: the columns a headline reads (a narrow view: slicing 130 columns, and deep-copying the provenance in ``attrs``
#: for every slice, cost ~2 s on a 20,000-row trace)
_NEEDED = ("source_file", "comm_exposed_s", "comm_overlapped_s", "collective", "bus_bandwidth_bytes_per_s",
           "pct_of_link_roof", "link_roof_bytes_per_s_source", "device_name", "nvtx_range", "kernel_name", "kernel_short_name", "mangled_name",
           "hlo_category", "copy_kind", "duration_s", "start_ns", "bound", "tensor_path", "flop_total",
           "peak_dram_bytes_per_s", "peak_dram_bytes_per_s_source",
           *FLOP_COLUMNS, *(source_column(c) for c in FLOP_COLUMNS),
           *(f"peak_flop_per_s_{p}" for p in PRECISIONS), *(source_column(f"peak_flop_per_s_{p}") for p in PRECISIONS),
           *(f"{lv}_bytes" for lv in BYTE_LEVELS), *(source_column(f"{lv}_bytes") for lv in BYTE_LEVELS))


def narrow(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns a headline reads, without ``attrs`` (the provenance is not needed, and is copied per slice)."""
    out = frame[[c for c in _NEEDED if c in frame.columns]]
    out.attrs = {}
    return out


def _step_number(step: str | None) -> tuple[int, str]:
    m = re.search(r"\d+", step or "")
    return (int(m.group()) if m else -1, step or "")


def headline_frame(items: list[Headline]) -> pd.DataFrame:
    """The headlines as a frame: one row per scope, shares in % (the API's ``summary()``)."""
    rows = []
    for h in items:
        row: dict[str, Any] = {"profile": h.profile, "device": h.device, "step": h.step, "gpu_time_s": h.gpu_time_s,
                               "rows": h.rows, "coverage_pct": 100 * h.coverage}
        row.update({f"pct_{kind.replace('/', '_').replace(' ', '_').replace('-', '_')}": 100 * s
                    for kind, s in h.shares.items()})
        row.update({"achieved_flop_per_s": h.achieved_flop_per_s, "mfu_pct": 100 * h.mfu,
                    "compute_peak": h.compute_peak.key if h.compute_peak else None,
                    "compute_peak_flop_per_s": h.compute_peak.value if h.compute_peak else math.nan,
                    "achieved_dram_bytes_per_s": h.achieved_dram_bytes_per_s, "mbu_pct": 100 * h.mbu,
                    "dram_peak_bytes_per_s": h.dram_peak.value if h.dram_peak else math.nan,
                    "top_reason": h.reasons[0].reason if h.reasons else None})
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = ["KINDS", "REASON_COLUMNS", "Headline", "Peak", "Reason", "RowFacts", "by_device", "compute_peak", "headline",
           "headline_frame", "headlines", "kinds", "reasons", "row_facts", "steps"]
