"""The DRAM roofline per kernel: intensity, attainable and achieved FLOP/s, bound, % of roof.

Conventions (also in ``docs/schema.md``):

* ``flop_total`` is the sum of the precisions the report holds. If some precision is
  unavailable while others are not, the total is a lower bound and ``analysis_note`` says so.
* A kernel mixing precisions (CUDA-core softmax beside tensor-core MMAs) gets one point against an
  effective compute peak Σ FLOPs / Σ (FLOPsᵢ / Peakᵢ): the time the work would take at each
  precision's own peak, added up. The split stays visible in the ``flop_*`` columns.
* bound: ``compute-bound`` when intensity ≥ ridge (peak / bandwidth), else ``memory-bound``.
* ``pct_of_roof`` = achieved / attainable × 100; ``time_at_roof_s`` = max(FLOPs / peak,
  bytes / bandwidth), the time the kernel would take running exactly on its roof.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from roofline.schema import FLOP_COLUMNS, PRECISIONS, UNAVAILABLE, get_provenance, set_provenance, source_column

ROOFLINE_COLUMNS = (
    "flop_total",
    "peak_flop_per_s",
    "peak_flop_per_s_source",
    "intensity_dram_flop_per_byte",
    "ridge_dram_flop_per_byte",
    "achieved_flop_per_s",
    "achieved_dram_bytes_per_s",
    "attainable_flop_per_s",
    "bound",
    "pct_of_roof",
    "pct_of_peak_dram_bandwidth",
    "time_at_roof_s",
    "analysis_note",
)


def roofline_analysis(
    operations: Iterable[Mapping[str, Any]], peak_compute: float, peak_bandwidth: float
) -> list[dict[str, Any]]:
    """Classic single-roof analysis of operations given as ``{name, flops, memory_bytes}``.

    Returns per operation: ``name``, ``arithmetic_intensity`` (FLOP/byte, 4 places),
    ``attainable_flops`` (FLOP/s, 4 places), ``bound`` ("compute-bound" when intensity ≥ the
    ridge point ``peak_compute / peak_bandwidth``, else "memory-bound"), ``efficiency``
    (attainable as a percentage of ``peak_compute``, 2 places) and ``estimated_time_s``
    (flops / attainable, 8 places). Zero bytes give infinite intensity; zero attainable FLOP/s
    gives infinite time.
    """
    if peak_compute <= 0 or peak_bandwidth <= 0:
        raise ValueError("peak_compute and peak_bandwidth must be positive")
    ridge = peak_compute / peak_bandwidth
    out = []
    for op in operations:
        flops = float(op["flops"])
        nbytes = float(op["memory_bytes"])
        intensity = math.inf if nbytes == 0 else flops / nbytes
        attainable = min(peak_compute, intensity * peak_bandwidth)
        time = math.inf if attainable == 0 else flops / attainable
        out.append(
            {
                "name": op["name"],
                "arithmetic_intensity": round(intensity, 4),
                "attainable_flops": round(attainable, 4),
                "bound": "compute-bound" if intensity >= ridge else "memory-bound",
                "efficiency": round(attainable / peak_compute * 100.0, 2),
                "estimated_time_s": round(time, 8),
            }
        )
    return out


def effective_peak(flops: Mapping[str, float], peaks: Mapping[str, float]) -> tuple[float, str]:
    """Σ FLOPs / Σ (FLOPsᵢ / Peakᵢ) over the precisions that did work, and a description."""
    used = {p: f for p, f in flops.items() if f and not math.isnan(f) and f > 0}
    if not used:
        return math.nan, f"{UNAVAILABLE}: no FLOPs counted"
    missing = [p for p in used if not peaks.get(p) or math.isnan(peaks[p])]
    if missing:
        return math.nan, f"{UNAVAILABLE}: no {'/'.join(missing)} peak"
    total = sum(used.values())
    time = sum(f / peaks[p] for p, f in used.items())
    if len(used) == 1:
        (p,) = used
        return peaks[p], p
    shares = ", ".join(f"{p} {100 * f / total:.1f}%" for p, f in sorted(used.items(), key=lambda kv: -kv[1]))
    return total / time, f"effective over {shares}"


def analyze(kernels: pd.DataFrame) -> pd.DataFrame:
    """The roofline frame: the kernels frame (same rows, same order) plus the roofline columns."""
    rows = [_analyze_row(r) for r in kernels.to_dict("records")]
    extra = pd.DataFrame(rows, columns=list(ROOFLINE_COLUMNS), index=kernels.index)
    for col in ROOFLINE_COLUMNS:
        if col in ("peak_flop_per_s_source", "bound", "analysis_note"):
            extra[col] = extra[col].astype("string")
        else:
            extra[col] = extra[col].astype("float64")
    base = kernels.drop(columns=[c for c in ROOFLINE_COLUMNS if c in kernels.columns])
    out = pd.concat([base, extra], axis=1)
    return set_provenance(out, get_provenance(kernels))


def _f(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _analyze_row(k: Mapping[str, Any]) -> dict[str, Any]:
    notes: list[str] = []
    flops = {p: _f(k.get(c)) for p, c in zip(PRECISIONS, FLOP_COLUMNS)}
    avail = {p: f for p, f in flops.items() if not math.isnan(f)}
    missing = [p for p in PRECISIONS if p not in avail]
    total = sum(avail.values()) if avail else math.nan
    if avail and missing:
        notes.append(f"FLOPs are a lower bound: {', '.join(missing)} unavailable")
    elif not avail:
        notes.append(str(k.get(source_column("flop_fp32")) or f"{UNAVAILABLE}: no FLOP counters"))
    peaks = {p: _f(k.get(f"peak_flop_per_s_{p}")) for p in PRECISIONS}
    peak, peak_src = effective_peak(avail, peaks)
    if total == 0:
        # No FLOPs: compute roof is irrelevant; keep the fp32 peak so the point can be drawn.
        peak, peak_src = peaks["fp32"], "fp32 (kernel does no floating-point work)"
    dur = _f(k.get("duration_s"))
    dram = _f(k.get("dram_bytes"))
    bw = _f(k.get("peak_dram_bytes_per_s"))

    # NaN or negative (flagged) bytes give no intensity; zero bytes with FLOPs is infinite intensity
    intensity = total / dram if dram > 0 else (math.inf if dram == 0 and total > 0 else math.nan)
    achieved = total / dur if dur > 0 else math.nan
    achieved_bw = dram / dur if dur > 0 else math.nan
    ridge = peak / bw if bw > 0 else math.nan
    attainable = min(peak, intensity * bw) if not (math.isnan(peak) or math.isnan(bw) or math.isnan(intensity)) else math.nan
    if math.isnan(attainable):
        bound = UNAVAILABLE
        if math.isnan(bw):
            notes.append(f"no DRAM roof ({k.get(source_column('peak_dram_bytes_per_s'))})")
        if math.isnan(peak) and not math.isnan(total):
            notes.append(f"no compute roof ({peak_src})")
        if math.isnan(dram):
            notes.append(f"no DRAM bytes ({k.get(source_column('dram_bytes'))})")
    else:
        bound = "compute-bound" if intensity >= ridge else "memory-bound"
    pct = achieved / attainable * 100.0 if attainable and attainable > 0 else math.nan
    pct_bw = achieved_bw / bw * 100.0 if bw > 0 else math.nan
    t_compute = total / peak if peak > 0 else math.nan
    t_memory = dram / bw if bw > 0 else math.nan
    time_at_roof = np.nanmax([t_compute, t_memory]) if not (math.isnan(t_compute) and math.isnan(t_memory)) else math.nan
    if bound == UNAVAILABLE:
        time_at_roof = math.nan
    return {
        "flop_total": total,
        "peak_flop_per_s": peak,
        "peak_flop_per_s_source": peak_src,
        "intensity_dram_flop_per_byte": intensity,
        "ridge_dram_flop_per_byte": ridge,
        "achieved_flop_per_s": achieved,
        "achieved_dram_bytes_per_s": achieved_bw,
        "attainable_flop_per_s": attainable,
        "bound": bound,
        "pct_of_roof": pct,
        "pct_of_peak_dram_bandwidth": pct_bw,
        "time_at_roof_s": float(time_at_roof),
        "analysis_note": "; ".join(notes) or None,
    }
