"""Bad input gives a typed error naming the file; the CLI turns it into one line and exit != 0."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

import roofline
from conftest import OWN, shared
from conftest import cli as _cli
from roofline import errors
from roofline.schema import kernel_columns

T4 = "ncu/sm75_t4_wmma-gemm-fp16_full-hier.ncu-rep"
A10G = "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"


def _bad_inputs(tmp_path):
    real = shared(T4).read_bytes()
    (tmp_path / "empty.ncu-rep").write_bytes(b"")
    (tmp_path / "truncated.ncu-rep").write_bytes(real[:100_000])
    (tmp_path / "csv.ncu-rep").write_bytes(shared("ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv").read_bytes())
    (tmp_path / "json.ncu-rep").write_text('{"traceEvents": []}')
    (tmp_path / "random.bin").write_bytes(bytes(range(256)) * 4)
    with gzip.open(tmp_path / "trace.pt.trace.json.gz", "wt") as fh:
        fh.write('{"traceEvents": []}')
    return {
        tmp_path / "missing.ncu-rep": errors.InputNotFoundError,
        tmp_path / "empty.ncu-rep": errors.EmptyInputError,
        tmp_path / "truncated.ncu-rep": errors.CorruptReportError,
        OWN / "lfs_pointer.ncu-rep": errors.LfsPointerError,
        tmp_path / "csv.ncu-rep": errors.FormatMismatchError,
        tmp_path / "json.ncu-rep": errors.FormatMismatchError,
        tmp_path / "random.bin": errors.UnknownFormatError,
        tmp_path / "trace.pt.trace.json.gz": errors.NoKernelsError,  # a trace with no GPU events
    }


def test_each_bad_input_raises_its_typed_error_naming_the_file(tmp_path):
    for path, exc_type in _bad_inputs(tmp_path).items():
        with pytest.raises(exc_type) as info:
            roofline.read(path)
        assert str(path) in str(info.value)
        assert isinstance(info.value, errors.RooflineError)


def test_cli_bad_inputs_one_line_each_nonzero_exit_no_traceback(tmp_path):
    bad = _bad_inputs(tmp_path)
    for path in bad:
        p = _cli("analyze", path)
        assert p.returncode == 1, (path, p.stderr)
        assert "Traceback" not in p.stderr
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
        assert lines[0].startswith("roofline: ") and str(path) in lines[0]


def test_cli_mixed_inputs_analyses_the_good_and_reports_the_bad(tmp_path):
    good = shared(A10G)
    out = tmp_path / "res.csv"
    p = _cli("analyze", good, tmp_path / "missing.ncu-rep", "--out", out)
    assert p.returncode == 1
    assert "warptiling" in p.stdout
    assert "missing.ncu-rep: no such file" in p.stderr and "1 of 2 input(s) failed" in p.stderr
    assert len(pd.read_csv(out)) == 4


def test_cli_out_parquet_keeps_columns_order_and_provenance(tmp_path):
    out = tmp_path / "res.parquet"
    p = _cli("analyze", shared(A10G), "--out", out)
    assert p.returncode == 0, p.stderr
    df = roofline.read_table(out)
    assert list(df.columns[: len(kernel_columns())]) == kernel_columns()
    for col in ("intensity_dram_flop_per_byte", "achieved_flop_per_s", "bound", "pct_of_roof"):
        assert col in df.columns
    assert df["kernel_short_name"].tolist() == ["one_blocktiling", "two_blocktiling", "vectorized_blocktiling", "warptiling"]
    prov = df.attrs["roofline.provenance"][0]
    assert prov["tool_version"] == "2023.1.1.0" and prov["source_file"].endswith("roofline.ncu-rep")


def test_cli_json_for_scripts():
    p = _cli("analyze", shared(A10G), "--format", "json")
    assert p.returncode == 0, p.stderr
    recs = json.loads(p.stdout)
    assert len(recs) == 4 and recs[0]["flop_fp32"] == pytest.approx(2 * 1024**3, rel=1e-3)
    assert recs[0]["l2_bytes"] is None or isinstance(recs[0]["l2_bytes"], float)


def test_cli_version_formats_help():
    assert roofline.__version__ in _cli("--version").stdout
    fm = _cli("formats")
    assert fm.returncode == 0 and "ncu-rep" in fm.stdout and "ncu-csv" in fm.stdout
    for args in (("--help",), ("analyze", "--help"), ("formats", "--help")):
        p = _cli(*args)
        assert p.returncode == 0 and "Usage" in p.stdout


def test_cli_usage_error_is_one_line_exit_2():
    p = _cli("analyze")
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_cli_device_option_gives_csv_spec_peaks_and_folder_expansion(tmp_path):
    csv_path = shared("ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv")
    p = _cli("analyze", csv_path, "--format", "json")
    assert all(r["bound"] == "unavailable" for r in json.loads(p.stdout))
    p = _cli("analyze", csv_path, "--device", "A100-PCIE-40GB", "--format", "json")
    recs = {r["kernel_id"]: r for r in json.loads(p.stdout)}
    assert recs[2]["peak_dram_bytes_per_s"] == pytest.approx(1.555e12)
    assert recs[2]["peak_dram_bytes_per_s_source"].startswith("spec:")
    # the naive GEMM reads L1 at 0.4 FLOP/B: with ncu's L1 roof (128 B/cycle/SM at the profiled 765 MHz)
    # it can reach 4.2 TFLOP/s there, below the 10.6 TFLOP/s compute roof at the same clock
    assert recs[2]["peak_l1_bytes_per_s"] == pytest.approx(128 * 108 * recs[2]["sm_clock_hz"], rel=1e-12)
    assert recs[2]["binding_roof"] == "l1"
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.ncu-rep").write_bytes(shared(A10G).read_bytes())
    (tmp_path / "d" / "notes.txt").write_text("not a profile")
    k = roofline.read(tmp_path / "d")
    assert len(k) == 4


def test_read_each_never_loses_an_input(tmp_path):
    bad = _bad_inputs(tmp_path)
    good = shared(A10G)
    frame, errs = roofline.read_each([good, *bad])
    assert len(frame) == 4
    assert {p for p, _ in errs} == set(bad)
    assert all(isinstance(e, errors.RooflineError) for _, e in errs)


def test_compressed_report_name_without_content_is_corrupt(tmp_path):
    p = tmp_path / "x.ncu-repz"
    p.write_bytes(b"\x00" * 100)
    with pytest.raises(errors.CorruptReportError):
        roofline.read(p)
