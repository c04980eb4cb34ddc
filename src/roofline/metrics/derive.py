"""From one launch's raw metrics to the canonical quantity columns of the kernels frame.

Also declares which raw metrics matter (:func:`is_relevant`), so the readers fetch only those
from a report instead of every one of its 300-2100 metrics per kernel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from roofline.metrics import flops, memory, tensor
from roofline.metrics.resolve import Raw, Resolved, clock_hz, duration_s, num
from roofline.schema import source_column

_OPS = [f"{p}{o}" for p in "dfh" for o in ("add", "mul", "fma")]
_COUNTER_BASES = (
    [f"{u}__sass_thread_inst_executed_op_{op}_pred_on" for u in ("sm", "smsp") for op in _OPS]
    + [
        "sm__inst_executed_pipe_tensor",
        "smsp__inst_executed_pipe_tensor",
        "dram__bytes",
        "dram__bytes_read",
        "dram__bytes_write",
        "dram__sectors_read",
        "dram__sectors_write",
        "lts__lts2xbar_cycles_active",
        "derived__lts__lts2xbar_bytes",
        "lts__t_bytes",
        "lts__t_sectors",
        "l1tex__t_bytes",
        "l1tex__t_sectors",
        "l1tex__m_xbar2l1tex_read_bytes",
        "l1tex__m_l1tex2xbar_write_bytes",
        "l1tex__lsu_writeback_active",
        "l1tex__lsu_writeback_active_mem_lg",
        "l1tex__lsu_writeback_active_mem_lgds",
        "derived__l1tex__lsu_writeback_bytes",
        "derived__l1tex__lsu_writeback_bytes_mem_lg",
        "derived__l1tex__lsu_writeback_bytes_mem_lgds",
    ]
)
_COUNTER_SUFFIXES = (
    ".sum",
    ".sum.per_cycle_elapsed",
    ".sum.per_second",
    ".sum.peak_sustained",
    ".sum.pct_of_peak_sustained_elapsed",
    ".avg.pct_of_peak_sustained_elapsed",  # older full sets keep only this form for lts__t_sectors (issue 17)
)
_CLOCK_UNITS = ("sm", "smsp", "dram", "lts", "l1tex", "gpc")

RELEVANT_EXACT: frozenset[str] = frozenset(
    [b + s for b in _COUNTER_BASES for s in _COUNTER_SUFFIXES]
    + [f"{u}__cycles_elapsed.avg" for u in _CLOCK_UNITS]
    + [f"{u}__cycles_elapsed.max" for u in _CLOCK_UNITS]
    + [f"{u}__cycles_elapsed.avg.per_second" for u in _CLOCK_UNITS]
    + [
        "gpu__time_duration.sum",
        "gpu__time_duration",
        "dram__frequency",
        "gpc__frequency",
        "derived__smsp__inst_executed_pipe_tensor_x512",
        "device__attribute_display_name",
        "device__attribute_compute_capability_major",
        "device__attribute_compute_capability_minor",
        "device__attribute_max_gpu_frequency_khz",
        "device__attribute_clock_rate",
        "device__attribute_multiprocessor_count",
        "launch__grid_dim_x",
        "launch__grid_dim_y",
        "launch__grid_dim_z",
        "launch__block_dim_x",
        "launch__block_dim_y",
        "launch__block_dim_z",
        "profiler__replayer_passes",
    ]
)


def is_relevant(name: str) -> bool:
    if name in RELEVANT_EXACT:
        return True
    return name.startswith(tensor.OPS_PREFIX) and name.endswith(_COUNTER_SUFFIXES)


def compute_capability(raw: Raw) -> tuple[int, int] | None:
    major = num(raw, "device__attribute_compute_capability_major")
    minor = num(raw, "device__attribute_compute_capability_minor")
    if major is None or minor is None or math.isnan(major) or math.isnan(minor):
        return None
    return int(major), int(minor)


def _put(row: dict[str, Any], name: str, res: Resolved) -> None:
    row[name] = res.value
    row[source_column(name)] = res.source


def derive(
    raw: Raw,
    opcode_counts: Mapping[str, float] | None = None,
    cc: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Canonical quantities of one launch: duration, FLOPs, bytes, clocks and counter peaks."""
    cc = cc or compute_capability(raw)
    row: dict[str, Any] = {}
    dur = duration_s(raw)
    _put(row, "duration_s", dur)

    for p in ("fp64", "fp32", "fp16"):
        _put(row, f"flop_{p}", flops.none_executed(flops.resolve_flops(raw, p, dur), p, opcode_counts))
    tflops, path = tensor.resolve_tensor(
        raw, opcode_counts, cc[0] if cc else None, cc[1] if cc else None, dur
    )
    _put(row, "flop_tensor", tflops)
    row["tensor_path"] = path

    for level, col in (("dram", "dram"), ("l2", "l2"), ("l1", "l1")):
        b, peak = memory.resolve_level(raw, level, cc, dur)
        _put(row, f"{col}_bytes", b)
        _put(row, f"peak_{col}_bytes_per_s", peak)

    sm_clock = clock_hz(raw, "sm")
    row["sm_clock_hz"] = sm_clock.value
    row["dram_clock_hz"] = memory.unit_clock(raw, "dram", dur).value
    row["l2_clock_hz"] = memory.unit_clock(raw, "lts", dur).value
    row["l1_clock_hz"] = memory.unit_clock(raw, "l1tex", dur).value
    boost = num(raw, "device__attribute_max_gpu_frequency_khz")
    if boost is None:
        boost = num(raw, "device__attribute_clock_rate")
    row["sm_boost_clock_hz"] = boost * 1e3 if boost is not None else math.nan

    for p in ("fp64", "fp32", "fp16"):
        _put(row, f"peak_flop_per_s_{p}", flops.peak_flops(raw, p, sm_clock))
    _put(row, "peak_flop_per_s_tensor", tensor.peak_tensor(raw, path, cc == (7, 0), sm_clock))
    return row


def nan_inputs(raw: Raw) -> int:
    """How many numeric raw metrics are NaN: a replay that did not complete leaves many."""
    return sum(1 for v in raw.values() if isinstance(v, float) and math.isnan(v))


__all__ = ["compute_capability", "derive", "is_relevant", "nan_inputs"]
