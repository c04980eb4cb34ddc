"""Hardware counters carried onto a timeline: whole-run rooflines from a timeline plus a few replays.

A timeline (an Nsight Systems export, a Kineto trace, an ncu report with few metrics) has every
launch's time but no FLOPs; an Nsight Compute report has counters for a few sampled launches.
:func:`join_counters` gives every timeline launch the mean per-launch counters of the sampled
launches of the same kernel, matched in tiers, first hit wins:

1. ``exact: mangled name, grid, block`` / ``exact: name, grid, block`` (demangled name);
2. ``name only: ...`` (flagged): same mangled, then demangled name, another launch configuration;
3. ``short name only`` (flagged): same function base name, other template arguments or signature.

A row says how it matched (``match_method``), from how many sampled launches (``counter_samples``)
and how much they differ (``counter_spread``: std/mean of their FLOPs, else of their DRAM bytes).
Counts per launch, not rates, are carried: a launch's FLOPs and bytes do not depend on how long it
took, its time stays the timeline's. Kernels with no counterpart keep their time and say so;
:func:`unmatched_summary` gives their share of the time. memcpy/memset rows keep their own bytes.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from roofline.analysis.compare import normalise_name
from roofline.schema import FLOP_COLUMNS, UNAVAILABLE, source_column

LEVEL_COLUMNS = ("dram_bytes", "l2_bytes", "l1_bytes")
CARRIED = (*FLOP_COLUMNS, *LEVEL_COLUMNS)
#: peaks taken from the counters report where the timeline has none (same GPU only): an L2 roof must
#: be of the same definition as the L2 bytes carried, and only the ncu report knows it
CARRIED_PEAKS = ("peak_l2_bytes_per_s", "peak_l1_bytes_per_s")
GRID = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")
#: (match_method, key columns, flagged)
TIERS: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("exact: mangled name, grid, block", ("_k_mangled", *GRID), False),
    ("exact: name, grid, block", ("_k_name", *GRID), False),
    ("name only: mangled name (launch configuration differs)", ("_k_mangled",), True),
    ("name only: name (launch configuration differs)", ("_k_name",), True),
    ("short name only: function base name (template arguments or signature differ)", ("_k_short",), True),
)
#: demangler spellings of one template argument: ncu writes ``<(int)32, (bool)0>``, CUPTI ``<32, false>``
_CASTS = (re.compile(r"\(bool\)0(?=[,>])"), "false"), (re.compile(r"\(bool\)1(?=[,>])"), "true"), \
    (re.compile(r"\((?:unsigned |signed )?(?:int|char|short|long|long long|unsigned)\)(?=-?\d)"), "")
UNMATCHED = "unmatched: no launch of this kernel in the counters report(s)"
NOT_A_KERNEL = "not a kernel: memcpy/memset keep their own bytes"


def join_counters(timeline: pd.DataFrame, counters: pd.DataFrame) -> pd.DataFrame:
    """The timeline with per-launch counters of ``counters`` carried onto each of its kernel launches."""
    out = timeline.reset_index(drop=True)  # labels are positions from here on
    n = len(out)
    method = np.full(n, None, dtype=object)
    samples = np.full(n, -1, dtype=np.int64)
    spread = np.full(n, np.nan)
    is_copy = out["copy_kind"].notna().to_numpy(dtype=bool, copy=True) if "copy_kind" in out \
        else np.zeros(n, dtype=bool)
    if "duration_s_source" in out:  # Kineto rows of memcpy/memset events
        is_copy |= out["duration_s_source"].astype("string").str.contains(r"\((?:gpu_mem|Mem)", regex=True) \
            .fillna(False).to_numpy(dtype=bool)
    method[is_copy] = NOT_A_KERNEL
    values = {c: out[c].to_numpy(dtype="float64", na_value=np.nan, copy=True) for c in CARRIED}
    sources = {c: out[source_column(c)].to_numpy(dtype=object, na_value=None, copy=True) for c in CARRIED}
    todo = ~is_copy
    counters = counters[counters["copy_kind"].isna()] if "copy_kind" in counters else counters
    counters = pd.concat([counters.reset_index(drop=True), _keys(counters)], axis=1)
    keyed = pd.concat([_keys(out), out[[c for c in GRID if c in out]]], axis=1)
    multi = keyed["_k_name"].isna() & keyed["_events"].gt(1).fillna(False)
    method[multi.to_numpy()] = "unmatched: an op with several GPU events (counters are per kernel)"
    todo &= ~multi.to_numpy()
    tensor_rows: list[tuple[np.ndarray, np.ndarray]] = []
    for name, keys, flagged in TIERS:
        if not todo.any() or counters.empty:
            break
        groups = _groups(counters, keys)
        if groups.empty:
            continue
        left = keyed.loc[todo, list(keys)].dropna()
        if left.empty:
            continue
        left = left.assign(_row=left.index.to_numpy())
        hit = left.merge(groups, on=list(keys), how="inner")
        if hit.empty:
            continue
        rows = hit["_row"].to_numpy()
        for c in CARRIED:
            values[c][rows] = hit[c].to_numpy(dtype="float64", na_value=np.nan)
            sources[c][rows] = (f"counters ({name}): mean of " + hit["_n"].astype(str) + " sampled launch(es) of "
                                + hit["_file"] + ": " + hit[source_column(c)].astype(str)).to_numpy(dtype=object)
        method[rows] = name
        samples[rows] = hit["_n"].to_numpy()
        spread[rows] = hit["_spread"].to_numpy()
        _carry_peaks(out, hit, rows)
        if "_tensor_path" in hit and "tensor_path" in out:
            tensor_rows.append((rows, hit["_tensor_path"].to_numpy(dtype=object, na_value=None)))
        if flagged:
            _flag(out, rows, f"counters matched by {name.split(':')[0]}")
        if "device_name" in out:  # FLOPs carry across GPUs, cache and DRAM bytes may not: say so
            mine = out["device_name"].to_numpy(dtype=object, na_value=None)[rows]
            theirs = _known(hit["_device"])
            other = np.array([a is not None and b is not None and a != b for a, b in zip(mine, theirs)], dtype=bool)
            for dev in set(theirs[other].tolist()):
                _flag(out, rows[other & (theirs == dev)], f"counters profiled on another GPU ({dev})")
        todo[rows] = False
    method[todo] = UNMATCHED
    if (out["format"] == "torch-trace").any() if "format" in out else False:
        _next_to_model(out, values)
    for c in CARRIED:
        missing = todo & np.isnan(values[c])
        sources[c][missing] = f"{UNAVAILABLE}: {UNMATCHED}; {c} is not in the timeline"
        out[c] = values[c]
        out[source_column(c)] = pd.array(sources[c], dtype="string")
    out["match_method"] = pd.array(method, dtype="string")
    out["counter_samples"] = pd.arrays.IntegerArray(np.maximum(samples, 0), samples < 0)
    out["counter_spread"] = spread
    out = _tensor_paths(out, tensor_rows)
    out.attrs = dict(timeline.attrs)
    out.attrs["roofline.counters"] = sorted(set(counters["source_file"].dropna().astype(str)))
    return out


def _canonical(name: Any) -> Any:
    if name is None or name is pd.NA:
        return pd.NA
    s = " ".join(str(name).split())
    for rx, to in _CASTS:
        s = rx.sub(to, s)
    return s


def _keys(frame: pd.DataFrame) -> pd.DataFrame:
    """Match keys per row: mangled name, canonical demangled name, function base name, grid, block.

    A Kineto row is an op: its kernel is in ``mangled_name`` (the longest GPU event's name, demangled by
    CUPTI); only an op with one GPU event is one launch, so only those get a kernel key."""
    get = (lambda c: frame[c].astype("string") if c in frame else pd.Series(pd.NA, index=frame.index, dtype="string"))
    mangled, name, short = get("mangled_name"), get("kernel_name"), get("kernel_short_name")
    events = pd.Series(1, index=frame.index)
    if "format" in frame and (torch := (frame["format"] == "torch-trace").fillna(False)).any():
        src = frame["duration_s_source"].astype("string") if "duration_s_source" in frame else get("")
        events = events.where(~torch, pd.to_numeric(src.str.extract(r"of (\d+) GPU event")[0], errors="coerce"))
        one = torch & events.eq(1).fillna(False)
        name = name.where(~torch, mangled.where(one))
        short = short.where(~torch, mangled.where(one).map(normalise_name, na_action="ignore").astype("string"))
        mangled = mangled.where(~torch)
    keys = pd.DataFrame({"_k_mangled": mangled, "_k_name": name.map(_canonical, na_action="ignore").astype("string"),
                         "_k_short": short, "_events": events}, index=frame.index)
    for c in GRID:
        if c not in frame:  # (a frame that is not canonical: its launch configuration is unknown)
            keys[c] = pd.Series(pd.NA, index=frame.index, dtype="Int64")
    return keys.reset_index(drop=True)


def _next_to_model(out: pd.DataFrame, values: dict[str, np.ndarray]) -> None:
    """Kineto ops: their modelled FLOPs and DRAM bytes kept beside the counters', with the ratio."""
    flops = out[list(FLOP_COLUMNS)].sum(axis=1, min_count=1).to_numpy(dtype="float64", na_value=np.nan)
    hw = np.nansum(np.stack([values[c] for c in FLOP_COLUMNS]), axis=0)
    hw[np.all(np.isnan(np.stack([values[c] for c in FLOP_COLUMNS])), axis=0)] = np.nan
    torch = (out["format"] == "torch-trace").fillna(False).to_numpy()
    changed = torch & ~np.isclose(hw, flops, equal_nan=True)
    out["model_flop_total"] = np.where(torch, flops, np.nan)
    out["model_dram_bytes"] = np.where(torch, out["dram_bytes"].to_numpy(dtype="float64", na_value=np.nan), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["counters_to_model_flop_ratio"] = np.where(changed & (flops > 0), hw / flops, np.nan)
        out["counters_to_model_dram_ratio"] = np.where(
            torch, values["dram_bytes"] / out["model_dram_bytes"].to_numpy(), np.nan)


def _groups(counters: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    """Per key: mean of each carried count over the sampled launches, their number and spread."""
    have = counters.dropna(subset=list(keys))
    if have.empty:
        return pd.DataFrame()
    tensor = "tensor_path" in counters
    cols = list(keys) + list(CARRIED) + [source_column(c) for c in CARRIED] + \
        [c for c in (*CARRIED_PEAKS, *(source_column(p) for p in CARRIED_PEAKS), "device_name", "source_file")
         if c in have]
    have = have[cols].copy()
    flops = have[list(FLOP_COLUMNS)].sum(axis=1, min_count=1)
    have["_basis"] = flops.where(flops.notna() & (flops != 0), have["dram_bytes"])
    g = have.groupby(list(keys), sort=False, dropna=True)
    agg = g[list(CARRIED) + [c for c in CARRIED_PEAKS if c in have]].mean()  # NaN-skipping mean
    agg["_n"] = g.size()
    std, mean = g["_basis"].std(ddof=0), g["_basis"].mean()
    agg["_spread"] = (std / mean.where(mean != 0)).astype("float64")
    firsts = g.first()  # first non-null source/file/device per key
    for c in [source_column(c) for c in CARRIED] + [source_column(p) for p in CARRIED_PEAKS if p in have]:
        agg[c] = firsts[c]
    agg["_file"] = firsts["source_file"].astype(str) if "source_file" in firsts else "the counters report"
    agg["_device"] = firsts["device_name"] if "device_name" in firsts else None
    if tensor:
        agg["_tensor_path"] = counters.loc[have.index, "tensor_path"].groupby(
            [have[k] for k in keys], sort=False, dropna=True).first()
    for c in [c for c in agg.columns if c.endswith("_source")]:
        agg[c] = agg[c].astype(object).where(agg[c].notna(), f"{UNAVAILABLE} in the counters report")
    return agg.reset_index()


def _carry_peaks(out: pd.DataFrame, hit: pd.DataFrame, rows: np.ndarray) -> None:
    """L2/L1 roofs from the counters report where the timeline has none and the GPU is the same."""
    if "device_name" not in out:
        return
    dev = out["device_name"].to_numpy(dtype=object, na_value=None)[rows]
    same = np.array([d is not None and d == h for d, h in zip(dev, _known(hit["_device"]))], dtype=bool)
    for p in CARRIED_PEAKS:
        if p not in hit or p not in out:
            continue
        cur = out[p].to_numpy(dtype="float64", na_value=np.nan, copy=True)
        take = same & np.isnan(cur[rows]) & hit[p].notna().to_numpy()
        if not take.any():
            continue
        src = out[source_column(p)].to_numpy(dtype=object, na_value=None, copy=True)
        cur[rows[take]] = hit[p].to_numpy(dtype="float64")[take]
        src[rows[take]] = ("from --counters " + hit["_file"].astype(str) + ": " +
                           hit[source_column(p)].astype(str)).to_numpy(dtype=object)[take]
        out[p] = cur
        out[source_column(p)] = pd.array(src, dtype="string")


def _known(values: pd.Series) -> np.ndarray:
    """A column's values as objects, every kind of missing (None, NaN, pd.NA of a string or nullable column: a
    CSV export names no device) as None, so comparing them is a plain bool."""
    return np.array([None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v
                     for v in values.astype(object)], dtype=object)


def _tensor_paths(out: pd.DataFrame, carried: list[tuple[np.ndarray, np.ndarray]]) -> pd.DataFrame:
    """The tensor data path measured by ncu replaces the timeline's, and the tensor roof follows it:
    the rows whose path changed get their spec roof again (hardware/specs.py, by device name)."""
    if not carried or "tensor_path" not in out:
        return out
    path = out["tensor_path"].to_numpy(dtype=object, na_value=None, copy=True)
    changed = np.zeros(len(out), dtype=bool)
    for rows, paths in carried:
        paths = _known(pd.Series(paths, dtype=object))
        take = np.array([p is not None for p in paths], dtype=bool)
        changed[rows[take]] |= np.array([a != b for a, b in zip(path[rows[take]], paths[take])], dtype=bool)
        path[rows[take]] = paths[take]
    if not changed.any():
        return out
    from roofline.hardware.attach import fill_spec_peaks

    out["tensor_path"] = pd.array(path, dtype="string")
    col = "peak_flop_per_s_tensor"
    if col in out:
        peak = out[col].to_numpy(dtype="float64", na_value=np.nan, copy=True)
        src = out[source_column(col)].to_numpy(dtype=object, na_value=None, copy=True)
        peak[changed], src[changed] = np.nan, None
        out[col], out[source_column(col)] = peak, pd.array(src, dtype="string")
        out = fill_spec_peaks(out)
    return out


def _flag(out: pd.DataFrame, rows: np.ndarray, note: str) -> None:
    flags = out["flags"].to_numpy(dtype=object, na_value=None, copy=True) if "flags" in out \
        else np.full(len(out), None, dtype=object)
    flags[rows] = [note if f is None else f"{f}; {note}" for f in flags[rows]]
    out["flags"] = pd.array(flags, dtype="string")


def unmatched_summary(joined: pd.DataFrame) -> dict[str, Any]:
    """Time share of the kernel launches that found no counters, and those kernels by time."""
    kernels = joined[joined["match_method"] != NOT_A_KERNEL]
    dur = kernels["duration_s"].astype("float64")
    total = float(dur.sum())
    lost = kernels["match_method"] == UNMATCHED
    by = dur[lost].groupby(kernels.loc[lost, "kernel_name"].astype(str)).agg(["sum", "count"]) \
        .sort_values("sum", ascending=False)
    methods = kernels["match_method"].value_counts().to_dict()
    return {
        "kernel_time_s": total,
        "unmatched_time_s": float(dur[lost].sum()),
        "unmatched_time_share": float(dur[lost].sum()) / total if total else None,
        "launches": len(kernels),
        "unmatched_launches": int(lost.sum()),
        "by_method": {str(k): int(v) for k, v in methods.items()},
        "unmatched_kernels": [{"kernel_name": k, "time_s": float(r["sum"]), "launches": int(r["count"])}
                              for k, r in by.iterrows()],
    }
