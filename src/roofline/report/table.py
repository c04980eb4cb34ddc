"""Terminal table of the roofline frame: readable units, one row per kernel in report order."""

from __future__ import annotations

import math

import pandas as pd

_COLUMNS = [
    ("kernel_id", "id", None),
    ("kernel_short_name", "kernel", None),
    ("duration_s", "time", "s"),
    ("flop_fp64", "fp64", "FLOP"),
    ("flop_fp32", "fp32", "FLOP"),
    ("flop_fp16", "fp16", "FLOP"),
    ("flop_tensor", "tensor", "FLOP"),
    ("dram_bytes", "DRAM", "B"),
    ("intensity_dram_flop_per_byte", "FLOP/B", ""),
    ("achieved_flop_per_s", "achieved", "FLOP/s"),
    ("bound", "bound", None),
    ("pct_of_roof", "% roof", "%"),
]


def summary_columns() -> list[str]:
    return [c for c, _, _ in _COLUMNS]


def _si(v: float, unit: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if math.isinf(v):
        return "inf"
    if unit == "%":
        return f"{v:.1f}"
    if unit == "":
        return f"{v:.3g}"
    prefixes = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]
    a = abs(v)
    if a == 0:
        return f"0 {unit}"
    for scale, p in prefixes:
        if a >= scale:
            return f"{v / scale:.3g} {p}{unit}"
    return f"{v:.3g} {unit}"


def format_table(frame: pd.DataFrame, max_name: int = 40) -> str:
    """A plain-text table; unavailable numbers print as ``n/a`` (never as 0)."""
    if frame.empty:
        return "(no kernels)"
    cols = [(c, h, u) for c, h, u in _COLUMNS if c in frame.columns]
    shown = pd.DataFrame(index=frame.index)
    for c, h, u in cols:
        s = frame[c]
        if u is None:
            vals = s.astype("string").fillna("n/a")
            if c == "kernel_short_name":
                vals = vals.map(lambda t: t if len(t) <= max_name else t[: max_name - 1] + "…")
            shown[h] = vals
        else:
            shown[h] = [_si(float(v) if v is not None and not pd.isna(v) else math.nan, u) for v in s]
    return shown.to_string(index=False)
