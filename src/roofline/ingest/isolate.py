"""Native readers run in a forked child: a library that aborts the process takes one input down, not the run.

NVIDIA's ``ncu_report`` (C++) aborts the interpreter (an abseil ``CHECK`` failure, SIGABRT) on some damaged
reports that pass the structure check (13 of 1,281 one-byte mutations did). In-process, that killed
``analyze``/``report``/``compare`` with every good input beside it, and a Dask worker with its other tasks.
:func:`call` runs the native part of one read in a child forked from this process: the child reads, sends
its plain result back through a pipe (msgpack: data only, nothing that executes) and exits; a child that
dies is one :class:`ReaderCrashedError` naming the file.

Why fork and not a spawned worker: the child starts with everything this process has imported (pandas,
``ncu_report``), so it costs a fork (~10-20 ms for a 150 MB process) instead of an interpreter start and the
imports (~1-2 s); and what ``ncu_report`` keeps per report it opened (~1.7 MB) goes with the child. Forking a
process with threads (a Dask worker) is safe here because the parent never calls into ``ncu_report``: no
lock of it can be held at the fork, and the child touches nothing else but its pipe before ``os._exit``.
Where ``os.fork`` does not exist (Windows) the read runs in-process.

A local batch worker is itself such a child (:mod:`roofline.batch.pool`): a process of its own whose death
the driver sees and turns into the same :class:`ReaderCrashedError`. It calls :func:`host` once, and its
reads then run in-process (a fork per ncu report cost ~13 ms CPU and ~30 ms wall there: the copy-on-write
faults of a 300 MB worker), announced to the driver before and after, with the native library's stderr
kept in a file the driver reads when the worker dies (:func:`crash_error`). ``ncu_report`` keeps ~5 MB
per report it opened for the life of the process, so once the worker has grown by its allowance its reads
fork again, and the pool replaces it after its chunk (:func:`grown`).
"""

from __future__ import annotations

import faulthandler
import os
import resource
import select
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline import errors
from roofline.errors import ReaderCrashedError, RooflineError

#: the last bytes of the child's stderr kept for the message when it dies (abseil's "Check failed: ...")
_STDERR_TAIL = 4096


class ChildBugError(RuntimeError):
    """An untyped exception in the child: a bug, reported as the pipeline reports a reader's bug."""


#: held around every fork and every once-only preparation: no fork happens while this process is inside
#: the native library (its locks and state are then consistent in the child)
_LOCK = threading.Lock()
_PREPARED: set[str] = set()


def prepare_once(key: str, fn: Callable[[], None]) -> None:
    """``fn()`` once per process, never while a child is being forked: e.g. the native library's one-time
    initialisation (``ncu_report``'s first metric access costs ~90 ms), inherited by every child after it."""
    if key in _PREPARED:
        return
    with _LOCK:
        if key not in _PREPARED:
            try:
                fn()
            finally:
                _PREPARED.add(key)


@dataclass
class _Host:
    """This process is the isolation (a local batch worker): ``announce(reader)`` before a native read,
    ``announce(None)`` after; ``err_fd``: the file its stderr goes to meanwhile; ``grow_mb``: how much its
    resident memory may grow from its first read (``base_mb``) before reads fork again."""

    announce: Callable[[str | None], None]
    err_fd: int
    grow_mb: float
    base_mb: float | None = None

    def full(self, reading: bool = False) -> bool:
        if self.base_mb is None and not reading:
            return False
        now = _rss_mb()
        if self.base_mb is None:
            self.base_mb = now
        return now is not None and self.base_mb is not None and now - self.base_mb > self.grow_mb


_HOST: list[_Host] = []


#: how much a hosting process may grow through its native reads before they fork again (MB)
HOST_GROWTH_MB = 512.0


def host(announce: Callable[[str | None], None], stderr_path: str, grow_mb: float = HOST_GROWTH_MB) -> None:
    """Make this process the isolation of its native reads (once, in a local batch worker): :func:`call`
    then runs them in-process, ``announce(reader)`` before each and ``announce(None)`` after, with fd 2
    pointed at ``stderr_path`` meanwhile, until the process has grown by ``grow_mb`` (then they fork). The
    caller must make this process's death one error naming the input (:func:`crash_error`). No core file
    is left by such a death."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    _HOST[:] = [_Host(announce, os.open(stderr_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600), grow_mb)]


def grown() -> bool:
    """Whether this hosting process has grown past its allowance (its native reads fork now): a pool
    replaces such a worker."""
    return bool(_HOST) and _HOST[0].full()


def _rss_mb() -> float | None:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def crash_error(path: str | Path, reader: str, exitcode: int | None, stderr_path: str) -> ReaderCrashedError:
    """The error of a hosting process that died inside a native read of ``path``: the words a forked
    child's death gives (``exitcode``: multiprocessing's, negative for a signal)."""
    try:
        with open(stderr_path, "rb") as fh:
            tail = _tail(fh)
    except OSError:
        tail = b""
    code = exitcode or 0
    status = (-code & 0x7F) if code < 0 else (code & 0xFF) << 8  # as waitpid's status
    return ReaderCrashedError(path, _crash_text(reader, status, tail))


def call(path: Path, fn: Callable[[], Any], reader: str = "the native reader") -> Any:
    """``fn()`` (the native part of reading ``path``) run in a forked child; its result, which must be
    plain data (dicts, lists, str, numbers, None). A :class:`RooflineError` the child raises is raised here
    as the same type; the child dying is a :class:`ReaderCrashedError` naming ``path``. In a process that
    hosts its reads (:func:`host`), ``fn()`` runs here and its errors come back as a child's would."""
    if _HOST and not _HOST[0].full(reading=True):
        return _hosted(_HOST[0], path, fn, reader)
    if not hasattr(os, "fork"):
        return fn()
    import msgspec

    with tempfile.TemporaryFile() as err:
        pid, read_fd = _fork(lambda write_fd: _child(fn, write_fd, err.fileno()))
        try:
            data = _read_all(read_fd)
            _, status = os.waitpid(pid, 0)
        except BaseException:  # interrupted (Ctrl-C): the child goes too
            _kill(pid)
            raise
        finally:
            os.close(read_fd)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0) or not data:
            raise ReaderCrashedError(path, _crash_text(reader, status, _tail(err)))
    kind, payload = msgspec.msgpack.decode(data)
    if kind == "ok":
        return payload
    raise _rebuild(path, payload)


def run(fn: Callable[[], int], timeout_s: float, cwd: str | None = None) -> tuple[int | None, bytes]:
    """``fn()`` (a native tool run on a file it was given) in a forked child, in ``cwd``, with its stdout
    dropped: (the child's ``waitpid`` status, the tail of its stderr), or (None, tail) when it ran past
    ``timeout_s`` (it is killed). ``fn()``'s return is the child's exit code; an exception in it is
    exit 1 with its traceback on stderr, as ``python -c`` gives. Forked always, hosting or not: a hang
    must cost its caller the answer, not the input."""
    with tempfile.TemporaryFile() as err:
        _flush_stderr()  # (this process's pending words are not the child's)
        pid, read_fd = _fork(lambda _: _run_child(fn, cwd, err.fileno()))  # EOF on read_fd: it exited
        try:
            poll = select.poll()
            poll.register(read_fd, select.POLLIN)
            done = bool(poll.poll(max(0, int(timeout_s * 1000))))
            if done:
                _, status = os.waitpid(pid, 0)
            else:
                _kill(pid)
        except BaseException:  # interrupted (Ctrl-C): the child goes too
            _kill(pid)
            raise
        finally:
            os.close(read_fd)
        return (status if done else None), _tail(err)


def _fork(child: Callable[[int], None]) -> tuple[int, int]:
    """(pid, read end of a pipe) of a forked ``child(write end)``, which never returns. The pipe is made and
    its write end closed here under the lock: no other fork of ours inherits it, so EOF is this child's exit."""
    with _LOCK:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            child(write_fd)
        os.close(write_fd)
    return pid, read_fd


def _run_child(fn: Callable[[], int], cwd: str | None, err_fd: int) -> None:
    code = 70
    try:
        _child_setup(err_fd)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)  # a tool's chatter must not land in this process's output (a CSV on stdout)
        if cwd is not None:
            os.chdir(cwd)
        try:
            code = int(fn())
        except BaseException:  # noqa: BLE001 - reported as python -c reports it: the traceback, exit 1
            os.write(2, traceback.format_exc().encode("utf-8", "replace"))
            code = 1
    except BaseException:  # noqa: BLE001 - nothing may escape into the parent's code paths
        code = 70
    finally:
        os._exit(code)


def _hosted(h: _Host, path: Path, fn: Callable[[], Any], reader: str) -> Any:
    import msgspec

    os.ftruncate(h.err_fd, 0)  # (the file is opened without O_APPEND: writes go from the start again)
    os.lseek(h.err_fd, 0, os.SEEK_SET)
    fault = faulthandler.is_enabled()
    faulthandler.disable()  # a native abort's words are the library's, as in a child
    saved = os.dup(2)
    h.announce(reader)
    try:
        _flush_stderr()  # (what this process wrote before goes where it was going)
        os.dup2(h.err_fd, 2)
        try:
            result = fn()
        except RooflineError as exc:
            raise _rebuild(path, _describe(exc)) from None
        except Exception as exc:  # a bug, reported as a child's would be
            raise _rebuild(path, {"type": "bug", "name": type(exc).__name__, "text": str(exc),
                                  "trace": traceback.format_exc()}) from exc
    finally:
        _flush_stderr()
        os.dup2(saved, 2)
        os.close(saved)
        h.announce(None)
        if fault:
            faulthandler.enable()
    # the child's plain data, as it arrives from a child (tuples as lists): the frames built from it are the same
    return msgspec.msgpack.decode(msgspec.msgpack.encode(result))


def _flush_stderr() -> None:
    try:
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):  # no stderr, or a closed one
        pass


def _tail(fh: Any) -> bytes:
    """The last :data:`_STDERR_TAIL` bytes of a child's stderr file (abseil's "Check failed: ..." is at its end)."""
    fh.seek(max(0, os.fstat(fh.fileno()).st_size - _STDERR_TAIL))
    return fh.read()


def _child_setup(err_fd: int) -> None:
    """What every forked child does first."""
    os.dup2(err_fd, 2)  # the native library's log lines go to the parent's message, not the terminal
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child at once (the parent reports it)
    faulthandler.disable()  # a native abort is reported by the parent, not dumped on an inherited stream
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # and leaves no core file


def _child(fn: Callable[[], Any], out_fd: int, err_fd: int) -> None:
    code = 0
    try:
        import msgspec

        _child_setup(err_fd)
        try:
            reply: Any = ("ok", fn())
        except RooflineError as exc:
            reply = ("error", _describe(exc))
        except Exception as exc:  # noqa: BLE001 - sent to the parent, which reports it as a bug
            reply = ("error", {"type": "bug", "name": type(exc).__name__, "text": str(exc),
                               "trace": traceback.format_exc()})
        data = msgspec.msgpack.encode(reply)
        view = memoryview(data)
        while view:
            view = view[os.write(out_fd, view):]
    except BaseException:  # noqa: BLE001 - nothing may escape into the parent's code paths
        code = 70
    finally:
        os._exit(code)  # no atexit handlers, no flushing of the parent's buffers


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass


def _describe(exc: RooflineError) -> dict[str, Any]:
    if isinstance(exc, errors.InputError):
        return {"type": "input", "name": type(exc).__name__, "path": exc.path, "problem": exc.problem}
    return {"type": "roofline", "name": type(exc).__name__, "text": str(exc)}


def _rebuild(path: Path, d: dict[str, Any]) -> BaseException:
    cls = getattr(errors, d["name"], None) if d["type"] != "bug" else None
    if d["type"] == "input" and isinstance(cls, type) and issubclass(cls, errors.InputError):
        exc = cls.__new__(cls)  # every InputError is (path, problem) once built, whatever its __init__ takes
        errors.InputError.__init__(exc, d["path"], d["problem"])
        return exc
    if d["type"] == "roofline" and isinstance(cls, type) and issubclass(cls, RooflineError):
        return cls(d["text"])
    text = f"{d['name']}: {d['text']}"
    if os.environ.get("ROOFLINE_DEBUG"):
        text += "\n" + d.get("trace", "")
    return ChildBugError(text)


def _crash_text(reader: str, status: int, stderr: bytes) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            how = f"was killed by {signal.Signals(sig).name}"
        except ValueError:
            how = f"was killed by signal {sig}"
    else:
        how = f"exited with status {os.WEXITSTATUS(status)}"
    why = _last_reason(stderr)
    return (f"damaged: {reader} {how} while reading it{f' ({why})' if why else ''}; the file passes the "
            "structure check but its content is damaged (other inputs are not affected)")


def _last_reason(stderr: bytes) -> str:
    """The native library's own reason, e.g. abseil's ``Check failed: count >= 0 (-372 vs. 0)``."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "Check failed" in ln:
            return ln[ln.index("Check failed"):][:200]
    for ln in reversed(lines):
        if not ln.startswith("***") and "InitializeLog" not in ln:
            return ln[:200]
    return ""


__all__ = ["ChildBugError", "call", "crash_error", "host", "run"]
