"""The unit of work of a batch: a chunk of inputs in, their rows on disk as one part per table, small
summaries back.

:func:`process_chunk` is what a local worker process or a Dask task runs. It writes its own parts (so results
stream to disk and the driver holds only summaries, whatever the number of inputs) and decides by itself,
from the state the driver sent with each input, whether the input was already done, which spreads the
hashing of inputs over the workers too.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import resource
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.compute as pc

from roofline import pipeline
from roofline._version import __version__
from roofline.batch import files
from roofline.batch.parts import PartWriter, environment_kind
from roofline.errors import InputError, RooflineError, path_text
from roofline.schema import get_provenance

#: provenance fields that change from one run to the next; left out so re-runs give equal datasets
_WALL_CLOCK_FIELDS = ("ingested_at",)
#: error kinds a re-run reads again without --retry-errors: the environment failed (a full disk, an I/O
#: error) or the dataset could not be written, not the input
RETRIED_KINDS = ("environment", "write-error")
#: a Dask task stops when the driver's heartbeat (the lock file's mtime) is older than this
HEARTBEAT_STALE_S = 120.0


@dataclass(frozen=True)
class Options(pipeline.Options):
    """What every file of one batch is processed with: the pipeline's options (plain values, so they travel
    to workers; a peaks file as an absolute path, see :func:`~roofline.pipeline.portable_peaks`) and whether
    inputs that failed before are read again (with unchanged content)."""

    retry_errors: bool = False


@dataclass(frozen=True)
class Item:
    """One input of a chunk: its path, run label and what the dataset holds of it (``(sha256, "ok"|"failed",
    error_kind)`` of its live row, None if nothing)."""

    path: str
    run: str
    previous: tuple[str, str, str | None] | None = None


@dataclass(frozen=True)
class Chunk:
    """Inputs processed together and written as one part per table, in the batch's generation ``gen``.
    ``token``: the batch's id in the dataset's lock file; a task that finds another (or a stale heartbeat)
    stops, so a Dask cluster does not go on writing for a driver that is gone (empty: no check)."""

    root: str
    gen: int
    opts: Options
    items: tuple[Item, ...]
    token: str = ""


def file_id(path: Path, run: str) -> str:
    """Stable id of an input: its absolute path and run label (the content hash says if it changed).

    Hashes the path's bytes, so a file name that is not valid UTF-8 has an id too (the same id as
    before for every UTF-8 name)."""
    return hashlib.sha256(run.encode("utf-8", "surrogateescape") + b"\0" + os.fsencode(path)).hexdigest()[:20]


def content_sha256(path: Path) -> tuple[str, int]:
    mode = os.stat(path).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # a FIFO would block the worker forever
        raise OSError(errno.EINVAL, "not a regular file or folder (a FIFO, socket or device)")
    h = hashlib.sha256()
    size = 0
    # a folder input (a rocprof-compute workload) is its files: names and contents, in name order
    # (is_file: regular files only, so a FIFO inside a folder is never opened)
    files_ = sorted(p for p in path.rglob("*") if p.is_file()) if stat.S_ISDIR(mode) else [path]
    for f in files_:
        if f is not path:
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                size += len(chunk)
    return h.hexdigest(), size


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def process_chunk(chunk: Chunk, on_start: Callable[..., None] | None = None) -> tuple[list[dict[str, Any]], float]:
    """Every input of the chunk, in order, then one part per table. Returns each input's summary
    (``{"path", "file_id", "run", "status": "ok"|"failed"|"skipped", "kernels", "format", "error",
    "max_rss_mb"}``) and the seconds the chunk took (the driver sizes the next chunks from it).
    ``on_start(i)`` is called before the i-th input (the local pool times each input with it), then
    ``on_start(i, sha256, size)`` once its content is hashed, and ``on_start(len(chunk.items))`` before the
    parts are written.
    A bad input never raises; a dataset that vanished raises :class:`~roofline.batch.files.DatasetGoneError`."""
    start = time.perf_counter()
    root = Path(chunk.root)
    writer = PartWriter(root, chunk.gen)
    out: list[dict[str, Any]] = []
    for i, item in enumerate(chunk.items):
        if chunk.token and _batch_gone(root, chunk.token):
            return [], time.perf_counter() - start  # its driver is gone: nothing more is written for it
        if on_start is not None:
            on_start(i)
        out.append(_process(item, chunk, writer, (lambda d, n, i=i: on_start(i, d, n)) if on_start else None))
        if writer.full:
            writer.flush()
    if chunk.token and _batch_gone(root, chunk.token):
        return [], time.perf_counter() - start
    if on_start is not None:
        on_start(len(chunk.items))  # writing the parts: no input is in progress
    writer.flush()
    rss = max_rss_mb()
    for res in out:
        res["max_rss_mb"] = rss
    return out, time.perf_counter() - start


def _batch_gone(root: Path, token: str) -> bool:
    return not files.batch_alive(root, token) or files.heartbeat_age(root) > HEARTBEAT_STALE_S


def skip_reason(previous: tuple[str, str, str | None] | None, digest: str, retry_errors: bool) -> str | None:
    """Why an input with this content need not be read again ("done before", "failed before"), or None."""
    if not previous or not digest or previous[0] != digest:
        return None
    if previous[1] == "ok":
        return "done before"
    if retry_errors or previous[2] in RETRIED_KINDS:
        return None
    return "failed before"


def _process(item: Item, chunk: Chunk, writer: PartWriter,
             on_hashed: Callable[[str, int], None] | None = None) -> dict[str, Any]:
    src = Path(item.path)
    shown = path_text(item.path)  # the path as stored and printed: non-UTF-8 bytes escaped
    fid = file_id(src, item.run)
    summary: dict[str, Any] = {"path": shown, "file_id": fid, "run": item.run, "kernels": 0, "format": None,
                               "error": None}
    cause: OSError | None = None
    try:
        digest, size = content_sha256(src)
    except OSError as exc:
        digest, size, cause = "", None, exc
        summary["error"] = f"{shown}: cannot be read: {exc.strerror or exc}"
    if on_hashed is not None and digest:
        on_hashed(digest, size)
    skip = skip_reason(item.previous, digest, chunk.opts.retry_errors)
    if skip:
        return summary | {"status": "skipped", "format": skip}
    fmt = "unknown"
    try:
        if summary["error"]:
            raise _Unreadable(summary["error"]) from cause
        from roofline.ingest.registry import sniff

        fmt = sniff(src)
        kernels, result = pipeline.analyse_file(src, chunk.opts)
        record = _runs_record(shown, digest, size, fmt, kernels, chunk.opts)
        summary |= {"status": "ok", "format": fmt, "kernels": len(kernels)}
        writer.add_ok(fid, item.run, kernels, result, record, summary)  # its rows as Arrow: may fail, below
    except Exception as exc:
        if os.environ.get("ROOFLINE_DEBUG") and not isinstance(exc, RooflineError):
            raise
        summary |= {"status": "failed", "format": fmt, "kernels": 0, "error": error_message(shown, exc)}
        writer.add_error(fid, item.run, error_record(shown, digest, size, fmt, exc), summary)
    return summary


def _runs_record(shown: str, digest: str, size: int | None, fmt: str, kernels: Any, opts: Options) -> dict[str, Any]:
    provenance = [{k: v for k, v in rec.items() if k not in _WALL_CLOCK_FIELDS} for rec in get_provenance(kernels)]
    devices = sorted(_names(kernels["device_name"]))
    return {"source_file": shown, "content_sha256": digest, "size_bytes": size, "format": fmt,
            "kernels": len(kernels), "device_names": ";".join(devices), "peaks": opts.peaks,
            "provenance_json": json.dumps(provenance, sort_keys=True, default=str),
            "roofline_version": __version__}


def _names(column: Any) -> set[str]:
    """The distinct non-missing values of a column, as text (an Arrow string column's from its distinct values:
    ~0.2 ms less an input than dropping and converting a Series)."""
    arr = column.array
    if isinstance(arr, pd.arrays.ArrowStringArray):
        return {v for v in pc.unique(arr.__arrow_array__()).to_pylist() if v is not None}
    return set(column.dropna().astype(str))


class _Unreadable(RooflineError):
    pass


def error_message(path: str, exc: BaseException) -> str:
    text = path_text(str(exc) or type(exc).__name__)  # Arrow-safe, whatever the exception quotes
    return text if isinstance(exc, RooflineError) and path in text else f"{path}: {text}"


def error_kind(exc: BaseException) -> str:
    """The ``error_kind`` of a failed input: the input error's own kind, "environment" for a failure of the
    machine (ENOSPC, EIO: read again next run), "write-error" for a part that could not be written."""
    env = environment_kind(exc)
    if env:
        return env
    return (exc.kind if isinstance(exc, InputError) else "read-error" if isinstance(exc, RooflineError)
            else "write-error" if isinstance(exc, OSError) else "bug")


def error_record(path: str, digest: str, size: int | None, fmt: str, exc: BaseException,
                 kind: str | None = None, message: str | None = None) -> dict[str, Any]:
    return {"source_file": path, "content_sha256": digest, "size_bytes": size, "format": fmt,
            "error_type": type(exc).__name__, "error_kind": kind or error_kind(exc),
            "message": message or error_message(path, exc)}
