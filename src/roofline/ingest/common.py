"""Pieces every reader shares: input checks, provenance records, the kernels-frame builder."""

from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path
from typing import Any

import pandas as pd

from roofline.errors import (
    EmptyInputError,
    FormatMismatchError,
    InputNotFoundError,
    LfsPointerError,
)
from roofline.hardware.specs import fill_spec_peaks
from roofline.metrics.derive import compute_capability, derive, nan_inputs
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
    if not path.exists():
        raise InputNotFoundError(path)
    if path.is_file() and path.stat().st_size == 0:
        raise EmptyInputError(path)


def head(path: Path, n: int = 4096) -> bytes:
    check_exists(path)
    with path.open("rb") as fh:
        data = fh.read(n)
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
    from roofline import __version__

    rec: dict[str, Any] = {"source_file": str(path), "format": fmt}
    rec.update(fields)
    rec["roofline_version"] = __version__
    rec["ingested_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
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
    """Turn readers' launches (identity + raw metrics) into the canonical kernels frame."""
    rows: list[dict[str, Any]] = []
    for launch in launches:
        raw = launch["raw"]
        cc = compute_capability(raw) or launch.get("cc")
        row: dict[str, Any] = {
            "source_file": str(path),
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
        _flag(row, raw)
        rows.append(row)
    frame = fill_spec_peaks(kernels_from_records(rows))
    return set_provenance(frame, [meta])


def _flag(row: dict[str, Any], raw: dict[str, Any]) -> None:
    """Mark launches whose replay did not complete instead of dropping them."""
    n_nan = nan_inputs(raw)
    flags: list[str] = []
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


def json_bytes(path: Path) -> bytes:
    """A JSON file's bytes, gunzipped when gzip; a damaged stream is a typed error naming the file."""
    import gzip
    import zlib

    from roofline.errors import CorruptReportError

    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as exc:
            raise CorruptReportError(path, f"gzip stream is damaged or truncated ({exc})") from None
    return raw


def load_json(path: Path) -> Any:
    """Parse a (possibly gzipped) JSON file with orjson; damaged input is a typed error naming it."""
    import orjson

    from roofline.errors import CorruptReportError

    try:
        return orjson.loads(json_bytes(path))
    except orjson.JSONDecodeError as exc:
        raise CorruptReportError(path, f"not valid JSON ({exc})") from None
