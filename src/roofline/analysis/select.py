"""Filters and top-N over a roofline frame: by name, bound, precision, NVTX range; sorted by time.

XProf shows the top 1000 ops by default; here the default is every kernel, longest first, because
a batch of profiles is usually small enough to read in full and a silent cut hides kernels.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from roofline.analysis.hierarchy import BOUNDS


def select(
    frame: pd.DataFrame,
    name: str | None = None,
    bound: str | None = None,
    precision: str | None = None,
    nvtx: str | None = None,
    top: int | None = None,
) -> pd.DataFrame:
    """Rows matching every filter given, sorted by ``duration_s`` (longest first), at most ``top``.

    ``name`` and ``nvtx`` are case-insensitive regular expressions searched in the kernel's short, demangled
    and mangled names (a trace's op row carries its GPU kernel's name in ``mangled_name``) / NVTX range; ``bound`` is one of :data:`BOUNDS` or a prefix of one ("latency",
    "memory"); ``precision`` keeps kernels that did work in that precision (fp64, fp32, fp16, tensor:
    a FLOP share above 0, so a mixed kernel shows under each of its precisions) or whose
    ``compute_precision`` is it ("mixed", "none", or a tensor path such as "tensor:imma_int8").
    """
    mask = pd.Series(True, index=frame.index)
    if name:
        mask &= (_search(frame, "kernel_name", name) | _search(frame, "kernel_short_name", name)
                 | _search(frame, "mangled_name", name))
    if nvtx:
        mask &= _search(frame, "nvtx_range", nvtx)
    if bound:
        wanted = [b for b in BOUNDS if b.startswith(bound.lower())]
        if not wanted:
            raise ValueError(f"unknown bound {bound!r}; choose from {', '.join(BOUNDS)}")
        mask &= frame["bound"].isin(wanted).fillna(False)
    if precision:
        prec = frame["compute_precision"].astype("string").str.lower()
        p = precision.lower()
        hit = ((prec == p) | prec.str.startswith(p + ":")).fillna(False)
        if f"flop_share_{p}" in frame:
            hit |= (pd.to_numeric(frame[f"flop_share_{p}"], errors="coerce") > 0).fillna(False)
        mask &= hit
    keep = mask.to_numpy()
    # (no filter given, or none that drops a row: the sort below copies the rows once; a boolean take first was a
    # second copy of every column, ~0.27 s of a 63k-row dataset's report)
    out = frame if keep.all() and "duration_s" in frame else frame[keep]
    if "duration_s" in out:
        out = out.sort_values("duration_s", ascending=False, na_position="last", kind="stable")
    if top is not None:
        if top < 1:
            raise ValueError(f"top must be at least 1, got {top}")
        out = out.head(top)
    return out


def _search(frame: pd.DataFrame, column: str, pattern: str) -> pd.Series:
    try:
        rx = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"bad pattern {pattern!r}: {exc}") from None
    if column not in frame:
        return pd.Series(False, index=frame.index)
    # once per distinct name: a 200k-row trace holds a few thousand
    codes, uniq = pd.factorize(frame[column].astype("string"))
    hits = pd.Series(uniq, dtype="string").str.contains(rx, na=False).to_numpy(dtype=bool)
    return pd.Series(np.append(hits, False)[codes], index=frame.index)
