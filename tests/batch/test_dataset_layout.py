"""The dataset's layout 2 (issue 36): parts per chunk of inputs, live rows by generation, compaction to one
file per table with the same tables, layout 1 still read and upgraded, scans that push columns and filters
down; and its durability (issue 40 item 7): damaged parts, the retry window, a vanished dataset folder,
failures of the environment read again.

Real worker processes (the forkserver pool) and real Parquet files throughout; inputs are copies of the
project's own tiny CSV fixture, so each test is cheap."""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from test_batch import _assert_same_dataset, dataset_digest

from conftest import OWN
from conftest import cli as _cli
from roofline.batch import compact as cmp
from roofline.batch import dataset as dset
from roofline.batch import iter_live, open_dataset, run_batch
from roofline.batch.files import DamagedPartError, DatasetGoneError
from roofline.batch.parts import PartWriter, environment_kind
from roofline.batch.worker import error_record, file_id

TINY = OWN / "tiny_metrics.csv"
V1 = OWN / "dataset_v1"


def _inputs(folder: Path, n: int = 6) -> list[Path]:
    out = []
    for i in range(n):
        run = folder / f"job{i % 2}"
        run.mkdir(parents=True, exist_ok=True)
        out.append(Path(shutil.copyfile(TINY, run / f"k{i:02d}.csv")))
    (folder / "job1" / "bad.csv").write_text("not a profile\n")
    return out + [folder / "job1" / "bad.csv"]


def _tables(root: Path) -> dict[str, pd.DataFrame]:
    return {t: open_dataset(root, t) for t in dset.TABLES}


def test_parts_are_per_chunk_and_compaction_gives_the_same_tables_in_one_file_each(tmp_path):
    files = _inputs(tmp_path / "in", 40)
    root = tmp_path / "ds"
    run_batch(files, root, workers=1, compact=False)
    parts = {t: len(list((root / t).glob("*.parquet"))) for t in dset.TABLES}
    assert 0 < parts["kernels"] < len(files) - 1  # chunks of inputs, not a part per input (sized by time)
    before = _tables(root)
    done = cmp.compact(root)
    assert done.files_after == 4 and done.inputs == len(files)
    assert sorted(p.name for t in dset.TABLES for p in (root / t).iterdir()) == ["compact.parquet"] * 4
    after = _tables(root)
    for t in dset.TABLES:
        pd.testing.assert_frame_equal(before[t], after[t], check_exact=True, obj=t)
    assert before["roofline"].attrs == after["roofline"].attrs
    # the end of a batch compacts; a batch split into other chunks gives the same bytes
    again = tmp_path / "again"
    run_batch(files, again, workers=2)
    _assert_same_dataset(root, again)


def test_compacted_row_tables_are_stored_in_the_order_they_are_read_back(tmp_path):
    """Compaction writes the kernels and roofline rows in ``open_dataset``'s order (run, source file, input,
    row), the two tables row for row, so reading a compacted dataset back sorts nothing (issue 36)."""
    import pyarrow.parquet as pq

    files = _inputs(tmp_path / "in", 12)
    root = tmp_path / "ds"
    run_batch(files, root, workers=1, compact=False)
    before = open_dataset(root)
    cmp.compact(root)
    kernels = pq.read_table(root / "kernels" / "compact.parquet")
    roof = pq.read_table(root / "roofline" / "compact.parquet")
    assert dset._is_sorted(kernels, cmp.READ_ORDER) and kernels.num_rows == len(before) >= 12
    assert not dset._is_sorted(kernels, ["run", "file_id", "row"])  # (the order before: by the ids' hashes)
    for key in ("file_id", "row"):
        assert roof.column(key).equals(kernels.column(key))
    assert kernels.column("file_id").to_pylist() == before["file_id"].tolist()
    pd.testing.assert_frame_equal(open_dataset(root), before, check_exact=True)


def test_an_input_read_again_replaces_its_rows_through_a_newer_generation(tmp_path):
    files = _inputs(tmp_path / "in", 2)
    root = tmp_path / "ds"
    run_batch(files, root, workers=1)
    files[0].write_text(files[0].read_text().replace("10.50", "21.00"))  # the kernel now takes twice as long
    run_batch(files, root, workers=1, compact=False)
    runs = open_dataset(root, "runs")
    assert len(runs) == 2 and not runs["source_file"].duplicated().any()
    roof = open_dataset(root, "roofline")
    assert len(roof) == 2
    old, new = (roof.set_index("source_file").loc[str(p), "duration_s"] for p in (files[1], files[0]))
    assert new == pytest.approx(2 * old)
    assert dset.next_generation(root) == 2  # the compacted rows are 0, the second batch wrote 1


def test_a_dataset_whose_inputs_all_failed_opens_empty_and_reports(tmp_path):
    # (its live ok inputs are none: the scan filters' value sets were empty and untyped, and Arrow refused to
    # bind them to a text column; a batch killed before its first ok input left the same state)
    bad = tmp_path / "bad.csv"
    bad.write_text("not a profile\n")
    for compacted in (False, True):
        root = tmp_path / f"ds{compacted}"
        run_batch([bad], root, workers=1, compact=compacted)
        assert len(open_dataset(root, "errors")) == 1 and len(open_dataset(root, "runs")) == 0
        for t in ("kernels", "roofline"):
            assert len(open_dataset(root, t)) == 0
            assert sum(b.num_rows for b in iter_live(root, t)) == 0
        assert len(open_dataset(root, "kernels", runs=[])) == 0
        res = _cli("report", root, "-o", tmp_path / f"rep{compacted}")
        assert res.returncode == 0, res.stderr
        assert "no kernels" in res.stdout


def test_an_old_layout_reads_as_before_and_compaction_upgrades_it(tmp_path):
    root = tmp_path / "v1"
    shutil.copytree(V1, root)
    assert dset.layout_version(root) == "1"
    old = _tables(root)
    assert (len(old["runs"]), len(old["errors"]), len(old["roofline"])) == (2, 1, 2)
    # the rows are the tiny CSV's: 10.5 us and 2 x 1,048,576 FFMA
    assert list(old["roofline"]["duration_s"]) == [pytest.approx(10.5e-6)] * 2
    assert list(old["kernels"]["flop_fp32"]) == [2 * 1_048_576.0] * 2
    res = _cli("dataset", "compact", root)
    assert res.returncode == 0, res.stderr
    assert "upgraded from layout 1" in res.stdout
    assert dset.layout_version(root) == "2" and not (root / "_state").exists()
    assert not list(root.glob("*/run=*"))
    new = _tables(root)
    for t in dset.TABLES:
        pd.testing.assert_frame_equal(old[t], new[t], check_exact=True, obj=t)
    assert old["roofline"].attrs == new["roofline"].attrs


def test_a_batch_into_an_old_layout_upgrades_it_and_skips_what_it_holds(tmp_path):
    root = tmp_path / "v1"
    shutil.copytree(V1, root)
    runs = open_dataset(root, "runs")
    # the fixture's inputs are gone: the same names again, with the same content, are skipped
    for src in runs["source_file"]:
        Path(src).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TINY, src)
    summary = run_batch(list(runs["source_file"]), root, workers=1)
    assert (summary.skipped, summary.ok) == (2, 0)
    assert any("upgraded from layout 1" in n for n in summary.notes)
    assert dset.layout_version(root) == "2"


def test_scans_push_columns_and_filters_down(tmp_path):
    files = _inputs(tmp_path / "in")
    root = tmp_path / "ds"
    run_batch(files, root, workers=1)
    some = open_dataset(root, "kernels", columns=["kernel_name", "duration_s"], runs=["job0"])
    assert set(some.columns) == {"file_id", "run", "row", "kernel_name", "duration_s"}
    assert set(some["run"]) == {"job0"} and len(some) == 3
    one = open_dataset(root, "roofline", filter=ds.field("source_file") == str(files[1]))
    assert list(one["source_file"]) == [str(files[1])] and "bound" in one
    batches = list(iter_live(root, "kernels", columns=["duration_s"], batch_rows=2))
    assert sum(b.num_rows for b in batches) == 6 and max(b.num_rows for b in batches) <= 2
    with pytest.raises(dset.DatasetError, match="no columns"):
        open_dataset(root, "kernels", columns=["no_such_column"])


def test_a_read_of_the_kernels_table_does_not_build_the_roofline_tables_schema(tmp_path):
    """The roofline table's columns are learnt by analysing an empty frame: a report reads the kernels table and
    waits for none of that before its charts fork."""
    root = tmp_path / "ds"
    run_batch(_inputs(tmp_path / "in"), root, workers=1)
    for cached in (dset.table_schema, dset.table_schemas, dset._roofline_analysis_dtypes):
        cached.cache_clear()
    assert len(open_dataset(root, "kernels")) == 6
    assert dset._roofline_analysis_dtypes.cache_info().currsize == 0
    assert open_dataset(root, "roofline")["bound"].notna().all()
    assert dset.table_schemas() == {t: dset.table_schema(t) for t in dset.TABLES}


# ---- durability (issue 40 item 7) -------------------------------------------------------------------------

def test_a_zero_byte_part_is_a_typed_error_naming_it_and_a_rerun_reads_its_inputs_again(tmp_path):
    files = _inputs(tmp_path / "in")
    clean, root = tmp_path / "clean", tmp_path / "ds"
    run_batch(files, clean, workers=1)
    run_batch(files, root, workers=1)
    damaged = root / "kernels" / "compact.parquet"
    damaged.write_bytes(b"")  # what a power loss after an unsynced rename leaves
    with pytest.raises(DamagedPartError, match="kernels/compact.parquet"):
        open_dataset(root)
    res = _cli("report", root, "-o", tmp_path / "rep")
    assert res.returncode == 1 and "damaged dataset part" in res.stderr and "Traceback" not in res.stderr
    again = run_batch(files, root, workers=1)
    assert again.ok == len(files) - 1  # every input of the damaged part read again
    assert any("moved aside" in n for n in again.notes)
    assert (root / "_damaged" / "kernels" / "compact.parquet").exists()
    for t in dset.TABLES:
        pd.testing.assert_frame_equal(open_dataset(clean, t), open_dataset(root, t), check_exact=True, obj=t)


def test_the_retry_window_is_closed_an_input_is_in_exactly_one_table_at_every_step(tmp_path):
    files = _inputs(tmp_path / "in", 2)
    root = tmp_path / "ds"
    shutil.copyfile(TINY, files[1])
    files[1].write_text("broken for now\n")
    run_batch(files, root, workers=1)
    assert str(files[1]) in set(open_dataset(root, "errors")["source_file"])
    shutil.copyfile(TINY, files[1])  # mended: a --retry-errors run writes its rows, then its runs row
    import roofline.pipeline as pl
    from roofline.batch.worker import Options

    kernels, result = pl.analyse_file(files[1], Options())
    writer = PartWriter(root, dset.next_generation(root))
    fid = file_id(files[1], "job1")
    writer.add_ok(fid, "job1", kernels, result, {"source_file": str(files[1]), "content_sha256": "x",
                                                  "size_bytes": 1, "format": "ncu-csv", "kernels": 1}, {})
    writer._write(("kernels", "roofline"))  # killed here: data written, its runs row not
    runs, errors = open_dataset(root, "runs"), open_dataset(root, "errors")
    assert str(files[1]) in set(errors["source_file"]) and str(files[1]) not in set(runs["source_file"])
    assert len(open_dataset(root)) == 1  # the orphan rows are not read
    run_batch(files, root, workers=1, opts=Options(retry_errors=True))
    runs, errors = open_dataset(root, "runs"), open_dataset(root, "errors")
    assert str(files[1]) in set(runs["source_file"]) and set(errors["source_file"]) == {str(files[2])}  # bad.csv
    assert len(open_dataset(root)) == 2


def test_a_dataset_folder_deleted_mid_batch_stops_it_and_is_not_recreated(tmp_path):
    files = _inputs(tmp_path / "in", 8)
    root = tmp_path / "ds"

    def delete_after_first(res, _summary):
        shutil.rmtree(root, ignore_errors=True)

    with pytest.raises(DatasetGoneError, match="is gone"):
        run_batch(files, root, workers=1, progress=delete_after_first)  # first chunk: 1 input, then the rest
    assert not (root / "kernels").exists() and not (root / dset.MANIFEST).exists()


def test_failures_of_the_environment_are_read_again_without_retry_errors(tmp_path):
    files = _inputs(tmp_path / "in", 2)
    root = tmp_path / "ds"
    dset.init_dataset(root)
    full = OSError(errno.ENOSPC, "No space left on device")
    assert environment_kind(full) == "environment"
    assert environment_kind(RuntimeError("x")) is None
    from roofline.batch.worker import content_sha256

    writer = PartWriter(root, 1)
    for p in files[:2]:  # what a batch on a full disk recorded
        writer.add_error(file_id(p, p.parent.name), p.parent.name,
                         error_record(str(p), content_sha256(p)[0], p.stat().st_size, "ncu-csv", full))
    writer.flush()
    assert set(open_dataset(root, "errors")["error_kind"]) == {"environment"}
    again = run_batch(files, root, workers=1)
    assert (again.ok, again.skipped_failed) == (2, 0)  # read again; bad.csv failed for the first time
    assert set(open_dataset(root, "errors")["source_file"]) == {str(files[2])}


def test_parts_are_synced_before_the_rows_that_refer_to_them(tmp_path, monkeypatch):
    """The order of durable writes: every kernels/roofline part and its folder are fsync'ed before the runs
    part that makes its inputs count (the real os.fsync, recorded)."""
    import os

    from roofline.batch import files as bfiles

    synced: list[str] = []
    real_fsync = os.fsync

    def recording(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    monkeypatch.setattr(bfiles.os, "fsync", recording)
    root = tmp_path / "ds"
    dset.init_dataset(root)
    import roofline.pipeline as pl
    from roofline.batch.worker import Options

    kernels, result = pl.analyse_file(TINY, Options())
    writer = PartWriter(root, 1)
    writer.add_ok("f" * 20, "r", kernels, result, {"source_file": str(TINY), "kernels": 1}, {})
    writer.flush()
    order = [Path(p).parent.name if p.endswith(".tmp") else Path(p).name for p in synced]
    assert order.index("runs") > max(i for i, n in enumerate(order) if n in ("kernels", "roofline"))
    assert json.loads((root / dset.MANIFEST).read_text())["dataset_version"] == "2"
    assert dataset_digest(root)


# ---- summaries streamed from the scan (issue 36: datasets larger than memory) ----------------------------

@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """A dataset of ncu reports, CSV exports and a Kineto trace (several devices, several kernels per input)."""
    from conftest import shared

    folder = tmp_path_factory.mktemp("mixed")
    for i, name in enumerate(("ncu/sm80_a100_mistic-cub-154launches_basic.ncu-rep",
                              "ncu/sm70_v100_cutlass-cublas-gemm_roofline-metrics.csv",
                              "traces/torch_a100_alexnet_train_small.pt.trace.json.gz",
                              "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep")):
        (folder / "in" / f"job{i % 2}").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared(name), folder / "in" / f"job{i % 2}" / Path(name).name)
    run_batch([folder / "in"], folder / "ds", workers=1)
    return folder / "ds"


@pytest.mark.parametrize("by", ["program", "kernel", "nvtx", None])
def test_a_streamed_summary_equals_the_whole_frame_one(mixed, monkeypatch, by):
    import roofline.pipeline as pl
    from roofline.analysis.aggregate import aggregate
    from roofline.analysis.select import select
    from roofline.batch import scan

    monkeypatch.setattr(scan, "BATCH_ROWS", 7)  # many record batches: partial sums and top-N merged across them
    whole = pl.run([mixed])
    streamed, total = pl.summarise([mixed], by=by, top=None if by else 12, name="gemm|cub|conv")
    rows = select(whole.frame, name="gemm|cub|conv")
    expected = aggregate(rows, by=by, levels=whole.levels) if by else select(rows).head(12)
    assert total == (len(expected) if by else len(select(rows)))
    got = streamed.frame
    assert list(got.columns) == list(expected.columns)
    # (the N longest rows keep their values; the categories of the whole frame's other rows are not theirs)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True), check_exact=False,
                                  rtol=1e-12, check_dtype=False, check_categorical=by is not None)
    assert len(got) > 1


def test_iter_live_gives_the_live_rows_of_the_whole_read_a_few_rows_at_a_time(mixed, monkeypatch):
    """iter_live (what the streamed summary reads) yields every live row of the whole-table read, in its order,
    in batches of at most batch_rows: one row group read at a time, no read-ahead."""
    from roofline.batch import dataset as dset
    from roofline.batch import scan
    from roofline.schema import kernel_columns

    monkeypatch.setattr(scan, "BATCH_ROWS", 5)
    live = dset.live_state(mixed)
    cols = kernel_columns()
    for where in (None, scan.regex_filter("kernel_name", "gemm")):
        got = list(scan.live_batches(mixed, live, cols, where))
        whole = dset.row_table(mixed, "kernels", live, dset._with_keys(list(cols), "kernels", live.version), where)
        assert len(got) > (20 if where is None else 1) and max(b.num_rows for b in got) <= 5
        assert pa.concat_tables(got).equals(whole)
    roof = list(dset.iter_live(mixed, "roofline", columns=["bound"], batch_rows=7))
    assert max(b.num_rows for b in roof) <= 7
    assert sum(b.num_rows for b in roof) == dset.live_table(mixed, "roofline", live, columns=["bound"]).num_rows


def test_analyze_of_a_dataset_prints_the_streamed_summary_as_the_whole_path_does(mixed, tmp_path):
    streamed = _cli("analyze", mixed, "--by", "program")
    whole = _cli("analyze", mixed, "--by", "program", "--out", tmp_path / "x.csv")  # --out: every row, whole path
    assert streamed.returncode == 0, streamed.stderr
    # the same table; the whole path leads with the headline of every kernel (which the scan does not compute)
    table = whole.stdout[whole.stdout.index("2 program row(s)"):]
    assert streamed.stdout == table.replace("why: the headline above", "why: `roofline analyze` without --by gives each reason")
    assert whole.stdout.startswith("== all profiles")
    table = _cli("analyze", mixed, "--top", "5", "--name", "gemm")
    assert table.returncode == 0 and table.stdout == _cli("analyze", mixed, "--top", "5", "--name", "gemm",
                                                          "--out", tmp_path / "y.csv").stdout
