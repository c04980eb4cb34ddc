"""``roofline compare`` on a terminal: the answer first, one screen by default.

Per candidate: the program's time before → after and its change (raw, and normalised per step or launch);
the top regressions and improvements (compute kernels, by change of normalised total time) each with its
per-launch change, interval, share and roof shift; identities on one side only, one line each; the
communication kernels apart; then the gate. Identity names are whole, in the last column.
"""

from __future__ import annotations

import math
from typing import Any

from roofline.report.table import _si

_MORE = "the full table: --all, --out FILE (.csv/.parquet), --format json, --html FILE"


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _t(v: Any) -> str:
    f = _num(v)
    return "n/a" if math.isnan(f) else _si(f, "s")


def _pct(v: Any, digits: int = 1) -> str:
    f = _num(v)
    return "n/a" if math.isnan(f) else f"{f:+.{digits}f}%"


def _dt(v: Any) -> str:
    f = _num(v)
    return "n/a" if math.isnan(f) else ("+" if f > 0 else "") + _si(f, "s")


def _interval(e: dict[str, Any]) -> str:
    lo, hi = e["time_change_interval_pct"]
    if lo is None or hi is None or lo == hi:
        return ""
    return f" [{lo:+.1f}…{hi:+.1f}]"


def _roof(e: dict[str, Any]) -> str:
    b, c = e["bound"]
    pb, pc = e["pct_of_roof"]
    if b in (None, "unavailable") and c in (None, "unavailable"):
        return "no roof"
    out = f"{b or '-'} → {c or '-'}"
    if pb is not None and pc is not None:
        out += f" ({pb:.0f}→{pc:.0f}% roof)"
    return out + (" moved" if e["bound_moved"] else "")


def _row(e: dict[str, Any]) -> list[str]:
    mb, mc = e["median_launch_s"]
    share = max(x for x in (*e["share_pct"], 0.0) if x is not None)
    return [_dt(e["total_norm_change_s"]), f"{_t(mb)} → {_t(mc)}", _pct(e["time_change_pct"]) + _interval(e),
            f"{share:.1f}%", _roof(e), e["identity"]]


_HEAD = ["Δ total", "per launch (median)", "Δ per launch", "share", "roof (bound, % of roof)", "identity"]


def _table(entries: list[dict[str, Any]], indent: str = "  ") -> list[str]:
    rows = [_HEAD, *(_row(e) for e in entries)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEAD) - 1)]
    return [indent + "  ".join(c.rjust(w) if i in (0, 2, 3) else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
            + "  " + r[-1] for r in rows]


def render(s: dict[str, Any], top: int | None) -> str:
    """The summary (``analysis/compare_summary.summary``) as terminal lines."""
    lines = []
    base = s["sides"][0]
    floor = s["noise_floor"]
    for c, side in zip(s["candidates"], s["sides"][1:]):
        p = c["program"]
        lines.append(f"{base['label']} → {c['label']} ({len(base['runs'])} vs {len(side['runs'])} capture(s))")
        lines.append(f"  program time: {_t(p['time_base_s'])} → {_t(p['time_cand_s'])} ({_pct(p['time_change_pct'])})")
        if s["normalisation"] == "per step":
            how = f"per step ({p['steps_base']:g} vs {p['steps_cand']:g} steps)"
        elif s["normalisation"] == "per launch":
            how = (f"per launch, scaled to the baseline's count ({p['launches_base']:,.0f} vs {p['launches_cand']:,.0f} "
                   "launches: the captures differ in length)")
        else:
            how = f"not normalised (same launch count, {p['launches_base']:,.0f}; no step ranges)"
        iv = ""
        if p["time_norm_change_pct_lo"] != p["time_norm_change_pct_hi"]:
            iv = f" [{p['time_norm_change_pct_lo']:+.1f}…{p['time_norm_change_pct_hi']:+.1f}]"
        lines.append(f"  totals compared {how}: {_t(p['time_norm_base_s'])} → {_t(p['time_norm_cand_s'])} "
                     f"({_pct(p['time_norm_change_pct'])}{iv})")
        n = c["identities"]
        lines.append(f"  identities: {n['both']} in both, {n['baseline only']} baseline only, {n['candidate only']} "
                     f"candidate only; noise floor: {floor['min_share_pct']:g}% of program time, "
                     f"{_si(floor['min_change_s'], 's')} per launch; intervals: {s['interval']}")
        if n["both"] == 0:
            lines.append("  nothing matched: are these the same program? pair renamed kernels with --map FILE")
        for key, word in (("regressions", "slower"), ("improvements", "faster")):
            shown, total = c[key], c[f"{key}_total"]
            what = f"top {len(shown)} of {total}" if len(shown) < total else f"{total}"
            lines.append(f"{word} ({what} compute identities, by Δ of normalised total time):")
            lines += _table(shown) if shown else ["  (none)"]
        if c["unchanged"]:
            lines.append(f"unchanged: {c['unchanged']} compute identities (the same normalised total time)")
        if c["unknown"]:
            cut = c["unknown"] if top is None else c["unknown"][:top]
            lines.append(f"total time unavailable on a side ({len(c['unknown'])} identities: a launch without a duration):")
            lines += _table(cut)
        for key, word, tag in (("baseline_only", "only in the baseline", "vanished"),
                               ("candidate_only", "only in the candidate", "new")):
            items = c[key]
            if not items:
                continue
            cut = items if top is None else items[:top]
            lines.append(f"{word} ({len(items)}, rule '{tag}'):")
            lines += [f"  {_t(e['total_s'])} ({e['share_pct'] or 0:.1f}%), {e['launches'] or 0:g} launch(es)  {e['identity']}"
                      for e in cut]
            if len(cut) < len(items):
                lines.append(f"  … {len(items) - len(cut)} more")
        comm = c["communication"]
        if comm:
            cut = comm if top is None else comm[:top]
            lines.append(f"communication ({len(comm)} identities; their time includes waiting for peers: gated only "
                         "by comm_time rules):")
            lines += _table(cut)
            bw = [e for e in cut if any(x is not None for x in e.get("bus_bandwidth_bytes_per_s", ()))]
            lines += [f"  bus bandwidth {_si(e['bus_bandwidth_bytes_per_s'][0] or math.nan, 'B/s')} → "
                      f"{_si(e['bus_bandwidth_bytes_per_s'][1] or math.nan, 'B/s')}  {e['identity']}" for e in bw]
    g = s.get("gate")
    if g:
        verdict = "passed" if g["passed"] else (f"failed: {len(g['violations'])} violation(s)"
                                                + (f", {len(g['unevaluated'])} rule(s) not evaluable" if g["unevaluated"] else ""))
        lines.append(f"gate --fail-on '{','.join(g['rules'])}': {verdict} (exit {g['exit_code']})")
    if top is not None:
        lines.append(_MORE)
    return "\n".join(lines)
