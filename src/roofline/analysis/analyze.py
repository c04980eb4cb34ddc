"""``roofline.analyze``: choose the peaks and the clock basis, then add the roofline columns.

Peaks (every one keeps its source in ``peak_*_source``):

* ``None`` / ``"counters"``: the report's own ``.peak_sustained`` × cycles/s at the clock each
  kernel ran at, with the spec table filling only what the counters lack (the ingest default);
* ``"spec"``: the spec table for every kernel's device, replacing the counters;
* a GPU name: the spec table entry of that GPU for every kernel;
* a :class:`~roofline.hardware.peaks.Peaks` (from a TOML file, a measurement, or built by hand).

Clock basis: ``"profiled"`` (default) keeps peaks at the clock the kernel ran at (ncu's
``--clock-control base`` locks it to base). ``"boost"`` rescales every compute and L1 roof that was
taken at the profiled SM clock by boost/profiled (device max clock); DRAM and L2 run in their own
clock domains, which ncu does not report a boost value for, so they stay as profiled and say so.
``"both"`` adds ``*_boost`` columns for the peak, attainable, binding roof, bound and % of roof.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from roofline.analysis.comm import communication
from roofline.analysis.diagnose import complete, diagnose
from roofline.analysis.hierarchy import LATENCY_THRESHOLD_PCT, hierarchical, roofline_columns
from roofline.analysis.pipes import PIPE_COLUMNS, pipe_columns
from roofline.analysis.render import Factor, as_string, render
from roofline.hardware.attach import fill_spec_peaks
from roofline.hardware.links import UserLinks
from roofline.hardware.names import require
from roofline.hardware.peaks import ALL_LEVELS, LEVELS, OPTIONAL_LEVELS, Peaks, recorded_levels
from roofline.hardware.specs import tensor_key
from roofline.schema import PRECISIONS, UNAVAILABLE, get_provenance, set_provenance, source_column

CLOCKS = ("profiled", "boost", "both")
COMPUTE_PEAK_COLUMNS = tuple(f"peak_flop_per_s_{p}" for p in PRECISIONS)
BANDWIDTH_PEAK_COLUMNS = tuple(f"peak_{lv}_bytes_per_s" for lv in LEVELS)
_BOTH_COLUMNS = ("peak_flop_per_s", "attainable_flop_per_s", "binding_roof", "bound", "pct_of_roof")


def analyze(
    kernels: pd.DataFrame,
    peaks: Peaks | str | None = None,
    levels: Sequence[str] = LEVELS,
    clock: str = "profiled",
    latency_threshold_pct: float = LATENCY_THRESHOLD_PCT,
    links: UserLinks | None = None,
) -> pd.DataFrame:
    """The roofline frame: the kernels frame (same rows, same order) plus the roofline columns, and for
    collectives their bandwidths against the links (``analysis/comm.py``; ``links``: a ``--links`` file's roofs).

    With the default levels, an optional level the frame records (AMD LDS) is analysed too."""
    levels = recorded_levels(kernels, tuple(levels))
    bad = [lv for lv in levels if lv not in ALL_LEVELS]
    if bad or not levels:
        raise ValueError(f"levels must be a non-empty subset of {', '.join(ALL_LEVELS)}; "
                         f"got {', '.join(levels) or 'none'}")
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {', '.join(CLOCKS)}; got {clock!r}")
    records = get_provenance(kernels)
    if kernels.attrs:
        # pandas deep-copies a frame's attrs into every column and frame taken from it (~10 µs each, a few hundred
        # per input): the analysis works on the bare frame and the result gets the provenance once
        kernels = kernels.copy(deep=False)
        kernels.attrs = {}
    framed = choose_peaks(kernels, peaks, published=(clock == "boost"))
    if clock == "boost":
        framed = at_boost_clock(framed)
    extra = hierarchical(framed, levels, latency_threshold_pct)
    if clock == "both":
        boost = hierarchical(at_boost_clock(choose_peaks(kernels, peaks, published=True)), levels, latency_threshold_pct)
        for c in _BOTH_COLUMNS:
            # a copy: the float columns are views of one block, which a view would keep whole (200 MB a 1M rows)
            extra[f"{c}_boost"] = boost[c].copy()
    comm = communication(framed, links)
    added = {*extra.columns, *comm.columns}
    stale = [c for c in framed.columns if c in added or c.endswith("_boost")]
    # one concat with the pipe columns too, and no drop where nothing is stale: each pass over the ~130
    # blocks of a kernels frame is a fixed ~1 ms an input (a frame analysed before holds the pipe columns:
    # diagnose puts the new ones where they are)
    base = framed.drop(columns=stale) if stale else framed
    if any(c in base for c in PIPE_COLUMNS):
        out = diagnose(pd.concat([base, extra, comm], axis=1), levels, latency_threshold_pct)
    else:
        pipes = pipe_columns(base, achieved=extra["achieved_flop_per_s"].to_numpy())
        out = complete(pd.concat([base, extra, comm, pipes], axis=1), levels, latency_threshold_pct)
    out.attrs = {}
    return set_provenance(out, records)


def choose_peaks(kernels: pd.DataFrame, peaks: Peaks | str | None, published: bool = False) -> pd.DataFrame:
    """The kernels frame with its peak columns taken from the chosen source."""
    if peaks is None or peaks == "counters":
        return kernels
    if isinstance(peaks, Peaks):
        return apply_peaks(kernels, peaks)
    if peaks == "spec":
        return _unfilled(fill_spec_peaks(_cleared(kernels), at_profiled_clock=not published), "the device's")
    if isinstance(peaks, str):
        spec = require(peaks)
        named = _cleared(kernels).assign(device_name=spec.name)
        filled = fill_spec_peaks(named, at_profiled_clock=not published)
        filled["device_name"] = kernels["device_name"]
        return _unfilled(filled, f"the {spec.name}")
    raise TypeError(f"peaks must be None, 'counters', 'spec', a GPU name or a Peaks; got {type(peaks).__name__}")


def _peak_columns(frame: pd.DataFrame) -> tuple[str, ...]:
    """The peak columns a spec-only analysis sets: compute, bandwidth, and an optional level's (LDS) where
    the frame has it (the spec table has no LDS figure: cleared, then said why)."""
    optional = tuple(c for lv in OPTIONAL_LEVELS if (c := f"peak_{lv}_bytes_per_s") in frame)
    return COMPUTE_PEAK_COLUMNS + BANDWIDTH_PEAK_COLUMNS + optional


def _cleared(kernels: pd.DataFrame) -> pd.DataFrame:
    out = kernels.copy(deep=False)  # (whole columns are set below, never rows: the caller's stay)
    for col in _peak_columns(out):
        out[col] = np.nan
        out[source_column(col)] = pd.Series(pd.NA, index=out.index, dtype="string")
    return out


def _unfilled(frame: pd.DataFrame, whose: str) -> pd.DataFrame:
    """Say why a spec-only peak is missing (L2 bandwidth is never published, or an unknown device)."""
    for col in _peak_columns(frame):
        src = source_column(col)
        why = ("vendors publish no L2 bandwidth" if col == "peak_l2_bytes_per_s"
               else f"{whose} spec table entry has no such figure (or the device is not in the table)")
        frame[src] = frame[src].astype("string").fillna(f"{UNAVAILABLE}: --peaks spec: {why}")
    return frame


def apply_peaks(kernels: pd.DataFrame, peaks: Peaks) -> pd.DataFrame:
    """Every kernel's peak columns from one :class:`Peaks` (the tensor roof per kernel's data path)."""
    out = kernels.copy()
    for p in ("fp64", "fp32", "fp16"):
        _put(out, f"peak_flop_per_s_{p}", slice(None), peaks, p, False)
    paths = out["tensor_path"] if "tensor_path" in out else pd.Series(pd.NA, index=out.index, dtype="string")
    for path in pd.unique(paths.astype(object)):
        path_s = None if pd.isna(path) else str(path)
        rows = (paths.isna() if path_s is None else (paths == path_s).fillna(False)).to_numpy()
        key, sparse = tensor_key(path_s)
        for fallback in (key, "tensor_fp16" if key in ("tensor_fp16_acc16", "tensor_bf16") else None):
            if fallback and fallback in peaks.compute:
                key = fallback
                break
        _put(out, "peak_flop_per_s_tensor", rows, peaks, key, sparse)
    for lv in ALL_LEVELS:
        col = f"peak_{lv}_bytes_per_s"
        pk = peaks.bandwidth.get(lv)
        if lv in OPTIONAL_LEVELS and pk is None and col not in out:
            continue  # no LDS roof given and none recorded: no column for a level the frame does not have
        out[col] = pk.value if pk else np.nan
        out[source_column(col)] = pk.describe() if pk else f"{UNAVAILABLE}: the peaks for {peaks.device} give no {lv} bandwidth"
    return out


def _put(out: pd.DataFrame, col: str, rows: object, peaks: Peaks, key: str, sparse: bool) -> None:
    pk = peaks.compute.get(key)
    if pk is None:
        out.loc[rows, col] = np.nan
        out.loc[rows, source_column(col)] = f"{UNAVAILABLE}: the peaks for {peaks.device} give no {key} figure"
        return
    scale = 2.0 if sparse and not pk.sparse else (0.5 if pk.sparse and not sparse else 1.0)
    note = pk.describe() + {2.0: "; × 2 for 2:4 sparsity (the kernel's counters show sparsity_on work)",
                            0.5: "; ÷ 2: the peak is 2:4 sparse, the kernel's work is dense", 1.0: ""}[scale]
    out.loc[rows, col] = pk.value * scale
    out.loc[rows, source_column(col)] = f"{key} {note}"


def at_boost_clock(kernels: pd.DataFrame) -> pd.DataFrame:
    """Compute and L1 roofs taken at the profiled SM clock, rescaled to the device's boost clock."""
    if "sm_clock_hz" not in kernels or "sm_boost_clock_hz" not in kernels or kernels.empty:
        return kernels
    out = kernels.copy(deep=False)  # (whole columns are set below, never rows: the caller's stay)
    n = len(out)
    clk = pd.to_numeric(out["sm_clock_hz"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    boost = pd.to_numeric(out["sm_boost_clock_hz"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    ok = (clk > 0) & (boost > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(ok, boost / clk, np.nan)
    boost_mhz = np.where(ok, np.round(boost / 1e6), 0)
    factor3 = np.where(ok, np.round(factor, 3), 0)
    clock_key = pd.factorize(boost_mhz * 1e4 + factor3)[0]

    for col in COMPUTE_PEAK_COLUMNS + BANDWIDTH_PEAK_COLUMNS:
        src = Factor(out, source_column(col))
        values = pd.to_numeric(out[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        if col in ("peak_dram_bytes_per_s", "peak_l2_bytes_per_s"):
            mask = ok & ~np.isnan(values)
            suffix = lambda r: " (as profiled: no boost value for this clock domain)"
        else:
            # only roofs taken at the profiled SM clock move: counters, or spec figures scaled to it
            moves = np.array([v.startswith("counters") or "profiled SM clock" in v or "(as profiled" in v
                              for v in src.values] + [False])
            mask = ok & moves[src.codes] & ~np.isnan(values)
            values = np.where(mask, values * factor, values)
            suffix = lambda r: f"; rescaled to the boost clock {boost_mhz[r]:.0f} MHz (× {factor3[r]:g})"
        text = render([src.key(), mask, np.where(mask, clock_key, 0)], n,
                      lambda r, src=src, mask=mask, suffix=suffix: (src.text(r) + suffix(r)) if mask[r]
                      else (src.text(r) if src.codes[r] >= 0 else None))
        out[col] = values
        out[source_column(col)] = as_string(text, out.index)
    return out


__all__ = ["CLOCKS", "analyze", "apply_peaks", "at_boost_clock", "choose_peaks", "roofline_columns"]
