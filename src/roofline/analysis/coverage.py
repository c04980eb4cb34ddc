"""Which rows have a roofline point, and for the others why not and what would fix it.

A row has a **roofline point** when its FLOPs are known, the bytes of at least one memory level are known,
and it did some work (FLOPs or bytes above 0): then it has an intensity and a place under the roofs. Every
other row (idle rows aside: they ran nothing) has a reason, which the readers and the op models wrote into
its ``*_source`` columns ("unavailable: no Input Dims for aten::mm; record with
torch.profiler.profile(record_shapes=True)"). :data:`RULES` turns those texts into a few reasons a person can
act on, each with its fix; a text no rule knows is its own reason, its fix taken from the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from roofline.schema import FLOP_COLUMNS, UNAVAILABLE, source_column

#: memory levels whose bytes give a row its point (LDS: AMD's fourth level)
BYTE_LEVELS = ("dram", "l2", "l1", "lds")


def number(frame: pd.DataFrame, col: str) -> pd.Series:
    """A column as floats (NaN where missing or not a number; all NaN when the frame lacks it)."""
    if col not in frame:
        return pd.Series(np.nan, index=frame.index)
    return pd.to_numeric(frame[col], errors="coerce").astype(float)


def row_codes(columns: list[pd.Series]) -> tuple[np.ndarray, np.ndarray]:
    """(code of each row's combination of values, position of one row per code): what ``pd.factorize`` of a
    MultiIndex gives, column by column (that builds every tuple: 0.8 s on a 20,000-row trace)."""
    n = len(columns[0]) if columns else 0
    codes = np.zeros(n, dtype=np.int64)
    for col in columns:
        c, uniq = pd.factorize(col, use_na_sentinel=True)
        codes = codes * (len(uniq) + 1) + (c + 1)
        codes, _ = pd.factorize(codes)  # renumber densely: the product of the columns' sizes never overflows
    first = np.full(codes.max() + 1 if n else 0, -1, dtype=np.int64)
    first[codes[::-1]] = np.arange(n - 1, -1, -1)
    return codes, first


def flop_total(frame: pd.DataFrame) -> pd.Series:
    """The rows' FLOPs: ``flop_total`` of a roofline frame, else the sum of the precisions (NaN when none known)."""
    if "flop_total" in frame:
        return number(frame, "flop_total")
    parts = pd.concat([number(frame, c) for c in FLOP_COLUMNS], axis=1)
    return parts.sum(axis=1, min_count=1)


def has_point(frame: pd.DataFrame) -> pd.Series:
    """Rows with a roofline point: FLOPs known, bytes known at some level, and some work (FLOPs or bytes > 0)."""
    flop = flop_total(frame)
    levels = [number(frame, f"{lv}_bytes") for lv in BYTE_LEVELS if f"{lv}_bytes" in frame]
    if not levels:
        return pd.Series(False, index=frame.index)
    byts = pd.concat(levels, axis=1)
    known = flop.notna() & byts.notna().any(axis=1)
    work = (flop > 0) | (byts > 0).any(axis=1)
    return (known & work).astype(bool)


@dataclass(frozen=True)
class Rule:
    """A reason for rows without a point: texts that ``pattern`` finds get ``reason`` and ``fix`` (an empty
    fix: the part of the text that says what to do, if it says)."""

    pattern: re.Pattern[str]
    reason: str
    fix: str = ""


def _rule(pattern: str, reason: str, fix: str = "") -> Rule:
    return Rule(re.compile(pattern, re.IGNORECASE), reason, fix)


#: first match wins; the texts are the readers' and op models' own (see docs/analysis.md, "coverage")
RULES: tuple[Rule, ...] = (
    _rule(r"no Input Dims", "no shapes recorded", "record_shapes=True: torch.profiler.profile(record_shapes=True)"),
    _rule(r"no work: 0 FLOP and 0 bytes|no work recorded", "no work recorded (0 FLOP and 0 bytes)"),
    _rule(r"Input type not recorded|element dtype is not recorded|dtype is not recorded", "dtypes not recorded",
          "profile with a PyTorch that records Input type (1.9 or later)"),
    _rule(r"no FLOP model for", "no op model for these ops",
          "the ops modelled are listed in docs/traces.md; their time is counted"),
    _rule(r"match no schema of|int list the trace does not record|shape is not recorded",
          "an argument the trace does not record", "profile with a newer PyTorch (Concrete Inputs)"),
    _rule(r"Nsight Systems timeline has no", "a timeline without counters",
          "roofline analyze TIMELINE --counters REPORT.ncu-rep (Nsight Compute counters joined onto the launches)"),
    _rule(r"has no counter_collection record", "a timeline without counters"),
    _rule(r"replay did not complete", "the counter replay did not complete (NaN in the report)",
          "profile again: Nsight Compute replays each kernel to collect its counters"),
    _rule(r"none of .*sass_thread_inst_executed|no FLOP counters", "no FLOP counters in the report"),
    _rule(r"no DRAM byte counters|no memory counters|recorded no DRAM counters|no byte counters",
          "no memory counters in the report"),
    _rule(r"orphan: graph replay", "graph replays whose ops are not in the trace",
          "pass the trace recorded while the graphs were captured: --capture (or capture_traces/ beside the trace)"),
    _rule(r"orphan:", "kernels without their CPU op (no shapes)",
          "profile a window that holds the ops that launch them"),
    _rule(r"host<->device copy|crossed the host link|over the host/peer link",
          "host-link copies: PCIe/NVLink traffic, not device memory (no link roof yet)"),
    _rule(r"collective moves data", "collectives: judged on the link roofs, not this one (reduction FLOPs not modelled)",
          "their bus bandwidth vs NVLink/xGMI/NIC: the bus_bandwidth_bytes_per_s and pct_of_link_roof columns, "
          "communication.png (docs/collectives.md)"),
    _rule(r"Inductor Triton kernel's arithmetic", "Inductor Triton kernels: arithmetic not recorded",
          "torch._inductor.analysis.profile_analysis adds kernel_flop/kernel_num_gb to the trace"),
    _rule(r"fused MoE", "fused MoE without a recorded routing op (TopK with its k)"),
    _rule(r"paged attention", "paged attention: context lengths not recorded"),
    _rule(r"no XLA op on any device plane", "kernels outside XLA (times only)"),
    _rule(r"no per-memory breakdown", "XLA gave no per-memory bytes (async and host copies)"),
    _rule(r"memcpy/memset event\(s\) without", "copies without a byte count"),
)

#: where a reason's text says what to do (kept as the fix when the rule names none)
_FIX = re.compile(r"(?:^|[;:,(]\s*)((?:record|collect|install|add them|pass|profile|run|re-profile|use|give|see)\b.*)$",
                  re.IGNORECASE)


def _strip(text: str) -> str:
    text = text.strip()
    return text[len(UNAVAILABLE) + 1:].strip() if text.lower().startswith(UNAVAILABLE + ":") else text


def classify(text: str) -> tuple[str, str]:
    """(reason, fix) of one row's unavailable text."""
    body = _strip(text)
    m = _FIX.search(body)
    found = m.group(1).strip() if m else ""
    if found.endswith(")") and found.count(")") > found.count("("):
        found = found[:-1]  # the fix closed a parenthesis it did not open
    for r in RULES:
        if r.pattern.search(body):
            return r.reason, r.fix or found
    head = re.split(r";\s+", body, maxsplit=1)[0]
    if found and head.endswith(found):
        head = head[: -len(found)].rstrip(" ,;:(")
    return head or body, found


def _first_unavailable(frame: pd.DataFrame, columns: list[str], at: np.ndarray) -> np.ndarray:
    """At the row positions ``at``, the first of ``columns`` whose text starts with 'unavailable' (None where
    none does). Each column's distinct texts are tested once and the rows point at them: taking the rows' texts
    first copied every source column's strings (~0.18 s of a 63k-row dataset's report)."""
    out = np.full(len(at), None, dtype=object)
    open_ = np.ones(len(at), dtype=bool)
    for c in columns:
        if c not in frame:
            continue
        codes, uniq = pd.factorize(frame[c])
        texts = pd.Series(uniq).astype("string")  # (what the text of a non-string value reads as)
        hits = np.append(texts.str.startswith(UNAVAILABLE).fillna(False).to_numpy(dtype=bool), False)
        mine = codes[at]
        hit = open_ & hits[mine]
        out[hit] = texts.to_numpy(dtype=object)[mine[hit]]
        open_ &= ~hit
    return out


def row_reasons(frame: pd.DataFrame, rows: pd.Series) -> pd.DataFrame:
    """For the ``rows`` (a boolean mask) without a point: the text that says why, its reason and its fix.

    The text is a FLOP source's when the FLOPs are missing, else a byte source's; a row with both known
    (0 FLOP and 0 bytes) did no work. Classified once per distinct text."""
    at = np.flatnonzero(rows.to_numpy())
    flop_missing = flop_total(frame).isna().to_numpy()[at]
    flop_text = _first_unavailable(frame, [source_column(c) for c in FLOP_COLUMNS], at)
    byte_text = _first_unavailable(frame, [source_column(f"{lv}_bytes") for lv in BYTE_LEVELS], at)
    text = np.where(flop_missing, flop_text, byte_text)
    for fallback in (flop_text, byte_text, np.full(len(at), "no work recorded: 0 FLOP and 0 bytes", dtype=object)):
        gap = pd.isna(text)
        text[gap] = fallback[gap]
    codes, uniques = pd.factorize(text)
    pairs = [classify(str(u)) for u in uniques]
    reason = np.array([p[0] for p in pairs] or [""], dtype=object)[codes]
    fix = np.array([p[1] for p in pairs] or [""], dtype=object)[codes]
    return pd.DataFrame({"text": text, "reason": reason, "fix": fix}, index=frame.index[at])


__all__ = ["BYTE_LEVELS", "RULES", "Rule", "classify", "flop_total", "has_point", "number", "row_codes",
           "row_reasons"]
