"""Compare by identity: a baseline and N candidates, each one or several captures of the same program.

Each capture is summed per kernel identity (``analysis/identity.py``). Per side and identity, every quantity is
the median over the side's captures of that capture's value (a capture's time of an identity is the median of
its launches). Per candidate and identity, the change against the baseline, with a confidence interval when a
side has several captures: a **percentile bootstrap over captures** (each side's captures resampled with
replacement, the change of the medians recomputed; fixed seed, so the same inputs give the same interval).

Totals (an identity's time, the program's time) are compared only normalised, because captures differ in
length: **per step** where every capture records training steps (ProfilerStep#N / NVTX step ranges), else
**per launch** (scaled to the baseline's launch count) where the launch counts differ, else as they are.
The normalisation used is in :attr:`Comparison.normalisation` and said in every output.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from roofline.analysis.identity import BUS_BANDWIDTH, RunTotals, display, per_run, totals
from roofline.hardware.peaks import LEVELS

#: quantities compared per identity: (column in the table, how the change is measured)
RELATIVE = ("median_s", "flop_per_launch", "achieved_flop_per_s")
SEED = 0
RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a label and its captures (label, analysed frame), one or several."""

    label: str
    runs: Sequence[tuple[str, pd.DataFrame]]


@dataclass
class Comparison:
    """The per-identity table of every candidate against the baseline, and the programs as a whole."""

    table: pd.DataFrame  # one row per (candidate, identity): both sides' values and the changes
    sides: list[dict]  # per side: label, runs, program time, launches, steps (medians over its runs)
    programs: list[dict]  # per candidate: the program's change against the baseline
    normalisation: str  # "per step", "per launch" or "none"
    levels: tuple[str, ...] = ()
    per_side: list[pd.DataFrame] = field(default_factory=list)  # per side: identity rows with run spread
    launch_medians: list[pd.DataFrame] = field(default_factory=list)  # per side: identity x capture median launch s


def _normalisation(all_totals: list[list[RunTotals]], how: str) -> str:
    runs = [t for side in all_totals for t in side]
    if how != "auto":
        if how == "step" and any(t.steps == 0 for t in runs):
            raise ValueError("normalise per step: a capture records no training step (ProfilerStep#N / NVTX step)")
        return {"step": "per step", "launch": "per launch", "none": "none"}[how]
    if all(t.steps > 0 for t in runs):
        return "per step"
    if len({t.launches for t in runs}) > 1:
        return "per launch"
    return "none"


def _factor(t: RunTotals, how: str, ref_launches: float) -> float:
    if how == "per step":
        return 1.0 / t.steps
    if how == "per launch":
        return ref_launches / t.launches if t.launches else float("nan")
    return 1.0


def _stack(runs: list[pd.DataFrame], ids: pd.Index, col: str) -> np.ndarray:
    """(identities × captures) of one column; NaN where a capture lacks the identity."""
    return np.column_stack([pd.to_numeric(r[col], errors="coerce").reindex(ids).to_numpy(dtype=float)
                            if col in r else np.full(len(ids), np.nan) for r in runs])


def _median(x: np.ndarray) -> np.ndarray:
    """The median over the last axis, NaN left out (NaN where all are): sorted, not ``np.nanmedian``, which
    is slow on the bootstrap's many short rows (a capture or two per side)."""
    if x.shape[-1] == 0:
        return np.full(x.shape[:-1], np.nan)
    s = np.sort(x, axis=-1)  # NaN sorts last
    k = np.sum(~np.isnan(x), axis=-1)
    lo = np.take_along_axis(s, np.maximum((k - 1) // 2, 0)[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(s, np.minimum(k // 2, s.shape[-1] - 1)[..., None], axis=-1)[..., 0]
    return (lo + hi) / 2.0


def _change(b: np.ndarray, c: np.ndarray, relative: bool) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (c - b) / b * 100.0 if relative else c - b
    return np.where((b == c) & np.isfinite(b), 0.0, out)


def _interval(xb: np.ndarray, xc: np.ndarray, relative: bool, rng_idx: tuple[np.ndarray, np.ndarray] | None
              ) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap interval of the change of medians (both ends the point when each side has one capture)."""
    point = _change(_median(xb), _median(xc), relative)
    if rng_idx is None:
        return point, point
    ib, ic = rng_idx
    mb, mc = _median(xb[:, ib]), _median(xc[:, ic])  # (identities × resamples)
    ch = _change(mb, mc, relative)
    a = (1.0 - CONFIDENCE) / 2 * 100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanpercentile(ch, [a, 100 - a], axis=1)
    # the point is inside its own interval (a bootstrap of 2 captures can miss it by rounding)
    return np.fmin(lo, point), np.fmax(hi, point)


def _side_frame(runs: list[pd.DataFrame], ids: pd.Index, factors: list[float], levels: Sequence[str]) -> pd.DataFrame:
    """One side per identity: medians over captures, the spread of the launch time, what is categorical."""
    out = pd.DataFrame(index=ids)
    for r in runs:
        r["flop_per_launch"] = pd.to_numeric(r["flop_total"], errors="coerce") / r["count"]
        for lv in levels:
            if f"{lv}_bytes" in r:
                r[f"{lv}_bytes_per_launch"] = pd.to_numeric(r[f"{lv}_bytes"], errors="coerce") / r["count"]
    m = _stack(runs, ids, "median_s")
    count = _stack(runs, ids, "count")
    absent = np.isnan(count)  # a capture without the identity: 0 launches and 0 s of it, not unknown
    total = np.where(absent, 0.0, _stack(runs, ids, "total_s"))
    out["runs_present"] = (~absent).sum(axis=1)
    out["count"] = _median(np.where(absent, 0.0, count))
    out["total_s"] = _median(total)
    out["total_norm_s"] = _median(total * np.asarray(factors)[None, :])
    out["median_s"] = _median(m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out["median_s_min"], out["median_s_max"] = np.nanmin(m, axis=1), np.nanmax(m, axis=1)
        a = _stack(runs, ids, "achieved_flop_per_s")  # the spread of the roofline point across captures
        out["achieved_flop_per_s_min"], out["achieved_flop_per_s_max"] = np.nanmin(a, axis=1), np.nanmax(a, axis=1)
    for col in ("flop_total", "flop_per_launch", "achieved_flop_per_s", "pct_of_roof",
                *(f"{lv}_bytes" for lv in levels), *(f"{lv}_bytes_per_launch" for lv in levels),
                *(f"intensity_{lv}_flop_per_byte" for lv in levels), BUS_BANDWIDTH):
        if col == BUS_BANDWIDTH and not any(col in r for r in runs):
            continue
        out[col] = _median(_stack(runs, ids, col))
    for col in ("bound", "binding_roof", "category", "identity_name", "gpu", "config"):
        vals = pd.concat([r[col].reindex(ids) for r in runs if col in r], axis=1)
        out[col] = vals.bfill(axis=1).iloc[:, 0] if len(vals.columns) else pd.NA
    return out


def compare_sides(sides: Sequence[Side], levels: Sequence[str] = LEVELS, mapping: Mapping[str, str] | None = None,
                  config: bool = True, normalise: str = "auto", seed: int = SEED,
                  resamples: int = RESAMPLES) -> Comparison:
    """Every candidate side against the first (the baseline), identity by identity."""
    if len(sides) < 2:
        raise ValueError("a comparison needs a baseline and at least one candidate")
    levels = tuple(levels)
    seen: dict[str, int] = {}
    for i, s in enumerate(sides):  # a side named twice (the same file as two candidates) keeps its rows apart
        seen[s.label] = seen.get(s.label, 0) + 1
        if seen[s.label] > 1:
            sides = [*sides[:i], Side(f"{s.label} ({seen[s.label]})", s.runs), *sides[i + 1:]]
    rows = [[per_run(f, levels, mapping if i else None, config) for _, f in s.runs] for i, s in enumerate(sides)]
    tots = [[totals(f, label) for label, f in s.runs] for s in sides]
    how = _normalisation(tots, normalise)
    ref = float(np.median([t.launches for t in tots[0]]))
    factors = [[_factor(t, how, ref) for t in side] for side in tots]
    ids = pd.Index(pd.unique(np.concatenate([r.index.to_numpy() for side in rows for r in side])), name="identity")
    frames = [_side_frame(side, ids, f, levels) for side, f in zip(rows, factors)]
    side_info = []
    for s, side_t, f in zip(sides, tots, factors):
        t = np.array([x.time_s for x in side_t])
        side_info.append({"label": s.label, "runs": [x.label for x in side_t],
                          "time_s": float(np.median(t)), "time_norm_s": float(np.median(t * np.asarray(f))),
                          "launches": float(np.median([x.launches for x in side_t])),
                          "steps": float(np.median([x.steps for x in side_t])),
                          "time_norm_s_each": [float(x) for x in t * np.asarray(f)]})
    rng = np.random.default_rng(seed)
    nb = len(sides[0].runs)
    base = frames[0]
    show_gpu = base["gpu"].astype("string").fillna("").nunique() > 1 or any(
        f["gpu"].astype("string").fillna("").nunique() > 1 for f in frames[1:])
    tables, programs = [], []
    for k, (side, cand) in enumerate(zip(sides[1:], frames[1:]), 1):
        nc = len(side.runs)
        idx = None if nb == 1 and nc == 1 else (rng.integers(0, nb, (resamples, nb)), rng.integers(0, nc, (resamples, nc)))
        t = pd.DataFrame(index=ids)
        t["candidate"] = side.label
        for col in ("identity_name", "gpu", "config", "category"):
            t[col] = base[col].fillna(cand[col])
        t["communication"] = (t["category"] == "communication").fillna(False).astype(bool)
        present_b, present_c = base["runs_present"] > 0, cand["runs_present"] > 0
        t["presence"] = np.where(present_b & present_c, "both", np.where(present_b, "baseline only", "candidate only"))
        for col in base.columns.difference(["identity_name", "gpu", "config", "category"], sort=False):
            t[f"{col}_base"] = base[col]
            t[f"{col}_cand"] = cand[col]
        for col, relative in ((*[(c, True) for c in RELATIVE],
                               *[(f"{lv}_bytes_per_launch", True) for lv in levels], ("pct_of_roof", False))):
            xb = _stack(rows[0], ids, col) if col in rows[0][0] else np.full((len(ids), nb), np.nan)
            xc = _stack(rows[k], ids, col) if col in rows[k][0] else np.full((len(ids), nc), np.nan)
            lo, hi = _interval(xb, xc, relative, idx)
            name = f"{col}_change_{'pct' if relative else 'pts'}"
            t[name] = _change(t[f"{col}_base"].to_numpy(float), t[f"{col}_cand"].to_numpy(float), relative)
            t[f"{name}_lo"], t[f"{name}_hi"] = lo, hi
        t["median_s_change_s"] = t["median_s_cand"] - t["median_s_base"]
        # an identity on one side only changed by its whole time; in both with a time unknown on a side: unknown
        one_sided = (t["presence"] != "both").to_numpy()
        t["total_norm_change_s"] = np.where(one_sided, t["total_norm_s_cand"].fillna(0) - t["total_norm_s_base"].fillna(0),
                                            t["total_norm_s_cand"] - t["total_norm_s_base"])
        pb, pc = side_info[0]["time_norm_s"], side_info[k]["time_norm_s"]
        # a program time unavailable (a launch without a duration): shares of the time that is known
        pb = pb if np.isfinite(pb) else float(np.nansum(t["total_norm_s_base"]))
        pc = pc if np.isfinite(pc) else float(np.nansum(t["total_norm_s_cand"]))
        t["share_base_pct"] = t["total_norm_s_base"] / pb * 100.0
        t["share_cand_pct"] = t["total_norm_s_cand"] / pc * 100.0
        rb, rc = t["binding_roof_base"].astype("string"), t["binding_roof_cand"].astype("string")
        known = rb.notna() & rc.notna() & (rb != "unavailable") & (rc != "unavailable")
        t["bound_moved"] = ((t["presence"] == "both") & known.fillna(False) & (rb != rc).fillna(False)).astype(bool)
        t["identity"] = [display(n, g, c, show_gpu, True) for n, g, c in
                         zip(t["identity_name"].fillna(""), t["gpu"].fillna(""), t["config"].fillna(""))]
        tables.append(t.reset_index(names="key"))
        programs.append(_program(side_info[0], side_info[k], idx))
    table = pd.concat(tables, ignore_index=True)
    lead = ["candidate", "identity", "presence", "category", "communication"]
    table = table[[*lead, *[c for c in table.columns if c not in lead]]]
    medians = [pd.DataFrame(_stack(side, ids, "median_s"), index=ids, columns=[x.label for x in t])
               for side, t in zip(rows, tots)]
    return Comparison(table, side_info, programs, how, levels, frames, medians)


def _program(b: dict, c: dict, idx: tuple[np.ndarray, np.ndarray] | None) -> dict:
    tb, tc = b["time_s"], c["time_s"]
    nb_, nc_ = b["time_norm_s"], c["time_norm_s"]
    out = {"candidate": c["label"], "time_base_s": tb, "time_cand_s": tc,
           "time_change_pct": float(_change(np.array([tb]), np.array([tc]), True)[0]),
           "time_norm_base_s": nb_, "time_norm_cand_s": nc_,
           "time_norm_change_pct": float(_change(np.array([nb_]), np.array([nc_]), True)[0]),
           "launches_base": b["launches"], "launches_cand": c["launches"], "steps_base": b["steps"],
           "steps_cand": c["steps"]}
    out["time_norm_change_pct_lo"] = out["time_norm_change_pct_hi"] = out["time_norm_change_pct"]
    if idx is not None:
        fb, fc = np.array(b["time_norm_s_each"]), np.array(c["time_norm_s_each"])
        lo, hi = _interval(fb[None, :], fc[None, :], True, idx)
        out["time_norm_change_pct_lo"], out["time_norm_change_pct_hi"] = float(lo[0]), float(hi[0])
    return out


def spread(runs: Sequence[tuple[str, pd.DataFrame]], levels: Sequence[str] = LEVELS) -> pd.DataFrame:
    """Several captures of one program (``roofline analyze --runs``): per identity the captures it is in, its
    median launch time over them with the min and max and their spread in % of the median, its median total
    time and share of the program, FLOP/s and % of roof; longest total first."""
    rows = [per_run(f, levels) for _, f in runs]
    ids = pd.Index(pd.unique(np.concatenate([r.index.to_numpy() for r in rows])), name="identity")
    side = _side_frame(rows, ids, [1.0] * len(rows), levels)
    program = float(np.median([totals(f, label).time_s for label, f in runs]))
    show_gpu = side["gpu"].astype("string").fillna("").nunique() > 1
    out = pd.DataFrame({
        "identity": [display(n, g, c, show_gpu, True) for n, g, c in
                     zip(side["identity_name"].fillna(""), side["gpu"].fillna(""), side["config"].fillna(""))],
        "category": side["category"].to_numpy(), "captures": side["runs_present"].to_numpy(),
        "launches": side["count"].to_numpy(), "median_s": side["median_s"].to_numpy(),
        "median_s_min": side["median_s_min"].to_numpy(), "median_s_max": side["median_s_max"].to_numpy()})
    with np.errstate(divide="ignore", invalid="ignore"):
        out["spread_pct"] = (out["median_s_max"] - out["median_s_min"]) / out["median_s"] * 100.0
        out["total_s"] = side["total_s"].to_numpy()
        out["share_pct"] = out["total_s"] / program * 100.0
    for c in ("achieved_flop_per_s", "achieved_flop_per_s_min", "achieved_flop_per_s_max", "pct_of_roof", "bound"):
        out[c] = side[c].to_numpy()
    return out.sort_values("total_s", ascending=False, na_position="last", kind="stable").reset_index(drop=True)
