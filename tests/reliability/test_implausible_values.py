"""Untrusted numbers: typed parsing naming file and field, and nothing silently implausible.

Each implausible value the campaign fed the readers is built here (a copy of a real export with one cell
changed, or a small trace by hand) and must come out unavailable, with a warning line, and never as a roof:
the roofs left are the spec table's for the named GPU (by hand: the A100 SXM4 80GB's 2,039 GB/s DRAM).
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

import roofline
from conftest import OWN, shared
from roofline import errors, pipeline
from roofline.ingest import validate

NSYS = "nsys/nsys2024.5_a100x2_cloverleaf-mpi-cuda.sqlite"  # two A100-SXM4-80GB, 108 SMs, 2.039 TB/s


def _nsys_with(tmp_path: Path, **cells: object) -> Path:
    db = tmp_path / "run.sqlite"
    shutil.copyfile(shared(NSYS), db)
    with sqlite3.connect(db) as con:
        for col, value in cells.items():
            con.execute(f'UPDATE TARGET_INFO_GPU SET "{col}" = ?', (value,))
    con.close()
    return db


def _warnings(a: pipeline.Analysis) -> str:
    return "\n".join(m.text for m in a.messages if m.level == "warning")


def test_an_nsys_sm_count_of_1e12_gives_no_roof_and_a_warning(tmp_path):
    """Before: smCount 1e12 scaled the A100's roofs to an FP32 peak of 1.8e23 FLOP/s."""
    a = pipeline.run([_nsys_with(tmp_path, smCount=10**12)])
    f = a.frame
    assert f["sm_count"].isna().all() and "implausible sm_count" in f["flags"].iloc[0]
    assert "sm_count 1e+12 (plausible: 1 to 2048)" in _warnings(a)
    fp32 = f["peak_flop_per_s_fp32"].dropna().unique()
    assert len(fp32) == 1 and fp32[0] == pytest.approx(19.5e12, rel=0.01)  # the A100's own, not scaled by 1e12/108


def test_a_negative_memory_bandwidth_is_no_dram_roof(tmp_path):
    a = pipeline.run([_nsys_with(tmp_path, memoryBandwidth=-1)])
    dram = a.frame["peak_dram_bytes_per_s"]
    assert (dram > 0).all() and dram.iloc[0] == pytest.approx(2.039e12)  # the spec table's, not -1
    assert "peak_dram_bytes_per_s -1" in _warnings(a)


def test_text_in_the_device_table_is_a_typed_error_naming_file_and_field(tmp_path):
    db = _nsys_with(tmp_path, smCount="lots")
    with pytest.raises(errors.CorruptReportError, match="field 'TARGET_INFO_GPU.smCount': 'lots' is not an integer") as e:
        roofline.read(db)
    assert e.value.path == str(db)


def _trace(path: Path, device: dict, kernels: list[tuple[object, object]]) -> Path:
    """A Kineto trace by hand: one op per (ts, dur) kernel, each launched by its op."""
    events = []
    for i, (ts, dur) in enumerate(kernels):
        events += [
            {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 100 * i, "dur": 50,
             "args": {"External id": i + 1, "Input Dims": [[1024]], "Input type": ["float"]}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 100 * i + 1,
             "dur": 2, "args": {"External id": i + 1, "correlation": i + 1}},
            {"ph": "X", "cat": "kernel", "name": "relu_kernel", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
             "args": {"correlation": i + 1, "device": 0}}]
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": [{"id": 0, **device}]}))
    return path


H100 = {"name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}


def test_a_kineto_sm_count_of_1e5_is_unavailable_and_the_roofs_are_the_h100s(tmp_path):
    """Before: numSms 1e5 scaled the H100's compute roofs 760x."""
    a = pipeline.run([_trace(tmp_path / "t.pt.trace.json", {**H100, "numSms": 100_000}, [(10, 5)])])
    f = a.frame
    assert f["sm_count"].isna().all() and "sm_count 100000" in _warnings(a)
    assert f["peak_flop_per_s_fp32"].iloc[0] == pytest.approx(
        pipeline.run([_trace(tmp_path / "ok.pt.trace.json", H100, [(10, 5)])]).frame["peak_flop_per_s_fp32"].iloc[0])


def test_an_mi300x_named_h100_gets_no_h100_roofs(tmp_path):
    trace = _trace(tmp_path / "t.pt.trace.json", {**H100, "numSms": 304, "computeMinor": 4}, [(10, 5)])
    a = pipeline.run([trace])
    f = a.frame
    assert f["peak_flop_per_s_fp32"].isna().all() and (f["bound"] == "unavailable").all()
    assert "304 SMs, more than H100 SXM's 132" in f["peak_flop_per_s_fp32_source"].iloc[0]
    assert "the device name does not match the hardware" in _warnings(a)


def test_kernels_with_non_numeric_times_are_said_not_dropped_silently(tmp_path):
    kernels = [(10, 5)] + [("soon", 5)] * 3 + [(400, None)]
    a = pipeline.run([_trace(tmp_path / "t.pt.trace.json", H100, kernels)])
    assert len(a.frame) == 1
    assert "4 GPU kernel/copy events have a ts or dur that is not a number" in _warnings(a)


def test_an_op_of_106_days_has_no_duration_and_no_bound(tmp_path):
    a = pipeline.run([_trace(tmp_path / "t.pt.trace.json", H100, [(10, 106 * 86400 * 1e6)])])
    f = a.frame
    assert f["duration_s"].isna().all() and (f["bound"] == "unavailable").all()
    assert f["duration_s_source"].iloc[0].startswith("unavailable: implausible value 9.1584e+06")
    assert "duration_s 9.1584e+06 (over 86400 s: one day)" in _warnings(a)


def test_infinite_flops_are_never_classified(tmp_path):
    """Before: rocprof-compute and xplane rows with infinite FLOPs were reported compute-bound, unflagged."""
    wl = tmp_path / "wl"
    shutil.copytree(shared("rocprof/rocprof-compute_vcopy_MI200"), wl)
    for p in wl.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    perf = wl / "pmc_perf.csv"
    rows = list(csv.reader(perf.open()))
    rows[1][rows[0].index("SQ_INSTS_VALU_FMA_F32")] = "inf"
    with perf.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    a = pipeline.run([wl])
    f = a.frame
    bad = f["flop_fp32"].isna() & f["flop_fp32_source"].str.contains("implausible value inf")
    assert bad.iloc[0] and f["bound"].iloc[0] in ("unavailable", "memory-bound", "latency-bound")
    assert not any(math.isinf(x) for x in f["flop_fp32"].dropna())
    assert "flop_fp32 inf (not finite)" in _warnings(a)


@pytest.mark.parametrize("sep", ["\u2028", "\x0c", "\x85"])
def test_an_ncu_csv_with_a_line_separator_inside_a_quoted_name_reads(tmp_path, sep):
    text = (OWN / "tiny_metrics.csv").read_text().replace("axpy<float>", f"axpy{sep}<float>")
    p = tmp_path / "k.csv"
    p.write_text(text)
    k = roofline.read(p)
    assert k["kernel_name"].str.contains(sep, regex=False).all() and len(k) == len(roofline.read(OWN / "tiny_metrics.csv"))


@pytest.mark.parametrize(("value", "ok"), [(7, 7), ("12", 12), (3.0, 3), ("4e3", 4000), (2**63, None), ("1e999", None),
                                           ([1], None), ({"a": 1}, None), ("x", None), (float("inf"), None),
                                           (True, None), (None, None), (1.5, None)])
def test_as_int_parses_or_names_file_and_field(value, ok):
    if ok is None:
        with pytest.raises(errors.CorruptReportError, match=r"^f\.csv: field 'Dispatch_Id': "):
            validate.as_int("f.csv", "Dispatch_Id", value)
    else:
        assert validate.as_int("f.csv", "Dispatch_Id", value) == ok


def test_the_checks_leave_a_plausible_frame_as_it_is():
    k = roofline.read(shared("ncu/sm80_a100_mistic-selfjoin-fp64_full.ncu-rep"))
    assert validate.checked(k) is k and not validate.warnings_of(k)


def _one_cell(col: str, value: float):
    """A 2-row canonical frame whose second row holds ``value`` in ``col`` (an extra column where not canonical)."""
    from roofline.schema import kernels_from_columns

    k = kernels_from_columns({"duration_s": [1e-3, 2e-3], "sm_count": [108, None], "dram_bytes": [1e6, math.nan]}, 2)
    if col == "sm_count":
        k[col] = pd.array([108, None if math.isnan(value) else int(value)], dtype="Int64")
    else:
        k[col] = [math.nan if col not in k else k[col].iloc[0], value]
    return k


_EDGES = [(c, lo, hi) for c, (lo, hi) in {**validate.DEVICE_BOUNDS, **validate.PEAK_BOUNDS}.items()] + [
    (c, 0.0, most) for cols, most in ((validate._FLOPS, validate.MAX_FLOP), (validate._BYTES, validate.MAX_BYTES))
    for c in cols]


@pytest.mark.parametrize(("col", "lo", "hi"), _EDGES)
def test_the_one_pass_test_flags_what_the_column_checks_flag_at_each_bound(col, lo, hi):
    """checked's vectorised first pass (nothing implausible: the frame as it is) agrees with its column-by-column
    checks just inside and just outside each bound, and for NaN and the infinities."""
    for value, plausible in ((lo, True), (hi, True), (math.nan, True), (lo - abs(lo) * 0.5 - 1, False),
                             (hi * 2, False), (math.inf, False), (-math.inf, False)):
        if col == "sm_count" and math.isinf(value):
            continue  # an integer column holds no infinity
        k = _one_cell(col, value)
        out = validate.checked(k)
        assert (out is k) == plausible, (col, value)
        if not plausible:
            assert f"implausible {col}" in out["flags"].iloc[1] and out[col].isna().iloc[1]


@pytest.mark.parametrize(("value", "plausible"), [(86_400.0, True), (86_401.0, False), (math.inf, True),
                                                  (-5.0, True), (math.nan, True)])
def test_the_one_pass_test_flags_only_finite_durations_over_a_day(value, plausible):
    k = _one_cell("duration_s", value)
    out = validate.checked(k)
    assert (out is k) == plausible
    if not plausible:
        assert "implausible duration_s" in out["flags"].iloc[1]


def test_a_text_column_in_a_checked_place_is_coerced_as_before():
    """A frame whose checked column is text (not canonical) goes the column-by-column way: coerced, then flagged."""
    k = _one_cell("dram_bytes", 1.0)
    k["dram_bytes"] = ["1e6", "-5"]
    out = validate.checked(k)
    assert out is not k and "implausible dram_bytes" in out["flags"].iloc[1]
