"""Independent jobs (a report's charts) shared between this process and forked copies of it.

A report of many devices draws a chart per device and roof set, each one independent of the others and most of
it matplotlib's Python (~0.4 s of CPU a chart): :func:`run_shared` forks one child per further CPU this process
may use, and the children and this process take the jobs one at a time, largest first, from a shared counter
while this process also does ``meanwhile`` (the HTML page). Fork and not a spawned worker: a child starts with
the frame and matplotlib already here (no pickling of the frame, nothing read back but which jobs finished: a
flag per job in shared memory). A job a child did not finish (it raised, or the child died) runs again here
afterwards, so its error is raised here as in a serial run. A child takes no new job once this process is gone,
and this process waits for its children before it returns or raises. Off Linux, where ``os.fork`` or shared
semaphores do not exist, with one CPU, or for a single job, everything runs here in order (the jobs, then
``meanwhile``); where a fork fails, the processes already started share the jobs.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: processes at most by default, on a machine of many CPUs (a login node): a chart is ~0.4 s, a report has tens
MAX_WORKERS = 8


def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run_shared(jobs: Sequence[Callable[[], object]], meanwhile: Callable[[], T], workers: int | None = None) -> T:
    """Run every job once (their results are dropped) and return ``meanwhile()``: up to ``workers`` processes
    at once (default: :func:`cpus`, at most ``MAX_WORKERS``), this one among them."""
    children = min(workers or min(cpus(), MAX_WORKERS), len(jobs)) - 1
    # Linux only: on macOS a forked child of a process with threads (a notebook kernel, the Objective-C runtime)
    # may crash or hang, and fork is not its default start method for that reason
    forkable = hasattr(os, "fork") and sys.platform.startswith("linux")
    shared = _shared(len(jobs)) if children >= 1 and forkable else None
    if shared is None:
        for job in jobs:
            job()
        return meanwhile()
    taken, done = shared
    sys.stdout.flush()  # a child's copy of an unflushed buffer would be written twice
    sys.stderr.flush()
    # the objects made so far are left out of both processes' collections: a collection writes to every object
    # it scans, and each page written is copied for the child (~10k page faults fewer in a dataset's report);
    # a caller's own freeze is left as it was
    ours = gc.get_freeze_count() == 0
    if ours:
        gc.freeze()
    pids: list[int] = []
    try:
        for _ in range(children):
            try:
                pid = os.fork()
            except OSError:  # no process to spare (a limit, memory): the ones started, and this one, do the rest
                break
            if pid == 0:  # the child: never returns
                _child(jobs, taken, done)
            pids.append(pid)
        result = meanwhile()
        _take(jobs, taken, done, None)
    except BaseException:
        with taken.get_lock():  # the children take no further job
            taken.value = len(jobs)
        raise
    finally:
        for pid in pids:
            _wait(pid)
        if ours:
            gc.unfreeze()
    for i, job in enumerate(jobs):  # what a child did not finish, here (raising its error as a serial run would)
        if not done[i]:
            job()
    return result


def _shared(n: int) -> tuple[Any, Any] | None:
    """The next job to take (an int and its lock) and a done flag per job, in memory shared with forked children
    (nothing pickled); None where this system has no shared semaphores (then everything runs here)."""
    try:
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        return ctx.Value("i", 0), ctx.Array("b", n, lock=False)
    except (ImportError, OSError, ValueError):
        return None


def _take(jobs: Sequence[Callable[[], object]], taken: Any, done: Any, parent: int | None) -> None:
    """Take the next job until none is left (in a child: and while its parent is alive)."""
    while parent is None or os.getppid() == parent:
        with taken.get_lock():
            i = taken.value
            taken.value = i + 1
        if i >= len(jobs):
            return
        try:
            jobs[i]()
        except Exception:
            if parent is None:
                raise
            continue  # the parent runs it again and reports its error
        done[i] = 1


def _child(jobs: Sequence[Callable[[], object]], taken: Any, done: Any) -> None:
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child at once, the parent reports it
        _take(jobs, taken, done, os.getppid())
    except BaseException:  # noqa: BLE001 - nothing may escape into the parent's code paths
        code = 70
    finally:
        os._exit(code)  # no atexit handlers, no flushing of the parent's buffers


def _wait(pid: int) -> None:
    while True:
        try:
            os.waitpid(pid, 0)
            return
        except InterruptedError:
            continue
        except ChildProcessError:
            return


__all__ = ["cpus", "run_shared"]
