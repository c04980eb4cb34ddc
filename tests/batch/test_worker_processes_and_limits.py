"""The batch's processes under faults (issue 40 item 8 and the local pool's limits): a per-input time and
memory limit, a worker killed mid-input (run again alone before it is blamed), workers that stop when the
driver dies; on Dask, a wrong address, a closed port, a silent listener and a cluster without workers give
a clear error instead of a hang, a task of a gone batch writes nothing, and a worker's freed memory is handed
back between chunks.

Real processes throughout: the forkserver pool, a real `dask.distributed.LocalCluster`, real SIGKILLs (found
with psutil, the real process table). Slow inputs are sparse files: hashing a 1 GiB hole takes a while and
costs no disk."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest

from conftest import OWN
from conftest import cli as _cli
from roofline.batch import DaskSettings, Limits, open_dataset, run_batch
from roofline.batch import dataset as dset
from roofline.batch.cluster import ClusterError, connect, release_memory
from roofline.batch.worker import Chunk, Item, Options, process_chunk

TINY = OWN / "tiny_metrics.csv"


def _tiny(folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copyfile(TINY, folder / f"t{i:02d}.csv")) for i in range(n)]


def _sparse(path: Path, gib: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.truncate(gib << 30)
    return path


def _kinds(root: Path) -> dict[str, str]:
    errors = open_dataset(root, "errors")
    return dict(zip(errors["source_file"].astype(str), errors["error_kind"].astype(str)))


def test_an_input_over_the_time_limit_fails_alone_and_the_batch_finishes(tmp_path):
    big = _sparse(tmp_path / "in" / "a_big.ncu-rep", 16)  # its hash alone takes seconds
    tiny = _tiny(tmp_path / "in", 3)
    summary = run_batch([tmp_path / "in"], tmp_path / "ds", workers=1, limits=Limits(time_s=0.3))
    assert (summary.ok, summary.failed) == (3, 1)
    assert _kinds(tmp_path / "ds") == {str(big): "time-limit"}
    assert sorted(open_dataset(tmp_path / "ds", "runs")["source_file"]) == sorted(map(str, tiny))
    assert "--input-timeout" in open_dataset(tmp_path / "ds", "errors")["message"].iloc[0]


def test_an_input_over_the_memory_limit_fails_alone(tmp_path):
    tiny = _tiny(tmp_path / "in", 2)
    big = tmp_path / "in" / "big.pt.trace.json"
    with open(big, "wb") as fh:  # read whole and decoded: well over 400 MB resident; a tiny CSV's worker ~100 MB
        fh.write(b'{"traceEvents": [], "pad": "')
        fh.write(b"x" * (500 << 20))
        fh.write(b'"}')
    summary = run_batch([tmp_path / "in"], tmp_path / "ds", workers=1, limits=Limits(memory_mb=400))
    assert (summary.ok, summary.failed) == (2, 1)
    assert _kinds(tmp_path / "ds") == {str(big): "memory-limit"}
    assert len(open_dataset(tmp_path / "ds", "runs")) == len(tiny)


def _kill_readers_of(path: Path, times: int, stop: threading.Event) -> list[int]:
    """SIGKILL the first ``times`` processes seen with ``path`` open (the workers reading it)."""
    killed: list[int] = []
    me = psutil.Process()
    while len(killed) < times and not stop.is_set():
        for proc in me.children(recursive=True):
            try:
                if proc.pid not in killed and any(f.path == str(path) for f in proc.open_files()):
                    proc.kill()
                    killed.append(proc.pid)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        stop.wait(0.005)  # (a poll of the process table, not a timing assumption)
    return killed


@pytest.mark.parametrize("kills", [1, 2])
def test_a_worker_killed_mid_input_is_run_again_alone_and_blamed_only_if_it_dies_twice(tmp_path, kills):
    big = _sparse(tmp_path / "in" / "a_big.ncu-rep", 1)
    tiny = _tiny(tmp_path / "in", 4)
    stop = threading.Event()
    killer = threading.Thread(target=_kill_readers_of, args=(big, kills, stop), daemon=True)
    killer.start()
    try:
        summary = run_batch([tmp_path / "in"], tmp_path / "ds", workers=2)
    finally:
        stop.set()
        killer.join()
    assert summary.ok == len(tiny) and summary.failed == 1  # (a 1 GiB hole is no report either way)
    kind = _kinds(tmp_path / "ds")[str(big)]
    assert (kind == "worker-died") == (kills == 2), kind  # once: read again alone, failing for its own reason


def test_workers_stop_when_the_driver_is_killed(tmp_path):
    big = _sparse(tmp_path / "in" / "a_big.ncu-rep", 64)  # keeps a worker busy far longer than this test
    _tiny(tmp_path / "in", 2)
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    driver = subprocess.Popen([sys.executable, "-m", "roofline", "batch", str(tmp_path / "in"), "-o",
                               str(tmp_path / "ds"), "-j", "2", "--input-timeout", "0"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc = psutil.Process(driver.pid)
    reader = None
    while reader is None and driver.poll() is None:  # until a worker is reading the big input
        for child in proc.children(recursive=True):
            try:
                if any(f.path == str(big) for f in child.open_files()):
                    reader = child
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        try:
            driver.wait(0.005)  # (a poll of the process table, not a timing assumption)
        except subprocess.TimeoutExpired:
            pass
    assert reader is not None
    workers = proc.children(recursive=True)
    driver.send_signal(signal.SIGKILL)  # the driver only, not its process group
    driver.wait()
    _gone, alive = psutil.wait_procs(workers, timeout=60)
    assert alive == [], [p.pid for p in alive]


# ---- Dask ---------------------------------------------------------------------------------------------

def test_a_wrong_scheduler_address_is_one_clear_line(tmp_path):
    res = _cli("batch", TINY, "-o", tmp_path / "ds", "--scheduler", "http://head:8786")
    assert res.returncode == 1 and "is not a Dask scheduler address" in res.stderr
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr


def test_a_closed_port_or_a_silent_listener_fails_within_the_connect_timeout(tmp_path):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(ClusterError, match="cannot connect"):
        connect(f"tcp://127.0.0.1:{port}", 1.0)
    silent = socket.socket()  # accepts, never answers: Dask's own timeout does not cover it
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    try:
        with pytest.raises(ClusterError, match="no Dask scheduler answered"):
            connect(f"tcp://127.0.0.1:{silent.getsockname()[1]}", 1.0)
    finally:
        silent.close()


def test_a_cluster_without_workers_stops_the_batch_with_a_clear_error(tmp_path):
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster, \
            pytest.raises(ClusterError, match="has no worker"):
        run_batch([TINY], tmp_path / "ds", scheduler=cluster.scheduler_address,
                  dask=DaskSettings(connect_s=10, stall_s=1))
    assert open_dataset(tmp_path / "ds", "runs").empty  # nothing half-written; a re-run resumes


def test_a_task_of_a_batch_whose_driver_is_gone_writes_nothing(tmp_path):
    root = tmp_path / "ds"
    dset.init_dataset(root)
    chunk = Chunk(str(root), 1, Options(), tuple(Item(str(p), "r") for p in _tiny(tmp_path / "in", 2)), token="t0")
    with dset.DatasetLock(root, "another-batch"):  # the lock names another batch: this one's driver is gone
        results, _ = process_chunk(chunk)
    assert results == [] and not (root / "runs").exists()
    with dset.DatasetLock(root, "t0"):
        results, _ = process_chunk(chunk)
    assert [r["status"] for r in results] == ["ok", "ok"]


def _fragment_and_release() -> tuple[float, float, float]:
    """On a worker: fill the heap with 300 MB of small blocks, free all but every 64th (nothing at the
    heap's top can be returned), then release: resident MB before, after freeing, after release_memory."""
    from roofline.batch.pool import rss_mb

    base = rss_mb(os.getpid()) or 0.0
    blocks = [bytes(4000) + i.to_bytes(4, "little") for i in range(75_000)]
    keep = blocks[::64]
    del blocks
    freed = rss_mb(os.getpid()) or 0.0
    release_memory()
    after = rss_mb(os.getpid()) or 0.0
    del keep
    return base, freed, after


def test_a_dask_worker_hands_freed_memory_back_between_chunks():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        base, freed, after = client.submit(_fragment_and_release, pure=False).result()
    assert freed - base > 200  # glibc keeps the freed blocks: resident memory stays up
    assert after - base < 0.5 * (freed - base)  # handed back
