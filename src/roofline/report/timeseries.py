"""One roofline point per training step over the run: the data of the HTML report's step chart.

Steps are the ranges ``analysis/aggregate.py`` finds by name in the NVTX path of each kernel
(PyTorch's ``ProfilerStep#N`` in Kineto traces and nsys timelines, NVTX ranges such as ``step 3``).
A step's point is its kernels' FLOPs over their total time (achieved FLOP/s) and their bytes per
memory level over the same time (achieved bandwidth), with the intensity per level: the aggregate's
own numbers, so the chart and ``--by step`` agree. Steps are ordered by the number in their name,
then by when their first kernel started where the profile records it (``start_ns``). The page draws
the chart for a device with at least :data:`MIN_STEPS` steps (``templates/timeseries.js``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from roofline.analysis.aggregate import NO_STEP, STEP_RANGE, UNKNOWN_DEVICE, aggregate, step_ranges

#: a run with fewer steps has no time series worth a chart
MIN_STEPS = 2


def _finite(v: object) -> float | None:
    """A number for the page's JSON; missing is None (render() turns ±inf into None as well)."""
    return None if v is None or pd.isna(v) else float(v)  # type: ignore[arg-type]


def step_points(frame: pd.DataFrame, levels: Sequence[str]) -> list[dict[str, object]]:
    """Per (device, step): label, index, start (s after the first step, or None), kernel time, achieved
    FLOP/s, bandwidth and intensity per level; devices with fewer than MIN_STEPS steps are left out."""
    if frame.empty or "nvtx_range" not in frame or not frame["nvtx_range"].notna().any():
        return []
    step = step_ranges(frame["nvtx_range"])
    if not step.notna().any():  # no step range at all: no step to aggregate
        return []
    # nor where no device has MIN_STEPS steps (the aggregate's rows per device: its distinct steps)
    dev = frame["device_name"].astype("string").fillna(UNKNOWN_DEVICE) if "device_name" in frame \
        else pd.Series(UNKNOWN_DEVICE, index=frame.index, dtype="string")
    if pd.DataFrame({"s": step, "d": dev}).dropna().drop_duplicates()["d"].value_counts().max() < MIN_STEPS:
        return []
    agg = aggregate(frame, by="step", levels=levels)
    agg = agg[agg["step"] != NO_STEP]
    if agg.empty:
        return []
    starts: dict[tuple[str, str], float] = {}
    if "start_ns" in frame and frame["start_ns"].notna().any():
        # earliest start per distinct (range path, device) first: the step regex then runs on those few paths
        dev = frame["device_name"].astype("string").fillna(UNKNOWN_DEVICE)
        t = pd.to_numeric(frame["start_ns"], errors="coerce")
        first = t.groupby([frame["nvtx_range"].astype("string"), dev], dropna=True).min()
        step = first.index.get_level_values(0).to_series().str.extract(STEP_RANGE, flags=re.IGNORECASE)[0]
        for (s, v), d in zip(zip(step.tolist(), first.tolist()), first.index.get_level_values(1)):
            if isinstance(s, str) and np.isfinite(v):
                starts[(s, str(d))] = min(v, starts.get((s, str(d)), np.inf))
    out: list[dict[str, object]] = []
    for device, sub in agg.groupby("device_name", sort=False):
        if len(sub) < MIN_STEPS:
            continue
        rows = []
        for _, g in sub.iterrows():
            label = str(g["step"])
            num = re.findall(r"\d+", label)
            t0 = starts.get((label, str(device)))
            rows.append((int(num[-1]) if num else 0, t0 if t0 is not None else np.inf, label, g))
        rows.sort(key=lambda r: (r[0], r[1], r[2]))
        origin = min((r[1] for r in rows), default=np.inf)
        for index, start, label, g in rows:
            time = _finite(g["duration_s"])
            item: dict[str, object] = {
                "device": "" if device == UNKNOWN_DEVICE else str(device), "label": label, "index": index,
                "start_s": (start - origin) * 1e-9 if np.isfinite(start) and np.isfinite(origin) else None,
                "time": time, "kernels": int(g["kernel_count"]), "achieved": _finite(g["achieved_flop_per_s"]),
                "bound": str(g["bound"]),
            }
            for lv in levels:
                item[f"bw_{lv}"] = _finite(g.get(f"achieved_{lv}_bytes_per_s"))  # the aggregate's, as --by step
                item[f"int_{lv}"] = _finite(g.get(f"intensity_{lv}_flop_per_byte"))
            out.append(item)
    return out
