"""The hierarchical roofline per kernel: DRAM/HBM, L2 and L1 against the same FLOPs.

Rules (``docs/analysis.md`` says the same for people):

* ``flop_total`` = Σ of the precisions the report holds; the shares stay in ``flop_share_*``.
  A kernel mixing precisions gets one point against the effective peak
  Σ FLOPs / Σ (FLOPsᵢ / Peakᵢ): the time the work would take at each precision's own peak.
* Per level L: intensity_L = FLOPs / bytes_L, ridge_L = peak / bandwidth_L,
  attainable_L = min(peak, intensity_L × bandwidth_L). Zero bytes give infinite intensity.
* The binding roof is the lowest ceiling at the kernel's point:
  attainable = min(peak, min_L intensity_L × bandwidth_L). Then
  % of roof = achieved / attainable = max(FLOP/s / peak, max_L bytes_L/s / bandwidth_L), the
  utilisation of the busiest roof (XProf's "roofline efficiency"). Kernels without FLOPs are judged
  by that right-hand side alone: their binding roof is the busiest memory level.
* bound: ``compute-bound`` / ``memory-bound`` by the binding roof, but ``latency-limited`` when
  % of roof is under ``latency_threshold_pct`` (default 20): far below every roof, the kernel is
  limited by latency or occupancy, which a roofline cannot tell apart.
* Above 100% of a roof is flagged (``over_roof``), never shown as a win; the note names the roof and its source,
  and ``diagnose.py`` the cause the evidence supports.

Everything is vectorised over columns: no Python loop per row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from roofline.analysis.render import (
    Factor,
    Source,
    fixed,
    flag_word,
    float_column,
    render_each,
    render_rare,
)
from roofline.hardware.peaks import LEVELS, OPTIONAL_LEVELS
from roofline.schema import FLOP_COLUMNS, PRECISIONS, UNAVAILABLE, source_column

LATENCY_THRESHOLD_PCT = 20.0
#: allowance for counter rounding before "above the roof" is flagged
OVER_ROOF_TOLERANCE = 1e-9

BOUNDS = ("compute-bound", "memory-bound", "latency-limited", UNAVAILABLE)
#: an over-roof point whose cause nothing recorded tells (diagnose.py replaces it where the evidence does)
UNEXPLAINED = ("no recorded evidence explains it: check the peak source (spec vs counters), sparse vs dense, the "
               "clock basis and how the FLOPs/bytes were counted")
#: the latency-limited note part (diagnose.py adds the evidence where the profile records it)
LATENCY_NOTE = "under {threshold:g}% of every roof: latency- or occupancy-limited"
#: a missing value whose source says nothing (a reader's gap): never an empty "()" in a note
_UNSAID = "the profile does not say why"

LEVEL_HINTS = {
    "dram": "ncu --section SpeedOfLight_RooflineChart (dram__bytes)",
    "l2": "ncu --section SpeedOfLight_HierarchicalSingleRooflineChart (lts__lts2xbar / lts__t_bytes)",
    "l1": "ncu --section SpeedOfLight_HierarchicalSingleRooflineChart (l1tex__lsu_writeback / l1tex__t_bytes)",
    "lds": "rocprof-compute profile (SQ_LDS_IDX_ACTIVE, SQ_LDS_BANK_CONFLICT); AMD only",
}


def level_columns(level: str) -> list[str]:
    return [
        f"intensity_{level}_flop_per_byte",
        f"achieved_{level}_bytes_per_s",
        f"ridge_{level}_flop_per_byte",
        f"attainable_{level}_flop_per_s",
        f"pct_of_peak_{level}_bandwidth",
    ]


def roofline_columns(levels: Sequence[str] = LEVELS) -> list[str]:
    cols = ["flop_total"] + [f"flop_share_{p}" for p in PRECISIONS] + [
        "compute_precision", "peak_flop_per_s", "peak_flop_per_s_source", "achieved_flop_per_s", "pct_of_peak_flop",
    ]
    for lv in levels:
        cols += level_columns(lv)
    return cols + ["attainable_flop_per_s", "binding_roof", "bound", "pct_of_roof", "time_at_roof_s",
                   "over_roof", "analysis_note"]


def _float_columns(levels: Sequence[str]) -> list[str]:
    """The float64 columns of :func:`roofline_columns`, in its order."""
    text = {"compute_precision", "peak_flop_per_s_source", "binding_roof", "bound", "over_roof", "analysis_note"}
    return [c for c in roofline_columns(levels) if c not in text]


def _col(frame: pd.DataFrame, name: str) -> np.ndarray:
    values = float_column(frame, name)
    if values is not None:
        return values
    if name not in frame:
        return np.full(len(frame), np.nan)
    s = frame[name]
    if s.dtype == np.float64:  # the schema's dtype: a view, no conversion (only read, never written)
        return s.to_numpy()
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _finite(x: np.ndarray) -> np.ndarray:
    """x, NaN where not finite (x itself, not a copy, when all finite: it is only read)."""
    ok = np.isfinite(x)
    return x if ok.all() else np.where(ok, x, np.nan)


def _positive(x: np.ndarray, buf: np.ndarray | None = None) -> np.ndarray:
    """x, NaN where not > 0: ``a / _positive(x)`` is ``where(x > 0, a / x, NaN)`` in one pass.
    With ``buf`` (a scratch array of x's length), the copy goes there instead of a new array."""
    ok = x > 0
    if ok.all():
        return x
    if buf is None:
        return np.where(ok, x, np.nan)
    np.copyto(buf, x)
    return _put(buf, ~ok, np.nan)


def _time_at(flop: np.ndarray, peak: np.ndarray) -> np.ndarray:
    """``fmax(flop / _positive(peak), 0)`` computed in ``flop`` (a new array of ours)."""
    ok = peak > 0
    np.divide(flop, peak, out=flop)
    if not ok.all():
        flop[~ok] = np.nan
    return np.fmax(flop, 0.0, out=flop)


def _put(x: np.ndarray, mask: np.ndarray, value: float) -> np.ndarray:
    """x (an array of ours, set in place) with ``value`` where ``mask``: a rare mask costs one scan."""
    if mask.any():
        x[mask] = value
    return x


def _gather(columns: Sequence[np.ndarray | float | None], which: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Per row r, ``columns[which[r]][r]`` (a float entry: that value on every row; None: any value, for
    rows whose use ignores it), into ``out`` (a new array if None). The most used column is copied and
    the other rows set by index: no per-row branch (``which`` is random across rows) and no stacked
    copy of every column."""
    counts = [int(np.count_nonzero(which == j)) if c is not None else -1 for j, c in enumerate(columns)]
    most = int(np.argmax(counts))
    first = columns[most]
    assert first is not None, "a column to gather from"
    if out is None:  # the dtype of the most used column (int keys stay int)
        out = np.full(len(which), first) if np.isscalar(first) else first.copy()
    else:
        np.copyto(out, first)
    for j, c in enumerate(columns):
        if j != most and counts[j] > 0:
            rows = np.flatnonzero(which == j)
            out[rows] = c if np.isscalar(c) else c[rows]
    return out


def _fold(op: np.ufunc, columns: Sequence[np.ndarray]) -> np.ndarray:
    """``op`` over the columns, left to right, into a copy of the first (Σ adds in the order a row-wise
    sum over a few columns does)."""
    out = columns[0].copy()
    for c in columns[1:]:
        op(out, c, out=out)
    return out


def _sum(columns: Sequence[np.ndarray]) -> np.ndarray:
    return _fold(np.add, columns)


def _any(columns: Sequence[np.ndarray]) -> np.ndarray:
    return _fold(np.logical_or, columns)


def _all(columns: Sequence[np.ndarray]) -> np.ndarray:
    return _fold(np.logical_and, columns)


def _arg(better: np.ufunc, columns: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the index (int8) of the best column (the first on ties, as argmin/argmax) and its value;
    ``better`` is np.less (min) or np.greater (max). The first column holds no NaN; a NaN in the others
    is never the best (as -inf for a max, +inf for a min)."""
    best = columns[0].copy()
    idx = np.zeros(len(best), np.int8)
    for j, c in enumerate(columns[1:], 1):
        _arg_step(better, idx, best, c, j)
    return idx, best


def _arg_step(better: np.ufunc, idx: np.ndarray, best: np.ndarray, c: np.ndarray, j: int) -> None:
    """One column (index ``j``) of :func:`_arg`, in place on ``idx`` and ``best``: the analysis folds
    each level in as it is computed, so no level's column outlives its step."""
    b = better(c, best)  # NaN: False
    idx += b.view(np.int8) * (np.int8(j) - idx)  # branch-free: the mask is random across rows
    (np.fmin if better is np.less else np.fmax)(best, c, out=best)  # equal values: either is the same number


def _row_names(masks: Sequence[np.ndarray] | Sequence[bool], row: int, names: Sequence[str]) -> str:
    """The names whose mask is set at ``row`` ("fp32/tensor"); plain booleans are read as they are."""
    return "/".join(nm for m, nm in zip(masks, names) if (m if isinstance(m, bool) else m[row]))


def hierarchical(
    kernels: pd.DataFrame,
    levels: Sequence[str] = LEVELS,
    latency_threshold_pct: float = LATENCY_THRESHOLD_PCT,
) -> pd.DataFrame:
    """The roofline columns for every row of a kernels frame (same index, same order)."""
    n = len(kernels)
    levels = tuple(levels)
    # every float column of the result is a row of one 2-D block: one allocation, which numpy asks the
    # kernel to back with huge pages (a few hundred page faults instead of ~50,000 for 26 separate
    # 8 MB columns, whose faults cost more system time than computing them), and which the allocator
    # maps fresh whatever its state (separate columns were reused or faulted in depending on glibc's
    # dynamic mmap threshold). Each value is computed straight into its row (ufunc ``out=``).
    names = _float_columns(levels)
    col = dict(zip(names, np.empty((len(names), n))))
    # scratch rows for the temporaries (freed on return), one allocation for the same reason
    buf = np.empty((4, n))
    # column by column: a row-wise reduction over a (rows × 4) stack (argmax, nansum, any) costs 5-30×
    # an elementwise pass over each column; left to right, ties to the first, as the reductions did
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        flops = [_col(kernels, c) for c in FLOP_COLUMNS]
        # a non-finite peak is no peak: an infinite roof would silently drop the compute roof
        peaks = [_finite(_col(kernels, f"peak_flop_per_s_{p}")) for p in PRECISIONS]
        have = [~np.isnan(f) for f in flops]
        any_have = _any(have)
        total = col["flop_total"]
        for i, (h, f) in enumerate(zip(have, flops)):
            # Σ left to right over the columns, NaN FLOPs as 0 (as a sum of where(have, f, 0) columns)
            if h.all():
                term = f
            else:
                term = buf[0]
                np.copyto(term, f)
                _put(term, ~h, 0.0)
            if i:
                np.add(total, term, out=total)
            else:
                np.copyto(total, term)
        _put(total, ~any_have, np.nan)
        used = [f > 0 for f in flops]  # NaN is not > 0
        n_used = _sum([u.view(np.int8) for u in used])
        # the one precision that did work, on rows with exactly one (0 elsewhere: no text reads it there)
        dominant = sum((np.int8(i) * u.view(np.int8) for i, u in enumerate(used) if i), np.zeros(n, np.int8))
        dominant *= (n_used == 1).view(np.int8)
        positive = total > 0
        total_pos = _positive(total, buf[0])
        for f, p in zip(flops, PRECISIONS):
            if not np.isfinite(f).all():
                np.copyto(buf[1], f)
                f = np.nan_to_num(buf[1], copy=False)
            np.divide(f, total_pos, out=col[f"flop_share_{p}"])

        # effective compute peak: Σ F / Σ F_i/P_i over the precisions that did work
        has_peak = [pk > 0 for pk in peaks]
        no_peak = [u & ~h for u, h in zip(used, has_peak)]
        peak_missing = _any(no_peak)
        # one precision: its own peak, exact (not a round trip); no floating-point work: the fp32 roof,
        # so the point can still be drawn; else (index 4) NaN, or the effective peak set below
        idle = (n_used == 0) & (total == 0)
        which = 4 + (dominant - 4) * (n_used == 1).view(np.int8)  # int8 arithmetic: no branch per row
        which += (1 - which) * idle.view(np.int8)
        peak = _gather([*peaks, np.nan], which, out=col["peak_flop_per_s"])
        mixed = np.flatnonzero(n_used > 1)  # several precisions: the effective peak, on those rows only
        if len(mixed):
            # fmax(…, 0): a precision without work (0, negative or NaN FLOPs) adds nothing; a used one
            # without a peak gives NaN here only by chance, so peak_missing sets it
            t_compute_at_peak = _sum([_time_at(f.take(mixed), pk.take(mixed)) for f, pk in zip(flops, peaks)])
            _put(t_compute_at_peak, peak_missing[mixed], np.nan)
            peak[mixed] = np.divide(total.take(mixed), t_compute_at_peak, out=t_compute_at_peak)

        dur = _col(kernels, "duration_s")
        good_dur = np.isfinite(dur) & (dur > 0)  # zero, negative, NaN or inf: nothing achieved to place
        achieved = _put(np.divide(total, dur, out=col["achieved_flop_per_s"]), ~good_dur, np.nan)
        peak_ok = peak > 0
        peak_pos = _positive(peak, buf[0])
        # the utilisation of the busiest roof and the lowest ceiling, folded in roof by roof (see _arg):
        # no roof: an infinite ceiling (never the lowest), utilisation -inf (never the busiest), time -inf
        util_max = np.divide(achieved, peak_pos, out=buf[1])
        np.multiply(util_max, 100.0, out=col["pct_of_peak_flop"])
        _put(util_max, ~positive | np.isnan(util_max), -np.inf)
        busiest = np.zeros(n, np.int8)
        ceil_min = col["attainable_flop_per_s"]
        np.copyto(ceil_min, peak_pos)
        _put(ceil_min, ~peak_ok, np.inf)
        lowest = np.zeros(n, np.int8)  # compute roof first: ties go to compute
        time_at_roof = np.divide(total, peak_pos, out=col["time_at_roof_s"])
        _put(time_at_roof, np.isnan(time_at_roof), -np.inf)
        level_ok, level_no_bytes, level_silent, level_zero = [], [], [], []
        for j, lv in enumerate(levels, 1):
            nbytes = _col(kernels, f"{lv}_bytes")
            # an optional level (LDS) on a row whose format does not record it (no source at all): no note
            src = kernels.get(source_column(f"{lv}_bytes"))
            level_silent.append(np.zeros(n, bool) if lv not in OPTIONAL_LEVELS else
                                np.isnan(nbytes) & (src.isna().to_numpy() if src is not None else True))
            bw = _finite(_col(kernels, f"peak_{lv}_bytes_per_s"))
            bw_pos = _positive(bw, buf[2])
            nonneg = nbytes >= 0
            ok = nonneg & (bw > 0)
            not_ok = ~ok
            bad = np.flatnonzero(not_ok)  # rare rows, set by index three times below (a mask costs a scan each)
            level_ok.append(ok)
            level_no_bytes.append(~nonneg)  # NaN, or negative (flagged at ingest)
            level_zero.append(not_ok | (nbytes == 0))
            intensity = np.divide(total, nbytes, out=col[f"intensity_{lv}_flop_per_byte"])
            odd = np.flatnonzero(~(nbytes > 0))  # zero, negative or NaN bytes (rare): infinite intensity, or none
            if len(odd):
                intensity[odd] = np.where((nbytes[odd] == 0) & (total[odd] > 0), np.inf, np.nan)
            bw_ach = _put(np.divide(nbytes, dur, out=col[f"achieved_{lv}_bytes_per_s"]), ~(good_dur & nonneg), np.nan)
            ceiling = np.multiply(intensity, bw, out=buf[3])  # infinite intensity: an infinite memory ceiling (bw > 0 where ok)
            attain = np.fmin(peak, ceiling, out=col[f"attainable_{lv}_flop_per_s"])
            at_inf = np.flatnonzero(intensity == np.inf)
            if len(at_inf):
                attain[at_inf] = peak[at_inf]
            attain[bad] = np.nan
            np.divide(peak, bw_pos, out=col[f"ridge_{lv}_flop_per_byte"])
            ceiling[bad] = np.inf
            _arg_step(np.less, lowest, ceil_min, ceiling, j)  # NaN: no ceiling
            util = np.divide(bw_ach, bw_pos, out=buf[3])  # NaN where not ok: no bytes (bw_ach NaN) or no roof
            np.multiply(util, 100.0, out=col[f"pct_of_peak_{lv}_bandwidth"])
            _arg_step(np.greater, busiest, util_max, util, j)  # NaN: no roof to be busy on (see _arg)
            t_roof = np.divide(nbytes, bw_pos, out=buf[3])
            t_roof[bad] = -np.inf
            np.maximum(time_at_roof, t_roof, out=time_at_roof)

        any_level = _any(level_ok)
        with_flops = positive & peak_ok & any_level
        # 0 FLOP and 0 bytes at every level with a roof (XProf's IDLE, an empty kernel): no work, so no point
        # and no bound; "latency-limited at 0%" would call idle time a slow kernel
        no_work = (total == 0) & any_level & _all(level_zero)
        no_flops = (total == 0) & any_level & ~no_work
        binding_idx = np.where(with_flops, lowest, busiest)
        _put(_put(ceil_min, ~with_flops, np.nan), no_flops, 0.0)  # attainable; no_flops: not with_flops
        pct = np.multiply(util_max, 100.0, out=col["pct_of_roof"])
        pct[~((with_flops | no_flops) & good_dur & np.isfinite(util_max))] = np.nan
        # without a finite positive duration nothing was achieved: no point, so no bound (the note says why)
        decided = (with_flops | (no_flops & ~np.isnan(pct))) & good_dur
        latency = decided & (pct < latency_threshold_pct)
        over = decided & (pct > 100.0 * (1 + OVER_ROOF_TOLERANCE))
        time_at_roof[~decided | np.isinf(time_at_roof)] = np.nan
    del buf

    # categorical columns: computed per distinct combination of their inputs
    # int8 arithmetic on flags (no branch per row): undecided rows get the last code, "unavailable"
    undecided = (~decided).view(np.int8)
    binding_code = binding_idx + (len(levels) + 1 - binding_idx) * undecided
    bound_code = (binding_idx != 0).view(np.int8)  # memory-bound (1), else compute-bound (0) ...
    bound_code = bound_code + latency.view(np.int8) * (2 - bound_code)  # ... latency-limited (2) ...
    bound_code += undecided * (3 - bound_code)  # ... or unavailable (3)
    v = dict(have=have, any_have=any_have, total=total, n_used=n_used, dominant=dominant, used=used, which=which,
             no_peak=no_peak, peak_missing=peak_missing, dur=dur, good_dur=good_dur, ok=level_ok,
             no_bytes=level_no_bytes, any_level=any_level, silent=level_silent, no_work=no_work,
             decided=decided, latency=latency, over=over, binding_idx=binding_idx)
    text = _Texts(kernels, levels, n, v)
    precision, peak_src = text.precision_and_peak_source()
    notes = text.notes(peak_src, latency_threshold_pct)
    out: dict[str, object] = dict(col)
    out.update(binding_roof=fixed(binding_code, ["compute", *levels, UNAVAILABLE]),
               bound=fixed(bound_code, BOUNDS),
               over_roof=pd.array(over, dtype="boolean"), analysis_note=notes,
               compute_precision=precision, peak_flop_per_s_source=peak_src)
    # copy=False: the columns stay views, one block each (consolidating 30 float columns into one 2-D
    # block copied a quarter of a GB for a million rows, for nothing: every consumer reads columns);
    # built in the result's order (selecting the columns afterwards cost a take of every block per input)
    return pd.DataFrame({c: out[c] for c in roofline_columns(levels)}, index=kernels.index, copy=False)


class _Packer:
    """Group keys read on a few rows, packed into int64 words (mixed radix: Σ key_i × Π_{j<i} (max key_j + 1),
    a new word before one could overflow): one group-key part instead of one per key."""

    def __init__(self, size: int) -> None:
        self.words = [np.zeros(size, np.int64)]
        self.radix = 1

    def _room(self, top: int) -> None:
        if self.radix * top >= 2**62:
            self.words.append(np.zeros(len(self.words[0]), np.int64))
            self.radix = 1

    def add_dense(self, key: np.ndarray, top: int) -> None:
        """Keys in [0, top) on every row."""
        self._room(top)
        self.words[-1] += key.astype(np.int64) * self.radix
        self.radix *= top

    def add(self, at: np.ndarray, key: np.ndarray) -> None:
        """Keys (>= 0, a new array: scaled in place) at the distinct places ``at`` of the words. The
        places must be told apart by the other parts of the group key: a key equal on all of them
        (one source quoted by every row above a roof) refines nothing and is left out."""
        if not len(at):
            return
        key = np.asarray(key, dtype=np.int64)
        top = int(key.max()) + 1
        if top - 1 == int(key.min()):
            return
        self._room(top)
        key *= self.radix
        self.words[-1][at] += key  # distinct places: no lost update
        self.radix *= top


_BAD_DURATION = {1: "zero duration", 2: "negative duration (a damaged profile)", 3: "no duration (NaN)",
                 4: "infinite duration"}


class _Texts:
    """The text columns, each rendered once per distinct combination of what it depends on.

    ``v`` holds the per-row arrays of :func:`hierarchical` (lists of columns for per-precision and
    per-level flags)."""

    def __init__(self, kernels: pd.DataFrame, levels: tuple[str, ...], n: int, v: dict) -> None:
        self.n, self.levels, self.v = n, levels, v
        # which rows' text can quote each source (the only rows whose strings are hashed: see Factor)
        self.kind = np.minimum(v["n_used"], 2)
        dominant = v["dominant"]
        self.one = [(self.kind == 1) & (dominant == i) for i in range(len(PRECISIONS))]
        quoted_peak = [m.copy() for m in self.one]
        lacking = np.flatnonzero(v["peak_missing"])  # a precision that did work has no peak (rare)
        first_no_peak = _arg(np.greater, [m[lacking] for m in v["no_peak"]])[0]
        for i in range(len(PRECISIONS)):
            quoted_peak[i][lacking[first_no_peak == i]] = True
        self.idle = (self.kind == 0) & (v["total"] == 0)
        quoted_peak[1] |= self.idle  # no floating-point work: the fp32 roof
        self.peak_srcs = [Factor(kernels, source_column(f"peak_flop_per_s_{p}"), rows=quoted_peak[i])
                          for i, p in enumerate(PRECISIONS)]
        self.path = Factor(kernels, "tensor_path", rows=self.one[PRECISIONS.index("tensor")])
        # quoted by notes only, so read only on the rows a note is about
        self.flop_src = Source(kernels, source_column("flop_fp32"))
        self.bytes_src = [Source(kernels, source_column(f"{lv}_bytes")) for lv in levels]
        self.bw_src = [Source(kernels, source_column(f"peak_{lv}_bytes_per_s")) for lv in levels]
        # kind (0-2), dominant precision (0-3), no FLOPs at all: one small key
        self.shape = (self.kind.astype(np.int16) + 3 * dominant.astype(np.int16)
                      + 12 * (v["total"] == 0).view(np.int8).astype(np.int16))

    def precision_and_peak_source(self) -> tuple[pd.Categorical, pd.Categorical]:
        """``compute_precision`` and ``peak_flop_per_s_source``, from one grouping of the rows."""
        kind, dominant, total, used = self.kind, self.v["dominant"], self.v["total"], self.v["used"]

        def precision(r: int) -> str:
            if kind[r] == 0:
                return "none" if total[r] == 0 else UNAVAILABLE
            if kind[r] == 2:
                return "mixed"
            p = PRECISIONS[dominant[r]]
            path = self.path.text(r)
            return f"tensor:{path}" if p == "tensor" and path else p

        def peak_source(r: int) -> str:
            if kind[r] == 1:
                return f"{PRECISIONS[dominant[r]]} — {self.peak_srcs[dominant[r]].text(r)}"
            if kind[r] == 2:
                return ("effective Σ FLOPs / Σ FLOPsᵢ/Peakᵢ over " + _row_names(used, r, PRECISIONS)
                        + " (shares in flop_share_*)")
            if total[r] == 0:
                return f"fp32 — {self.peak_srcs[1].text(r)} (kernel does no floating-point work)"
            return f"{UNAVAILABLE}: no FLOPs"

        # the quoted source: the dominant precision's for one precision, the fp32 one without FLOPs
        # (index 4, several precisions or no FLOPs: no source quoted, and ``shape`` tells those rows apart)
        src = _gather([*(f.key() for f in self.peak_srcs), None], self.v["which"])
        shape = self.shape + 24 * flag_word(used).astype(np.int16)  # shape < 24, then which precisions did work
        precision_col, source_col = render_each([shape, self.path.key(), src], self.n, [precision, peak_source])
        return precision_col, source_col

    def notes(self, peak_src: pd.Categorical, threshold: float) -> pd.Categorical:
        v, levels = self.v, self.levels
        absent = [~ok & ~silent for ok, silent in zip(v["ok"], v["silent"])]
        no_level = v["any_have"] & (v["total"] > 0) & ~v["any_level"]
        # above a roof (half the rows of a batch with a wrong peak): which roof and the source quoted
        over = _Packer(self.n)
        # which roof (0: none) and, above the compute roof, its peak source: dense (int8 arithmetic)
        over.add_dense((v["binding_idx"] + 1) * v["over"].view(np.int8), len(levels) + 2)
        over_compute = v["over"] & (v["binding_idx"] == 0)
        over.add_dense((np.asarray(peak_src.codes, np.int16) + 1) * over_compute.view(np.int8), len(peak_src.categories) + 1)
        over_rows = np.flatnonzero(v["over"])  # listed once, then split by roof
        over_roof = v["binding_idx"][over_rows]
        for j in range(len(levels)):
            # above a memory roof, the bytes source only matters for being modelled ("model:")
            rows = over_rows[over_roof == j + 1]
            over.add(rows, self.bytes_src[j].starts_with(rows, "model:"))
            over.add(rows, self.bw_src[j].key_at(rows))
        # every other note part is about a rare row: only those rows' keys are built
        rare = _any([~_all(v["have"]), v["peak_missing"], ~v["good_dur"], *absent, no_level, v["no_work"]])

        def keys(s: np.ndarray) -> list[np.ndarray]:
            # a partition at least as fine as what fn reads: flags in one word, then the quoted sources
            d = v["dur"][s]
            flags = [*(~m[s] for m in v["have"]), *(m[s] for m in v["no_peak"]), d == 0, d < 0, np.isnan(d),
                     np.isinf(d), *(m[s] for m in absent), *(m[s] for m in v["no_bytes"]), no_level[s],
                     v["no_work"][s], v["latency"][s]]
            # the sources quoted, keyed on the rare rows alone (places in the words: positions in s)
            packer = _Packer(len(s))

            def add(quoting: np.ndarray, source: Factor | Source) -> None:
                at = np.flatnonzero(quoting)
                packer.add(at, source.key_at(s[at]))

            add(~v["any_have"][s], self.flop_src)
            first_no_peak = np.full(len(s), -1, np.int8)  # only the first precision without a peak is quoted
            for i in reversed(range(len(PRECISIONS))):
                first_no_peak[v["no_peak"][i][s]] = i
            for i, f in enumerate(self.peak_srcs):
                add(first_no_peak == i, f)
            for j in range(len(levels)):
                absent_s, no_bytes_s = absent[j][s], v["no_bytes"][j][s]
                add(absent_s & no_bytes_s, self.bytes_src[j])
                add(absent_s & ~no_bytes_s, self.bw_src[j])
            return [flag_word(flags), *packer.words, *(w[s] for w in over.words)]

        def fn(r: int) -> str | None:
            parts = []
            if v["any_have"][r] and not all(h[r] for h in v["have"]):
                missing = [not h[r] for h in v["have"]]
                parts.append(f"FLOPs are a lower bound: {_row_names(missing, 0, PRECISIONS)} unavailable")
            if not v["any_have"][r]:
                parts.append(f"no FLOPs: {self.flop_src.text(r)}")
            if v["peak_missing"][r]:
                first = next(i for i, m in enumerate(v["no_peak"]) if m[r])
                parts.append(f"no compute roof for {_row_names(v['no_peak'], r, PRECISIONS)} "
                             f"({self.peak_srcs[first].text(r)})")
            d = v["dur"][r]
            dur_kind = 1 if d == 0 else 2 if d < 0 else 3 if np.isnan(d) else 4 if np.isinf(d) else 0
            if dur_kind:
                parts.append(f"{_BAD_DURATION[dur_kind]}: nothing achieved can be computed, so no bound")
            for j, lv in enumerate(levels):
                if absent[j][r]:
                    what = (f"no {lv.upper()} bytes ({self.bytes_src[j].text(r) or _UNSAID})" if v["no_bytes"][j][r]
                            else f"no {lv.upper()} roof ({self.bw_src[j].text(r) or _UNSAID})")
                    parts.append(f"{lv.upper()} level absent: {what}")
            if no_level[r]:
                parts.append("no memory level available: no roofline point")
            if v["no_work"][r]:
                parts.append("no work: 0 FLOP and 0 bytes at every level (idle time or an empty kernel), so no "
                             "roofline point and no bound")
            if v["over"][r]:
                j = int(v["binding_idx"][r])
                name = "compute" if j == 0 else levels[j - 1]
                src = str(peak_src[r]) if j == 0 else self.bw_src[j - 1].text(r)
                if j > 0 and self.bytes_src[j - 1].text(r).startswith("model:"):
                    # bytes from shapes assume every tensor comes from this level; data left in a cache by the
                    # previous op (a residual add's inputs in a 50 MB L2) legitimately beats the roof
                    parts.append(f"above the {name} roof: the bytes are modelled from shapes, as if every tensor "
                                 f"came from {name.upper()}; data still in a cache explains it ({src})")
                else:  # analysis/diagnose.py puts the cause the evidence supports in place of UNEXPLAINED
                    parts.append(f"above the {name} roof: {UNEXPLAINED} ({src})")
            if v["latency"][r]:
                parts.append(LATENCY_NOTE.format(threshold=threshold))
            return "; ".join(parts) or None

        return render_rare([v["latency"], *over.words], rare, keys, self.n, fn)
