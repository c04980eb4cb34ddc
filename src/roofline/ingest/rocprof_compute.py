"""rocprof-compute (Omniperf) workload folders: one canonical row per kernel dispatch.

A workload folder holds ``pmc_perf.csv`` (one row per dispatch, hardware counters; ``X_sum``
columns are rocprof's sums over the channels/instances ``X[0]``, ``X[1]``, ...) and ``sysinfo.csv``
(the GPU: arch, CUs, clocks, HBM bandwidth, LDS banks), with ``timestamps.csv``,
``pmc_dispatch_info.csv`` and the measured roofs ``roofline.csv`` where present.

FLOPs and bytes follow rocprof-compute's own roofline definitions (``roofline_calc.py`` and
``0400_roofline.yaml`` of the release that wrote the fixtures, ROCm/rocm-systems @ 1b1610f);
each row's ``*_source`` names the definition. Line sizes changed between releases
(rocprof-compute 3.7 counts vL1D/L2 requests as 128-byte lines on gfx942/gfx950, earlier releases
as 64 bytes everywhere), so ``read(..., definitions="3.7")`` selects the newer one; the default
``"3.6"`` is the one the measured ``roofline.csv`` roofs of these workloads were drawn against.
Peaks: the measured ``roofline.csv`` roofs (labelled ``measured``, with their low/high spread)
where the folder has one, else the architecture model from ``sysinfo.csv`` (see ``amd_arch``).
LDS bytes are recorded (``lds_bytes``, ``peak_lds_bytes_per_s``) but are not a hierarchy level
yet: the analysis levels are DRAM, L2 and L1 (docs/amd.md).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from roofline.errors import CorruptReportError, FormatMismatchError, InputNotFoundError, NoKernelsError
from roofline.ingest import amd_arch
from roofline.ingest.amd_arch import number as _number
from roofline.ingest.common import check_exists, provenance_record
from roofline.ingest.ncu_csv import short_name
from roofline.schema import (UNAVAILABLE, conform_kernels, conform_metrics, kernels_from_columns, set_provenance,
                             source_column)

FORMAT = "rocprof-compute"
PMC, SYSINFO, TIMESTAMPS, DISPATCH_INFO, ROOFLINE = (
    "pmc_perf.csv", "sysinfo.csv", "timestamps.csv", "pmc_dispatch_info.csv", "roofline.csv")
DEFINITIONS = ("3.6", "3.7")
COLLECT = "collect with `rocprof-compute profile` (its default set, or --roof-only for the roofline counters)"

#: MFMA data types: (counter suffix, extra column, canonical tensor path). int8 counts OPs, not FLOPs.
MFMA_TYPES: tuple[tuple[str, str, str], ...] = (
    ("F16", "flop_mfma_f16", "mfma_fp16"), ("BF16", "flop_mfma_bf16", "mfma_bf16"),
    ("F32", "flop_mfma_f32", "mfma_fp32"), ("F64", "flop_mfma_f64", "mfma_fp64"),
    ("F8", "flop_mfma_f8", "mfma_fp8"), ("F6F4", "flop_mfma_f6f4", "mfma_fp6_fp4"),
    ("I8", "op_mfma_i8", "mfma_int8"),
)
#: columns this reader adds after the canonical ones (kept by conform_kernels; docs/amd.md)
EXTRA_COLUMNS = (*(c for _, c, _ in MFMA_TYPES), "lds_bytes", "lds_bytes_source", "peak_lds_bytes_per_s",
                 "peak_lds_bytes_per_s_source", "dispatch_id", "agent_id", "xcd_count")


def is_workload(path: str | Path) -> bool:
    """A directory holding ``pmc_perf.csv`` and ``sysinfo.csv``: one rocprof-compute workload."""
    p = Path(path)
    return p.is_dir() and pmc_path(p).is_file() and (p / SYSINFO).is_file()


def pmc_path(folder: Path) -> Path:
    """``pmc_perf.csv``, or the ``pmc_perf.csv.gz`` that rocprof-compute's own test workloads store."""
    plain = folder / PMC
    return plain if plain.is_file() or not (folder / f"{PMC}.gz").is_file() else folder / f"{PMC}.gz"


def looks_like_pmc_perf(head: bytes) -> bool:
    """True for the head of a ``pmc_perf.csv`` (never for an ncu CSV: no ``"ID","Process ID"``)."""
    first = head.split(b"\n", 1)[0]
    return first.startswith(b"Dispatch_ID,") and (b"SQ_" in first or b"GRBM_" in first or b"TCC_" in first)


# -- counters ----------------------------------------------------------------------------------


class Counters:
    """Counter columns of pmc_perf.csv by name; ``X_sum`` falls back to Σ of ``X[n]``, and says so."""

    def __init__(self, frame: pd.DataFrame, where: str = PMC, collect: str = COLLECT) -> None:
        self.frame = frame
        self.where, self.collect = where, collect  # named in "unavailable" sources
        self.channels: dict[str, list[str]] = {}
        for c in frame.columns:
            m = re.fullmatch(r"(.+)\[(\d+)\]", str(c))
            if m:
                self.channels.setdefault(m.group(1), []).append(str(c))
        self.summed: set[str] = set()  # X_sum names computed from channel columns

    def has(self, name: str) -> bool:
        return name in self.frame.columns or (name.endswith("_sum") and name[:-4] in self.channels)

    def get(self, name: str) -> np.ndarray:
        if name in self.frame.columns:
            return pd.to_numeric(self.frame[name], errors="coerce").to_numpy(dtype=float)
        chans = self.channels[name[:-4]]
        self.summed.add(name)
        return self.frame[chans].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float).sum(axis=1)


@dataclass(frozen=True)
class Definition:
    """One quantity as rocprof-compute defines it: a name, its formula as text, the counters it reads."""

    label: str  # e.g. "HBM[rocprof-compute MI300]"
    formula: str
    counters: tuple[str, ...]
    compute: Callable[[Callable[[str], np.ndarray]], np.ndarray]

    def evaluate(self, ctr: Counters) -> tuple[np.ndarray, str]:
        missing = [c for c in self.counters if not ctr.has(c)]
        if missing:
            return (np.full(len(ctr.frame), np.nan),
                    f"{UNAVAILABLE}: {ctr.where} lacks {', '.join(missing)} for {self.label}; {ctr.collect}")
        values = self.compute(ctr.get)
        summed = [c for c in self.counters if c in ctr.summed]
        note = f" (X_sum = Σ per-channel X[n] columns: {', '.join(summed)})" if summed else ""
        return values, f"{self.label}: {self.formula}{note}"


def _valu(p: str, wave: int) -> Definition:
    names = tuple(f"SQ_INSTS_VALU_{op}_{p}" for op in ("ADD", "MUL", "FMA", "TRANS"))
    return Definition(
        f"VALU {p}[rocprof-compute]",
        f"{wave} lanes × (ADD_{p} + MUL_{p} + 2·FMA_{p} + TRANS_{p}) of SQ_INSTS_VALU_*",
        names, lambda g: wave * (g(names[0]) + g(names[1]) + 2 * g(names[2]) + g(names[3])))


def _mfma(t: str) -> Definition:
    name = f"SQ_INSTS_VALU_MFMA_MOPS_{t}"
    unit = "OPs" if t == "I8" else "FLOPs"
    return Definition(f"MFMA {t}[rocprof-compute]", f"512 × {name} ({unit})", (name,), lambda g: 512 * g(name))


def _l1(line: int, release: str) -> Definition:
    return Definition(f"vL1D[rocprof-compute {release}, {line} B lines]", f"{line} × TCP_TOTAL_CACHE_ACCESSES_sum",
                      ("TCP_TOTAL_CACHE_ACCESSES_sum",), lambda g: line * g("TCP_TOTAL_CACHE_ACCESSES_sum"))


_L2_REQS = ("TCP_TCC_READ_REQ_sum", "TCP_TCC_WRITE_REQ_sum", "TCP_TCC_ATOMIC_WITH_RET_REQ_sum",
            "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum")


def _l2(line: int, release: str) -> Definition:
    return Definition(f"L2[rocprof-compute {release}, {line} B lines]",
                      f"{line} × (TCP_TCC_READ_REQ_sum + TCP_TCC_WRITE_REQ_sum + TCP_TCC_ATOMIC_WITH_RET_REQ_sum + "
                      "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum)", _L2_REQS, lambda g: line * sum(g(c) for c in _L2_REQS))


HBM_MI200 = Definition(
    "HBM[rocprof-compute MI200]",
    "32·TCC_EA_RDREQ_32B_sum + 64·(TCC_EA_RDREQ_sum − TCC_EA_RDREQ_32B_sum) + 64·TCC_EA_WRREQ_64B_sum + "
    "32·(TCC_EA_WRREQ_sum − TCC_EA_WRREQ_64B_sum)",
    ("TCC_EA_RDREQ_32B_sum", "TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_64B_sum", "TCC_EA_WRREQ_sum"),
    lambda g: (32 * g("TCC_EA_RDREQ_32B_sum") + 64 * (g("TCC_EA_RDREQ_sum") - g("TCC_EA_RDREQ_32B_sum"))
               + 64 * g("TCC_EA_WRREQ_64B_sum") + 32 * (g("TCC_EA_WRREQ_sum") - g("TCC_EA_WRREQ_64B_sum"))))
HBM_MI300 = Definition(
    "HBM[rocprof-compute MI300]",
    "128·TCC_BUBBLE_sum + 32·TCC_EA0_RDREQ_32B_sum + "
    "64·(TCC_EA0_RDREQ_sum − TCC_BUBBLE_sum − TCC_EA0_RDREQ_32B_sum) + "
    "32·(TCC_EA0_WRREQ_sum − TCC_EA0_WRREQ_64B_sum) + 64·TCC_EA0_WRREQ_64B_sum",
    ("TCC_BUBBLE_sum", "TCC_EA0_RDREQ_32B_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum", "TCC_EA0_WRREQ_64B_sum"),
    lambda g: (128 * g("TCC_BUBBLE_sum") + 32 * g("TCC_EA0_RDREQ_32B_sum")
               + 64 * (g("TCC_EA0_RDREQ_sum") - g("TCC_BUBBLE_sum") - g("TCC_EA0_RDREQ_32B_sum"))
               + 32 * (g("TCC_EA0_WRREQ_sum") - g("TCC_EA0_WRREQ_64B_sum")) + 64 * g("TCC_EA0_WRREQ_64B_sum")))


def _lds(banks: float | None) -> Definition:
    names = ("SQ_LDS_IDX_ACTIVE", "SQ_LDS_BANK_CONFLICT")
    b = banks if banks else math.nan  # no sysinfo lds_banks_per_cu: NaN, said by the source below
    return Definition("LDS[rocprof-compute]", f"(SQ_LDS_IDX_ACTIVE − SQ_LDS_BANK_CONFLICT) × 4 B × {banks:g} banks "
                      "(sysinfo lds_banks_per_cu)" if banks else "needs sysinfo lds_banks_per_cu",
                      names, lambda g: (g(names[0]) - g(names[1])) * 4 * b)


def line_bytes(arch: str, definitions: str) -> tuple[int, str]:
    """vL1D/L2 bytes per request: 64 B everywhere up to rocprof-compute 3.6; 128 B on gfx942/gfx950 from 3.7."""
    if definitions not in DEFINITIONS:
        raise ValueError(f"definitions must be one of {', '.join(DEFINITIONS)}; got {definitions!r}")
    if definitions == "3.7" and arch.startswith(("gfx942", "gfx950")):
        return 128, "≥3.7"
    return 64, "≤3.6" if definitions == "3.6" else "≥3.7"


# -- reading -----------------------------------------------------------------------------------


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


def _workload_dir(path: Path) -> Path:
    if path.is_dir():
        if not pmc_path(path).is_file():
            raise FormatMismatchError(path, f"is a folder without {PMC}: not a rocprof-compute workload")
        if not (path / SYSINFO).is_file():
            raise FormatMismatchError(path, f"has {PMC} but no {SYSINFO}: the GPU (arch, CUs, clocks) is unknown")
        return path
    if not path.exists():
        raise InputNotFoundError(path)
    if not (path.parent / SYSINFO).is_file():
        raise FormatMismatchError(path, f"is a rocprof-compute {PMC} without {SYSINFO} beside it; pass the "
                                        "workload folder (the GPU's arch, CUs and clocks come from sysinfo.csv)")
    return path.parent


def _timestamps(frame: pd.DataFrame, where: str) -> tuple[np.ndarray, np.ndarray, list[str | None]]:
    """Start/End in ns as exact integers where written as integers; a non-positive span is no duration."""
    def col(name: str) -> tuple[np.ndarray, bool]:
        text = frame[name].astype(str).str.strip()
        exact = bool(text.str.fullmatch(r"\d+").all())
        if exact:
            return text.astype("int64").to_numpy(), True
        return pd.to_numeric(text, errors="coerce").to_numpy(float), False
    start, exact_s = col("Start_Timestamp")
    end, exact_e = col("End_Timestamp")
    span = (end - start).astype(float)
    why: list[str | None] = []
    rounded = "" if exact_s and exact_e else (
        f"; {where} writes the timestamps in scientific notation (e.g. {frame['Start_Timestamp'].iloc[0]}), "
        "rounded far below nanoseconds")
    for d in span:
        why.append(None if d > 0 else
                   f"{UNAVAILABLE}: End_Timestamp − Start_Timestamp = {d:g} ns in {where}{rounded}")
    return start, end, why


def read(path: str | Path, definitions: str = "3.6", roofline_device: int = 0) -> pd.DataFrame:
    """The canonical kernels frame of a workload folder (or its ``pmc_perf.csv``)."""
    path = Path(path)
    check_exists(path)
    folder = _workload_dir(path)
    pmc = read_csv(pmc_path(folder), dtype=str, keep_default_na=False)
    if pmc.empty:
        raise NoKernelsError(pmc_path(folder), "has a header but no dispatch")
    for need in ("Kernel_Name", "Start_Timestamp", "End_Timestamp"):
        if need not in pmc.columns:
            raise FormatMismatchError(pmc_path(folder), f"has no {need} column: not a rocprof-compute pmc_perf.csv")
    info = read_sysinfo(folder)
    arch = info.get("gpu_arch", "") or "unknown"
    n = len(pmc)
    ctr = Counters(pmc.replace("", np.nan))
    cols: dict[str, Any] = {}
    extra: dict[str, Any] = {}

    cols["duration_s"], cols["duration_s_source"] = _durations(folder, pmc)
    wave = int(_number(info.get("wave_size")) or 64)
    line = derive_counters(ctr, arch, wave, _number(info.get("lds_banks_per_cu")), definitions, cols, extra)

    names = [kernel_name(s) for s in pmc["Kernel_Name"].astype(str)]
    cols.update({
        "source_file": str(path), "format": FORMAT, "range_id": 0,
        "kernel_id": np.arange(n, dtype="int64"),
        "kernel_name": names,
        "kernel_short_name": [short_name(s) for s in names],
        "device_name": info.get("gpu_model") or None,
        "compute_capability": arch,
        "sm_count": int(_number(info.get("cu_per_gpu")) or 0) or None,
        "metric_set": "rocprof-compute",
        "sm_clock_hz": (_number(info.get("cur_sclk")) or math.nan) * 1e6,
        "sm_boost_clock_hz": (_number(info.get("max_sclk")) or math.nan) * 1e6,
        "dram_clock_hz": (_number(info.get("cur_mclk")) or math.nan) * 1e6,
        "replay_ok": True,
    })
    _launch(pmc, cols)
    extra["dispatch_id"] = pd.to_numeric(pmc["Dispatch_ID"], errors="coerce").astype("Int64").to_numpy() \
        if "Dispatch_ID" in pmc else pd.array([pd.NA] * n, dtype="Int64")
    extra["agent_id"] = pd.to_numeric(pmc["GPU_ID"], errors="coerce").astype("Int64").to_numpy() \
        if "GPU_ID" in pmc else pd.array([pd.NA] * n, dtype="Int64")
    extra["xcd_count"] = int(_number(info.get("num_xcd")) or 1)

    peaks, peak_meta = workload_peaks(folder, info, roofline_device)
    for col, (value, source) in peaks.items():
        if col in ("peak_lds_bytes_per_s",):
            extra[col], extra[source_column(col)] = value, source
        elif col.startswith("peak_flop_per_s_tensor:"):
            continue  # per data type; chosen below for each row's dominant MFMA type
        else:
            cols[col], cols[source_column(col)] = value, source
    _tensor_peak(cols, peaks, n)

    frame = kernels_from_columns({k: v for k, v in cols.items()}, n)
    for k, v in extra.items():
        frame[k] = v if not np.isscalar(v) else [v] * n
    frame = conform_kernels(frame)
    meta = provenance_record(path, FORMAT, tool="rocprof-compute", tool_version=info.get("version") or None,
                             reader="pandas", capture_time=info.get("timestamp") or None,
                             command_line=info.get("command") or None, gpu_arch=arch,
                             rocm_version=info.get("rocm_version") or None, definitions=definitions,
                             line_bytes=line, peaks=peak_meta)
    return set_provenance(frame, [meta])


def derive_counters(ctr: Counters, arch: str, wave: int, lds_banks: float | None, definitions: str,
                    cols: dict[str, Any], extra: dict[str, Any]) -> int:
    """FLOPs and bytes per level of every dispatch by rocprof-compute's definitions (also used for rocprofv3
    counters); fills ``cols`` (canonical) and ``extra`` (MFMA per type, LDS); returns the vL1D/L2 line size."""
    n = len(ctr.frame)
    for p, col in (("F16", "flop_fp16"), ("F32", "flop_fp32"), ("F64", "flop_fp64")):
        cols[col], cols[source_column(col)] = _valu(p, wave).evaluate(ctr)
    _tensor(ctr, arch, cols, extra, n)
    line, release = line_bytes(arch, definitions)
    hbm = HBM_MI200 if ctr.has("TCC_EA_RDREQ_sum") and not ctr.has("TCC_EA0_RDREQ_sum") else HBM_MI300
    for col, d in (("dram_bytes", hbm), ("l2_bytes", _l2(line, release)), ("l1_bytes", _l1(line, release))):
        cols[col], cols[source_column(col)] = d.evaluate(ctr)
    extra["lds_bytes"], extra["lds_bytes_source"] = _lds(lds_banks).evaluate(ctr)
    return line


def kernel_name(raw: str) -> str:
    """The kernel's signature without the code-object descriptor suffix that rocprof releases write
    differently (`` [clone .kd]``, `` (.kd)``, ``.kd``), so one kernel has one name across releases."""
    return re.sub(r"(\s*\[clone \.kd\]|\s*\(\.kd\)|\.kd)$", "", raw.strip())


def _durations(folder: Path, pmc: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """End − Start of each dispatch: pmc_perf.csv's own timestamps (what rocprof-compute divides by),
    cross-checked against timestamps.csv where it has the same dispatches."""
    start, end, why = _timestamps(pmc, pmc_path(folder).name)
    span = np.where([w is None for w in why], (end - start).astype(float) * 1e-9, np.nan)
    source = [w or "End_Timestamp − Start_Timestamp of pmc_perf.csv (ns)" for w in why]
    ts_path = folder / TIMESTAMPS
    if ts_path.is_file():
        ts = read_csv(ts_path, dtype=str, keep_default_na=False)
        if len(ts) == len(pmc) and {"Start_Timestamp", "End_Timestamp"} <= set(ts.columns):
            s2, e2, _ = _timestamps(ts, TIMESTAMPS)
            same = (s2 == start) & (e2 == end)
            source = [s + ("; timestamps.csv agrees" if ok else "; timestamps.csv differs for this dispatch")
                      for s, ok in zip(source, same)]
    return span, source


def _launch(pmc: pd.DataFrame, cols: dict[str, Any]) -> None:
    """HSA's Grid_Size counts work-items; the schema's grid counts workgroups (CUDA's blocks)."""
    grid = pd.to_numeric(pmc.get("Grid_Size"), errors="coerce") if "Grid_Size" in pmc else None
    wg = pd.to_numeric(pmc.get("Workgroup_Size"), errors="coerce") if "Workgroup_Size" in pmc else None
    if wg is not None:
        cols["block_x"], cols["block_y"], cols["block_z"] = wg.tolist(), 1, 1
    if grid is not None and wg is not None:
        cols["grid_x"] = [None if (pd.isna(g) or pd.isna(w) or w <= 0) else int(-(-g // w)) for g, w in zip(grid, wg)]
        cols["grid_y"], cols["grid_z"] = 1, 1


def _tensor(ctr: Counters, arch: str, cols: dict[str, Any], extra: dict[str, Any], n: int) -> None:
    """MFMA FLOPs (OPs for int8) per data type, their sum in flop_tensor, the dominant type in tensor_path."""
    total = np.zeros(n)
    sources, absent = [], []
    per_type = {}
    for t, col, _ in MFMA_TYPES:
        if t in ("F8", "F6F4") and not ctr.has(f"SQ_INSTS_VALU_MFMA_MOPS_{t}"):
            # the chip has no such MFMA (F8 from gfx940, F6F4 on gfx950): its FLOPs are 0, not unknown
            extra[col] = np.zeros(n) if _has_no_type(arch, t) else np.full(n, np.nan)
            if not _has_no_type(arch, t):
                absent.append(f"SQ_INSTS_VALU_MFMA_MOPS_{t}")
            per_type[col] = extra[col]
            continue
        v, src = _mfma(t).evaluate(ctr)
        extra[col] = v
        per_type[col] = v
        if np.isnan(v).all():
            absent.append(f"SQ_INSTS_VALU_MFMA_MOPS_{t}")
        else:
            sources.append(f"512 × MOPS_{t}")
    for v in per_type.values():
        total = total + np.nan_to_num(v)
    if absent and not sources:
        cols["flop_tensor"] = np.full(n, np.nan)
        cols["flop_tensor_source"] = f"{UNAVAILABLE}: {ctr.where} lacks {', '.join(absent)}; {ctr.collect}"
    else:
        cols["flop_tensor"] = total
        partial = f"; lacks {', '.join(absent)} (a lower bound)" if absent else ""
        cols["flop_tensor_source"] = (f"MFMA[rocprof-compute]: Σ {' + '.join(sources)} of SQ_INSTS_VALU_MFMA_MOPS_* "
                                      f"(int8 as OPs){partial}")
    stack = np.vstack([np.nan_to_num(per_type[c]) for _, c, _ in MFMA_TYPES])
    paths = [p for _, _, p in MFMA_TYPES]
    best = stack.argmax(axis=0)
    cols["tensor_path"] = [paths[i] if stack[i, j] > 0 else None for j, i in enumerate(best)]


def _has_no_type(arch: str, t: str) -> bool:
    if t == "F8":
        return arch.startswith("gfx90")  # CDNA1/2: no FP8 MFMA
    return not arch.startswith("gfx950")  # F6/F4 MFMA: CDNA4 only


def read_metrics(path: str | Path) -> pd.DataFrame:
    """Every counter of every dispatch in ``pmc_perf.csv`` (long frame); ``X[n]`` is metric X, instance n."""
    path = Path(path)
    folder = _workload_dir(path) if path.is_dir() or (path.parent / SYSINFO).is_file() else path.parent
    pmc = read_csv(pmc_path(folder), dtype=str, keep_default_na=False)
    long = pmc.reset_index(names="kernel_id").melt(id_vars="kernel_id", var_name="column", value_name="value_text")
    parts = long["column"].str.extract(r"^(?P<metric>.+?)(?:\[(?P<instance>\d+)\])?$")
    frame = pd.DataFrame({"source_file": str(path), "range_id": 0, "kernel_id": long["kernel_id"],
                          "metric": parts["metric"], "instance": parts["instance"],
                          "value": pd.to_numeric(long["value_text"], errors="coerce"),
                          "value_text": long["value_text"], "unit": pd.NA})
    meta = provenance_record(path, FORMAT, tool="rocprof-compute")
    return set_provenance(conform_metrics(frame), [meta])


# -- peaks -------------------------------------------------------------------------------------

#: roofline.csv column -> canonical peak column (bandwidth in GB/s, compute in GFLOP/s or GOP/s)
ROOFLINE_COLUMNS: dict[str, str] = {
    "HBMBw": "peak_dram_bytes_per_s", "L2Bw": "peak_l2_bytes_per_s", "L1Bw": "peak_l1_bytes_per_s",
    "LDSBw": "peak_lds_bytes_per_s", "FP64Flops": "peak_flop_per_s_fp64", "FP32Flops": "peak_flop_per_s_fp32",
    "FP16Flops": "peak_flop_per_s_fp16",
    **{f"MFMA{t}{'Ops' if t == 'I8' else 'Flops'}": f"peak_flop_per_s_tensor:{p}"
       for t, _, p in MFMA_TYPES if t != "F6F4"},
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


def _tensor_peak(cols: dict[str, Any], peaks: dict[str, tuple[float, str]], n: int) -> None:
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
               "peak_dram_bytes_per_s": "dram", "peak_l2_bytes_per_s": "l2", "peak_l1_bytes_per_s": "l1"}


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
                (bandwidth if key in ("dram", "l2", "l1") else compute)[key] = pk
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
                (bandwidth if key in ("dram", "l2", "l1") else compute)[key] = pk
    return Peaks(device_name, compute, bandwidth)


__all__ = ["read", "read_metrics", "is_workload", "is_peaks_file", "peaks_from", "looks_like_pmc_perf",
           "measured_roofs", "workload_peaks", "line_bytes", "derive_counters", "Counters", "FORMAT", "MFMA_TYPES",
           "EXTRA_COLUMNS"]
