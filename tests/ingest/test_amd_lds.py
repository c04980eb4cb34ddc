"""LDS as a fourth memory level, AMD columns in batch datasets, NVIDIA and AMD rows side by side.

Expected values are worked out here from the fixtures' raw numbers: the rocpd fixture's fma_lds
dispatch (counters in tools/make_rocpd_fixture.py), the MI200 workload's roofline.csv (read with
the csv module) and the CDNA2 LDS model (4 B × 32 banks × CUs × clock).
"""

from __future__ import annotations

import csv
import math

import pytest

from conftest import OWN, shared

DB = OWN / "rocprof" / "rocpd_mi210.db"
MI200 = "rocprof/rocprof-compute_vcopy_MI200"
NCU_CSV = "ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv"
FMA_FLOPS = 64 * (1000 + 2 * 10000) + 64 * 2 * 500 + 512 * 300  # fp32 + fp64 + MFMA F16
FMA_LDS_BYTES = (10000 - 1000) * 4 * 32
LDS_MODEL = 4 * 32 * 104 * 1700e6  # B/s: MI210, 104 CUs at 1700 MHz


def _analysed(paths, **kw):
    import roofline
    from roofline.analysis import analyze

    return analyze(roofline.read(paths), **kw)


def test_lds_is_a_level_with_the_model_roof():
    r = _analysed(DB)
    fma = r.iloc[3]
    assert fma["kernel_short_name"] == "fma_lds"
    assert fma["peak_lds_bytes_per_s"] == pytest.approx(LDS_MODEL)
    assert "32 LDS banks per CU assumed" in fma["peak_lds_bytes_per_s_source"]
    assert fma["intensity_lds_flop_per_byte"] == pytest.approx(FMA_FLOPS / FMA_LDS_BYTES)
    assert fma["achieved_lds_bytes_per_s"] == pytest.approx(FMA_LDS_BYTES / 10e-6)
    assert fma["pct_of_peak_lds_bandwidth"] == pytest.approx(100 * FMA_LDS_BYTES / 10e-6 / LDS_MODEL)


def test_lds_can_be_the_binding_roof():
    import roofline
    from roofline.analysis import analyze

    k = roofline.read(DB)
    k.loc[3, "lds_bytes"] = 1e8  # 10 TB/s for 10 µs: 44% of the LDS roof, far above L1's 0.9%
    fma = analyze(k).iloc[3]
    assert fma["binding_roof"] == "lds"
    assert fma["attainable_flop_per_s"] == pytest.approx(FMA_FLOPS / 1e8 * LDS_MODEL)
    assert fma["pct_of_roof"] == pytest.approx(100 * 1e8 / 10e-6 / LDS_MODEL)


def test_measured_lds_roof_from_roofline_csv_and_peaks_option():
    from roofline.ingest.amd import rocprof_compute

    with (shared(MI200) / "roofline.csv").open(newline="") as fh:
        lds_gbs = float(next(csv.DictReader(fh))["LDSBw"])
    r = _analysed(shared(MI200))
    assert list(r["peak_lds_bytes_per_s"]) == pytest.approx([lds_gbs * 1e9] * 3)
    assert "intensity_lds_flop_per_byte" in r and set(r["pct_of_peak_lds_bandwidth"]) == {0.0}  # vcopy: no LDS
    peaks = rocprof_compute.peaks_from(shared(MI200) / "roofline.csv")
    assert peaks.bandwidth["lds"].value == pytest.approx(lds_gbs * 1e9) and peaks.bandwidth["lds"].source == "measured"
    applied = _analysed(DB, peaks=peaks)  # --peaks roofline.csv on the rocpd rows
    assert applied["peak_lds_bytes_per_s"].iloc[3] == pytest.approx(lds_gbs * 1e9)
    assert applied["peak_lds_bytes_per_s_source"].iloc[3].startswith("measured")


def test_explicit_levels_and_nvidia_rows_have_no_lds():
    nv = _analysed(shared(NCU_CSV))
    assert "intensity_lds_flop_per_byte" not in nv  # the format records no LDS: three levels as before
    only = _analysed(DB, levels=("dram", "l1"))
    assert "intensity_lds_flop_per_byte" not in only and "intensity_l2_flop_per_byte" not in only
    mixed = _analysed([shared(NCU_CSV), DB])
    nv_rows = mixed[mixed["format"] == "ncu-csv"]
    assert nv_rows["intensity_lds_flop_per_byte"].isna().all()
    assert not nv_rows["analysis_note"].astype(str).str.contains("LDS").any()  # not a missing level there


def test_charts_draw_the_lds_roof_and_points(tmp_path):
    from roofline.report import chart_data, html, png

    r = _analysed(DB)
    levels = ("dram", "l2", "l1", "lds")
    roofs = {(x.kind, x.key): x for x in chart_data.roofs(r, levels)}
    assert roofs[("bandwidth", "lds")].value == pytest.approx(LDS_MODEL)
    pts = chart_data.points(r, levels)
    lds = pts[pts["level"] == "lds"]
    assert list(lds["intensity_flop_per_byte"]) == pytest.approx([FMA_FLOPS / FMA_LDS_BYTES])
    fig = png.draw(r, levels)
    gids = {a.get_gid() for ax in fig.axes for a in ax.get_children()}
    assert "roof:lds" in gids and "level:lds" in gids
    page = html.render(r, levels, compress=False)
    assert '"levels": ["dram", "l2", "l1", "lds"]' in page and '"lds": "LDS"' in page
    assert "LDS 22.6 TB/s" in page  # the roof's label in the chart data and the peaks table


def test_nvidia_and_amd_side_by_side_in_report_compare_and_batch(tmp_path):
    from click.testing import CliRunner

    from roofline.batch.dataset import open_dataset
    from roofline.cli import cli as main

    runner = CliRunner()
    out = runner.invoke(main, ["report", str(shared(NCU_CSV)), str(shared(MI200)), str(DB), "-o", str(tmp_path / "r")])
    assert out.exit_code in (0, 1), out.output  # 1: the ncu CSV names no device for some roofs
    assert "DRAM, L2, L1, LDS" in out.output and (tmp_path / "r" / "report.html").is_file()
    cmp = runner.invoke(main, ["compare", str(shared(MI200)), str(DB), "--format", "csv"])
    assert cmp.exit_code == 0, cmp.output
    header = next(line for line in cmp.output.splitlines() if line.startswith("candidate,"))
    assert "lds_bytes_base" in header and "intensity_lds_flop_per_byte_cand" in header
    res = runner.invoke(main, ["batch", str(shared(NCU_CSV)), str(shared(MI200)), str(DB), "--out", str(tmp_path / "d")])
    assert res.exit_code == 0, res.output
    d = open_dataset(tmp_path / "d")
    amd, nv = d[d["format"] != "ncu-csv"], d[d["format"] == "ncu-csv"]
    assert len(amd) == 8 and len(nv) > 0
    assert str(d["dispatch_id"].dtype) == "Int64" and str(d["lds_bytes"].dtype) == "float64"
    assert nv["lds_bytes"].isna().all() and nv["dispatch_id"].isna().all()
    fma = d[d["kernel_short_name"] == "fma_lds"].iloc[0]
    assert fma["lds_bytes"] == FMA_LDS_BYTES and fma["flop_mfma_f16"] == 512 * 300
    assert fma["intensity_lds_flop_per_byte"] == pytest.approx(FMA_FLOPS / FMA_LDS_BYTES)
    assert fma["peak_lds_bytes_per_s"] == pytest.approx(LDS_MODEL)
    assert set(amd["sm_count"]) == {104}  # CUs on AMD rows (docs/amd.md)
    assert math.isclose(d[d["format"] == "rocprof-compute"]["peak_lds_bytes_per_s"].iloc[0],
                        d[d["format"] == "rocprof-compute"]["peak_lds_bytes_per_s"].iloc[1])


def test_units_side_by_side_cus_sms_and_int8_ops():
    from roofline.ingest.amd.arch import device_labels
    from roofline.report import chart_data

    r = _analysed([shared("ncu/sm80_a100_cutlass-b2b-int8-gemm_full-nvtx.ncu-rep"), DB])
    labels = device_labels(r)
    assert "MI210 (104 CUs)" in labels and "A100 80GB PCIe (108 SMs)" in labels
    nv = r[r["format"] == "ncu-rep"]
    int8 = [x for x in chart_data.roofs(nv) if x.kind == "compute" and "int8" in x.label]
    assert int8 and all("OP/s" in x.label and "FLOP/s" not in x.label for x in int8)


def test_device_labels_count_cus_for_amd_names_without_a_gfx_target():
    """An xplane of JAX on an MI300X records the product name but no gfx target: its 304 units are CUs."""
    import pandas as pd

    from roofline.ingest.amd.arch import device_labels

    frame = pd.DataFrame({"device_name": ["MI300X", "AMD Instinct MI210", "NVIDIA A10G"], "sm_count": [304, 104, 80]})
    assert device_labels(frame) == "AMD Instinct MI210 (104 CUs), MI300X (304 CUs), NVIDIA A10G (80 SMs)"
