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
"""

from __future__ import annotations

import faulthandler
import os
import resource
import signal
import tempfile
import threading
import traceback
from collections.abc import Callable
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


def call(path: Path, fn: Callable[[], Any], reader: str = "the native reader") -> Any:
    """``fn()`` (the native part of reading ``path``) run in a forked child; its result, which must be
    plain data (dicts, lists, str, numbers, None). A :class:`RooflineError` the child raises is raised here
    as the same type; the child dying is a :class:`ReaderCrashedError` naming ``path``."""
    if not hasattr(os, "fork"):
        return fn()
    import msgspec

    read_fd, write_fd = os.pipe()
    with tempfile.TemporaryFile() as err:
        with _LOCK:
            pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            _child(fn, write_fd, err.fileno())
        os.close(write_fd)
        try:
            data = _read_all(read_fd)
            _, status = os.waitpid(pid, 0)
        except BaseException:  # interrupted (Ctrl-C): the child goes too
            _kill(pid)
            raise
        finally:
            os.close(read_fd)
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0) or not data:
            err.seek(max(0, os.fstat(err.fileno()).st_size - _STDERR_TAIL))
            raise ReaderCrashedError(path, _crash_text(reader, status, err.read()))
    kind, payload = msgspec.msgpack.decode(data)
    if kind == "ok":
        return payload
    raise _rebuild(path, payload)


def _child(fn: Callable[[], Any], out_fd: int, err_fd: int) -> None:
    code = 0
    try:
        import msgspec

        os.dup2(err_fd, 2)  # the native library's log lines go to the parent's message, not the terminal
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child at once (the parent reports it)
        faulthandler.disable()  # a native abort is reported by the parent, not dumped on an inherited stream
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # and leaves no core file
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


__all__ = ["ChildBugError", "call"]
