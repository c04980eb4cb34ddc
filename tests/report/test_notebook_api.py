"""The Python API as a notebook uses it (issue 32): a result displays compactly (the headline, at most 12
formatted columns, longest first) while staying the full DataFrame; summary(), by_category(), plot() and
compare() at the top level; dir(roofline) lists the public names only."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import roofline
from conftest import analysed, kernel_row, shared
from roofline import samples
from roofline.report.chart_data import roofs


@pytest.fixture(scope="module")
def demo():
    return roofline.analyze([samples.path(n) for n in samples.names()])


def test_a_result_is_the_full_frame_and_displays_compactly(demo):
    assert isinstance(demo, pd.DataFrame) and len(demo.columns) > 100  # every column is still there
    assert demo["duration_s"].sum() > 0 and demo.loc[demo.index[0], "kernel_name"]  # indexed as a DataFrame
    assert type(demo.frame) is pd.DataFrame and demo.frame.attrs == demo.attrs  # provenance travels
    html = demo._repr_html_()
    header = re.search(r"<thead>(.*?)</thead>", html, re.DOTALL).group(1)
    columns = re.findall(r"<th[^>]*>([^<]*)</th>", header)  # every header cell: no index column either
    assert 0 < len(columns) <= 12 and columns[:3] == ["kernel", "device", "category"]
    assert {"time", "% time", "FLOP", "bytes", "intensity", "achieved", "roof", "bound", "% of roof"} <= set(columns)
    assert "GPU time" in html and "with a roofline point" in html
    shown = demo.compact()
    assert len(shown.columns) <= 12 and len(shown) == 20
    times = demo.loc[shown.index, "duration_s"].tolist()
    assert times == sorted(times, reverse=True)  # ranked by time, longest first
    assert times[0] == demo.loc[demo["kernel_short_name"] != "IDLE", "duration_s"].max()
    assert "IDLE" not in shown["kernel"].tolist()  # idle time is in the headline, not a kernel row
    text = repr(demo)
    assert text.splitlines()[0].startswith("all profiles and devices: GPU time") and "20 of 83 rows" in text
    # derived frames are plain DataFrames, shown in full
    assert type(demo.head()) is pd.DataFrame and type(demo[demo["duration_s"] > 0]) is pd.DataFrame


def test_summary_and_by_category_frames(demo):
    s = demo.summary()
    assert list(s.columns[:6]) == ["profile", "device", "step", "gpu_time_s", "rows", "coverage_pct"]
    whole = s.iloc[0]  # several profiles: the whole frame first
    assert whole["gpu_time_s"] == pytest.approx(demo["duration_s"].sum())
    kinds = [c for c in s.columns if c.startswith("pct_")]
    assert (s[kinds].sum(axis=1) - 100).abs().max() < 1e-9
    pd.testing.assert_frame_equal(roofline.summary(demo), s)
    c = roofline.by_category(demo)
    assert c["pct_gpu_time"].sum() == pytest.approx(100.0) and c["cumulative_pct"].iloc[-1] == pytest.approx(100.0)
    assert c["duration_s"].is_monotonic_decreasing and c["kernel_count"].sum() == len(demo)
    assert "GEMM" in set(c["category"])


def test_plot_is_the_report_chart_with_the_results_roofs():
    import plotly.graph_objects as go

    res = roofline.analyze(shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"))
    fig = roofline.plot(res)
    assert isinstance(fig, go.Figure)
    drawn = {t.meta: t for t in fig.data if (t.meta or "").startswith("roof:")}
    want = roofs(res)
    assert set(drawn) == {f"roof:{r.key}" for r in want}
    top = max(r.value for r in want if r.kind == "compute")
    for r in want:
        t = drawn[f"roof:{r.key}"]
        if r.kind == "compute":
            assert set(t.y) == {r.value}
        else:
            assert t.y[0] / t.x[0] == pytest.approx(r.value) and t.y[-1] == pytest.approx(top)
    points = sum(len(t.x) for t in fig.data if (t.meta or "").startswith("level:"))
    assert points == 3 * int((res["achieved_flop_per_s"] > 0).sum())  # one per kernel and level
    run = roofline.run(shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"))
    assert [t.meta for t in roofline.plot(run).data] == [t.meta for t in fig.data]


def test_plot_draws_one_device_the_one_with_the_most_drawable_time(demo):
    fig = roofline.plot(demo)
    assert "NVIDIA A100-PCIE-40GB" in fig.layout.title.text  # 707 ms of drawable time
    a10g = demo[(demo["device_name"] == "NVIDIA A10G").to_numpy()]
    fig = roofline.plot(demo, device="NVIDIA A10G")
    assert {t.meta for t in fig.data if t.meta.startswith("roof:")} == {f"roof:{r.key}" for r in roofs(a10g)}


def test_compare_at_the_top_level_and_run_displays_like_a_result(tmp_path):
    a = shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep")
    diff = roofline.compare(a, roofline.analyze(a))
    assert len(diff) == 4 and (diff["duration_s_change_pct"] == 0).all()
    run = roofline.run([a, tmp_path / "missing.ncu-rep"])
    assert run.failed == 1 and "1 of 2 input(s) failed" in repr(run) and "<table" in run._repr_html_()
    assert run.by_category()["pct_gpu_time"].sum() == pytest.approx(100.0)
    assert len(run.summary()) == 1 and len(run.compact().columns) <= 12


def test_dir_lists_only_public_names():
    names = dir(roofline)
    assert {"analyze", "read", "run", "summary", "by_category", "plot", "compare"} <= set(names)
    assert not [n for n in names if n.startswith("_") and n != "__version__"]
    assert "TYPE_CHECKING" not in names and "annotations" not in names and "Any" not in names


def test_a_tiny_result_displays_without_the_columns_it_lacks():
    res = analysed([kernel_row(kernel_id=0), kernel_row(kernel_id=1, duration_s=2e-3)])
    shown = res.compact()
    assert list(shown["time"]) == ["2 ms", "1 ms"] and "device" not in shown
