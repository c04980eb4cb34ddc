"""A comparison as plain dicts (JSON-ready): the answer first, per candidate.

``summary(comp)``: the sides (captures, program time, launches, steps), the normalisation, and per candidate
the program's change, the top regressions and improvements by change of normalised total time (compute
kernels), identities on one side only, the communication kernels apart, and the gate's result when given.
NaN becomes None: a number the profiles do not hold is absent, never 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from roofline.analysis.compare_gate import DEFAULT_FLOOR, Floor
from roofline.analysis.compare_runs import Comparison
from roofline.analysis.identity import BUS_BANDWIDTH

TOP = 10


def _v(x: Any) -> Any:
    if x is None or x is pd.NA:
        return None
    if isinstance(x, float) or hasattr(x, "dtype"):
        try:
            f = float(x)
        except (TypeError, ValueError):
            return str(x)
        if math.isnan(f) or math.isinf(f):
            return None
        return int(f) if f.is_integer() and abs(f) < 2**53 and not isinstance(x, float) else f
    if isinstance(x, (bool, int, str)):
        return x
    return str(x)


def entry(row: pd.Series) -> dict[str, Any]:
    """One identity of one candidate, both sides and the change."""
    out = {"identity": row["identity"], "name": _v(row["identity_name"]), "gpu": _v(row["gpu"]) or None,
           "config": _v(row["config"]), "category": _v(row["category"]), "presence": row["presence"],
           "launches": [_v(row["count_base"]), _v(row["count_cand"])],
           "median_launch_s": [_v(row["median_s_base"]), _v(row["median_s_cand"])],
           "median_launch_spread_s": [[_v(row["median_s_min_base"]), _v(row["median_s_max_base"])],
                                      [_v(row["median_s_min_cand"]), _v(row["median_s_max_cand"])]],
           "time_change_pct": _v(row["median_s_change_pct"]),
           "time_change_interval_pct": [_v(row["median_s_change_pct_lo"]), _v(row["median_s_change_pct_hi"])],
           "total_norm_s": [_v(row["total_norm_s_base"]), _v(row["total_norm_s_cand"])],
           "total_norm_change_s": _v(row["total_norm_change_s"]),
           "share_pct": [_v(row["share_base_pct"]), _v(row["share_cand_pct"])],
           "bound": [_v(row["bound_base"]), _v(row["bound_cand"])],
           "pct_of_roof": [_v(row["pct_of_roof_base"]), _v(row["pct_of_roof_cand"])],
           "bound_moved": bool(row["bound_moved"])}
    if f"{BUS_BANDWIDTH}_base" in row:
        out[BUS_BANDWIDTH] = [_v(row[f"{BUS_BANDWIDTH}_base"]), _v(row[f"{BUS_BANDWIDTH}_cand"])]
    return out


def ranked(table: pd.DataFrame, candidate: str, top: int | None) -> dict[str, list[dict[str, Any]]]:
    """A candidate's compute identities in both profiles: regressions (largest time increase first) and
    improvements (largest decrease first), by change of normalised total time; ``top`` None: all."""
    t = table[(table["candidate"] == candidate) & (table["presence"] == "both") & ~table["communication"].astype(bool)]
    d = pd.to_numeric(t["total_norm_change_s"], errors="coerce")
    reg = t[d > 0].assign(_d=d[d > 0]).sort_values("_d", ascending=False, kind="stable")
    imp = t[d < 0].assign(_d=d[d < 0]).sort_values("_d", ascending=True, kind="stable")
    same = t[d == 0]
    unknown = t[d.isna()]  # a side's total unavailable (a launch without a duration)
    cut = (lambda f: f) if top is None else (lambda f: f.head(top))
    return {"regressions": [entry(r) for _, r in cut(reg).iterrows()],
            "improvements": [entry(r) for _, r in cut(imp).iterrows()],
            "unchanged": len(same), "unknown": [entry(r) for _, r in unknown.iterrows()],
            "regressions_total": len(reg), "improvements_total": len(imp)}


def one_sided(table: pd.DataFrame, candidate: str) -> dict[str, list[dict[str, Any]]]:
    t = table[table["candidate"] == candidate]
    out = {}
    for key, presence, tag in (("baseline_only", "baseline only", "base"), ("candidate_only", "candidate only", "cand")):
        rows = t[t["presence"] == presence].sort_values(f"total_norm_s_{tag}", ascending=False, kind="stable")
        out[key] = [{"identity": r["identity"], "category": _v(r["category"]), "launches": _v(r[f"count_{tag}"]),
                     "total_s": _v(r[f"total_s_{tag}"]), "share_pct": _v(r[f"share_{tag}_pct"])}
                    for _, r in rows.iterrows()]
    return out


def summary(comp: Comparison, top: int | None = TOP, floor: Floor = DEFAULT_FLOOR,
            gate: dict[str, Any] | None = None) -> dict[str, Any]:
    """The comparison, answer first, as plain dicts and lists (JSON-serialisable)."""
    t = comp.table
    cands = []
    for prog in comp.programs:
        label = prog["candidate"]
        mine = t[t["candidate"] == label]
        comm = mine[mine["communication"].astype(bool)].sort_values("total_norm_s_base", ascending=False,
                                                                     na_position="last", kind="stable")
        cands.append({"label": label, "program": {k: _v(v) for k, v in prog.items()},
                      "identities": {p: int((mine["presence"] == p).sum())
                                     for p in ("both", "baseline only", "candidate only")},
                      **ranked(t, label, top), **one_sided(t, label),
                      "communication": [entry(r) for _, r in comm.iterrows()]})
    return {"sides": [{k: (_v(v) if not isinstance(v, list) else [_v(x) for x in v]) for k, v in s.items()}
                      for s in comp.sides],
            "normalisation": comp.normalisation,
            "noise_floor": {"min_share_pct": floor.min_share_pct, "min_change_s": floor.min_change_s},
            "interval": ("percentile bootstrap over captures, 95%, 2000 resamples, seed 0" if
                         any(len(s["runs"]) > 1 for s in comp.sides) else "none (one capture a side)"),
            "candidates": cands, "gate": gate}


def gate_result(rules: Sequence[Any], violations: list[str], unchecked: list[str]) -> dict[str, Any]:
    """The gate as a dict: its rules, the violations and the rules it could not evaluate, the exit code."""
    return {"rules": [r.text for r in rules], "violations": violations, "unevaluated": unchecked,
            "passed": not violations and not unchecked, "exit_code": 4 if violations or unchecked else 0}
