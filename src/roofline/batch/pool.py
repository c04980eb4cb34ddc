"""The local pool: worker processes fed chunks of inputs over pipes, with a time and memory limit per input.

Each worker (a forkserver child, so a new one starts in milliseconds with roofline imported) runs
:func:`~roofline.batch.worker.process_chunk` and says, over its pipe, which input it starts. So the driver
always knows which input a worker is on, and since when:

- **time limit**: an input running longer than ``Limits.time_s`` gets its worker killed and an error row
  (``error_kind = time-limit``); the other inputs of its chunk are run again in a fresh worker;
- **memory limit**: a worker whose resident memory passes ``Limits.memory_mb`` is killed the same way
  (``memory-limit``); checked every :data:`TICK_S`;
- **native abort**: a worker is the isolation of its native reads (:func:`roofline.ingest.isolate.host`:
  no fork per ``ncu_report`` read); one that dies inside such a read (the worker said so before) fails
  that input as a :class:`~roofline.errors.ReaderCrashedError` naming it, with the library's own words,
  as a forked child's death would; the rest of the chunk is run again in a fresh worker;
- **crash** (anywhere else): the input it was on is run again alone in a fresh worker, and blamed
  (``worker-died``) only if that one dies too; the rest of the chunk goes on;
- **driver death**: each worker blocks a thread on a pipe whose other end only the driver holds; when the
  driver dies (even by SIGKILL) the pipe closes and the worker exits at once, so no worker goes on writing
  into a dataset whose lock is released.

Workers are replaced after :data:`TASKS_PER_WORKER_PROCESS` inputs, or after a chunk whose native reads
made them grow past their allowance: NVIDIA's ``ncu_report`` keeps ~5 MB per report it has opened.
"""

from __future__ import annotations

import collections
import gc
import multiprocessing
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from roofline.batch.files import DatasetGoneError
from roofline.batch.worker import Chunk, Item, content_sha256, error_message, error_record, file_id, process_chunk
from roofline.errors import path_text
from roofline.ingest import isolate

#: inputs a worker process handles before it is replaced (bounds what a leaking reader can hold)
TASKS_PER_WORKER_PROCESS = 100
#: how often the driver checks the workers' time and memory
TICK_S = 0.2
#: the default per-input time limit (seconds): far above any real profile here (a 2M-event trace: ~10 s)
DEFAULT_TIME_S = 600.0


@dataclass(frozen=True)
class Limits:
    """Per-input limits of the local pool: wall seconds per input and resident MB per worker (None or 0: no
    limit), except that ``memory_mb=None`` means :func:`default_memory_mb` for the number of workers."""

    time_s: float | None = DEFAULT_TIME_S
    memory_mb: float | None = None


def default_memory_mb(workers: int) -> float | None:
    """80% of the machine's memory shared by the workers, at least 1 GiB (None where it cannot be read)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    except (ValueError, OSError, AttributeError):
        return None
    return max(1024.0, 0.8 * total / max(1, workers))


def rss_mb(pid: int) -> float | None:
    """Resident memory of a process (Linux /proc; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def _die_with_driver(alive: Connection) -> None:
    try:
        alive.recv()  # nothing is ever sent: returns (EOF) when the driver's end closes
    except (EOFError, OSError):
        pass
    os._exit(0)


def _stderr_file(scratch: str, pid: int) -> str:
    return os.path.join(scratch, f"{pid}.err")


def _serve(conn: Connection, alive: Connection, scratch: str, grow_mb: float) -> None:
    """A worker process: chunks in, ``("start", i)`` before each input (``i == len(items)``: writing the
    parts), ``("native", reader)`` / ``("native", None)`` around a native read, ``("done", summaries,
    seconds, grown)`` after (``grown``: its native reads made it grow past its allowance: replace it);
    exits on None or when the driver is gone."""
    # what the forkserver imported lives as long as the worker: the collector need not walk it again on every
    # full collection (~5% of a worker's CPU over the mix; ~2% frozen)
    gc.freeze()
    threading.Thread(target=_die_with_driver, args=(alive,), daemon=True).start()
    if scratch:
        try:
            isolate.host(lambda reader: conn.send(("native", reader)), _stderr_file(scratch, os.getpid()), grow_mb)
        except OSError:  # no file for its stderr: its native reads fork, as anywhere else
            pass
    while True:
        try:
            chunk = conn.recv()
        except (EOFError, OSError):
            return
        if chunk is None:
            return
        try:
            results, seconds = process_chunk(chunk, on_start=lambda i, *hashed: conn.send(("start", i, *hashed)))
        except DatasetGoneError as exc:
            conn.send(("gone", str(exc)))
            return
        conn.send(("done", results, seconds, isolate.grown()))


@dataclass
class Job:
    """A chunk on its way: ``blame`` when it is one input run alone after a crash (a second crash blames it),
    ``attempts`` how often it was started (a chunk that keeps dying outside any input is split)."""

    chunk: Chunk
    blame: bool = False
    attempts: int = 0


@dataclass
class _Worker:
    proc: Any
    conn: Connection
    alive: Connection
    job: Job | None = None
    current: int | None = None  # index of the input in progress (len(items): writing the parts)
    hashed: tuple[str, int] | None = None  # its content hash and size, once the worker has them
    native: str | None = None  # the native reader it is inside, if any (its death is then that input's)
    since: float = 0.0
    killed: str | None = None  # "time-limit" / "memory-limit" when the driver killed it
    handled: int = 0


@dataclass
class Feed:
    """Where the pool takes its work: chunks to re-run first, then new ones from ``next_chunk``."""

    next_chunk: Callable[[], Chunk | None]
    observe: Callable[[int, float], None]
    again: collections.deque[Job] = field(default_factory=collections.deque)

    def take(self) -> Job | None:
        if self.again:
            return self.again.popleft()
        chunk = self.next_chunk()
        return Job(chunk) if chunk is not None else None


class LocalPool:
    def __init__(self, workers: int, limits: Limits | None = None) -> None:
        self.n = max(1, workers)
        limits = limits or Limits()
        self.time_s = limits.time_s
        self.memory_mb = limits.memory_mb if limits.memory_mb is not None else default_memory_mb(self.n)
        # what a worker's in-process native reads may leave behind: well under its memory limit
        self.grow_mb = min(isolate.HOST_GROWTH_MB, self.memory_mb / 4) if self.memory_mb else isolate.HOST_GROWTH_MB
        # forkserver: workers start from a clean interpreter (no inherited threads or open reports),
        # with roofline already imported so a replaced worker starts in milliseconds
        self.ctx = multiprocessing.get_context("forkserver")
        self.ctx.set_forkserver_preload(["roofline.batch.worker", "roofline.ingest.registry", "roofline.analysis"])
        self.workers: list[_Worker] = []
        self.scratch = ""  # the workers' stderr files during native reads (a folder of the run's own)

    def _spawn(self) -> _Worker:
        parent, child = self.ctx.Pipe()
        alive_r, alive_w = self.ctx.Pipe(duplex=False)
        proc = self.ctx.Process(target=_serve, args=(child, alive_r, self.scratch, self.grow_mb), daemon=True,
                                name="roofline-batch-worker")
        proc.start()
        child.close()
        alive_r.close()
        return _Worker(proc, parent, alive_w)

    def run(self, feed: Feed) -> Iterator[dict[str, Any]]:
        """Every input's summary as its chunk's parts are written (or as the driver records its failure)."""
        try:
            self.scratch = tempfile.mkdtemp(prefix="roofline-pool-")
        except OSError:  # the workers' native reads then fork (no stderr file to read their words from)
            self.scratch = ""
        self.workers = [self._spawn() for _ in range(self.n)]
        try:
            self._assign(feed)
            while any(w.job for w in self.workers):
                busy = [w for w in self.workers if w.job]
                wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=TICK_S)
                for w in busy:
                    yield from self._drain(w, feed)
                self._enforce_limits()
                self._assign(feed)
        finally:
            self._stop()

    def _assign(self, feed: Feed) -> None:
        for k in range(len(self.workers)):
            if self.workers[k].job is not None:
                continue
            job = feed.take()
            if job is None:
                return
            job.attempts += 1
            try:
                self.workers[k].conn.send(job.chunk)
            except OSError:  # it died idle (killed from outside): a new one takes the job
                self._replace(self.workers[k], retire=False)
                self.workers[k].conn.send(job.chunk)
            w = self.workers[k]
            w.job, w.current, w.since, w.killed = job, None, time.monotonic(), None

    def _drain(self, w: _Worker, feed: Feed) -> Iterator[dict[str, Any]]:
        try:
            while w.conn.poll():
                msg = w.conn.recv()
                if msg[0] == "start" and len(msg) > 2:
                    w.hashed = (msg[2], msg[3])
                elif msg[0] == "native":
                    w.native = msg[1]
                elif msg[0] == "start":
                    w.current, w.since, w.hashed, w.native = msg[1], time.monotonic(), None, None
                elif msg[0] == "done":
                    _, results, seconds, grown = msg
                    assert w.job is not None
                    feed.observe(len(w.job.chunk.items), seconds)
                    w.handled += len(w.job.chunk.items)
                    w.job, w.current = None, None
                    yield from results
                    if grown or w.handled >= TASKS_PER_WORKER_PROCESS:
                        self._replace(w, retire=True)
                    return
                elif msg[0] == "gone":
                    raise DatasetGoneError(msg[1])
        except (EOFError, OSError):
            pass
        if w.job is not None and not w.proc.is_alive():
            yield from self._died(w, feed)

    def _enforce_limits(self) -> None:
        now = time.monotonic()
        for w in self.workers:
            if w.job is None or w.killed:
                continue
            if self.time_s and w.current is not None and now - w.since > self.time_s:
                self._kill(w, "time-limit")
            elif self.memory_mb and (rss := rss_mb(w.proc.pid)) is not None and rss > self.memory_mb:
                self._kill(w, "memory-limit")

    def _kill(self, w: _Worker, reason: str) -> None:
        w.killed = reason
        w.proc.kill()

    def _died(self, w: _Worker, feed: Feed) -> Iterator[dict[str, Any]]:
        job, i, reason, hashed, native = w.job, w.current, w.killed, w.hashed, w.native
        w.proc.join()
        exitcode = w.proc.exitcode
        assert job is not None
        items = job.chunk.items
        crash = None
        if native and not reason and i is not None and i < len(items):  # (read before its file goes with it)
            crash = isolate.crash_error(items[i].path, native, exitcode, _stderr_file(self.scratch, w.proc.pid))
        self._replace(w, retire=False)
        if i is not None and i < len(items):
            rest = items[:i] + items[i + 1:]
            if rest:
                feed.again.appendleft(Job(replace(job.chunk, items=rest)))
            if reason:
                limit = f"{self.time_s:g} s" if reason == "time-limit" else f"{self.memory_mb:.0f} MB"
                what = "ran longer than" if reason == "time-limit" else "made its worker's memory pass"
                yield record_failure(job.chunk, items[i], reason, "LimitExceeded",
                                     f"{path_text(items[i].path)}: {what} the per-input limit of {limit} "
                                     f"(roofline batch --input-{'timeout' if reason == 'time-limit' else 'memory'})",
                                     hashed or ("", None))
            elif crash is not None:  # inside a native read: that input's crash, as a forked reader's would be
                yield record_failure(job.chunk, items[i], crash.kind, type(crash).__name__,
                                     error_message(path_text(items[i].path), crash), hashed or ("", None),
                                     _format(items[i]))
            elif job.blame:
                yield record_failure(job.chunk, items[i], "worker-died", "WorkerDied",
                                     f"{path_text(items[i].path)}: the worker processing it died "
                                     f"(exit code {exitcode}), twice", hashed or ("", None))
            else:  # run it alone before blaming it: the crash may have been the machine's
                feed.again.appendleft(Job(replace(job.chunk, items=(items[i],)), blame=True))
        elif job.attempts < 3:  # died before its first input or while writing: run the chunk again
            feed.again.appendleft(job)
        else:  # it keeps dying outside any one input: each input alone
            feed.again.extendleft(Job(replace(job.chunk, items=(it,)), blame=True) for it in reversed(items))

    def _replace(self, w: _Worker, retire: bool) -> None:
        if retire:
            _ask_to_stop(w)
            _reap(w)
        w.conn.close()
        w.alive.close()
        if self.scratch:
            try:
                os.unlink(_stderr_file(self.scratch, w.proc.pid))
            except OSError:
                pass
        self.workers[self.workers.index(w)] = self._spawn()

    def _stop(self) -> None:
        for w in self.workers:
            if w.job is None:
                _ask_to_stop(w)
            else:
                w.proc.kill()  # an error in the driver: nothing more is written
        for w in self.workers:
            _reap(w)
            w.conn.close()
            w.alive.close()
        self.workers = []
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


def _ask_to_stop(w: _Worker) -> None:
    try:
        w.conn.send(None)
    except OSError:  # already gone
        pass


def _reap(w: _Worker) -> None:
    w.proc.join(timeout=5)
    if w.proc.is_alive():
        w.proc.kill()
        w.proc.join()


def _format(item: Item) -> str:
    """The input's format as the worker found it before its reader crashed (the same sniff)."""
    from roofline.ingest.registry import sniff

    try:
        return sniff(Path(item.path))
    except Exception:  # noqa: BLE001 - the crash is the error recorded; its format is a detail
        return "unknown"


def record_failure(chunk: Chunk, item: Item, kind: str, error_type: str, message: str,
                   hashed: tuple[str, int | None] | None = None, fmt: str = "unknown") -> dict[str, Any]:
    """An input the driver fails (its worker died or passed a limit): an error row written by the driver,
    in the batch's generation, so the input is not lost. ``hashed``: its content hash and size as the worker
    found them (``("", None)``: it died before; a re-run then reads it again); None: hashed here. ``fmt``:
    its format where the worker had found it."""
    from roofline.batch.parts import PartWriter

    root = Path(chunk.root)
    shown = path_text(item.path)
    fid = file_id(Path(item.path), item.run)
    if hashed is not None:
        digest, size = hashed
    else:
        try:
            digest, size = content_sha256(Path(item.path))
        except OSError:
            digest, size = "", None
    summary = {"path": shown, "file_id": fid, "run": item.run, "status": "failed", "kernels": 0,
               "format": fmt, "error": message}
    writer = PartWriter(root, chunk.gen)
    writer.add_error(fid, item.run, error_record(shown, digest, size, fmt, RuntimeError(message), kind=kind,
                                                 message=message) | {"error_type": error_type}, summary)
    writer.flush()  # (a vanished dataset raises DatasetGoneError: the batch stops)
    return summary
