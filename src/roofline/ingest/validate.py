"""One validation layer for the numbers a profile gives: typed parsing, and plausibility bounds.

Profiles are untrusted. Two kinds of damage reach the readers:

* a field that is not a number of the expected kind (text where a count belongs, a list as a device id,
  an integer past 64 bits, 1e308 that overflows once scaled): :func:`as_int` / :func:`as_float` raise a
  :class:`~roofline.errors.CorruptReportError` naming the file and the field, never a bare ``ValueError``;
* a number that parses but cannot be true of a GPU (1e12 SMs, a 1 THz clock, a negative bandwidth, an op
  of 106 days, infinite FLOPs): :func:`checked` (run by the pipeline on every reader's frame, before the
  roofs stage) makes it unavailable with the reason, flags the row, drops the roofs the profile derived
  from an implausible SM count or clock, and records one line per kind in the provenance
  (``implausible``), which the pipeline prints as a warning. A roof is never computed from such a value;
  the spec table's roofs (by the device's name) still apply.

The bounds are deliberately wide (an order of magnitude past any GPU made so far): they catch damage, not
unusual hardware. See ``docs/reliability.md``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from roofline.errors import CorruptReportError
from roofline.schema import PROVENANCE_KEY, UNAVAILABLE, source_column

#: provenance key of the lines that say what was implausible (the pipeline prints each as a warning)
IMPLAUSIBLE = "implausible"

# ---- typed parsing ---------------------------------------------------------------------------------------

_INT64 = (-(2**63), 2**63 - 1)


def as_int(path: str | Path, field: str, value: Any, lo: int = _INT64[0], hi: int = _INT64[1]) -> int:
    """``value`` as an int in [lo, hi] (an integral float or numeric text is accepted: exports write both);
    anything else is a :class:`CorruptReportError` naming the file and the field."""
    out: int | None = None
    if value.__class__ is int:
        out = value
    elif isinstance(value, bool) or value is None:
        out = None
    elif isinstance(value, (int, np.integer)):
        out = int(value)
    elif isinstance(value, (float, np.floating)):
        out = int(value) if math.isfinite(value) and float(value).is_integer() else None
    elif isinstance(value, (str, bytes)):
        text = value.strip() if isinstance(value, str) else value.strip().decode("ascii", "replace")
        try:
            out = int(text)
        except ValueError:
            try:
                f = float(text)
            except ValueError:
                f = math.nan
            out = int(f) if math.isfinite(f) and f.is_integer() else None
    if out is None or not lo <= out <= hi:
        raise CorruptReportError(path, f"field {field!r}: {_show(value)} is not an integer"
                                       + ("" if out is None else f" in [{lo:,}, {hi:,}]"))
    return out


def as_float(path: str | Path, field: str, value: Any, finite: bool = True) -> float:
    """``value`` as a float (finite unless ``finite`` is False); else a typed error naming file and field."""
    out = math.nan
    ok = False
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        try:
            out, ok = float(value), True
        except OverflowError:  # an int past float's range
            ok = False
    elif isinstance(value, (str, bytes)):
        try:
            out, ok = float(value), True
        except ValueError:
            ok = False
    if not ok or (finite and not math.isfinite(out)):
        raise CorruptReportError(path, f"field {field!r}: {_show(value)} is not a{' finite' if finite else ''} number")
    return out


def int_or_none(value: Any, lo: int = _INT64[0], hi: int = _INT64[1]) -> int | None:
    """``value`` as an int in [lo, hi], or None (a lenient reader's "not recorded")."""
    try:
        return as_int("", "", value, lo, hi)
    except CorruptReportError:
        return None


def float_or_none(value: Any) -> float | None:
    """``value`` as a finite float, or None."""
    try:
        return as_float("", "", value)
    except CorruptReportError:
        return None


def row_error(path: str | Path, table: str, columns: tuple[str, ...] | list[str], row: Any,
              exc: BaseException) -> CorruptReportError:
    """The typed error for a row of ``table`` whose conversion failed (``exc``): names the first column whose
    value is not a 64-bit integer or finite number (found again only here, on the error path)."""
    for name, value in zip(columns, row):
        if value is None:
            continue
        if int_or_none(value) is None and float_or_none(value) is None:
            return CorruptReportError(path, f"{table}.{name}: {_show(value)} is not a number")
    return CorruptReportError(path, f"{table}: a row with a value out of range or of the wrong type ({exc})")


#: what a value of an unexpected type or size raises in a reader site that does not check it (yet)
DAMAGE_TYPES = (ValueError, TypeError, OverflowError, KeyError, IndexError, AttributeError, ZeroDivisionError,
                RecursionError)


def damage_error(path: str | Path, exc: BaseException) -> CorruptReportError:
    """The last net under the readers (``pipeline.read_one``): one of :data:`DAMAGE_TYPES` becomes a
    :class:`CorruptReportError` naming the file (with ``ROOFLINE_DEBUG`` set the pipeline raises it as it is:
    the fuzz tests run so, to find such sites)."""
    return CorruptReportError(path, f"damaged: a value of an unexpected type or size ({type(exc).__name__}: "
                                    f"{str(exc)[:200]}); if the file is a valid profile, this is a bug: "
                                    "please report it (ROOFLINE_DEBUG=1 shows where)")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- plausibility ----------------------------------------------------------------------------------------

#: column -> (lowest, highest) plausible value, SI units. SMs/CUs: the largest GPU has 304 CUs (MI300X);
#: clocks: 10 MHz to 10 GHz (memory clocks to 100 GHz); roofs: 1e17 FLOP/s and 1e15 B/s are ~10x and
#: ~10x past the largest single-GPU figures (B200 dense FP4 ~1e16 FLOP/s; MI300X LDS ~8e13 B/s).
DEVICE_BOUNDS: dict[str, tuple[float, float]] = {
    "sm_count": (1, 2048),
    "sm_clock_hz": (1e7, 1e10),
    "sm_boost_clock_hz": (1e7, 1e10),
    "l1_clock_hz": (1e7, 1e10),
    "l2_clock_hz": (1e7, 1e10),
    "dram_clock_hz": (1e6, 1e11),
}
PEAK_BOUNDS: dict[str, tuple[float, float]] = {
    **{f"peak_flop_per_s_{p}": (1e6, 1e17) for p in ("fp64", "fp32", "fp16", "tensor")},
    **{f"peak_{lv}_bytes_per_s": (1e6, 1e15) for lv in ("dram", "l2", "l1", "lds")},
}
#: one kernel or op longer than a day: a damaged timestamp (106 days was seen)
MAX_DURATION_S = 86_400.0
#: one kernel or op's FLOPs or bytes past these: a week at 1e17 FLOP/s or 1e15 B/s (an achieved-rate bound
#: is no test: XLA's program rows carry whole-program bytes against a short self time)
MAX_FLOP = 1e23
MAX_BYTES = 1e21
_FLOPS = ("flop_fp64", "flop_fp32", "flop_fp16", "flop_tensor")
_BYTES = ("dram_bytes", "l2_bytes", "l1_bytes", "lds_bytes")
#: roofs the profile derives from its SM count and clock (dropped on rows where those are implausible)
_DERIVED_FROM_DEVICE = ("sm_count", "sm_clock_hz", "sm_boost_clock_hz")


def checked(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every implausible number made unavailable, the row flagged and the provenance told.

    Returns ``frame`` itself when nothing is implausible (the common case: one vectorised test over the
    checked columns, :func:`_all_plausible`); otherwise a copy."""
    if frame.empty or _all_plausible(frame):
        return frame
    found: list[str] = []
    out = frame
    bad_device = np.zeros(len(frame), dtype=bool)

    def take(col: str, bad: np.ndarray, values: np.ndarray, rule: str) -> None:
        nonlocal out
        if not bad.any():
            return
        if out is frame:
            out = frame.copy(deep=False)
            out.attrs = dict(frame.attrs)  # the provenance list is replaced, never written in place
        shown = _examples(values[bad])
        text = f"{col} {shown} ({rule}) on {int(bad.sum())} of {len(frame)} rows: unavailable"
        found.append(text)
        _blank(out, col, bad, f"{UNAVAILABLE}: implausible value {shown} in the profile ({rule}); not used")
        _flag(out, bad, f"implausible {col}")

    for col, (lo, hi) in DEVICE_BOUNDS.items():
        if col in frame:
            v = _numbers(frame[col])
            bad = ~np.isnan(v) & ~((v >= lo) & (v <= hi))
            take(col, bad, v, f"plausible: {lo:g} to {hi:g}")
            if col in _DERIVED_FROM_DEVICE:
                bad_device |= bad
    for col, (lo, hi) in PEAK_BOUNDS.items():
        if col in frame:
            v = _numbers(frame[col])
            bad = ~np.isnan(v) & ~((v >= lo) & (v <= hi))
            take(col, bad, v, f"plausible: {lo:g} to {hi:g}")
    if bad_device.any():  # the profile's own roofs on those rows came from the implausible SMs or clock
        for col in PEAK_BOUNDS:
            if col in out:
                v = _numbers(out[col])
                drop = bad_device & ~np.isnan(v) & _from_profile(out, col)
                take(col, drop, v, "derived from an implausible SM count or clock")
    if "duration_s" in frame:  # (zero, negative and non-finite durations: the analysis says "no bound")
        dur = _numbers(frame["duration_s"])
        take("duration_s", (dur > MAX_DURATION_S) & np.isfinite(dur), dur, f"over {MAX_DURATION_S:g} s: one day")
    for cols, most in ((_FLOPS, MAX_FLOP), (_BYTES, MAX_BYTES)):
        for col in cols:
            if col in frame:
                v = _numbers(frame[col])
                take(col, np.isinf(v), v, "not finite")
                take(col, np.isfinite(v) & (v < 0), v, "negative")
                take(col, np.isfinite(v) & (v > most), v, f"over {most:g}")
    if found:
        note(out, *found)
    return out


#: column -> (lowest, highest) a value may be and pass :func:`checked` (NaN always passes): its bounds, and for
#: FLOPs and bytes 0 to the most (so infinities and negatives fail, as there). ``duration_s`` is apart: only a
#: finite duration over a day fails.
_PASSING: dict[str, tuple[float, float]] = {
    **DEVICE_BOUNDS, **PEAK_BOUNDS, **{c: (0.0, MAX_FLOP) for c in _FLOPS}, **{c: (0.0, MAX_BYTES) for c in _BYTES},
}


def _all_plausible(frame: pd.DataFrame) -> bool:
    """Whether :func:`checked` would find nothing in ``frame`` (then it is returned as is): one 2-D test of its
    float and Int64 checked columns (~0.8 ms against ~2.6 ms column by column, for a small report's frame).
    False, and the full check runs, where a column has another dtype or anything fails."""
    cols = tuple(c for c in _PASSING if c in frame)
    dur = "duration_s" in frame
    if not cols and not dur:
        return True
    if not frame.columns.is_unique:
        return False
    # (take: a third of the time of frame[names] in pandas 3)
    sub = frame.take(frame.columns.get_indexer([*cols, "duration_s"] if dur else list(cols)), axis=1)
    if not all(dt == np.float64 or isinstance(dt, pd.Int64Dtype) for dt in sub.dtypes):
        return False  # e.g. text, which _numbers coerces
    values = sub.to_numpy(dtype="float64", na_value=np.nan)
    lo = np.array([_PASSING[c][0] for c in cols])
    hi = np.array([_PASSING[c][1] for c in cols])
    if dur:
        d = values[:, -1]
        if ((d > MAX_DURATION_S) & np.isfinite(d)).any():
            return False
        values = values[:, :-1]
    with np.errstate(invalid="ignore"):
        return bool((np.isnan(values) | ((values >= lo) & (values <= hi))).all())


def note(frame_or_meta: pd.DataFrame | dict[str, Any], *lines: str) -> None:
    """Add lines to the provenance's ``implausible`` list (a frame's first record, or a reader's record)."""
    if isinstance(frame_or_meta, dict):
        frame_or_meta.setdefault(IMPLAUSIBLE, []).extend(lines)
        return
    prov = frame_or_meta.attrs.get(PROVENANCE_KEY)
    if not prov:
        frame_or_meta.attrs[PROVENANCE_KEY] = prov = [{}]
    prov = [dict(r) for r in prov]  # never write the caller's records in place
    prov[0].setdefault(IMPLAUSIBLE, [])
    prov[0][IMPLAUSIBLE] = [*prov[0][IMPLAUSIBLE], *lines]
    frame_or_meta.attrs[PROVENANCE_KEY] = prov


def warnings_of(frame: pd.DataFrame) -> list[str]:
    """One warning line per implausible kind of each input (from the provenance)."""
    out = []
    for rec in frame.attrs.get(PROVENANCE_KEY, []) or []:
        for line in rec.get(IMPLAUSIBLE, []) or []:
            out.append(f"warning: {rec.get('source_file', '?')}: {line}")
    return out


def _numbers(col: pd.Series) -> np.ndarray:
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _examples(values: np.ndarray) -> str:
    uniq = list(dict.fromkeys(float(x) for x in values[:1000]))
    shown = ", ".join(f"{x:g}" for x in uniq[:3])
    return shown + (", ..." if len(uniq) > 3 else "")


def _blank(out: pd.DataFrame, col: str, bad: np.ndarray, why: str) -> None:
    series = out[col].copy()
    series[bad] = pd.NA if pd.api.types.is_integer_dtype(series.dtype) else np.nan
    out[col] = series
    src = source_column(col)
    if src in out:
        s = out[src].astype(object).copy()
        s[bad] = why
        out[src] = s.astype(out[src].dtype) if out[src].dtype != object else s


def _flag(out: pd.DataFrame, bad: np.ndarray, text: str) -> None:
    old = out["flags"].astype(object) if "flags" in out else pd.Series(None, index=out.index, dtype=object)
    new = [(f"{o}; {text}" if isinstance(o, str) and o else text) if b else o for o, b in zip(old.tolist(), bad)]
    out["flags"] = pd.array(new, dtype="string")


def _from_profile(out: pd.DataFrame, col: str) -> np.ndarray:
    """Rows whose roof in ``col`` the profile gave (not the spec table: its source does not start "spec")."""
    src = source_column(col)
    if src not in out:
        return np.ones(len(out), dtype=bool)
    s = out[src].astype(object).tolist()
    return np.array([not (isinstance(x, str) and x.startswith("spec")) for x in s], dtype=bool)


__all__ = [
    "DAMAGE_TYPES",
    "DEVICE_BOUNDS",
    "IMPLAUSIBLE",
    "MAX_DURATION_S",
    "PEAK_BOUNDS",
    "as_float",
    "as_int",
    "checked",
    "damage_error",
    "float_or_none",
    "int_or_none",
    "note",
    "row_error",
    "warnings_of",
]
