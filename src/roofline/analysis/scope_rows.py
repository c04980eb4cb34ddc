"""A frame's rows as NumPy arrays for the figures of many scopes (profiles, devices, steps) at once, each figure
the same to the last bit as pandas gives for the scope's own frame (``analysis/headline.py``)."""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from roofline.analysis.coverage import flop_total, number

#: :meth:`Rows.nansum`'s key for the rows' FLOPs (``flop_total``, else the sum of the precisions)
FLOP = "\0flop"


class Rows:
    """A frame's columns as NumPy arrays, each converted once; a scope is an index into them (a slice, or row
    positions). A dataset's frame holds hundreds of profiles: converting and slicing its columns per profile
    cost ~20 ms per headline. Every sum is NumPy's over the scope's values in row order, as pandas' ``sum`` of
    the scope's own frame is: the figures are the same to the last bit."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self.columns = frozenset(frame.columns)  # (a set: ``col in frame`` costs ~6 µs, asked ~10 times a scope)
        self._cache: dict[str, np.ndarray] = {}
        self._series: dict[str, pd.Series] = {}
        self._notna: dict[str, np.ndarray] = {}
        self._codes: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._raw: dict[str, np.ndarray] = {}
        self._zeroed: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def num(self, col: str) -> np.ndarray:
        """:func:`~roofline.analysis.coverage.number` of a column."""
        if col not in self._cache:
            self._cache[col] = number(self.frame, col).to_numpy(dtype=float)
        return self._cache[col]

    @cached_property
    def weights(self) -> np.ndarray:
        """The durations, missing as 0 (the weights of a time-weighted median)."""
        return np.nan_to_num(self.num("duration_s"), nan=0.0, posinf=np.inf, neginf=-np.inf)

    @cached_property
    def dur(self) -> np.ndarray:
        """The durations, missing as 0, negative as 0 (``fillna(0).clip(lower=0)``)."""
        d = self.weights
        return np.where(d >= 0, d, 0.0)

    @cached_property
    def flop(self) -> np.ndarray:
        return flop_total(self.frame).to_numpy(dtype=float)

    @cached_property
    def names(self) -> np.ndarray:
        """The name a reason lists of each row: its short name, else its full name, else "(unnamed)"."""
        f = self.frame
        short = f["kernel_short_name"] if "kernel_short_name" in f else pd.Series(pd.NA, index=f.index)
        full = f["kernel_name"] if "kernel_name" in f else pd.Series(pd.NA, index=f.index)
        return short.astype("string").fillna(full.astype("string")).fillna("(unnamed)").to_numpy()

    def nansum(self, col: str, ix: slice | np.ndarray, min_count: int = 0) -> float:
        """``Series.sum(min_count=…)`` of the column (``FLOP``: :attr:`flop`) over the scope: the same values in the
        same order, NaN as 0 (NaN with fewer than ``min_count`` numbers), read from the column with NaN as 0 and its
        known rows, each taken once (not per scope)."""
        values, known = self._zeroed_of(col)
        if min_count and int(np.count_nonzero(known[ix])) < min_count:
            return math.nan
        return float(values[ix].sum())

    def known(self, col: str, ix: slice | np.ndarray) -> bool:
        """Whether some row of the scope has a number in the column."""
        return bool(self._zeroed_of(col)[1][ix].any())

    def _zeroed_of(self, col: str) -> tuple[np.ndarray, np.ndarray]:
        """The column with NaN as 0, and where it has numbers."""
        if col not in self._zeroed:
            values = self.flop if col == FLOP else self.num(col)
            known = ~np.isnan(values)
            self._zeroed[col] = np.where(known, values, 0.0), known
        return self._zeroed[col]

    def notna(self, col: str) -> np.ndarray:
        if col not in self._notna:
            self._notna[col] = self.frame[col].notna().to_numpy()
        return self._notna[col]

    def at(self, col: str, pos: int) -> Any:
        """The value of ``col`` at row position ``pos`` (as the frame holds it: what ``iloc`` gives, in half the
        time)."""
        return self.series(col).array[pos]

    def column(self, col: str, ix: slice | np.ndarray) -> pd.Series:
        return self.series(col).iloc[ix]

    def series(self, col: str) -> pd.Series:
        if col not in self._series:
            self._series[col] = self.frame[col]
        return self._series[col]

    def positions(self, ix: slice | np.ndarray) -> np.ndarray:
        """The row positions of a scope (an arange of the whole frame per scope cost ~0.3 ms each, 2,000 a report)."""
        if isinstance(ix, slice):
            return np.arange(*ix.indices(len(self.frame)))
        ix = np.asarray(ix)
        return np.flatnonzero(ix) if ix.dtype == bool else ix.astype(np.int64, copy=False)

    def distinct(self, col: str, ix: slice | np.ndarray) -> int:
        """How many distinct values ``col`` holds in the scope, missing counted as one (``nunique(dropna=False)``)
        from the column factorized once (a Series taken per scope cost ~0.5 ms). Text columns only: they have
        one missing value (an object column's None and NaN count as two)."""
        if not isinstance(self.series(col).dtype, pd.StringDtype):
            return int(self.column(col, ix).nunique(dropna=False))
        if col not in self._raw:
            self._raw[col] = pd.factorize(self.series(col), use_na_sentinel=True)[0]
        return len(np.unique(self._raw[col][ix]))

    def codes(self, col: str) -> tuple[np.ndarray, np.ndarray]:
        """``col`` as text, factorized once: (a code per row, -1 where missing; the distinct values)."""
        if col not in self._codes:
            codes, uniq = pd.factorize(self.frame[col].astype("string"), use_na_sentinel=True)
            self._codes[col] = codes, np.asarray(uniq, dtype=object)
        return self._codes[col]


def grouped_sums(values: np.ndarray, segments: list[np.ndarray], rank: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each segment (positions into ``values``, in row order): ``Series(values[seg]).groupby(keys[seg]).sum()``
    as (the keys' ranks, in key order; their sums), where ``rank`` orders the keys as pandas sorts them. pandas adds
    a group's values with ``ufunc.reduceat`` where the group ids run in row order, and with compensated
    summation otherwise: the last bits differ. Each group's sum depends only on its values, so the segments are
    summed in two grouped sums: those whose ids run in order, then the others (ids that do not)."""
    out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(segments)
    ordered = [len(seg) < 2 or bool((np.diff(rank[seg]) >= 0).all()) for seg in segments]
    for kind in (True, False):
        which = [i for i, o in enumerate(ordered) if o is kind and len(segments[i])]
        if not which:
            continue
        rows = np.concatenate([segments[i] for i in which])
        seg = np.repeat(np.arange(len(which)), [len(segments[i]) for i in which])
        sums = pd.Series(values[rows]).groupby([seg, rank[rows]]).sum()
        at, ranks, got = (sums.index.get_level_values(0).to_numpy(), sums.index.get_level_values(1).to_numpy(),
                          sums.to_numpy())
        bounds = np.searchsorted(at, np.arange(len(which) + 1))
        for j, i in enumerate(which):
            out[i] = (ranks[bounds[j]:bounds[j + 1]], got[bounds[j]:bounds[j + 1]])
    empty = (np.zeros(0, np.int64), np.zeros(0))
    return [o if o is not None else empty for o in out]


__all__ = ["FLOP", "Rows", "grouped_sums"]
