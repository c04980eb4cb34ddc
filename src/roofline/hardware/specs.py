"""A vetted table of datasheet peaks, used only where a report has no peak counters of its own.

Values are NVIDIA's published dense (non-sparse) peaks at the boost clock. They are higher than
the peaks ncu measures at its default base-locked clock (``--clock-control base``), so every
value filled from here says so in its source column. The hierarchy issue extends this table
to the full list of GPUs; keep every entry's source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from roofline.metrics.tensor import is_fp16_path

from roofline.schema import source_column

TFLOP = 1e12
TB = 1e12


@dataclass(frozen=True)
class GpuSpec:
    name: str
    pattern: str  # regex matched (case-insensitive) against device names
    boost_clock_hz: float
    fp64: float
    fp32: float
    fp16: float  # CUDA-core half precision
    tensor_fp16: float  # dense FP16/BF16 tensor, FP32 accumulate
    dram_bytes_per_s: float
    source: str
    extra: dict[str, float] = field(default_factory=dict)


SPECS: tuple[GpuSpec, ...] = (
    GpuSpec("V100 SXM2", r"v100.*sxm2", 1530e6, 7.8 * TFLOP, 15.7 * TFLOP, 31.4 * TFLOP,
            125 * TFLOP, 0.900 * TB, "NVIDIA Tesla V100 datasheet (SXM2)"),
    GpuSpec("V100 PCIe", r"v100.*pcie", 1380e6, 7.0 * TFLOP, 14.0 * TFLOP, 28.0 * TFLOP,
            112 * TFLOP, 0.900 * TB, "NVIDIA Tesla V100 datasheet (PCIe)"),
    GpuSpec("T4", r"\bt4\b", 1590e6, 0.254 * TFLOP, 8.1 * TFLOP, 16.2 * TFLOP,
            65 * TFLOP, 0.320 * TB, "NVIDIA T4 datasheet"),
    GpuSpec("A100 SXM4 80GB", r"a100.*sxm.*80|a100.*80gb.*sxm", 1410e6, 9.7 * TFLOP, 19.5 * TFLOP,
            78 * TFLOP, 312 * TFLOP, 2.039 * TB, "NVIDIA A100 datasheet (80GB SXM)"),
    GpuSpec("A100 PCIe 80GB", r"a100.*80gb.*pcie|a100.*pcie.*80", 1410e6, 9.7 * TFLOP, 19.5 * TFLOP,
            78 * TFLOP, 312 * TFLOP, 1.935 * TB, "NVIDIA A100 datasheet (80GB PCIe)"),
    GpuSpec("A100 40GB", r"a100", 1410e6, 9.7 * TFLOP, 19.5 * TFLOP,
            78 * TFLOP, 312 * TFLOP, 1.555 * TB, "NVIDIA A100 datasheet (40GB, SXM4 and PCIe)"),
    GpuSpec("GH200", r"gh200", 1980e6, 34 * TFLOP, 67 * TFLOP, 134 * TFLOP,
            989.4 * TFLOP, 4.0 * TB, "NVIDIA GH200 datasheet (96GB HBM3)"),
    GpuSpec("H200", r"h200", 1980e6, 34 * TFLOP, 67 * TFLOP, 134 * TFLOP,
            989.4 * TFLOP, 4.8 * TB, "NVIDIA H200 datasheet (SXM)"),
    GpuSpec("H100 PCIe", r"h100.*pcie", 1755e6, 26 * TFLOP, 51 * TFLOP, 102 * TFLOP,
            756 * TFLOP, 2.0 * TB, "NVIDIA H100 datasheet (PCIe)"),
    GpuSpec("H100 SXM", r"h100", 1980e6, 34 * TFLOP, 67 * TFLOP, 134 * TFLOP,
            989.4 * TFLOP, 3.35 * TB, "NVIDIA H100 datasheet (SXM5)"),
)


def lookup(device_name: str | None) -> GpuSpec | None:
    """The spec whose pattern matches a device name; the first match wins (specific first)."""
    if not device_name or not isinstance(device_name, str):
        return None
    for spec in SPECS:
        if re.search(spec.pattern, device_name, re.IGNORECASE):
            return spec
    return None


_FIELDS = {
    "peak_flop_per_s_fp64": "fp64",
    "peak_flop_per_s_fp32": "fp32",
    "peak_flop_per_s_fp16": "fp16",
    "peak_flop_per_s_tensor": "tensor_fp16",
    "peak_dram_bytes_per_s": "dram_bytes_per_s",
}


def fill_spec_peaks(frame: pd.DataFrame) -> pd.DataFrame:
    """Fill peaks the counters did not give from the spec table, labelled as such."""
    if frame.empty or "device_name" not in frame:
        return frame
    out = frame
    for device in frame["device_name"].dropna().unique():
        spec = lookup(str(device))
        if spec is None:
            continue
        if out is frame:
            out = frame.copy()
        on_device = out["device_name"] == device
        for col, attr in _FIELDS.items():
            mask = on_device & out[col].isna()
            if col == "peak_flop_per_s_tensor" and "tensor_path" in out:
                # the table holds the dense FP16/BF16 tensor peak only: never set int8/tf32/fp64 work against it
                mask &= out["tensor_path"].map(lambda p: is_fp16_path(None if pd.isna(p) else str(p))).astype(bool)
            if not mask.any():
                continue
            src = source_column(col)
            value = pd.Series(getattr(spec, attr), index=out.index)[mask]
            note = f"spec: {spec.source}, dense, boost clock {spec.boost_clock_hz / 1e6:.0f} MHz"
            if col != "peak_dram_bytes_per_s" and "sm_clock_hz" in out:
                # compute peaks scale with the SM clock; rescale to the clock the kernel ran at
                clk = out.loc[mask, "sm_clock_hz"]
                known = clk.notna() & (clk > 0)
                value = value.where(~known, value * clk / spec.boost_clock_hz)
                note_s = pd.Series(note + " (no profiled clock known)", index=value.index)
                note_s[known] = note + ", scaled to the profiled SM clock " + (clk[known] / 1e6).round(0).astype(int).astype(str) + " MHz"
            else:
                note_s = pd.Series(note + " (memory clock as specified)", index=value.index)
            out.loc[mask, src] = note_s + "; counters gave " + out.loc[mask, src].fillna("nothing").astype(str)
            out.loc[mask, col] = value
    return out
