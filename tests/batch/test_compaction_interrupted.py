"""A compaction cut short (the process killed between two of its writes) leaves a dataset that reads exactly as
before it, and the next compaction finishes the job (issue 36).

The dataset is a real one: two batches of real worker processes over copies of small shared fixtures and of the
project's tiny CSV, the first compacted at its end, the second adding parts (new inputs, an input read again,
an input that now fails, one that failed and now reads). The cut is made where the real :func:`compact` writes
its files: the write that would come next raises instead, as a kill there would stop it (a kill leaves a
temporary beside it as well, invisible to readers and removed by the next batch)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import OWN, shared
from roofline.batch import compact as cmp
from roofline.batch import dataset as dset
from roofline.batch import open_dataset, run_batch

TINY = OWN / "tiny_metrics.csv"
SOURCES = ("traces/torch_a100_alexnet_train_small.pt.trace.json.gz",
           "traces/torch_rocm_mi300x_inductor-triton-kernels.pt.trace.json.gz",
           "ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv")


class Killed(Exception):
    """Stands for the kill: raised where the next write would start."""


def _tables(root: Path) -> dict[str, pd.DataFrame]:
    return {t: open_dataset(root, t) for t in dset.TABLES}


def _assert_same(before: dict[str, pd.DataFrame], after: dict[str, pd.DataFrame]) -> None:
    for t in dset.TABLES:
        pd.testing.assert_frame_equal(after[t], before[t], check_exact=True, obj=t)
    assert after["roofline"].attrs == before["roofline"].attrs


def _compacted_then_parts(tmp_path: Path) -> Path:
    """A dataset with compact files and parts beside them: inputs first written in a part, an input read again
    (its compacted rows stale), one now failing (ok before) and one now read (failed before)."""
    folder = tmp_path / "in"
    first = []
    for i, rel in enumerate(SOURCES):
        run = folder / f"job{i % 2}"
        run.mkdir(parents=True, exist_ok=True)
        first.append(Path(shutil.copyfile(shared(rel), run / Path(rel).name)))
    for i in range(3):
        first.append(Path(shutil.copyfile(TINY, folder / f"job{i % 2}" / f"k{i:02d}.csv")))
    broken = folder / "job1" / "fixed_later.csv"
    broken.write_text("not a profile\n")
    root = tmp_path / "ds"
    run_batch([*first, broken], root, workers=1)  # small: compacted at its end
    assert {p.name for t in dset.TABLES for p in (root / t).iterdir()} == {"compact.parquet"}

    new = [Path(shutil.copyfile(TINY, folder / f"job{i % 2}" / f"new{i:02d}.csv")) for i in range(3)]
    first[-1].write_text(first[-1].read_text().replace("10.50", "21.00"))  # read again: a new generation
    first[-2].write_text("now broken\n")  # ok before, failed now
    shutil.copyfile(TINY, broken)  # failed before, ok now
    run_batch([*first, broken, *new], root, workers=1, compact=False)
    assert len(list((root / "kernels").glob("*.parquet"))) > 1
    return root


def _cut_after_row_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after the kernels and roofline compact files replaced the old ones, before runs and errors."""
    def killed(*args: object) -> None:
        raise Killed

    monkeypatch.setattr(cmp, "_write_compact", killed)


def _cut_between_roofline_and_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after the roofline compact file was renamed into place, before the kernels one (written nested:
    the inner file, roofline, is renamed first)."""
    real = cmp.write_durably

    def write_durably(path: Path, write: object, sync_dir: bool = True) -> None:
        if path == dset.part_path(path.parent.parent, "kernels", dset.COMPACT):
            def then_killed(fh: object) -> None:
                write(fh)  # type: ignore[operator]  # (the roofline file is renamed in here)
                raise Killed
            real(path, then_killed, sync_dir)
        else:
            real(path, write, sync_dir)

    monkeypatch.setattr(cmp, "write_durably", write_durably)


def _cut_between_runs_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after the runs compact file was written, before the errors one (an input that failed before and
    reads now has a compacted runs row and an old compacted errors row of the same generation)."""
    real = cmp._write_compact

    def write_compact(root: Path, table: str, *args: object) -> None:
        if table == "errors":
            raise Killed
        real(root, table, *args)

    monkeypatch.setattr(cmp, "_write_compact", write_compact)


@pytest.mark.parametrize("cut", [_cut_after_row_tables, _cut_between_roofline_and_kernels,
                                 _cut_between_runs_and_errors])
def test_an_interrupted_compaction_reads_as_before_and_the_next_one_finishes_it(tmp_path, monkeypatch, cut):
    root = _compacted_then_parts(tmp_path)
    before = _tables(root)
    assert len(before["errors"]) == 1 and before["kernels"]["file_id"].nunique() == len(before["runs"])

    with monkeypatch.context() as m:
        cut(m)
        with pytest.raises(Killed):
            cmp.compact(root)
    parts = [p for t in dset.TABLES for p in (root / t).glob("*.parquet") if p.stem != dset.COMPACT]
    assert parts  # cut short: the parts are all still there
    _assert_same(before, _tables(root))

    done = cmp.compact(root)
    assert done.files_after == 4 and done.inputs == len(before["runs"]) + len(before["errors"])
    assert sorted(p.name for t in dset.TABLES for p in (root / t).iterdir()) == ["compact.parquet"] * 4
    _assert_same(before, _tables(root))
