"""Run :func:`~roofline.batch.worker.process_chunk` over many inputs: on the local pool
(:mod:`roofline.batch.pool`) or on an existing Dask distributed cluster (:mod:`roofline.batch.cluster`).
No scheduler or queue of our own: the driver cuts the inputs into chunks, keeps a bounded window of them in
flight and counts summaries; the workers write the rows. At the end the dataset is compacted
(:mod:`roofline.batch.compact`) when what the batch added is worth it.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from roofline.batch import dataset as dset
from roofline.batch.chunks import CHUNK_TARGET_S, MAX_CHUNK, ChunkSizer, make_chunk  # noqa: F401 - re-exported
from roofline.batch.cluster import DaskSettings
from roofline.batch.files import new_token
from roofline.batch.pool import Feed, Limits, LocalPool
from roofline.batch.worker import Item, Options, file_id
from roofline.errors import path_text

#: a local chunk carries about this much work: few parts per batch (each costs ~11 ms of CPU and ~30 ms of
#: fsyncs; at 1 s, chunks of 2-3 mix inputs paid that per 2-3 inputs), little lost to a kill
LOCAL_CHUNK_S = 2.0


@dataclass
class BatchSummary:
    out: str
    inputs: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    skipped_failed: int = 0  # of the skipped: inputs that failed before (see --retry-errors)
    kernels: int = 0
    elapsed_s: float = 0.0
    workers: str = ""
    unmatched_patterns: list[str] = field(default_factory=list)
    driver_max_rss_mb: float = 0.0
    workers_max_rss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)  # damaged parts moved aside, the compaction
    compact_s: float = 0.0

    @property
    def files_per_s(self) -> float:
        done = self.ok + self.failed
        return done / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def progress_text(self) -> str:
        """What the progress bar shows: counts, files/s and the estimated time left."""
        done = self.ok + self.failed + self.skipped
        rate = self.files_per_s
        # the ETA from every input's pace so far (skipped ones included: they are part of the work left)
        pace = done / self.elapsed_s if self.elapsed_s > 0 else 0.0
        eta = f"ETA {_clock((self.inputs - done) / pace)}" if pace > 0 else "ETA --:--"
        return f"ok {self.ok} · failed {self.failed} · skipped {self.skipped} · {rate:.1f} files/s · {eta}"

    def line(self) -> str:
        before = f", {self.skipped_failed} of them failed then" if self.skipped_failed else ""
        return (f"{self.inputs} inputs: {self.ok} ok, {self.failed} failed, {self.skipped} skipped (done before{before}); "
                f"{self.kernels} kernels; {self.elapsed_s:.1f} s ({self.files_per_s:.1f} files/s, {self.workers}) "
                f"-> {self.out}")


def _clock(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


def find_inputs(patterns: Iterable[str | Path], exclude: Path | None = None) -> tuple[list[Path], list[str]]:
    """Absolute, de-duplicated, sorted input paths; and the patterns that matched nothing.

    A folder stands for the profiles inside it; a pattern with ``*``/``?``/``[`` is a glob (``**``
    recurses); anything else is taken as a file, even if it does not exist (it then lands in the
    errors table rather than vanishing). The expansion is the pipeline's (:func:`roofline.pipeline.expand`).
    """
    from roofline.pipeline import expand

    found = expand(patterns, globs=True, absolute=True, exclude=exclude)
    return found.files, found.unmatched


def run_batch(patterns: Iterable[str | Path], out: str | Path, *, workers: int | None = None,
              scheduler: str | None = None, opts: Options | None = None, run: str | None = None,
              progress: Callable[[dict[str, Any], BatchSummary], None] | None = None,
              limits: Limits | None = None, compact: bool = True,
              dask: DaskSettings | None = None) -> BatchSummary:
    """Ingest and analyse every input into the dataset at ``out``; see :mod:`roofline.batch`.

    ``workers``: local processes (default: all cores). ``scheduler``: the address of a Dask distributed
    scheduler (``tcp://host:8786``) instead; its workers must see the inputs and ``out`` at the same paths.
    ``run``: one run label for every input (default: the name of each input's folder). ``progress`` is called
    with every input's summary. ``limits``: the local pool's per-input time and memory limit. ``compact``:
    compact the dataset at the end when what the batch added is worth it.
    """
    root = Path(os.path.abspath(out))
    opts = opts or Options()
    dset.init_dataset(root)
    token = new_token()
    with dset.DatasetLock(root, token):  # one writer per dataset; a second batch exits with a clear message
        return _run_locked(root, token, patterns, workers, scheduler, opts, run, progress, limits, compact,
                           dask or DaskSettings())


def _run_locked(root: Path, token: str, patterns: Iterable[str | Path], workers: int | None, scheduler: str | None,
                opts: Options, run: str | None, progress: Callable[[dict[str, Any], BatchSummary], None] | None,
                limits: Limits | None, compact: bool, dask: DaskSettings) -> BatchSummary:
    from roofline.batch import compact as cmp

    _clean_temporaries(root)
    notes = cmp.repair(root)  # damaged parts aside: their inputs have no live row, so they are read again
    if dset.layout_version(root) == "1":  # written by an older roofline: upgraded before anything is added
        notes.append(cmp.compact(root).line(root))
    inputs, unmatched = find_inputs(patterns, exclude=root)
    summary = BatchSummary(out=path_text(root), inputs=len(inputs), unmatched_patterns=unmatched, notes=notes)
    state = _state(root)
    gen = dset.next_generation(root)
    # run labels are stored as text: a folder name that is not valid UTF-8 is escaped, once, here
    items = (_item(p, path_text(run or p.parent.name or "_"), state) for p in inputs)
    start = time.perf_counter()
    if scheduler:
        from roofline.batch.cluster import on_dask

        results = on_dask(items, scheduler, len(inputs), str(root), gen, opts, token, dask)
        summary.workers = f"dask {scheduler}"
    else:
        n = workers or os.cpu_count() or 1
        sizer = ChunkSizer(len(inputs), n, target_s=LOCAL_CHUNK_S)
        feed = Feed(lambda: make_chunk(sizer.take(items), str(root), gen, opts), sizer.observe)
        results = LocalPool(n, limits).run(feed)
        summary.workers = f"{n} local worker{'s' if n > 1 else ''}"
    for res in results:
        summary.ok += res["status"] == "ok"
        summary.failed += res["status"] == "failed"
        summary.skipped += res["status"] == "skipped"
        summary.skipped_failed += res["status"] == "skipped" and res.get("format") == "failed before"
        summary.kernels += int(res.get("kernels") or 0)
        summary.workers_max_rss_mb = max(summary.workers_max_rss_mb, float(res.get("max_rss_mb") or 0.0))
        summary.elapsed_s = time.perf_counter() - start
        if progress is not None:
            progress(res, summary)
    summary.elapsed_s = time.perf_counter() - start
    if compact and cmp.worth_compacting(root):
        try:
            summary.compact_s = cmp.compact(root).seconds
        except (OSError, dset.DatasetError) as exc:  # the parts are whole: the dataset reads the same without it
            summary.notes.append(f"{path_text(root)}: not compacted ({path_text(str(exc))}); its parts read the "
                                 "same: `roofline dataset compact` later")
    summary.driver_max_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _log(root, summary)
    return summary


def _state(root: Path) -> dict[str, tuple[str, str, str | None]]:
    """What the dataset holds of each input: file_id -> (sha256, "ok"|"failed", error_kind)."""
    live = dset.live_inputs(root)
    cols = [live.column(c).to_pylist() for c in ("file_id", "content_sha256", "status", "error_kind")]
    return {fid: (sha or "", status, kind) for fid, sha, status, kind in zip(*cols)}


def _item(path: Path, run: str, state: dict[str, tuple[str, str, str | None]]) -> Item:
    return Item(str(path), run, state.get(file_id(path, run)))


def _clean_temporaries(root: Path) -> None:
    """Half-written files of a killed batch (never visible to readers) are removed, but only those
    whose writer is gone: a live writer's temporary is about to be renamed into place."""
    for tmp in root.rglob(".*.tmp"):
        if dset.writer_gone(tmp):
            tmp.unlink(missing_ok=True)


def _log(root: Path, summary: BatchSummary) -> None:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    body = asdict(summary) | {"files_per_s": summary.files_per_s, "argv": [path_text(a) for a in sys.argv]}
    try:
        dset.atomic_write_bytes(root / "_batches" / f"{stamp}-{os.getpid()}.json", json.dumps(body, indent=2).encode())
    except OSError as exc:  # the log is a convenience; the tables already hold every input
        print(f"roofline: could not write the batch log under {path_text(root)}/_batches: {exc}", file=sys.stderr)
