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
        data_json=Markup(_escape_json(data)), plotly_js=Markup(plotly_js()))


def write(diff: pd.DataFrame, base: pd.DataFrame, cand: pd.DataFrame, path: str | Path, title: str, summary: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(diff, base, cand, title, summary), encoding="utf-8")
    return path
