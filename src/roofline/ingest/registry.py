"""Which reader handles a path: sniff the content (magic bytes first, the name second).

The content decides, because profiles get renamed; but a file whose name promises an Nsight
Compute report and whose content is something else is an error, not a guess.
"""

from __future__ import annotations

import fnmatch
import glob
import gzip
import os
import re
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from roofline.errors import (
    CorruptReportError,
    FormatMismatchError,
    InputNotFoundError,
    UnknownFormatError,
    UnsupportedFormatError,
)
from roofline.ingest.amd import rocpd, rocprof_compute, rocprofv3, rocprofv3_csv
from roofline.ingest.common import describe_content, head
from roofline.ingest.ncu import csv_export as ncu_csv
from roofline.ingest.ncu import report as ncu_rep
from roofline.ingest.nsys import export as nsys
from roofline.ingest.torch import trace as torch_trace
from roofline.ingest.torch.graphs import capture_index
from roofline.ingest.xla import xplane, xprof_trace


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
        Format("ncu-csv", "Nsight Compute CSV export (--csv with --metrics, --print-fp, --page details or --page raw)",
               (".csv",), ncu_csv.read, ncu_csv.read_metrics),
        Format("torch-trace", "PyTorch profiler (Kineto) Chrome trace JSON (.json, .json.gz)",
               (".pt.trace.json", ".pt.trace.json.gz", ".json", ".json.gz"), torch_trace.read),
        Format("xplane", "XLA/XProf XSpace protobuf (.xplane.pb: JAX, TensorFlow, PyTorch/XLA; TPU or GPU)",
               xplane.SUFFIXES, xplane.read),
        Format("xprof-trace", "XProf trace-viewer / perfetto JSON of an xplane (.trace.json.gz; timing only)",
               xprof_trace.SUFFIXES, xprof_trace.read),
        Format("nsys-sqlite", "Nsight Systems SQLite export (nsys export --type sqlite; timing, no counters)",
               nsys.SUFFIXES, nsys.read),
        Format("nsys-rep", "Nsight Systems report (.nsys-rep, .qdrep; exported with `nsys` on PATH)",
               nsys.REP_SUFFIXES, nsys.read),
        Format("rocprof-compute", "rocprof-compute (Omniperf) workload folder: pmc_perf.csv + sysinfo.csv "
               "(+ timestamps.csv, roofline.csv); docs/amd.md", (), rocprof_compute.read, rocprof_compute.read_metrics),
        Format("rocprofv3", "rocprofv3 --output-format json (.json, .json.gz: kernel dispatches, agents, counters)",
               (), rocprofv3.read),
        Format("rocprofv3-csv", "rocprofv3 --output-format csv: *kernel_trace.csv (+ its counter_collection.csv, "
               "agent_info.csv), or a counter_collection.csv", (), rocprofv3_csv.read),
        Format("rocpd", "rocprofv3 --output-format rocpd SQLite (.db: rocpd_*_<uuid> tables; dispatches, agents, "
               "counters)", rocpd.SUFFIXES, rocpd.read),
        # GPU kernels and copies are inside, as events with string times and no category: not a CPU-only trace
        # (that exits 0), a profile with GPU work this reader cannot use (exit 1); rocprofv3 writes what it reads
        Format("capture-index", "a graph-capture folder's index (execution_details.json: capture traces and their "
               "batch sizes; not a profile: give its folder to --capture)", (), None),
        Format("rocprof-v1", "legacy rocprof (v1) --hip-trace/--hsa-trace Chrome JSON (GPU kernels and copies "
               "as string-timed events without categories; profile with rocprofv3 --output-format json, csv or "
               "rocpd)", (), None),
    )
}
#: the opening rocprof (v1)'s tblextr.py writes (``open_json``): an empty first event, then its process labels
_ROCPROF_V1 = re.compile(rb'\A\s*\{\s*"traceEvents"\s*:\s*\[\s*\{\s*\}')

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
    elif data.startswith(nsys.MAGIC) and rocpd.is_rocpd(path):
        found = "rocpd"  # rocprofv3's SQLite; nsys exports have no rocpd_* table
    elif data.startswith(nsys.MAGIC):
        nsys.connect(path).close()  # an SQLite file that is not an nsys export is a typed error here
        found = "nsys-sqlite"
    elif named == "nsys-rep":
        found = "nsys-rep"  # no public magic: only `nsys export` reads it, and says if it is not one
    elif named == "xplane":
        found = "xplane"  # protobuf has no magic: the name decides, the reader checks the content
    elif ncu_csv.HEADER_MARK in ncu_csv.decode_text(data):
        found = "ncu-csv"
    elif rocprof_compute.looks_like_pmc_perf(data):
        found = "rocprof-compute"
    elif rocprofv3_csv.looks_like(data):
        found = "rocprofv3-csv"
    elif data[:2] == b"\x1f\x8b":
        inner = _gunzip_head(path)  # a damaged stream sniffs as a trace; its reader names the damage
        if inner.lstrip()[:1] in (b"{", b"["):
            found = _json_kind(inner)
    elif capture_index(path) is not None:
        found = "capture-index"
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
    if _ROCPROF_V1.match(data) and b'"process_name"' in data:
        return "rocprof-v1"
    return "xprof-trace" if xprof_trace.looks_like(data) else "torch-trace"


def _gunzip_head(path: Path, n: int = 64 * 1024) -> bytes:
    out = b""
    try:
        with gzip.open(path, "rb") as fh:
            while len(out) < n and (chunk := fh.read(n - len(out))):
                out += chunk
    except (OSError, EOFError, zlib.error) as exc:  # damaged or cut: what decompressed before the damage
        if not out:
            raise CorruptReportError(path, f"gzip stream is damaged or truncated ({exc})") from None
    return out


def expand(paths: Iterable[str | Path], skipped: list[Path] | None = None) -> list[Path]:
    """Paths with folders replaced by the profile files inside them (sorted, recursive), each real
    file once: symlinked folders are followed, but a folder is never entered twice (a symlink loop
    neither multiplies a file nor hangs). A rocprof-compute workload folder (pmc_perf.csv +
    sysinfo.csv) stands for itself. A graph-capture folder's index (``execution_details.json``) found in a
    folder is no profile: it is left out, and added to ``skipped`` (the caller says so)."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files = walk_files(p)
            index = [f for f in files if capture_index(f) is not None]
            if index:
                files = [f for f in files if f not in index]
                if skipped is not None:
                    skipped.extend(index)
            # a rocprof-compute workload folder is one input; the CSVs inside it are not profiles of their own
            workloads = [d for d in sorted({p, *(f.parent for f in files)}) if rocprof_compute.is_workload(d)]
            out.extend(sorted(workloads + [f for f in files if f.name.lower().endswith(PROFILE_SUFFIXES)
                                           and not any(w in f.parents for w in workloads)
                                           and not rocprofv3_csv.is_companion(f)
                                           and not (f.suffix.lower() in rocpd.SUFFIXES and not rocpd.is_rocpd(f))]))
        else:
            out.append(p)
    return unique_real(out)


def walk_files(root: Path) -> list[Path]:
    """Every file under ``root``, sorted, following symlinked folders once each."""
    seen: set[tuple[int, int]] = set()
    found: list[Path] = []
    for folder, dirs, files in os.walk(root, followlinks=True):
        try:
            st = os.stat(folder)
        except OSError:
            dirs[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirs[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirs.sort()
        found.extend(Path(folder, f) for f in files if os.path.isfile(os.path.join(folder, f)))
    return sorted(found)


def glob_files(pattern: str) -> list[Path]:
    """Files matching a glob pattern, ``**`` recursing as in :func:`glob.glob`, but walking each
    real folder once: with symlink loops Python's glob repeats a file per cycle, and with two loops
    it never ends. Hidden names match only patterns that start with '.', as in glob."""
    parts = pattern.split(os.sep)
    if "**" not in parts:
        return sorted(Path(p) for p in glob.glob(pattern) if os.path.isfile(p))
    i = next(k for k, part in enumerate(parts) if glob.has_magic(part))
    base = os.sep.join(parts[:i]) or (os.sep if pattern.startswith(os.sep) else os.curdir)
    if not os.path.isdir(base):
        return []
    pats = parts[i:]
    return [f for f in walk_files(Path(base)) if _match(f.relative_to(base).parts, pats)]


def _match(names: tuple[str, ...], pats: list[str]) -> bool:
    if not pats:
        return not names
    if pats[0] == "**":
        return any(_match(names[k:], pats[1:]) for k in range(len(names) + 1)
                   if not any(n.startswith(".") for n in names[:k]))
    return (bool(names) and fnmatch.fnmatchcase(names[0], pats[0])
            and (not names[0].startswith(".") or pats[0].startswith(".")) and _match(names[1:], pats[1:]))


def unique_real(paths: Iterable[Path]) -> list[Path]:
    """Paths in order, each real file once (the first path naming it is kept)."""
    seen: set[str] = set()
    out: list[Path] = []
    for p in paths:
        real = os.path.realpath(p)
        if real not in seen:
            seen.add(real)
            out.append(p)
    return out


def reader_for(path: str | Path) -> Format:
    fmt = FORMATS[sniff(path)]
    if fmt.name == "capture-index":
        raise UnsupportedFormatError(path, f"is {fmt.description}")
    if fmt.read is None:
        raise UnsupportedFormatError(
            path, f"is a {fmt.description}; roofline recognises it but has no reader for it yet"
        )
    return fmt
