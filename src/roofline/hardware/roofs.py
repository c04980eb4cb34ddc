"""Which roofs a device's kernels needed and did not get (issue 17: a warning, not a failure)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from roofline.schema import PRECISIONS, source_column


def missing_roofs(result: pd.DataFrame) -> Iterator[tuple[str, str, str, str]]:
    """(input file, device name, what is missing, why) per input and device whose kernels do work at a
    precision without its compute roof, or have no DRAM roof at all. (Column by column over every row, then
    one grouping: a dataset of thousands of inputs is not taken apart group by group.)"""
    if result.empty or "device_name" not in result:
        return
    files = result["source_file"].astype("string").fillna("") if "source_file" in result else pd.Series("", index=result.index)
    devs = result["device_name"].astype("string").fillna("")
    gid = pd.Series(result.groupby([files, devs], sort=False).ngroup().to_numpy(), index=result.index)
    codes = gid.to_numpy()
    # each group's first row, and texts read at rows only: a dataset's texts are never copied or made Python
    # strings whole (that was ~230 MB at 5,000 inputs)
    groups, heads = np.unique(codes, return_index=True)
    keys = pd.DataFrame({"src": files.iloc[heads].to_numpy(dtype=object), "dev": devs.iloc[heads].to_numpy(dtype=object)},
                        index=groups)
    what: dict[int, list[str]] = {}
    why: dict[int, list[str]] = {}

    def note(label: str, mask: np.ndarray, col: str) -> None:
        hit = pd.Series(mask, index=result.index).groupby(gid).any()
        if not hit.any():
            return
        src = source_column(col)
        first: dict[int, object] = {}
        if src in result:  # the first text among a group's rows in the mask (missing ones skipped, as groupby's first)
            said = np.flatnonzero(mask & result[src].notna().to_numpy())
            at, pos = np.unique(codes[said], return_index=True)
            first = dict(zip(at.tolist(), result[src].iloc[said[pos]].astype(object).tolist()))
        for g in np.flatnonzero(hit.to_numpy()):
            g = int(hit.index[g])
            what.setdefault(g, []).append(label)
            reason = first.get(g)
            why.setdefault(g, []).append("" if reason is None or pd.isna(reason) else str(reason))

    for p in PRECISIONS:
        flop, peak = f"flop_{p}", f"peak_flop_per_s_{p}"
        if flop in result and peak in result:
            note(p, _positive(result, flop) & result[peak].isna().to_numpy(), peak)
    col = "peak_dram_bytes_per_s"
    if col in result:
        placed = _positive(result, "dram_bytes") | np.any([_positive(result, f"flop_{p}") for p in PRECISIONS], axis=0)
        none = result[col].isna().groupby(gid).all()
        any_placed = pd.Series(placed, index=result.index).groupby(gid).any()
        # timing-only rows place no point: no roof needed
        lacking = gid.map(none & any_placed).to_numpy(dtype=bool)
        note("DRAM", lacking, col)
    for g in sorted(what):
        reasons = "; ".join(dict.fromkeys(w for w in why[g] if w)) or "the profile records no peaks"
        yield str(keys.loc[g, "src"]), str(keys.loc[g, "dev"]), ", ".join(what[g]), reasons


def _positive(g: pd.DataFrame, col: str) -> np.ndarray:
    if col not in g:
        return np.zeros(len(g), dtype=bool)
    return pd.to_numeric(g[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan) > 0
