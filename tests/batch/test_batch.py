"""roofline batch: every input accounted for once, resumable after SIGKILL, local == Dask cluster.

Real components throughout: a forkserver process pool, a real `dask.distributed.LocalCluster`
(scheduler and two workers talking TCP; the workers are threads of this process, which saves two
Python start-ups and changes nothing the batch sees), and a real SIGKILL of the whole batch process group.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import roofline
from conftest import SHARED, shared
from conftest import cli as _cli
from roofline.batch import DatasetError, Options, open_dataset, run_batch
from roofline.batch.dataset import MANIFEST

# one worker runs this module: its datasets are module fixtures built once (pytest-xdist --dist loadgroup)
pytestmark = pytest.mark.xdist_group("batch")


def _every_fixture() -> list[Path]:
    shared("ncu")  # fails in CI when the fixtures are missing
    return sorted(p for p in SHARED.rglob("*") if p.is_file() and p.name != "MANIFEST.md")


def _corrupt(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "empty.ncu-rep": b"",
        "text.ncu-rep": b"not a report\n",
        "truncated.pt.trace.json.gz": gzip.compress(b'{"traceEvents": [' * 200)[:300],
        "invalid.pt.trace.json": b'{"traceEvents": [ {"ph": "X", ',
        "random.xplane.pb": bytes(range(256)) * 4,
        "lfs.ncu-rep": b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 12\n",
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return [folder / n for n in files]


def _copies(sources: list[Path], folder: Path, times: int, start: int = 0) -> list[Path]:
    """`times` copies of each source under different names, spread over run folders."""
    out = []
    for i in range(start, start + times):
        run = folder / f"run{i % 3}"
        run.mkdir(parents=True, exist_ok=True)
        for j, src in enumerate(sources):
            dst = run / f"copy{i}_{j:03d}_{src.name}"  # j: fixtures in different folders share names (pmc_perf.csv)
            shutil.copyfile(src, dst)
            out.append(dst)
    return out


def _tables(root: Path) -> dict[str, pd.DataFrame]:
    return {t: open_dataset(root, t) for t in ("roofline", "kernels", "runs", "errors")}


def dataset_digest(root: Path) -> dict[str, str]:
    """SHA-256 of every file of a dataset but the per-batch logs: equal digests, byte-identical datasets."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "_batches" not in p.parts}


def _assert_same_dataset(a: Path, b: Path) -> None:
    assert dataset_digest(a) == dataset_digest(b)  # Parquet writes are deterministic: same bytes
    ta, tb = _tables(a), _tables(b)
    for name in ta:
        pd.testing.assert_frame_equal(ta[name], tb[name], check_exact=True, obj=name)
    assert ta["roofline"].attrs == tb["roofline"].attrs


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[Path]:
    """Every fixture, the small ones (< 1 MB) twice under different names, plus corrupt files and a
    missing path. (The large traces once: a second copy only made the serial and Dask runs longer.)"""
    folder = tmp_path_factory.mktemp("inputs")
    every = _every_fixture()
    small = [p for p in every if p.stat().st_size < 1 << 20]
    files = _copies(every, folder, 1) + _copies(small, folder, 1, start=1) + _corrupt(folder / "bad")
    return files + [folder / "bad" / "missing.ncu-rep"]


@pytest.fixture(scope="module")
def local(inputs, tmp_path_factory) -> Path:
    """The serial dataset (one worker process): what the other modes must reproduce."""
    root = tmp_path_factory.mktemp("local") / "ds"
    summary = run_batch(inputs, root, workers=1)
    assert summary.inputs == len(inputs) and summary.ok + summary.failed == len(inputs)
    return root


def test_every_input_ends_in_runs_or_errors_exactly_once(inputs, local):
    runs, errors = open_dataset(local, "runs"), open_dataset(local, "errors")
    expected = sorted(str(p) for p in inputs)
    assert sorted(list(runs["source_file"]) + list(errors["source_file"])) == expected
    assert not runs["source_file"].duplicated().any() and not errors["source_file"].duplicated().any()
    bad = errors.set_index("source_file")
    for p in inputs:
        if p.parent.name == "bad":
            assert str(p) in bad.index, p
            assert str(p) in bad.loc[str(p), "message"]
    assert bad.loc[str(inputs[-1]), "error_kind"] in ("not-found", "read-error")
    assert {"CorruptReportError", "LfsPointerError", "EmptyInputError"} <= set(errors["error_type"])
    kernels = open_dataset(local, "roofline")
    assert len(kernels) == runs["kernels"].sum() > 0
    one_run = open_dataset(local, "roofline", runs=["run0"])
    assert set(one_run["run"]) == {"run0"} and len(one_run) == runs.loc[runs["run"] == "run0", "kernels"].sum()
    assert set(kernels["source_file"]) == set(runs.loc[runs["kernels"] > 0, "source_file"])


def test_dataset_rows_equal_a_direct_analysis(inputs, local):
    roof = open_dataset(local, "roofline")
    for p in [p for p in inputs if p.name.startswith("copy1_") and p.suffix == ".ncu-rep"][:3]:
        direct = roofline.analyze(roofline.read(p))
        mine = roof[roof["source_file"] == str(p)].reset_index(drop=True)
        assert len(mine) == len(direct)
        for col in ("duration_s", "flop_total", "dram_bytes", "attainable_flop_per_s", "pct_of_roof"):
            pd.testing.assert_series_equal(mine[col], direct[col], check_names=False, check_dtype=False)
        assert list(mine["bound"].astype(str)) == list(direct["bound"].astype(str))
    assert {rec["source_file"] for rec in roof.attrs["roofline.provenance"]} >= {str(p) for p in inputs[:3]}


def test_a_rerun_skips_what_is_done_and_reads_changed_files_again(inputs, local, tmp_path):
    root = tmp_path / "ds"
    few = _copies([p for p in inputs if p.parent.name == "run0"][:6], tmp_path / "in", 1) + _corrupt(tmp_path / "bad")[:2]
    first = run_batch(few, root, workers=1)
    again = run_batch(few, root, workers=1)
    assert (again.ok, again.failed, again.skipped) == (0, 0, len(few))
    retried = run_batch(few, root, workers=1, opts=Options(retry_errors=True))
    assert retried.failed == first.failed and retried.skipped == first.ok
    # the same path with new content is read again and replaces its old rows (no duplicates)
    changed = few[0]
    changed.write_bytes(b"no longer a profile")
    after = run_batch(few, root, workers=1)
    assert (after.failed, after.skipped) == (1, len(few) - 1)
    runs, errors = open_dataset(root, "runs"), open_dataset(root, "errors")
    assert str(changed) not in set(runs["source_file"]) and str(changed) in set(errors["source_file"])
    assert len(runs) + len(errors) == len(few)


def test_sigkill_midway_then_rerun_gives_the_uninterrupted_dataset(inputs, tmp_path):
    subset = [p for p in inputs if p.suffix in (".ncu-rep", ".csv") and p.parent.name != "bad"]
    subset += [p for p in inputs if p.parent.name == "bad"]
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    run_batch(subset, whole, workers=2)
    args = [sys.executable, "-m", "roofline.cli", "batch", *map(str, subset), "-o", str(killed), "-j", "2", "-v"]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, start_new_session=True)
    seen = 0
    for line in proc.stderr:  # blocks on the batch's own progress lines: no sleeping
        seen += line.startswith(("ok:", "failed:"))
        if seen == len(subset) // 3:
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    partial = open_dataset(killed, "runs")
    # (midway: some inputs' records are written, ok or failed: the inputs run sorted, so the corrupt ones under
    # bad/ go first, and under load the first third of the lines can all be theirs)
    assert 0 < len(partial) + len(open_dataset(killed, "errors")) < len(subset)
    assert set(open_dataset(killed, "kernels")["source_file"]) <= set(partial["source_file"])
    rerun = _cli("batch", *subset, "-o", killed, "-j", "2")
    assert rerun.returncode == 1 and "skipped" in rerun.stdout  # 1: the corrupt inputs failed
    _assert_same_dataset(whole, killed)


def test_a_dask_cluster_gives_the_serial_dataset(tmp_path):
    """Every format (the fixtures under 1 MB and the smallest nsys export), the corrupt files and a missing path, on a
    real LocalCluster: the serial run's dataset byte for byte. (The large traces only made both runs longer.)"""
    from distributed import LocalCluster

    every = _every_fixture()
    small = [p for p in every if p.stat().st_size < 1 << 20]
    small.append(min((p for p in every if p.suffix == ".sqlite"), key=lambda p: p.stat().st_size))  # nsys: none < 1 MB
    inputs = _copies(small, tmp_path / "in", 1) + _corrupt(tmp_path / "in" / "bad") + [tmp_path / "in" / "missing.ncu-rep"]
    run_batch(inputs, tmp_path / "serial", workers=1)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
                      dashboard_address=":0") as cluster:  # any free port: no clash on 8787
        res = _cli("batch", *inputs, "-o", tmp_path / "dask", "--scheduler", cluster.scheduler_address)
    assert res.returncode == 1, res.stderr  # the corrupt inputs
    assert f"dask {cluster.scheduler_address}" in res.stdout
    assert {p.suffix for p in small} >= {".ncu-rep", ".csv", ".sqlite", ".gz", ".pb", ".json"}
    _assert_same_dataset(tmp_path / "serial", tmp_path / "dask")


def test_datasets_feed_report_and_compare(tmp_path):
    ds, folder = tmp_path / "ds", tmp_path / "profiles"
    folder.mkdir()
    for name in ("sm86_a10g_gemm-variants_roofline.ncu-rep", "sm80_a100_mistic-selfjoin-fp64_full.ncu-rep",
                 "sm75_rtx2060s_strategy-kernel-10launches_basic.ncu-rep"):  # three small reports, two devices
        shutil.copyfile(shared(f"ncu/{name}"), folder / name)
    run_batch([folder], ds, workers=1)
    res = _cli("compare", ds, folder, "--fail-on", "time>0%,new,vanished")
    assert res.returncode == 0, res.stderr
    assert "0 baseline only, 0 candidate only" in res.stdout
    rep = _cli("report", ds, "-o", tmp_path / "rep")
    assert rep.returncode == 0, rep.stderr
    assert (tmp_path / "rep" / "report.html").exists()


def test_dataset_versions_are_checked(local, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(local, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    (copy / MANIFEST).write_text(json.dumps(manifest | {"dataset_version": "99"}))
    with pytest.raises(DatasetError, match="dataset version '99'"):
        open_dataset(copy)
    with pytest.raises(DatasetError, match="not a roofline dataset"):
        open_dataset(tmp_path)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("x")
    res = _cli("batch", shared("ncu"), "-o", tmp_path / "full")
    assert res.returncode == 1 and "is not a roofline dataset" in res.stderr and "Traceback" not in res.stderr
    assert open_dataset(local, "runs", engine="pyarrow").schema.metadata[b"roofline.dataset_version"] == b"2"
