"""The charts drawn in forked processes (report/forked.py): the same files, bytes and order as one process;
every job run once; a job that fails in a child runs again here and raises here; no child left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import analysed, kernel_row
from roofline.report import write_charts, write_report
from roofline.report.forked import run_shared


def _several_devices():
    rows = []
    for d, gpu in enumerate(("GPU A", "GPU B", "GPU C")):
        for i in range(5):
            rows.append(kernel_row(kernel_id=10 * d + i, kernel_name=f"k{d}{i}", kernel_short_name=f"k{d}{i}",
                                   device_name=gpu, flop_fp32=10 ** (7 + i), dram_bytes=10 ** (5 + d),
                                   duration_s=1e-3 * (i + 1), peak_flop_per_s_fp32=2e13 * (d + 1)))
    return analysed(rows)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_charts_drawn_by_several_processes_equal_one_process_s(tmp_path):
    res = _several_devices()
    one = write_charts(res, tmp_path / "one", workers=1)
    two = write_charts(res, tmp_path / "two", workers=3)
    assert len(one) == 3 and [p.name for p in one] == [p.name for p in two]
    assert _files(tmp_path / "one") == _files(tmp_path / "two")
    page_one = write_report(res, tmp_path / "r1", workers=1)
    page_two = write_report(res, tmp_path / "r2", workers=3)
    assert [p.name for p in page_one] == [p.name for p in page_two] == [*(p.name for p in one), "report.html"]
    assert _files(tmp_path / "r1") == _files(tmp_path / "r2")


def _job(folder: Path, i: int, parent: int, tell: int):
    """Job ``i``: leaves a file named ``i.<pid>``; job 0 fails in a child, after telling so on the pipe ``tell``."""
    def job() -> None:
        if i == 0 and os.getpid() != parent:
            os.write(tell, b"x")
            raise RuntimeError("a child's failure")
        with open(folder / f"{i}.{os.getpid()}", "w"):
            pass
    return job


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork: one process runs everything")
def test_every_job_runs_once_and_a_childs_failed_job_runs_again_here(tmp_path):
    me = os.getpid()
    hear, tell = os.pipe()
    jobs = [_job(tmp_path, i, me, tell) for i in range(8)]
    try:
        # meanwhile returns once a child has failed job 0 (the first one taken: this process takes none before)
        assert run_shared(jobs, lambda: os.read(hear, 1), workers=2) == b"x"
    finally:
        os.close(hear)
        os.close(tell)
    done = [p.name.split(".") for p in tmp_path.iterdir()]
    assert sorted(int(i) for i, _ in done) == list(range(8))  # each job finished once
    assert [int(pid) for i, pid in done if i == "0"] == [me]  # the failed one, again here
    for pid in {int(pid) for _, pid in done} - {me}:  # the child that did the others is gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_job_that_fails_everywhere_raises_its_error_here_and_leaves_no_child(tmp_path):
    def bad() -> None:
        with open(tmp_path / str(os.getpid()), "w"):
            pass
        raise ValueError("cannot draw")

    with pytest.raises(ValueError, match="cannot draw"):
        run_shared([bad, bad, bad], lambda: None, workers=2)
    for pid in {int(p.name) for p in tmp_path.iterdir()} - {os.getpid()}:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_one_worker_runs_the_jobs_then_meanwhile_in_order_here():
    seen: list[object] = []
    result = run_shared([lambda: seen.append((1, os.getpid())), lambda: seen.append((2, os.getpid()))],
                        lambda: seen.append("meanwhile") or "done", workers=1)
    assert result == "done" and seen == [(1, os.getpid()), (2, os.getpid()), "meanwhile"]


def test_no_process_to_fork_runs_everything_here(monkeypatch):
    def no_fork() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    seen: list[int] = []
    assert run_shared([lambda i=i: seen.append(i) for i in range(5)], lambda: "page", workers=4) == "page"
    assert sorted(seen) == list(range(5))


def test_the_collections_freeze_during_the_charts_is_undone_and_a_callers_own_is_kept():
    import gc

    def frozen_while_running() -> int:
        return gc.get_freeze_count()

    assert gc.get_freeze_count() == 0
    seen = run_shared([lambda: None, lambda: None], frozen_while_running, workers=2)
    assert seen > 0 and gc.get_freeze_count() == 0  # frozen while the children ran, thawed after
    gc.freeze()
    try:
        run_shared([lambda: None, lambda: None], lambda: None, workers=2)
        assert gc.get_freeze_count() > 0  # (a caller's own freeze, as a batch worker's, is not thawed)
    finally:
        gc.unfreeze()
