"""Resolve one quantity from whichever form a report holds it in, and say which form was used.

Nsight Compute stores the same counter as a total (``X.sum``), as a per-cycle rate
(``X.sum.per_cycle_elapsed``), as a per-second rate (``X.sum.per_second``) or through a
``derived__`` metric, depending on the ncu version and section set (see
``shared/reference/ncu_report_api.md`` §5). Every function here takes the raw metrics of one
kernel launch as a mapping ``name -> value`` in ncu's native units (durations in ns, clocks in
Hz, bytes, instruction counts) and returns a :class:`Resolved` value with a human-readable source.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from roofline.schema import UNAVAILABLE

Raw = Mapping[str, object]


class Resolved(NamedTuple):
    value: float
    source: str

    @property
    def ok(self) -> bool:
        return not math.isnan(self.value)


def unavailable(reason: str, hint: str | None = None) -> Resolved:
    text = f"{UNAVAILABLE}: {reason}"
    if hint:
        text += f"; collect with {hint}"
    return Resolved(math.nan, text)


def num(raw: Raw, name: str) -> float | None:
    """The finite numeric value of ``name``, or None when absent, not a number, or NaN.

    NaN (a replay that did not complete) counts as missing so that the fallback chains try the
    next form; the kernel is flagged separately (``ingest.common``) and its sources say so.
    """
    v = raw.get(name)
    if v is None or isinstance(v, (str, bytes)):
        return None
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None  # inf: a damaged export, as unusable as NaN


def unit_of(metric_base: str) -> str:
    """The hardware unit a metric is counted on: ``smsp__x`` -> ``smsp``."""
    base = metric_base.removeprefix("derived__")
    return base.split("__", 1)[0]


def duration_s(raw: Raw) -> Resolved:
    """Kernel duration in seconds.

    ``gpu__time_duration.sum`` is in ns in every ncu version seen; legacy reports (2019-2020
    formats) store ``gpu__time_duration`` with an empty unit, also ns.
    """
    v = num(raw, "gpu__time_duration.sum")
    if v is not None:
        return Resolved(v * 1e-9, "gpu__time_duration.sum")
    v = num(raw, "gpu__time_duration")
    if v is not None:
        return Resolved(v * 1e-9, "gpu__time_duration (legacy report, ns)")
    for unit in ("sm", "smsp", "gpc"):
        cycles = num(raw, f"{unit}__cycles_elapsed.avg")
        if cycles is None:
            cycles = num(raw, f"{unit}__cycles_elapsed.max")
        rate = num(raw, f"{unit}__cycles_elapsed.avg.per_second")
        if cycles is not None and rate:
            return Resolved(
                cycles / rate,
                f"{unit}__cycles_elapsed.avg / {unit}__cycles_elapsed.avg.per_second",
            )
    return unavailable(
        "no gpu__time_duration and no elapsed cycles with their clock",
        "ncu --metrics gpu__time_duration.sum",
    )


def clock_hz(raw: Raw, unit: str) -> Resolved:
    """Average clock of a unit during the launch (``U__cycles_elapsed.avg.per_second``)."""
    name = f"{unit}__cycles_elapsed.avg.per_second"
    # SM sub-partitions and the GPC run on the SM clock (ncu's "SM Frequency" is gpc__…per_second):
    # a CSV that collected only one of them still gives the SM clock
    for u in (unit, *SAME_CLOCK.get(unit, ())):
        v = num(raw, f"{u}__cycles_elapsed.avg.per_second")
        if v is not None:
            return Resolved(v, f"{u}__cycles_elapsed.avg.per_second" + ("" if u == unit else " (same clock domain)"))
    legacy = {"dram": "dram__frequency", "sm": "gpc__frequency", "smsp": "gpc__frequency"}
    if unit in legacy:
        v = num(raw, legacy[unit])
        if v is not None:
            return Resolved(v, f"{legacy[unit]} (legacy)")
    return unavailable(f"no {name}")


#: units whose cycles are counted on the same clock
SAME_CLOCK = {"sm": ("smsp", "gpc"), "smsp": ("sm", "gpc"), "gpc": ("sm", "smsp")}


def elapsed_cycles(raw: Raw, unit: str, duration: Resolved) -> Resolved:
    """Elapsed cycles of one instance of ``unit``, needed to turn per-cycle rates into counts."""
    name = f"{unit}__cycles_elapsed.avg"
    v = num(raw, name)
    if v is not None:
        return Resolved(v, name)
    clk = clock_hz(raw, unit)
    if clk.ok and duration.ok:
        return Resolved(clk.value * duration.value, f"{clk.source} × duration")
    return unavailable(f"no {name} and no clock × duration")


def count(
    raw: Raw, bases: Sequence[str], duration: Resolved, scale: float = 1.0, rates: bool = True
) -> Resolved:
    """Total of a counter over the launch from the first form present, tried base by base.

    Forms, in order of preference: ``B.sum`` (a count), ``B.sum.per_cycle_elapsed`` × the
    unit's elapsed cycles, ``B.sum.per_second`` × duration. ``scale`` multiplies the result
    (bytes per sector, bytes per active cycle...). Counts rebuilt from rates are rounded to
    whole events: the rates are stored as floats and give e.g. 874643455.9999999.
    """
    tag = f" × {scale:g}" if scale != 1.0 else ""
    for base in bases:
        v = num(raw, f"{base}.sum")
        if v is not None:
            return Resolved(v * scale, f"{base}.sum{tag}")
    if not rates:
        return unavailable(f"no {', '.join(b + '.sum' for b in bases)} count")
    for base in bases:
        rate = num(raw, f"{base}.sum.per_cycle_elapsed")
        if rate is not None:
            cyc = elapsed_cycles(raw, unit_of(base), duration)
            if cyc.ok:
                return Resolved(
                    round(rate * cyc.value) * scale,
                    f"{base}.sum.per_cycle_elapsed × {cyc.source}{tag}",
                )
    for base in bases:
        rate = num(raw, f"{base}.sum.per_second")
        if rate is not None and duration.ok:
            return Resolved(round(rate * duration.value) * scale, f"{base}.sum.per_second × duration{tag}")
    return unavailable(f"none of {', '.join(b + '.sum' for b in bases)} (nor their rates)")


def combine(parts: Sequence[tuple[float, Resolved]], label: str) -> Resolved:
    """Weighted sum of resolved parts; unavailable if any part is."""
    missing = [r.source for _, r in parts if not r.ok]
    if missing:
        return unavailable(f"{label} needs every term; {missing[0].removeprefix(UNAVAILABLE + ': ')}")
    total = sum(w * r.value for w, r in parts)
    forms = sorted({_form(r.source) for _, r in parts})
    return Resolved(total, f"{label} [{'; '.join(forms)}]")


def _form(source: str) -> str:
    """Collapse a per-term source to its form, so three terms read as one description."""
    return re.sub(r"_op_[a-z]+_pred_on", "_op_*_pred_on", source)
