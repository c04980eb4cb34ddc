"""Ranks of nsys processes (issue 20): from what the export records, each with its source, else NA and why."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import roofline
from conftest import shared
from nsys_synthetic import TID, make_export
from roofline.analysis.aggregate import aggregate
from roofline.ingest.nsys import export as nsys


def _capture(path: Path, rows: list[tuple[str, str]]) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT)")
    con.executemany("INSERT INTO META_DATA_CAPTURE VALUES (?, ?)", rows)
    con.commit()
    con.close()
    return path


def _kernels(frame):
    return frame[frame["copy_kind"].isna()]


def test_rank_from_the_capture_environment(tmp_path):
    p = _capture(make_export(tmp_path / "r.sqlite"), [
        ("PROCESS_0:COMMAND", "/usr/bin/train.py"),
        ("PROCESS_0:ENVIRONMENT_VARIABLE", 'OMPI_COMM_WORLD_SIZE="8"'),
        ("PROCESS_0:ENVIRONMENT_VARIABLE", 'OMPI_COMM_WORLD_RANK="5"'),
        ("PROCESS_0:ENVIRONMENT_VARIABLE", 'SLURM_PROCID="1"')])  # Open MPI's own variable comes first
    frame = nsys.read(p)
    assert frame["rank"].tolist() == [5] * len(frame)
    assert set(frame["rank_source"]) == {'OMPI_COMM_WORLD_RANK=5 in META_DATA_CAPTURE PROCESS_0 environment'}


def test_rank_from_the_command_line(tmp_path):
    p = _capture(make_export(tmp_path / "r.sqlite"), [
        ("PROCESS_0:COMMAND", "train.py"), ("PROCESS_0:ARGUMENT_0", "--rank"), ("PROCESS_0:ARGUMENT_1", "3")])
    frame = nsys.read(p)
    assert frame["rank"].tolist() == [3] * len(frame) and "`--rank 3`" in frame["rank_source"].iloc[0]


def test_launcher_environment_is_not_its_childrens_rank(tmp_path):
    """Under torchrun/mpirun (another command than the GPU process) the capture's variables are not its rank."""
    p = _capture(make_export(tmp_path / "r.sqlite"), [
        ("PROCESS_0:COMMAND", "torchrun"), ("PROCESS_0:ENVIRONMENT_VARIABLE", 'SLURM_PROCID="1"')])
    frame = nsys.read(p)
    assert frame["rank"].isna().all()
    assert frame["rank_source"].iloc[0].startswith("unavailable: no rank variable")


def test_rank_from_nvtx_range_and_not_from_lookalikes(tmp_path):
    p = make_export(tmp_path / "r.sqlite", n_kernels=3)
    con = sqlite3.connect(p)
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                "VALUES (0, 100000, 59, 'Rank_2', ?, 0)", (TID,))
    con.commit()
    con.close()
    k = _kernels(nsys.read(p))
    assert k["rank"].tolist() == [2, 2, 2]
    assert k["rank_source"].iloc[0] == "NVTX range 'rank 2' around the launches of train.py (pid 4242)"
    q = make_export(tmp_path / "lora.sqlite", n_kernels=3)
    con = sqlite3.connect(q)
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                "VALUES (0, 1500, 59, 'lora_rank=16', ?, 0)", (TID,))  # around launches 0 and 1 only
    con.commit()
    con.close()
    assert _kernels(nsys.read(q))["rank"].isna().all()


def test_fixture_ranks():
    """CloverLeaf (srun, one process per report) records PMI_RANK=0; the H100 pair's torchrun children do not."""
    clover = nsys.read(shared("nsys/nsys2024.5_a100x2_cloverleaf-mpi-cuda.sqlite"))
    assert clover["rank"].tolist() == [0] * len(clover)
    assert set(clover["rank_source"]) == {"PMI_RANK=0 in META_DATA_CAPTURE PROCESS_0 environment"}
    h100 = nsys.read(shared("nsys/nsys2026.2_h100x2_mfu-before.sqlite"))
    assert h100["rank"].isna().all()
    why = set(h100["rank_source"])
    assert len(why) == 1 and "2 GPU processes on host modal (python3 (pid 144), python3 (pid 145))" in why.pop()
    per = aggregate(roofline.analyze(h100), by="rank")
    assert len(per) == 1 and per["analysis_note"].iloc[0].startswith("rank unavailable: the export holds 2 GPU")
    per = aggregate(roofline.analyze(clover), by="rank")
    assert per["rank"].tolist() == ["0"]  # group labels are strings
    assert per["analysis_note"].iloc[0].startswith("rank from PMI_RANK=0 in META_DATA_CAPTURE")
