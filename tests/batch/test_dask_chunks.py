"""Dask tasks carry chunks of inputs (issue 23 item 2): the chunk sizing, the progress line, and a
real `dask.distributed.LocalCluster` (TCP, two single-thread workers) giving byte for byte the
dataset of a serial run, with every input (good, corrupt, missing) accounted for once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_batch import _assert_same_dataset, _corrupt

from roofline import samples
from roofline.batch import open_dataset, run_batch
from roofline.batch.runner import MAX_CHUNK, BatchSummary, ChunkSizer

pytestmark = pytest.mark.xdist_group("batch")


def test_chunks_start_at_one_input_then_aim_at_the_target_time() -> None:
    sizer = ChunkSizer(total=10_000, slots=2, target_s=0.5)
    assert sizer.size() == 1  # nothing measured yet
    sizer.observe(1, 0.01)  # 10 ms per input: 50 inputs make half a second
    assert sizer.size() == 50
    sizer.observe(10, 1.0)  # a slower chunk (0.1 s per input) moves the average, not all the way
    assert sizer.per_input_s == pytest.approx(0.7 * 0.01 + 0.3 * 0.1)
    assert sizer.size() == int(0.5 / (0.7 * 0.01 + 0.3 * 0.1))


def test_chunks_are_capped_and_the_tail_is_shared_between_workers() -> None:
    sizer = ChunkSizer(total=10_000, slots=2, target_s=0.5)
    sizer.observe(1000, 1e-4)  # skipped inputs: microseconds each
    assert sizer.size() == MAX_CHUNK
    tail = ChunkSizer(total=20, slots=2, target_s=0.5)
    tail.observe(1, 1e-3)
    taken = [len(tail.take(iter([("p", "r", "run", None)] * 100))) for _ in range(6)]
    # at most a quarter of what is left (two workers, two tasks each), never zero while inputs remain
    assert taken == [5, 4, 3, 2, 2, 1]


def test_progress_text_has_files_per_second_and_eta() -> None:
    s = BatchSummary(out="x", inputs=1000, ok=90, failed=10, skipped=100, elapsed_s=10.0)
    # 100 read in 10 s: 10 files/s; 200 of 1000 done at 20 inputs/s: 40 s left
    assert s.progress_text() == "ok 90 · failed 10 · skipped 100 · 10.0 files/s · ETA 00:40"
    assert BatchSummary(out="x", inputs=5).progress_text().endswith("ETA --:--")
    long = BatchSummary(out="x", inputs=100_000, ok=10, elapsed_s=10.0)
    assert long.progress_text().endswith("ETA 27:46:30")


def _inputs(folder: Path, copies: int) -> list[Path]:
    src = next(p for p in samples.paths() if p.name.endswith(".ncu-rep"))
    out = []
    for i in range(copies):
        run = folder / f"run{i % 3}"
        run.mkdir(parents=True, exist_ok=True)
        out.append(Path(shutil.copyfile(src, run / f"copy{i:03d}.ncu-rep")))
    return out + _corrupt(folder / "bad") + [folder / "bad" / "missing.ncu-rep"]


def test_chunked_dask_batch_equals_the_serial_one(tmp_path: Path) -> None:
    from distributed import LocalCluster

    inputs = _inputs(tmp_path / "in", 16)
    serial = run_batch(inputs, tmp_path / "serial", workers=1)
    assert serial.ok + serial.failed == len(inputs) and serial.failed == 7
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                      dashboard_address=":0") as cluster:  # any free port: no clash on 8787
        seen: list[str] = []
        summary = run_batch(inputs, tmp_path / "dask", scheduler=cluster.scheduler_address,
                            progress=lambda res, _s: seen.append(res["path"]))
        again = run_batch(inputs, tmp_path / "dask", scheduler=cluster.scheduler_address)
    assert sorted(seen) == sorted(map(str, inputs))  # every input reported once
    assert (summary.ok, summary.failed, summary.kernels) == (serial.ok, serial.failed, serial.kernels)
    _assert_same_dataset(tmp_path / "serial", tmp_path / "dask")
    assert len(open_dataset(tmp_path / "dask", "errors")) == 7
    # a re-run skips everything (in big chunks) and changes nothing
    assert (again.skipped, again.ok, again.failed) == (len(inputs) - 1, 0, 1)  # the missing file is always retried
    _assert_same_dataset(tmp_path / "serial", tmp_path / "dask")
