"""Trimmed and older nsys exports (issue 20): each reads, saying what its missing table costs, or fails with a
typed error naming the missing table. Copies of the real fixtures are trimmed in the test's own tmp folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import shared
from nsys_synthetic import run_sql as _sql
from roofline.errors import CorruptReportError, NoKernelsError, RooflineError
from roofline.ingest.nsys import export as nsys

BEFORE = "nsys/nsys2026.2_h100x2_mfu-before.sqlite"
CLOVER = "nsys/nsys2024.5_a100x2_cloverleaf-mpi-cuda.sqlite"


def _copy(tmp_path: Path, fixture: str, *statements: str) -> Path:
    p = tmp_path / Path(fixture).name
    shutil.copyfile(shared(fixture), p)
    p.chmod(0o644)
    return _sql(p, *statements)


@pytest.mark.parametrize("table", ["StringIds", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "PROCESSES",
                                   "META_DATA_EXPORT", "ENUM_CUDA_MEMCPY_OPER", "CUPTI_ACTIVITY_KIND_MEMSET"])
def test_trimmed_export_reads_and_names_the_missing_table(tmp_path, table):
    full = nsys.read(shared(BEFORE))
    frame = nsys.read(_copy(tmp_path, BEFORE, f"DROP TABLE {table}"))
    missing = frame.attrs["roofline.provenance"][0]["missing_tables"]
    kernels = frame[frame["copy_kind"].isna()]
    assert len(kernels) == 4010  # every launch is still there, with its time
    assert kernels["duration_s"].tolist() == full[full["copy_kind"].isna()]["duration_s"].tolist()
    if table == "StringIds":
        assert "StringIds" in missing and kernels["kernel_name"].isna().all()
        assert kernels["flags"].str.contains("no StringIds table").all()
    elif table == "CUPTI_ACTIVITY_KIND_RUNTIME":
        assert table in missing and frame["nvtx_range"].isna().all()
        assert frame["attribution"].str.contains("no CUPTI_ACTIVITY_KIND_RUNTIME table").all()
    elif table == "NVTX_EVENTS":
        assert table in missing and frame["nvtx_range"].isna().all()
    elif table == "PROCESSES":
        assert table in missing and set(frame["process"]) == {"pid 144", "pid 145"}
    elif table == "META_DATA_EXPORT":
        assert "META_DATA_EXPORT or EXPORT_META_DATA" in missing
        assert frame.attrs["roofline.provenance"][0]["export_schema"] is None
    elif table == "ENUM_CUDA_MEMCPY_OPER":  # the ids are stable: the kinds stay the same
        pd.testing.assert_series_equal(frame["copy_kind"], full["copy_kind"])
    else:  # memsets gone, kernels and memcpys stay
        assert (frame["copy_kind"] == "memset").sum() == 0 and len(frame) == len(full) - 269
    assert "TARGET_INFO_GPU or TARGET_INFO_CUDA_GPU" in missing  # this fixture was trimmed of it already


def test_no_activity_table_is_a_typed_error_naming_them(tmp_path):
    p = _copy(tmp_path, BEFORE, *(f"DROP TABLE {t}" for t in nsys.ACTIVITY_TABLES))
    with pytest.raises(NoKernelsError, match="no CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, "
                                             "CUPTI_ACTIVITY_KIND_MEMSET table") as e:
        nsys.read(p)
    assert p.name in str(e.value)


def test_kernel_table_without_times_is_a_typed_error_naming_it(tmp_path):
    p = _copy(tmp_path, CLOVER, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN end")
    with pytest.raises(CorruptReportError, match="CUPTI_ACTIVITY_KIND_KERNEL table has no end column"):
        nsys.read(p)


@pytest.mark.parametrize("table", ["StringIds", "TARGET_INFO_GPU", "PROCESSES", "CUPTI_ACTIVITY_KIND_MEMCPY"])
def test_any_single_table_dropped_from_cloverleaf_reads_or_fails_typed(tmp_path, table):
    try:
        frame = nsys.read(_copy(tmp_path, CLOVER, f"DROP TABLE {table}"))
    except RooflineError as e:  # typed, naming the file
        assert "cloverleaf" in str(e)
        return
    named = " ".join(frame.attrs["roofline.provenance"][0]["missing_tables"])
    assert table in named or table.startswith("CUPTI_ACTIVITY")


def test_older_schema_of_a_real_export_reads_the_same(tmp_path):
    """CloverLeaf rewritten the way exports of nsys 2021 lay it out: EXPORT_META_DATA, TARGET_INFO_CUDA_GPU keyed
    by deviceId with its old column names, and no mangledName, greenContextId or graphNodeId column."""
    new = nsys.read(shared(CLOVER))
    p = _copy(tmp_path, CLOVER,
              "ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA",
              "CREATE TABLE TARGET_INFO_CUDA_GPU AS SELECT id AS deviceId, name, smCount AS numMultiprocessors, "
              "clockRate AS coreClockRate, memoryBandwidth, computeMajor AS computeCapabilityMajor, "
              "computeMinor AS computeCapabilityMinor FROM TARGET_INFO_GPU",
              "DROP TABLE TARGET_INFO_GPU",
              *(f"ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN {c}" for c in ("mangledName", "greenContextId",
                                                                                     "graphNodeId")))
    old = nsys.read(p)
    assert old["mangled_name"].isna().all() and old["graph_node_id"].isna().all()
    assert old.attrs["roofline.provenance"][0]["device_table"] == "TARGET_INFO_CUDA_GPU"
    same = [c for c in new.columns if c not in ("mangled_name", "graph_id", "graph_node_id", "source_file",
                                                 "peak_dram_bytes_per_s_source")]
    pd.testing.assert_frame_equal(old[same], new[same])
    assert old["peak_dram_bytes_per_s_source"].str.startswith("nsys TARGET_INFO_CUDA_GPU memoryBandwidth").all()


def test_nvtx_with_wide_domain_ids_and_ranges_that_do_not_nest(tmp_path):
    """Domain ids of 2^40 cannot travel packed with the thread and event type: the unpacked query gives the
    same labels. Push/pop ranges that overlap without nesting (a damaged export) take the stack walk."""
    from nsys_synthetic import TID, make_export

    plain = nsys.read(make_export(tmp_path / "plain.sqlite"))["nvtx_range"].tolist()
    wide = _sql(make_export(tmp_path / "wide.sqlite"), f"UPDATE NVTX_EVENTS SET domainId = {2**40} WHERE domainId = 7")
    assert nsys.read(wide)["nvtx_range"].tolist() == plain
    odd = _sql(make_export(tmp_path / "odd.sqlite"),
               f"INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) VALUES (800, 2600, 59, 'B', {TID}, 0)")
    k = nsys.read(odd)
    k = k[k["copy_kind"].isna()]
    # B opens inside "step" (500-1500) and outlives it: it counts as step's child while it is open
    assert k["nvtx_range"].tolist() == ["train", "train/step/B;mydomain:io", "train/step/B", "train"]
