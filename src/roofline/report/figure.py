"""The kernel roofline chart of the HTML report as a plotly Figure (``roofline.plot(result)`` in a notebook).

Built the way the page's script builds its kernel chart (``templates/report.js``: ``roofTraces``, ``layout``,
``drawKernels``) from the same data the page carries (``chart_data.roofs`` per device, ``chart_data.points``):
one device at a time (the one with the most drawable time unless named), its roofs, one marker per kernel and
memory level coloured by bound (the page's colours) with a shape per level, log axes one label per decade in SI
units. ``live/plotly_chart.py`` (a live model's modules) draws through it too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from roofline.report.chart_data import LEVEL_LABELS, Roof, axis_limits, device_order, points, roofs, unplotted_count

#: the page's colours for the bound (report.js COLOURS.bound) and its roof colours, dashes and marker shapes
BOUND_COLOURS = {"compute-bound": "#d62728", "memory-bound": "#1f77b4", "latency-limited": "#8c8c8c",
                 "unavailable": "#e0a800"}
ROOF_COLOURS = {"fp64": "#6a3d9a", "fp32": "#1f78b4", "fp16": "#33a02c", "tensor": "#e31a1c"}
SYMBOLS = {"dram": "circle", "l2": "square", "l1": "triangle-up", "lds": "diamond"}
DASH = {"dram": "solid", "l2": "dash", "l1": "dot", "lds": "dashdot"}
ALL_LEVELS = ("dram", "l2", "l1", "lds")


def esc(s: object) -> str:
    """Plotly renders a subset of HTML in labels: names are shown as text."""
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def drawable_device(result: pd.DataFrame) -> str | None:
    """The device with the most drawable kernel time (then the most drawable kernels, then the most time):
    the one the HTML report opens on. None when the frame names no device."""
    if "device_name" not in result or result.empty:
        return None
    return str(device_order(result).index[0])


def device_mask(result: pd.DataFrame, device: str | None) -> np.ndarray:
    """The rows of ``device`` (every row when None or when the frame names no device)."""
    if device is None or "device_name" not in result:
        return np.ones(len(result), dtype=bool)
    return (result["device_name"].astype("string").fillna("unknown device") == device).to_numpy()


def roof_traces(roof_list: Sequence[Roof], x0: float, x1: float, y1: float) -> list[dict[str, Any]]:
    """The roofs as the page draws them: sloped from the left edge to the highest compute roof, flat from the
    first ridge to the right edge. Each carries ``meta='roof:<key>'``."""
    top = max((r.value for r in roof_list if r.kind == "compute"), default=y1)
    out, min_ridge = [], x1
    for r in roof_list:
        if r.kind != "bandwidth":
            continue
        xe = top / r.value
        min_ridge = min(min_ridge, xe)
        out.append({"type": "scatter", "mode": "lines", "x": [x0, xe], "y": [r.value * x0, top], "name": esc(r.label),
                    "line": {"color": "#444", "dash": DASH.get(r.key.split("#")[0], "solid"), "width": 1.5},
                    "hoverinfo": "name", "meta": f"roof:{r.key}"})
    for r in roof_list:
        if r.kind != "compute":
            continue
        xs = min([min(min_ridge, x1)] + [r.value / b.value for b in roof_list if b.kind == "bandwidth"])
        out.append({"type": "scatter", "mode": "lines", "x": [xs, x1], "y": [r.value, r.value], "name": esc(r.label),
                    "line": {"color": ROOF_COLOURS.get(r.key.split(":")[0].split("#")[0], "#333"), "width": 2},
                    "hoverinfo": "name", "meta": f"roof:{r.key}"})
    return out


def si_ticks() -> tuple[list[float], list[str]]:
    """One tick per decade, 1n to 100E, labelled in SI prefixes (plotly's own SI format turns to powers of ten
    past 10^14, so one axis read 100T, 10^15, 10^16): the page's TICKS."""
    prefixes = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"),
                (1e-6, "µ"), (1e-9, "n"))
    vals, text = [], []
    for e in range(-9, 21):
        v = 10.0 ** e
        scale, p = next(((s, p) for s, p in prefixes if v >= s * 0.999), (1.0, ""))
        vals.append(v)
        text.append(f"{round(v / scale)}{p}")
    return vals, text


def axes(x: tuple[float, float], y: tuple[float, float]) -> dict[str, Any]:
    """The page's axes: log, one label per decade, SI prefixes on both."""
    vals, text = si_ticks()

    def axis(lim: tuple[float, float], title: str) -> dict[str, Any]:
        return {"type": "log", "range": [math.log10(lim[0]), math.log10(lim[1])], "tickmode": "array",
                "tickvals": vals, "ticktext": text, "title": {"text": title}}
    return {"xaxis": axis(x, "arithmetic intensity (FLOP/byte)"), "yaxis": axis(y, "performance (FLOP/s)")}


def figure(result: pd.DataFrame, title: str | None = None, levels: Sequence[str] | None = None,
           device: str | None = None, names: pd.Series | None = None) -> Any:
    """A plotly Figure of one device's kernels (``device``; default: the one with the most drawable time).

    ``levels``: the memory levels to draw (default: every level the frame has intensities for); ``names``:
    the hover text per row (default: the short kernel name)."""
    import plotly.graph_objects as go

    device = device if device is not None else drawable_device(result)
    mask = device_mask(result, device)
    frame = result[mask].reset_index(drop=True)
    if names is not None:
        names = pd.Series(np.asarray(names, dtype=object)[mask])
    levels = tuple(lv for lv in (levels or ALL_LEVELS) if f"intensity_{lv}_flop_per_byte" in frame)
    roof_list = roofs(frame, levels)
    pts = points(frame, levels)
    (x0, x1), (y0, y1) = axis_limits(pts, roof_list)
    fig = go.Figure()
    for t in roof_traces(roof_list, x0, x1, y1):
        fig.add_trace(go.Scatter(**t))
    if names is None:
        short = frame["kernel_short_name"] if "kernel_short_name" in frame else pd.Series(pd.NA, index=frame.index)
        full = frame["kernel_name"] if "kernel_name" in frame else pd.Series("", index=frame.index)
        names = short.astype("string").fillna(full.astype("string")).fillna("")
    bounds = frame["bound"].astype("string").fillna("unavailable") if "bound" in frame \
        else pd.Series("unavailable", index=frame.index)
    for (lv, bound), sub in pts.assign(bound=bounds.iloc[pts["row"]].to_numpy()).groupby(["level", "bound"], sort=False):
        rows = sub["row"].to_numpy()
        fig.add_trace(go.Scatter(
            x=sub["intensity_flop_per_byte"], y=sub["achieved_flop_per_s"], mode="markers",
            name=f"{bound} ({LEVEL_LABELS[lv]})", legendgroup=str(bound), meta=f"level:{lv}",
            marker={"color": BOUND_COLOURS.get(str(bound), "#e0a800"), "symbol": SYMBOLS[lv], "size": 9},
            text=[esc(n) for n in names.iloc[rows]],
            customdata=np.column_stack([pd.to_numeric(frame.loc[rows, c], errors="coerce").to_numpy()
                                        for c in ("duration_s", "flop_total")]),
            hovertemplate="%{text}<br>%{x:.3g} FLOP/B, %{y:.3s}FLOP/s<br>time %{customdata[0]:.3s}s, "
                          "%{customdata[1]:.3s}FLOP<extra></extra>"))
    hidden = unplotted_count(frame)
    subtitle = f" · {hidden} without FLOPs or bytes: not drawn" if hidden else ""
    head = title if title is not None else f"kernels on {device or 'unknown device'}"
    fig.update_layout(title={"text": esc(head) + subtitle}, hovermode="closest", template="plotly_white",
                      legend={"title": {"text": "colour = bound, shape = memory level"}}, **axes((x0, x1), (y0, y1)))
    if pts.empty:
        fig.add_annotation(text=f"nothing drawable on {esc(device or 'unknown device')}", xref="paper", yref="paper",
                           x=0.5, y=0.5, showarrow=False)
    return fig


__all__ = ["BOUND_COLOURS", "axes", "device_mask", "drawable_device", "figure", "roof_traces"]
