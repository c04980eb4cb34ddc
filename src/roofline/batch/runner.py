"""Run :func:`~roofline.batch.worker.process_file` over many inputs: in-process, on a local
process pool, or on an existing Dask distributed cluster. No scheduler or queue of our own: the
pool or Dask hands out the files; the driver only keeps a bounded window of tasks in flight and
counts summaries, so its memory does not grow with the number of inputs.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import resource
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from roofline.batch import dataset as dset
from roofline.batch.worker import (
    Options,
    content_sha256,
    file_id,
    process_chunk,
    process_file,
)
from roofline.errors import path_text

Task = tuple[str, str, str, Options]  # (input path, dataset root, run label, options)
#: tasks in flight per worker: enough to keep workers busy, few enough to bound the driver's memory
WINDOW_PER_WORKER = 4
#: inputs a worker process handles before it is replaced (bounds what a leaking reader can hold)
TASKS_PER_WORKER_PROCESS = 100
#: a Dask task carries inputs for about this long: the scheduler round trip (milliseconds) becomes
#: noise, and the last tasks are still short enough to spread over every worker
CHUNK_TARGET_S = 0.5
#: at most this many inputs per Dask task (skipped inputs take microseconds: this bounds a task's size)
MAX_CHUNK = 256


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
              progress: Callable[[dict[str, Any], BatchSummary], None] | None = None) -> BatchSummary:
    """Ingest and analyse every input into the dataset at ``out``; see :mod:`roofline.batch`.

    ``workers``: local processes (default: all cores; 1 runs in this process). ``scheduler``: the
    address of a Dask distributed scheduler (``tcp://host:8786``) instead; its workers must see
    the inputs and ``out`` at the same paths. ``run``: one run label for every input (default: the
    name of each input's folder). ``progress`` is called with every file's summary.
    """
    root = Path(os.path.abspath(out))
    opts = opts or Options()
    dset.init_dataset(root)
    with dset.DatasetLock(root):  # one writer per dataset; a second batch exits with a clear message
        return _run_locked(root, patterns, workers, scheduler, opts, run, progress)


def _run_locked(root: Path, patterns: Iterable[str | Path], workers: int | None, scheduler: str | None,
                opts: Options, run: str | None,
                progress: Callable[[dict[str, Any], BatchSummary], None] | None) -> BatchSummary:
    _clean_temporaries(root)
    inputs, unmatched = find_inputs(patterns, exclude=root)
    summary = BatchSummary(out=path_text(root), inputs=len(inputs), unmatched_patterns=unmatched)
    # run labels are stored as text: a folder name that is not valid UTF-8 is escaped, once, here
    tasks = ((str(p), str(root), path_text(run or p.parent.name or "_"), opts) for p in inputs)
    start = time.perf_counter()
    if scheduler:
        results, summary.workers = _on_dask(tasks, scheduler, len(inputs)), f"dask {scheduler}"
    else:
        n = workers or os.cpu_count() or 1
        results, summary.workers = _on_pool(tasks, n), f"{n} local worker{'s' if n > 1 else ''}"
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
    summary.driver_max_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    _log(root, summary)
    return summary


def _pool(workers: int, ctx: Any) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(workers, mp_context=ctx, max_tasks_per_child=TASKS_PER_WORKER_PROCESS)


def _on_pool(tasks: Iterator[Task], workers: int) -> Iterator[dict[str, Any]]:
    # Even one worker is a separate process: NVIDIA's ncu_report keeps ~1.7 MB per report it has
    # opened (measured: docs/benchmarks.md), so workers are recycled to keep memory flat.
    # forkserver: workers start from a clean interpreter (no inherited threads or open reports),
    # with roofline already imported so a recycled worker starts in milliseconds.
    ctx = _context()
    pool = _pool(workers, ctx)
    pending: dict[Future[dict[str, Any]], Task] = {}
    try:
        for t in islice(tasks, workers * WINDOW_PER_WORKER):
            pending[pool.submit(process_file, *t)] = t
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            broken: list[Task] = []
            for fut in done:
                task = pending.pop(fut)
                try:
                    yield fut.result()
                except BrokenProcessPool:
                    broken.append(task)
            if broken:  # a worker died (a reader crashed the interpreter): find the culprit alone
                broken += list(pending.values())
                pending.clear()
                pool.shutdown(wait=False, cancel_futures=True)
                for task in broken:
                    yield _isolated(task, ctx)
                pool = _pool(workers, ctx)
            for t in islice(tasks, max(len(done), workers * WINDOW_PER_WORKER - len(pending))):
                pending[pool.submit(process_file, *t)] = t
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["roofline.batch.worker", "roofline.ingest.registry", "roofline.analysis"])
    return ctx


def _isolated(task: Task, ctx: Any) -> dict[str, Any]:
    with ProcessPoolExecutor(1, mp_context=ctx) as solo:
        try:
            return solo.submit(process_file, *task).result()
        except BrokenProcessPool as exc:
            return record_crash(task, exc)


class ChunkSizer:
    """How many inputs the next Dask task carries: about ``target_s`` of work at the seconds per
    input measured so far (one input per task until there is a measurement), at most ``max_size``,
    and at most a fair share of what is left, so the end of the batch still spreads over every worker."""

    def __init__(self, total: int, slots: int, target_s: float = CHUNK_TARGET_S, max_size: int = MAX_CHUNK) -> None:
        self.left, self.slots, self.target_s, self.max_size = total, max(1, slots), target_s, max_size
        self.per_input_s: float | None = None

    def observe(self, inputs: int, seconds: float) -> None:
        if inputs > 0:
            now = max(seconds, 0.0) / inputs
            # a moving average: a worker's first (cold) task or one slow file does not set the size alone
            self.per_input_s = now if self.per_input_s is None else 0.7 * self.per_input_s + 0.3 * now

    def size(self) -> int:
        want = 1 if self.per_input_s is None else int(self.target_s / max(self.per_input_s, 1e-6))
        fair = math.ceil(self.left / (2 * self.slots))
        return max(1, min(want, self.max_size, fair))

    def take(self, tasks: Iterator[Task]) -> list[Task]:
        chunk = list(islice(tasks, self.size()))
        self.left -= len(chunk)
        return chunk


def _on_dask(tasks: Iterator[Task], scheduler: str, total: int) -> Iterator[dict[str, Any]]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        from roofline.errors import MissingDependencyError

        raise MissingDependencyError("--scheduler needs Dask: pip install 'roofline[dask]'") from None
    with Client(scheduler, timeout="30s") as client:
        slots = max(1, sum(client.nthreads().values()))
        window = slots * WINDOW_PER_WORKER  # tasks (chunks) in flight
        sizer = ChunkSizer(total, slots)
        queue = as_completed()
        owner: dict[str, list[Task]] = {}

        def submit(chunk: list[Task]) -> None:
            fut = client.submit(process_chunk, chunk, pure=False)
            owner[fut.key] = chunk
            queue.add(fut)

        def refill() -> None:
            while len(owner) < window and (chunk := sizer.take(tasks)):
                submit(chunk)

        refill()
        for fut in queue:
            chunk = owner.pop(fut.key)
            try:
                results, seconds = fut.result()
            except Exception:  # noqa: BLE001 - e.g. KilledWorker: every input still gets a row
                fut.release()
                if len(chunk) == 1:  # retried alone, in a process of its own here, before it is blamed:
                    yield _isolated(chunk[0], _context())  # a worker that died took its other tasks with it
                else:  # find the culprit alone; inputs of the chunk that were done come back 'skipped'
                    for task in chunk:
                        submit([task])
                continue
            fut.release()
            sizer.observe(len(chunk), seconds)
            refill()  # before handing results out: the workers never wait on the driver's progress callback
            yield from results


def record_crash(task: Task, exc: BaseException) -> dict[str, Any]:
    """An input whose worker died: recorded by the driver, so it is not lost."""
    import pandas as pd

    path, root, run, _ = task
    shown = path_text(path)
    fid = file_id(Path(path), run)
    try:
        digest, size = content_sha256(Path(path))
    except OSError:
        digest, size = "", None
    message = f"{shown}: the worker processing it died ({type(exc).__name__}: {path_text(str(exc))})"
    try:
        dset.remove_parts(Path(root), run, fid, ("kernels", "roofline", "runs"))
        dset.write_part(Path(root), "errors", run, fid, pd.DataFrame([{
            "source_file": shown, "content_sha256": digest, "size_bytes": size, "format": "unknown",
            "error_type": type(exc).__name__, "error_kind": "worker-died", "message": message}]))
    except OSError as again:  # counted and printed as failed all the same
        message += f" (and its error row could not be written: {again})"
    return {"path": shown, "file_id": fid, "run": run, "status": "failed", "kernels": 0, "format": "unknown",
            "error": message}


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
