"""What a roofline chart shows, as data: the roofs with their labels, and one point per kernel and level.

The PNG and the HTML report draw from these same frames, and the tests compare the drawn
coordinates with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from roofline.frames import group_ids
from roofline.hardware.peaks import LEVELS
from roofline.report.table import is_integer_work
from roofline.schema import PRECISIONS, source_column

LEVEL_LABELS = {"dram": "DRAM/HBM", "l2": "L2", "l1": "L1", "lds": "LDS"}


@dataclass(frozen=True)
class Roof:
    kind: str  # "bandwidth" (sloped, bytes/s) or "compute" (flat, FLOP/s)
    key: str  # a level ("dram") or a precision ("fp32", "tensor")
    value: float
    source: str  # the full source text of the representative kernel's peak
    label: str  # short text for a legend: name, value, where it came from

    @property
    def short_source(self) -> str:
        return short_source(self.source)


def short_source(source: str) -> str:
    """'counters', 'spec', 'user', 'measured' plus the clock basis, for a legend."""
    s = source or ""
    kind = s.split(":", 1)[0].split(" ")[-1] if ":" in s else "unknown"
    if "boost" in s and "rescaled" in s:
        return f"{kind}, boost clock"
    if "no profiled clock" in s:  # the spec filled without a clock to scale to
        return f"{kind}, boost clock" if "the boost clock" in s else f"{kind}, as published"
    if "profiled" in s:
        return f"{kind}, as profiled"
    if "as published" in s:
        return f"{kind}, as published"
    return kind


def _si(v: float, unit: str) -> str:
    for scale, p in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {p}{unit}"
    return f"{v:.3g} {unit}"


class _Columns:
    """The columns the roofs are read from, converted once (numbers as float arrays, texts as object arrays): a roof
    set is a positions array into them, where slicing the frame per set copied every column (a batch dataset's
    device had 125 sets of a 100,000-row frame)."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame
        self._cache: dict[str, np.ndarray | None] = {}

    def num(self, col: str) -> np.ndarray | None:
        """``col`` as floats (unparseable and missing values NaN), None when the frame has no such column."""
        key = "#" + col
        if key not in self._cache:
            self._cache[key] = (pd.to_numeric(self._frame[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                                if col in self._frame else None)
        return self._cache[key]

    def obj(self, col: str) -> np.ndarray | None:
        """``col``'s values as objects (missing values as pandas has them), None when the frame has no such column."""
        key = "$" + col
        if key not in self._cache:
            self._cache[key] = self._frame[col].to_numpy(dtype=object) if col in self._frame else None
        return self._cache[key]

    def text(self, col: str, pos: int) -> str:
        """One value of ``col`` as text ("" where missing or where the frame has no such column)."""
        if col not in self._frame:
            return ""
        v = self._frame[col].iloc[pos]
        return "" if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else str(v)


def _representative(cols: _Columns, col: str, rows: np.ndarray) -> tuple[float, str] | None:
    """The time-weighted median of a peak over the kernels (``rows``) that have it, and that kernel's source."""
    vals = cols.num(col)
    if vals is None:
        return None
    vals = vals[rows]
    ok = (vals > 0) & np.isfinite(vals)  # (NaN compares False)
    if not ok.any():
        return None
    v = vals[ok]
    dur = cols.num("duration_s")
    w = np.where(np.isnan(dur[rows][ok]), 0.0, dur[rows][ok]) if dur is not None else np.ones(len(v))
    if w.sum() <= 0:
        w = np.ones(len(v))
    order = np.argsort(v, kind="stable")
    cum = np.cumsum(w[order])
    i = order[np.searchsorted(cum, cum[-1] / 2)]
    return float(v[i]), cols.text(source_column(col), int(rows[ok][i]))


#: per device, charts for this many roof sets; kernels under further sets are named in a note
MAX_ROOF_SETS = 4


@dataclass(frozen=True)
class RoofSet:
    """Kernels of one device that were measured against the same roofs (value and source), and those roofs."""

    index: int  # 0 = the set with the most kernel time
    count: int  # sets on this device
    mask: np.ndarray  # rows of the frame in this set
    roofs: list[Roof]
    time_s: float

    @property
    def kernels(self) -> int:
        return int(self.mask.sum())


#: roofs within this relative distance are one roof: kernels of one report measure their own clock,
#: which wanders by up to ~2% (A10G fixture: 1.304-1.323 GHz); a boost- vs base-clock roof differs by >10%
SET_TOLERANCE = 0.03


def _clustered(v: np.ndarray, tol: float = SET_TOLERANCE) -> np.ndarray:
    """Each value replaced by the smallest of its cluster: sorted values join a cluster while within
    ``tol`` of its first (NaN stays NaN). Kernels whose roofs agree that closely share a roof set."""
    out = np.full(len(v), np.nan)
    ok = np.isfinite(v) & (v > 0)
    if not ok.any():
        return out
    uniq = np.unique(v[ok])
    heads = np.empty_like(uniq)
    i = 0
    while i < len(uniq):  # one step per cluster: its members are the values up to head * (1 + tol)
        j = int(np.searchsorted(uniq, uniq[i] * (1 + tol), side="right"))
        heads[i:j] = uniq[i]
        i = j
    out[ok] = heads[np.searchsorted(uniq, v[ok])]
    return out


def _set_codes(frame: pd.DataFrame, cols: _Columns, levels: Sequence[str]) -> np.ndarray:
    """One code per distinct roof set (numbered by first appearance): bandwidth and CUDA-core roofs by value (within
    SET_TOLERANCE) and kind of source (the tensor roof depends on each kernel's data path: drawn per path inside a
    set)."""
    parts = []
    for col in [f"peak_{lv}_bytes_per_s" for lv in levels] + [f"peak_flop_per_s_{p}" for p in ("fp64", "fp32", "fp16")]:
        vals = cols.num(col)
        if vals is None:
            continue
        parts.append(pd.factorize(_clustered(vals), use_na_sentinel=True)[0] + 1)  # (missing -> 0, its own value)
        src = source_column(col)
        if src in frame:
            # the column's own distinct values (a text copy of the column cost more than the rest); a missing
            # source is read as "" (the last kind: code -1 picks it)
            codes, uniq = pd.factorize(frame[src], use_na_sentinel=True)
            kinds = pd.factorize(np.array([short_source(str(u)) for u in uniq] + [short_source("")], dtype=object))[0]
            parts.append(kinds[codes])
    return group_ids(parts, len(frame))[0] if parts else np.zeros(len(frame), dtype=int)


def _set_roofs(cols: _Columns, rows: np.ndarray, levels: Sequence[str]) -> list[Roof]:
    """The roofs of the kernels at positions ``rows``."""
    out: list[Roof] = []
    for lv in levels:
        moved = cols.num(f"{lv}_bytes")
        if moved is None or not (moved[rows] > 0).any():
            continue  # no kernel has bytes at this level (a trace has no cache counters): a roof with no point
        rep = _representative(cols, f"peak_{lv}_bytes_per_s", rows)
        if rep:
            out.append(Roof("bandwidth", lv, rep[0], rep[1],
                            f"{LEVEL_LABELS[lv]} {_si(rep[0], 'B/s')} ({short_source(rep[1])})"))
    for p in PRECISIONS:
        share = cols.num(f"flop_share_{p}")
        if share is None or not (share[rows] > 0).any():
            continue
        used = rows[share[rows] > 0]
        col = f"peak_flop_per_s_{p}"
        peaks = cols.num(col)
        if p != "tensor" or peaks is None:
            rep = _representative(cols, col, used)
            if rep:
                out.append(Roof("compute", p, rep[0], rep[1], f"{p} {_si(rep[0], 'FLOP/s')} ({short_source(rep[1])})"))
            continue
        # tensor: one roof per distinct peak the tensor kernels used (their data paths differ)
        vals = _clustered(peaks[used])
        groups = [g for g in pd.unique(vals) if np.isfinite(g)]
        path_col = cols.obj("tensor_path")
        for g in groups:
            part = used[vals == g]
            rep = _representative(cols, col, part)
            if not rep:
                continue
            paths = list(dict.fromkeys(str(v) for v in pd.unique(path_col[part]) if not pd.isna(v))) \
                if path_col is not None else []  # (in order of first appearance, as the rows'; each value once)
            name = f"tensor {paths[0]}" if len(paths) == 1 else "tensor"
            key = "tensor" if len(groups) == 1 else f"tensor:{paths[0] if len(paths) == 1 else _si(rep[0], 'FLOP/s')}"
            unit = "OP/s" if len(paths) and all(is_integer_work(p) for p in paths) else "FLOP/s"  # integer: OPs
            out.append(Roof("compute", key, rep[0], rep[1], f"{name} {_si(rep[0], unit)} ({short_source(rep[1])})"))
    return out


def roof_view(frame: pd.DataFrame, levels: Sequence[str] = LEVELS) -> pd.DataFrame:
    """The columns :func:`roof_sets` (and :func:`roofs`, :func:`plottable`) read: a device's rows taken from
    this instead of the whole frame copy ~20 columns, not ~140 (the sets are the same)."""
    wanted = {"duration_s", "achieved_flop_per_s", "tensor_path"}
    for lv in levels:
        wanted |= {f"peak_{lv}_bytes_per_s", source_column(f"peak_{lv}_bytes_per_s"), f"{lv}_bytes"}
    for p in PRECISIONS:
        wanted |= {f"peak_flop_per_s_{p}", source_column(f"peak_flop_per_s_{p}"), f"flop_share_{p}"}
    cols = [c for c in frame.columns if c in wanted]
    return frame[cols] if cols else frame  # (no column at all: the frame itself, which is not empty)


def roof_sets(frame: pd.DataFrame, levels: Sequence[str] = LEVELS) -> list[RoofSet]:
    """The roof sets of one device's kernels, most kernel time first. Each set's roofs are the ones its
    kernels' % of roof was computed against, so a chart of one set never draws a roof no kernel used."""
    if frame.empty:
        return [RoofSet(0, 1, np.zeros(0, dtype=bool), [], 0.0)]
    cols = _Columns(frame)
    codes = _set_codes(frame, cols, levels)
    dur = cols.num("duration_s")
    dur = np.where(np.isnan(dur), 0.0, dur) if dur is not None else np.ones(len(frame))
    drawable = plottable(frame).to_numpy()
    # sets whose kernels can be drawn first (a set of copies and memsets only has no point on the chart)
    n_sets = int(codes.max()) + 1
    by_set = np.argsort(codes, kind="stable")  # each set's rows, in frame order, as one slice
    bounds = np.searchsorted(codes[by_set], np.arange(n_sets + 1))
    rows = [by_set[bounds[c]:bounds[c + 1]] for c in range(n_sets)]
    total = [dur[r].sum() for r in rows]
    drawn = [dur[r[drawable[r]]].sum() for r in rows]
    order = sorted(range(n_sets), key=lambda c: (-drawn[c], -total[c], c))
    return [RoofSet(i, n_sets, codes == c, _set_roofs(cols, rows[c], levels), float(total[c]))
            for i, c in enumerate(order)]


def roofs(frame: pd.DataFrame, levels: Sequence[str] = LEVELS) -> list[Roof]:
    """One sloped roof per memory level and one flat roof per precision the kernels used, per roof set.

    Where one device's kernels were measured against different roofs (clock, source), every set's roofs
    are listed and labelled "set i of n" (the HTML report draws them all; the PNG draws one chart per set).
    """
    sets = roof_sets(frame, levels)
    if len(sets) == 1:
        return sets[0].roofs
    out = []
    for st in sets:
        tag = f" [roof set {st.index + 1} of {st.count}: {st.kernels} kernel(s)]"
        out += [Roof(r.kind, r.key if st.index == 0 else f"{r.key}#{st.index + 1}", r.value, r.source, r.label + tag)
                for r in st.roofs]
    return out


def ridges(roof_list: Sequence[Roof]) -> list[tuple[str, str, float, float]]:
    """(level, precision, intensity, FLOP/s) where each sloped roof meets each flat one."""
    out = []
    for b in roof_list:
        if b.kind != "bandwidth":
            continue
        for c in roof_list:
            if c.kind == "compute":
                out.append((b.key, c.key, c.value / b.value, c.value))
    return out


def plottable(frame: pd.DataFrame) -> pd.Series:
    """Kernels that can be drawn: FLOPs and a time, so achieved FLOP/s is positive."""
    ach = pd.to_numeric(frame.get("achieved_flop_per_s"), errors="coerce") if "achieved_flop_per_s" in frame \
        else pd.Series(np.nan, index=frame.index)
    return (ach > 0).fillna(False)


def points(frame: pd.DataFrame, levels: Sequence[str] = LEVELS) -> pd.DataFrame:
    """Long frame: one row per plottable kernel and level with a finite, positive intensity."""
    at = np.flatnonzero(plottable(frame).to_numpy())
    found: list[tuple[str, np.ndarray, pd.Series]] = []  # (level, positions, intensities) of each level's points
    for lv in levels:
        col = f"intensity_{lv}_flop_per_byte"
        if col not in frame:
            continue
        x = pd.to_numeric(frame[col].take(at), errors="coerce")
        ok = ((x > 0) & np.isfinite(x)).to_numpy()
        found.append((lv, at[ok], x[ok]))
    if not found:
        return pd.DataFrame(columns=["row", "kernel_id", "level", "intensity_flop_per_byte", "achieved_flop_per_s",
                                     "duration_s"])
    if not any(len(w) for _, w, _ in found):  # (the columns' types as one frame per level gives them)
        return pd.concat([_level_points(frame, lv, w, x) for lv, w, x in found], ignore_index=True)
    # one frame of every level's points: a frame per level and their concatenation cost ~10 ms per chart
    rows = np.concatenate([w for _, w, _ in found])
    return pd.DataFrame({
        "row": rows,
        "kernel_id": frame["kernel_id"].take(rows).array if "kernel_id" in frame
        else np.concatenate([np.arange(len(w)) for _, w, _ in found]),
        "level": np.repeat(np.array([lv for lv, _, _ in found], dtype=object), [len(w) for _, w, _ in found]),
        "intensity_flop_per_byte": pd.concat([x for _, _, x in found], ignore_index=True),
        "achieved_flop_per_s": pd.to_numeric(frame["achieved_flop_per_s"].take(rows), errors="coerce").array,
        "duration_s": pd.to_numeric(frame["duration_s"].take(rows), errors="coerce").array,
    })


def _level_points(frame: pd.DataFrame, lv: str, rows: np.ndarray, x: pd.Series) -> pd.DataFrame:
    """The points of one level: kernels at positions ``rows``, their intensities ``x``."""
    return pd.DataFrame({
        "row": rows,
        "kernel_id": frame["kernel_id"].take(rows).array if "kernel_id" in frame else np.arange(len(rows)),
        "level": lv,
        "intensity_flop_per_byte": x.array,
        "achieved_flop_per_s": pd.to_numeric(frame["achieved_flop_per_s"].take(rows), errors="coerce").array,
        "duration_s": pd.to_numeric(frame["duration_s"].take(rows), errors="coerce").array,
    })


def device_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Per device (NA named "unknown device"): drawable time, drawable kernels and time, sorted so that the
    device with the most drawable time comes first (the headline chart, and the device the HTML opens on);
    rows that name no device come after every named device with something to draw (they have no roofs)."""
    dev = frame["device_name"].astype("string").fillna("unknown device") if "device_name" in frame \
        else pd.Series("unknown device", index=frame.index, dtype="string")
    dur = pd.to_numeric(frame["duration_s"], errors="coerce").fillna(0.0) if "duration_s" in frame \
        else pd.Series(0.0, index=frame.index)
    ok = plottable(frame)
    named = frame["device_name"].notna() if "device_name" in frame else pd.Series(False, index=frame.index)
    stats = pd.DataFrame({"device": dev, "drawn_time_s": dur.where(ok, 0.0), "drawn": ok.astype(int),
                          "time_s": dur, "named": named.astype(int)})
    g = stats.groupby("device", sort=False)[["drawn_time_s", "drawn", "time_s", "named"]].sum()
    g["named_drawn"] = ((g["named"] > 0) & (g["drawn"] > 0)).astype(int)
    g = g.sort_values(["named_drawn", "drawn_time_s", "drawn", "time_s"], ascending=False, kind="stable")
    return g[["drawn_time_s", "drawn", "time_s"]]


def unplotted_count(frame: pd.DataFrame) -> int:
    return int((~plottable(frame)).sum())


def axis_limits(pts: pd.DataFrame, roof_list: Sequence[Roof]) -> tuple[tuple[float, float], tuple[float, float]]:
    """Log-axis limits that hold every point, roof and ridge, with a margin of one decade's half."""
    xs = list(pts["intensity_flop_per_byte"]) + [r[2] for r in ridges(roof_list)]
    ys = list(pts["achieved_flop_per_s"]) + [r.value for r in roof_list if r.kind == "compute"]
    xs = [x for x in xs if x > 0 and math.isfinite(x)] or [0.1, 100.0]
    ys = [y for y in ys if y > 0 and math.isfinite(y)] or [1e9, 1e13]
    x0, x1 = 10.0 ** math.floor(math.log10(min(xs)) - 0.3), 10.0 ** math.ceil(math.log10(max(xs)) + 0.3)
    y0, y1 = 10.0 ** math.floor(math.log10(min(ys)) - 0.3), 10.0 ** math.ceil(math.log10(max(ys)) + 0.3)
    return (x0, x1), (y0, y1)
