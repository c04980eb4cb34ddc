"""Hostile SQLite inputs: views never run, every query is bounded, nothing is written beside the file.

The hostile files are built here, a few KB each, in the layout the campaign used: an nsys export whose
kernel table is a view cross-joining a 100-row table five times (1e10 rows: 4.2 GB RSS in 30 s before), an
nsys export and a rocpd database whose table is a view over a recursive CTE that never ends (CPU-bound for
ever before). Each is read in a child process, so a hang is a timeout of that child (60 s) and its peak RSS
is its own (VmHWM), not this test process's.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import roofline
from conftest import OWN, shared
from roofline import errors
from roofline.ingest import common

#: an infinite recursive CTE whose rows are all filtered out: SQLite computes for ever and returns nothing
_FOREVER = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT n FROM c WHERE n < 0"
_KERNEL_COLUMNS = "start, end, deviceId, streamId, correlationId, globalPid, demangledName, shortName"


def _nsys_meta(con: sqlite3.Connection) -> None:
    con.execute("CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    con.execute("INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.25.0')")


def cross_join_view(path: Path) -> Path:
    con = sqlite3.connect(path)
    _nsys_meta(con)
    con.execute("CREATE TABLE t (x INTEGER)")
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100)])
    cols = ", ".join(f"a.x AS {c}" for c in _KERNEL_COLUMNS.split(", "))
    con.execute(f"CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT {cols} FROM t a, t b, t c, t d, t e")
    con.commit()
    con.close()
    return path


def recursive_view(path: Path, table: str = "CUPTI_ACTIVITY_KIND_KERNEL", nsys: bool = True) -> Path:
    con = sqlite3.connect(path)
    if nsys:
        _nsys_meta(con)
    else:  # rocpd: its metadata table makes it sniff as rocpd
        con.execute("CREATE TABLE rocpd_metadata_0 (tag TEXT, value TEXT)")
    cols = ", ".join(f"n AS {c}" for c in _KERNEL_COLUMNS.split(", "))
    con.execute(f'CREATE VIEW "{table}" AS SELECT {cols} FROM ({_FOREVER})')
    con.commit()
    con.close()
    return path


_CHILD = textwrap.dedent("""
    import sys
    import roofline
    from roofline.errors import RooflineError
    try:
        roofline.read(sys.argv[1])
        print("read")
    except RooflineError as exc:
        print(type(exc).__name__, exc)
    # VmHWM, not getrusage: Linux keeps ru_maxrss across exec, so a child of a 1 GB pytest worker reported 1 GB
    hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(int(hwm.split()[1]) // 1024)
""")


@pytest.mark.parametrize("build", [cross_join_view, recursive_view,
                                   lambda p: recursive_view(p, "rocpd_kernel_dispatch_0", nsys=False)],
                         ids=["nsys-cross-join-view", "nsys-recursive-view", "rocpd-recursive-view"])
def test_a_hostile_view_is_never_run_the_read_ends_in_a_typed_error(tmp_path, build):
    db = build(tmp_path / "hostile.sqlite")
    assert db.stat().st_size < 40_000
    res = subprocess.run([sys.executable, "-c", _CHILD, str(db)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-2000:]
    said, rss_mb = res.stdout.strip().splitlines()
    assert said.split()[0] in ("FormatMismatchError", "NoKernelsError") and str(db) in said
    assert int(rss_mb) < 500


def test_a_batch_with_the_hostile_views_finishes_and_keeps_the_good_input(tmp_path):
    from roofline.batch import run_batch

    folder = tmp_path / "in"
    folder.mkdir()
    cross_join_view(folder / "a.sqlite")
    recursive_view(folder / "b.sqlite")
    shutil.copyfile(OWN / "rocprof" / "rocpd_mi210.db", folder / "good.db")
    summary = run_batch([folder], tmp_path / "ds", workers=1)
    assert (summary.inputs, summary.ok, summary.failed) == (3, 1, 2)


def test_a_query_past_its_step_budget_is_a_typed_error_naming_the_file(monkeypatch):
    src = shared("nsys/nsys2026.2_h100x2_mfu-before.sqlite")
    monkeypatch.setattr(common, "SQLITE_MIN_STEPS", 10_000)
    monkeypatch.setattr(common, "SQLITE_STEPS_PER_BYTE", 0)
    with pytest.raises(errors.InputTooLargeError, match="ran past 10,000 SQLite steps") as info:
        roofline.read(src)
    assert info.value.path == str(src)


def test_a_query_past_its_time_budget_is_a_typed_error(monkeypatch):
    src = shared("nsys/nsys2026.2_h100x2_mfu-before.sqlite")
    monkeypatch.setenv(common.SQLITE_SECONDS_ENV, "1e-9")  # past at the first check: after 1,000 steps
    with pytest.raises(errors.InputTooLargeError, match="ROOFLINE_SQLITE_MAX_SECONDS"):
        roofline.read(src)
    monkeypatch.setenv(common.SQLITE_SECONDS_ENV, "nan")
    with pytest.raises(errors.RooflineError, match="positive"):
        roofline.read(src)


def test_a_table_with_generated_columns_or_a_virtual_table_is_not_read(tmp_path):
    db = tmp_path / "gen.sqlite"
    con = sqlite3.connect(db)
    _nsys_meta(con)
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, "
                "demangledName AS (length(zeroblob(100000000))))")
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end) VALUES (1, 2)")
    con.execute("CREATE VIRTUAL TABLE CUPTI_ACTIVITY_KIND_MEMCPY USING fts5(start, end)")
    con.commit()
    con.close()
    assert common.sqlite_tables(common.open_sqlite(db)) >= {"META_DATA_EXPORT"}
    assert not {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY"} & common.sqlite_tables(common.open_sqlite(db))
    with pytest.raises(errors.NoKernelsError):
        roofline.read(db)


def test_a_wal_database_is_read_without_creating_files_beside_it(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "run.sqlite"
    shutil.copyfile(shared("nsys/nsys2024.5_a100x2_cloverleaf-mpi-cuda.sqlite"), db)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    con.close()
    before = sorted(p.name for p in folder.iterdir())
    assert before == ["run.sqlite"]  # the last close checkpointed and removed -wal and -shm
    folder.chmod(0o555)  # read-only (root reads it anyway; the point is nothing is written)
    try:
        assert len(roofline.read(db)) == len(roofline.read(shared("nsys/nsys2024.5_a100x2_cloverleaf-mpi-cuda.sqlite")))
        assert sorted(p.name for p in folder.iterdir()) == before  # before: run.sqlite-shm and -wal appeared
    finally:
        folder.chmod(0o755)
