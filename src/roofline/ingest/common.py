"""Pieces every reader shares: input checks, provenance records, the kernels-frame builder."""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import math
import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from roofline.errors import (
    CorruptReportError,
    EmptyInputError,
    FormatMismatchError,
    InputNotFoundError,
    LfsPointerError,
    UnknownFormatError,
    UnreadableInputError,
    path_text,
)
from roofline.metrics.derive import compute_capability, derive, nan_inputs
from roofline.metrics.evidence import evidence
from roofline.schema import (
    QUANTITY_COLUMNS,
    SOURCED_COLUMNS,
    UNAVAILABLE,
    kernels_from_records,
    set_provenance,
    source_column,
)

LFS_PREFIX = b"version https://git-lfs.github.com/spec/"


def check_exists(path: Path) -> None:
    """A readable, non-empty regular file, or a typed error saying which of these it is not."""
    try:
        st = path.stat()
    except OSError:
        if path.is_symlink():
            raise InputNotFoundError(path) from None  # a dangling symlink: nothing to read
        if path.exists():  # e.g. a symlink loop (ELOOP) or a too-long name
            raise UnreadableInputError(path, "cannot be read (its path cannot be resolved)") from None
        raise InputNotFoundError(path) from None
    if stat.S_ISDIR(st.st_mode):
        raise UnknownFormatError(path, "is a directory, not a profile file")
    if not stat.S_ISREG(st.st_mode):  # reading a FIFO would block forever, a device never end
        raise UnreadableInputError(path, "is not a regular file (a FIFO, socket or device); roofline reads files")
    if not os.access(path, os.R_OK):
        raise UnreadableInputError(path, "cannot be read: permission denied")
    if st.st_size == 0:
        raise EmptyInputError(path)


def head(path: Path, n: int = 4096) -> bytes:
    check_exists(path)
    try:
        with path.open("rb") as fh:
            data = fh.read(n)
    except OSError as exc:
        raise UnreadableInputError(path, f"cannot be read: {exc.strerror or exc}") from None
    if data.startswith(LFS_PREFIX):
        raise LfsPointerError(path)
    return data


def describe_content(data: bytes) -> str:
    """A few words on what some bytes look like, for error messages."""
    if data[:2] == b"\x1f\x8b":
        return "a gzip file"
    text = data.lstrip()
    if text[:1] in (b"{", b"["):
        return "JSON"
    if b'"ID","Process ID"' in data or data.count(b",") > 5:
        return "CSV text"
    if data.startswith(b"PAR1"):
        return "a Parquet file"
    try:
        data.decode("utf-8")
        return "text"
    except UnicodeDecodeError:
        return "unrecognised binary data"


def check_magic(path: Path, magic: bytes, what: str, suffixes: tuple[str, ...]) -> None:
    data = head(path, 4096)
    if not data.startswith(magic):
        raise FormatMismatchError(
            path,
            f"not {what}: it lacks the {magic!r} magic bytes; its content looks like "
            f"{describe_content(data)}",
        )


def provenance_record(path: Path, fmt: str, **fields: Any) -> dict[str, Any]:
    from roofline._version import __version__

    rec: dict[str, Any] = {"source_file": path_text(path), "format": fmt}
    rec.update(fields)
    rec["roofline_version"] = __version__
    rec["ingested_at"] = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    return rec


def _int_or_none(v: Any) -> int | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else int(f)


def build_kernels_frame(
    path: Path, fmt: str, launches: list[dict[str, Any]], meta: dict[str, Any]
) -> pd.DataFrame:
    """Turn readers' launches (identity + raw metrics) into the canonical kernels frame: what the report
    records, its counter-derived peaks included (the spec table's roofs are the roofs stage's)."""
    rows: list[dict[str, Any]] = []
    for launch in launches:
        raw = launch["raw"]
        cc = compute_capability(raw) or launch.get("cc")
        row: dict[str, Any] = {
            "source_file": path_text(path),
            "format": fmt,
            "range_id": launch.get("range_id"),
            "nvtx_range": launch.get("nvtx_range"),
            "kernel_id": launch["kernel_id"],
            "kernel_name": launch.get("kernel_name"),
            "kernel_short_name": launch.get("kernel_short_name"),
            "mangled_name": launch.get("mangled_name"),
            "device_name": raw.get("device__attribute_display_name") or launch.get("device_name"),
            "compute_capability": f"{cc[0]}.{cc[1]}" if cc else None,
            "sm_count": _int_or_none(raw.get("device__attribute_multiprocessor_count")),
            "metric_set": launch.get("metric_set"),
        }
        for axis in "xyz":
            row[f"grid_{axis}"] = _int_or_none(raw.get(f"launch__grid_dim_{axis}", launch.get(f"grid_{axis}")))
            row[f"block_{axis}"] = _int_or_none(raw.get(f"launch__block_dim_{axis}", launch.get(f"block_{axis}")))
        row.update(derive(raw, launch.get("opcode_counts"), cc))
        if "evidence" in launch:  # ncu reports: pipes, occupancy, stalls and the report's own rule results
            row.update(evidence(launch["evidence"]))
            row["ncu_rules_json"] = launch.get("rules")
        _flag(row, raw, launch.get("flags"))
        rows.append(row)
    return set_provenance(kernels_from_records(rows), [meta])


def _flag(row: dict[str, Any], raw: dict[str, Any], reader_flag: str | None = None) -> None:
    """Mark launches whose replay did not complete instead of dropping them (plus a reader's own flag)."""
    n_nan = nan_inputs(raw)
    flags: list[str] = [reader_flag] if reader_flag else []
    if n_nan:
        flags.append(f"replay incomplete: {n_nan} of {len(raw)} metrics read are NaN")
        for q in SOURCED_COLUMNS:
            v = row.get(q)
            src = str(row.get(source_column(q), "")).removeprefix(f"{UNAVAILABLE}: ")
            if isinstance(v, float) and math.isnan(v):
                row[source_column(q)] = f"{UNAVAILABLE}: NaN in the report (replay did not complete); {src}"
    for q in QUANTITY_COLUMNS:
        v = row.get(q)
        if isinstance(v, float) and v < 0:
            flags.append(f"negative {q}")
    row["replay_ok"] = not n_nan
    row["flags"] = "; ".join(flags) or None


#: environment variables bounding what one gzip input may expand to (bytes; and x its compressed size)
MAX_DECOMPRESSED_ENV = "ROOFLINE_MAX_DECOMPRESSED_BYTES"
MAX_RATIO_ENV = "ROOFLINE_MAX_GZIP_RATIO"
#: 4 GiB: well above the largest real trace seen (56 MB decompressed), below what a machine can hold parsed
DEFAULT_MAX_DECOMPRESSED = 4 << 30
#: real traces expand 3-31x (fixtures: 33 gzip traces); deflate can reach ~1032x: past 64 MiB, 100x is a bomb
DEFAULT_MAX_RATIO = 100
_RATIO_FLOOR = 64 << 20
#: compressed bytes read at a time; decompressed bytes returned by one call at most
_CHUNK = 64 << 20
_MAX_PIECE = 512 << 20


def _env_number(name: str, default: int) -> int:
    from roofline.errors import RooflineError

    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = int(float(text))
    except (ValueError, OverflowError):  # "abc", "nan", "inf"
        raise RooflineError(f"{name}={text!r}: not a number") from None
    if value <= 0:
        raise RooflineError(f"{name}={text!r}: must be positive")
    return value


def decompressed_limit(compressed_size: int) -> int:
    """Most bytes a gzip input of this size may expand to: an absolute cap and a ratio cap, both configurable."""
    cap = _env_number(MAX_DECOMPRESSED_ENV, DEFAULT_MAX_DECOMPRESSED)
    ratio = _env_number(MAX_RATIO_ENV, DEFAULT_MAX_RATIO)
    return min(cap, max(_RATIO_FLOOR, ratio * compressed_size))


def gunzip_capped(path: Path, limit: int | None = None) -> bytes:
    """A gzip file's content, decompressed and refused past ``limit`` bytes.

    Each call's output is bounded (``max_length``), so a stream is never expanded whole before the
    check (a 2 MB file can expand to 2 GB): memory stays at most ``limit`` plus one compressed chunk.
    A trace up to ``_CHUNK`` compressed (every real one seen) is one call whose output is returned
    as is: collecting 1 MiB pieces into a growing buffer cost a third of the gunzip (0.145 s against
    0.10 s for the 216k-event trace). Damaged streams are a typed error naming the file.
    """
    parts = list(gunzip_pieces(path, limit))
    return parts[0] if len(parts) == 1 else b"".join(parts)


def gunzip_pieces(path: Path, limit: int | None = None, piece: int = 0) -> Iterator[bytes]:
    """:func:`gunzip_capped`'s content as pieces of at most ``piece`` bytes (0: as large as allowed), in order;
    the same checks, raised when the stream gets there (a truncated stream at its end)."""
    zlib = _zlib()
    from roofline.errors import InputTooLargeError

    size = path.stat().st_size
    limit = decompressed_limit(size) if limit is None else limit
    most = min(piece or _MAX_PIECE, _MAX_PIECE)
    # small output pieces: small reads too, or each call would copy the rest of a 64 MB read (its
    # unconsumed_tail) again: 1.12 s against 0.25 s for a 63 MB gzip in 4 MB pieces
    read = max(piece // 16, 64 << 10) if piece else _CHUNK
    total = 0
    with path.open("rb") as fh:
        d = zlib.decompressobj(wbits=31)  # gzip header and trailer (CRC, size) checked
        try:
            while True:
                if d.unconsumed_tail:
                    data = d.unconsumed_tail
                elif d.eof and d.unused_data:
                    data = d.unused_data
                else:
                    data = fh.read(read)
                    if not data:
                        break
                if d.eof:  # more after a member: another member, or zero padding (as gzip.decompress)
                    if not data.strip(b"\0"):
                        d = _Done(d)
                        continue
                    d = zlib.decompressobj(wbits=31)
                out = d.decompress(data, min(most, limit + 1 - total))
                total += len(out)
                if total > limit:
                    raise InputTooLargeError(
                        path, f"gzip stream expands past {limit:,} bytes ({size:,} compressed): refused as a "
                              f"likely decompression bomb; raise {MAX_DECOMPRESSED_ENV} or {MAX_RATIO_ENV} "
                              "if it is a real profile")
                if out:
                    yield out
        except zlib.error as exc:
            raise CorruptReportError(path, f"gzip stream is damaged ({exc})") from None
        if not d.eof:
            raise CorruptReportError(path, "gzip stream is truncated (ends before its end-of-stream marker)")


def _zlib() -> Any:
    """ISA-L's inflate where installed (``isal``, a dependency): the same API as ``zlib``, about twice as fast
    (0.05 s against 0.10 s for the 216k-event trace's 54 MB); ``zlib`` otherwise."""
    try:
        from isal import isal_zlib

        return isal_zlib
    except ImportError:  # a platform without an isal wheel
        import zlib

        return zlib


class _Done:
    """A finished member followed by zero padding: nothing more to decompress."""

    def __init__(self, _prev: object) -> None:
        self.eof, self.unconsumed_tail, self.unused_data = True, b"", b""


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off for a read that makes hundreds of thousands of small objects (decoded events,
    fetched rows) and frees none of them in cycles: its passes only slow the read. Restored on any exit."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check_size(path: Path) -> None:
    """An input read whole (JSON, CSV, protobuf) over the absolute cap (``ROOFLINE_MAX_DECOMPRESSED_BYTES``,
    4 GiB by default) is refused before it is read: parsed, it would take several times its size."""
    from roofline.errors import InputTooLargeError

    size = path.stat().st_size
    cap = _env_number(MAX_DECOMPRESSED_ENV, DEFAULT_MAX_DECOMPRESSED)
    if size > cap:
        raise InputTooLargeError(path, f"{size:,} bytes, over the {cap:,}-byte limit ({MAX_DECOMPRESSED_ENV})")


def json_bytes(path: Path) -> bytes | bytearray:
    """A JSON file's bytes, gunzipped (bounded, see :func:`gunzip_capped`) when gzip; typed errors name the file."""
    with path.open("rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return gunzip_capped(path)
    check_size(path)
    return path.read_bytes()


def load_json(path: Path) -> Any:
    """Parse a (possibly gzipped) JSON file with orjson; damaged input is a typed error naming it."""
    import orjson

    from roofline.errors import CorruptReportError

    try:
        return orjson.loads(json_bytes(path))
    except (orjson.JSONDecodeError, RecursionError, UnicodeDecodeError) as exc:
        # orjson rejects invalid UTF-8 and nesting past 1024 levels; both are damaged input
        raise CorruptReportError(path, f"not valid JSON ({type(exc).__name__}: {exc})") from None


#: SQLite inputs: SQLite VM steps one whole read may take, per byte of the file (the nsys exports of the
#: fixtures take under 0.3; a table scan is a few steps per row) and at least (a small file); and seconds
SQLITE_STEPS_PER_BYTE = 200
SQLITE_MIN_STEPS = 50_000_000
SQLITE_SECONDS_ENV = "ROOFLINE_SQLITE_MAX_SECONDS"
#: default seconds: 10 plus 2 per MB (a 2.7 MB export reads in 0.3-0.6 s on a loaded 2-core machine)
SQLITE_MIN_SECONDS, SQLITE_SECONDS_PER_MB = 10.0, 2.0
#: largest string or blob a query may make (SQLite's LIMIT_LENGTH; its default is 1e9)
SQLITE_MAX_VALUE_BYTES = 256 << 20
_SQLITE_CHECK_EVERY = 1000  # VM steps between two budget checks


class SqliteBudget:
    """A progress handler bounding every query of one connection: steps and wall-clock seconds for the whole
    read, both scaled by the file's size. Past either, the running query is interrupted and ``exceeded``
    says which (the reader turns it into an :class:`~roofline.errors.InputTooLargeError` naming the file)."""

    def __init__(self, size: int) -> None:
        import time

        self.steps = max(SQLITE_MIN_STEPS, SQLITE_STEPS_PER_BYTE * size)
        self.steps_left = self.steps // _SQLITE_CHECK_EVERY
        env = os.environ.get(SQLITE_SECONDS_ENV)
        self.seconds = (_env_float(SQLITE_SECONDS_ENV, env) if env
                        else SQLITE_MIN_SECONDS + SQLITE_SECONDS_PER_MB * size / 1e6)
        self.deadline = time.monotonic() + self.seconds
        self.exceeded: str | None = None
        self._clock = time.monotonic

    def __call__(self) -> int:
        self.steps_left -= 1
        if self.steps_left < 0:
            self.exceeded = (f"its queries ran past {self.steps:,} SQLite steps ({SQLITE_STEPS_PER_BYTE} per byte "
                             "of the file)")
            return 1
        if self._clock() > self.deadline:
            self.exceeded = f"its queries ran past {self.seconds:.0f} s ({SQLITE_SECONDS_ENV})"
            return 1
        return 0


class BoundedConnection(sqlite3.Connection):
    """A connection that carries its :class:`SqliteBudget` (to tell an interrupted query from a damaged file)."""

    budget: SqliteBudget | None = None


def sqlite_tables(con: sqlite3.Connection) -> set[str]:
    """The ordinary tables of a database: never a view (a view is a query the file's author wrote: a cross
    join or a recursive CTE in one ran for ever or took GBs), a virtual table, or a table with generated
    columns (computed on read). Readers read only these."""
    out = set()
    for name, sql in con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'"):
        text = str(sql or "")
        if name is None or _VIRTUAL.match(text):
            continue
        if _MAYBE_GENERATED.search(text) and _generated(con, str(name)):  # the PRAGMA only where it may be
            continue
        out.add(str(name))
    return out


_VIRTUAL = re.compile(r"\s*CREATE\s+VIRTUAL\b", re.IGNORECASE)
_MAYBE_GENERATED = re.compile(r"\bGENERATED\b|\bAS\s*\(", re.IGNORECASE)


def _generated(con: sqlite3.Connection, table: str) -> bool:
    """Whether a table has a generated column (``table_xinfo``'s hidden 2 or 3)."""
    return any(r[6] in (2, 3) for r in con.execute(f'PRAGMA table_xinfo("{table.replace(chr(34), chr(34) * 2)}")'))


def sqlite_error(path: Path, con: sqlite3.Connection, exc: sqlite3.Error, doing: str) -> Exception:
    """The typed error for an SQLite error while reading ``path``: a query stopped by its budget or SQLite's
    length limit is :class:`~roofline.errors.InputTooLargeError`, anything else a damaged file."""
    from roofline.errors import InputTooLargeError

    budget = getattr(con, "budget", None)
    if budget is not None and budget.exceeded:
        return InputTooLargeError(path, f"{doing}: {budget.exceeded}; refused as hostile or damaged")
    if "too big" in str(exc):
        return InputTooLargeError(path, f"{doing}: a value over {SQLITE_MAX_VALUE_BYTES:,} bytes ({exc})")
    return CorruptReportError(path, f"{doing} ({exc})")


def _env_float(name: str, text: str) -> float:
    from roofline.errors import RooflineError

    try:
        value = float(text)
    except ValueError:
        raise RooflineError(f"{name}={text!r}: not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise RooflineError(f"{name}={text!r}: must be a positive number")
    return value


def open_sqlite(path: Path) -> Any:
    """An SQLite profile (nsys export, rocpd) opened read-only, immutable and bounded.

    ``mode=ro&immutable=1``: nothing is written or locked, no ``-wal``/``-shm`` file is made beside it, and a
    WAL-mode database in a read-only folder opens (what a ``-wal`` file beside it holds is not read: an
    export is complete when its tool closes it). ``query_only`` and ``trusted_schema=OFF``: no writes, no
    side-effecting functions from the schema. Every query runs under a :class:`SqliteBudget` (steps and
    seconds) and SQLite's string/blob length limit; readers read only ordinary tables (:func:`sqlite_tables`).
    Not readable SQLite is a typed error naming the file."""
    import sqlite3

    check_exists(path)
    size = path.stat().st_size
    try:
        con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True, factory=BoundedConnection)
        con.execute("PRAGMA query_only = ON")
        con.execute("PRAGMA trusted_schema = OFF")  # no functions with side effects from views/triggers
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_VALUE_BYTES)
        con.budget = SqliteBudget(size)
        con.set_progress_handler(con.budget, _SQLITE_CHECK_EVERY)
        con.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise CorruptReportError(path, f"not a readable SQLite database ({exc})") from None
    return con
