"""Roofs of rocprof-compute workloads: the measured ``roofline.csv`` and the architecture model.

``roofline.csv`` is rocprof-compute's empirical microbenchmark (one row per device: HBM, L2, L1 and
LDS bandwidth in GB/s, VALU and MFMA peaks in GFLOP/s or GOP/s, each with low/high); every roof
from it is labelled ``measured`` with its spread. What it lacks (or everything, without one) comes
from ``amd_arch``'s model of the workload's ``sysinfo.csv``. ``peaks_from`` turns either into a
:class:`~roofline.hardware.peaks.Peaks` for ``--peaks``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from roofline.errors import FormatMismatchError, InputNotFoundError
from roofline.ingest.amd import arch as amd_arch
from roofline.ingest.amd.arch import SYSINFO, read_csv, read_sysinfo
from roofline.ingest.amd.arch import number as _number
from roofline.ingest.amd.workload import is_workload
from roofline.schema import UNAVAILABLE

ROOFLINE = "roofline.csv"

#: roofline.csv column -> canonical peak column (bandwidth in GB/s, compute in GFLOP/s or GOP/s)
ROOFLINE_COLUMNS: dict[str, str] = {
    "HBMBw": "peak_dram_bytes_per_s", "L2Bw": "peak_l2_bytes_per_s", "L1Bw": "peak_l1_bytes_per_s",
    "LDSBw": "peak_lds_bytes_per_s", "FP64Flops": "peak_flop_per_s_fp64", "FP32Flops": "peak_flop_per_s_fp32",
    "FP16Flops": "peak_flop_per_s_fp16",
    "MFMAF16Flops": "peak_flop_per_s_tensor:mfma_fp16", "MFMABF16Flops": "peak_flop_per_s_tensor:mfma_bf16",
    "MFMAF32Flops": "peak_flop_per_s_tensor:mfma_fp32", "MFMAF64Flops": "peak_flop_per_s_tensor:mfma_fp64",
    "MFMAF8Flops": "peak_flop_per_s_tensor:mfma_fp8", "MFMAI8Ops": "peak_flop_per_s_tensor:mfma_int8",
    "MFMAF4Flops": "peak_flop_per_s_tensor:mfma_fp6_fp4",
}


def measured_roofs(path: str | Path, device: int = 0) -> dict[str, tuple[float, float | None, float | None, str]]:
    """``roofline.csv`` as {canonical peak column: (value, low, high, its column)} in bytes/s and FLOP/s (OP/s).

    rocprof-compute's microbenchmark writes one row per device; the workload does not say which row
    its GPU_ID maps to, so ``device`` picks it (rocprof-compute's own default is 0).
    """
    path = Path(path)
    frame = read_csv(path)
    if "device" not in frame.columns:
        raise FormatMismatchError(path, "has no 'device' column: not a rocprof-compute roofline.csv")
    rows = frame[pd.to_numeric(frame["device"], errors="coerce") == device]
    if rows.empty:
        raise FormatMismatchError(path, f"has no row for device {device} (devices: {frame['device'].tolist()})")
    row = rows.iloc[0]
    lower = {str(c).lower(): c for c in frame.columns}
    out = {}
    for name, col in ROOFLINE_COLUMNS.items():
        if name not in frame.columns:
            continue
        value = _number(row[name])
        if value is None:  # (number() is positive or None)
            continue
        # (its writer spells some spread columns differently: hbmBwHigh, MFMAFI8OpsLow)
        lo = next((lower[k] for k in (f"{name}low".lower(), f"{name}low".lower().replace("mfmai8", "mfmafi8"))
                   if k in lower), None)
        hi = next((lower[k] for k in (f"{name}high".lower(), f"{name}high".lower().replace("mfmai8", "mfmafi8"))
                   if k in lower), None)
        low, high = (_number(row[c]) if c is not None else None for c in (lo, hi))
        out[col] = (value * 1e9, low * 1e9 if low else None, high * 1e9 if high else None, name)
    return out


def workload_peaks(folder: Path, info: dict[str, Any], device: int = 0
                   ) -> tuple[dict[str, tuple[float, str]], dict[str, Any]]:
    """Every roof of the workload with its source: measured (roofline.csv) first, the arch model filling the rest."""
    model = amd_arch.model_peaks(info)
    peaks: dict[str, tuple[float, str]] = dict(model)
    meta: dict[str, Any] = {"model": amd_arch.describe(info)}
    rpath = folder / ROOFLINE
    if rpath.is_file():
        for col, (value, lo, hi, name) in measured_roofs(rpath, device).items():
            spread = f", low {lo / 1e9:g} – high {hi / 1e9:g}" if lo and hi else ""
            unit = "GB/s" if "bytes" in col else ("GOP/s" if name.endswith("Ops") else "GFLOP/s")
            peaks[col] = (value, f"measured: roofline.csv device {device} {name} {value / 1e9:g} {unit}{spread} "
                                 "(rocprof-compute empirical microbenchmark)")
        meta["measured"] = f"{rpath.name} device {device}"
    return peaks, meta


def tensor_peak(cols: dict[str, Any], peaks: dict[str, tuple[float, str]], n: int) -> None:
    """Each row's tensor roof is its dominant MFMA type's; rows without MFMA work get the FP16 one
    (the roof ncu draws by default for kernels without tensor work)."""
    values, sources = np.full(n, np.nan), []
    for j, path in enumerate(cols["tensor_path"]):
        key = f"peak_flop_per_s_tensor:{path or 'mfma_fp16'}"
        if key in peaks:
            values[j], src = peaks[key]
        else:
            src = f"{UNAVAILABLE}: no measured or modelled roof for {path or 'mfma_fp16'} on this GPU"
        sources.append(src)
    cols["peak_flop_per_s_tensor"], cols["peak_flop_per_s_tensor_source"] = values, sources


#: reader tensor paths -> the Peaks compute keys that analysis maps them to (hardware.specs.tensor_key)
_PEAKS_KEYS = {"peak_flop_per_s_fp64": "fp64", "peak_flop_per_s_fp32": "fp32", "peak_flop_per_s_fp16": "fp16",
               "peak_flop_per_s_tensor:mfma_fp16": "tensor_fp16", "peak_flop_per_s_tensor:mfma_bf16": "tensor_bf16",
               "peak_flop_per_s_tensor:mfma_fp32": "tensor_fp32", "peak_flop_per_s_tensor:mfma_fp64": "tensor_fp64",
               "peak_flop_per_s_tensor:mfma_fp8": "tensor_fp8", "peak_flop_per_s_tensor:mfma_int8": "tensor_int8",
               "peak_flop_per_s_tensor:mfma_fp6_fp4": "tensor_fp4",
               "peak_dram_bytes_per_s": "dram", "peak_l2_bytes_per_s": "l2", "peak_l1_bytes_per_s": "l1",
               "peak_lds_bytes_per_s": "lds"}


def is_peaks_file(value: str | Path) -> bool:
    """A ``roofline.csv`` or ``sysinfo.csv`` (or a workload folder) given to ``--peaks``."""
    p = Path(value)
    return p.name in (ROOFLINE, SYSINFO) or is_workload(p)


def peaks_from(value: str | Path, device: int = 0) -> Any:
    """``--peaks`` from rocprof-compute files: a ``roofline.csv`` gives its measured roofs (labelled
    ``measured``), a ``sysinfo.csv`` the architecture model (labelled ``spec``: computed from the
    whitepapers' per-CU rates); a workload folder gives its roofline.csv if it has one, else its model."""
    from roofline.hardware.peaks import Peak, Peaks

    p = Path(value)
    if p.is_dir():
        p = p / ROOFLINE if (p / ROOFLINE).is_file() else p / SYSINFO
    if not p.is_file():
        raise InputNotFoundError(p)
    compute: dict[str, Any] = {}
    bandwidth: dict[str, Any] = {}
    if p.name == ROOFLINE:
        device_name = f"measured roofs ({p}, device {device})"
        for col, (v, lo, hi, name) in measured_roofs(p, device).items():
            key = _PEAKS_KEYS.get(col)
            if key:
                spread = f", low {lo / 1e9:g} – high {hi / 1e9:g}" if lo and hi else ""
                pk = Peak(v, "measured", f"roofline.csv device {device} {name}{spread}", "measured")
                (bandwidth if key in ("dram", "l2", "l1", "lds") else compute)[key] = pk
    else:
        info = read_sysinfo(p.parent)
        device_name = f"{info.get('gpu_model', '?')} model ({p})"
        clk = (_number(info.get("max_sclk")) or 0) * 1e6 or None
        for col, (v, src) in amd_arch.model_peaks(info).items():
            key = _PEAKS_KEYS.get(col)
            if key:
                basis = "as published" if key == "dram" else "boost"
                pk = Peak(v, "spec", "architecture model: " + src.removeprefix("model: "), basis,
                          None if key == "dram" else clk)
                (bandwidth if key in ("dram", "l2", "l1", "lds") else compute)[key] = pk
    return Peaks(device_name, compute, bandwidth)
