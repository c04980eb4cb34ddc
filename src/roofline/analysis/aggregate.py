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
    if frame.empty:
        return pd.DataFrame(columns=[by, "device_name", "kernel_count", "duration_s"])
    return finish(partial(frame, by, levels), by, levels, latency_threshold_pct)


def partial(frame: pd.DataFrame, by: str = "program", levels: Sequence[str] = LEVELS) -> pd.DataFrame:
    """The sums and counts a group's row is made of, one row per (group, device): partials of several frames
    (record batches of a dataset larger than memory) :func:`combine` into those of their union."""
    return _grouped(_work(frame, levels, rank=by == "rank"), frame, by, levels)


def aggregate_each(frame: pd.DataFrame, bys: Sequence[str], levels: Sequence[str] = LEVELS,
                   latency_threshold_pct: float = LATENCY_THRESHOLD_PCT) -> dict[str, pd.DataFrame]:
    """:func:`aggregate` of ``frame`` by each of ``bys``, the per-kernel quantities the sums read computed once
    (the report page groups the same rows by program and by NVTX range: half of each grouping's time)."""
    for by in bys:
        if by not in GROUPINGS:
            raise ValueError(f"by must be one of {', '.join(GROUPINGS)}; got {by!r}")
    if frame.empty:
        return {by: aggregate(frame, by, levels, latency_threshold_pct) for by in bys}
    work = _work(frame, levels, rank="rank" in bys)
    return {by: finish(_grouped(work, frame, by, levels), by, levels, latency_threshold_pct) for by in bys}


def _work(frame: pd.DataFrame, levels: Sequence[str], rank: bool = False) -> pd.DataFrame:
    """Per kernel, what the groups' sums read: the quantities of timed kernels, each roof's weights, and the counts
    (of missing quantities, untimed kernels, work without a roof)."""
    sums = _sums(levels)
    dur = pd.to_numeric(frame["duration_s"], errors="coerce")
    timed = (dur > 0).fillna(False).to_numpy()
    # kernels without a positive time cannot contribute to a rate: leave all their quantities out
    floats: dict[str, pd.Series] = {"_dur": dur.where(timed)}
    counts: dict[str, object] = {"_untimed": ~timed}
    for c in sums:
        floats[c] = pd.to_numeric(frame[c], errors="coerce").where(timed)
        counts[f"_missing_{c}"] = floats[c].isna()
    for p, fc in zip(PRECISIONS, FLOP_COLUMNS):
        f = floats[fc]
        pk = pd.to_numeric(frame[f"peak_flop_per_s_{p}"], errors="coerce")
        pk = pk.where(np.isfinite(pk) & (pk > 0))
        # time at peak per kernel (what the harmonic mean needs); a kernel with work but no roof
        # makes the group's roof unknown, as it would for one kernel
        floats[f"_t_{p}"] = pd.Series(np.where(f > 0, f / pk, 0.0), index=frame.index)
        counts[f"_nopeak_{p}"] = ((f > 0) & pk.isna()).astype(int)
        floats[f"_pkw_{p}"] = pk * floats["_dur"]
        floats[f"_pkd_{p}"] = floats["_dur"].where(pk.notna())
    for lv in levels:
        bw = pd.to_numeric(frame[f"peak_{lv}_bytes_per_s"], errors="coerce")
        bw = bw.where(np.isfinite(bw) & (bw > 0))
        floats[f"_bww_{lv}"] = bw * floats["_dur"]
        floats[f"_bwd_{lv}"] = floats["_dur"].where(bw.notna())  # time of the kernels that have this roof
    texts = [frame[c] for c in ("tensor_path", *(["rank_source"] if rank else [])) if c in frame]
    # the float columns stay one per block, as columns set one by one were: pandas' grouped sum of a block of
    # several columns can differ from one column's in the last bit; the counts are exact in any layout
    return pd.concat([pd.DataFrame(counts, index=frame.index), *(s.rename(k) for k, s in floats.items()), *texts],
                     axis=1)


def _grouped(work: pd.DataFrame, frame: pd.DataFrame, by: str, levels: Sequence[str]) -> pd.DataFrame:
    """The partial of ``frame`` by ``by`` from its :func:`_work`, whose key columns it sets (a later ``by`` sets
    its own: the columns the sums read stay as they are)."""
    sums = _sums(levels)
    keys = ["_group", "_device", "_config"][:len(found := group_keys(frame, by))]
    for k, values in zip(keys, found):
        work[k] = values
    g = work.groupby(keys, sort=False, dropna=False)
    weighted = [*(f"_{w}_{p}" for p in PRECISIONS for w in ("t", "pkw", "pkd")),
                *(f"_{w}_{lv}" for lv in levels for w in ("bww", "bwd"))]
    out = g[[*sums, *weighted]].sum(min_count=1)
    counts = g[[*(f"_missing_{c}" for c in sums), "_untimed", *(f"_nopeak_{p}" for p in PRECISIONS)]].sum()
    out[[f"_missing_{c}" for c in sums]] = counts[[f"_missing_{c}" for c in sums]].to_numpy()
    out["_untimed"] = counts["_untimed"]
    out["kernel_count"] = g.size()
    for p in PRECISIONS:
        out[f"_nopeak_{p}"] = counts[f"_nopeak_{p}"]
    ids = g.ngroup().to_numpy()
    out["_tensor_paths"] = _distinct(ids, len(out), work["tensor_path"]) if "tensor_path" in work \
        else [frozenset()] * len(out)
    if by == "rank" and "rank_source" in work:
        out["_rank_sources"] = _distinct(ids, len(out), work["rank_source"])
    return out


def group_keys(frame: pd.DataFrame, by: str) -> list[pd.Series | str]:
    """Each row's group and device as :func:`aggregate` groups them, and for ``kernel`` its shapes or launch
    configuration (TraceLens-style: a name with other shapes or another launch is another row)."""
    key = GROUPINGS[by]
    group: pd.Series | str = frame[key].astype("string").fillna("(none)") if key in frame else "(none)"
    if by == "step" and key in frame:
        group = step_ranges(frame[key]).fillna(NO_STEP)
    keys = [group, frame["device_name"].astype("string").fillna(UNKNOWN_DEVICE)]
    return [*keys, kernel_config(frame)] if by == "kernel" else keys


def step_ranges(nvtx: pd.Series, flags: int = re.IGNORECASE) -> pd.Series:
    """The training step (ProfilerStep#N, "step N" range) in each NVTX path, NA outside any: the pattern searched
    once per distinct path (a dataset's 60,000 rows have a few hundred). ``flags``: the pattern's (the
    communication chart's steps match case-sensitively)."""
    codes, uniq = pd.factorize(nvtx.astype("string"))
    found = pd.Series(uniq, dtype="string").str.extract(STEP_RANGE, flags=flags)[0]
    # the distinct paths' steps taken for every row (missing at -1): not a 60,000-row array of objects made a string
    # column anew
    return pd.Series(found.array.take(codes, allow_fill=True), index=nvtx.index, dtype="string")


def combine(partials: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The partials of several frames as the partial of their union (groups in order of first appearance)."""
    both = pd.concat(partials)
    g = both.groupby(level=list(range(both.index.nlevels)), sort=False, dropna=False)
    sets = [c for c in ("_tensor_paths", "_rank_sources") if c in both]
    out = g[[c for c in both.columns if c not in sets]].sum(min_count=1)
    for c in [c for c in out.columns if c.startswith(("_missing_", "_nopeak_")) or c in ("_untimed", "kernel_count")]:
        out[c] = out[c].fillna(0).astype("int64")
    for c in sets:
        out[c] = g[c].agg(lambda s: frozenset().union(*(x for x in s if isinstance(x, frozenset))))
    return out


def finish(sums_: pd.DataFrame, by: str = "program", levels: Sequence[str] = LEVELS,
           latency_threshold_pct: float = LATENCY_THRESHOLD_PCT) -> pd.DataFrame:
    """The groups' roofline rows from their :func:`partial` (or :func:`combine`d partials)."""
    sums = _sums(levels)
    out = sums_[[*sums, "kernel_count"]].copy()
    untimed = sums_["_untimed"]
    missing = sums_[[f"_missing_{c}" for c in sums]].set_axis(sums, axis=1)
    for p, fc in zip(PRECISIONS, FLOP_COLUMNS):
        nopeak = sums_[f"_nopeak_{p}"]
        harmonic = (out[fc] / sums_[f"_t_{p}"]).where(nopeak == 0)
        weighted = sums_[f"_pkw_{p}"] / sums_[f"_pkd_{p}"]
        out[f"peak_flop_per_s_{p}"] = np.where(out[fc] > 0, harmonic, weighted)
        out[source_column(f"peak_flop_per_s_{p}")] = np.where(
            nopeak > 0, f"{UNAVAILABLE}: some kernels with {p} work have no {p} roof",
            f"{p} peaks of the group's kernels: FLOP-weighted harmonic mean")
    for lv in levels:
        out[f"peak_{lv}_bytes_per_s"] = sums_[f"_bww_{lv}"] / sums_[f"_bwd_{lv}"]
        out[source_column(f"peak_{lv}_bytes_per_s")] = f"mean of the kernels' {lv} roofs, weighted by their time"
        out[source_column(f"{lv}_bytes")] = UNAVAILABLE + f": no {lv} bytes for any timed kernel of the group"
    out["tensor_path"] = [next(iter(x)) if len(x) == 1 else pd.NA for x in sums_["_tensor_paths"]]
    if "_rank_sources" in sums_:  # nsys: where each rank came from, or why there is none
        out["rank_source"] = ["; ".join(sorted(x)) or pd.NA for x in sums_["_rank_sources"]]
    out[source_column("flop_fp32")] = UNAVAILABLE + ": no FLOP counters in any timed kernel of the group"

    rows = hierarchical(out.reset_index(drop=True), levels, latency_threshold_pct)
    rows.index = out.index
    partial_ = _partial_notes(missing.sub(untimed, axis=0), out["kernel_count"] - untimed, untimed)
    note = rows["analysis_note"].astype(object)
    ranked = [f"rank from {x}" if isinstance(x, str) and not x.startswith(UNAVAILABLE) else
              (f"rank {x}" if isinstance(x, str) else None)
              for x in (out["rank_source"] if "rank_source" in out else [None] * len(out))]
    rows["analysis_note"] = pd.Series(
        ["; ".join(x for x in (r, p, n) if isinstance(x, str) and x) or None for r, p, n in zip(ranked, partial_, note)],
        index=rows.index, dtype="string",
    )
    result = pd.concat([out[["kernel_count", *sums]], rows], axis=1).reset_index()
    result = result.rename(columns={"_group": by, "_device": "device_name", "_config": "kernel_config"})
    return result.sort_values("duration_s", ascending=False, na_position="last", kind="stable").reset_index(drop=True)


def _sums(levels: Sequence[str]) -> list[str]:
    return ["duration_s", *FLOP_COLUMNS, *(f"{lv}_bytes" for lv in levels)]


def _distinct(ids: np.ndarray, n: int, values: pd.Series) -> list[frozenset]:
    """Per group (``ids``: each row's group number, ``n`` groups): its distinct values, missing left out, as text
    (one pass over the distinct (group, value) pairs: a Python call per group cost ~1 ms each)."""
    ok = values.notna().to_numpy()
    pairs = pd.DataFrame({"g": ids[ok], "v": values[ok].astype(str).to_numpy(dtype=object)}).drop_duplicates()
    found: list[set[str]] = [set() for _ in range(n)]
    for i, v in zip(pairs["g"].tolist(), pairs["v"].tolist()):
        found[i].add(v)
    return [frozenset(x) for x in found]


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
    names = list(missing.columns)
    # (rows as lists: a dict per row cost most of the time; the numbers print as numpy's did)
    for row, n, u in zip(missing.to_numpy().tolist(), counts.tolist(), untimed.tolist()):
        parts = [f"{int(u)} kernel(s) without a positive duration left out"] if u else []
        parts += [f"{int(m)} of {n} timed kernels lack {c} (totals are lower bounds)" for c, m in zip(names, row)
                  if 0 < m < n]
        notes.append("; ".join(parts))
    return notes
