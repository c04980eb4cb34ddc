"""Architecture model of AMD Instinct GPUs from a rocprof-compute ``sysinfo.csv``: CUs × per-CU rate × clock.

Also the two readers every AMD module shares: a profiler CSV (typed errors) and ``sysinfo.csv``.

Used where a workload has no measured ``roofline.csv`` roof (or for the roofs it lacks). The per-CU
per-clock FLOP rates are the architecture model's (``hardware/archs.toml``, each with its source),
except rocprof-compute's own FP16 VALU convention; cache and LDS rates are the ones rocprof-compute's
speed-of-light panel uses. Every figure is labelled "model" with its source and is computed from
the workload's own CU count and clock.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from roofline.errors import CorruptReportError
from roofline.ingest.common import check_exists

SYSINFO = "sysinfo.csv"

#: the reader's tensor paths and vector precisions → keys of the architecture model (hardware/archs.toml)
_MODEL_KEYS = {"fp64": "fp64", "fp32": "fp32", "mfma_fp64": "tensor_fp64", "mfma_fp32": "tensor_fp32",
               "mfma_fp16": "tensor_fp16", "mfma_bf16": "tensor_bf16", "mfma_fp8": "tensor_fp8",
               "mfma_fp6_fp4": "tensor_fp4", "mfma_int8": "tensor_int8"}
_GFX = {"CDNA1": "gfx908", "CDNA2": "gfx90a", "CDNA3": "gfx942", "CDNA4": "gfx950"}
#: rocprof-compute's VALU FP16 peak counts packed FP16 once (64 lanes × 2 FLOP per clock per CU), the
#: convention of its FP16 FLOP counters; the architecture model's vector fp16 is the chip's packed rate
VALU_FP16_PER_CLK = 128


def _family_rates(fam: str) -> dict[str, tuple[float, str]]:
    """{key: (per-CU per-clock FLOPs (OPs for int8), source)} of one CDNA family."""
    from roofline.hardware.archs import arch_for

    arch = arch_for(_GFX[fam])
    dense = arch.dense if arch is not None else {}
    out = {k: (dense[m].per_clk, dense[m].source) for k, m in _MODEL_KEYS.items() if m in dense}
    out["fp16"] = (VALU_FP16_PER_CLK, FP16_VALU_NOTE)
    return out


#: bytes per clock: vL1D per CU and L2 per channel, as rocprof-compute's speed-of-light panel takes them
L1_BYTES_PER_CLK_PER_CU = {"CDNA1": 64, "CDNA2": 64, "CDNA3": 128, "CDNA4": 128}
L2_BYTES_PER_CLK_PER_CHANNEL = 128
HBM_BYTES_PER_CLK_PER_CHANNEL = 32  # = hbm_bw where sysinfo has both: 1600 MHz × 32 B × 32 ch = 1638.4 GB/s
FP16_VALU_NOTE = "rocprof-compute's VALU peak (64 lanes × 2 FLOP per clock per CU; packed FP16 counted once)"
#: per-CU per-clock rates by family, from the architecture model (one table for every reader)
RATES: dict[str, dict[str, float]] = {fam: {k: r for k, (r, _) in _family_rates(fam).items()} for fam in _GFX}

_PATH_COLUMN = {"fp64": "peak_flop_per_s_fp64", "fp32": "peak_flop_per_s_fp32", "fp16": "peak_flop_per_s_fp16"}


def family(arch: str) -> str | None:
    a = (arch or "").lower().split(":")[0]
    if a.startswith("gfx908"):
        return "CDNA1"
    if a.startswith("gfx90a"):
        return "CDNA2"
    if a in ("gfx940", "gfx941", "gfx942"):
        return "CDNA3"
    if a.startswith("gfx950"):
        return "CDNA4"
    return None


def number(v: Any) -> float | None:
    """A positive finite number from a sysinfo/CSV field, else None (a missing or damaged figure)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) and f > 0 else None


def describe(info: dict[str, Any]) -> str:
    fam = family(str(info.get("gpu_arch", "")))
    return (f"{info.get('gpu_model', '?')} {info.get('gpu_arch', '?')} ({fam or 'unknown family'}): "
            f"{info.get('cu_per_gpu', '?')} CUs, max_sclk {info.get('max_sclk', '?')} MHz, "
            f"hbm_bw {info.get('hbm_bw', '?')} GB/s")


def model_peaks(info: dict[str, Any]) -> dict[str, tuple[float, str]]:
    """{peak column (tensor ones as ``peak_flop_per_s_tensor:<path>``): (value, source)} from sysinfo.

    Compute and cache roofs at ``max_sclk`` (the clock rocprof-compute's peaks use); HBM is sysinfo's
    ``hbm_bw``. A figure whose inputs sysinfo lacks is left out (the reader then says unavailable).
    """
    out: dict[str, tuple[float, str]] = {}
    arch = str(info.get("gpu_arch", ""))
    fam = family(arch)
    cus, sclk_mhz = number(info.get("cu_per_gpu")), number(info.get("max_sclk"))
    hbm = number(info.get("hbm_bw"))
    mclk, channels = number(info.get("max_mclk")), number(info.get("num_hbm_channels"))
    if hbm:
        out["peak_dram_bytes_per_s"] = (hbm * 1e9, f"model: sysinfo.csv hbm_bw {hbm:g} GB/s (theoretical)")
    elif mclk and channels:  # newer sysinfo.csv has no hbm_bw: rocprof-compute's own hbmBandwidth formula
        out["peak_dram_bytes_per_s"] = (mclk * 1e6 * HBM_BYTES_PER_CLK_PER_CHANNEL * channels,
                                        f"model: max_mclk {mclk:g} MHz × {HBM_BYTES_PER_CLK_PER_CHANNEL} B × "
                                        f"{int(channels)} HBM channels (sysinfo.csv; rocprof-compute's hbmBandwidth)")
    if not (cus and sclk_mhz):
        return out
    clk = sclk_mhz * 1e6
    where = f"{int(cus)} CUs × max_sclk {sclk_mhz:g} MHz (sysinfo.csv)"
    banks = number(info.get("lds_banks_per_cu"))
    if banks:
        out["peak_lds_bytes_per_s"] = (cus * clk * 4 * banks, f"model: 4 B × {banks:g} LDS banks × {where} "
                                                              "(rocprof-compute's LDS peak)")
    if fam is None:
        return out
    l1 = L1_BYTES_PER_CLK_PER_CU[fam]
    out["peak_l1_bytes_per_s"] = (cus * clk * l1, f"model: {l1} B/clk/CU vL1D × {where} (rocprof-compute's vL1D peak)")
    chans = number(info.get("total_l2_chan"))
    if chans:
        out["peak_l2_bytes_per_s"] = (chans * clk * L2_BYTES_PER_CLK_PER_CHANNEL,
                                      f"model: {L2_BYTES_PER_CLK_PER_CHANNEL} B/clk × {int(chans)} L2 channels × "
                                      f"max_sclk {sclk_mhz:g} MHz (rocprof-compute's L2 peak)")
    for key, (rate, why) in _family_rates(fam).items():
        unit = "OP" if key == "mfma_int8" else "FLOP"
        src = f"model: {rate:g} {unit}/clk/CU {key} × {where}; {why}"
        col = _PATH_COLUMN.get(key, f"peak_flop_per_s_tensor:{key}")
        out[col] = (cus * clk * rate, src)
    return out


def read_csv(path: Path, **kw: Any) -> pd.DataFrame:
    """A CSV of a profiler output; unreadable text is a typed error naming the file."""
    check_exists(path)
    try:
        return pd.read_csv(path, **kw)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
        raise CorruptReportError(path, f"not a readable CSV ({exc})") from None


def read_sysinfo(folder: Path) -> dict[str, Any]:
    frame = read_csv(folder / SYSINFO, dtype=str, keep_default_na=False)
    if frame.empty:
        raise CorruptReportError(folder / SYSINFO, "has a header but no row")
    return {str(k).strip(): str(v).strip() for k, v in frame.iloc[0].items()}


#: formats whose ``sm_count`` holds compute units (CUs), not SMs
AMD_FORMATS = ("rocprof-compute", "rocprofv3", "rocprofv3-csv", "rocpd")


_AMD_NAME = r"(?i)\b(?:AMD|Instinct|Radeon)\b|^MI\d{2,3}"


def device_labels(frame: pd.DataFrame) -> str:
    """``MI210 (104 CUs), A100-SXM4-40GB (108 SMs)``: the devices of a frame with their units, so AMD
    and NVIDIA rows side by side do not read CUs as SMs."""
    if "device_name" not in frame:
        return ""
    frame = _label_rows(frame)
    amd = frame["format"].isin(AMD_FORMATS) if "format" in frame else pd.Series(False, index=frame.index)
    if "compute_capability" in frame:  # an AMD GPU read from another format (an xplane of JAX on an MI300X)
        amd = amd | frame["compute_capability"].astype("string").str.startswith("gfx").fillna(False)
    # no gfx target recorded (the xplane of JAX on an MI300X): an AMD product name says it
    amd = amd | frame["device_name"].astype("string").str.contains(_AMD_NAME, regex=True).fillna(False)
    counts = pd.to_numeric(frame.get("sm_count"), errors="coerce") if "sm_count" in frame else None
    labels = set()
    for i, name in frame["device_name"].items():
        if pd.isna(name):
            continue
        n = counts.get(i) if counts is not None else None
        unit = "CUs" if bool(amd.get(i)) else "SMs"
        labels.add(f"{name} ({int(n)} {unit})" if n is not None and pd.notna(n) else str(name))
    return ", ".join(sorted(labels))


#: what a device's label reads of a row
_LABEL_COLUMNS = ("device_name", "format", "compute_capability", "sm_count")


def _label_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct (device, format, CC, SM count) of ``frame``: the rows :func:`device_labels` makes the
    same labels from (it reads each row in Python: ~2 s for a 500-input dataset's 30,000 rows)."""
    if "device_name" not in frame or not frame.index.is_unique:
        return frame
    narrow = frame[[c for c in _LABEL_COLUMNS if c in frame]]
    narrow.attrs = {}
    return narrow.drop_duplicates()
