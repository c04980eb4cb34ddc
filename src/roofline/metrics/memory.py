"""Bytes moved at DRAM/HBM, L2 and L1, and each level's peak bandwidth at the profiled clock.

Each level has an ordered list of definitions (``shared/reference/formulas.md`` §1, §4). The
first definition whose bytes the report holds wins, and its own peak counter gives the
bandwidth roof, so bytes and roof always measure the same traffic. The chosen definition is
named in the source column, e.g. ``L2[lts2xbar]`` (current ncu: L2 → crossbar → SM traffic) or
``L2[lts__t_bytes]`` (legacy NERSC: all L2 tag traffic); they can differ a lot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from roofline.metrics.resolve import (
    Raw,
    Resolved,
    combine,
    count,
    num,
    unavailable,
)

#: bytes per active cycle of the L2 → crossbar interface (per slice) and the L1 writeback path
L2_BYTES_PER_XBAR_CYCLE = 32.0
L1_BYTES_PER_WRITEBACK_CYCLE = 128.0
SECTOR_BYTES = 32.0

#: Speed Of Light "DRAM Throughput" (% of peak), all a --page details export keeps of DRAM's peak
DRAM_THROUGHPUT = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
#: integrated GPUs without a DRAM roof in Nsight Compute (Xavier, Orin, GB10b/Thor, GB10)
INTEGRATED_CC = {(7, 2), (8, 7), (11, 0), (12, 1)}


@dataclass(frozen=True)
class Definition:
    level: str
    name: str
    bytes_of: Callable[[Raw, Resolved], Resolved]
    #: (peak_sustained metric, bytes per unit of it, clock unit)
    peaks: tuple[tuple[str, float, str], ...]


def unit_clock(raw: Raw, unit: str, duration: Resolved) -> Resolved:
    """Clock of ``unit`` during the launch: its ``.per_second`` rate, else elapsed cycles / duration."""
    name = f"{unit}__cycles_elapsed.avg.per_second"
    v = num(raw, name)
    if v is not None:
        return Resolved(v, name)
    if unit == "dram":
        v = num(raw, "dram__frequency")
        if v is not None:
            return Resolved(v, "dram__frequency (legacy)")
    cyc = num(raw, f"{unit}__cycles_elapsed.avg")
    if cyc is not None and duration.ok and duration.value > 0:
        return Resolved(cyc / duration.value, f"{unit}__cycles_elapsed.avg / duration")
    return unavailable(f"no {name}")


def _sum_of(*bases: str, scale: float = 1.0, rates: bool = True) -> Callable[[Raw, Resolved], Resolved]:
    def bytes_of(raw: Raw, duration: Resolved) -> Resolved:
        if len(bases) == 1:
            return count(raw, [bases[0]], duration, scale, rates)
        parts = [(1.0, count(raw, [b], duration, scale, rates)) for b in bases]
        return combine(parts, " + ".join(bases))

    return bytes_of


def _first(*fns: Callable[[Raw, Resolved], Resolved]) -> Callable[[Raw, Resolved], Resolved]:
    def bytes_of(raw: Raw, duration: Resolved) -> Resolved:
        last = unavailable("no counters")
        for fn in fns:
            last = fn(raw, duration)
            if last.ok:
                return last
        return last

    return bytes_of


DRAM_DEFS = (
    Definition(
        "dram",
        "dram__bytes",
        _first(  # exact counts of any form before counts rebuilt from rates
            _sum_of("dram__bytes", rates=False),
            _sum_of("dram__bytes_read", "dram__bytes_write", rates=False),
            _sum_of("dram__sectors_read", "dram__sectors_write", scale=SECTOR_BYTES, rates=False),
            _sum_of("dram__bytes"),
            _sum_of("dram__bytes_read", "dram__bytes_write"),
        ),
        (("dram__bytes.sum.peak_sustained", 1.0, "dram"),),
    ),
)

L2_DEFS = (
    Definition(
        "l2",
        "lts2xbar",
        _first(
            _sum_of("lts__lts2xbar_cycles_active", scale=L2_BYTES_PER_XBAR_CYCLE),
            _sum_of("derived__lts__lts2xbar_bytes"),
        ),
        (
            ("lts__lts2xbar_cycles_active.sum.peak_sustained", L2_BYTES_PER_XBAR_CYCLE, "lts"),
            ("derived__lts__lts2xbar_bytes.sum.peak_sustained", 1.0, "lts"),
        ),
    ),
    Definition(
        "l2",
        "lts__t_bytes",
        _first(_sum_of("lts__t_bytes"), _sum_of("lts__t_sectors", scale=SECTOR_BYTES)),
        (
            ("lts__t_bytes.sum.peak_sustained", 1.0, "lts"),
            ("lts__t_sectors.sum.peak_sustained", SECTOR_BYTES, "lts"),
        ),
    ),
    Definition(
        # ncu 2022.x-2023.x hierarchical roofline sections: L2 -> L1 read traffic, roof from the
        # same counter's .peak_sustained at the L2 clock (SpeedOfLight_HierarchicalSingleRooflineChart)
        "l2",
        "xbar2l1tex_read",
        _sum_of("l1tex__m_xbar2l1tex_read_bytes"),
        (("l1tex__m_xbar2l1tex_read_bytes.sum.peak_sustained", 1.0, "lts"),),
    ),
    Definition(
        "l2",
        "l1tex<->xbar",
        _sum_of("l1tex__m_xbar2l1tex_read_bytes", "l1tex__m_l1tex2xbar_write_bytes"),
        (),
    ),
)


def _l1_defs(cc: tuple[int, int] | None) -> tuple[Definition, ...]:
    # The L1 writeback metric that NVIDIA's hierarchical roofline uses depends on the architecture:
    # sm_90+ adds distributed shared memory (lgds), 7.5-8.9 count global+local (lg), older all.
    if cc is None:
        order = ("_mem_lgds", "_mem_lg", "")
    elif cc >= (9, 0):
        order = ("_mem_lgds", "_mem_lg")
    elif cc >= (7, 5):
        order = ("_mem_lg",)
    else:
        order = ("",)
    defs = []
    for suffix in order:
        base = f"l1tex__lsu_writeback_active{suffix}"
        derived = f"derived__l1tex__lsu_writeback_bytes{suffix}"
        defs.append(
            Definition(
                "l1",
                f"lsu_writeback{suffix}",
                _first(_sum_of(base, scale=L1_BYTES_PER_WRITEBACK_CYCLE), _sum_of(derived)),
                (
                    (f"{base}.sum.peak_sustained", L1_BYTES_PER_WRITEBACK_CYCLE, "l1tex"),
                    (f"{derived}.sum.peak_sustained", 1.0, "l1tex"),
                ),
            )
        )
    defs.append(
        Definition(
            "l1",
            "l1tex__t_bytes",
            _sum_of("l1tex__t_bytes"),
            (("l1tex__t_bytes.sum.peak_sustained", 1.0, "l1tex"),),
        )
    )
    return tuple(defs)


HINTS = {
    "dram": "ncu --set full (or --metrics dram__bytes.sum)",
    "l2": "ncu --set full, or --section SpeedOfLight_HierarchicalSingleRooflineChart (ncu >= 2023.1)",
    "l1": "ncu --set full with ncu >= 2025.1, or --section SpeedOfLight_HierarchicalSingleRooflineChart",
}


def resolve_level(
    raw: Raw, level: str, cc: tuple[int, int] | None, duration: Resolved
) -> tuple[Resolved, Resolved]:
    """(bytes, peak bytes/s) at one memory level, measuring the same traffic."""
    if level == "dram" and cc in INTEGRATED_CC:
        reason = f"compute capability {cc[0]}.{cc[1]} is an integrated GPU: no DRAM counters or roof"
        return unavailable(reason), unavailable(reason)
    defs = {"dram": DRAM_DEFS, "l2": L2_DEFS, "l1": _l1_defs(cc)}[level]
    for d in defs:
        b = d.bytes_of(raw, duration)
        if not b.ok:
            continue
        label = f"{level.upper()}[{d.name}]"
        bytes_res = Resolved(b.value, f"{label} {b.source}")
        return bytes_res, _peak(raw, d, b, duration, label)
    names = ", ".join(d.name for d in defs)
    miss = unavailable(f"no {level.upper()} byte counters (looked for {names})", HINTS[level])
    return miss, unavailable(f"no {level.upper()} byte counters")


def _peak(raw: Raw, d: Definition, bytes_res: Resolved, duration: Resolved, label: str) -> Resolved:
    for metric, scale, unit in d.peaks:
        per_cycle = num(raw, metric)
        if not per_cycle:
            continue
        clk = unit_clock(raw, unit, duration)
        if clk.ok:
            tag = f"{scale:g} × " if scale != 1.0 else ""
            return Resolved(
                per_cycle * scale * clk.value,
                f"counters: {label} {tag}{metric} × {clk.source} ({clk.value / 1e9:.3f} GHz, profiled clock)",
            )
    # Older full sets store no .peak_sustained but do store how far the same counter got towards
    # its peak: peak = achieved rate / (pct / 100), the same roof by construction.
    # The .avg and .sum forms of a counter have the same % of peak (sum = n × avg, peak likewise);
    # full sets of ncu 2021-2022 keep only the .avg one for lts__t_sectors (V100, A40, A6000 reports).
    for metric, _, _ in d.peaks:
        for pct_name in (metric.replace(".peak_sustained", ".pct_of_peak_sustained_elapsed"),
                         metric.replace(".sum.peak_sustained", ".avg.pct_of_peak_sustained_elapsed")):
            pct = num(raw, pct_name)
            if pct and pct > 0 and bytes_res.ok and duration.ok and duration.value > 0:
                rate = bytes_res.value / duration.value
                return Resolved(
                    rate / (pct / 100.0),
                    f"counters, derived: {label} achieved bytes/s ÷ ({pct_name} / 100) (profiled clock)",
                )
    # a details-page export keeps only the Speed Of Light "DRAM Throughput" %: ncu's highest DRAM sub-metric's %
    # of its peak, at least the bytes' own %, so the roof it gives is at most the true one (said in the source).
    # Used only where the profile names no device (such an export): a named device's published figure is exact,
    # and the table cannot tell an unnamed one's (a CC 7.5 GPU of 40 SMs: a T4, 320 GB/s, or an RTX 2070 SUPER, 448)
    named = raw.get("device__attribute_display_name")
    pct = num(raw, DRAM_THROUGHPUT) if d.level == "dram" and not named else None
    if pct and pct > 0 and bytes_res.ok and duration.ok and duration.value > 0:
        return Resolved(bytes_res.value / duration.value / (pct / 100.0),
                        f"counters, derived: {label} achieved bytes/s ÷ ({DRAM_THROUGHPUT} / 100) (profiled clock; "
                        "ncu's DRAM throughput is its busiest DRAM sub-metric's %, so this roof is at most the true one)")
    return unavailable(f"no .peak_sustained counter for the {label} definition")


__all__ = ["INTEGRATED_CC", "resolve_level", "unit_clock"]
