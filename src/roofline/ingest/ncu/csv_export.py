"""Nsight Compute CSV exports (``ncu --csv`` with ``--metrics``, ``--print-fp``, ``--page details`` or ``--page raw``).

The long format has one row per (launch, metric). Program output and ``==PROF==`` lines may
precede or follow the header; numbers carry thousands separators; ``--page details`` rows use
human labels (``Duration``, ``SM Frequency``) instead of metric names and mix in rule rows with
empty metric fields; units are spelt differently from the binary report (``nsecond``,
``cycle/second``). Values are converted to ncu's native units here (ns, Hz, bytes), so the
metric formulas see the same numbers whether they came from a report or a CSV.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from roofline.errors import CorruptReportError, NoKernelsError, UnsupportedFormatError, path_text
from roofline.ingest.common import build_kernels_frame, check_size, head, provenance_record
from roofline.ingest.ncu.csv_raw import SECTION as RAW_SECTION
from roofline.ingest.ncu.csv_raw import is_wide, long_records
from roofline.schema import conform_metrics, set_provenance

FORMAT = "ncu-csv"
HEADER_MARK = '"ID","Process ID"'

# Units -> (factor to ncu's native unit, native unit)
_UNIT_FACTORS: dict[str, tuple[float, str]] = {
    "nsecond": (1.0, "ns"), "ns": (1.0, "ns"),
    "usecond": (1e3, "ns"), "us": (1e3, "ns"),
    "msecond": (1e6, "ns"), "ms": (1e6, "ns"),
    "second": (1e9, "ns"), "s": (1e9, "ns"),
    "hz": (1.0, "hz"), "cycle/second": (1.0, "hz"),
    "khz": (1e3, "hz"), "mhz": (1e6, "hz"), "ghz": (1e9, "hz"),
    "cycle/usecond": (1e6, "hz"), "cycle/nsecond": (1e9, "hz"),
    "byte": (1.0, "byte"), "kbyte": (1e3, "byte"), "mbyte": (1e6, "byte"),
    "gbyte": (1e9, "byte"), "tbyte": (1e12, "byte"),
    "byte/second": (1.0, "byte/s"), "byte/s": (1.0, "byte/s"),
    "kbyte/second": (1e3, "byte/s"), "mbyte/second": (1e6, "byte/s"),
    "gbyte/second": (1e9, "byte/s"), "tbyte/second": (1e12, "byte/s"),
}

# ``--page details`` labels -> metric names, keyed by (label, native unit) because one label
# ("Memory Throughput") means a percentage in one section and bytes/s in another.
_LABELS: dict[tuple[str, str], str] = {
    ("Duration", "ns"): "gpu__time_duration.sum",
    ("SM Frequency", "hz"): "sm__cycles_elapsed.avg.per_second",
    ("DRAM Frequency", "hz"): "dram__cycles_elapsed.avg.per_second",
    ("Memory Throughput", "byte/s"): "dram__bytes.sum.per_second",
    ("DRAM Throughput", "%"): "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ("# SMs", "SM"): "device__attribute_multiprocessor_count",
}

_GPU_IN_OUTPUT = re.compile(r"\b((?:NVIDIA |Tesla |Quadro )?(?:GeForce |RTX )?"
                            r"(?:[A-Z]{1,3}\d{2,4}[A-Za-z]*|RTX \d{4}|GTX \d{3,4})[\w\-]*(?: \w+GB)?)")


_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_PER = {"second": 1.0, "s": 1.0, "msecond": 1e3, "ms": 1e3, "usecond": 1e6, "us": 1e6, "nsecond": 1e9, "ns": 1e9}
_SCALED_UNIT = re.compile(
    r"([KMGT]?)(byte|cycle|inst|sector|request|warp|thread)(?:/(second|s|msecond|ms|usecond|us|nsecond|ns))?",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=256)  # (an export repeats a few units over thousands of rows)
def convert_unit(unit: str) -> tuple[float, str]:
    """(factor, native unit) turning a CSV value into ncu's native unit (ns, Hz, byte, byte/s).

    ncu's default ``--print-units auto`` scales values (``Gbyte/second``, ``Mcycle``,
    ``cycle/usecond``); ``base`` keeps them raw. Unknown units keep factor 1 and their name.
    """
    known = _UNIT_FACTORS.get(unit.strip().lower())
    if known:
        return known
    m = _SCALED_UNIT.fullmatch(unit.strip())
    if not m:
        return 1.0, unit
    prefix, base, per = m.group(1).upper(), m.group(2).lower(), (m.group(3) or "").lower()
    factor = _PREFIX[prefix] * (_PER[per] if per else 1.0)
    if not per:
        return factor, base
    return factor, "hz" if base == "cycle" else f"{base}/s"


def decode_text(data: bytes) -> str:
    """CSV text in UTF-8 (with or without BOM) or UTF-16 (PowerShell redirects write that)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def _parse_number(text: str) -> float | None:
    t = text.strip().replace(",", "")
    if not t:
        return None
    try:
        return float(t)
    except ValueError:
        return None


def _dims(text: str) -> tuple[int | None, int | None, int | None]:
    nums = re.findall(r"\d+", text or "")
    if len(nums) == 3:
        return int(nums[0]), int(nums[1]), int(nums[2])
    return None, None, None


_LEAD_WORD = re.compile(r"^(void|static|__global__)\s+")
_BRACKET = re.compile(r"[<>(\[]")
_TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


@functools.lru_cache(maxsize=256)
def short_name(demangled: str) -> str:
    """``void ns::kern<T>(int)`` -> ``kern``: the function base name of a demangled signature (kept for the
    last 256 names: the launches of a kernel, and the reports of one program, repeat them)."""
    s = _LEAD_WORD.sub("", demangled.strip())
    depth, cut = 0, len(s)
    # drop the argument list: the first '(' or '[' outside template brackets (only the brackets are visited:
    # a character loop took ~0.5 ms per CUTLASS name of a few thousand characters)
    for m in _BRACKET.finditer(s):
        ch = m.group()
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            cut = m.start()
            break
    s = s[:cut]
    while "<" in s:  # strip template arguments, innermost first
        new = _TEMPLATE_ARGS.sub("", s)
        if new == s:
            break
        s = new
    return s.split("::")[-1].strip() or demangled


def _lines(text: str) -> list[str]:
    """``text`` split at ``\r\n``, ``\r`` and ``\n`` (as ``re.split(r"\r\n|\r|\n")``, ~10x faster: 3.6 ms of a
    470 kB export's read): a CR-LF is one break, a lone CR another."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")




def _split(path: Path) -> tuple[list[str], list[list[str]], list[int]]:
    """(lines before the header, CSV rows from the header on, each row's line number)."""
    check_size(path)  # memory is ~10x the file: past the cap, refused before it is read
    # CSV lines end at \n, \r\n or \r only: str.splitlines() also splits at U+2028, \x0c or \x85, which a
    # quoted kernel name may hold (a valid export was rejected)
    lines = _lines(decode_text(path.read_bytes()))
    if lines and not lines[-1]:
        lines.pop()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(HEADER_MARK))
    except StopIteration:
        raise UnsupportedFormatError(path, "CSV without an Nsight Compute header (\"ID\",\"Process ID\",...)") from None
    numbers = [i + 1 for i in range(start, len(lines)) if lines[i].startswith('"')]
    body = [lines[i - 1] for i in numbers]
    if body and not body[-1].rstrip().endswith(('"', ",")):
        # ncu quotes every field and ends a row with a quote (or a comma before empty fields)
        raise CorruptReportError(path, f"last CSV row (line {numbers[-1]}) is cut short: the file looks truncated")
    try:
        rows = _quoted_rows(body) or list(csv.reader(io.StringIO("\n".join(body))))
    except csv.Error as exc:  # e.g. a field over the csv module's 128 KiB limit
        raise CorruptReportError(path, f"unreadable CSV ({exc})") from None
    if len(rows) != len(body):  # a quoted field spanning lines: not something ncu writes
        raise CorruptReportError(path, "CSV rows do not match its lines (an unterminated quote?)")
    return lines[:start], rows, numbers


def _quoted_rows(body: list[str]) -> list[list[str]] | None:
    """The rows ``csv.reader`` gives where every line is ``"f1","f2",...,"fn"`` with no other quote in it (what ncu
    writes for ``--metrics``: every field quoted), split by ``str.split`` (~3x faster: 2 ms of a 470 kB export's
    read); None where a line is anything else (empty trailing fields, an escaped quote, a NUL, a huge field):
    then ``csv.reader`` reads the whole body."""
    rows = []
    most = csv.field_size_limit()
    for line in body:
        fields = line[1:-1].split('","')
        # (2 quotes per field: the line's only quotes are the fields' own, so no field holds one)
        if len(line) < 2 or line[-1] != '"' or line.count('"') != 2 * len(fields) or len(line) > most or "\0" in line:
            return None
        rows.append(fields)
    return rows if rows else None


def _device_from_output(preamble: list[str]) -> str | None:
    for line in preamble:
        if line.startswith("==PROF=="):
            continue
        m = _GPU_IN_OUTPUT.search(line)
        if m and re.search(r"gpu|device", line, re.IGNORECASE):
            return m.group(1).strip()
    return None


def _records(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    head(path)  # existence, emptiness and LFS checks
    preamble, rows, numbers = _split(path)
    header, data = rows[0], rows[1:]
    if "Metric Name" not in header:
        if is_wide(header):  # --page raw: one row per launch, turned into the long records
            return preamble, long_records(path, header, data, numbers)
        raise UnsupportedFormatError(
            path, "CSV with neither a Metric Name column nor the --page raw layout (launch columns, then metrics)"
        )
    # every row carries at least the columns up to the value (details rows leave the rule ones off)
    needed = header.index("Metric Value") + 1 if "Metric Value" in header else len(header) - 5
    for r, line in zip(data, numbers[1:]):
        if len(r) < needed:
            raise CorruptReportError(
                path, f"CSV row at line {line} has {len(r)} of the header's {len(header)} columns "
                      f"({needed} needed): cut short or damaged")
    return preamble, [dict(zip(header, r)) for r in data]


#: the export a launch's records come from, by their section
_METRIC_SETS = {"Command line profiler metrics": "custom", RAW_SECTION: "raw page"}


def _kernel_id(kid: str, fallback: int) -> int:
    # str.isdigit() is also true for '²' and other digits int() refuses: ASCII digits only
    return int(kid) if kid.isascii() and kid.isdigit() else fallback


def _flag_short_last(launches: dict[str, dict[str, Any]], counts: dict[str, int]) -> None:
    """A file cut at a line boundary leaves its last kernel with fewer metric rows than the others: say so."""
    if len(counts) < 2:
        return
    *others, (last_id, last) = counts.items()
    fewest = min(n for _, n in others)
    if last < fewest:
        launches[last_id]["flags"] = (f"possibly truncated: the file's last kernel has {last} metric rows, "
                                      f"every other kernel at least {fewest}")


def read_raw(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    preamble, recs = _records(path)
    device = _device_from_output(preamble)
    launches: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    for rec in recs:
        kid = rec.get("ID", "")
        counts[kid] = counts.get(kid, 0) + bool(rec.get("Metric Name"))
        launch = launches.get(kid)
        if launch is None:
            block = _dims(rec.get("Block Size", ""))
            grid = _dims(rec.get("Grid Size", ""))
            cc_text = rec.get("CC", "")
            cc = tuple(int(x) for x in cc_text.split(".")) if re.fullmatch(r"\d+\.\d+", cc_text) else None
            name = rec.get("Kernel Name", "")
            launch = {
                "range_id": 0,
                "kernel_id": _kernel_id(kid, len(launches)),
                "kernel_name": name,
                "kernel_short_name": short_name(name),
                "mangled_name": None,
                "nvtx_range": None,
                "device_name": device,
                "cc": cc,
                "grid_x": grid[0], "grid_y": grid[1], "grid_z": grid[2],
                "block_x": block[0], "block_y": block[1], "block_z": block[2],
                "metric_set": _METRIC_SETS.get(rec.get("Section Name", ""), "details"),
                "raw": {},
            }
            launches[kid] = launch
        metric = rec.get("Metric Name", "")
        if not metric:
            continue  # rule rows carry no metric
        value = _parse_number(rec.get("Metric Value", ""))
        unit = rec.get("Metric Unit", "")
        factor, native = convert_unit(unit)
        if value is None:
            launch["raw"].setdefault(metric, rec.get("Metric Value", ""))
            continue
        value *= factor
        name = _LABELS.get((metric, native), metric)
        launch["raw"][name] = value
    if not launches:
        raise NoKernelsError(path, "CSV holds no kernel rows")
    _flag_short_last(launches, counts)
    for launch in launches.values():
        if launch["cc"] is not None:
            major, minor = launch["cc"]
            launch["raw"].setdefault("device__attribute_compute_capability_major", float(major))
            launch["raw"].setdefault("device__attribute_compute_capability_minor", float(minor))
    meta = provenance_record(
        path,
        FORMAT,
        tool="Nsight Compute (CSV export)",
        tool_version=None,
        reader="roofline csv reader",
        capture_time=None,
        command_line=None,
        device_name_source="program output before the CSV header" if device else None,
    )
    return sorted(launches.values(), key=lambda la: la["kernel_id"]), meta


def read(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    launches, meta = read_raw(path)
    return build_kernels_frame(path, FORMAT, launches, meta)


def read_metrics(path: str | Path) -> pd.DataFrame:
    """Every metric row of the CSV as written (value parsed, text and unit kept)."""
    path = Path(path)
    _, recs = _records(path)
    rows = []
    for rec in recs:
        metric = rec.get("Metric Name", "")
        if not metric:
            continue
        text = rec.get("Metric Value", "")
        value = _parse_number(text)
        kid = rec.get("ID", "")
        rows.append((path_text(path), 0, int(kid) if kid.isascii() and kid.isdigit() else None, metric, None,
                     math.nan if value is None else value, text, rec.get("Metric Unit", "")))
    frame = pd.DataFrame(
        rows, columns=["source_file", "range_id", "kernel_id", "metric", "instance", "value", "value_text", "unit"]
    )
    meta = provenance_record(path, FORMAT, tool="Nsight Compute (CSV export)")
    return set_provenance(conform_metrics(frame), [meta])
