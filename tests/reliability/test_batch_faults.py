"""roofline batch under faults: no input lost, one writer per dataset, exit codes as documented.

Real worker processes (forkserver pool) and, where Dask is involved, a real LocalCluster; the
inputs are a few copies of the project's own small CSV fixture so that each test stays cheap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import OWN
from conftest import cli as _cli
from roofline.batch import open_dataset, run_batch
from roofline.batch.dataset import DatasetLock, init_dataset, writer_gone
from roofline.errors import path_text

TINY = OWN / "tiny_metrics.csv"


def _inputs(folder: Path) -> list[Path]:
    """Three good inputs, two with names that are not valid UTF-8 (one a folder: the run label), one bad."""
    odd_dir = Path(os.fsdecode(bytes(folder) + b"/r\xff"))
    (folder / "runA").mkdir(parents=True)
    odd_dir.mkdir()
    files = [folder / "runA" / "a.csv", Path(os.fsdecode(bytes(folder) + b"/runA/n\xe9.csv")), odd_dir / "c.csv"]
    for f in files:
        shutil.copyfile(TINY, f)
    (folder / "runA" / "bad.csv").write_text("not a profile\n")
    return files + [folder / "runA" / "bad.csv"]


def _sources(root: Path, table: str) -> list[str]:
    return sorted(open_dataset(root, table)["source_file"].astype(str))


def test_non_utf8_file_and_folder_names_are_read_and_stored_escaped(tmp_path):
    files = _inputs(tmp_path / "in")
    res = _cli("batch", tmp_path / "in", "-o", tmp_path / "ds", "-j", "1")
    assert res.returncode == 1, res.stderr  # bad.csv
    assert "internal error" not in res.stderr and "4 inputs: 3 ok, 1 failed" in res.stdout
    runs = _sources(tmp_path / "ds", "runs")
    assert any(s.endswith("/runA/n\\xe9.csv") for s in runs) and any("/r\\xff/c.csv" in s for s in runs)
    assert _sources(tmp_path / "ds", "errors") == [str(files[3])]
    # analyze on a non-UTF-8 name: read, stored escaped (Arrow-safe), printed
    one = _cli("analyze", files[1], "--format", "csv")
    assert one.returncode == 0, one.stderr
    assert "n\\xe9.csv" in one.stdout


def test_a_part_that_cannot_be_written_fails_its_inputs_only_and_the_next_run_reads_them_again(tmp_path):
    files = _inputs(tmp_path / "in")
    root = tmp_path / "ds"
    init_dataset(root)
    (root / "kernels").write_text("a file where the kernels folder goes")
    summary = run_batch([tmp_path / "in"], root, workers=1)
    assert (summary.inputs, summary.ok, summary.failed) == (4, 0, 4)
    errors = open_dataset(root, "errors")
    assert sorted(errors["error_kind"].astype(str)) == ["unknown-format", "write-error", "write-error", "write-error"]
    assert open_dataset(root, "runs").empty
    (root / "kernels").unlink()
    again = run_batch([tmp_path / "in"], root, workers=1)  # no --retry-errors: the writes failed, not the inputs
    assert (again.ok, again.failed, again.skipped, again.skipped_failed) == (3, 0, 1, 1)
    assert _sources(root, "runs") == sorted(path_text(f) for f in files[:3])
    assert _sources(root, "errors") == [str(files[3])]


def test_a_second_writer_is_locked_out_with_a_clear_message(tmp_path):
    _inputs(tmp_path / "in")
    root = tmp_path / "ds"
    init_dataset(root)
    with DatasetLock(root):
        res = _cli("batch", tmp_path / "in", "-o", root, "-j", "1")
    assert res.returncode == 1
    assert "another batch is writing this dataset" in res.stderr and "Traceback" not in res.stderr
    assert open_dataset(root, "runs").empty  # the locked-out batch wrote nothing
    assert _cli("batch", tmp_path / "in", "-o", root, "-j", "1").returncode == 1  # free again: runs (bad.csv fails)


def test_temporaries_are_removed_only_when_their_writer_is_gone(tmp_path):
    root = tmp_path / "ds"
    init_dataset(root)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    part = root / "kernels" / "run=x"
    part.mkdir(parents=True)
    from roofline.batch.dataset import _host

    live_tmp = part / f".a.parquet.{_host()}.{os.getpid()}.tmp"  # this test process: alive, writing
    dead_tmp = part / f".b.parquet.{_host()}.{int(dead.stdout)}.tmp"
    live_tmp.write_bytes(b"half")
    dead_tmp.write_bytes(b"half")
    assert not writer_gone(live_tmp) and writer_gone(dead_tmp)
    run_batch([TINY], root, workers=1)
    assert live_tmp.exists() and not dead_tmp.exists()


def test_a_resumed_batch_with_failures_in_its_errors_table_exits_1(tmp_path):
    _inputs(tmp_path / "in")
    first = _cli("batch", tmp_path / "in", "-o", tmp_path / "ds", "-j", "1")
    again = _cli("batch", tmp_path / "in", "-o", tmp_path / "ds", "-j", "1")
    assert first.returncode == 1 and again.returncode == 1, again.stderr
    assert "4 skipped" in again.stdout and "1 in an earlier batch" in again.stderr


@pytest.mark.parametrize("kind", ["file", "under-a-file"])
def test_an_output_path_of_the_wrong_kind_is_a_clear_error(tmp_path, kind):
    afile = tmp_path / "taken"
    afile.write_text("x")
    out = afile if kind == "file" else afile / "sub"
    res = _cli("batch", TINY, "-o", out)
    assert res.returncode == 1, res.stderr
    assert str(out) in res.stderr and "internal error" not in res.stderr and "Traceback" not in res.stderr


def test_on_a_dask_cluster_non_utf8_names_and_unwritable_parts_lose_no_input(tmp_path):
    from distributed import LocalCluster

    _inputs(tmp_path / "in")
    root = tmp_path / "ds"
    init_dataset(root)
    (root / "roofline").write_text("not a folder")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        summary = run_batch([tmp_path / "in"], root, scheduler=cluster.scheduler_address)
        assert (summary.inputs, summary.ok, summary.failed) == (4, 0, 4)
        assert len(_sources(root, "runs")) + len(_sources(root, "errors")) == 4
        (root / "roofline").unlink()
        again = run_batch([tmp_path / "in"], root, scheduler=cluster.scheduler_address)
    assert (again.ok, again.skipped) == (3, 1)
    assert any("/r\\xff/c.csv" in s for s in _sources(root, "runs"))


@pytest.mark.parametrize("args", [["compare", TINY, TINY, "--html", "{dir}"], ["report", TINY, "-o", "{file}"],
                                  ["analyze", TINY, "--html", "{file}/r.html"]])
def test_other_outputs_of_the_wrong_kind_exit_1_not_3(tmp_path, args):
    afile = tmp_path / "taken"
    afile.write_text("x")
    res = _cli(*[str(a).format(dir=tmp_path, file=afile) for a in args])
    assert res.returncode == 1, res.stderr  # compare --html onto a folder was exit 3, "internal error"
    assert "cannot write" in res.stderr and "internal error" not in res.stderr


def test_a_temporary_of_a_killed_but_unreaped_writer_counts_as_gone(tmp_path):
    import subprocess as sp

    from roofline.batch import dataset as dset

    # a child that exits and is not waited for stays a zombie: its pid exists, its writer is gone
    child = sp.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # waits for its exit without reaping it
    assert dset._zombie(child.pid)
    tmp = tmp_path / f".part.parquet.{dset._host()}.{child.pid}.tmp"
    tmp.write_bytes(b"x")
    assert dset.writer_gone(tmp)
    child.wait()
    live = tmp_path / f".part.parquet.{dset._host()}.{os.getpid()}.tmp"
    live.write_bytes(b"x")
    assert not dset.writer_gone(live)  # this process writes it: never removed under it
