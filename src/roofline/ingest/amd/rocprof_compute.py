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
LDS bytes (``lds_bytes``, ``peak_lds_bytes_per_s``) are the optional fourth level the analysis adds
where they are recorded (docs/amd.md). A ``pmc_perf.csv`` in rocprof-compute's rocpd (long) form is
merged per dispatch as rocprof-compute does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from roofline.errors import FormatMismatchError, InputNotFoundError, NoKernelsError
from roofline.ingest.amd.arch import SYSINFO, describe, read_csv, read_sysinfo
from roofline.ingest.amd.arch import number as _number
from roofline.ingest.amd.rocprof_peaks import is_peaks_file, measured_roofs, peaks_from, tensor_peak, workload_peaks
from roofline.ingest.amd.workload import PMC, is_workload, pass_files, pmc_path
from roofline.ingest.common import check_exists, provenance_record
from roofline.ingest.ncu.csv_export import short_name
from roofline.schema import (
    UNAVAILABLE,
    conform_kernels,
    conform_metrics,
    kernels_from_columns,
    set_provenance,
    source_column,
)

FORMAT = "rocprof-compute"
TIMESTAMPS = "timestamps.csv"
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
#: the AMD readers' extra columns with their types (rocprof-compute, rocprofv3 JSON/CSV, rocpd), which batch
#: datasets keep beside the canonical ones (null on rows of other formats); peak_* go with the roofs used
EXTRA_DTYPES: dict[str, str] = {
    **{c: "float64" for _, c, _ in MFMA_TYPES}, "lds_bytes": "float64", "lds_bytes_source": "string",
    "peak_lds_bytes_per_s": "float64", "peak_lds_bytes_per_s_source": "string", "dispatch_id": "Int64",
    "agent_id": "Int64", "queue_id": "Int64", "xcd_count": "Int64",
}


_IDENTITY = ("Dispatch_ID", "Kernel_Name", "GPU_ID", "Grid_Size", "Workgroup_Size", "Start_Timestamp",
             "End_Timestamp")


def load_pmc(folder: Path) -> tuple[pd.DataFrame, str]:
    """One row per dispatch, counters as columns (strings as written), and the file(s) it came from.

    Without ``pmc_perf.csv``, the per-pass long files are merged as rocprof-compute's analyze does:
    a counter's instance rows are summed within a pass, and a counter several passes collected is
    taken from the first; names, sizes and timestamps of a dispatch come from the first pass."""
    if pmc_path(folder).is_file() or not pass_files(folder):
        path = pmc_path(folder)
        frame = read_csv(path, dtype=str, keep_default_na=False)
        if {"Counter_Name", "Counter_Value", "Dispatch_ID"} <= set(frame.columns):
            return _rocpd_form(frame), f"{path.name} (rocpd form: spans are the median over passes)"
        return frame, path.name
    passes = pass_files(folder)
    ident: pd.DataFrame | None = None
    counters: dict[str, pd.Series] = {}
    for f in passes:
        long = read_csv(f, dtype=str, keep_default_na=False)
        missing = [c for c in ("Dispatch_ID", "Counter_Name", "Counter_Value") if c not in long.columns]
        if missing:
            raise FormatMismatchError(f, f"lacks {', '.join(missing)}: not a rocprof-compute results_pmc_perf file")
        long["Dispatch_ID"] = pd.to_numeric(long["Dispatch_ID"], errors="coerce")
        if ident is None:
            ident = long.drop_duplicates("Dispatch_ID").set_index("Dispatch_ID")[
                [c for c in _IDENTITY if c in long.columns and c != "Dispatch_ID"]]
        values = pd.to_numeric(long["Counter_Value"], errors="coerce")
        wide = values.groupby([long["Dispatch_ID"], long["Counter_Name"]]).sum().unstack()
        for name in wide.columns:
            counters.setdefault(str(name), wide[name])
    assert ident is not None
    frame = pd.concat([ident, pd.DataFrame(counters).reindex(ident.index)], axis=1).reset_index()
    frame["Dispatch_ID"] = frame["Dispatch_ID"].astype("Int64").astype(str)
    return frame, f"{passes[0].name} … {passes[-1].name} ({len(passes)} passes)"


def _rocpd_form(long: pd.DataFrame) -> pd.DataFrame:
    """The long ``pmc_perf.csv`` that rocprof-compute ≥ 3.2 writes with ``--format-rocprof-output rocpd``
    (the ``counters_collection`` view of each pass's rocpd database, passes one after another) → one row
    per dispatch, as its ``process_rocpd_csv`` merges it: rows grouped by dispatch, each counter a column
    (a counter written twice keeps its last value, as rocprof-compute's dict does), and the span the
    median of the rows' End − Start (each pass re-ran the dispatch); Start is kept as the first row's."""
    long = long.copy()
    key = ["Dispatch_ID", *(c for c in ("Kernel_Name", "Grid_Size", "Workgroup_Size", "LDS_Per_Workgroup")
                            if c in long.columns)]
    ident = long.drop_duplicates(key).set_index(key)
    values = pd.to_numeric(long["Counter_Value"], errors="coerce")
    wide = values.groupby([*(long[k] for k in key), long["Counter_Name"]], sort=False).last().unstack()
    wide.columns = [str(c) for c in wide.columns]
    keep = [c for c in ident.columns if c not in ("Counter_Name", "Counter_Value")]
    frame = pd.concat([ident[keep], wide.reindex(ident.index).map(lambda v: "" if pd.isna(v) else repr(v))],
                      axis=1).reset_index()
    if {"Start_Timestamp", "End_Timestamp"} <= set(long.columns):
        start = pd.to_numeric(long["Start_Timestamp"], errors="coerce")
        span = (pd.to_numeric(long["End_Timestamp"], errors="coerce") - start).groupby(
            [long[k] for k in key], sort=False).median().reindex(ident.index)
        first = pd.to_numeric(frame["Start_Timestamp"], errors="coerce").to_numpy()
        end = first + span.to_numpy()
        frame["End_Timestamp"] = ["" if pd.isna(e) else str(int(e)) if float(e).is_integer() else repr(float(e))
                                  for e in end]
    return frame


def looks_like_pmc_perf(head: bytes) -> bool:
    """True for the head of a ``pmc_perf.csv`` (never for an ncu CSV: no ``"ID","Process ID"``)."""
    first = head.split(b"\n", 1)[0]
    if b"Dispatch_ID" in first and b"GPU_ID" in first and b"Counter_Name" in first and b"Counter_Value" in first:
        return True  # the rocpd (long) form rocprof-compute writes with --format-rocprof-output rocpd
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


def _workload_dir(path: Path) -> Path:
    if path.is_dir():
        if not pmc_path(path).is_file() and not pass_files(path):
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
    if not path.is_dir():  # a workload is a folder; check_exists vets files (FIFOs, empty, unreadable)
        check_exists(path)
    folder = _workload_dir(path)
    pmc, pmc_name = load_pmc(folder)
    if pmc.empty:
        raise NoKernelsError(folder / pmc_name, "has a header but no dispatch")
    for need in ("Kernel_Name", "Start_Timestamp", "End_Timestamp"):
        if need not in pmc.columns:
            raise FormatMismatchError(folder / pmc_name, f"has no {need} column: not a rocprof-compute pmc_perf.csv")
    info = read_sysinfo(folder)
    arch = info.get("gpu_arch", "") or "unknown"
    n = len(pmc)
    ctr = Counters(pmc.replace("", np.nan), pmc_name)
    cols: dict[str, Any] = {}
    extra: dict[str, Any] = {}

    cols["duration_s"], cols["duration_s_source"] = _durations(folder, pmc, pmc_name)
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
    cols["pipe_pct_json"] = pipe_utilisation(ctr, info, pmc)
    extra["dispatch_id"] = pd.to_numeric(pmc["Dispatch_ID"], errors="coerce").astype("Int64").to_numpy() \
        if "Dispatch_ID" in pmc else pd.array([pd.NA] * n, dtype="Int64")
    extra["agent_id"] = pd.to_numeric(pmc["GPU_ID"], errors="coerce").astype("Int64").to_numpy() \
        if "GPU_ID" in pmc else pd.array([pd.NA] * n, dtype="Int64")
    extra["xcd_count"] = int(_number(info.get("num_xcd")) or 1)

    peaks, peak_meta = workload_peaks(folder, info, roofline_device)
    # the cache roofs no spec table gives: where sysinfo.csv lacks their inputs, the source says so (the
    # compute, DRAM and L1 roofs it lacks are the roofs stage's to fill from the table, or to explain)
    for col, needs in (("peak_l2_bytes_per_s", "total_l2_chan, max_sclk and a CDNA gfx target"),):
        if col not in peaks:
            cols[col], cols[source_column(col)] = math.nan, (
                f"{UNAVAILABLE}: rocprof-compute's L2 peak needs {needs} in sysinfo.csv ({describe(info)})")
    for col, (value, source) in peaks.items():
        if col in ("peak_lds_bytes_per_s",):
            extra[col], extra[source_column(col)] = value, source
        elif col.startswith("peak_flop_per_s_tensor:"):
            continue  # per data type; chosen below for each row's dominant MFMA type
        else:
            cols[col], cols[source_column(col)] = value, source
    tensor_peak(cols, peaks, n)

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


def _durations(folder: Path, pmc: pd.DataFrame, where: str) -> tuple[np.ndarray, list[str]]:
    """End − Start of each dispatch: pmc_perf.csv's own timestamps (what rocprof-compute divides by),
    cross-checked against timestamps.csv where it has the same dispatches."""
    start, end, why = _timestamps(pmc, where)
    span = np.where([w is None for w in why], (end - start).astype(float) * 1e-9, np.nan)
    source = [w or f"End_Timestamp − Start_Timestamp of {where} (ns)" for w in why]
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


def pipe_utilisation(ctr: Counters, info: dict[str, str], pmc: pd.DataFrame) -> list[str | None]:
    """Per dispatch, rocprof-compute's own pipe utilisations (System Speed-of-Light panel,
    ``analysis_configs/gfx942/0200_system-speed-of-light.yaml``) as compact JSON, % of peak: VALU, SALU and
    MFMA utilisation over ``GRBM_GUI_ACTIVE / num_xcd`` active cycles × CUs (× 4 SIMDs for MFMA), and the
    theoretical LDS bandwidth's % of ``max_sclk × CUs × 128 B``. A counter it lacks leaves that pipe out."""
    n = len(pmc)
    cus, xcd, sclk = _number(info.get("cu_per_gpu")), _number(info.get("num_xcd")) or 1.0, _number(info.get("max_sclk"))
    banks = _number(info.get("lds_banks_per_cu"))
    with np.errstate(divide="ignore", invalid="ignore"):
        active = ctr.get("GRBM_GUI_ACTIVE") / xcd * (cus or np.nan) if ctr.has("GRBM_GUI_ACTIVE") else np.full(n, np.nan)
        pipes = {name: 100.0 * ctr.get(c) / (active * k) for name, c, k in (
            ("VALU Utilization", "SQ_ACTIVE_INST_VALU", 1), ("SALU Utilization", "SQ_ACTIVE_INST_SCA", 1),
            ("MFMA Utilization", "SQ_VALU_MFMA_BUSY_CYCLES", 4)) if ctr.has(c)}
        if ctr.has("SQ_LDS_IDX_ACTIVE") and ctr.has("SQ_LDS_BANK_CONFLICT") and banks and sclk and cus \
                and "Start_Timestamp" in pmc and "End_Timestamp" in pmc:
            ns = (pd.to_numeric(pmc["End_Timestamp"], errors="coerce")
                  - pd.to_numeric(pmc["Start_Timestamp"], errors="coerce")).to_numpy(dtype=float)
            gbps = (ctr.get("SQ_LDS_IDX_ACTIVE") - ctr.get("SQ_LDS_BANK_CONFLICT")) * 4 * banks / ns
            pipes["Theoretical LDS Bandwidth"] = 100.0 * gbps / (sclk * cus * 0.128)
    out: list[str | None] = []
    for r in range(n):
        row = {k: round(float(v[r]), 6) for k, v in pipes.items() if np.isfinite(v[r])}
        out.append(json.dumps(row, separators=(",", ":")) if row else None)
    return out


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
    pmc, _ = load_pmc(folder)
    long = pmc.reset_index(names="kernel_id").melt(id_vars="kernel_id", var_name="column", value_name="value_text")
    parts = long["column"].str.extract(r"^(?P<metric>.+?)(?:\[(?P<instance>\d+)\])?$")
    frame = pd.DataFrame({"source_file": str(path), "range_id": 0, "kernel_id": long["kernel_id"],
                          "metric": parts["metric"], "instance": parts["instance"],
                          "value": pd.to_numeric(long["value_text"], errors="coerce"),
                          "value_text": long["value_text"], "unit": pd.NA})
    meta = provenance_record(path, FORMAT, tool="rocprof-compute")
    return set_provenance(conform_metrics(frame), [meta])


__all__ = [
    "EXTRA_COLUMNS",
    "FORMAT",
    "MFMA_TYPES",
    "Counters",
    "derive_counters",
    "is_peaks_file",
    "is_workload",
    "line_bytes",
    "looks_like_pmc_perf",
    "measured_roofs",
    "peaks_from",
    "read",
    "read_metrics",
    "workload_peaks",
]
