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
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from roofline.analysis.aggregate import STEP_RANGE
from roofline.analysis.categories import IDLE, categorize
from roofline.analysis.coverage import BYTE_LEVELS, flop_total, has_point, number, row_codes, row_reasons
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
    cat = categorize(frame) if categories is None else categories
    point = has_point(frame) if point is None else point
    names = frame["kernel_name"].astype("string") if "kernel_name" in frame else pd.Series("", index=frame.index)
    copy = frame["copy_kind"].notna() if "copy_kind" in frame else pd.Series(False, index=frame.index)
    codes, uniq = pd.factorize(names.fillna(""))
    named_copy = np.array([bool(_COPY_NAME.search(u)) for u in uniq] or [False])[codes]
    copy = copy.to_numpy() | named_copy
    bound = frame["bound"].astype("string").fillna("unavailable") if "bound" in frame \
        else pd.Series("unavailable", index=frame.index)
    by_bound = bound.where(bound.isin(KINDS[:3]), "no roof")
    out = np.where(point.to_numpy(), by_bound.to_numpy(dtype=object), "unmodelled")
    out = np.where(copy, "copies/memsets", out)
    out = np.where(cat.to_numpy() == "communication", "communication", out)
    out = np.where(cat.to_numpy() == IDLE, "idle", out)
    return pd.Series(out, index=frame.index, dtype="string", name="time_kind")


def steps(frame: pd.DataFrame) -> pd.Series:
    """The training step of every row (its NVTX path's ProfilerStep#N or "step N" range), NA outside any."""
    if "nvtx_range" not in frame:
        return pd.Series(pd.NA, index=frame.index, dtype="string")
    codes, uniq = pd.factorize(frame["nvtx_range"].astype("string"))
    found = pd.Series(uniq, dtype="string").str.extract(STEP_RANGE, flags=re.IGNORECASE)[0]
    vals = np.append(found.to_numpy(dtype=object, na_value=None), None)[codes]
    return pd.Series(vals, index=frame.index, dtype="string")


# ---- per scope -------------------------------------------------------------------------------------------

def _weighted_median(values: pd.Series, weights: pd.Series) -> tuple[float, int] | None:
    """(time-weighted median, position of the row that holds it) of the positive finite values."""
    v = values.to_numpy(dtype=float, na_value=np.nan)
    ok = np.isfinite(v) & (v > 0)
    if not ok.any():
        return None
    w = weights.to_numpy(dtype=float, na_value=0.0)[ok]
    w = w if w.sum() > 0 else np.ones(ok.sum())
    idx = np.flatnonzero(ok)
    order = np.argsort(v[ok], kind="stable")
    cum = np.cumsum(w[order])
    pos = idx[order[np.searchsorted(cum, cum[-1] / 2)]]
    return float(v[pos]), int(pos)


def _peak(frame: pd.DataFrame, col: str, key: str, mask: np.ndarray) -> Peak | None:
    sub = frame[mask]
    if col not in sub or sub.empty:
        return None
    found = _weighted_median(number(sub, col), number(sub, "duration_s").fillna(0.0))
    if found is None:
        return None
    src = sub[source_column(col)].iloc[found[1]] if source_column(col) in sub else ""
    return Peak(key, found[0], "" if pd.isna(src) else str(src))


def compute_peak(frame: pd.DataFrame) -> Peak | None:
    """The peak of the precision that did the most FLOPs (the tensor path named where one dominates)."""
    flops = {p: float(number(frame, c).sum()) for p, c in zip(PRECISIONS, FLOP_COLUMNS) if c in frame}
    if not flops or max(flops.values()) <= 0:
        return None
    p = max(flops, key=lambda k: flops[k])
    mask = (number(frame, f"flop_{p}") > 0).to_numpy()
    key = p
    if p == "tensor" and "tensor_path" in frame:
        paths = frame.loc[mask, "tensor_path"].astype("string").dropna()
        if not paths.empty:
            top = paths.value_counts().index[0]
            key = f"tensor {top}"
            mask = mask & (frame["tensor_path"].astype("string") == top).fillna(False).to_numpy()
    return _peak(frame, f"peak_flop_per_s_{p}", key, mask)


def _gaps(frame: pd.DataFrame) -> tuple[float | None, float | None]:
    """(span, idle gaps) of a timeline's rows in seconds; (None, None) without start times."""
    if "start_ns" not in frame:
        return None, None
    start = number(frame, "start_ns")
    dur = number(frame, "duration_s") * 1e9
    ok = (start.notna() & dur.notna()).to_numpy()
    if not ok.any():
        return None, None
    s, e = start.to_numpy()[ok], (start + dur).to_numpy()[ok]
    order = np.argsort(s, kind="stable")
    s, e = s[order], np.maximum.accumulate(e[order])
    gaps = np.clip(s[1:] - e[:-1], 0, None).sum() if len(s) > 1 else 0.0
    return float((e.max() - s.min()) / 1e9), float(gaps / 1e9)


def reasons(frame: pd.DataFrame, gpu_time_s: float) -> tuple[Reason, ...]:
    """One :class:`Reason` per cause over the rows of ``frame`` (rows without a roofline point), longest
    first, each share of ``gpu_time_s`` (the GPU time of the scope they were taken from)."""
    frame = narrow(frame)
    dur = number(frame, "duration_s").fillna(0.0).clip(lower=0.0)
    return _reasons(frame, np.ones(len(frame), dtype=bool), dur, gpu_time_s)


def _reasons(frame: pd.DataFrame, missing: np.ndarray, dur: pd.Series, total: float,
             why: pd.DataFrame | None = None) -> tuple[Reason, ...]:
    """One Reason per (reason, fix) over the ``missing`` rows; ``why``: their :func:`row_reasons`, when known."""
    if not missing.any():
        return ()
    why = row_reasons(frame, pd.Series(missing, index=frame.index)) if why is None else why
    short = frame["kernel_short_name"] if "kernel_short_name" in frame else pd.Series(pd.NA, index=frame.index)
    full = frame["kernel_name"] if "kernel_name" in frame else pd.Series(pd.NA, index=frame.index)
    names = short.astype("string").fillna(full.astype("string")).fillna("(unnamed)").to_numpy()[missing]
    work = pd.DataFrame({"reason": why["reason"].to_numpy(), "fix": why["fix"].to_numpy(), "name": names,
                         "t": dur.to_numpy()[missing]})
    out = []
    for (reason, fix), grp in work.groupby(["reason", "fix"], sort=False):
        t = float(grp["t"].sum())
        top = grp.groupby("name")["t"].sum().sort_values(ascending=False).head(3)
        out.append(Reason(str(reason), str(fix), t, t / total if total > 0 else math.nan, len(grp),
                          tuple((str(n), float(v) / total if total > 0 else math.nan) for n, v in top.items())))
    return tuple(sorted(out, key=lambda r: (-r.time_s, r.reason)))


def headline(frame: pd.DataFrame, profile: str | None = None, device: str | None = None, step: str | None = None,
             time_kinds: pd.Series | None = None, point: pd.Series | None = None,
             why: pd.DataFrame | None = None) -> Headline:
    """The headline of one scope's rows (``frame`` holds just them). ``time_kinds``, ``point`` and ``why`` (the
    :func:`row_reasons` of its rows without a point, idle aside) when already computed for a larger frame."""
    point = has_point(frame) if point is None else point
    k = kinds(frame, point=point) if time_kinds is None else time_kinds
    dur = number(frame, "duration_s").fillna(0.0).clip(lower=0.0)
    total = float(dur.sum())
    per_kind = dur.groupby(k.to_numpy()).sum()
    seconds = {kind: float(per_kind.get(kind, 0.0)) for kind in KINDS}
    pt = point.to_numpy()
    covered = float(dur[pt].sum())
    missing = ~pt & (k != "idle").to_numpy()
    flops = float(flop_total(frame).sum(min_count=1))  # NaN when no row has FLOPs: unavailable, not 0
    moved = float(number(frame, "dram_bytes").sum(min_count=1))
    one_device = device is not None or ("device_name" in frame and frame["device_name"].nunique(dropna=False) == 1)
    one_file = profile is not None or "source_file" not in frame or frame["source_file"].nunique(dropna=False) <= 1
    span, gap = _gaps(frame) if one_file else (None, None)  # one profile's clock: spans of two files do not add up
    notes = []
    if total > 0 and covered < total - seconds["idle"] and flops > 0:
        notes.append("FLOP/s and bytes/s count only the rows that have FLOPs (bytes): lower bounds")
    return Headline(
        profile=profile, device=device, step=step, gpu_time_s=total, rows=len(frame),
        coverage=covered / total if total > 0 else math.nan, kinds=seconds,
        reasons=_reasons(frame, missing, dur, total, why),
        flop=flops, dram_bytes=moved,
        achieved_flop_per_s=flops / total if total > 0 else math.nan,
        achieved_dram_bytes_per_s=moved / total if total > 0 else math.nan,
        compute_peak=compute_peak(frame) if one_device else None,
        dram_peak=_peak(frame, "peak_dram_bytes_per_s", "dram", np.ones(len(frame), dtype=bool)) if one_device else None,
        span_s=span, gap_s=gap, notes=tuple(notes))


def _groups(frame: pd.DataFrame, keys: list[pd.Series]) -> Iterator[tuple[tuple[Any, ...], np.ndarray]]:
    """(the keys' values, row positions) per distinct combination, in order of first appearance (NA as '')."""
    codes, first = row_codes(keys)
    values = [k.fillna("").to_numpy(dtype=object)[first] for k in keys]
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    for part in np.split(order, bounds):
        if len(part):
            yield tuple(v[codes[part[0]]] for v in values), part


def headlines(frame: pd.DataFrame, by_step: bool = True) -> list[Headline]:
    """One headline per (profile, device), in order of GPU time, each followed by its steps' headlines
    (``by_step``, where the profile marks steps); plus, first, the whole frame's when it holds several."""
    if frame.empty:
        return []
    frame = narrow(frame)
    point = has_point(frame)
    k = kinds(frame, point=point)
    missing = ~point.to_numpy() & (k != "idle").to_numpy()
    why_all = row_reasons(frame, pd.Series(missing, index=frame.index))
    pos = np.full(len(frame), -1)
    pos[missing] = np.arange(int(missing.sum()))

    def why(rows: np.ndarray) -> pd.DataFrame:  # the reasons of these rows' missing ones, in row order
        p = pos[rows]
        return why_all.iloc[p[p >= 0]]

    src = frame["source_file"].astype("string") if "source_file" in frame else pd.Series("", index=frame.index)
    dev = frame["device_name"].astype("string") if "device_name" in frame else pd.Series("", index=frame.index)
    step = steps(frame) if by_step else pd.Series(pd.NA, index=frame.index, dtype="string")
    scopes = []
    for (f, d), rows in _groups(frame, [src, dev]):
        sub = frame.iloc[rows]
        h = headline(sub, f or None, d or None, None, k.iloc[rows], point.iloc[rows], why(rows))
        parts = []
        st = step.iloc[rows]
        if st.notna().any():
            for (s,), srows in _groups(sub, [st]):
                if s:
                    parts.append(headline(sub.iloc[srows], f or None, d or None, s, k.iloc[rows].iloc[srows],
                                          point.iloc[rows].iloc[srows], why(rows[srows])))
            parts.sort(key=lambda x: _step_number(x.step))
        scopes.append((h, parts))
    scopes.sort(key=lambda x: -x[0].gpu_time_s)
    out = [x for h, parts in scopes for x in (h, *parts)]
    if len(scopes) > 1:
        out.insert(0, headline(frame, None, None, None, k, point, why_all))
    return out


def by_device(frame: pd.DataFrame) -> dict[str | None, Headline]:
    """One headline per device over every profile (the HTML report's device view), by device name (None: rows
    that name no device)."""
    if frame.empty:
        return {}
    frame = narrow(frame)
    point = has_point(frame)
    k = kinds(frame, point=point)
    dev = frame["device_name"].astype("string") if "device_name" in frame else pd.Series("", index=frame.index)
    out = {}
    for (d,), rows in _groups(frame, [dev]):
        out[d or None] = headline(frame.iloc[rows], None, d or None, None, k.iloc[rows], point.iloc[rows])
    return out


#: the columns a headline reads (a narrow view: slicing 130 columns, and deep-copying the provenance in ``attrs``
#: for every slice, cost ~2 s on a 20,000-row trace)
_NEEDED = ("source_file", "device_name", "nvtx_range", "kernel_name", "kernel_short_name", "mangled_name",
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


__all__ = ["KINDS", "Headline", "Peak", "Reason", "by_device", "compute_peak", "headline", "headline_frame",
           "headlines", "kinds", "reasons", "steps"]
