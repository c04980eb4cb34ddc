"""The PNG/SVG chart: roofs and points read back from the drawn figure and compared with the data."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

import roofline
from conftest import analysed, kernel_row, shared
from roofline.report import png, write_charts
from roofline.report.chart_data import roofs

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
        # the longest kernel is numbered 1 beside its point and named in the key beside the legend
        labels = {t.get_gid(): t.get_text() for t in fig.axes[0].texts}
        assert labels["label:3"] == "1"
        key = next(t.get_text() for t in fig.texts if t.get_gid() == "key")
        assert key.splitlines()[1].split()[0] == "1" and key.splitlines()[1].endswith("k3")
        # points are coloured by their bound, with the HTML report's colours, and the legend says which
        from matplotlib.colors import to_hex

        from roofline.report.figure import BOUND_COLOURS

        drawn = res.loc[0:3, "bound"].tolist()
        assert [to_hex(c) for c in scatters["level:dram"].get_facecolors()] == [BOUND_COLOURS[b] for b in drawn]
        assert set(drawn) <= set(legend)
    finally:
        plt.close(fig)


def test_empty_profile_says_there_is_nothing_to_plot(tmp_path):
    res = analysed([kernel_row(flop_fp32=0.0)])
    fig = png.draw(res)
    try:
        assert any("nothing to plot" in t.get_text() for t in fig.axes[0].texts)
    finally:
        plt.close(fig)
    # nothing drawable: no chart at all (an empty chart says nothing), and the reason for the table
    from roofline.report import undrawable_reasons

    assert write_charts(res, tmp_path, svg=True) == [] and not list(tmp_path.iterdir())
    (line,) = undrawable_reasons(res)
    assert line.startswith("no chart for GPU: nothing drawable (1 row(s))") and "no FLOPs" in line
    assert write_charts(analysed([kernel_row()]).iloc[0:0], tmp_path) == []


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


def _boxes(fig):
    """The drawn number labels' text boxes (display pixels), and the legend, key and note boxes."""
    from matplotlib.text import Text

    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    labels = []
    for t in fig.axes[0].texts:
        if (t.get_gid() or "").startswith("label:"):
            t.update_positions(r)
            labels.append(Text.get_window_extent(t, r))
    others = {t.get_gid(): t.get_window_extent(r) for t in fig.texts if t.get_gid() in ("key", "note")}
    others["legend"] = fig.axes[0].get_legend().get_window_extent(r)
    return labels, others, fig.axes[0].get_window_extent(r)


@pytest.mark.parametrize("rel", [None, "traces/torch2.6_h100_qwen1.5-0.5b_infer_flops-flag.pt.trace.json.gz",
                                 "traces/torch2.6_h100_owlv2-large_infer_flops-flag_132k.pt.trace.json.gz",
                                 "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"])
def test_labels_read_back_from_the_drawn_chart_do_not_intersect(rel):
    """Issue 32: labels overlapped (A10G, the H100 demo trace, SD3.5): the label boxes, read back from the
    drawn figure, intersect neither each other nor the legend or key; notes sit below the axes."""
    if rel is None:  # the demo's H100 trace: 60 points in three clumps
        from roofline import samples

        res = roofline.analyze(samples.path("h100-bert-small"))
    else:
        res = roofline.analyze(shared(rel))
    res = res[(res["device_name"] == res["device_name"].iloc[0]).to_numpy()]
    fig = png.draw(res, label_top=15, note="a note that must not cover the x axis label " * 6)
    try:
        labels, others, axes = _boxes(fig)
        assert len(labels) >= 4
        for i, a in enumerate(labels):
            assert all(not a.overlaps(b) for b in labels[i + 1:]), "two labels intersect"
            assert all(not a.overlaps(o) for o in others.values())
            assert axes.contains(a.x0, a.y0) and axes.contains(a.x1, a.y1)  # inside the plot, not over the legend
        assert not others["legend"].overlaps(axes) and not others["key"].overlaps(axes)
        xlabel = fig.axes[0].xaxis.label.get_window_extent(fig.canvas.get_renderer())
        assert others["note"].y1 < xlabel.y0  # the note is below the x axis label, not over it
    finally:
        plt.close(fig)


def test_roofs_of_one_value_share_one_line_and_one_label():
    """Two roofs of equal value (here fp16 = tensor) are drawn as one line: the legend names both in one entry."""
    res = analysed([kernel_row(flop_fp16=1e9, flop_tensor=1e9, peak_flop_per_s_fp16=3e14,
                               peak_flop_per_s_fp16_source="counters: test", peak_flop_per_s_tensor_source="counters: test")])
    fig = png.draw(res)
    try:
        lines = _lines(fig)
        assert lines["roof:fp16"].get_data()[1][0] == lines["roof:tensor"].get_data()[1][0] == 3e14
        legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        joint = [t for t in legend if "fp16" in t or "tensor" in t]
        assert len(joint) == 1 and joint[0].startswith("fp16 = tensor 300 TFLOP/s") and "the same roof" in joint[0]
    finally:
        plt.close(fig)


def test_si_ticks_one_per_decade():
    res = analysed([kernel_row(kernel_id=i, flop_fp32=10 ** (8 + i)) for i in range(3)])
    fig = png.draw(res)
    try:
        fig.canvas.draw()
        ticks = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_text()]
        assert ticks and all(t[-1] in "kMGTP" or t[-1].isdigit() for t in ticks) and not any("^" in t for t in ticks)
    finally:
        plt.close(fig)


def test_the_headline_chart_is_the_device_with_the_most_drawable_time(tmp_path):
    """The A100 basic-set report holds 10 s of kernels and nothing drawable, the A10G one 1 ms of drawable ones:
    roofline.png is the A10G's, the A100 gets no chart, and the reason is the true one."""
    from roofline.report import undrawable_reasons

    res = roofline.analyze(roofline.read([shared("ncu/sm80_a100_mistic-cub-154launches_basic.ncu-rep"),
                                          shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep")]))
    paths = write_charts(res, tmp_path)
    assert [p.name for p in paths] == ["roofline.png"]
    fig = png.draw(res[(res["device_name"] == "NVIDIA A10G").to_numpy()])
    try:
        assert "NVIDIA A10G" in fig.axes[0].get_title()
    finally:
        plt.close(fig)
    (line,) = undrawable_reasons(res)
    assert line.startswith("no chart for NVIDIA A100-PCIE-40GB: nothing drawable (154 row(s)): no FLOP counters")
    assert "collect with ncu --set full" in line
