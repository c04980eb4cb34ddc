"""The unit of work of a batch: one input file in, its rows on disk, a small summary back.

:func:`process_file` is what a process pool or a Dask worker runs. It writes its own Parquet
parts (so results stream to disk and the driver holds only summaries, whatever the number of
files) and decides by itself whether the input was already done, which spreads the hashing of
inputs over the workers too.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import resource
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline import pipeline
from roofline._version import __version__
from roofline.batch import dataset as dset
from roofline.errors import InputError, RooflineError, path_text
from roofline.schema import get_provenance

#: provenance fields that change from one run to the next; left out so re-runs give equal datasets
_WALL_CLOCK_FIELDS = ("ingested_at",)


@dataclass(frozen=True)
class Options(pipeline.Options):
    """What every file of one batch is processed with: the pipeline's options (plain values, so they travel
    to workers; a peaks file as an absolute path, see :func:`~roofline.pipeline.portable_peaks`) and whether
    inputs that failed before are read again (with unchanged content)."""

    retry_errors: bool = False


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
    files = sorted(p for p in path.rglob("*") if p.is_file()) if stat.S_ISDIR(mode) else [path]
    for f in files:
        if f is not path:
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                size += len(chunk)
    return h.hexdigest(), size


def _previous(root: Path, fid: str) -> tuple[str, str] | None:
    try:
        digest, status = dset.state_path(root, fid).read_text().split()
        return digest, status
    except (OSError, ValueError):
        return None


def process_file(path: str, root: str, run: str, opts: Options) -> dict[str, Any]:
    """Ingest and analyse one input into the dataset at ``root``; never raises for a bad input.

    Returns ``{"path", "file_id", "status": "ok"|"failed"|"skipped", "kernels", "format", "error",
    "max_rss_mb"}`` (the last: this worker process's peak memory so far).
    """
    out = _process(path, root, run, opts)
    out["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def process_chunk(tasks: list[tuple[str, str, str, Options]]) -> tuple[list[dict[str, Any]], float]:
    """:func:`process_file` over a chunk of inputs, in order: one Dask task for many small files, so
    the scheduler round trip is paid per chunk, not per file. Returns the summaries and the seconds
    the chunk took (the driver sizes the next chunks from it)."""
    import time

    start = time.perf_counter()
    return [process_file(*t) for t in tasks], time.perf_counter() - start


def _process(path: str, root: str, run: str, opts: Options) -> dict[str, Any]:
    src, out = Path(path), Path(root)
    shown = path_text(path)  # the path as stored and printed: non-UTF-8 bytes escaped
    fid = file_id(src, run)
    summary: dict[str, Any] = {"path": shown, "file_id": fid, "run": run, "kernels": 0, "format": None, "error": None}
    try:
        digest, size = content_sha256(src)
    except OSError as exc:
        digest, size = "", None
        summary["error"] = f"{shown}: cannot be read: {exc.strerror or exc}"
    previous = _previous(out, fid)
    if previous and digest and previous[0] == digest and (previous[1] == "ok" or not opts.retry_errors):
        return summary | {"status": "skipped", "format": "done before" if previous[1] == "ok" else "failed before"}
    fmt = "unknown"
    try:
        if summary["error"]:
            raise _Unreadable(summary["error"])
        from roofline.ingest.registry import sniff

        fmt = sniff(src)
        kernels, result = pipeline.analyse_file(src, opts)
        # the writes too: a part that cannot be written (an unwritable partition folder, a full
        # disk) fails this input, recorded in the errors table, and the batch goes on
        _write_ok(out, run, fid, shown, digest, size, fmt, kernels, result, opts)
    except Exception as exc:  # noqa: BLE001 - a batch never loses an input: it goes to the errors table
        message = _message(shown, exc)
        try:
            _record_failure(out, run, fid, shown, digest, size, fmt, exc)
        except Exception as again:  # noqa: BLE001 - not even the error row can be written: say so
            if os.environ.get("ROOFLINE_DEBUG") and again is exc:
                raise
            message += f" (and its error row could not be written: {type(again).__name__}: {again})"
        return summary | {"status": "failed", "format": fmt, "error": message}
    return summary | {"status": "ok", "format": fmt, "kernels": len(kernels)}


def _write_ok(out: Path, run: str, fid: str, shown: str, digest: str, size: int | None, fmt: str,
              kernels: Any, result: Any, opts: Options) -> None:
    import pandas as pd

    provenance = [{k: v for k, v in rec.items() if k not in _WALL_CLOCK_FIELDS} for rec in get_provenance(kernels)]
    dset.write_part(out, "kernels", run, fid, kernels)
    dset.write_part(out, "roofline", run, fid, result)
    devices = sorted(set(kernels["device_name"].dropna().astype(str)))
    record = {"source_file": shown, "content_sha256": digest, "size_bytes": size, "format": fmt,
              "kernels": len(kernels), "device_names": ";".join(devices), "peaks": opts.peaks,
              "provenance_json": json.dumps(provenance, sort_keys=True, default=str),
              "roofline_version": __version__}
    dset.remove_parts(out, run, fid, ("errors",))
    dset.write_part(out, "runs", run, fid, pd.DataFrame([record]))  # last: the input now counts as read
    dset.atomic_write_bytes(dset.state_path(out, fid), f"{digest} ok".encode())


class _Unreadable(RooflineError):
    pass


def _message(path: str, exc: BaseException) -> str:
    text = path_text(str(exc) or type(exc).__name__)  # Arrow-safe, whatever the exception quotes
    return text if isinstance(exc, RooflineError) and path in text else f"{path}: {text}"


def _record_failure(out: Path, run: str, fid: str, path: str, digest: str, size: int | None, fmt: str,
                    exc: BaseException) -> None:
    import pandas as pd

    kind = (exc.kind if isinstance(exc, InputError) else "read-error" if isinstance(exc, RooflineError)
            else "write-error" if isinstance(exc, OSError) else "bug")
    record = {"source_file": path, "content_sha256": digest, "size_bytes": size, "format": fmt,
              "error_type": type(exc).__name__, "error_kind": kind, "message": _message(path, exc)}
    dset.remove_parts(out, run, fid, ("kernels", "roofline", "runs"))
    dset.write_part(out, "errors", run, fid, pd.DataFrame([record]))
    if digest:  # an unreadable file has no hash to compare next time: it is always retried
        dset.atomic_write_bytes(dset.state_path(out, fid), f"{digest} failed".encode())
    if os.environ.get("ROOFLINE_DEBUG"):
        raise exc
