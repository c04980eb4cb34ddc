"""Pipe ceilings and Nsight Compute's own findings, from the evidence columns a profile records.

Pipes (``pipe_pct_json``, see ``metrics/evidence.py``): a pipe's utilisation is the higher of its two ncu
measures, instructions issued (``sm__inst_executed_pipe_<p>``) and cycles busy (``sm__pipe_<p>_cycles_active``),
both ``.avg.pct_of_peak_sustained_active``, as ncu's Compute Workload Analysis charts them; AMD rows carry
rocprof-compute's VALU/MFMA/SALU utilisations and its LDS bandwidth % of peak. The **binding pipe** is the
busiest (ties go to the pipe over its sub-pipes: ``tensor`` before ``tensor_op_hmma``, and to a pipe over
Turing/Ampere's ``shared`` pipe), **co-critical** pipes are within ``CO_CRITICAL_POINTS`` of it (another
family's: a sub-pipe of the binding pipe is the same limit). At 100 % the binding pipe caps the kernel's
FLOP/s at achieved × 100 / its % (the **pipe ceiling**: the same instruction mix, the pipe saturated); it
binds below the FLOP roof when that is under the compute peak and the pipe is at least ``PIPE_BOUND_PCT``
busy (a pipe at 5 % says nothing about a limit).

Findings (``ncu_rules_json``): every rule result of every launch as a tidy long table, ranked across the
profile by estimated time saved = estimated speedup × the launch's time.
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from roofline.analysis.render import categorical, float_column

#: pipes within this many percentage points of the busiest are co-critical
CO_CRITICAL_POINTS = 5.0
#: a binding pipe this busy (% of its peak) limits the kernel (ncu's SpeedOfLight rule calls 60 % "high")
PIPE_BOUND_PCT = 60.0

_NCU_PIPE = re.compile(r"^sm__(?:inst_executed_pipe_(\w+?)|pipe_(\w+?)_cycles_active)\.avg\.pct_of_peak_sustained_active$")
#: AMD rocprof-compute keys (``ingest/amd/rocprof_compute.py``) -> pipe
AMD_PIPES = {"VALU Utilization": "valu", "MFMA Utilization": "mfma", "SALU Utilization": "salu",
             "Theoretical LDS Bandwidth": "lds"}
#: what each pipe executes (ncu Profiling Guide, "Pipelines"; rocprof-compute's Speed-of-Light panel)
PIPE_LABELS = {
    "alu": "ALU (integer, logic, comparisons)", "fma": "FMA (FP32 multiply-add, IMAD)", "fmaheavy": "FMA heavy",
    "fmalite": "FMA lite", "fma_type_fp16": "FMA fp16", "fp16": "FP16 (half-precision FMA)", "fp64": "FP64",
    "fp64_op_dmma": "FP64 DMMA", "xu": "XU (special functions: exp, sin, rsqrt; conversions)",
    "lsu": "LSU (loads, stores, shared memory)", "adu": "ADU (address divergence, branches)",
    "cbu": "CBU (control flow, barriers)", "tex": "TEX (texture, surface)", "uniform": "Uniform datapath",
    "tensor": "Tensor", "shared": "shared pipe (FP16 + tensor)", "tma": "TMA (tensor memory accelerator)",
    "ipa": "IPA", "valu": "VALU (vector ALU)", "mfma": "MFMA (matrix cores)", "salu": "SALU (scalar ALU)",
    "lds": "LDS bandwidth",
}


def pipe_label(pipe: str) -> str:
    """A pipe's name and what it runs ("XU (special functions: …)"); a sub-pipe by its parts."""
    if pipe in PIPE_LABELS:
        return PIPE_LABELS[pipe]
    head, _, rest = pipe.partition("_")
    return f"{PIPE_LABELS.get(head, head.upper()).split(' (')[0]} {rest.replace('_', ' ')}".strip()


def _pipe_of(key: str) -> str | None:
    m = _NCU_PIPE.match(key)
    if m:
        return m.group(1) or m.group(2)
    return AMD_PIPES.get(key)


@lru_cache(maxsize=4096)
def pipe_utilisation(text: str) -> dict[str, float]:
    """Per pipe, the higher of its recorded measures (% of peak), from a row's ``pipe_pct_json``."""
    try:
        raw = json.loads(text)
    except (TypeError, ValueError):
        return {}
    out: dict[str, float] = {}
    if not isinstance(raw, dict):
        return out
    for key, value in raw.items():
        pipe = _pipe_of(str(key))
        if pipe is None or not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
            continue
        out[pipe] = max(out.get(pipe, float("-inf")), float(value))
    return out


def _related(a: str, b: str) -> bool:
    """One pipe a sub-pipe of the other (``tensor`` / ``tensor_op_hmma``), or the shared pipe beside the
    FP16 and tensor pipes that issue through it: the same limit, never co-critical with each other."""
    if a.startswith(b + "_") or b.startswith(a + "_"):
        return True
    if "shared" in (a, b) and a != b:
        other = b if a == "shared" else a
        return other.split("_")[0] in ("fp16", "tensor")
    return False


@lru_cache(maxsize=4096)
def binding(text: str) -> tuple[str | None, float, tuple[str, ...]]:
    """(binding pipe, its %, co-critical pipes) of one ``pipe_pct_json``."""
    util = pipe_utilisation(text)
    if not util:
        return None, float("nan"), ()
    # busiest first; among equals a pipe before its sub-pipes and before the shared pipe
    order = sorted(util, key=lambda p: (-util[p], p == "shared", p.count("_"), p))
    top = order[0]
    co: list[str] = []
    for p in order[1:]:
        if util[top] - util[p] > CO_CRITICAL_POINTS:
            break
        if not _related(p, top) and not any(_related(p, q) for q in co):
            co.append(p)
    return top, util[top], tuple(co)


#: the columns :func:`pipe_columns` gives
PIPE_COLUMNS = ("binding_pipe", "binding_pipe_pct", "co_critical_pipes", "pipe_ceiling_flop_per_s")


def pipe_columns(frame: pd.DataFrame, achieved: np.ndarray | None = None) -> pd.DataFrame:
    """``binding_pipe``, ``binding_pipe_pct``, ``co_critical_pipes`` ("/"-joined) and
    ``pipe_ceiling_flop_per_s`` per row (missing / NaN where no pipe is recorded). Only the rows that record
    pipes are read; the text columns are Categoricals. ``achieved``: the FLOP/s per row, where ``frame`` does
    not hold ``achieved_flop_per_s`` (the kernels frame, before the roofline columns join it)."""
    n = len(frame)
    pct = np.full(n, np.nan)
    name_code = np.full(n, -1, np.int64)
    co_code = np.full(n, -1, np.int64)
    names: dict[str, int] = {}
    cos: dict[str, int] = {}
    col = frame.get("pipe_pct_json")
    if col is not None and nulls(col) < n:
        rows = np.flatnonzero(present(col))
        for r, text in zip(rows, col.iloc[rows].tolist()):
            top, value, others = binding(str(text))
            if top is None:
                continue
            pct[r] = value
            name_code[r] = names.setdefault(top, len(names))
            if others:
                co_code[r] = cos.setdefault("/".join(others), len(cos))
    if achieved is None:
        achieved = _floats(frame, "achieved_flop_per_s")
    with np.errstate(divide="ignore", invalid="ignore"):
        ceiling = np.where((pct > 0) & (achieved > 0), achieved * 100.0 / pct, np.nan)
    return pd.DataFrame({
        "binding_pipe": categorical(name_code, list(names)),
        "binding_pipe_pct": pct,
        "co_critical_pipes": categorical(co_code, list(cos)),
        "pipe_ceiling_flop_per_s": ceiling,
    }, index=frame.index)


def pipe_bound(frame: pd.DataFrame) -> np.ndarray:
    """Rows whose binding pipe limits them below the FLOP roof (see the module docstring)."""
    pct = _floats(frame, "binding_pipe_pct")
    ceiling = _floats(frame, "pipe_ceiling_flop_per_s")
    peak = _floats(frame, "peak_flop_per_s")
    with np.errstate(invalid="ignore"):
        return (pct >= PIPE_BOUND_PCT) & (ceiling < peak)


def null_count(frame: pd.DataFrame, name: str) -> int:
    """Missing values of a column (all of them when it is absent), without a pass over an Arrow-backed one."""
    return nulls(frame[name]) if name in frame else len(frame)


def nulls(s: pd.Series) -> int:
    """:func:`null_count` of a column already in hand (each read of a frame's column is ~15-40 us)."""
    if isinstance(s.dtype, pd.StringDtype) and s.dtype.storage == "pyarrow":
        return int(s.array.__arrow_array__().null_count)
    if isinstance(s.dtype, pd.CategoricalDtype):
        return len(s) if not len(s.cat.categories) else int(np.count_nonzero(np.asarray(s.cat.codes) < 0))
    if s.dtype == np.float64:
        return int(np.count_nonzero(np.isnan(s.to_numpy())))
    return int(s.isna().sum())


def present(col: pd.Series) -> np.ndarray:
    """``col.notna().to_numpy()`` from the column's array: no Series built (~0.1 ms each, a fixed cost per input)."""
    return ~np.asarray(col.array.isna(), dtype=bool)


def _floats(frame: pd.DataFrame, name: str) -> np.ndarray:
    values = float_column(frame, name)
    if values is not None:
        return values
    if name not in frame:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


# ---- Nsight Compute's findings ------------------------------------------------------------------------

FINDING_COLUMNS = ("source_file", "kernel_id", "kernel_name", "kernel_short_name", "duration_s", "rule", "rule_name", "section", "title",
                   "type", "est_speedup_pct", "speedup_type", "est_time_saved_s", "focus_metrics", "message", "rank")


@lru_cache(maxsize=4096)
def rule_results(text: str) -> tuple[dict[str, Any], ...]:
    """The rule results of one ``ncu_rules_json`` (an empty tuple where it cannot be read)."""
    try:
        raw = json.loads(text)
    except (TypeError, ValueError):
        return ()
    return tuple(r for r in raw if isinstance(r, dict)) if isinstance(raw, list) else ()


def finding_title(r: dict[str, Any]) -> str:
    """What ncu shows as the result's heading: its message title, else the rule's name."""
    return str(r.get("title") or r.get("name") or r.get("rule") or "")


def focus_text(r: dict[str, Any], most: int = 3) -> str:
    """The focus metrics as "metric=value" ("; "-free: a note part never splits inside it)."""
    parts = []
    for f in (r.get("focus") or ())[:most]:
        v = f.get("value")
        parts.append(f"{f.get('metric')}={v:.4g}" if isinstance(v, (int, float)) else str(f.get("metric")))
    return ", ".join(parts)


def findings(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (launch, rule result) beside the roofline rows, ranked across the profile by estimated time
    saved (``est_speedup_pct`` / 100 × ``duration_s``; results without an estimate after, by their order).
    ``speedup_type``: ncu's ``global`` estimates are of the kernel's time, ``local`` ones of the part the rule
    looks at (an upper bound on the kernel's saving)."""
    rows: list[tuple[Any, ...]] = []
    col = frame.get("ncu_rules_json")
    if col is not None:
        at = np.flatnonzero(col.notna().to_numpy())  # (the rows with results: a dataset's are few)

        def values(name: str) -> np.ndarray:
            return frame[name].iloc[at].to_numpy(dtype=object) if name in frame else np.full(len(at), pd.NA)

        texts, ids, names, shorts, files = (values(c) for c in ("ncu_rules_json", "kernel_id", "kernel_name",
                                                                 "kernel_short_name", "source_file"))
        dur = _floats(frame, "duration_s")[at]
        for r in range(len(at)):
            for res in rule_results(str(texts[r])):
                sp = res.get("speedup_pct")
                sp = float(sp) if isinstance(sp, (int, float)) and not isinstance(sp, bool) else np.nan
                saved = sp / 100.0 * dur[r] if np.isfinite(dur[r]) else np.nan
                rows.append((files[r], ids[r], names[r], shorts[r], dur[r], res.get("rule"), res.get("name"), res.get("section"),
                             finding_title(res), res.get("type"), sp, res.get("speedup_type"), saved,
                             focus_text(res, most=10) or None, res.get("message") or None))
    out = pd.DataFrame(rows, columns=list(FINDING_COLUMNS[:-1]))
    if out.empty:
        out["rank"] = pd.array([], dtype="Int64")
        return out
    out = out.sort_values("est_time_saved_s", ascending=False, kind="stable", na_position="last").reset_index(drop=True)
    has = out["est_time_saved_s"].notna().to_numpy()
    out["rank"] = pd.arrays.IntegerArray(np.arange(1, len(out) + 1, dtype=np.int64), ~has)  # none without an estimate
    for c in ("source_file", "kernel_name", "kernel_short_name", "rule", "rule_name", "section", "title", "type", "speedup_type",
              "focus_metrics", "message"):
        out[c] = out[c].astype("string")
    out["kernel_id"] = out["kernel_id"].astype("Int64")
    return out


def pipe_summary(frame: pd.DataFrame) -> pd.Series:
    """Per row, "XU (…) 91.2% of peak; co-critical: FMA 88.0%" (NA where no pipe is recorded)."""
    out = np.full(len(frame), None, dtype=object)
    col = frame.get("pipe_pct_json")
    if col is not None:
        texts = col.to_numpy(dtype=object)
        for r in np.flatnonzero(col.notna().to_numpy()):
            top, pct, co = binding(str(texts[r]))
            util = pipe_utilisation(str(texts[r]))
            if top is not None:
                out[r] = f"{pipe_label(top)} {pct:.1f}% of peak" + (
                    "; co-critical: " + ", ".join(f"{pipe_label(p).split(' (')[0]} {util[p]:.1f}%" for p in co) if co else "")
    return pd.Series(pd.array(out, dtype="string"), index=frame.index)


def findings_summary(frame: pd.DataFrame, most: int = 5) -> pd.Series:
    """Per row, its rule results with an estimated speedup, largest first ("title (est. global speedup 50%)")."""
    out = np.full(len(frame), None, dtype=object)
    col = frame.get("ncu_rules_json")
    if col is not None:
        texts = col.to_numpy(dtype=object)
        for r in np.flatnonzero(col.notna().to_numpy()):
            tops = top_findings(str(texts[r]), most)
            if tops:
                out[r] = "; ".join(f"{finding_title(f)} (est. {f.get('speedup_type') or ''} speedup "
                                   f"{float(f['speedup_pct']):.0f}%)" for f in tops)
    return pd.Series(pd.array(out, dtype="string"), index=frame.index)


def top_findings(text: str, most: int = 2) -> list[dict[str, Any]]:
    """A launch's results with an estimated speedup, largest first (the notes show the first ``most``)."""
    with_speedup = [r for r in rule_results(text) if isinstance(r.get("speedup_pct"), (int, float))
                    and r.get("type") in ("optimization", "warning", "ok") and r["speedup_pct"] > 0]
    return sorted(with_speedup, key=lambda r: -float(r["speedup_pct"]))[:most]


__all__ = [
    "CO_CRITICAL_POINTS",
    "PIPE_BOUND_PCT",
    "PIPE_COLUMNS",
    "binding",
    "finding_title",
    "findings",
    "findings_summary",
    "focus_text",
    "null_count",
    "nulls",
    "pipe_bound",
    "pipe_columns",
    "pipe_label",
    "pipe_summary",
    "pipe_utilisation",
    "present",
    "rule_results",
    "top_findings",
]
