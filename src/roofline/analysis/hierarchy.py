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
* Above 100% of a roof is flagged (``over_roof``) with the likely cause, never shown as a win.

Everything is vectorised over columns: no Python loop per row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from roofline.hardware.peaks import LEVELS
from roofline.schema import FLOP_COLUMNS, PRECISIONS, UNAVAILABLE, source_column

LATENCY_THRESHOLD_PCT = 20.0
#: allowance for counter rounding before "above the roof" is flagged
OVER_ROOF_TOLERANCE = 1e-9

BOUNDS = ("compute-bound", "memory-bound", "latency-limited", UNAVAILABLE)

LEVEL_HINTS = {
    "dram": "ncu --section SpeedOfLight_RooflineChart (dram__bytes)",
    "l2": "ncu --section SpeedOfLight_HierarchicalSingleRooflineChart (lts__lts2xbar / lts__t_bytes)",
    "l1": "ncu --section SpeedOfLight_HierarchicalSingleRooflineChart (l1tex__lsu_writeback / l1tex__t_bytes)",
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


def _col(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _text(frame: pd.DataFrame, name: str) -> np.ndarray:
    if name not in frame:
        return np.full(len(frame), "", dtype=object)
    return frame[name].astype(object).where(frame[name].notna(), "").to_numpy(dtype=object)


def _note(mask: np.ndarray, text: object) -> np.ndarray:
    """``text; `` where mask, else empty: notes are built by adding such arrays."""
    return np.where(mask, np.asarray(text, dtype=object) + "; ", "").astype(object)


def hierarchical(
    kernels: pd.DataFrame,
    levels: Sequence[str] = LEVELS,
    latency_threshold_pct: float = LATENCY_THRESHOLD_PCT,
) -> pd.DataFrame:
    """The roofline columns for every row of a kernels frame (same index, same order)."""
    n = len(kernels)
    idx = kernels.index
    notes = np.full(n, "", dtype=object)
    with np.errstate(divide="ignore", invalid="ignore"):
        flops = np.column_stack([_col(kernels, c) for c in FLOP_COLUMNS]) if n else np.empty((0, 4))
        peaks = np.column_stack([_col(kernels, f"peak_flop_per_s_{p}") for p in PRECISIONS]) if n else np.empty((0, 4))
        have = ~np.isnan(flops)
        any_have = have.any(axis=1)
        total = np.where(any_have, np.nansum(flops, axis=1), np.nan)
        partial = any_have & ~have.all(axis=1)
        missing_names = _join_names(~have & any_have[:, None], PRECISIONS)
        notes += _note(partial, "FLOPs are a lower bound: " + missing_names + " unavailable")
        notes += _note(~any_have, "no FLOPs: " + _text(kernels, source_column("flop_fp32")))

        used = have & (flops > 0)
        shares = np.where(total[:, None] > 0, np.nan_to_num(flops) / total[:, None], np.nan)
        n_used = used.sum(axis=1)
        dominant = np.argmax(np.where(used, flops, -1.0), axis=1)
        precision = np.where(n_used == 0, np.where(total == 0, "none", UNAVAILABLE),
                             np.where(n_used == 1, np.array(PRECISIONS, dtype=object)[dominant], "mixed")).astype(object)
        tensor_path = _text(kernels, "tensor_path")
        precision = np.where((precision == "tensor") & (tensor_path != ""), "tensor:" + tensor_path, precision)

        # effective compute peak: Σ F / Σ F_i/P_i over the precisions that did work
        peak_missing = (used & ~(peaks > 0)).any(axis=1)
        t_compute_parts = np.where(used, flops / np.where(peaks > 0, peaks, np.nan), 0.0)
        t_compute_at_peak = np.where(peak_missing, np.nan, t_compute_parts.sum(axis=1))
        peak = np.where(n_used > 0, total / t_compute_at_peak, np.nan)
        peak = np.where(n_used == 1, peaks[np.arange(n), dominant], peak)  # exact, not a round trip
        # no floating-point work: keep the fp32 roof so the point can still be drawn
        peak = np.where((n_used == 0) & (total == 0), peaks[:, 1], peak)
        peak_src = _peak_source(kernels, n_used, dominant, used, total)
        notes += _note((n_used > 0) & peak_missing, "no compute roof for " + _join_names(used & ~(peaks > 0), PRECISIONS)
                       + " (" + _first_source(kernels, used & ~(peaks > 0)) + ")")

        dur = _col(kernels, "duration_s")
        good_dur = dur > 0
        notes += _note(dur == 0, "zero duration: nothing achieved can be computed")
        achieved = np.where(good_dur, total / dur, np.nan)
        util_compute = np.where(peak > 0, achieved / peak, np.nan)

        out: dict[str, np.ndarray] = {"flop_total": total}
        for i, p in enumerate(PRECISIONS):
            out[f"flop_share_{p}"] = shares[:, i]
        out.update(compute_precision=precision, peak_flop_per_s=peak, peak_flop_per_s_source=peak_src,
                   achieved_flop_per_s=achieved, pct_of_peak_flop=util_compute * 100.0)

        ceilings = [np.where(peak > 0, peak, np.nan)]  # compute roof first: ties go to compute
        utils = [np.where(total > 0, util_compute, np.nan)]
        t_roof = [np.where(peak > 0, total / peak, np.nan)]
        level_ok = []
        for lv in levels:
            nbytes = _col(kernels, f"{lv}_bytes")
            bw = _col(kernels, f"peak_{lv}_bytes_per_s")
            ok = (nbytes >= 0) & (bw > 0)
            level_ok.append(ok)
            intensity = np.where(nbytes > 0, total / nbytes, np.where((nbytes == 0) & (total > 0), np.inf, np.nan))
            intensity = np.where(nbytes >= 0, intensity, np.nan)  # negative bytes are flagged at ingest
            bw_ach = np.where(good_dur & (nbytes >= 0), nbytes / dur, np.nan)
            ridge = np.where(bw > 0, peak / bw, np.nan)
            attain = np.where(ok, np.fmin(peak, intensity * bw), np.nan)
            attain = np.where(ok & (intensity == np.inf), peak, attain)
            util = np.where(ok, bw_ach / bw, np.nan)
            out[f"intensity_{lv}_flop_per_byte"] = intensity
            out[f"achieved_{lv}_bytes_per_s"] = bw_ach
            out[f"ridge_{lv}_flop_per_byte"] = ridge
            out[f"attainable_{lv}_flop_per_s"] = attain
            out[f"pct_of_peak_{lv}_bandwidth"] = util * 100.0
            ceilings.append(np.where(ok, np.where(intensity == np.inf, np.inf, intensity * bw), np.nan))
            utils.append(util)
            t_roof.append(np.where(ok, nbytes / bw, np.nan))
            why = np.where(np.isnan(nbytes) | (nbytes < 0), "no " + lv.upper() + " bytes (" + _text(kernels, source_column(f"{lv}_bytes")) + ")",
                           "no " + lv.upper() + " roof (" + _text(kernels, source_column(f"peak_{lv}_bytes_per_s")) + ")")
            notes += _note(~ok, f"{lv.upper()} level absent: " + why)

        names = np.array(["compute", *levels], dtype=object)
        ceil = np.column_stack(ceilings)
        util_all = np.column_stack(utils)
        any_level = np.column_stack(level_ok).any(axis=1) if levels else np.zeros(n, bool)
        with_flops = (total > 0) & (peak > 0) & any_level
        no_flops = (total == 0) & any_level
        ceil_filled = np.where(np.isnan(ceil), np.inf, ceil)
        binding_idx = np.where(with_flops, np.argmin(ceil_filled, axis=1),
                               np.argmax(np.where(np.isnan(util_all), -np.inf, util_all), axis=1))
        attainable = np.where(with_flops, np.min(ceil_filled, axis=1), np.where(no_flops, 0.0, np.nan))
        util_max = np.nanmax(np.where(np.isnan(util_all), -np.inf, util_all), axis=1)
        pct = np.where((with_flops | no_flops) & good_dur & np.isfinite(util_max), util_max * 100.0, np.nan)
        decided = with_flops | (no_flops & ~np.isnan(pct))
        binding = np.where(decided, names[binding_idx], UNAVAILABLE).astype(object)
        bound = np.where(binding == "compute", "compute-bound", "memory-bound").astype(object)
        bound = np.where(decided & (pct < latency_threshold_pct), "latency-limited", bound)
        bound = np.where(decided, bound, UNAVAILABLE)
        notes += _note(any_have & (total > 0) & ~any_level, "no memory level available: no roofline point")
        t_all = np.column_stack(t_roof)
        time_at_roof = np.where(decided, np.nanmax(np.where(np.isnan(t_all), -np.inf, t_all), axis=1), np.nan)
        time_at_roof = np.where(np.isinf(time_at_roof), np.nan, time_at_roof)

        over = decided & (pct > 100.0 * (1 + OVER_ROOF_TOLERANCE))
        roof_src = np.column_stack([peak_src, *(_text(kernels, source_column(f"peak_{lv}_bytes_per_s")) for lv in levels)])
        over_src = roof_src[np.arange(n), binding_idx] if n else roof_src[:, 0]
        notes += _note(over, "above the " + binding + " roof: likely a wrong peak; check the peak source "
                       "(spec vs counters), sparse vs dense, and the clock basis (" + over_src + ")")
        notes += _note(decided & (bound == "latency-limited"),
                       f"under {latency_threshold_pct:g}% of every roof: latency- or occupancy-limited")

    out.update(attainable_flop_per_s=attainable, binding_roof=binding, bound=bound, pct_of_roof=pct,
               time_at_roof_s=time_at_roof, over_roof=over,
               analysis_note=np.array([s[:-2] if s else None for s in notes], dtype=object) if n else notes)
    frame = pd.DataFrame(out, index=idx)
    for c in ("compute_precision", "peak_flop_per_s_source", "binding_roof", "bound", "analysis_note"):
        frame[c] = frame[c].astype("string")
    frame["over_roof"] = frame["over_roof"].astype("boolean")
    return frame[roofline_columns(levels)]


def _join_names(mask: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Per row, the names whose mask is set, joined by '/' (vectorised over rows)."""
    out = np.full(mask.shape[0], "", dtype=object)
    for j, name in enumerate(names):
        sep = np.where(out == "", "", "/")
        out = np.where(mask[:, j], out + sep + name, out)
    return out


def _first_source(kernels: pd.DataFrame, mask: np.ndarray) -> np.ndarray:
    out = np.full(mask.shape[0], "", dtype=object)
    for j, p in reversed(list(enumerate(PRECISIONS))):
        out = np.where(mask[:, j], _text(kernels, source_column(f"peak_flop_per_s_{p}")), out)
    return out


def _peak_source(kernels: pd.DataFrame, n_used: np.ndarray, dominant: np.ndarray, used: np.ndarray,
                 total: np.ndarray) -> np.ndarray:
    srcs = np.column_stack([_text(kernels, source_column(f"peak_flop_per_s_{p}")) for p in PRECISIONS]) \
        if len(kernels) else np.empty((0, 4), dtype=object)
    rows = np.arange(len(kernels))
    single = np.array(PRECISIONS, dtype=object)[dominant] + " — " + srcs[rows, dominant] if len(kernels) else srcs[:, 0]
    mixed = "effective Σ FLOPs / Σ FLOPsᵢ/Peakᵢ over " + _join_names(used, PRECISIONS) + " (shares in flop_share_*)"
    none = "fp32 — " + srcs[:, 1] + " (kernel does no floating-point work)" if len(kernels) else srcs[:, 0]
    return np.where(n_used == 1, single, np.where(n_used > 1, mixed, np.where(total == 0, none, UNAVAILABLE + ": no FLOPs")))
