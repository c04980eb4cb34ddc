"""Terminal table of the roofline frame: readable units, one row per kernel in report order."""

from __future__ import annotations

import math

import pandas as pd

_HEAD = [
    ("kernel_id", "id", None),
    ("kernel_short_name", "kernel", None),
    ("kernel_count", "n", None),
    ("duration_s", "time", "s"),
    ("flop_total", "FLOP", "FLOP"),
    ("compute_precision", "precision", None),
]
_TAIL = [
    ("achieved_flop_per_s", "achieved", "FLOP/s"),
    ("binding_roof", "roof", None),
    ("bound", "bound", None),
    ("pct_of_roof", "% roof", "%"),
    ("pct_of_roof_boost", "% roof@boost", "%"),
    ("over_roof", "!", "flag"),  # above a roof: a wrong peak, see analysis_note
]


def _columns(levels: tuple[str, ...], by: str | None) -> list[tuple[str, str, str | None]]:
    head = list(_HEAD)
    if by:
        head = [(by, by, None)] + [c for c in head if c[0] not in ("kernel_id", "kernel_short_name")]
    mids = [(f"intensity_{lv}_flop_per_byte", f"I {lv.upper()}", "") for lv in levels]
    return head + mids + _TAIL


def summary_columns(levels: tuple[str, ...] = ("dram", "l2", "l1"), by: str | None = None) -> list[str]:
    return [c for c, _, _ in _columns(levels, by)]


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


def format_table(frame: pd.DataFrame, levels: tuple[str, ...] = ("dram", "l2", "l1"), by: str | None = None,
                 max_name: int = 40) -> str:
    """A plain-text table; unavailable numbers print as ``n/a`` (never as 0). I = FLOP/byte."""
    if frame.empty:
        return "(no kernels)"
    cols = [(c, h, u) for c, h, u in _columns(levels, by) if c in frame.columns]
    shown = pd.DataFrame(index=frame.index)
    for c, h, u in cols:
        s = frame[c]
        if u == "flag":
            shown[h] = ["!" if v is True else "" for v in s.astype(object)]
        elif u is None:
            vals = s.astype("string").fillna("n/a")
            if c == "program":
                vals = vals.map(lambda t: t.replace("\\", "/").rsplit("/", 1)[-1])
            if c in ("kernel_short_name", "kernel", "program", "nvtx", "compute_precision"):
                vals = vals.map(lambda t: t if len(t) <= max_name else t[: max_name - 1] + "…")
            shown[h] = vals
        else:
            shown[h] = [_si(float(v) if v is not None and not pd.isna(v) else math.nan, u) for v in s]
    return shown.to_string(index=False)
