"""rocpd SQLite (rocprofv3 --output-format rocpd) and rocprof-compute's rocpd-form workloads.

The fixture (tests/fixtures/rocprof/rocpd_mi210.db) is built by tools/make_rocpd_fixture.py from
rocprofiler-sdk's own schema files; its three vecCopy dispatches carry the counters and timestamps of
the shared MI200 rocprof-compute workload, so the numbers are checked against that workload's
pmc_perf.csv path, and its fma_lds dispatch against values worked out by hand below.
"""

from __future__ import annotations

import csv
import math
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import OWN, shared

DB = OWN / "rocprof" / "rocpd_mi210.db"
MI200 = "rocprof/rocprof-compute_vcopy_MI200"

#: rocprof-compute's own query of the counters_collection view (src/utils/rocpd_data.py @ 1b1610f)
RC_QUERY = """SELECT agent_id as GPU_ID, dispatch_id as Dispatch_ID, grid_size as Grid_Size,
 workgroup_size as Workgroup_Size, lds_block_size as LDS_Per_Workgroup, scratch_size as Scratch_Per_Workitem,
 vgpr_count as Arch_VGPR, accum_vgpr_count as Accum_VGPR, sgpr_count as SGPR, kernel_name as Kernel_Name,
 start as Start_Timestamp, end as End_Timestamp, kernel_id as Kernel_ID, counter_name as Counter_Name,
 value as Counter_Value FROM counters_collection"""


def _read(path: Path):
    from roofline.ingest.amd import rocpd

    return rocpd.read(path)


def test_rocpd_dispatches_names_agents_durations_grids():
    from roofline.ingest import sniff

    assert sniff(DB) == "rocpd"
    k = _read(DB)
    with sqlite3.connect(DB) as con:  # the upstream `kernels` view: an independent reading of the same rows
        view = con.execute("SELECT name, start, end, grid_x, workgroup_x FROM kernels ORDER BY start").fetchall()
    assert len(k) == len(view) == 5
    assert list(k["kernel_name"]) == [r[0] for r in view]
    assert list(k["duration_s"]) == pytest.approx([(r[2] - r[1]) * 1e-9 for r in view], rel=1e-12)
    assert list(k["grid_x"]) == [math.ceil(r[3] / r[4]) for r in view]  # work-items → workgroups
    assert list(k["block_x"]) == [r[4] for r in view]
    assert set(k["device_name"]) == {"MI210"} and set(k["compute_capability"]) == {"gfx90a"}
    assert set(k["sm_count"]) == {104} and list(k["dispatch_id"]) == [1, 2, 3, 4, 5]
    assert set(k["agent_id"]) == {1}  # the GPU's logical index
    meta = k.attrs["roofline.provenance"][0]
    assert meta["format"] == "rocpd" and meta["memory_copies"] == 1 and meta["rocpd_schema_version"] == "3"


def test_rocpd_counters_equal_the_pmc_perf_path_and_hand_values():
    from roofline.ingest.amd import rocprof_compute

    k = _read(DB)
    ref = rocprof_compute.read(shared(MI200))  # the same three dispatches through pmc_perf.csv
    for col in ("dram_bytes", "l2_bytes", "l1_bytes", "lds_bytes", "flop_fp32", "flop_fp64", "flop_tensor"):
        assert list(k[col][:3]) == pytest.approx(list(ref[col]), rel=5e-3), col
    assert list(k["duration_s"][:3]) == pytest.approx(list(ref["duration_s"]), rel=1e-12)
    fma = k.iloc[3]  # hand-made counters: FMA_F32 over 4 instance rows, LDS_IDX_ACTIVE over 3
    assert fma["flop_fp32"] == 64 * (1000 + 2 * 4 * 2500)  # 64 lanes × (ADD + 2·FMA)
    assert fma["flop_fp64"] == 64 * 2 * 500
    assert fma["flop_tensor"] == 512 * 300 and fma["tensor_path"] == "mfma_fp16"
    assert fma["dram_bytes"] == 64 * 2048 + 64 * 1024  # MI200 HBM: 64·RDREQ + 64·WRREQ_64B
    assert fma["l2_bytes"] == 64 * (4096 + 1024) and fma["l1_bytes"] == 64 * 16384
    assert fma["lds_bytes"] == (10000 - 1000) * 4 * 32  # (IDX_ACTIVE − BANK_CONFLICT) × 4 B × 32 banks
    empty = k.iloc[4]  # no counter record: unavailable, never 0
    assert math.isnan(empty["dram_bytes"]) and math.isnan(empty["flop_fp32"])
    assert empty["dram_bytes_source"].startswith("unavailable")
    assert k["peak_flop_per_s_fp32"][0] == pytest.approx(128 * 104 * 1700e6)  # arch model, CDNA2
    assert k["peak_dram_bytes_per_s_source"][0].startswith("unavailable")


def test_rocpd_missing_table_and_damage_are_typed_errors_naming_the_file(tmp_path):
    from roofline import read
    from roofline.errors import CorruptReportError, FormatMismatchError
    from roofline.ingest import sniff

    broken = tmp_path / "no_agents.db"
    shutil.copy(DB, broken)
    with sqlite3.connect(broken) as con:
        name = next(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_info_agent_%'"))
        con.execute("DROP VIEW IF EXISTS code_objects")
        con.execute(f'DROP TABLE "{name}"')
    with pytest.raises(FormatMismatchError, match=r"rocpd_info_agent_0198") as err:
        read(broken)
    assert str(broken) in str(err.value)
    cut = tmp_path / "cut.db"
    cut.write_bytes(DB.read_bytes()[:5000])  # the header survives, the pages do not
    with pytest.raises(CorruptReportError, match="cut.db"):
        from roofline.ingest.amd import rocpd

        rocpd.read(cut)
    other = tmp_path / "other.db"  # SQLite, neither rocpd nor nsys
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
    with pytest.raises(FormatMismatchError, match="other.db"):
        sniff(other)


def test_nsys_exports_are_not_taken_for_rocpd_and_folders_skip_other_sqlite(tmp_path):
    from roofline.ingest import expand, sniff

    assert sniff(shared("nsys/nsys2026.2_h100x2_mfu-before.sqlite")) == "nsys-sqlite"
    shutil.copy(DB, tmp_path / "1234_results.db")
    with sqlite3.connect(tmp_path / "cache.db") as con:  # a stray SQLite file in the output folder
        con.execute("CREATE TABLE t (x INTEGER)")
    assert [p.name for p in expand([tmp_path])] == ["1234_results.db"]


def test_rocprof_compute_rocpd_form_workload(tmp_path):
    """rocprof-compute --format-rocprof-output rocpd writes pmc_perf.csv as the counters_collection view of
    each pass's database (long form); two passes here, the second with other timestamps (median span)."""
    from roofline import read

    with sqlite3.connect(DB) as con:
        cur = con.execute(RC_QUERY)
        header, rows = [d[0] for d in cur.description], cur.fetchall()
    i_start, i_end, i_name = header.index("Start_Timestamp"), header.index("End_Timestamp"), header.index("Counter_Name")
    second = [list(r) for r in rows if r[i_name] == "SQ_INSTS_VALU_ADD_F16"]  # pass 2: one counter, 2000 ns longer
    for r in second:
        r[i_start], r[i_end] = r[i_start] + 10**6, r[i_end] + 10**6 + 2000
    wl = tmp_path / "vcopy_rocpd"
    wl.mkdir()
    with (wl / "pmc_perf.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows([*rows, *second])
    shutil.copy(shared(MI200) / "sysinfo.csv", wl)
    k = read(wl)
    db = _read(DB)
    assert len(k) == 4  # dispatches with counters
    for col in ("dram_bytes", "l2_bytes", "l1_bytes", "lds_bytes", "flop_fp32", "flop_tensor"):
        assert list(k[col]) == pytest.approx(list(db[col][:4]), rel=1e-12), col
    spans = {int(r[1]): r[i_end] - r[i_start] for r in rows}
    # one row at span+2000 (pass 2) against 28 rows at span (pass 1): the median is the span
    assert list(k["duration_s"]) == pytest.approx([spans[d] * 1e-9 for d in (1, 2, 3, 4)], rel=1e-12)
    assert "rocpd form" in k["duration_s_source"][0]


def test_merged_database_with_two_processes_and_a_lone_rocpd_form_pmc_perf(tmp_path):
    """A database holding two UUIDs' tables (as `rocpd merge` writes) reads as two processes; a rocpd-form
    pmc_perf.csv passed alone sniffs as rocprof-compute (its sysinfo.csv beside it)."""
    from roofline import read
    from roofline.ingest import sniff

    merged = tmp_path / "merged.db"
    shutil.copy(DB, merged)
    with sqlite3.connect(merged) as con:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'")]
        uuid = next(n for n in names if n.startswith("rocpd_kernel_dispatch_"))[len("rocpd_kernel_dispatch"):]
        for base in ("rocpd_kernel_dispatch", "rocpd_info_agent", "rocpd_info_kernel_symbol", "rocpd_pmc_event",
                     "rocpd_info_pmc"):
            con.execute(f'CREATE TABLE "{base}_ffff" AS SELECT * FROM "{base}{uuid}"')
    k = read(merged)
    assert len(k) == 10 and k.attrs["roofline.provenance"][0]["processes"] == 2
    assert list(k["dram_bytes"][:5].fillna(-1)) == list(k["dram_bytes"][5:].fillna(-1))
    with sqlite3.connect(DB) as con:
        cur = con.execute(RC_QUERY)
        header, rows = [d[0] for d in cur.description], cur.fetchall()
    wl = tmp_path / "wl"
    wl.mkdir()
    with (wl / "pmc_perf.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([header, *rows])
    shutil.copy(shared(MI200) / "sysinfo.csv", wl)
    assert sniff(wl / "pmc_perf.csv") == "rocprof-compute"
    assert len(read(wl / "pmc_perf.csv")) == 4


def test_rocpd_counter_rows_read_without_pandas_a_null_is_missing_and_text_is_named(tmp_path):
    """The counter events go from fetchall into one float array (issue 36): a NULL value is missing (the
    dispatch's sum of the other instance rows, as SQL's SUM does), a text value a typed error naming the table."""
    from roofline.errors import CorruptReportError
    from roofline.ingest.amd import rocpd

    nulled, texted = tmp_path / "null.db", tmp_path / "text.db"
    for path in (nulled, texted):
        shutil.copy(DB, path)
    with sqlite3.connect(nulled) as con:
        pmc = next(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_pmc_event_%'"))
        info = pmc.replace("rocpd_pmc_event", "rocpd_info_pmc")
        fma = con.execute(f'SELECT id FROM "{info}" WHERE name = ?', ("SQ_INSTS_VALU_FMA_F32",)).fetchone()[0]
        ids = [r[0] for r in con.execute(f'SELECT id FROM "{pmc}" WHERE pmc_id = ? AND event_id = 4', (fma,))]
        con.execute(f'UPDATE "{pmc}" SET value = NULL WHERE id = ?', (ids[0],))  # one of its 4 instance rows
    before, after = _read(DB).iloc[3], _read(nulled).iloc[3]
    assert len(ids) == 4 and after["flop_fp32"] == 64 * (1000 + 2 * 3 * 2500)  # 3 instances of 2500 FMA left
    assert before["flop_fp32"] == 64 * (1000 + 2 * 4 * 2500)
    with sqlite3.connect(texted) as con:
        con.execute(f'UPDATE "{pmc}" SET value = ? WHERE id = ?', ("lots", ids[0]))
    with pytest.raises(CorruptReportError, match=r"rocpd_pmc_event_0198.*\.value: 'lots' is not a number") as err:
        rocpd.read(texted)
    assert str(texted) in str(err.value)


def test_rocpd_dispatch_values_that_are_not_int64_are_typed_errors_naming_the_column(tmp_path):
    """Dispatch rows of SQLite integers go to int64 columns in one pass (issue 36); a row with anything else (a
    text, a fraction) is read value by value, which names the table (and the column of a value that is no number)."""
    from roofline.errors import CorruptReportError
    from roofline.ingest.amd import rocpd

    for column, value, said in (("kernel_id", "gemm", r"\.kernel_id: 'gemm' is not a number"),
                                ("grid_size_y", 2.5, r": a row with a value .* \(2\.5 is not an integer\)")):
        broken = tmp_path / f"{column}.db"
        shutil.copy(DB, broken)
        with sqlite3.connect(broken) as con:
            kd = next(r[0] for r in con.execute("SELECT name FROM sqlite_master "
                                                "WHERE name LIKE 'rocpd_kernel_dispatch_%'"))
            con.execute(f'UPDATE "{kd}" SET "{column}" = ? WHERE id = (SELECT min(id) FROM "{kd}")', (value,))
        with pytest.raises(CorruptReportError, match=rf"rocpd_kernel_dispatch_0198\w*{said}") as err:
            rocpd.read(broken)
        assert str(broken) in str(err.value)


def test_counter_sums_equal_pandas_groupby_whichever_rows_repeat_or_are_nan():
    """The per-(event, counter) sums skip pandas for keys that occur once (issue 36): on keys in order, shuffled,
    in runs or repeated, with NaN, ±inf and −0.0 values and fractions whose sum depends on the summing kernel,
    the grid is bit for bit pandas' groupby sum of all the rows (its kernel choice included)."""
    import numpy as np
    import pandas as pd

    from roofline.ingest.amd.rocpd import _sums

    # key 0's rows apart (pandas' compensated sum: 0.3) but together once key 1 is left out (np.add.reduceat:
    # 1.3): the rows given to pandas must keep them apart
    cases = [(np.array([0, 1, 0, 0, 0]), np.array([1.0, 5.0, -1e16, 1e16, 0.3]), 2)]
    rng = np.random.default_rng(36)
    for case in range(300):
        n = int(rng.integers(1, 40))
        groups = int(rng.integers(1, n + 4))
        key = (np.sort(rng.integers(0, groups, n)), rng.permutation(max(n, groups))[:n], np.arange(n),
               np.repeat(rng.permutation(groups), rng.integers(1, 4, groups)), rng.integers(0, groups, n))[case % 5]
        pool = ([0.0, -0.0, 1.5, np.nan, np.inf, -np.inf, 3.0, 1e300, 0.1],
                [0.1, 0.2, 0.3, 1e16, -1e16, 7.7e-5])[case % 2]
        cases.append((key, rng.choice(pool, len(key)) * (rng.random(len(key)) if case % 3 else 1.0),
                      max(groups, int(key.max()) + 1)))
    for key, value, groups in cases:
        with np.errstate(invalid="ignore"):  # (inf − inf in pandas' kernels)
            sums = pd.Series(value).groupby(key, sort=False).sum(min_count=1)
            got = _sums(key, value, groups)
        want = np.full(groups, np.nan)
        want[sums.index.to_numpy()] = sums.to_numpy()
        assert np.array_equal(got, want, equal_nan=True) and np.array_equal(np.signbit(got), np.signbit(want)), \
            (key, value)


def test_counter_and_event_codes_equal_pandas_factorize():
    """Event and counter ids are coded without pandas' hash table where they are in order or small (issue 36): the
    codes and ids equal ``pd.factorize(sort=True)``'s, dtypes included, on sorted, small, negative and large ids."""
    import numpy as np
    import pandas as pd

    from roofline.ingest.amd.rocpd import _codes

    rng = np.random.default_rng(37)
    for case in range(600):
        ids = rng.integers(-3 if case % 3 == 0 else 0, (5, 40, 10**12)[case % 3], int(rng.integers(0, 30)))
        ids = np.sort(ids) if case % 4 == 0 else ids
        codes, uniques = _codes(ids)
        want_codes, want_uniques = pd.factorize(ids, sort=True)
        assert np.array_equal(codes, want_codes) and codes.dtype == want_codes.dtype, ids
        assert np.array_equal(uniques, want_uniques) and uniques.dtype == want_uniques.dtype, ids
