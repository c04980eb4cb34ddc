"""What a profile records about *why* a kernel sits where it does, as kernels-frame columns.

Beside FLOPs and bytes, a full Nsight Compute set records how busy each SM pipe was, how many warps
were resident against how many could be, how many waves the grid made, what the warps stalled on, and
ncu's own guided analysis (rule results with an estimated speedup). The readers hand the raw values
here; the analysis (``analysis/diagnose.py``) reads the columns. Everything travels inside the frame
(compact JSON text where a launch has a variable number of entries), never beside it.

Metric names (ncu ≥ 2019.5, Volta to Blackwell; ``docs/analysis.md`` lists them per architecture):

* pipes: ``sm__inst_executed_pipe_<pipe>.avg.pct_of_peak_sustained_active`` (instructions issued to
  the pipe, % of its peak issue rate: ncu's "% of peak instructions executed") and
  ``sm__pipe_<pipe>_cycles_active.avg.pct_of_peak_sustained_active`` (cycles the pipe was busy: ncu's
  "% of active cycles", which counts a multi-cycle instruction once per cycle);
* occupancy: ``sm__warps_active.avg.pct_of_peak_sustained_active`` (achieved) and
  ``sm__maximum_warps_per_active_cycle_pct`` (theoretical); waves: ``launch__waves_per_multiprocessor``;
* stalls: ``smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`` (warps stalled on the
  reason per issued instruction: ncu's Warp State Statistics).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

PIPE_METRIC = re.compile(r"^sm__(?:inst_executed_pipe_(\w+?)|pipe_(\w+?)_cycles_active)\.avg\.pct_of_peak_sustained_active$")
STALL_METRIC = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")
ACHIEVED_OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
THEORETICAL_OCCUPANCY = "sm__maximum_warps_per_active_cycle_pct"
WAVES = "launch__waves_per_multiprocessor"
_EXACT = frozenset((ACHIEVED_OCCUPANCY, THEORETICAL_OCCUPANCY, WAVES))

#: ncu_report's MsgType and SpeedupType values, as words
MESSAGE_TYPES = {0: "none", 1: "ok", 2: "optimization", 3: "warning", 4: "error"}
SPEEDUP_TYPES = {0: "unknown", 1: "local", 2: "global"}


def is_evidence(name: str) -> bool:
    """A raw metric this module reads (kept apart from the FLOP/byte metrics, whose NaN count flags a replay)."""
    return name in _EXACT or PIPE_METRIC.match(name) is not None or STALL_METRIC.match(name) is not None


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _compact(values: Mapping[str, float]) -> str | None:
    return json.dumps(dict(values), separators=(",", ":")) if values else None


def evidence(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The evidence columns of one launch from its raw metrics (``is_evidence`` names). A NaN value (a
    replay that did not complete) is left out, never written as 0; nothing recorded is NA/NaN."""
    pipes = {n: v for n in sorted(raw) if PIPE_METRIC.match(n) and (v := _number(raw[n])) is not None}
    stalls = {m.group(1): v for n in sorted(raw) if (m := STALL_METRIC.match(n)) and (v := _number(raw[n])) is not None}
    out: dict[str, Any] = {"pipe_pct_json": _compact(pipes), "warp_stalls_json": _compact(stalls)}
    for col, name in (("achieved_occupancy_pct", ACHIEVED_OCCUPANCY), ("theoretical_occupancy_pct", THEORETICAL_OCCUPANCY),
                      ("waves_per_sm", WAVES)):
        v = _number(raw.get(name))
        out[col] = math.nan if v is None else v
    return out


def rules_json(results: Iterable[Mapping[str, Any]]) -> str | None:
    """ncu's rule results (``IAction.rule_results_as_dicts()``) as compact JSON: per result the rule, its
    section, title (the rule's name where the message has none), message, type, estimated speedup (% and
    local/global) and focus metrics; a speedup the report does not give is null, never 0."""
    out = []
    for r in results:
        msg = r.get("rule_message") or {}
        est = r.get("speedup_estimation") or {}
        focus = [{"metric": str(f.get("name", "")), "value": _number(f.get("value")), "info": str(f.get("info") or "")}
                 for f in r.get("focus_metrics") or ()]
        out.append({
            "rule": str(r.get("rule_identifier", "")),
            "name": str(r.get("name", "")),
            "section": str(r.get("section_identifier", "")),
            "title": str(msg.get("title") or ""),
            "type": MESSAGE_TYPES.get(int(msg.get("type") or 0), "none"),
            "message": str(msg.get("message") or ""),
            "speedup_pct": _number(est.get("speedup")) if est else None,
            "speedup_type": SPEEDUP_TYPES.get(int(est.get("type") or 0), "unknown") if est else None,
            "focus": focus,
        })
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False) if out else None


__all__ = ["PIPE_METRIC", "STALL_METRIC", "evidence", "is_evidence", "rules_json"]
