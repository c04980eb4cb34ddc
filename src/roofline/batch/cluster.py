"""A batch on an existing Dask distributed cluster: chunks of inputs as tasks, with the failures of a
cluster made visible instead of waited on.

- **connecting**: a wrong address (bad syntax, unknown scheme) is an error at once; a closed port or a port
  where no Dask scheduler answers (anything that accepts the connection and says nothing) is an error after
  ``DaskSettings.connect_s`` (default 30 s), never a silent hang;
- **a stuck cluster**: no worker at all, or no task finished while none is processing, for
  ``DaskSettings.stall_s`` (default 300 s) stops the batch with an error; what finished is in the dataset,
  a re-run resumes;
- **a driver that dies**: its tasks are released by the scheduler; a task already running checks before each
  input and before writing that the dataset's lock still names its batch and that the driver's heartbeat
  (the lock file's mtime, touched every :data:`HEARTBEAT_S`) is fresh, and stops otherwise;
- **memory**: after every chunk the task collects garbage and hands freed memory back to the system
  (``malloc_trim``, Arrow's pool), so a long-lived worker's resident memory stays flat between chunks.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from roofline.batch import files
from roofline.batch.chunks import ChunkSizer, make_chunk
from roofline.batch.worker import Chunk, Item, Options, process_chunk
from roofline.errors import RooflineError, path_text

#: how often the driver touches the lock file (its heartbeat for running tasks)
HEARTBEAT_S = 5.0
#: tasks (chunks) in flight per worker thread: enough to keep workers busy, few enough to bound the driver
WINDOW_PER_WORKER = 4
#: how often the driver looks at the cluster while it waits
TICK_S = 1.0


@dataclass(frozen=True)
class DaskSettings:
    """``connect_s``: how long to wait for the scheduler; ``stall_s``: how long the cluster may have no worker
    (or finish nothing while none of its tasks runs) before the batch stops with an error (re-run to resume)."""

    connect_s: float = 30.0
    stall_s: float = 300.0


class ClusterError(RooflineError):
    """The Dask scheduler cannot be reached, or the cluster stopped making progress."""


def release_memory() -> None:
    """Give freed memory back to the system: Python's garbage, glibc's free lists (``malloc_trim``), Arrow's
    pool. Between chunks on a long-lived Dask worker, so its resident memory does not ratchet up."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass
    try:
        import pyarrow as pa

        pa.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - an older pyarrow: nothing to release
        pass


def process_chunk_on_worker(chunk: Chunk) -> tuple[list[dict[str, Any]], float]:
    """What a Dask task runs: the chunk, then the memory it freed handed back."""
    try:
        return process_chunk(chunk)
    finally:
        release_memory()


def connect(address: str, timeout_s: float) -> Any:
    """A ``distributed.Client`` to ``address``, or a :class:`ClusterError` that says why not, within the timeout."""
    try:
        from distributed import Client
        from distributed.comm import parse_address
        from distributed.comm.registry import get_backend
    except ImportError:
        from roofline.errors import MissingDependencyError

        raise MissingDependencyError("--scheduler needs Dask: pip install 'roofline[dask]'") from None
    try:
        scheme, _ = parse_address(address)
        get_backend(scheme)
    except ValueError as exc:
        raise ClusterError(f"--scheduler {address!r} is not a Dask scheduler address ({exc}); "
                           "expected e.g. tcp://head:8786") from None
    box: list[Any] = []

    def attempt() -> None:
        try:
            box.append(Client(address, timeout=f"{timeout_s}s"))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box.append(exc)

    # the Client's own timeout covers the TCP connect, not a listener that accepts and never answers
    thread = threading.Thread(target=attempt, daemon=True, name="roofline-dask-connect")
    thread.start()
    thread.join(1.5 * timeout_s + 1)
    if not box:
        raise ClusterError(f"no Dask scheduler answered at {address} within {timeout_s:g} s (something accepts "
                           "connections there but does not speak Dask: is it the scheduler's port, 8786 by default?)")
    if isinstance(box[0], BaseException):
        raise ClusterError(f"cannot connect to a Dask scheduler at {address} within {timeout_s:g} s: "
                           f"{path_text(str(box[0]))}") from None
    return box[0]


def _heartbeat(root: str, stop: threading.Event) -> None:
    from pathlib import Path

    while not stop.wait(HEARTBEAT_S):
        files.heartbeat(Path(root))


def on_dask(items: Iterator[Item], scheduler: str, total: int, root: str, gen: int, opts: Options, token: str,
            settings: DaskSettings) -> Iterator[dict[str, Any]]:
    from distributed import wait

    client = connect(scheduler, settings.connect_s)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(root, stop), daemon=True, name="roofline-heartbeat")
    beat.start()
    try:
        slots = max(1, sum(client.nthreads().values()))
        window = slots * WINDOW_PER_WORKER  # tasks (chunks) in flight
        sizer = ChunkSizer(total, slots)
        owner: dict[Any, Chunk] = {}

        def submit(chunk: Chunk) -> None:
            owner[client.submit(process_chunk_on_worker, chunk, pure=False)] = chunk

        def refill() -> None:
            while len(owner) < window and (chunk := make_chunk(sizer.take(items), root, gen, opts, token)):
                submit(chunk)

        refill()
        quiet_since = time.monotonic()
        while owner:
            try:
                done, _ = wait(list(owner), timeout=TICK_S, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            if not done:
                _check_progress(client, scheduler, quiet_since, settings.stall_s, len(owner))
                continue
            quiet_since = time.monotonic()
            for fut in done:
                chunk = owner.pop(fut)
                try:
                    results, seconds = fut.result()
                except Exception as exc:  # noqa: BLE001 - e.g. KilledWorker: every input still gets a row
                    fut.release()
                    if len(chunk.items) == 1:  # alone on the cluster and still failing: once more here, in a
                        yield from _here(chunk, exc)  # process of its own, before it is blamed
                    else:  # find the culprit alone (a worker that died took its other tasks with it)
                        for item in chunk.items:
                            submit(Chunk(root, gen, opts, (item,), token))
                    continue
                fut.release()
                sizer.observe(len(chunk.items), seconds)
                refill()  # before handing results out: the workers never wait on the driver's progress callback
                yield from results
    finally:
        stop.set()
        client.close()


def _here(chunk: Chunk, exc: BaseException) -> Iterator[dict[str, Any]]:
    """A one-input chunk that failed on the cluster (its worker died: ``KilledWorker``), run again in a local
    process of its own (:class:`~roofline.batch.pool.LocalPool`, as a crash already seen): its rows if it
    passes there, else its error row (``worker-died``). A worker the cluster lost for another reason (memory,
    a restart, a neighbour's crash) does not cost the input its rows."""
    from roofline.batch.pool import Feed, Job, LocalPool

    local = Chunk(chunk.root, chunk.gen, chunk.opts, chunk.items)  # (no token: the driver is alive, here)
    feed = Feed(lambda: None, lambda n, s: None)
    feed.again.append(Job(local, blame=True))
    for res in LocalPool(1).run(feed):
        if res["status"] == "failed" and res.get("error", "").endswith("twice"):
            res["error"] += f" (on the cluster: {type(exc).__name__})"
        yield res


def _check_progress(client: Any, scheduler: str, quiet_since: float, stall_s: float, in_flight: int) -> None:
    """Raise :class:`ClusterError` when nothing has finished for ``stall_s`` and the cluster has no worker, or
    its workers process none of the batch's tasks (a worker that died and is not restarted)."""
    quiet = time.monotonic() - quiet_since
    if quiet < stall_s:
        return
    try:
        workers = client.nthreads()
        busy = sum(len(v) for v in client.processing().values())
    except Exception as exc:  # noqa: BLE001 - the scheduler itself went away
        raise ClusterError(f"lost the Dask scheduler at {scheduler}: {path_text(str(exc))}; what finished is in "
                           "the dataset, run the batch again to resume") from None
    if not workers or not busy:
        why = "has no worker" if not workers else "processes none of its tasks"
        raise ClusterError(f"the Dask cluster at {scheduler} {why} and nothing finished for {quiet:.0f} s "
                           f"({in_flight} task(s) waiting); what finished is in the dataset, run the batch again "
                           "to resume (--stall-timeout sets the wait)")
