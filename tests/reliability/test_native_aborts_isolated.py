"""A native abort takes one input down, never the run: ``.ncu-rep`` reports are read in a forked child.

The aborting input is a real one-byte mutation of a shared report (the recipe, not a copy, is stored here):
it passes the structure check and makes NVIDIA's ``ncu_report`` fail an abseil CHECK (SIGABRT). Found by
trying the first 12 bytes of every record header of the report with 9 values each (725 mutations passing
the structure check, 19 of them aborting); the search script is in ``tests/fixtures/README.md``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import roofline
from conftest import OWN, shared
from conftest import cli as _cli
from roofline import errors
from roofline.ingest.ncu.report import check_structure

#: (shared report, offset, new byte): ncu_report aborts with "Check failed: count >= 0 (-372 vs. 0)"
ABORTING = ("ncu/sm120_rtx5060ti_transpose_custom-metrics.ncu-rep", 40766, 0x01)
GOOD = "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"
OWN_CSV = OWN / "tiny_metrics.csv"


def aborting_report(folder: Path, name: str = "bad.ncu-rep") -> Path:
    rel, offset, byte = ABORTING
    data = bytearray(shared(rel).read_bytes())
    data[offset] = byte
    out = folder / name
    out.write_bytes(bytes(data))
    check_structure(out)  # the mutation passes the structure check: only the child boundary catches it
    return out


def test_a_report_that_makes_ncu_report_abort_is_one_typed_error_naming_it(tmp_path):
    bad = aborting_report(tmp_path)
    with pytest.raises(errors.ReaderCrashedError, match="SIGABRT") as info:
        roofline.read(bad)
    assert info.value.path == str(bad) and "Check failed" in str(info.value)
    with pytest.raises(errors.ReaderCrashedError):
        roofline.read_metrics(bad)
    assert len(roofline.read(shared(GOOD))) == 4  # this process is alive and reads on


def test_analyze_report_and_compare_keep_the_good_report_and_give_the_bad_one_one_line(tmp_path):
    bad = aborting_report(tmp_path)
    good = tmp_path / "good.ncu-rep"
    shutil.copyfile(shared(GOOD), good)
    res = _cli("analyze", good, bad)
    assert res.returncode == 1 and "4 kernel row(s)" in res.stdout
    lines = [ln for ln in res.stderr.splitlines() if "bad.ncu-rep" in ln]
    assert len(lines) == 1 and "ncu_report was killed by SIGABRT" in lines[0]
    assert "Check failure stack trace" not in res.stderr and "Traceback" not in res.stderr
    res = _cli("report", good, bad, "-o", tmp_path / "out")
    assert res.returncode == 1 and (tmp_path / "out" / "report.html").is_file()
    res = _cli("compare", good, bad)
    assert res.returncode == 1 and "SIGABRT" in res.stderr and "Traceback" not in res.stderr


def _batch_inputs(folder: Path, n_good: int) -> None:
    folder.mkdir()
    for i in range(n_good):
        shutil.copyfile(shared(GOOD), folder / f"good{i}.ncu-rep")
    aborting_report(folder)


def _errors(root: Path) -> list[tuple[str, str]]:
    frame = roofline.batch.open_dataset(root, "errors")
    return sorted(zip(frame["source_file"].map(lambda s: Path(s).name), frame["error_kind"]))


def test_a_batch_records_the_aborting_report_and_every_good_one_on_a_local_pool(tmp_path):
    from roofline.batch import run_batch

    _batch_inputs(tmp_path / "in", 3)
    summary = run_batch([tmp_path / "in"], tmp_path / "ds", workers=2)
    assert (summary.ok, summary.failed) == (3, 1)
    assert _errors(tmp_path / "ds") == [("bad.ncu-rep", "reader-crashed")]


def test_on_a_dask_worker_with_four_threads_no_good_report_is_lost(tmp_path):
    """Before: the worker died with its three other tasks, recorded as worker-died (3 of 22 lost)."""
    from distributed import LocalCluster

    from roofline.batch import run_batch

    _batch_inputs(tmp_path / "in", 7)
    with LocalCluster(n_workers=1, threads_per_worker=4, processes=True, dashboard_address=None) as cluster:
        summary = run_batch([tmp_path / "in"], tmp_path / "ds", scheduler=cluster.scheduler_address)
    assert (summary.ok, summary.failed) == (7, 1)
    assert _errors(tmp_path / "ds") == [("bad.ncu-rep", "reader-crashed")]


def test_on_dask_a_task_whose_worker_died_is_retried_alone_before_it_is_blamed(tmp_path):
    """The worker dies with every task it holds; each is re-run alone (in a process on the driver, where
    the injected crash does not happen): no input is lost, none is blamed for another's crash."""
    import dask
    from distributed import Client, LocalCluster, WorkerPlugin

    from roofline.batch import run_batch

    class DieOn(WorkerPlugin):  # fault injection on a real cluster: the worker's process_chunk kills its process
        name = "roofline-die-on"  # when a chunk holds an input named die*, as a native crash would

        def setup(self, worker) -> None:  # type: ignore[no-untyped-def]
            import os

            from roofline.batch import cluster as c

            real = c.process_chunk

            def dying(chunk):  # type: ignore[no-untyped-def]
                if any(Path(item.path).name.startswith("die") for item in chunk.items):
                    os._exit(1)
                return real(chunk)

            c.process_chunk = dying

    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("a", "b", "c", "die"):
        shutil.copyfile(OWN_CSV, folder / f"{name}.csv")
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            LocalCluster(n_workers=1, threads_per_worker=4, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            client.register_plugin(DieOn())
        summary = run_batch([folder], tmp_path / "ds", scheduler=cluster.scheduler_address)
    assert (summary.ok, summary.failed) == (4, 0)
