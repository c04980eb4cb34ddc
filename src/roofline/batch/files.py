"""The files of a dataset: durable atomic writes, temporaries and who wrote them, the writer's lock, and
the check that a part is a whole Parquet file.

Durability (issue 40): a part is written to a hidden temporary, ``fsync``'ed, renamed into place, and its
folder ``fsync``'ed, before anything that refers to it (an input's ``runs`` row, the manifest) is written.
Without that, a power loss after the rename can leave a 0-byte part that the manifest already counts.
"""

from __future__ import annotations

import os
import re
import socket
import time
import uuid
from pathlib import Path

from roofline.errors import RooflineError, path_text

PARQUET_MAGIC = b"PAR1"


class DatasetError(RooflineError):
    """A folder that is not a roofline dataset, one written by an incompatible version, or a damaged part."""


class DatasetGoneError(DatasetError):
    """The dataset folder (its manifest) vanished while a batch was writing it: writing stops, nothing is
    re-created in its place (a folder without its manifest would be unreadable)."""


class DamagedPartError(DatasetError):
    """A part that is not a whole Parquet file (0 bytes, cut short): names the file; a re-run of the batch
    moves it aside and reads its inputs again."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        super().__init__(f"{path_text(path)}: damaged dataset part ({problem}); run the batch again to move it "
                         "aside and re-read its inputs")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def temporary(path: Path) -> Path:
    """The temporary file a writer fills before renaming it to ``path``: hidden from Arrow (leading
    '.'), and naming its writer (host, pid) so a later batch removes it only once the writer is gone."""
    return path.with_name(f".{path.name}.{_host()}.{os.getpid()}.tmp")


def writer_gone(tmp: Path, stale_s: float = 24 * 3600) -> bool:
    """Whether the writer of a temporary file is gone: its pid is dead on this host; on another
    host (a Dask worker), the file has not changed for ``stale_s``."""
    parts = tmp.name.rsplit(".", 3)  # .<name>.<host>.<pid>.tmp
    if len(parts) == 4 and parts[3] == "tmp" and parts[2].isdigit():
        host, pid = parts[1], int(parts[2])
        if host == _host():
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            except PermissionError:
                return False  # alive, someone else's
            return _zombie(pid)  # killed but not yet reaped (its parent died with it): gone all the same
    try:
        return time.time() - tmp.stat().st_mtime > stale_s
    except OSError:
        return False


def _zombie(pid: int) -> bool:
    """Whether a pid that still exists is a zombie (Linux /proc; elsewhere: assume alive)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # "pid (comm) S ...": comm may hold spaces and parentheses, the state follows the last ')'
    return stat_line.rpartition(")")[2].split()[:1] == ["Z"]


def fsync_dir(folder: Path) -> None:
    """Make a rename inside ``folder`` durable (POSIX: the entry lives in the folder). Best effort where a
    file system does not support it (some network file systems refuse fsync on a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_durably(path: Path, write: object, sync_dir: bool = True) -> None:
    """Write ``path`` through a temporary: ``write(file object)`` fills it, it is fsync'ed and renamed into
    place, and its folder fsync'ed (``sync_dir``; a caller renaming several files syncs the folder once).
    A failed write leaves nothing behind."""
    tmp = temporary(path)
    try:
        with open(tmp, "wb") as fh:
            write(fh)  # type: ignore[operator]
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    if sync_dir:
        fsync_dir(path.parent)


def atomic_write_bytes(path: Path, data: bytes, make_parents: bool = True) -> None:
    if make_parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    write_durably(path, lambda fh: fh.write(data))


def check_part(path: Path) -> None:
    """Raise :class:`DamagedPartError` unless ``path`` starts and ends with Parquet's magic bytes (a 0-byte
    or cut-short part: what a power loss after an unsynced rename leaves). Reads 8 bytes."""
    try:
        size = path.stat().st_size
        if size < 12:
            raise DamagedPartError(path, f"{size} bytes")
        with open(path, "rb") as fh:
            head = fh.read(4)
            fh.seek(-4, os.SEEK_END)
            tail = fh.read(4)
    except OSError as exc:
        raise DamagedPartError(path, f"unreadable: {exc.strerror or exc}") from None
    if head != PARQUET_MAGIC or tail != PARQUET_MAGIC:
        raise DamagedPartError(path, "not a whole Parquet file")


def new_token() -> str:
    """A short id unique to one writer process (part names, the batch in the lock file)."""
    return uuid.uuid4().hex[:12]


LOCK = "_roofline.lock"


class DatasetLock:
    """One writer per dataset: an exclusive ``flock`` on ``<dataset>/_roofline.lock``, held for a batch.

    The kernel drops the lock when its holder dies (even by SIGKILL), so a killed batch never leaves
    the dataset locked. ``flock`` is per host on some network file systems: two hosts writing one
    dataset are not excluded there. The file holds the holder's pid, host and batch token: a Dask task
    of a batch whose driver is gone sees another token (or none) there and stops writing
    (:func:`batch_alive`).
    """

    def __init__(self, root: Path, token: str = "") -> None:
        import fcntl

        self.path = root / LOCK
        self.token = token
        try:
            self.fh = open(self.path, "a+")  # noqa: SIM115 - held open for the batch
        except OSError as exc:  # a read-only dataset, a folder where the lock file goes
            raise DatasetError(f"{path_text(self.path)}: cannot open the dataset's lock file: "
                               f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.fh.seek(0)
            holder = self.fh.read().strip().split(" batch ")[0] or "another process"
            self.fh.close()
            raise DatasetError(f"{path_text(root)}: another batch is writing this dataset ({holder}); wait for it to "
                               "finish or give another --out") from None
        self.fh.seek(0)
        self.fh.truncate()
        self.fh.write(f"pid {os.getpid()} on {socket.gethostname()}" + (f" batch {token}" if token else "") + "\n")
        self.fh.flush()

    def release(self) -> None:
        import fcntl

        if not self.fh.closed:
            self.fh.truncate(0)  # no holder any more (and equal datasets stay byte-identical)
            fcntl.flock(self.fh, fcntl.LOCK_UN)
            self.fh.close()

    def __enter__(self) -> DatasetLock:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


def batch_alive(root: Path, token: str) -> bool:
    """Whether the batch ``token`` still holds the dataset: its lock file names it. A driver that ended
    (the file is emptied) or was replaced by another batch (another token) is gone. A SIGKILLed driver
    leaves its token in the file until the next batch: :func:`heartbeat_stale` covers that case."""
    try:
        return f" batch {token}\n" in (root / LOCK).read_text()
    except OSError:
        return False


def heartbeat(root: Path) -> None:
    """The driver's sign of life for Dask tasks: the lock file's modification time (see :func:`heartbeat_age`)."""
    try:
        os.utime(root / LOCK)
    except OSError:
        pass


def heartbeat_age(root: Path) -> float:
    """Seconds since the driver's last heartbeat, by the lock file's mtime against this host's clock (the
    same clock on a local cluster; clocks of a shared file system's clients differ by far less than the
    staleness a task tolerates)."""
    try:
        return time.time() - (root / LOCK).stat().st_mtime
    except OSError:
        return float("inf")
