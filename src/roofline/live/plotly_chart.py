"""The roofline of a result frame as a plotly Figure (for notebooks: ``RooflineAnalyzer.plot(backend="plotly")``).

Same roofs and points as the PNG and the HTML report (``report.chart_data``); points coloured by
bound with the legend saying so, one marker shape per memory level, hover with the module path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from roofline.report.chart_data import LEVEL_LABELS, axis_limits, points, roofs, unplotted_count

#: the HTML report's colours for the bound
BOUND_COLOURS = {"compute-bound": "#d62728", "memory-bound": "#1f77b4", "latency-limited": "#8c8c8c",
                 "unavailable": "#e0a800"}
_SYMBOLS = {"dram": "circle", "l2": "square", "l1": "triangle-up", "lds": "diamond"}
_ROOF_COLOURS = {"fp64": "#6a3d9a", "fp32": "#1f78b4", "fp16": "#33a02c", "tensor": "#e31a1c"}
_DASH = {"dram": "solid", "l2": "dash", "l1": "dot", "lds": "dashdot"}


def _esc(s: object) -> str:
    """Plotly renders a subset of HTML in labels: module and kernel names are shown as text."""
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def figure(result: pd.DataFrame, title: str, levels: Sequence[str] = ("dram",)) -> Any:
    import plotly.graph_objects as go

    levels = tuple(lv for lv in levels if f"intensity_{lv}_flop_per_byte" in result)
    roof_list = roofs(result, levels)
    pts = points(result, levels)
    (x0, x1), (y0, y1) = axis_limits(pts, roof_list)
    fig = go.Figure()
    top = max((r.value for r in roof_list if r.kind == "compute"), default=y1)
    for r in roof_list:
        if r.kind == "bandwidth":
            fig.add_trace(go.Scatter(x=[x0, top / r.value], y=[r.value * x0, top], mode="lines", name=_esc(r.label),
                                     line={"color": "#444", "dash": _DASH.get(r.key, "solid")}, hoverinfo="name"))
    ridge = min((top / r.value for r in roof_list if r.kind == "bandwidth"), default=x0)
    for r in roof_list:
        if r.kind == "compute":
            start = min([ridge] + [r.value / b.value for b in roof_list if b.kind == "bandwidth"])
            fig.add_trace(go.Scatter(x=[start, x1], y=[r.value, r.value], mode="lines", name=_esc(r.label),
                                     line={"color": _ROOF_COLOURS.get(r.key, "#333"), "width": 2}, hoverinfo="name"))
    frame = result.reset_index(drop=True)
    names = frame["module_path"] if "module_path" in frame else frame["kernel_name"]
    bounds = frame["bound"].astype("string").fillna("unavailable")
    for (lv, bound), sub in pts.assign(bound=bounds.iloc[pts["row"]].to_numpy()).groupby(["level", "bound"], sort=False):
        rows = sub["row"].to_numpy()
        fig.add_trace(go.Scatter(
            x=sub["intensity_flop_per_byte"], y=sub["achieved_flop_per_s"], mode="markers",
            name=f"{bound} ({LEVEL_LABELS[lv]})", legendgroup=str(bound),
            marker={"color": BOUND_COLOURS.get(str(bound), "#e0a800"), "symbol": _SYMBOLS[lv], "size": 9},
            text=[_esc(n) for n in names.iloc[rows]],
            customdata=frame.loc[rows, ["duration_s", "flop_total"]].to_numpy(),
            hovertemplate="%{text}<br>%{x:.3g} FLOP/B, %{y:.3s}FLOP/s<br>time %{customdata[0]:.3s}s, "
                          "%{customdata[1]:.3s}FLOP<extra></extra>"))
    hidden = unplotted_count(frame)
    subtitle = f" · {hidden} without FLOPs or time: not drawn" if hidden else ""
    fig.update_layout(
        title={"text": _esc(title) + subtitle}, hovermode="closest", template="plotly_white",
        legend={"title": {"text": "colour = bound, shape = memory level"}},
        xaxis={"type": "log", "range": [_log(x0), _log(x1)], "title": {"text": "arithmetic intensity (FLOP/byte)"}},
        yaxis={"type": "log", "range": [_log(y0), _log(y1)], "title": {"text": "performance (FLOP/s)"},
               "exponentformat": "SI"})
    return fig


def _log(v: float) -> float:
    return math.log10(v)
