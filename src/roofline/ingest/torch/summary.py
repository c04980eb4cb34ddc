"""Per-trace extras of the Kineto reader: the cost columns of an op that carries its own estimates
(Inductor's ``kernel_flop``/``kernel_num_gb``), the summary of the ops left without FLOPs or bytes, and
the trace-level provenance."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import numpy as np
import pandas as pd

from roofline.ingest.torch.decode import Args, shapes
from roofline.schema import UNAVAILABLE

NUMBER = (int, float)
NAN = float("nan")
#: where FLOPs go, by the precision of their cost (as torch_trace.FLOP_SLOT)
FLOP_SLOT = {"fp64": 0, "fp32": 1, "fp16": 2, "bf16": 2, "tensor": 3}


def estimates(a: Args, op_args: Args | None, name: str) -> tuple[Any, ...] | None:
    """Cost columns from ``kernel_flop`` / ``kernel_num_gb`` (torch._inductor.analysis.profile_analysis
    writes them on ops and kernels; Inductor's benchmark_kernel/profile_bandwidth estimates)."""
    flop, gb = a.kernel_flop, a.kernel_num_gb
    if flop.__class__ not in NUMBER and gb.__class__ not in NUMBER:
        return None
    from roofline.metrics.ops import compute
    from roofline.metrics.ops.args import size

    types = shapes(op_args.input_type) if op_args is not None else None
    dtype = next((t for t in types if size(t)), "") if isinstance(types, list) else ""
    # an Inductor template matmul (triton_tem_fused_mm…, …addmm…, …bmm…) runs on tensor cores
    precision, path = compute(dtype, name.startswith("triton_tem_") or "mm" in name.split("_"))
    flops = [0.0, 0.0, 0.0, 0.0]
    src = f"trace estimate: kernel_flop = {flop} (precision from the dtype {dtype or 'not recorded: fp32'})"
    if flop.__class__ in NUMBER:
        flops[FLOP_SLOT.get(precision, 1)] = float(flop)
    else:
        flops, src = [NAN] * 4, f"{UNAVAILABLE}: the trace carries kernel_num_gb but no kernel_flop"
    if gb.__class__ in NUMBER:
        nbytes, bsrc = float(gb) * 1e9, f"trace estimate: kernel_num_gb = {gb} (× 1e9 B)"
    else:
        nbytes, bsrc = NAN, f"{UNAVAILABLE}: the trace carries kernel_flop but no kernel_num_gb"
    return (*flops, src, src, src, src, path, nbytes, bsrc, None, "trace estimate", NAN, None)


def unmodelled(frame: pd.DataFrame, top: int = 10) -> list[dict[str, Any]]:
    """Ops whose FLOPs or bytes are unavailable, by share of the trace's GPU time, with the first reason.

    The rows are grouped by their integer code (one ``factorize`` of the names), not by the strings:
    a boolean mask and a groupby on the ~20k string rows of the V100 trace took ~13 ms, this ~3.5 ms.
    Same groups (names, NA names dropped), same order (first appearance), same sums (pandas' own
    groupby sum), same first non-missing reason, same sort."""
    total = float(frame["duration_s"].sum())
    if not total:
        return []
    miss = np.isnan(frame["flop_fp32"].to_numpy(dtype=np.float64, na_value=np.nan)) | np.isnan(
        frame["dram_bytes"].to_numpy(dtype=np.float64, na_value=np.nan))
    codes, names = pd.factorize(frame["kernel_short_name"], sort=False)  # -1: no name (groupby drops those)
    rows = np.flatnonzero(miss & (codes >= 0))
    if not rows.size:
        return []
    keys = codes[rows]
    t = pd.Series(frame["duration_s"].to_numpy()[rows]).groupby(keys, sort=False).sum()  # (first-seen order)
    reasons = [_first(frame[col], rows, keys, t.index) for col in ("flop_fp32_source", "dram_bytes_source")]
    if reasons[0] is None or reasons[1] is None:  # a group whose reasons are all missing: pandas decides
        return _unmodelled_by_name(frame, total, top)
    return _ranked(names.take(t.index).tolist(), t.to_numpy(), *reasons, total, top)


def _ranked(names: list[Any], t: np.ndarray, why: list[Any], bwhy: list[Any], total: float, top: int
            ) -> list[dict[str, Any]]:
    """The ``top`` groups by GPU time, as provenance records. (Series.sort_values: the sort, quicksort and
    its order of ties, that DataFrame.sort_values on one column makes.)"""
    order = pd.Series(t).sort_values(ascending=False).index[:top].tolist()
    return [{"op": str(names[i]), "gpu_time_share": float(t[i]) / total,
             "reason": str(why[i] if str(why[i]).startswith(UNAVAILABLE) else bwhy[i])} for i in order]


def _first(col: pd.Series, rows: np.ndarray, keys: np.ndarray, groups: pd.Index) -> list[Any] | None:
    """Per group (in ``groups`` order), ``col`` at its first row holding a value; None if a group has none."""
    held = col.notna().to_numpy()[rows]
    found, first = np.unique(keys[held], return_index=True)
    if len(found) != len(groups):
        return None
    where = dict(zip(found.tolist(), rows[held][first].tolist()))
    return col.take([where[k] for k in groups.tolist()]).tolist()


def _unmodelled_by_name(frame: pd.DataFrame, total: float, top: int) -> list[dict[str, Any]]:
    """:func:`unmodelled` with a pandas groupby on the names: where a group has no reason at all (its
    ``first`` is pandas' missing value, whose text depends on the column's dtype)."""
    # only the columns used: a boolean row mask on the whole ~80-column frame copies every column
    used = frame[["kernel_short_name", "duration_s", "flop_fp32_source", "dram_bytes_source"]]
    miss = used[(frame["flop_fp32"].isna() | frame["dram_bytes"].isna()).to_numpy()]
    g = miss.groupby("kernel_short_name", sort=False).agg(t=("duration_s", "sum"), why=("flop_fp32_source", "first"),
                                                          bwhy=("dram_bytes_source", "first"))
    return _ranked(g.index.tolist(), g["t"].to_numpy(), g["why"].tolist(), g["bwhy"].tolist(), total, top)


def trace_meta(top: dict, n_events: int, gpu: list, orphans: list, groups: dict, skipped: int) -> dict[str, Any]:
    """The trace-level provenance: event counts, GPU time and the share attributed to ops, what the trace says of itself."""
    total = sum(map(float, map(attrgetter("dur"), gpu)))  # (the same additions, in the same order)
    orphan = sum(float(e.dur) for e, _ in orphans)
    return {
        "trace_events": n_events, "gpu_events": len(gpu), "ops_with_gpu_work": len(groups),
        "gpu_time_s": total * 1e-6, "orphan_gpu_time_s": orphan * 1e-6,
        "attributed_share": (total - orphan) / total if total else None,
        "events_without_ts_or_dur": skipped,
        "distributed": top.get("distributedInfo"),
        "with_flops": top.get("with_flops"), "schema_version": top.get("schemaVersion"),
    }
