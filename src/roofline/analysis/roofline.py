"""The classic single-roof analysis of a list of operations, and the effective mixed peak.

The per-kernel hierarchical analysis of frames is in :mod:`roofline.analysis.hierarchy`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from roofline.schema import UNAVAILABLE


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
