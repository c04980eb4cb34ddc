"""A native abort takes one input down, never the run: ``.ncu-rep`` reports are read in a forked child.

The aborting input is a real one-byte mutation of a shared report (the recipe, not a copy, is stored here):
it passes the structure check and makes NVIDIA's ``ncu_report`` fail an abseil CHECK (SIGABRT). Found by
trying the first 12 bytes of every record header of the report with 9 values each (725 mutations passing
the structure check, 19 of them aborting); the search script is in ``tests/fixtures/README.md``.
"""

from __future__ import annotations

import os
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


# ---- a local batch worker is itself the isolation: no fork per read, its death is the input's crash ----

def _chunk_on_one_worker(root: Path, names: list[Path]) -> tuple[list[dict], set[int]]:
    """One chunk of these inputs on a one-worker local pool: every summary it gives (re-runs included), and
    the worker processes that gave them."""
    from roofline.batch import dataset as dset
    from roofline.batch.pool import Feed, LocalPool
    from roofline.batch.worker import Chunk, Item, Options

    dset.init_dataset(root)
    chunks = [Chunk(str(root), 1, Options(), tuple(Item(str(p), "r") for p in names))]
    pool = LocalPool(1)
    pids = set()

    def next_chunk() -> Chunk | None:  # asked for with the workers started
        pids.add(pool.workers[0].proc.pid)
        return chunks.pop() if chunks else None

    summaries = []
    for res in pool.run(Feed(next_chunk, lambda n, s: None)):
        summaries.append(res)
        pids.add(pool.workers[0].proc.pid)
    return summaries, pids


def test_a_worker_dying_inside_a_native_read_mid_chunk_fails_that_input_alone_in_a_forked_readers_words(tmp_path):
    """The worker reads ncu reports in-process; the aborting one kills it mid-chunk: that input is one
    ReaderCrashedError with the words a forked child's death gives, every other input of the chunk (before
    it, whose rows were not written yet, and after it) is read again by a fresh worker and kept."""
    folder = tmp_path / "in"
    folder.mkdir()
    before = [Path(shutil.copyfile(shared(GOOD), folder / f"a{i}.ncu-rep")) for i in range(2)]
    bad = aborting_report(folder)
    after = [Path(shutil.copyfile(OWN_CSV, folder / "z.csv")), Path(shutil.copyfile(shared(GOOD), folder / "z.ncu-rep"))]
    with pytest.raises(errors.ReaderCrashedError) as forked:  # this process reads it in a forked child
        roofline.read(bad)
    summaries, pids = _chunk_on_one_worker(tmp_path / "ds", [*before, bad, *after])
    assert len(pids) == 2  # the worker died in the read (no fork took the abort): a fresh one read the rest
    assert sorted((Path(s["path"]).name, s["status"]) for s in summaries) == [
        ("a0.ncu-rep", "ok"), ("a1.ncu-rep", "ok"), ("bad.ncu-rep", "failed"), ("z.csv", "ok"), ("z.ncu-rep", "ok")]
    errs = roofline.batch.open_dataset(tmp_path / "ds", "errors")
    assert list(errs["error_type"]) == ["ReaderCrashedError"] and list(errs["error_kind"]) == ["reader-crashed"]
    assert list(errs["message"]) == [str(forked.value)] and "Check failed" in errs["message"].iloc[0]
    assert list(errs["format"]) == ["ncu-rep"] and errs["content_sha256"].iloc[0]  # as the worker found them
    runs = roofline.batch.open_dataset(tmp_path / "ds", "runs")
    assert sorted(runs["source_file"]) == sorted(map(str, [*before, *after]))


@pytest.fixture
def hosting(tmp_path, monkeypatch):
    """``start(grow_mb)``: this process hosts its native reads from then on, as a pool worker does, for this
    test only; gives the list of what it announces."""
    import resource

    from roofline.ingest import isolate

    core = resource.getrlimit(resource.RLIMIT_CORE)
    monkeypatch.setattr(isolate, "_HOST", [])

    def start(grow_mb: float = isolate.HOST_GROWTH_MB) -> list[str | None]:
        said: list[str | None] = []
        isolate.host(said.append, str(tmp_path / "err"), grow_mb)
        return said

    yield start
    if isolate._HOST:
        os.close(isolate._HOST[0].err_fd)
    resource.setrlimit(resource.RLIMIT_CORE, core)


def test_a_hosted_read_gives_what_a_forked_read_gives_and_announces_itself(hosting):
    import pandas as pd

    forked = roofline.read(shared(GOOD))
    said = hosting()
    stderr_before = os.fstat(2).st_ino
    hosted = roofline.read(shared(GOOD))
    assert said == ["ncu_report", None] and os.fstat(2).st_ino == stderr_before  # stderr is given back
    pd.testing.assert_frame_equal(hosted, forked)
    assert hosted.attrs.keys() == forked.attrs.keys()


def test_a_hosted_read_raises_what_a_forked_child_would(tmp_path, hosting):
    from roofline.ingest import isolate

    said = hosting()
    path = tmp_path / "x.ncu-rep"

    def corrupt() -> None:
        raise errors.CorruptReportError(path, "bad ranges")

    def bug() -> None:
        raise KeyError("k")

    with pytest.raises(errors.CorruptReportError, match="bad ranges"):
        isolate.call(path, corrupt, "ncu_report")
    with pytest.raises(isolate.ChildBugError, match="KeyError: 'k'"):
        isolate.call(path, bug, "ncu_report")
    assert said == ["ncu_report", None, "ncu_report", None]  # the driver knows each read ended


def test_a_hosting_process_past_its_growth_allowance_forks_its_reads_again(hosting):
    from roofline.ingest import isolate

    said = hosting(grow_mb=-1.0)  # "grown" from its first read on
    assert not isolate.grown()  # no read yet: nothing to say
    assert len(roofline.read(shared(GOOD))) == 4
    assert said == [] and isolate.grown()


def test_a_pool_worker_that_grew_past_its_allowance_is_replaced_after_its_chunk(tmp_path, monkeypatch):
    from roofline.batch import dataset as dset
    from roofline.batch.pool import Feed, LocalPool
    from roofline.batch.worker import Chunk, Item, Options
    from roofline.ingest import isolate

    monkeypatch.setattr(isolate, "HOST_GROWTH_MB", -1.0)  # read by the pool, handed to its workers
    dset.init_dataset(tmp_path / "ds")
    good = shared(GOOD)
    chunks = [Chunk(str(tmp_path / "ds"), 1, Options(), (Item(str(good), f"r{k}"),)) for k in range(2)]
    pool = LocalPool(1)
    pids = []
    for res in pool.run(Feed(lambda: chunks.pop() if chunks else None, lambda n, s: None)):
        assert res["status"] == "ok"
        pids.append(pool.workers[0].proc.pid)
    assert len(pids) == 2 and pids[0] != pids[1]
