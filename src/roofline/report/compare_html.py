"""The HTML diff of two profiles: arrows from baseline to candidate points, both devices' roofs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from roofline._version import __version__
from roofline.report.chart_data import roofs
from roofline.report.html import _asset, _environment, _escape_json, plotly_js

_COLUMNS = ("kernel", "match", "duration_s_base", "duration_s_cand", "duration_s_change_pct", "flop_total_change_pct",
            "achieved_flop_per_s_change_pct", "binding_roof_base", "binding_roof_cand", "pct_of_roof_change_pts",
            "intensity_dram_flop_per_byte_base", "intensity_dram_flop_per_byte_cand",
            "achieved_flop_per_s_base", "achieved_flop_per_s_cand")


def _clean(v: object) -> object:
    if isinstance(v, (float, np.floating)):
        return float(v) if np.isfinite(v) else None
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    return v if isinstance(v, (int, str, bool)) else str(v)


def render(diff: pd.DataFrame, base: pd.DataFrame, cand: pd.DataFrame, title: str, summary: str) -> str:
    from markupsafe import Markup

    pairs = {c: [_clean(v) for v in diff[c]] if c in diff else [None] * len(diff) for c in _COLUMNS}
    sets = [{"side": "baseline", "roofs": [r.__dict__ for r in roofs(base, ("dram",))]}]
    cand_devices = set(cand["device_name"].dropna().astype(str)) if "device_name" in cand else set()
    base_devices = set(base["device_name"].dropna().astype(str)) if "device_name" in base else set()
    if cand_devices != base_devices:  # two devices: draw both sets of roofs
        sets.append({"side": "candidate", "roofs": [r.__dict__ for r in roofs(cand, ("dram",))]})
    data = json.dumps({"pairs": pairs, "roofs": sets, "summary": summary}, default=str, allow_nan=False)
    return _environment().from_string(_asset("compare.html.j2")).render(
        title=title, version=__version__, css=Markup(_asset("report.css")),
        data_json=Markup(_escape_json(data)), plotly_js=Markup(plotly_js()), table_js=Markup(_asset("compare_table.js")))


def write(diff: pd.DataFrame, base: pd.DataFrame, cand: pd.DataFrame, path: str | Path, title: str, summary: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(diff, base, cand, title, summary), encoding="utf-8")
    return path


# -- by identity (the default of `roofline compare`) ------------------------------------------------------

#: the table's columns: (header with its unit, table column, kind: text | s | pct | pts | share)
TABLE = (("candidate", "candidate", "text"), ("identity", "identity", "text"), ("on", "presence", "text"),
         ("category", "category", "text"), ("launches base", "count_base", "n"), ("launches cand", "count_cand", "n"),
         ("per launch base (ms)", "median_s_base", "s"), ("per launch cand (ms)", "median_s_cand", "s"),
         ("Δ per launch (%)", "median_s_change_pct", "pct"), ("interval low (%)", "median_s_change_pct_lo", "pct"),
         ("interval high (%)", "median_s_change_pct_hi", "pct"), ("Δ total, normalised (ms)", "total_norm_change_s", "s"),
         ("share base (%)", "share_base_pct", "share"), ("share cand (%)", "share_cand_pct", "share"),
         ("bound base", "bound_base", "text"), ("bound cand", "bound_cand", "text"),
         ("% of roof base", "pct_of_roof_base", "share"), ("% of roof cand", "pct_of_roof_cand", "share"),
         ("Δ % of roof (points)", "pct_of_roof_change_pts", "pts"))
SPREAD_TOP = 20  # identities drawn together in the spread chart (by the baseline's share of time)
SPREAD_MAX = 300  # identities that can be picked one by one there (the page's size stays bounded)


def _points(comp: object) -> tuple[list[dict], str | None]:
    """Per side, each identity's roofline point (DRAM level) with its spread across captures; or why none."""
    sides = []
    drawn = 0
    for info, frame in zip(comp.sides, comp.per_side):  # type: ignore[attr-defined]
        x = pd.to_numeric(frame.get("intensity_dram_flop_per_byte"), errors="coerce")
        y = pd.to_numeric(frame.get("achieved_flop_per_s"), errors="coerce")
        ok = (x > 0) & (y > 0) & np.isfinite(x) & np.isfinite(y)
        drawn += int(ok.sum())
        lo = pd.to_numeric(frame.get("achieved_flop_per_s_min"), errors="coerce")
        hi = pd.to_numeric(frame.get("achieved_flop_per_s_max"), errors="coerce")
        sides.append({"label": info["label"], "key": [str(k) for k in frame.index[ok]],
                      "x": [_clean(v) for v in x[ok]], "y": [_clean(v) for v in y[ok]],
                      "minus": [_clean(v) for v in (y - lo)[ok]], "plus": [_clean(v) for v in (hi - y)[ok]]})
    if drawn:
        return sides, None
    def some(col: str) -> bool:  # any identity of any side with a positive value
        return any((pd.to_numeric(f[col], errors="coerce") > 0).any() for f in comp.per_side if col in f)  # type: ignore[attr-defined]

    flops, dram = some("flop_total"), some("dram_bytes")
    missing = " and ".join(w for w, have in (("FLOP counts", flops), ("DRAM bytes", dram)) if not have) or \
        "a point with both FLOPs and DRAM bytes"
    return sides, (f"No roofline points: no identity has {missing} on any side (timelines such as nsys hold times "
                   "only: join an ncu report with --counters, or compare ncu reports or priced traces). "
                   "The time chart below needs times only.")


def _spread(comp: object) -> dict:
    """The spread chart's data: per identity (the top ``SPREAD_MAX`` by the baseline's time) and side, the median
    launch time, its min and max over the side's captures and each capture's own median."""
    base = comp.per_side[0]  # type: ignore[attr-defined]
    keys = pd.to_numeric(base["total_norm_s"], errors="coerce").fillna(0).sort_values(ascending=False, kind="stable")
    keys = keys.index[:SPREAD_MAX]
    t = comp.table.drop_duplicates("key").set_index("key")  # type: ignore[attr-defined]
    lines = []
    for k in keys:
        ys, lo, hi, caps = [], [], [], []
        for f, med in zip(comp.per_side, comp.launch_medians):  # type: ignore[attr-defined]
            m, a, b = (_clean(f.at[k, c]) if k in f.index else None for c in ("median_s", "median_s_min", "median_s_max"))
            ys.append(m)
            lo.append(None if m is None or a is None else m - a)
            hi.append(None if m is None or b is None else b - m)
            caps.append([_clean(v) for v in med.loc[k]] if k in med.index else [])
        lines.append({"name": str(t.at[k, "identity"]) if k in t.index else str(k), "y": ys, "minus": lo, "plus": hi,
                      "captures": caps})
    return {"sides": [s["label"] for s in comp.sides], "lines": lines, "top": SPREAD_TOP}  # type: ignore[attr-defined]


def render_identities(comp: object, summary: dict, title: str, roof_frames: list[pd.DataFrame]) -> str:
    from markupsafe import Markup

    table = comp.table  # type: ignore[attr-defined]
    rows = {col: [_clean(v) for v in table[col]] if col in table else [None] * len(table) for _, col, _ in TABLE}
    points, empty = _points(comp)
    sets, seen = [], []
    for info, frame in zip(comp.sides, roof_frames):  # type: ignore[attr-defined]
        devices = set(frame["device_name"].dropna().astype(str)) if "device_name" in frame else set()
        if devices not in seen:  # one set of roofs per distinct device
            seen.append(devices)
            sets.append({"side": info["label"], "roofs": [r.__dict__ for r in roofs(frame, ("dram",))]})
    data = json.dumps({"summary": summary, "columns": [list(c) for c in TABLE], "rows": rows, "points": points,
                       "roofs": sets,
                       "points_empty": empty, "spread": _spread(comp), "keys": [str(k) for k in table["key"]]},
                      default=str, allow_nan=False)
    return _environment().from_string(_asset("compare_ids.html.j2")).render(
        title=title, version=__version__, css=Markup(_asset("report.css")),
        data_json=Markup(_escape_json(data)), plotly_js=Markup(plotly_js()), table_js=Markup(_asset("compare_table.js")))


def write_identities(comp: object, summary: dict, path: str | Path, roof_frames: list[pd.DataFrame]) -> Path:
    """The HTML diff by identity: the summary on top, the roofline with each side's spread, the time spread per
    identity across sides, the sortable, paged table of every identity. ``roof_frames``: one analysed frame per
    side (its roofs are drawn; a device's once)."""
    path = Path(path)
    title = " → ".join(s["label"] for s in summary["sides"])
    text = render_identities(comp, summary, title, roof_frames)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
