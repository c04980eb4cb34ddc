"""Roofs from the spec table attached to a kernels frame: the one place the table meets the profile.

Readers say what a profile records (device identity, SMs, clocks, recorded bandwidths, the counter-derived
peaks ncu itself reports); :func:`attach_roofs` is the stage that attaches the spec table's roofs to them,
once, after the joins (``roofline/pipeline.py``; ``roofline.read`` applies it too). How the table meets a
format's rows is that format's :data:`POLICIES` entry, found by the ``format`` column every reader writes.

:func:`fill_spec_peaks` fills what the counters did not give from the table, labelled as such. Compute
peaks are per-SM rate × SMs × the profiled SM clock when that clock is known (else the published figure,
at boost); DRAM is the published bandwidth; L1 is ncu's 128 B/cycle/SM at the same clock. L2 bandwidth
is not published, so it is never filled.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from roofline.frames import distinct_rows
from roofline.hardware import fill_cache
from roofline.hardware.specs import L1_BYTES_PER_CYCLE_PER_SM, GpuSpec, spec_tensor_figure
from roofline.schema import NOT_IN_SPEC_TABLE, UNAVAILABLE, source_column


@dataclass(frozen=True)
class Policy:
    """How the spec table meets one format's rows."""

    #: compute and L1 roofs at the row's profiled SM clock where it records one (else the published figure)
    at_profiled_clock: bool = True
    #: the source of a roof that neither the profile nor the table gave or explained (else left empty)
    unsaid: str | None = None
    #: the format records roofs that the table outranks: their source ends ":data:`NOT_IN_SPEC_TABLE`", and
    #: the stage keeps them only where that holds (the device has no table entry) and the table gave nothing
    outranked: bool = False


#: the formats whose rows the spec table fills (by the ``format`` column). The others record every roof
#: they have (XProf's trace JSON: none), and the table meets them only through --device/--device-map.
POLICIES: dict[str, Policy] = {
    "ncu-rep": Policy(),
    "ncu-csv": Policy(),
    "torch-trace": Policy(),
    # a timeline's roof that the table neither gives nor explains: the export's device is not in it
    "nsys-sqlite": Policy(unsaid=f"{UNAVAILABLE}: the device is not in the spec table (`roofline devices`); "
                                 "pass --peaks"),
    # the plane's clock_rate is the device's maximum clock; its memory_bandwidth (and xprof's peak from its
    # compute-capability table) count only where the spec table has no entry (ROCm reports half of MI300X's)
    "xplane": Policy(at_profiled_clock=False, outranked=True),
    # AMD profiles record their own roofs (rocprof-compute's measured roofline.csv, the architecture model of
    # the GPU sysinfo/the agent describes); the table fills only the ones they lack, by the resolved SKU:
    # a ROCm 7 sysinfo.csv has no hbm_bw, rocprofv3 records no HBM bandwidth, an MI350 sysinfo's max_sclk is 0
    **dict.fromkeys(("rocprof-compute", "rocprofv3", "rocprofv3-csv", "rocpd"),
                    Policy(unsaid=f"{UNAVAILABLE}: the profile records none and the device is not in the spec "
                                  "table (`roofline devices`); pass --peaks")),
}


def attach_roofs(kernels: pd.DataFrame, device: str | None = None,
                 device_map: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The roofs stage: the spec table's roofs where the profile recorded none, by each row's format
    (:data:`POLICIES`), labelled as such; then ``--device`` names the GPU of rows whose profile records
    none and ``--device-map`` replaces a named device's roofs by a table entry's.

    Applying it to a frame it gave changes nothing (the caller's frame is never written). The pipeline
    calls it after the joins (``--counters`` frames get theirs before: a report's L1/L2 roof is carried only
    where the timeline has none, the table's included)."""
    if not kernels.attrs:
        return _roofs(kernels, device, device_map)
    # pandas deep-copies a frame's attrs (the provenance) into every column and frame taken from it: ~0.3 ms
    # each, ~50 ms per fill of a trace; the stage works on the bare frame and the result gets them once
    bare = kernels.copy(deep=False)
    bare.attrs = {}
    out = _roofs(bare, device, device_map)
    if out is bare:
        return kernels
    out.attrs = copy.deepcopy(kernels.attrs)
    return out


def _roofs(kernels: pd.DataFrame, device: str | None, device_map: Mapping[str, str] | None) -> pd.DataFrame:
    out = _table_roofs(kernels)
    if not device and not device_map:
        return out
    if device:
        out = out.copy()  # (the caller's frame stays as it was)
        out.loc[out["device_name"].isna(), "device_name"] = device
    return fill_spec_peaks(out, device_map=dict(device_map or {}))


def _table_roofs(kernels: pd.DataFrame) -> pd.DataFrame:
    """Each format's rows filled by its policy; rows of formats without one are left as read."""
    if kernels.empty or "device_name" not in kernels or "format" not in kernels:
        return kernels
    groups = _format_rows(kernels["format"])
    if len(groups) == 1 and groups[0][1] is None:  # every row (the usual frame: one format)
        policy = POLICIES.get(groups[0][0])
        if policy is None:
            return kernels
        # a small frame's fill from the cache of its distinct rows' (pandas' fixed costs paid once a process)
        small = fill_cache.small_fill(kernels, policy, lambda given: _fill_policy(given, policy), FILL_INPUTS,
                                      FILLED_COLUMNS, _SMALL_FRAME)
        return _fill_policy(kernels, policy) if small is None else small
    # each policy's distinct rows of the columns the fill reads (FILL_INPUTS: a frame of just these is filled as
    # the whole, row by row), and what it wrote spread back once per column for every policy (a dataset mixes
    # formats): the fills of a dataset's rows are a few distinct ones, never a row-wise copy of each roof source
    cols = [c for c in FILL_INPUTS if c in kernels]
    found = distinct_rows(kernels, cols)
    # the formats of one policy are filled together (a row's fill depends on its values and the policy only):
    # pandas' fixed cost per fill paid once for ncu's and torch's rows (~5 ms of a 500-input dataset's 60)
    by_policy: dict[Policy, np.ndarray] = {}
    for fmt, rows in groups:
        policy = POLICIES.get(fmt)
        if policy is not None:
            by_policy[policy] = by_policy[policy] | rows if policy in by_policy else rows
    writes: dict[str, list[_Part]] = {}
    for policy, rows in by_policy.items():
        at = np.flatnonzero(rows)
        if found is None:  # (an unhashable value: every row filled)
            firsts, spread = at, np.arange(len(at), dtype=np.int64)
        else:
            _, first, spread = np.unique(found[0][at], return_index=True, return_inverse=True)
            firsts = at[first]
        given = pd.DataFrame({c: kernels[c].array.take(firsts) for c in cols})
        filled = _fill_policy(given, policy)
        for col in FILLED_COLUMNS:
            if col in filled and not _kept(kernels[col], given[col], filled[col]):
                writes.setdefault(col, []).append((rows, filled[col], spread.reshape(-1)))
    if not writes:
        return kernels
    out = kernels.copy(deep=False)
    for col in list(writes):  # each column's fills dropped once spread: they and the new columns never all coexist
        out[col] = _scatter(kernels[col], writes.pop(col))
    return out


def _kept(column: pd.Series, given: pd.Series, filled: pd.Series) -> bool:
    """Whether a policy's fill left ``column`` as it was: its distinct rows filled to what they held, in a column
    of a dtype :func:`_scatter` gives back. Spread, such a part would write every row's own value into a new
    copy of the column: a dataset's rows were filled when the batch wrote them, so all its parts are such ones
    (spreading them was ~0.1 s of a 500-input report before its charts fork)."""
    return column.dtype in _SCATTERED and filled.dtype == given.dtype and filled.equals(given)


#: the dtypes a column has after :func:`_scatter` (float64 or Arrow-backed strings)
_SCATTERED = (np.dtype("float64"), pd.StringDtype("pyarrow"))


def _format_rows(formats: pd.Series) -> list[tuple[Any, np.ndarray | None]]:
    """(format, its rows as a mask) per distinct format; the mask is None when it is every row."""
    if isinstance(formats.array, pd.arrays.ArrowStringArray):  # (the canonical column: one Arrow pass)
        arrow = formats.array.__arrow_array__()
        if arrow.null_count == 0 and len(uniq := pc.unique(arrow)) == 1:
            return [(uniq[0].as_py(), None)]
    codes, uniq = pd.factorize(formats, use_na_sentinel=True)
    if len(uniq) == 1 and (codes == 0).all():
        return [(uniq[0], None)]
    return [(fmt, codes == i) for i, fmt in enumerate(uniq)]


#: a policy's fills: its rows (a mask), the values of its distinct rows, and each of its rows' distinct row
_Part = tuple[np.ndarray, pd.Series, np.ndarray]


def _scatter(column: pd.Series, parts: list[_Part]) -> Any:
    """``column`` with each part's values at its rows (a new array: the frame it came from is not written).
    Strings become a ``string`` column, as ``pd.array(..., dtype="string")`` makes it."""
    if column.dtype == "float64":
        v = column.to_numpy(dtype="float64", na_value=np.nan, copy=True)
        for rows, values, spread in parts:
            v[rows] = values.to_numpy(dtype="float64", na_value=np.nan)[spread]
        return v
    if isinstance(column.array, pd.arrays.ArrowStringArray) and all(
            isinstance(values.array, pd.arrays.ArrowStringArray) for _, values, _ in parts):
        return pd.arrays.ArrowStringArray(_replaced(column.array.__arrow_array__(), parts))
    s = column.to_numpy(dtype=object, na_value=None, copy=True)
    for rows, values, spread in parts:
        s[rows] = values.to_numpy(dtype=object, na_value=None)[spread]
    return pd.array(s, dtype="string")


def _replaced(column: pa.ChunkedArray, parts: list[_Part]) -> pa.ChunkedArray:
    """An Arrow string column with each part's values at its rows, chunk by chunk: Arrow copies the column's
    kept cells and the parts' values once, no Python string per cell; the column is never concatenated whole
    first (a transient copy of it: ~0.5 GB of a 5,000-input dataset's roof sources)."""
    n = len(column)
    mask = np.zeros(n, dtype=bool)
    source = np.zeros(n, dtype=np.int64)  # each replaced row's place among the parts' values
    at = 0
    for rows, values, spread in parts:
        mask[rows] = True
        source[rows] = at + spread
        at += len(values)
    pieces = [c.cast(pa.large_string()) for _, values, _ in parts for c in values.array.__arrow_array__().chunks]
    given = pa.concat_arrays(pieces) if pieces else pa.array([], pa.large_string())
    replacements = given.take(pa.array(source[mask]))
    out, start, used = [], 0, 0
    for chunk in column.chunks:
        end = start + len(chunk)
        here = mask[start:end]
        k = int(here.sum())
        out.append(pc.replace_with_mask(chunk.cast(pa.large_string()), pa.array(here),
                                        replacements.slice(used, k)) if k
                   else chunk.cast(pa.large_string()))
        start, used = end, used + k
    return pa.chunked_array(out, pa.large_string())


def _fill_policy(frame: pd.DataFrame, policy: Policy) -> pd.DataFrame:
    """:func:`fill_spec_peaks` as ``policy`` says, on rows of one format."""
    aside = _outranked(frame) if policy.outranked else []
    if aside:
        frame = frame.copy()
        for col, rows, _, _ in aside:
            _put(frame, col, rows, np.nan, None)
    out = fill_spec_peaks(frame, at_profiled_clock=policy.at_profiled_clock)
    if aside:
        from roofline.hardware.names import lookup

        out = out.copy() if out is frame else out
        names = out["device_name"].to_numpy(dtype=object, na_value=None)
        absent = {d: lookup(d) is None for d in set(names.tolist())}
        for col, rows, values, sources in aside:
            keep = rows & np.array([absent[d] for d in names], dtype=bool) & out[col].isna().to_numpy()
            if keep.any():
                _put(out, col, keep, values[keep], sources[keep])
    if policy.unsaid is not None:
        for col in _PEAK_COLUMNS:
            src = source_column(col)
            if src in out and _missing(out[src]):
                out = out.copy(deep=False) if out is frame else out
                s = out[src].to_numpy(dtype=object, na_value=None, copy=True)
                s[pd.isna(s)] = policy.unsaid
                out[src] = pd.array(s, dtype="string")
    return out


def _outranked(frame: pd.DataFrame) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """(column, rows, values, sources) of the recorded roofs the table outranks (source ending
    :data:`NOT_IN_SPEC_TABLE`)."""
    found = []
    for col in _PEAK_COLUMNS:
        src = source_column(col)
        if col not in frame or src not in frame:
            continue
        rows = frame[src].astype("string").str.endswith(NOT_IN_SPEC_TABLE).fillna(False).to_numpy(dtype=bool)
        if rows.any():
            found.append((col, rows, frame[col].to_numpy(dtype="float64", na_value=np.nan, copy=True),
                          frame[src].to_numpy(dtype=object, na_value=None, copy=True)))
    return found


def _put(out: pd.DataFrame, col: str, rows: np.ndarray, values: Any, sources: Any) -> None:
    """``col[rows] = values`` and its source ``sources``, whole columns rebuilt (the input is not written)."""
    src = source_column(col)
    v = out[col].to_numpy(dtype="float64", na_value=np.nan, copy=True)
    v[rows] = values
    s = out[src].to_numpy(dtype=object, na_value=None, copy=True)
    s[rows] = sources
    out[col] = v
    out[src] = pd.array(s, dtype="string")


def fill_spec_peaks(frame: pd.DataFrame, at_profiled_clock: bool = True,
                    device_map: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Fill peaks the counters did not give from the spec table, labelled as such.

    Compute peaks are per-SM rate × SMs × the profiled SM clock when that clock is known and
    ``at_profiled_clock`` (else the published figure); DRAM is the published bandwidth; L1 is ncu's
    128 B/cycle/SM at the same clock. L2 bandwidth is not published, so it is never filled.
    """
    if frame.empty or "device_name" not in frame:
        return frame
    if len(frame) > _SMALL_FRAME:
        found = _distinct_fill(frame, at_profiled_clock, device_map)
        if found is not None:
            return found
    from roofline.hardware.names import resolve

    out = frame
    for (device, cc, sms, boost), on_device in _device_groups(frame):
        res = resolve(device, cc, sms, boost, device_map)
        spec = res.spec
        if out is frame:
            out = frame.copy()
        if device_map and device in device_map:
            _clear_spec(out, on_device)  # the ingest filled them from the name; --device-map replaces them
        if spec is None:
            for col in _PEAK_COLUMNS:
                _say(out, col, on_device, _NO_DEVICE + res.reason)
            continue
        clk = None
        if at_profiled_clock and "sm_clock_hz" in out:
            clk = pd.to_numeric(out["sm_clock_hz"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            with np.errstate(invalid="ignore"):
                clk = np.where(np.isfinite(clk) & (clk > 0), clk, np.nan)  # a damaged clock is no clock
        for col, key in (("peak_flop_per_s_fp64", "fp64"), ("peak_flop_per_s_fp32", "fp32"),
                         ("peak_flop_per_s_fp16", "fp16")):
            if key in spec.figures:
                _fill_compute(out, col, spec, key, False, on_device, clk)
            else:
                _say_missing(out, col, on_device, f"no {key} (non-tensor) figure for {spec.name}")
        if "peak_flop_per_s_tensor" in out:
            paths = out["tensor_path"] if "tensor_path" in out else pd.Series(pd.NA, index=out.index)
            for path in pd.unique(paths[on_device].astype(object)):
                path_s = None if pd.isna(path) else str(path)
                fig = spec_tensor_figure(spec, path_s)
                sel = on_device & (paths.isna() if path_s is None else (paths == path_s).fillna(False)).to_numpy()
                if fig is not None:
                    _fill_compute(out, "peak_flop_per_s_tensor", spec, fig[0], fig[1], sel, clk)
                elif path_s is not None:
                    _say_missing(out, "peak_flop_per_s_tensor", sel,
                                 f"no tensor figure for the {path_s} path of {spec.name}")
        if np.isfinite(spec.dram_bytes_per_s):
            _fill_value(out, "peak_dram_bytes_per_s", on_device, spec.dram_bytes_per_s,
                        f"spec: {spec.name} {spec.dram_bytes_per_s / 1e12:g} TB/s ({spec.dram_source}), as published")
        else:
            _say(out, "peak_dram_bytes_per_s", on_device, spec.dram_source)
        l1_per_hz = spec.l1_bytes_per_s_at(1.0)
        if l1_per_hz and not np.isfinite(spec.boost_clock_hz):
            if clk is not None:
                mask = on_device & (clk > 0) & out["peak_l1_bytes_per_s"].isna().to_numpy()
                if mask.any():
                    _assign(out, "peak_l1_bytes_per_s", mask, l1_per_hz * clk[mask],
                            f"spec: {L1_BYTES_PER_CYCLE_PER_SM} B/cycle/SM × {spec.sm_count} SMs ({spec.name}, "
                            "ncu's L1 roof) × the profiled SM clock")
        elif l1_per_hz:
            rate = f"spec: {L1_BYTES_PER_CYCLE_PER_SM} B/cycle/SM × {spec.sm_count} SMs ({spec.name}, ncu's L1 roof) × "
            if clk is None:
                _fill_value(out, "peak_l1_bytes_per_s", on_device, l1_per_hz * spec.boost_clock_hz,
                            rate + f"the boost clock {spec.boost_clock_hz / 1e6:.0f} MHz")
            else:
                mask = on_device & (clk > 0) & out["peak_l1_bytes_per_s"].isna().to_numpy()
                if mask.any():
                    _assign(out, "peak_l1_bytes_per_s", mask, l1_per_hz * clk[mask], rate + "the profiled SM clock")
                _fill_value(out, "peak_l1_bytes_per_s", on_device & ~(clk > 0), l1_per_hz * spec.boost_clock_hz,
                            rate + f"the boost clock {spec.boost_clock_hz / 1e6:.0f} MHz; no profiled clock known")
    return out


def _distinct_fill(frame: pd.DataFrame, at_profiled_clock: bool,
                   device_map: Mapping[str, str] | None) -> pd.DataFrame | None:
    """:func:`fill_spec_peaks` on the frame's distinct rows, spread back to every row.

    A row's filled peaks and sources depend only on its device columns, clock, tensor path and the peaks
    and sources it already has, and a 20k-row trace has a handful of distinct combinations: filling those
    and spreading them back took 16 ms against 45 ms for the row-wise fill (V100 trace). None when the rows
    are mostly distinct (or a value is unhashable): then the row-wise fill is as fast.

    A column missing on every row (a profile's peaks before the fill) or holding one value (a trace's device)
    splits no rows and is not factorised.
    The distinct rows' fill is cached by their values (on a few rows pandas' fixed cost per column call is
    ~4 ms of a read, the same for every profile of these devices), and only the columns it changed are spread.
    """
    cols = {c: frame[c] for c in FILL_INPUTS if c in frame}  # (the fill reads only these, writes FILLED_COLUMNS)
    present = [c for c, v in cols.items() if not _all_missing(v)]
    found = distinct_rows(frame, [c for c in present if not _constant(cols[c])])
    if found is None or len(found[1]) > len(frame) // 4:
        return None
    codes, firsts = found
    key = (at_profiled_clock, tuple(sorted((device_map or {}).items())),
           tuple((c, str(v.dtype), c in present) for c, v in cols.items()),
           tuple(tuple(_plain(x) for x in cols[c].array.take(firsts).tolist()) for c in present))
    changed = _FILLED.get(key)
    if changed is None:
        small = pd.DataFrame({c: v.array.take(firsts) for c, v in cols.items()})
        filled = fill_spec_peaks(small, at_profiled_clock, device_map)
        changed = {c: filled[c].array for c in FILLED_COLUMNS  # (read, never written: shared by the cache)
                   if c in filled and not (filled[c].dtype == small[c].dtype and filled[c].equals(small[c]))}
        _FILLED[key] = changed
        fill_cache.evict(_FILLED, 64)
    out = frame.copy(deep=False)  # (the columns written are replaced, not written into: the input is untouched)
    for c, values in changed.items():
        out[c] = fill_cache.spread(values, codes, len(firsts) == 1)
    return out


def _all_missing(column: pd.Series) -> bool:
    return _missing(column) == len(column)


def _constant(column: pd.Series) -> bool:
    """One value on every row, none missing (checked without factorising)."""
    arr = column.array
    if isinstance(arr, pd.arrays.ArrowStringArray):
        arrow = arr.__arrow_array__()
        return arrow.null_count == 0 and len(pc.unique(arrow)) == 1
    if len(arr) == 0 or arr.isna().any():
        return False
    values = arr.to_numpy()
    return values.dtype.kind in "biuf" and bool((values == values[0]).all())


def _missing(column: pd.Series) -> int:
    """How many cells are missing (an Arrow string column knows without a pass)."""
    arr = column.array
    if isinstance(arr, pd.arrays.ArrowStringArray):
        return int(arr.__arrow_array__().null_count)
    return int(arr.isna().sum())


def _plain(v: Any) -> Any:
    """A cell as a cache key's part: every kind of missing is None (NaN is not equal to itself)."""
    return None if v is None or v is pd.NA or (v.__class__ is float and v != v) else v


#: the columns :func:`fill_spec_peaks` changed on distinct rows, by those rows' values and dtypes (the spec
#: table is read once per process): :func:`_distinct_fill`
_FILLED: dict[Any, dict[str, Any]] = {}


#: what a peak's source says when its device resolved to nothing (replaced, not quoted, once it does)
_NO_DEVICE = f"{UNAVAILABLE}: no roofs for this device: "
_PEAK_COLUMNS = ("peak_flop_per_s_fp64", "peak_flop_per_s_fp32", "peak_flop_per_s_fp16", "peak_flop_per_s_tensor",
                 "peak_dram_bytes_per_s", "peak_l1_bytes_per_s")
#: the columns fill_spec_peaks writes (the peaks and their sources): a row's values in them depend only on its
#: device columns, clock, tensor path and what they held (a reader may fill distinct rows and expand them)
FILLED_COLUMNS = (*_PEAK_COLUMNS, *map(source_column, _PEAK_COLUMNS))


#: frames up to this many rows are grouped in plain Python: pandas' MultiIndex factorize costs ~6 ms of fixed
#: overhead, which dominates on the one-row-per-device frames a timeline reader passes
_SMALL_FRAME = 256
_GROUP_KEYS = ("device_name", "compute_capability", "sm_count", "sm_boost_clock_hz")
#: the columns fill_spec_peaks reads (it writes FILLED_COLUMNS): a frame of just these is filled as the whole
FILL_INPUTS = (*_GROUP_KEYS, "sm_clock_hz", "tensor_path", *FILLED_COLUMNS)


def _device_groups(frame: pd.DataFrame) -> list[tuple[tuple[Any, Any, Any, Any], np.ndarray]]:
    """Rows per (device name, CC, SM count, max clock): what name resolution may use."""
    if len(frame) <= _SMALL_FRAME:
        return _device_groups_small(frame)
    cols = list(_GROUP_KEYS)
    keys = pd.DataFrame({c: (frame[c].astype(object) if c in frame else pd.Series(None, index=frame.index, dtype=object))
                         for c in cols})
    keys = keys.where(keys.notna(), None)
    codes, uniq = pd.factorize(pd.MultiIndex.from_frame(keys.astype(str)))
    out = []
    for i in range(len(uniq)):
        mask = codes == i
        first = keys[mask].iloc[0]
        name = first["device_name"]
        sms = int(first["sm_count"]) if first["sm_count"] is not None else None
        boost = float(first["sm_boost_clock_hz"]) if first["sm_boost_clock_hz"] is not None else None
        out.append(((None if name is None else str(name), first["compute_capability"], sms, boost), mask))
    return out


def _device_groups_small(frame: pd.DataFrame) -> list[tuple[tuple[Any, Any, Any, Any], np.ndarray]]:
    """:func:`_device_groups` row by row: the same groups (keyed by the values' ``str``, missing as None), in
    order of first appearance, each described by its first row."""
    n = len(frame)
    cols = [[None if pd.isna(v) else v for v in frame[c].tolist()] if c in frame else [None] * n
            for c in _GROUP_KEYS]
    groups: dict[tuple[str, ...], int] = {}
    firsts: list[int] = []  # each group's first row
    codes = np.empty(n, dtype=np.int64)
    for i, row in enumerate(zip(*cols)):
        key = tuple(str(v) for v in row)
        if key not in groups:
            groups[key] = len(firsts)
            firsts.append(i)
        codes[i] = groups[key]
    out = []
    for g, i in enumerate(firsts):
        name, cc, sms, boost = (c[i] for c in cols)
        out.append(((None if name is None else str(name), cc, None if sms is None else int(sms),
                     None if boost is None else float(boost)), codes == g))
    return out


def _clear_spec(out: pd.DataFrame, rows: np.ndarray) -> None:
    """Forget peaks that came from the spec table (or said why not) on ``rows``; counters stay."""
    for col in _PEAK_COLUMNS:
        src = source_column(col)
        if col not in out or src not in out:
            continue
        text = out[src].astype("string").fillna("")
        mask = rows & (text.str.startswith("spec") | text.str.startswith(UNAVAILABLE)).to_numpy(dtype=bool)
        if mask.any():
            v = out[col].to_numpy(dtype="float64", na_value=np.nan, copy=True)
            v[mask] = np.nan
            out[col] = v
            s = out[src].to_numpy(dtype=object, na_value=None)
            s[mask] = None
            out[src] = pd.array(s, dtype="string")


def _say(out: pd.DataFrame, col: str, rows: np.ndarray, text: str) -> None:
    """A peak nothing gave: its source says why (only where empty and unsaid)."""
    src = source_column(col)
    if src not in out or col not in out:
        return
    mask = rows & out[col].isna().to_numpy() & out[src].isna().to_numpy()
    if mask.any():
        s = out[src].to_numpy(dtype=object, na_value=None)
        s[mask] = text if text.startswith(UNAVAILABLE) else f"{UNAVAILABLE}: {text.removeprefix('unavailable: ')}"
        out[src] = pd.array(s, dtype="string")


def _assign(out: pd.DataFrame, col: str, mask: np.ndarray, values: Any, note: Any) -> None:
    """``col[mask] = values`` and its source ``note`` (one string, or one per masked row), followed by
    "; counters gave <what>" where the counters had said something.

    Whole columns are rebuilt from NumPy arrays: masked ``.loc`` writes into Arrow string columns cost
    ~10 ms each on a 20k-row trace, this ~1 ms.
    """
    src = source_column(col)
    v = out[col].to_numpy(dtype="float64", na_value=np.nan, copy=True)
    v[mask] = values
    s = out[src].to_numpy(dtype=object, na_value=None)
    prior = s[mask]
    said = np.array([p is not None and not str(p).startswith(_NO_DEVICE) for p in prior], dtype=bool)
    if isinstance(note, str) and not said.any():
        s[mask] = note
    else:
        notes = np.array(np.broadcast_to(np.asarray(note, dtype=object), prior.shape))
        notes[said] = [f"{n}; counters gave {p}" for n, p in zip(notes[said], prior[said])]
        s[mask] = notes
    out[col] = v
    out[src] = pd.array(s, dtype="string")


def _say_missing(out: pd.DataFrame, col: str, rows: np.ndarray, what: str) -> None:
    """Where neither the counters nor the spec table give a peak, its source says so (never left empty)."""
    _say(out, col, rows, f"the spec table has {what} (not published as a vetted figure); "
                         "measure it and pass --peaks FILE.toml")


def _fill_value(out: pd.DataFrame, col: str, rows, value: float, note: str) -> None:  # type: ignore[no-untyped-def]
    mask = rows & out[col].isna().to_numpy()
    if mask.any():
        _assign(out, col, mask, value, note)


def _fill_compute(out: pd.DataFrame, col: str, spec: GpuSpec, key: str, sparse: bool, rows, clk) -> None:  # type: ignore[no-untyped-def]
    mask = rows & out[col].isna().to_numpy()
    if not mask.any():
        return
    factor = 2.0 if sparse else 1.0
    kind = "sparse (2:4, 2× dense)" if sparse else "dense"
    arch = spec.arch
    if sparse and arch is not None and key in arch.sparse and key in arch.dense:
        # the vendor's sparse figure where it is not 2x dense (Blackwell Ultra FP4: 20 vs 15 PFLOPS)
        factor = arch.sparse[key].per_clk / arch.dense[key].per_clk
        kind = f"sparse (2:4, {factor:g}× dense: {arch.label()} model)"
    base = f"spec: {spec.figure_source(key)}; {kind}"
    published = f"{base}, as published (boost)" + ("" if clk is None else "; no profiled clock known")
    c = clk[mask] if clk is not None else None
    if not np.isfinite(spec.figures[key].flop_per_s):  # architecture model with no clock known
        known_clk = c is not None and (c > 0)
        if c is None or not np.any(known_clk):
            _say(out, col, mask, f"{spec.name}: no SM clock recorded to turn the per-SM rate into a roof")
            return
    if c is None or not (c > 0).any():
        _assign(out, col, mask, spec.figures[key].flop_per_s * factor, published)
        return
    known = c > 0
    # (c is NaN where no clock is known: fill_spec_peaks cleared damaged clocks)
    value = np.where(known, spec.flop_per_s_at(key, 1.0) * factor * c, spec.figures[key].flop_per_s * factor)
    per_clock = (f"{base}, {spec.figures[key].flop_per_cycle_per_sm:g} FLOP/cycle/SM × {spec.sm_count} SMs × "
                 "the profiled SM clock ")
    notes = [f"{per_clock}{round(x / 1e6):d} MHz" if k else published for x, k in zip(c, known)]
    _assign(out, col, mask, value, np.array(notes, dtype=object))
