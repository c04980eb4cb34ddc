"""The CI gate of ``roofline compare`` over identities, and the comparison as plain dicts (the ``summary``).

A rule acts on the identities above the **noise floor**: at least ``min_share_pct`` of the program's time
(normalised, on either side; default 1%; of the time that is known when a launch has no duration; an identity
whose time is unknown on a side is not known to be under it) and, for time rules, a per-launch change of at least ``min_change_s``
(default 0.1 µs). ``time`` and the other per-identity rules leave communication kernels out (their time
includes waiting for peers); ``comm_time`` acts on them alone. With several captures a side, a rule is
broken only when the whole confidence interval of the change is past the threshold (``time>5%``: its lower
end above +5%); with one capture a side, the point change is all there is.

A rule that cannot be evaluated fails the gate too (see :func:`unevaluated`), so that a gate never passes on
numbers it did not see.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from roofline.analysis.compare import Rule
from roofline.analysis.compare_runs import Comparison

MIN_SHARE_PCT = 1.0
MIN_CHANGE_S = 1e-7

RULE_HELP = (
    "rules: METRIC>N% or METRIC<-N% on time (per-launch median of a compute kernel identity), comm_time (the "
    "same for communication kernels), flop, achieved, dram_bytes, l2_bytes, l1_bytes, lds_bytes (per launch); "
    "roof<-N (change of % of roof, in points); total_time>N% (whole program, normalised per step or launch); "
    "bound (an identity's binding roof moved); vanished; new. Separate rules with commas."
)
#: rule metric -> (change column of the table, relative)
METRICS = {"time": ("median_s_change_pct", True), "comm_time": ("median_s_change_pct", True),
           "flop": ("flop_per_launch_change_pct", True), "achieved": ("achieved_flop_per_s_change_pct", True),
           "roof": ("pct_of_roof_change_pts", False),
           **{f"{lv}_bytes": (f"{lv}_bytes_per_launch_change_pct", True) for lv in ("dram", "l2", "l1", "lds")}}


@dataclass(frozen=True)
class Floor:
    """The noise floor: what a rule ignores."""

    min_share_pct: float = MIN_SHARE_PCT
    min_change_s: float = MIN_CHANGE_S


DEFAULT_FLOOR = Floor()


def parse_rules(text: str) -> list[Rule]:
    """The --fail-on rules of the identity gate (the launch gate's parser with this gate's metrics)."""
    from roofline.analysis.compare import parse_rules as parse

    return parse(text, METRICS, RULE_HELP)


def in_scope(table: pd.DataFrame, metric: str, floor: Floor) -> pd.DataFrame:
    """The rows a rule acts on: its kind of kernel (communication or not), above the share floor."""
    comm = table["communication"].astype(bool)
    rows = table[comm] if metric == "comm_time" else table[~comm]
    sb, sc = rows["share_base_pct"].to_numpy(float), rows["share_cand_pct"].to_numpy(float)
    unknown = np.isnan(sb) | np.isnan(sc)  # a time unknown on a side: not known to be under the floor
    return rows[(np.fmax(np.nan_to_num(sb), np.nan_to_num(sc)) >= floor.min_share_pct) | unknown]


def _crosses(lo: float, hi: float, r: Rule) -> bool:
    if r.threshold is None or any(v is None or math.isnan(v) for v in (lo, hi)):
        return False
    return lo > r.threshold if r.op == ">" else hi < r.threshold


def _interval_text(lo: float, hi: float, unit: str, runs: str) -> str:
    if lo == hi:
        return f"one capture a side: no interval{runs}"
    return f"{CONFIDENCE_PCT}% interval {lo:+.1f}{unit} … {hi:+.1f}{unit}{runs}"


CONFIDENCE_PCT = 95


def gate(comp: Comparison, rules: Sequence[Rule], floor: Floor = DEFAULT_FLOOR) -> list[str]:
    """The violations, one line each (empty: the gate passes)."""
    out = []
    t = comp.table
    for r in rules:
        for prog in comp.programs:
            cand = t[t["candidate"] == prog["candidate"]]
            runs = f", {len(comp.sides[0]['runs'])} vs {_runs(comp, prog['candidate'])} captures"
            if r.metric == "total_time":
                lo, hi = prog["time_norm_change_pct_lo"], prog["time_norm_change_pct_hi"]
                if _crosses(lo, hi, r):
                    out.append(f"{r.text}: whole program time {comp.normalisation} changed "
                               f"{prog['time_norm_change_pct']:+.2f}% ({_interval_text(lo, hi, '%', runs)})")
                continue
            if r.metric in ("vanished", "new"):
                side = "baseline only" if r.metric == "vanished" else "candidate only"
                rows = in_scope(cand[cand["presence"] == side], "time", floor)
                rows = pd.concat([rows, in_scope(cand[cand["presence"] == side], "comm_time", floor)])
                share = "share_base_pct" if r.metric == "vanished" else "share_cand_pct"
                out += [f"{r.text}: {k} (" + ("its time unavailable" if math.isnan(s) else f"{s:.1f}% of program time") + ")"
                        for k, s in zip(rows["identity"], rows[share].astype(float))]
                continue
            rows = in_scope(cand[cand["presence"] == "both"], r.metric if r.metric == "comm_time" else "time", floor)
            if r.metric == "bound":
                rows = rows[rows["bound_moved"]]
                out += [f"{r.text}: {k} moved from {a} to {b}" for k, a, b in
                        zip(rows["identity"], rows["binding_roof_base"], rows["binding_roof_cand"])]
                continue
            col, relative = METRICS[r.metric]
            if r.metric in ("time", "comm_time"):
                rows = rows[rows["median_s_change_s"].abs() >= floor.min_change_s]
            unit = "%" if relative else " pts"
            for _, row in rows.iterrows():
                lo, hi = float(row[f"{col}_lo"]), float(row[f"{col}_hi"])
                if _crosses(lo, hi, r):
                    what = "per-launch median" if r.metric in ("time", "comm_time") else "per launch"
                    out.append(f"{r.text}: {row['identity']} {what} {row[col]:+.1f}{unit} "
                               f"({_interval_text(lo, hi, unit, runs)}; {max(_f(row['share_base_pct']), _f(row['share_cand_pct'])):.1f}% "
                               f"of program time)")
    return out


def _f(v: object) -> float:
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(x) else x


def _runs(comp: Comparison, label: str) -> int:
    return next(len(s["runs"]) for s in comp.sides[1:] if s["label"] == label)


def unevaluated(comp: Comparison, rules: Sequence[Rule], floor: Floor = DEFAULT_FLOOR) -> list[str]:
    """Rules the gate could not check, one line each: they fail it too.

    A numeric rule cannot be evaluated when no identity of its kind (compute or communication) is in both
    profiles, when its quantity is unavailable for every such identity, or when an identity above the
    floor has it on one side only (the candidate lost a counter the baseline had)."""
    out = []
    t = comp.table
    for r in rules:
        if r.metric in ("bound", "vanished", "new"):
            continue
        for prog in comp.programs:
            cand = t[t["candidate"] == prog["candidate"]]
            if r.metric == "total_time":
                if math.isnan(prog["time_norm_change_pct"]):
                    out.append(f"{r.text}: a program's kernel time is unavailable (a launch without a duration)")
                continue
            kind = "communication" if r.metric == "comm_time" else "compute"
            comm = cand["communication"].astype(bool)
            both = cand[(cand["presence"] == "both") & (comm if r.metric == "comm_time" else ~comm)]
            if both.empty:
                out.append(f"{r.text}: no {kind} kernel identity is in both profiles"
                           + ("" if kind == "communication" else " (pair renamed kernels with --map FILE)"))
                continue
            col, _ = METRICS[r.metric]
            q = col.removesuffix("_change_pct").removesuffix("_change_pts")
            b = pd.to_numeric(both[f"{q}_base"], errors="coerce")
            c = pd.to_numeric(both[f"{q}_cand"], errors="coerce")
            if (b.notna() | c.notna()).sum() == 0:
                out.append(f"{r.text}: {q} is unavailable for every {kind} identity in both profiles")
                continue
            one_side = (b.notna() != c.notna()).to_numpy()
            scoped = one_side & both.index.isin(in_scope(both, r.metric if r.metric == "comm_time" else "time", floor).index)
            lost = both.loc[scoped if scoped.any() or (b.notna() & c.notna()).any() else one_side, "identity"]
            if len(lost):
                shown = ", ".join(lost.astype(str).tolist()[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
                out.append(f"{r.text}: {q} known in one profile only for {len(lost)} identity(ies): {shown}")
    return out
