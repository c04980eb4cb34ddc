"""Regression tests for edge cases found in review: each once crashed or gave a wrong number."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import roofline
from conftest import analysed, kernel_row, shared
from conftest import cli as _cli
from roofline.analysis.aggregate import aggregate
from roofline.hardware.peaks import Peak, Peaks
from roofline.report import html, png
from roofline.schema import conform_kernels


def frame(*rows):
    return conform_kernels(pd.DataFrame(list(rows)))


def test_spec_peaks_with_a_device_less_csv_beside_a_report():
    k = roofline.read([shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"),
                       shared("ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv")])
    r = roofline.analyze(k, peaks="spec")
    assert r.loc[r["device_name"] == "NVIDIA A10G", "peak_dram_bytes_per_s"].eq(600e9).all()
    assert r.loc[r["device_name"].isna(), "peak_dram_bytes_per_s"].isna().all()


def test_dollar_signs_in_names_do_not_break_the_chart(tmp_path):
    res = analysed([kernel_row(kernel_name="k$\\badcmd$", kernel_short_name="k$^{$", device_name="GPU $\\foo$")])
    fig = png.draw(res)
    try:
        fig.canvas.draw()
        assert "GPU $\\foo$" in fig.axes[0].get_title()
        assert any(t.get_text().endswith("k$^{$") for t in fig.texts if t.get_gid() == "key")  # named in the key
    finally:
        plt.close(fig)


def test_infinite_peak_is_no_peak_and_the_page_stays_valid():
    res = analysed([kernel_row(peak_l1_bytes_per_s=np.inf), kernel_row(kernel_id=1, peak_flop_per_s_fp32=np.inf)])
    assert np.isnan(res.loc[0, "attainable_l1_flop_per_s"])
    assert np.isnan(res.loc[1, "peak_flop_per_s"]) and "no compute roof" in res.loc[1, "analysis_note"]
    data = html.read_data(html.render(res))
    assert json.dumps(data, allow_nan=False)


def test_name_and_nvtx_filters_apply_before_grouping():
    p = _cli("analyze", shared("ncu/sm80_a100_cutlass-b2b-int8-gemm_full-nvtx.ncu-rep"), "--by", "nvtx",
             "--nvtx", "^Fused", "--format", "json")
    assert p.returncode == 0, p.stderr
    assert [r["nvtx"] for r in json.loads(p.stdout)] == ["Fused-GEMM"]


def test_group_roofs_ignore_kernels_without_them_and_untimed_kernels():
    no_peak = aggregate(roofline.analyze(frame(kernel_row(), kernel_row(kernel_id=1, peak_flop_per_s_fp32=np.nan))))
    assert np.isnan(no_peak.loc[0, "peak_flop_per_s"])  # unknown, not twice the known roof
    half = aggregate(roofline.analyze(frame(kernel_row(), kernel_row(kernel_id=1, peak_l2_bytes_per_s=np.nan))))
    assert half.loc[0, "ridge_l2_flop_per_byte"] == pytest.approx(2e13 / 6e12)  # the roof that exists
    untimed = aggregate(roofline.analyze(frame(kernel_row(), kernel_row(kernel_id=1, duration_s=0.0))))
    assert untimed.loc[0, "achieved_flop_per_s"] == pytest.approx(1e12)
    assert "without a positive duration" in untimed.loc[0, "analysis_note"]


def test_sparse_user_peak_is_halved_for_dense_tensor_work():
    peaks = Peaks("x", {"tensor_fp16": Peak(2e15, "user", "sheet", "boost", sparse=True)})
    r = roofline.analyze(frame(kernel_row(flop_fp32=0.0, flop_tensor=1e12, tensor_path="hmma_fp16")), peaks=peaks)
    assert r.loc[0, "peak_flop_per_s_tensor"] == 1e15 and "÷ 2" in r.loc[0, "peak_flop_per_s_tensor_source"]
