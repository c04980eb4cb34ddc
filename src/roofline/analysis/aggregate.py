"""Programs, NVTX ranges and kernel names as roofline points of their own (XProf's program view).

A group's point is total FLOPs over total time and total bytes per level over total time. Its
roofs are the ones that make "time at the roof" add up: per precision the FLOP-weighted harmonic
mean of the kernels' peaks (Σ FLOPs / Σ FLOPs_k/Peak_k, exact for the time the work would take at
peak) and per level the time-weighted mean bandwidth. The same hierarchical rules then apply.
A quantity missing for some kernels of a group makes the group's total a lower bound, and the
note says how many kernels lacked it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from roofline.analysis.hierarchy import LATENCY_THRESHOLD_PCT, hierarchical
from roofline.hardware.peaks import LEVELS
from roofline.schema import FLOP_COLUMNS, PRECISIONS, UNAVAILABLE, source_column

GROUPINGS = {"program": "source_file", "nvtx": "nvtx_range", "kernel": "kernel_name",
             "process": "process", "rank": "rank",  # process: nsys timelines; rank: Kineto traces
             "step": "nvtx_range"}  # the step range in the NVTX path (Kineto: ProfilerStep#N)
#: a training step's range name: PyTorch's ProfilerStep#N, or NVTX ranges such as "step 3", "train_step_3", "iter=3"
STEP_RANGE = r"(ProfilerStep#\d+|(?<![A-Za-z])(?:train[_ ]?)?(?:step|iteration|iter)[\s_#:=-]*\d+)"
NO_STEP = "(no step range)"  # the group of kernels outside any step range
UNKNOWN_DEVICE = "(unknown device)"


def aggregate(
    frame: pd.DataFrame,
    by: str = "program",
    levels: Sequence[str] = LEVELS,
    latency_threshold_pct: float = LATENCY_THRESHOLD_PCT,
) -> pd.DataFrame:
    """One roofline row per group (and device), longest total time first."""
    if by not in GROUPINGS:
        raise ValueError(f"by must be one of {', '.join(GROUPINGS)}; got {by!r}")
    key = GROUPINGS[by]
    if frame.empty:
        return pd.DataFrame(columns=[by, "device_name", "kernel_count", "duration_s"])
    work = frame.copy()
    work["_group"] = work[key].astype("string").fillna("(none)") if key in work else "(none)"
    if by == "step" and key in work:
        work["_group"] = work[key].astype("string").str.extract(STEP_RANGE, flags=re.IGNORECASE)[0] \
            .fillna(NO_STEP)
    work["_device"] = work["device_name"].astype("string").fillna(UNKNOWN_DEVICE)
    keys = ["_group", "_device"]
    if by == "kernel":  # TraceLens-style: a name with other shapes or another launch is another row
        work["_config"] = kernel_config(work)
        keys.append("_config")
    dur = pd.to_numeric(work["duration_s"], errors="coerce")
    timed = (dur > 0).fillna(False).to_numpy()
    # kernels without a positive time cannot contribute to a rate: leave all their quantities out
    work["_untimed"] = ~timed
    work["_dur"] = dur.where(timed)
    sums = ["duration_s", *FLOP_COLUMNS, *(f"{lv}_bytes" for lv in levels)]
    for c in sums:
        work[c] = pd.to_numeric(work[c], errors="coerce").where(timed)
    for p, fc in zip(PRECISIONS, FLOP_COLUMNS):
        f = work[fc]
        pk = pd.to_numeric(work[f"peak_flop_per_s_{p}"], errors="coerce")
        pk = pk.where(np.isfinite(pk) & (pk > 0))
        # time at peak per kernel (what the harmonic mean needs); a kernel with work but no roof
        # makes the group's roof unknown, as it would for one kernel
        work[f"_t_{p}"] = np.where(f > 0, f / pk, 0.0)
        work[f"_nopeak_{p}"] = ((f > 0) & pk.isna()).astype(int)
        work[f"_pkw_{p}"] = pk * work["_dur"]
        work[f"_pkd_{p}"] = work["_dur"].where(pk.notna())
    for lv in levels:
        bw = pd.to_numeric(work[f"peak_{lv}_bytes_per_s"], errors="coerce")
        bw = bw.where(np.isfinite(bw) & (bw > 0))
        work[f"_bww_{lv}"] = bw * work["_dur"]
        work[f"_bwd_{lv}"] = work["_dur"].where(bw.notna())  # time of the kernels that have this roof

    g = work.groupby(keys, sort=False, dropna=False)
    out = g[sums].sum(min_count=1)
    missing = work[sums].isna().groupby([work[k] for k in keys], sort=False, dropna=False).sum()
    untimed = g["_untimed"].sum()
    out["kernel_count"] = g.size()
    for p, fc in zip(PRECISIONS, FLOP_COLUMNS):
        t_at_peak = g[f"_t_{p}"].sum(min_count=1)
        harmonic = (out[fc] / t_at_peak).where(g[f"_nopeak_{p}"].sum() == 0)
        weighted = g[f"_pkw_{p}"].sum(min_count=1) / g[f"_pkd_{p}"].sum(min_count=1)
        out[f"peak_flop_per_s_{p}"] = np.where(out[fc] > 0, harmonic, weighted)
        out[source_column(f"peak_flop_per_s_{p}")] = np.where(
            g[f"_nopeak_{p}"].sum() > 0, f"{UNAVAILABLE}: some kernels with {p} work have no {p} roof",
            f"{p} peaks of the group's kernels: FLOP-weighted harmonic mean")
    for lv in levels:
        out[f"peak_{lv}_bytes_per_s"] = g[f"_bww_{lv}"].sum(min_count=1) / g[f"_bwd_{lv}"].sum(min_count=1)
        out[source_column(f"peak_{lv}_bytes_per_s")] = f"mean of the kernels' {lv} roofs, weighted by their time"
        out[source_column(f"{lv}_bytes")] = UNAVAILABLE + f": no {lv} bytes for any timed kernel of the group"
    out["tensor_path"] = g["tensor_path"].agg(_only) if "tensor_path" in work else pd.NA
    if by == "rank" and "rank_source" in work:  # nsys: where each rank came from, or why there is none
        out["rank_source"] = g["rank_source"].agg(lambda s: "; ".join(sorted(set(s.dropna().astype(str)))) or pd.NA)
    out[source_column("flop_fp32")] = UNAVAILABLE + ": no FLOP counters in any timed kernel of the group"

    rows = hierarchical(out.reset_index(drop=True), levels, latency_threshold_pct)
    rows.index = out.index
    partial = _partial_notes(missing.sub(untimed, axis=0), out["kernel_count"] - untimed, untimed)
    note = rows["analysis_note"].astype(object)
    ranked = [f"rank from {x}" if isinstance(x, str) and not x.startswith(UNAVAILABLE) else
              (f"rank {x}" if isinstance(x, str) else None)
              for x in (out["rank_source"] if "rank_source" in out else [None] * len(out))]
    rows["analysis_note"] = pd.Series(
        ["; ".join(x for x in (r, p, n) if isinstance(x, str) and x) or None for r, p, n in zip(ranked, partial, note)],
        index=rows.index, dtype="string",
    )
    result = pd.concat([out[["kernel_count", *sums]], rows], axis=1).reset_index()
    result = result.rename(columns={"_group": by, "_device": "device_name", "_config": "kernel_config"})
    return result.sort_values("duration_s", ascending=False, na_position="last", kind="stable").reset_index(drop=True)


def kernel_config(frame: pd.DataFrame) -> pd.Series:
    """What tells launches of one kernel name apart (``--by kernel``): a trace op's input shapes as recorded,
    else the launch configuration 'grid [x, y, z] block [x, y, z]' ('(none)' where neither is recorded)."""
    def dims(prefix: str) -> pd.Series:
        cols = [frame[f"{prefix}_{a}"] if f"{prefix}_{a}" in frame else pd.Series(pd.NA, index=frame.index)
                for a in "xyz"]
        text = "[" + cols[0].astype("string") + ", " + cols[1].astype("string") + ", " + cols[2].astype("string") + "]"
        return text

    launch = ("grid " + dims("grid") + " block " + dims("block")).astype("string")
    shapes = frame["op_input_dims"].astype("string") if "op_input_dims" in frame \
        else pd.Series(pd.NA, index=frame.index, dtype="string")
    shapes = shapes.where(shapes.notna() & (shapes != "") & (shapes != "[]"))
    return shapes.fillna(launch).fillna("(none)")


def _only(s: pd.Series) -> object:
    vals = s.dropna().unique()
    return vals[0] if len(vals) == 1 else pd.NA


def _partial_notes(missing: pd.DataFrame, counts: pd.Series, untimed: pd.Series) -> list[str]:
    notes = []
    for (_, row), n, u in zip(missing.iterrows(), counts, untimed):
        parts = [f"{int(u)} kernel(s) without a positive duration left out"] if u else []
        parts += [f"{int(m)} of {n} timed kernels lack {c} (totals are lower bounds)" for c, m in row.items() if 0 < m < n]
        notes.append("; ".join(parts))
    return notes
