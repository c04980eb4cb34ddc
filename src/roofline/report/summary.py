"""The answers before the rows, as terminal text: the headline (``analysis/headline.py``), the rows without a
roofline point folded into one line per reason, and the ``--by category`` table.

Everything here formats objects the analysis computed; nothing is recomputed for display.
"""

from __future__ import annotations

import math
from pathlib import PurePath

import numpy as np
import pandas as pd

from roofline.analysis.headline import KINDS, Headline, Reason
from roofline.report.chart_data import LEVEL_LABELS, short_source
from roofline.report.table import _si

#: per-scope rows listed under a headline that covers several profiles or devices (the rest counted)
MAX_SCOPES = 16
MAX_STEPS = 12


def compact_list(items: list[str], limit: int = 4, noun: str = "devices") -> str:
    """'a, b, c' or, past ``limit`` items, '16 devices: a, b, c, … (13 more)'."""
    if len(items) <= limit:
        return ", ".join(items)
    return f"{len(items)} {noun}: " + ", ".join(items[:limit - 1]) + f", … ({len(items) - limit + 1} more)"


def pct(share: float, digits: int = 1) -> str:
    """A share (0..1) as a percentage; 'n/a' when unknown."""
    if share is None or not math.isfinite(share):
        return "n/a"
    return f"{100 * share:.{digits}f}%"


def _name(path: str | None) -> str:
    return PurePath(str(path).replace("\\", "/")).name if path else ""


def scope_title(h: Headline) -> str:
    """'device · profile · step' of a headline (or 'all profiles' for the whole frame's)."""
    if h.profile is None and h.device is None:
        return "all profiles and devices"
    parts = [h.device or "unknown device", _name(h.profile)]
    if h.step:
        parts.append(h.step)
    return " · ".join(p for p in parts if p)


def peak_label(key: str, value: float, source: str, unit: str) -> str:
    label = LEVEL_LABELS.get(key, key)
    return f"{label} peak {_si(value, unit)} ({short_source(source)})"


def rates(h: Headline) -> str:
    """'achieved 12 TFLOP/s = 4.1% of the tensor bf16 peak … (MFU); 1.1 TB/s = 33% of …(MBU)'."""
    parts = []
    if math.isfinite(h.achieved_flop_per_s):
        text = _si(h.achieved_flop_per_s, "FLOP/s")
        if h.compute_peak:
            text += (f" = {pct(h.mfu)} of the {peak_label(h.compute_peak.key, h.compute_peak.value, h.compute_peak.source, 'FLOP/s')}"
                     " (MFU)")
        parts.append(text)
    else:
        parts.append("FLOP/s n/a (no row has FLOPs)")
    if math.isfinite(h.achieved_dram_bytes_per_s):
        text = _si(h.achieved_dram_bytes_per_s, "B/s") + " DRAM"
        if h.dram_peak:
            text += f" = {pct(h.mbu)} of the {peak_label('dram', h.dram_peak.value, h.dram_peak.source, 'B/s')} (MBU)"
        parts.append(text)
    else:
        parts.append("DRAM bytes/s n/a (no row has DRAM bytes)")
    return "achieved " + "; ".join(parts) + " over the GPU time"


def kinds_line(h: Headline) -> str:
    shares = h.shares
    items = [f"{k} {pct(shares[k])}" for k in KINDS if h.kinds.get(k, 0.0) > 0]
    return "time by kind: " + (" · ".join(items) if items else "n/a")


def reason_line(r: Reason, ops: bool = True) -> str:
    """'97.8% no shapes recorded (12 row(s): aten::mm 23.0%, …); fix: …' (``ops``: with the longest names)."""
    names = ", ".join(f"{n if len(n) <= 40 else n[:39] + '…'} {pct(s)}" for n, s in r.ops) if ops else ""
    text = f"{pct(r.share):>6} {r.reason} ({r.rows:,} row(s){': ' + names if names else ''})"
    return text + (f"; fix: {r.fix}" if r.fix else "")


def format_headline(h: Headline, max_reasons: int = 6) -> list[str]:
    """The lines of one headline."""
    lines = [f"== {scope_title(h)} =="]
    if not h.gpu_time_s > 0:
        lines.append(f"GPU time: 0 s in {h.rows:,} row(s): the profile records no durations (no shares to give)")
        return lines
    lines.append(f"GPU time {_si(h.gpu_time_s, 's')} in {h.rows:,} row(s); {pct(h.coverage)} of it has a roofline point"
                 " (FLOPs and bytes)")
    if h.reasons:
        lines.append("without a point:")
        lines += ["  " + reason_line(r) for r in h.reasons[:max_reasons]]
        rest = h.reasons[max_reasons:]
        if rest:
            lines.append(f"  {pct(sum(r.share for r in rest)):>6} {len(rest)} other reason(s) (--by summary --format json)")
    lines.append(kinds_line(h))
    lines.append(rates(h))
    if h.comm_exposed_s is not None and h.comm_overlapped_s is not None:
        comm = h.comm_exposed_s + h.comm_overlapped_s
        lines.append(f"collectives: {_si(comm, 's')} of NCCL/RCCL kernels, {_si(h.comm_exposed_s, 's')} exposed "
                     f"({pct(h.comm_exposed_s / h.gpu_time_s if h.gpu_time_s > 0 else math.nan)} of GPU time: no "
                     f"other kernel ran) and {_si(h.comm_overlapped_s, 's')} overlapped with compute")
    if h.comm_rows:
        line = (f"collectives on the links: {h.comm_with_busbw:,} of {h.comm_rows:,} with a bus bandwidth "
                "(size and group size recorded)")
        if h.comm_median_pct_of_link_roof is not None:
            line += (f"; time-weighted median {h.comm_median_pct_of_link_roof:.1f}% of the link roof "
                     f"({h.comm_median_link}); docs/collectives.md")
        lines.append(line)
    if h.span_s:
        lines.append(f"timeline: {_si(h.span_s, 's')} from the first launch to the end of the last; "
                     f"{pct(h.gap_s / h.span_s)} of it with nothing running (gaps; outside the shares above)")
    lines += [f"note: {n}" for n in h.notes]
    return lines


#: what pandas' text of a table writes for these characters of a cell
_ESCAPES = str.maketrans({"\t": "\\t", "\r": "\\r", "\n": "\\n"})


def text_table(columns: dict[str, list[str]]) -> list[str]:
    """The lines of ``DataFrame(columns).to_string(index=False)`` for columns of text (at least one row; headers
    without spaces around them): each column right-aligned to its widest cell or header, one space between columns, tabs and line breaks escaped;
    without building a frame (~2 ms a table: 18 tables in a dataset's headline)."""
    cells = []
    for head, values in columns.items():
        shown = [v.translate(_ESCAPES) for v in values]
        w = max(len(head), *(len(v) for v in shown))
        cells.append([head.rjust(w), *(v.rjust(w) for v in shown)])
    return "\n".join(" ".join(row) for row in zip(*cells)).splitlines()  # (a cell may hold other line breaks)


def _scope_table(items: list[Headline], label: str) -> list[str]:
    rows = []
    for h in items[:MAX_SCOPES]:
        top = max(((k, v) for k, v in h.kinds.items()), key=lambda kv: kv[1], default=("", 0.0))
        rows.append({label: (h.step if label == "step" else scope_title(h)), "GPU time": _si(h.gpu_time_s, "s"),
                     "point": pct(h.coverage), "most time": f"{top[0]} {pct(top[1] / h.gpu_time_s)}"
                     if h.gpu_time_s > 0 else "n/a",
                     "MFU": pct(h.mfu), "MBU": pct(h.mbu),
                     "first reason without a point": h.reasons[0].reason if h.reasons else ""})
    columns = {c: [r[c] for r in rows] for c in rows[0]}
    for c in (label, "most time", "first reason without a point"):
        w = max(len(v) for v in columns[c])
        columns[c] = [v.ljust(w) for v in columns[c]]
    lines = text_table(columns)
    if len(items) > MAX_SCOPES:
        lines.append(f"(and {len(items) - MAX_SCOPES} more; --by summary lists them all)")
    return lines


def format_headlines(items: list[Headline]) -> str:
    """The headline block printed before the table: the whole frame's headline in full, then one line per
    profile and device (when there are several), and one per step (where the profiles mark steps)."""
    if not items:
        return ""
    whole = [h for h in items if h.step is None]
    main = whole[0]
    lines = format_headline(main)
    scopes = [h for h in whole if h is not main]
    if scopes:
        lines += ["", f"per profile and device ({len(scopes)}):"] + _scope_table(scopes, "profile and device")
    by_scope: dict[tuple[str | None, str | None], list[Headline]] = {}  # (each scope's steps, in their order)
    for s in items:
        if s.step is not None:
            by_scope.setdefault((s.profile, s.device), []).append(s)
    for h in whole if len(whole) == 1 else scopes:
        steps = by_scope.get((h.profile, h.device), [])
        if len(steps) == 1 and steps[0].rows == h.rows:
            continue  # one step that is the whole profile: the headline above says it all
        if steps:
            lines += ["", f"per step of {scope_title(h)} ({len(steps)}):"] + _scope_table(steps[:MAX_STEPS], "step")
            if len(steps) > MAX_STEPS:
                lines.append(f"(and {len(steps) - MAX_STEPS} more steps; --by summary lists them all)")
    return "\n".join(lines)


def format_folded(folded: pd.DataFrame, gpu_time_s: float, by: str | None = None, headline: bool = True,
                  why: tuple[np.ndarray, np.ndarray] | None = None) -> str:
    """The rows left out of the table because they have no roofline point: one line per reason (kernel and op
    rows), or one line for the groups of a ``--by`` view (their kernels' reasons are in the headline). ``why``:
    the folded rows' reasons and fixes, when already known (``RowFacts``)."""
    from roofline.analysis.headline import reasons

    if folded.empty:
        return ""
    if by is not None:
        t = float(pd.to_numeric(folded["duration_s"], errors="coerce").clip(lower=0).sum())
        names = folded[by].astype("string").fillna("(none)").head(3).tolist() if by in folded else []
        return (f"{len(folded):,} {by} row(s) without a roofline point, {pct(t / gpu_time_s if gpu_time_s else math.nan)}"
                f" of GPU time ({', '.join(n if len(n) <= 40 else n[:39] + '…' for n in names)}"
                f"{', …' if len(folded) > 3 else ''}): not in the table (--all lists them); why: "
                + ("the headline above" if headline else "`roofline analyze` without --by gives each reason"))
    lines = ["rows without a roofline point (not in the table; --all lists them):"]
    lines += ["  " + reason_line(r, ops=False) for r in reasons(folded, gpu_time_s, why)]
    return "\n".join(lines)


def format_categories(table: pd.DataFrame) -> str:
    """``--by category``: one line per category, longest first; the % of GPU time add up to 100."""
    if table.empty:
        return "(no kernels)"
    shown = pd.DataFrame({
        "category": table["category"].astype(str).str.ljust(int(table["category"].str.len().max())),
        "n": [f"{int(n):,}" for n in table["kernel_count"]],
        "time": [_si(v, "s") for v in table["duration_s"]],
        "% time": [f"{v:.1f}" for v in table["pct_gpu_time"]],
        "cum %": [f"{v:.1f}" for v in table["cumulative_pct"]],
        "FLOP/s": [_si(v, "FLOP/s") for v in table["achieved_flop_per_s"]],
        "DRAM B/s": [_si(v, "B/s") for v in table["achieved_dram_bytes_per_s"]],
        "median % roof": [f"{v:.1f}" if math.isfinite(v) else "n/a" for v in table["median_pct_of_roof"]],
        "% with point": [f"{v:.1f}" if math.isfinite(v) else "n/a" for v in table["pct_time_with_point"]],
    })
    legend = ("legend: % time = share of the GPU time (adds up to 100); FLOP/s and B/s over the time of the rows "
              "that have FLOPs (DRAM bytes); median % roof = of the rows with a roof; categories: "
              "docs/analysis.md (op categories)")
    comm = [f"{c}: of its NCCL/RCCL kernels, {_si(e, 's')} ran exposed (no other kernel running) and {_si(o, 's')} "
            "overlapped with compute"
            for c, e, o in zip(table["category"], table.get("comm_exposed_s", []), table.get("comm_overlapped_s", []))
            if isinstance(e, float) and math.isfinite(e)]
    return shown.to_string(index=False) + "\n" + "".join(line + "\n" for line in comm) + legend


def format_collectives(table: pd.DataFrame) -> str:
    """``--by collective``: one line per collective, size and group, longest first."""
    if table.empty:
        return "(no NCCL/RCCL collectives in these profiles)"

    def num(v: object, unit: str) -> str:
        return _si(float(v), unit) if v is not None and not pd.isna(v) else "n/a"  # type: ignore[arg-type]

    shown = pd.DataFrame({
        "collective": table["collective"].astype(str),
        "size": [num(v, "B") for v in table["message_bytes"]],
        "n": ["n/a" if pd.isna(v) else str(int(v)) for v in table["group_size"]],
        "calls": [f"{int(v):,}" for v in table["calls"]],
        "time": [num(v, "s") for v in table["duration_s"]],
        "% time": [f"{v:.1f}" for v in table["pct_gpu_time"]],
        "algbw": [num(v, "B/s") for v in table["median_algorithm_bandwidth_bytes_per_s"]],
        "busbw": [num(v, "B/s") for v in table["median_bus_bandwidth_bytes_per_s"]],
        "link roof": [num(v, "B/s") for v in table["link_roof_bytes_per_s"]],
        "% roof": ["n/a" if pd.isna(v) else f"{v:.1f}" for v in table["median_pct_of_link_roof"]],
        "exposed": [num(v, "s") for v in table["comm_exposed_s"]],
        "overlapped": [num(v, "s") for v in table["comm_overlapped_s"]],
    })
    legend = ("legend: size = nccl-tests' S (an all-gather's whole output); n = group size; algbw, busbw, % roof = "
              "medians over the calls; link roof = one direction; n/a = not recorded (the *_source columns of "
              "--format csv say why); docs/collectives.md")
    return shown.to_string(index=False) + "\n" + legend


__all__ = ["compact_list", "format_categories", "format_collectives", "format_folded", "format_headline", "format_headlines", "pct", "rates",
           "scope_title"]
