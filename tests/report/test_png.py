"""The PNG/SVG chart: roofs and points read back from the drawn figure and compared with the data."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

import roofline
from roofline.report import png, write_charts
from roofline.report.chart_data import roofs

from conftest import analysed, kernel_row, shared

XSS = "<script>alert(1)</script>"


def _lines(fig):
    return {ln.get_gid(): ln for ln in fig.axes[0].get_lines() if ln.get_gid()}


def test_roofs_ridges_and_points_read_back_equal_the_data():
    rows = [kernel_row(kernel_id=i, kernel_short_name=f"k{i}", kernel_name=f"k{i}", flop_fp32=10 ** (8 + i),
                       duration_s=1e-3 * (i + 1)) for i in range(4)]
    rows.append(kernel_row(kernel_id=4, kernel_name=XSS, kernel_short_name=XSS, flop_fp32=0.0, dram_bytes=1e6))
    res = analysed(rows)
    fig = png.draw(res)
    try:
        lines = _lines(fig)
        # sloped roofs: y = bandwidth × x at both ends; flat roof at the fp32 peak
        for lv, bw in (("dram", 2e12), ("l2", 6e12), ("l1", 2e13)):
            x, y = lines[f"roof:{lv}"].get_data()
            assert np.allclose(np.asarray(y) / np.asarray(x), bw)
            assert y[-1] == pytest.approx(2e13)  # meets the top compute roof at the ridge
        x, y = lines["roof:fp32"].get_data()
        assert np.allclose(y, 2e13)
        for lv, bw in (("dram", 2e12), ("l2", 6e12), ("l1", 2e13)):
            (rx,), (ry,) = lines[f"ridge:{lv}:fp32"].get_data()
            assert rx == pytest.approx(2e13 / bw) and ry == pytest.approx(2e13)
        # one marker per kernel and level, at (intensity, achieved FLOP/s)
        scatters = {c.get_gid(): c for c in fig.axes[0].collections if (c.get_gid() or "").startswith("level:")}
        assert set(scatters) == {"level:dram", "level:l2", "level:l1"}
        for lv in ("dram", "l2", "l1"):
            xy = scatters[f"level:{lv}"].get_offsets()
            assert len(xy) == 4
            assert np.allclose(xy[:, 0], res.loc[0:3, f"intensity_{lv}_flop_per_byte"])
            assert np.allclose(xy[:, 1], res.loc[0:3, "achieved_flop_per_s"])
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert "1 kernel(s) without FLOPs or bytes: not drawn" in legend
        assert any(t.startswith("DRAM/HBM 2 TB/s (counters") for t in legend)
        labels = [t.get_text() for t in fig.axes[0].texts]
        assert "k3" in labels  # the longest kernel is named
    finally:
        plt.close(fig)


def test_empty_profile_says_there_is_nothing_to_plot(tmp_path):
    res = analysed([kernel_row(flop_fp32=0.0)])
    fig = png.draw(res)
    try:
        assert any("nothing to plot" in t.get_text() for t in fig.axes[0].texts)
    finally:
        plt.close(fig)
    res = analysed([kernel_row()]).iloc[0:0]
    assert [p.name for p in write_charts(res, tmp_path, svg=True)] == ["roofline.png", "roofline.svg"]


@pytest.mark.parametrize("name", ["ncu/sm75_t4_wmma-gemm-fp16_full-hier.ncu-rep", "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep",
                                  "ncu/sm80_a100_cutlass-b2b-int8-gemm_full-nvtx.ncu-rep"])
def test_fixture_charts_render_and_match_their_roofs(tmp_path, name):
    res = roofline.analyze(roofline.read(shared(name)))
    (path,) = write_charts(res, tmp_path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig = png.draw(res)
    try:
        lines = _lines(fig)
        for r in roofs(res):
            _, y = lines[f"roof:{r.key}"].get_data()
            assert (y[-1] if r.kind == "bandwidth" else y[0]) == pytest.approx(
                r.value if r.kind == "compute" else max(q.value for q in roofs(res) if q.kind == "compute"))
        assert res["device_name"].iloc[0] in fig.axes[0].get_title()
    finally:
        plt.close(fig)


def test_trace_chart_draws_no_cache_roofs_and_labels_unscaled_spec_peaks_as_published():
    """A trace has no L2/L1 bytes: no L1 roof without points; its spec peaks had no clock to scale to,
    so the legend says "as published", not "as profiled"."""
    from roofline.report.chart_data import short_source

    a = roofline.analyze(roofline.read(shared("traces/torch2.6_h100_bert-small_infer_flops-flag.pt.trace.json.gz")))
    got = roofs(a)
    assert {r.key for r in got if r.kind == "bandwidth"} == {"dram"}
    assert all(r.short_source == "spec, as published" for r in got)
    assert short_source("spec: 128 B/cycle/SM × 132 SMs × the boost clock 1980 MHz; no profiled clock known") \
        == "spec, boost clock"
    assert short_source("spec: …, 128 FLOP/cycle/SM × 108 SMs × the profiled SM clock 765 MHz") == "spec, as profiled"


def test_a_device_with_two_roof_sets_gets_one_chart_per_set_drawing_the_roofs_its_kernels_used(tmp_path):
    """Issue 17: kernels of one GPU measured at two clocks (or against roofs from two sources) are never
    drawn under a median roof: each chart draws exactly the roofs in its kernels' rows."""
    base = [kernel_row(kernel_id=i, kernel_name=f"a{i}", kernel_short_name=f"a{i}", duration_s=2e-3) for i in range(3)]
    boost = [kernel_row(kernel_id=10 + i, kernel_name=f"b{i}", kernel_short_name=f"b{i}", duration_s=1e-3,
                        peak_dram_bytes_per_s=2e12, peak_l1_bytes_per_s=2.6e13, peak_l2_bytes_per_s=7.8e12,
                        peak_flop_per_s_fp32=2.6e13, peak_flop_per_s_fp32_source="spec: test at the boost clock")
             for i in range(2)]
    res = analysed(base + boost)
    paths = write_charts(res, tmp_path)
    assert [p.name for p in paths] == ["roofline.png", "roofline-set2.png"]
    from roofline.report.chart_data import roof_sets

    sets = roof_sets(res)
    assert [st.kernels for st in sets] == [3, 2]
    for st in sets:
        part = res[st.mask]
        fig = png.draw(part)
        try:
            lines = _lines(fig)
            drawn_fp32 = lines["roof:fp32"].get_data()[1][0]
            assert set(part["peak_flop_per_s_fp32"]) == {drawn_fp32}  # the table's roof, nothing else
            for lv in ("dram", "l2", "l1"):
                x, y = lines[f"roof:{lv}"].get_data()
                (table_bw,) = set(part[f"peak_{lv}_bytes_per_s"])
                assert y[0] / x[0] == pytest.approx(table_bw)
        finally:
            plt.close(fig)
    # the whole device in one draw: the main set only, and a visible note about the other
    fig = png.draw(res)
    try:
        assert _lines(fig)["roof:fp32"].get_data()[1][0] == 2e13
        notes = [t.get_text() for t in fig.texts if t.get_gid() == "note"]
        assert len(notes) == 1 and "roof set 1 of 2" in notes[0] and "3 of 5" in notes[0]
    finally:
        plt.close(fig)
    # the HTML's roof list (chart_data.roofs) holds both sets, each labelled
    labels = [r.label for r in roofs(res) if r.kind == "compute"]
    assert len(labels) == 2 and "roof set 2 of 2: 2 kernel(s)" in labels[1]
