"""Which reader handles a path: sniff the content (magic bytes first, the name second).

The content decides, because profiles get renamed; but a file whose name promises an Nsight
Compute report and whose content is something else is an error, not a guess.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from roofline.errors import (
    FormatMismatchError,
    InputNotFoundError,
    UnknownFormatError,
    UnsupportedFormatError,
)
from roofline.ingest import (ncu_csv, ncu_rep, rocprof_compute, rocprofv3, rocprofv3_csv, torch_trace, xplane,
                             xprof_trace)
from roofline.ingest.common import describe_content, head


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    suffixes: tuple[str, ...]
    read: Callable[[Path], pd.DataFrame] | None  # None: recognised, no reader yet
    read_metrics: Callable[[Path], pd.DataFrame] | None = None


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("ncu-rep", "Nsight Compute report (.ncu-rep, legacy .nsight-cuprof-report)",
               ncu_rep.SUFFIXES, ncu_rep.read, ncu_rep.read_metrics),
        Format("ncu-csv", "Nsight Compute CSV export (--csv with --metrics, --print-fp or --page details)",
               (".csv",), ncu_csv.read, ncu_csv.read_metrics),
        Format("torch-trace", "PyTorch profiler (Kineto) Chrome trace JSON (.json, .json.gz)",
               (".pt.trace.json", ".pt.trace.json.gz", ".json", ".json.gz"), torch_trace.read),
        Format("xplane", "XLA/XProf XSpace protobuf (.xplane.pb: JAX, TensorFlow, PyTorch/XLA; TPU or GPU)",
               xplane.SUFFIXES, xplane.read),
        Format("xprof-trace", "XProf trace-viewer / perfetto JSON of an xplane (.trace.json.gz; timing only)",
               xprof_trace.SUFFIXES, xprof_trace.read),
        Format("rocprof-compute", "rocprof-compute (Omniperf) workload folder: pmc_perf.csv + sysinfo.csv "
               "(+ timestamps.csv, roofline.csv); docs/amd.md", (), rocprof_compute.read, rocprof_compute.read_metrics),
        Format("rocprofv3", "rocprofv3 --output-format json (.json, .json.gz: kernel dispatches, agents, counters)",
               (), rocprofv3.read),
        Format("rocprofv3-csv", "rocprofv3 --output-format csv: *kernel_trace.csv (+ its counter_collection.csv, "
               "agent_info.csv), or a counter_collection.csv", (), rocprofv3_csv.read),
    )
}

PROFILE_SUFFIXES = tuple(s for f in FORMATS.values() for s in f.suffixes)


def _name_says(path: Path) -> str | None:
    name = path.name.lower()
    for fmt in FORMATS.values():
        if any(name.endswith(s) for s in fmt.suffixes):
            return fmt.name
    return None


def sniff(path: str | Path) -> str:
    """The format name of a file, from its content; raises a typed error naming the file."""
    path = Path(path)
    if not path.exists():
        raise InputNotFoundError(path)
    if path.is_dir():
        if rocprof_compute.is_workload(path):  # a rocprof-compute workload is one input: a folder
            return "rocprof-compute"
        raise UnknownFormatError(path, "is a directory; pass the profile files (or use read() on the folder)")
    data = head(path, 64 * 1024)  # also rejects empty files and Git LFS pointers
    named = _name_says(path)
    found: str | None = None
    if data.startswith(ncu_rep.MAGIC):
        found = "ncu-rep"
    elif named == "xplane":
        found = "xplane"  # protobuf has no magic: the name decides, the reader checks the content
    elif ncu_csv.HEADER_MARK in ncu_csv.decode_text(data):
        found = "ncu-csv"
    elif rocprof_compute.looks_like_pmc_perf(data):
        found = "rocprof-compute"
    elif rocprofv3_csv.looks_like(data):
        found = "rocprofv3-csv"
    elif data[:2] == b"\x1f\x8b":
        try:
            with gzip.open(path, "rb") as fh:
                inner = fh.read(64)
        except (OSError, EOFError):
            inner = b""
        if inner.lstrip()[:1] in (b"{", b"["):
            found = _json_kind(_gunzip_head(path))
    elif data.lstrip()[:1] in (b"{", b"["):
        found = _json_kind(data)
    elif path.name.lower().endswith(".ncu-repz"):
        found = "ncu-rep"  # compressed report: no documented magic, ncu_report decides

    if named == "ncu-rep" and found != "ncu-rep":
        raise FormatMismatchError(
            path,
            "named like an Nsight Compute report but it lacks the 'NVR\\0' magic; its content looks "
            f"like {describe_content(data)}",
        )
    if found is None:
        raise UnknownFormatError(
            path,
            f"not a profile format roofline reads (content looks like {describe_content(data)}); "
            "`roofline formats` lists the formats",
        )
    return found


def _json_kind(data: bytes) -> str:
    if rocprofv3.looks_like(data):
        return "rocprofv3"
    return "xprof-trace" if xprof_trace.looks_like(data) else "torch-trace"


def _gunzip_head(path: Path, n: int = 64 * 1024) -> bytes:
    try:
        with gzip.open(path, "rb") as fh:
            return fh.read(n)
    except (OSError, EOFError):
        return b""


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """Paths with folders replaced by the profile files inside them (sorted, recursive); a rocprof-compute
    workload folder (pmc_perf.csv + sysinfo.csv) stands for itself."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            # a rocprof-compute workload folder is one input; the CSVs inside it are not profiles of their own
            workloads = [d for d in (p, *p.rglob("*")) if rocprof_compute.is_workload(d)]
            out.extend(sorted(workloads + [f for f in p.rglob("*") if f.is_file()
                                           and f.name.lower().endswith(PROFILE_SUFFIXES)
                                           and not any(w in f.parents for w in workloads)
                                           and not rocprofv3_csv.is_companion(f)]))
        else:
            out.append(p)
    return out


def reader_for(path: str | Path) -> Format:
    fmt = FORMATS[sniff(path)]
    if fmt.read is None:
        raise UnsupportedFormatError(
            path, f"is a {fmt.description}; roofline recognises it but has no reader for it yet"
        )
    return fmt
