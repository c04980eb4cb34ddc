"""Nsight Compute binary reports (``.ncu-rep``, legacy ``.nsight-cuprof-report``) via ``ncu_report``.

Traps this module handles (``shared/reference/ncu_report_api.md`` §7-§8): the reader "loads"
truncated, empty and non-report files as zero ranges without complaint, so the magic and the
range and kernel counts are checked here; values that look integral are often floats; NaN
metrics mark a replay that did not complete (the kernel is kept and flagged); the ncu version,
capture time and command line are not exposed by the API and are read from the file's bytes.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from roofline._version import __version__
from roofline.errors import CorruptReportError, MissingDependencyError, NoKernelsError, path_text
from roofline.ingest import isolate
from roofline.ingest.common import build_kernels_frame, check_magic, head, provenance_record
from roofline.metrics.derive import is_relevant
from roofline.metrics.evidence import is_evidence, rules_json
from roofline.metrics.tensor import OPCODE_METRIC
from roofline.schema import conform_metrics, set_provenance

FORMAT = "ncu-rep"
MAGIC = b"NVR\x00"
SUFFIXES = (".ncu-rep", ".nsight-cuprof-report", ".ncu-repz")

_VERSION_RE = re.compile(rb"(20\d\d\.\d+\.\d+(?:\.\d+)?) \(build")
# The command line is stored as plain text near the version string. Find the ``ncu`` executable
# first (a cheap literal search), then widen to the printable run around it: a lazy regex over
# the whole file cost ~85 ms on a 3.9 MB report.
_NCU_EXE_RE = re.compile(rb'[/\\]ncu(?:\.exe)?"? ')
_CMD_START_RE = re.compile(rb'"?[A-Za-z]:\\|/')
_NCU_RE = re.compile(rb"ncu")


def _ncu_report() -> Any:
    try:
        import ncu_report  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise MissingDependencyError(
            "reading .ncu-rep files needs NVIDIA's ncu-report package: pip install ncu-report"
        ) from exc
    return ncu_report


_WARM: list[Any] = []


def _ncu_ready() -> Any:
    """``ncu_report``, imported and initialised once in this process before the children that read reports
    are forked: its first metric access (~90 ms: its metric tables) is then not paid again by each child.
    The initialisation reads a bundled sample report; the process never opens a user's report itself."""
    ncu = _ncu_report()

    def warm() -> None:
        from roofline.samples import path as sample

        try:
            ctx = ncu.load_report(str(sample("a10g-sgemm")))
            ctx.range_by_idx(0).action_by_idx(0).metric_names()
        except Exception:  # noqa: BLE001 - a speed-up only: each child then initialises on its own
            return
        _WARM.append(ctx)  # kept: the library's tables are dropped with its last open report


    isolate.prepare_once("ncu_report", warm)
    return ncu


@contextlib.contextmanager
def _loadable(path: Path) -> Iterator[str]:
    """A name ncu_report can open: its C API takes UTF-8 text, so a file name that is not valid
    UTF-8 is opened through an ASCII-named link, kept while the (lazily read) report is in use."""
    name = str(path)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        with tempfile.TemporaryDirectory(prefix="roofline-") as tmp:
            link = os.path.join(tmp, "report" + path.suffix.encode("ascii", "replace").decode())
            os.symlink(os.path.abspath(os.fsencode(path)), link)
            yield link
        return
    yield name


def precheck(path: Path) -> int | None:
    """The checks that need no ``ncu_report`` (magic, record structure): the file's kernel result count, None
    for a compressed report. Run before the isolated child is forked, so a damaged file costs no fork."""
    if path.name.lower().endswith(".ncu-repz"):
        head(path)  # compressed reports have no documented magic: the range check in load decides
        return None
    check_magic(path, MAGIC, "an Nsight Compute report", SUFFIXES)
    return check_structure(path)  # ncu_report itself loads a truncated report silently


_UNCHECKED = object()


def load(path: Path, name: str | None = None, results: Any = _UNCHECKED) -> Any:
    """Open a report and check that it really holds kernels (``name``: what to give ncu_report; ``results``:
    :func:`precheck`'s count when the caller ran it already)."""
    if results is _UNCHECKED:
        results = precheck(path)
    ncu = _ncu_report()
    try:
        ctx = ncu.load_report(name or str(path))
    except Exception as exc:  # the SWIG layer raises bare RuntimeErrors
        raise CorruptReportError(path, f"ncu_report could not load it: {exc}") from exc
    if ctx.num_ranges() == 0:
        raise CorruptReportError(
            path, "has the Nsight Compute magic but no readable ranges (truncated or damaged file?)"
        )
    actions = sum(ctx.range_by_idx(i).num_actions() for i in range(ctx.num_ranges()))
    if results is not None and actions < results:
        # ncu_report drops a result it cannot parse (it logs "Can't parse message") and says nothing
        raise CorruptReportError(path, f"damaged: the file holds {results} kernel results but ncu_report could "
                                       f"read only {actions}")
    if actions == 0:
        raise NoKernelsError(path, "report holds no profiled kernels")
    return ctx


_RESULT = (0, 1)  # (field 1, field 2) of the header of a profiled kernel's result


def check_structure(path: Path) -> int:
    """Check a report's record structure against the file; raise :class:`CorruptReportError` if
    it was cut short or a record header is damaged. Returns the number of kernel results it holds.

    After the 4-byte magic a report is a sequence of blocks, each a little-endian uint32 length
    and that many bytes of protobuf. The first block is a 2-byte version; then come records: a
    header (a protobuf with varint fields 1 and 2, bytes field 4 and varint field 5) and, when its
    field 5 is not 0, one payload block of field 5 - 4 bytes. The last block ends exactly at the
    end of the file. Headers with fields 1, 2 = 0, 1 are kernel results, one per kernel ncu_report
    reads. All of this holds without exception on every report of the corpus (16 reports, ncu 2019
    to 2025.2; shared/reference/ncu_report_api.md), so a file cut anywhere but between two whole
    records is caught, and a damaged header is caught before ncu_report (which aborts the process
    on some damaged headers) sees it. A cut exactly after a whole record leaves a shorter, valid
    report: only what ncu_report reads against this count can tell then. Payloads are skipped with
    seeks; only the 4-byte lengths and the headers are read.
    """
    size = path.stat().st_size
    results = 0
    with path.open("rb") as fh:
        fh.seek(len(MAGIC))
        first = _block(path, fh, size, 0)
        if first is None:
            raise CorruptReportError(path, "truncated: nothing after the magic bytes")
        index = 1
        while (header := _block(path, fh, size, index)) is not None:
            fields = _header_fields(header)
            if fields is None:
                raise CorruptReportError(path, f"damaged: block {index} (offset {fh.tell() - len(header) - 4:,}) "
                                               "is not a record header")
            results += (fields[1], fields[2]) == _RESULT
            index += 1
            if fields[5]:
                start = fh.tell()
                payload = _length(path, fh, size, index)
                if payload is None:
                    raise CorruptReportError(path, f"truncated: the last record header announces {fields[5] - 4:,} "
                                                   "bytes that the file does not hold")
                if payload + 4 != fields[5]:
                    raise CorruptReportError(path, f"damaged: block {index} at offset {start:,} holds {payload:,} "
                                                   f"bytes, its record header announced {fields[5] - 4:,}")
                fh.seek(payload, os.SEEK_CUR)
                index += 1
    return results


def _length(path: Path, fh: Any, size: int, index: int) -> int | None:
    """The next block's length (the file positioned at its content), None at the end of the file."""
    pos = fh.tell()
    prefix = fh.read(4)
    if not prefix:
        return None
    if len(prefix) < 4:
        raise CorruptReportError(path, f"truncated: {len(prefix)} stray byte(s) at offset {pos:,}, a partial block length")
    n = int.from_bytes(prefix, "little")
    if pos + 4 + n > size:
        raise CorruptReportError(path, f"truncated: block {index} at offset {pos:,} holds {n:,} bytes but the file "
                                       f"ends after {size - pos - 4:,} of them (file {size:,} bytes)")
    return n


def _block(path: Path, fh: Any, size: int, index: int) -> bytes | None:
    n = _length(path, fh, size, index)
    return None if n is None else fh.read(n)


def _header_fields(block: bytes) -> dict[int, int] | None:
    """Varint fields 1, 2 and 5 of a record header, or None if the block is not a well-formed header."""
    varints: dict[int, int] = {}
    has_body = False
    pos = 0
    try:
        while pos < len(block):
            key, pos = _varint(block, pos)
            number, wire = key >> 3, key & 7
            if wire == 0:
                value, pos = _varint(block, pos)
                varints.setdefault(number, value)
            elif wire == 2:
                n, pos = _varint(block, pos)
                pos += n
                has_body |= number == 4
            elif wire in (1, 5):
                pos += 8 if wire == 1 else 4
            else:
                return None
    except ValueError:
        return None
    if pos != len(block) or not has_body or not {1, 2, 5} <= varints.keys():
        return None
    return varints


def report_metadata(path: Path, ctx: Any) -> dict[str, Any]:
    """Tool version, capture time and command line, recovered from the file's bytes."""
    data = path.read_bytes()
    version = _VERSION_RE.search(data)
    return provenance_record(
        path,
        FORMAT,
        tool="Nsight Compute",
        tool_version=version.group(1).decode() if version else None,
        reader=f"ncu_report {ctx.get_version()}",
        capture_time=_capture_time(data),
        command_line=_command_line(data, version.start() if version else 0),
    )


def _command_line(data: bytes, near: int) -> str | None:
    window_start = max(0, near - 4096)
    for start, end in ((window_start, near + 65536), (0, len(data))):
        exe = _find_exe(data, start, min(end, len(data)))
        if exe:
            break
    else:
        return None
    lo = exe.start()
    while lo > 0 and 0x20 <= data[lo - 1] <= 0x7E:
        lo -= 1
    hi = exe.end()
    while hi < len(data) and 0x20 <= data[hi] <= 0x7E:
        hi += 1
    run = data[lo:hi]
    begin = _CMD_START_RE.search(run)  # drop printable protobuf bytes before the path
    return run[begin.start() if begin else 0 :].decode(errors="replace").strip() or None


def _find_exe(data: bytes, start: int, end: int) -> re.Match[bytes] | None:
    """``_NCU_EXE_RE.search(data, start, end)``, tried only where its literal ``ncu`` occurs: the regex's own
    scan (its first byte is a class) took ~6 ns a byte, 2-20 ms per report without a command line (a GUI
    capture); the literal's scan is ~10x faster (``re``'s literal search: faster than ``bytes.find`` here)."""
    lit = _NCU_RE.search(data, start + 1, end)  # (the separator is the byte before it)
    while lit:
        exe = _NCU_EXE_RE.match(data, lit.start() - 1, end)
        if exe:
            return exe
        lit = _NCU_RE.search(data, lit.start() + 1, end)
    return None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while pos < len(data):
        b = data[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        if not b & 0x80:
            return value, pos
        shift += 7
    raise ValueError("truncated varint")


def _capture_time(data: bytes) -> str | None:
    # After the 12-byte header, the first record is a protobuf message (tag 0x1a, length) whose
    # first field (tag 0x10) is the capture time in unix seconds.
    for start in range(12, min(len(data), 64)):
        if data[start] != 0x1A:
            continue
        try:
            _, pos = _varint(data, start + 1)
            if data[pos] != 0x10:
                continue
            seconds, _ = _varint(data, pos + 1)
        except (ValueError, IndexError):
            continue
        if 1_400_000_000 < seconds < 2_500_000_000:  # 2014 .. 2049: a plausible capture date
            return _dt.datetime.fromtimestamp(seconds, _dt.UTC).isoformat()
    return None


def _nvtx(action: Any) -> str | None:
    try:
        state = action.nvtx_state()
    except Exception:
        return None
    if state is None:
        return None
    names: list[str] = []
    for dom_id in state.domains():
        dom = state.domain_by_id(dom_id)
        stack = [dom.push_pop_range(i).name() for i in range(len(dom.push_pop_ranges()))]
        stack += [str(r) for r in dom.start_end_ranges()]
        if stack:
            prefix = "" if dom.name() in ("<default domain>", "") else f"{dom.name()}:"
            names.append(prefix + "/".join(stack))
    return ";".join(names) or None


def _metric_set(action: Any) -> str:
    ids = {s.identifier() for s in action.sections()}
    custom = "section0" in ids
    ids.discard("section0")
    if not ids:
        return "custom" if custom else "unknown"
    if {"ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis", "InstructionStats"} <= ids:
        name = "full"
    elif "SpeedOfLight_HierarchicalSingleRooflineChart" in ids:
        name = "roofline"
    elif "SpeedOfLight" in ids:
        name = "basic"
    else:
        name = "sections:" + ",".join(sorted(ids))
    return name + ("+custom" if custom else "")


def _opcode_counts(action: Any) -> dict[str, float] | None:
    m = action.metric_by_name(OPCODE_METRIC)
    if m is None:
        return None
    keys = m.correlation_ids() if m.has_correlation_ids() else None
    if keys is None:
        return None
    out: dict[str, float] = {}
    for k in range(m.num_instances()):
        out[str(keys.value(k))] = float(m.value(k))
    return out


def _rules(action: Any) -> str | None:
    """The launch's rule results (ncu's guided analysis) as compact JSON; None where it holds none."""
    try:
        results = action.rule_results_as_dicts()
    except Exception:  # noqa: BLE001 - the SWIG layer raises bare errors on a result it cannot decode: no rules, not a failure
        return None
    return rules_json(results)


def read_raw(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per launch: identity plus the relevant raw metrics; and the file's provenance. ``ncu_report`` runs in
    a forked child (:mod:`roofline.ingest.isolate`): a report that makes it abort is one typed error."""
    _ncu_ready()  # imported and initialised here, once: each child starts with it (a missing package: said here)
    results = precheck(path)
    with _loadable(path) as name:
        launches, meta = isolate.call(path, lambda: _read_raw(path, load(path, name, results)), "ncu_report")
    return launches, meta


#: a launch's metric names -> (the relevant ones, the evidence ones): the launches of a report, and the reports
#: of one ncu version and section set, share one list; kept for the process, so a batch worker's reads after
#: its first classify no name (~0.7 ms a report for ~700 names)
_WANTED: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}
_WANTED_MOST = 16  # (a list is ~700-2,000 names: ~2 MB at most)


def _wanted(names: tuple[str, ...]) -> tuple[list[str], list[str]]:
    found = _WANTED.get(names)
    if found is None:
        if len(_WANTED) >= _WANTED_MOST:
            _WANTED.clear()
        found = _WANTED[names] = ([n for n in names if is_relevant(n)], [n for n in names if is_evidence(n)])
    return found


def _value_of(ncu: Any) -> Any:
    """``value(action, name)``: ``action.metric_by_name(name).value()`` through the SWIG functions themselves.
    The wrapper's ``IMetric.value`` builds a dict of 7 lambdas per call: ~3 us of a value's ~6 (a report reads
    100-900). The same dispatch (None for ANY and UNKNOWN, a KeyError for a kind it does not know); the
    wrapper's own path where the SWIG module lacks a function."""
    native = getattr(ncu, "_ncu_report", None)
    kinds = ncu.IMetric
    try:
        by_name, kind_of = native.IAction_metric_by_name, native.IMetric_kind
        as_double, as_uint64, as_string = native.IMetric_as_double, native.IMetric_as_uint64, native.IMetric_as_string
        getters = {kinds.ValueKind_DOUBLE: as_double, kinds.ValueKind_FLOAT: as_double, kinds.ValueKind_STRING: as_string,
                   kinds.ValueKind_UINT32: as_uint64, kinds.ValueKind_UINT64: as_uint64,
                   kinds.ValueKind_ANY: None, kinds.ValueKind_UNKNOWN: None}
    except AttributeError:  # pragma: no cover - another ncu_report build
        return lambda action, name: action.metric_by_name(name).value()

    def value(action: Any, name: str) -> Any:
        m = by_name(action, name)
        if m is None:  # (the SWIG function would segfault on None; the wrapper raised AttributeError: damage)
            raise AttributeError(f"no metric {name!r}")
        get = getters[kind_of(m)]
        return None if get is None else get(m)

    return value


def _read_raw(path: Path, ctx: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    ncu = _ncu_report()
    value = _value_of(ncu)
    meta = report_metadata(path, ctx)
    launches: list[dict[str, Any]] = []
    metric_set: str | None = None
    kernel_id = 0
    for r_idx in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r_idx)
        for a_idx in range(rng.num_actions()):
            a = rng.action_by_idx(a_idx)
            wanted, why = _wanted(a.metric_names())
            raw: dict[str, Any] = {}
            for n in wanted:
                v = value(a, n)
                if v is not None:
                    raw[n] = v
            # why the kernel sits where it does (pipes, occupancy, stalls), kept apart from ``raw``, whose NaN
            # count flags an incomplete replay
            evidence_raw = {n: value(a, n) for n in why}
            if metric_set is None:
                metric_set = _metric_set(a)
            launches.append(
                {
                    "range_id": r_idx,
                    "kernel_id": kernel_id,
                    "kernel_name": a.name(ncu.IAction.NameBase_DEMANGLED),
                    "kernel_short_name": a.name(ncu.IAction.NameBase_FUNCTION),
                    "mangled_name": a.name(ncu.IAction.NameBase_MANGLED),
                    "nvtx_range": _nvtx(a),
                    "metric_set": metric_set,
                    "raw": raw,
                    "opcode_counts": _opcode_counts(a),
                    "evidence": evidence_raw,
                    "rules": _rules(a),
                }
            )
            kernel_id += 1
    return launches, meta


def read(path: str | Path) -> pd.DataFrame:
    """The canonical kernels frame of one report."""
    path = Path(path)
    launches, meta = read_raw(path)
    return build_kernels_frame(path, FORMAT, launches, meta)


def read_metrics(path: str | Path) -> pd.DataFrame:
    """Every raw metric of every launch, with value and unit (lossless; instanced values expanded)."""
    path = Path(path)
    _ncu_ready()
    results = precheck(path)
    with _loadable(path) as name:
        rows, meta = isolate.call(path, lambda: _read_metrics(path, load(path, name, results)), "ncu_report")
    frame = pd.DataFrame(
        rows,
        columns=["source_file", "range_id", "kernel_id", "metric", "instance", "value", "value_text", "unit"],
    )
    return set_provenance(conform_metrics(frame), [meta])


def _read_metrics(path: Path, ctx: Any) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    meta = report_metadata(path, ctx)
    rows: list[tuple[Any, ...]] = []
    kernel_id = 0
    for r_idx in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r_idx)
        for a_idx in range(rng.num_actions()):
            a = rng.action_by_idx(a_idx)
            for n in a.metric_names():
                m = a.metric_by_name(n)
                unit = m.unit()
                n_inst = m.num_instances()
                if n_inst > 1 or (n_inst == 1 and m.has_correlation_ids()):
                    keys = m.correlation_ids() if m.has_correlation_ids() else None
                    for k in range(n_inst):
                        key = str(keys.value(k)) if keys is not None else str(k)
                        rows.append(_row(path_text(path), r_idx, kernel_id, n, key, m.value(k), unit))
                else:
                    rows.append(_row(path_text(path), r_idx, kernel_id, n, None, m.value(), unit))
            kernel_id += 1
    return rows, meta


def _row(src: str, r: int, k: int, name: str, inst: str | None, v: Any, unit: str) -> tuple[Any, ...]:
    if isinstance(v, str):
        return (src, r, k, name, inst, math.nan, v, unit)
    if v is None:
        return (src, r, k, name, inst, math.nan, None, unit)
    return (src, r, k, name, inst, float(v), None, unit)


__all__ = ["FORMAT", "SUFFIXES", "__version__", "load", "read", "read_metrics", "read_raw"]
