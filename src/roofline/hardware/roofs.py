"""Which roofs a device's kernels needed and did not get (issue 17: a warning, not a failure)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from roofline.schema import PRECISIONS, source_column


def missing_roofs(result: pd.DataFrame) -> Iterator[tuple[str, str, str, str]]:
    """(input file, device name, what is missing, why) per input and device whose kernels do work at a
    precision without its compute roof, or have no DRAM roof at all."""
    if result.empty or "device_name" not in result:
        return
    files = result["source_file"].astype("string").fillna("") if "source_file" in result else pd.Series("", index=result.index)
    devs = result["device_name"].astype("string").fillna("")
    for (src, dev), idx in result.groupby([files, devs], sort=False).groups.items():
        g = result.loc[idx]
        what, why = [], []
        for p in PRECISIONS:
            flop, peak = f"flop_{p}", f"peak_flop_per_s_{p}"
            if flop not in g or peak not in g:
                continue
            lack = _positive(g, flop) & g[peak].isna().to_numpy()
            if lack.any():
                what.append(p)
                why.append(_first(g, peak, lack))
        col = "peak_dram_bytes_per_s"
        placed = _positive(g, "dram_bytes") | np.any([_positive(g, f"flop_{p}") for p in PRECISIONS], axis=0)
        if col in g and g[col].isna().all() and placed.any():  # timing-only rows place no point: no roof needed
            what.append("DRAM")
            why.append(_first(g, col, np.ones(len(g), dtype=bool)))
        if what:
            reasons = "; ".join(dict.fromkeys(w for w in why if w)) or "the profile records no peaks"
            yield str(src), str(dev), ", ".join(what), reasons


def _first(g: pd.DataFrame, col: str, mask: np.ndarray) -> str:
    src = source_column(col)
    if src not in g:
        return ""
    vals = g[src][mask].dropna()
    return str(vals.iloc[0]) if len(vals) else ""


def _positive(g: pd.DataFrame, col: str) -> np.ndarray:
    if col not in g:
        return np.zeros(len(g), dtype=bool)
    return pd.to_numeric(g[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan) > 0
