"""Nsight Systems SQLite exports: the reader against `nsys stats` output and the raw tables."""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from conftest import shared
from nsys_synthetic import KERNELS, make_export
from nsys_synthetic import run_sql as _sql
from roofline.errors import CorruptReportError, FormatMismatchError, UnsupportedFormatError
from roofline.hardware.attach import attach_roofs
from roofline.ingest.nsys import export as nsys
from roofline.ingest.registry import reader_for, sniff

CLOVER = "nsys/nsys2024.5_a100x2_cloverleaf-mpi-cuda.sqlite"
STATS = "nsys/reference/nsys2024.5_a100x2_cloverleaf-mpi-cuda.nsys-stats-gpu-trace.csv"
BEFORE = "nsys/nsys2026.2_h100x2_mfu-before.sqlite"


@pytest.fixture(scope="module")
def clover():
    return nsys.read(shared(CLOVER))


def _stats_rows(path: Path) -> list[tuple[str, str, int, int, str, str]]:
    """(name, type, start ns, duration ns, stream, bytes) per GPU event of the `nsys stats` trace CSV
    (Enter/Leave pairs)."""
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for r in rows:
        if r["Event Type"] == "Enter":
            start, end = int(r["Timestamp (ns)"]), int(r["_matching_timestamp"])
            out.append((r["Name"], r["type"], start, end - start, r["streamId"], r["bytes"]))
    return sorted(out, key=lambda x: x[2])


def test_cloverleaf_kernels_equal_nsys_stats(clover):
    ref = [r for r in _stats_rows(shared(STATS)) if r[1] == "kernel"]
    ours = clover[clover["copy_kind"].isna()]
    assert len(ours) == len(ref) == 1312
    assert ours["kernel_short_name"].tolist() == [r[0] for r in ref]
    assert ours["start_ns"].tolist() == [r[2] for r in ref]
    assert np.round(ours["duration_s"].to_numpy() * 1e9).astype(int).tolist() == [r[3] for r in ref]
    assert ours["stream_id"].astype(str).tolist() == [r[4] for r in ref]
    assert ours["start_ns"].is_monotonic_increasing


def test_cloverleaf_copies_equal_nsys_stats(clover):
    ref = [r for r in _stats_rows(shared(STATS)) if r[1] != "kernel"]
    ours = clover[clover["copy_kind"].notna()]
    assert len(ours) == len(ref) == 279
    assert ours["start_ns"].tolist() == [r[2] for r in ref]
    kinds = {"CUDA_MEMCPY_KIND_HTOD": "HtoD", "CUDA_MEMCPY_KIND_DTOH": "DtoH"}
    assert ours["copy_kind"].tolist() == [kinds[r[1]] for r in ref]
    assert ours["copy_bytes"].tolist() == [float(r[5]) for r in ref]
    assert np.round(ours["duration_s"].to_numpy() * 1e9).astype(int).tolist() == [r[3] for r in ref]
    htod = ours[ours["copy_kind"] == "HtoD"]
    assert htod["copy_bytes"].sum() == 225065752  # sum(bytes) of the 254 HtoD copies (sqlite3 by hand)
    assert htod["dram_bytes"].isna().all()  # a host-link copy has no DRAM roof
    assert htod["host_link_bytes"].sum() == 225065752  # the same bytes, on the host link
    assert ours[ours["copy_kind"] == "DtoD"]["host_link_bytes"].isna().all()
    assert htod["dram_bytes_source"].str.contains("host/peer link").all()


def test_cloverleaf_launch_config_equals_kernel_table(clover):
    """Grid, block, registers, names: the raw table (the `nsys stats` CSV has no launch configuration)."""
    con = sqlite3.connect(f"file:{shared(CLOVER)}?mode=ro", uri=True)
    raw = con.execute("SELECT k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, k.registersPerThread, "
                      "k.staticSharedMemory + k.dynamicSharedMemory, d.value, m.value "
                      "FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                      "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds m ON m.id = k.mangledName "
                      "ORDER BY k.start").fetchall()
    ours = clover[clover["copy_kind"].isna()]
    cols = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "registers_per_thread",
            "shared_memory_bytes", "kernel_name", "mangled_name"]
    assert [tuple(r) for r in ours[cols].astype(object).itertuples(index=False)] == raw


def test_cloverleaf_device_and_peaks(clover):
    row = clover.iloc[0]
    assert row["device_name"] == "NVIDIA A100-SXM4-80GB" and row["sm_count"] == 108
    assert row["compute_capability"] == "8.0" and row["sm_boost_clock_hz"] == 1.41e9
    assert row["peak_dram_bytes_per_s"] == 2039040000000.0
    assert "TARGET_INFO_GPU memoryBandwidth" in row["peak_dram_bytes_per_s_source"]
    assert np.isnan(row["peak_flop_per_s_fp64"])  # the export records none: the roofs stage attaches the table's
    row = attach_roofs(clover.iloc[:1]).iloc[0]
    assert row["peak_flop_per_s_fp64"] == 9.7e12 and row["peak_flop_per_s_fp64_source"].startswith("spec: A100")
    assert row["peak_dram_bytes_per_s"] == 2039040000000.0  # the export's own DRAM roof stays
    assert np.isnan(row["flop_fp32"]) and "--counters" in row["flop_fp32_source"]
    assert row["process"] == "cuda-cloverleaf (pid 1701896)"
    prov = clover.attrs["roofline.provenance"][0]
    assert prov["export_schema"] == "3.13.2" and prov["kernels"] == 1312


def test_h100_nvtx_attached_through_runtime_call():
    """Each launch carries the push/pop ranges that enclose its runtime call on the launching thread."""
    path = shared(BEFORE)
    frame = nsys.read(path)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    kernels = frame[frame["copy_kind"].isna()]
    assert len(kernels) == 4010
    assert frame["nvtx_range"].notna().sum() > 0.9 * len(frame)
    for _, row in kernels.sample(25, random_state=0).iterrows():
        tid, t = con.execute("SELECT r.globalTid, r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                             "JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId "
                             "AND k.globalPid = (r.globalTid >> 24) << 24 WHERE k.start = ? AND k.deviceId = ?",
                             (int(row["start_ns"]), int(row["device_id"]))).fetchone()
        names = [x for (x,) in con.execute("SELECT text FROM NVTX_EVENTS WHERE eventType = 59 AND globalTid = ? "
                                           "AND start <= ? AND end >= ? ORDER BY start", (tid, t, t))]
        assert row["nvtx_range"] == ("/".join(names) if names else None)
    # the trimmed export has no TARGET_INFO_GPU: peaks say so instead of guessing the GPU
    assert frame["device_name"].isna().all()
    assert frame["peak_dram_bytes_per_s_source"].str.contains("--peaks").all()
    dtod = frame[frame["copy_kind"] == "DtoD"]
    assert (dtod["dram_bytes"] == 2 * dtod["copy_bytes"]).all()
    assert set(frame["process"].dropna()) == {"python3 (pid 144)", "python3 (pid 145)"}


def test_synthetic_old_schema(tmp_path):
    frame = nsys.read(make_export(tmp_path / "old.sqlite", old=True))
    assert len(frame) == 6 and frame.attrs["roofline.provenance"][0]["export_schema"] == "3.4.1"
    k = frame[frame["copy_kind"].isna()]
    assert k["kernel_name"].tolist() == [KERNELS[0]] * 4 and k["mangled_name"].isna().all()
    assert k["graph_id"].isna().all() and k["shared_memory_bytes"].tolist() == [1024] * 4
    assert k["duration_s"].tolist() == pytest.approx([100e-9, 101e-9, 102e-9, 103e-9])
    # launch 1 (CPU call at 1000): train/step in the default domain, io in domain 7 (named)
    assert k["nvtx_range"].tolist() == ["train", "train/step;mydomain:io", "train", "train"]
    copies = frame[frame["copy_kind"].notna()]
    assert copies["copy_kind"].tolist() == ["DtoD", "HtoD"]
    assert copies["dram_bytes"].tolist()[0] == 8192 and np.isnan(copies["dram_bytes"].tolist()[1])
    assert copies["attribution"].str.startswith("orphan").tolist() == [True, True]
    assert frame["peak_dram_bytes_per_s"].iloc[0] == 3352320000000
    assert frame["peak_dram_bytes_per_s_source"].iloc[0].startswith("nsys TARGET_INFO_CUDA_GPU memoryBandwidth")
    assert frame["sm_count"].iloc[0] == 132 and frame["compute_capability"].iloc[0] == "9.0"
    assert attach_roofs(frame)["peak_flop_per_s_fp32_source"].iloc[0].startswith("spec: H100 SXM")


def test_synthetic_new_schema_graph_and_mangled(tmp_path):
    frame = nsys.read(make_export(tmp_path / "new.sqlite", nvtx=False, gpu_info=False))
    k = frame[frame["copy_kind"].isna()]
    assert k["mangled_name"].tolist() == [KERNELS[2]] * 4
    assert k["graph_node_id"].tolist() == [9] * 4 and k["graph_id"].tolist() == [2] * 4
    assert frame["nvtx_range"].isna().all() and frame["process"].iloc[0] == "train.py (pid 4242)"
    assert sniff(tmp_path / "new.sqlite") == "nsys-sqlite"


def test_not_an_nsys_export(tmp_path):
    p = _sql(tmp_path / "other.sqlite", "CREATE TABLE t (x)")
    with pytest.raises(FormatMismatchError, match="not an Nsight Systems export"):
        sniff(p)
    with pytest.raises(FormatMismatchError):
        nsys.read(p)
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(nsys.MAGIC + b"\0" * 200)
    with pytest.raises(CorruptReportError, match="damaged.sqlite"):
        nsys.read(damaged)


def test_nsys_rep_without_nsys_names_the_command(tmp_path, monkeypatch):
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\x00binary report")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert sniff(rep) == "nsys-rep"
    with pytest.raises(UnsupportedFormatError, match="nsys export --type sqlite --output .*run.sqlite .*run.nsys-rep"):
        reader_for(rep).read(rep)


def test_nsys_rep_exported_with_nsys_on_path(tmp_path, monkeypatch):
    """The export step runs whatever `nsys` is on PATH; here a script that writes a synthetic export."""
    import sys

    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "nsys"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(Path(__file__).parents[1])!r})\n"
                      "from pathlib import Path\nfrom nsys_synthetic import make_export\n"
                      "a = sys.argv\nmake_export(Path(a[a.index('--output') + 1]))\n")
    script.chmod(0o755)
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\x00binary report")
    monkeypatch.setenv("PATH", str(bindir))
    frame = nsys.read(rep)
    assert len(frame) == 6 and (frame["source_file"] == str(rep)).all()


def test_per_process_view():
    import roofline
    from roofline.analysis.aggregate import aggregate

    frame = nsys.read(shared(BEFORE))
    per = aggregate(roofline.analyze(frame, peaks="H100 SXM"), by="process")
    assert sorted(per["process"]) == ["python3 (pid 144)", "python3 (pid 145)"]
    assert per["kernel_count"].sum() == len(frame)
    assert per["duration_s"].sum() == pytest.approx(frame["duration_s"].sum())


def test_compare_before_after_pair():
    """The H100 before/after exports are a ready compare case (time only: FLOPs need --counters)."""
    import roofline
    from roofline.analysis.compare import compare, program_change

    before, after = (roofline.analyze(nsys.read(shared(f"nsys/nsys2026.2_h100x2_mfu-{w}.sqlite")), peaks="H100 SXM")
                     for w in ("before", "after"))
    change = program_change(compare(before, after))
    for w, key in (("before", "time_base_s"), ("after", "time_cand_s")):
        con = sqlite3.connect(f"file:{shared(f'nsys/nsys2026.2_h100x2_mfu-{w}.sqlite')}?mode=ro", uri=True)
        ns = sum(con.execute(f"SELECT SUM(end - start) FROM {t}").fetchone()[0] for t in
                 ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"))
        assert change[key] == pytest.approx(ns * 1e-9)
    assert change["matched"] == 4732 and change["time_change_pct"] == pytest.approx(-8.685, abs=1e-3)


def test_damaged_and_trimmed_exports(tmp_path):
    from roofline.errors import NoKernelsError

    p = _sql(make_export(tmp_path / "trim.sqlite"), "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME",  # no runtime calls
             "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = NULL WHERE correlationId = 2")
    frame = nsys.read(p)
    assert frame["attribution"].str.startswith("orphan").all() and frame["nvtx_range"].isna().all()
    bad = frame[frame["correlation_id"] == 2]
    assert np.isnan(bad["duration_s"].iloc[0]) and bad["flags"].iloc[0] == "no valid start/end in the export"

    _sql(p, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 'lots' WHERE correlationId = 3")
    with pytest.raises(CorruptReportError, match="non-integer value"):
        nsys.read(p)

    empty = _sql(tmp_path / "empty.sqlite", "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT)")
    with pytest.raises(NoKernelsError, match="empty.sqlite"):
        nsys.read(empty)


def test_read_only_and_odd_file_names(tmp_path):
    import hashlib
    import os

    d = tmp_path / "run #1?%20"
    d.mkdir()
    p = make_export(d / "a b#?.sqlite")
    digest = hashlib.sha256(p.read_bytes()).hexdigest()
    p.chmod(0o444)
    d.chmod(0o555)
    try:
        assert len(nsys.read(p)) == 6
        assert hashlib.sha256(p.read_bytes()).hexdigest() == digest
        assert sorted(os.listdir(d)) == ["a b#?.sqlite"]  # no journal or WAL file left beside it
    finally:
        d.chmod(0o755)


def test_per_step_view(tmp_path):
    """Steps are NVTX ranges around the launches (here ProfilerStep#0 around launches 0-2, #1 around 3-5)."""
    import roofline
    from nsys_synthetic import TID
    from roofline.analysis.aggregate import aggregate

    p = make_export(tmp_path / "steps.sqlite", n_kernels=6)
    con = sqlite3.connect(p)
    con.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                    "VALUES (?, ?, 59, ?, ?, 0)",
                    [(0, 2500, "ProfilerStep#0", TID), (2600, 5500, "ProfilerStep#1", TID),
                     (0, 7000, "outer, same start", TID)])  # inserted after the inner range it holds
    con.commit()
    con.close()
    frame = nsys.read(p)
    assert frame["nvtx_range"].iloc[1] == "outer, same start/train/ProfilerStep#0/step;mydomain:io"
    per = aggregate(roofline.analyze(frame), by="step").set_index("step")
    assert per.loc["ProfilerStep#0", "kernel_count"] == 3 and per.loc["ProfilerStep#1", "kernel_count"] == 3
    assert per.loc["ProfilerStep#1", "duration_s"] == pytest.approx((103 + 104 + 105) * 1e-9)
    assert per.loc["(no step range)", "kernel_count"] == 2  # the two copies, launched after the steps


def test_batch_dataset_of_an_export_equals_a_direct_analysis(tmp_path):
    import pandas as pd

    import roofline
    from roofline.batch import open_dataset
    from roofline.batch.runner import run_batch

    src = shared(CLOVER)
    summary = run_batch([src], tmp_path / "ds", workers=1)
    assert summary.ok == 1 and summary.failed == 0
    mine = open_dataset(tmp_path / "ds", "roofline").reset_index(drop=True)
    direct = roofline.analyze(nsys.read(src))
    assert len(mine) == len(direct) == 1591
    for col in ("duration_s", "dram_bytes", "copy_bytes", "peak_dram_bytes_per_s"):
        pd.testing.assert_series_equal(mine[col], direct[col], check_names=False, check_dtype=False)
    for col in ("start_ns", "stream_id", "kernel_name", "copy_kind", "process", "bound"):
        assert mine[col].astype(str).tolist() == direct[col].astype(str).tolist(), col
