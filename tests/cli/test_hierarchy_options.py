"""The analyze command's hierarchical options, through a real subprocess."""

from __future__ import annotations

import json

from conftest import cli as _cli
from conftest import shared

T4 = "ncu/sm75_t4_wmma-gemm-fp16_full-hier.ncu-rep"
CUTLASS = "ncu/sm80_a100_cutlass-b2b-int8-gemm_full-nvtx.ncu-rep"


def test_levels_table_and_top_n():
    p = _cli("analyze", shared(T4), "--levels", "dram,l2,l1")
    assert p.returncode == 0, p.stderr
    assert "I DRAM" in p.stdout and "I L2" in p.stdout and "I L1" in p.stdout
    p = _cli("analyze", shared(T4), "--top", "1", "--format", "json")
    recs = json.loads(p.stdout)
    assert len(recs) == 1 and recs[0]["kernel_short_name"] == "wmma_gemm"  # the longest kernel
    assert recs[0]["binding_roof"] in ("compute", "dram", "l2", "l1")


def test_unknown_gpu_and_bad_peaks_file_are_one_line_errors(tmp_path):
    for args in (("--peaks", "H900"), ("--device", "H900")):
        p = _cli("analyze", shared(T4), *args)
        assert p.returncode == 2 and "Traceback" not in p.stderr  # a GPU name in an option: a usage error
        assert len(p.stderr.strip().splitlines()) == 1
        assert "unknown GPU 'H900'" in p.stderr and "H100 SXM" in p.stderr
    bad = tmp_path / "peaks.toml"
    bad.write_text("[compute]\nfp32 = 'fast'\n")
    p = _cli("analyze", shared(T4), "--peaks", bad)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert str(bad) in p.stderr and "line 2" in p.stderr and "compute.fp32" in p.stderr
    p = _cli("analyze", shared(T4), "--levels", "dram,l3")
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_nvtx_aggregation_and_filters():
    p = _cli("analyze", shared(CUTLASS), "--by", "nvtx", "--format", "json")
    assert p.returncode == 0, p.stderr
    rows = {r["nvtx"]: r for r in json.loads(p.stdout)}
    assert set(rows) == {"Fused-GEMM", "Non-fused-GEMM"}
    assert rows["Non-fused-GEMM"]["kernel_count"] == 2
    p = _cli("analyze", shared(CUTLASS), "--nvtx", "^Fused", "--precision", "tensor", "--format", "json")
    assert [r["nvtx_range"] for r in json.loads(p.stdout)] == ["Fused-GEMM"]


def test_spec_peaks_and_both_clock_views():
    p = _cli("analyze", shared(T4), "--peaks", "spec", "--clock", "both", "--format", "json")
    assert p.returncode == 0, p.stderr
    g = [r for r in json.loads(p.stdout) if r["kernel_short_name"] == "wmma_gemm"][0]
    assert g["peak_flop_per_s_tensor_source"].startswith("tensor_fp16") is False
    assert "spec: T4" in g["peak_flop_per_s_tensor_source"]
    assert g["peak_flop_per_s_boost"] > g["peak_flop_per_s"]  # T4 profiled at 585 MHz, boost 1590
    p = _cli("devices")
    assert "H100 SXM (sm_90, CC 9.0): 132 SMs" in p.stdout and "MI300X" in p.stdout  # issue 17: arch and CC shown


def test_report_command_writes_chart_and_page_and_prints_the_top(tmp_path):
    out = tmp_path / "out"
    p = _cli("report", shared(T4), "-o", out, "--svg", "--top", "2")
    assert p.returncode == 0, p.stderr
    assert (out / "roofline.png").stat().st_size > 10_000 and (out / "roofline.svg").exists()
    page = (out / "report.html").read_text()
    assert "wmma_gemm" in page and "Plotly" in page
    table = [ln for ln in p.stdout.splitlines() if ln.split()[:1] and ln.split()[0].isdigit() and "row(s)" not in ln]
    assert len(table) == 2 and "wmma_gemm" in table[0]  # the slowest kernels, longest first
    p = _cli("analyze", shared(T4), "--html", tmp_path / "one" / "r.html")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "one" / "r.html").exists() and (tmp_path / "one" / "roofline.png").exists()
