"""The files of a rocprof-compute workload folder: what makes a folder one workload (one input)."""

from __future__ import annotations

import re
from pathlib import Path

from roofline.ingest.amd.arch import SYSINFO

PMC = "pmc_perf.csv"


def is_workload(path: str | Path) -> bool:
    """A directory holding ``pmc_perf.csv`` and ``sysinfo.csv``: one rocprof-compute workload."""
    p = Path(path)
    return p.is_dir() and (pmc_path(p).is_file() or bool(pass_files(p))) and (p / SYSINFO).is_file()


def pmc_path(folder: Path) -> Path:
    """``pmc_perf.csv``, or the ``pmc_perf.csv.gz`` that rocprof-compute's own test workloads store."""
    plain = folder / PMC
    return plain if plain.is_file() or not (folder / f"{PMC}.gz").is_file() else folder / f"{PMC}.gz"


def pass_files(folder: Path) -> list[Path]:
    """Per-pass ``results_pmc_perf_<n>.csv`` (long form) of a workload not merged into pmc_perf.csv, by n."""
    found = [(int(m.group(1)), f) for f in folder.glob("results_pmc_perf_*.csv")
             if (m := re.fullmatch(r"results_pmc_perf_(\d+)\.csv", f.name))]
    return [f for _, f in sorted(found)]
