"""The wide ``ncu --csv --page raw`` export (issue 31): read with the same numbers as the report it came from;
and ``--counters`` from a CSV that names no device (pandas' NA device, an internal error before)."""

from __future__ import annotations

import csv
import sys

import numpy as np
import pandas as pd
import pytest

import roofline
from conftest import OWN, shared

RAW = OWN / "ncu" / "sm86_a10g_gemm-variants_roofline.raw-page.csv"
REPORT = "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"
COMPARED = ("duration_s", "flop_fp64", "flop_fp32", "flop_fp16", "flop_tensor", "dram_bytes", "l2_bytes", "l1_bytes",
            "sm_clock_hz", "peak_dram_bytes_per_s", "peak_l2_bytes_per_s", "peak_l1_bytes_per_s")


def _same(csv_frame: pd.DataFrame, report: pd.DataFrame) -> None:
    assert len(csv_frame) == len(report)
    for c in ("kernel_name", "device_name", "compute_capability", "sm_count", "grid_x", "block_x"):
        assert csv_frame[c].tolist() == report[c].tolist(), c
    for c in COMPARED:
        mine, theirs = (f[c].to_numpy(dtype=float, na_value=np.nan) for f in (csv_frame, report))
        # the export leaves out instanced metrics: what the report has from per-opcode counts, the CSV lacks
        opcodes = report[f"{c}_source"].astype("string").str.contains("per-opcode", na=False).to_numpy() \
            if f"{c}_source" in report else np.zeros(len(report), dtype=bool)
        assert np.isnan(mine[opcodes]).all(), c
        assert mine[~opcodes] == pytest.approx(theirs[~opcodes], rel=1e-3, nan_ok=True), c


def test_the_raw_page_export_reads_as_the_report_it_mirrors():
    """The committed export of the A10G report (tests/fixtures/make_raw_page_csv.py): 4 launches, 310 metric
    columns (the report's 313 but its 3 instanced occupancy curves), a units row; duration, FLOPs, bytes at every level and the counter-derived roofs equal the
    report's (each SGEMM 2·1024³ = 2,147,483,648 FP32 FLOP)."""
    k, rep = roofline.read(RAW), roofline.read(shared(REPORT))
    _same(k, rep)
    assert (k["flop_fp32"] == 2 * 1024**3).all()
    assert (k["format"] == "ncu-csv").all() and (k["metric_set"] == "raw page").all()
    assert roofline.read_metrics(RAW)["metric"].nunique() == 310


@pytest.mark.parametrize("rel", ["ncu/sm75_t4_wmma-gemm-fp16_full-hier.ncu-rep",
                                 "ncu/sm90_gh200_triton-silu_full-hier.ncu-rep"])
def test_raw_page_exports_of_other_reports_read_as_their_reports(rel, tmp_path):
    """Written here from each report's own metrics (T4 FP16 tensor GEMM, GH200 Triton SiLU, full sets with the
    hierarchical roofline sections): within 0.1% of the report on every quantity."""
    sys.path.insert(0, str(OWN))
    from make_raw_page_csv import write

    out = tmp_path / "raw.csv"
    write(shared(rel), out)
    _same(roofline.read(out), roofline.read(shared(rel)))


def test_a_raw_page_export_without_its_units_row_or_cut_short_is_a_typed_error(tmp_path):
    from roofline.errors import CorruptReportError

    lines = RAW.read_text().splitlines()
    (tmp_path / "nounits.csv").write_text("\n".join([lines[0], *lines[2:]]) + "\n")
    with pytest.raises(CorruptReportError, match="units row"):
        roofline.read(tmp_path / "nounits.csv")
    (tmp_path / "cut.csv").write_text("\n".join([*lines[:-1], lines[-1][: len(lines[-1]) // 2] + '"']) + "\n")
    with pytest.raises(CorruptReportError, match="columns"):
        roofline.read(tmp_path / "cut.csv")


def _no_device(tmp_path):
    """The raw export of an ncu --metrics run (only the roofline counters: no device__attribute_display_name)."""
    rows = list(csv.reader(RAW.open()))
    keep = [i for i, name in enumerate(rows[0]) if i < 11 or name.startswith(
        ("gpu__time_duration", "smsp__sass_thread_inst_executed_op", "smsp__cycles_elapsed", "dram__bytes",
         "sm__cycles_elapsed"))]
    out = tmp_path / "counters.csv"
    with out.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([[r[i] for i in keep] for r in rows])
    return out


def test_counters_from_a_csv_that_names_no_device_are_carried_onto_the_timeline(tmp_path):
    """`roofline analyze TIMELINE.ncu-rep --counters COUNTERS.csv --device A10G`: the CSV's device is pandas' NA
    (a comparison with it was an internal error); every launch matches exactly and takes the CSV's FLOPs."""
    from roofline.pipeline import Options, run

    counters = _no_device(tmp_path)
    assert roofline.read(counters)["device_name"].isna().all()
    res = run([shared(REPORT)], Options(counters=(counters,), device="A10G"))
    assert not res.failures
    k = res.kernels
    assert (k["match_method"] == "exact: name, grid, block").all()
    assert (k["flop_fp32"] == 2 * 1024**3).all()
    assert k["flop_fp32_source"].str.startswith("counters (exact: name, grid, block)").all()
    from conftest import cli as _cli

    cli = _cli("analyze", str(shared(REPORT)), "--counters", str(counters), "--device", "A10G")
    assert cli.returncode == 0 and "internal error" not in cli.stderr, cli.stderr
