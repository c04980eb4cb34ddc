"""The step chart of the HTML report (issue 20): one roofline point per training step over the run,
checked in real headless Chromium (the browser fixtures of tests/report/test_html.py)."""

from __future__ import annotations

import pytest

import roofline
from browser import _screenshot, browser, open_page  # noqa: F401 - pytest fixtures (one Chromium per module)
from conftest import analysed, kernel_row, shared
from roofline.report import html
from roofline.report.timeseries import step_points

XSS = "<img src=x onerror=alert(3)>"


def _steps(n: int, device: str = "GPU") -> list[dict]:
    """Two kernels per step; step k does (k + 1) GFLOP in 1 ms each, so its rate is (k + 1) TFLOP/s.
    Steps are listed out of order and one range name carries markup after its step number."""
    rows = []
    for k in reversed(range(n)):
        for j in range(2):
            rows.append(kernel_row(kernel_id=len(rows), kernel_name=f"k{j}", device_name=device, duration_s=1e-3,
                                   flop_fp32=(k + 1) * 1e9, dram_bytes=1e8 * (j + 1),
                                   nvtx_range=f"train/ProfilerStep#{k}/{XSS if j else 'fwd'}", start_ns=k * 10**6 + j))
    rows.append(kernel_row(kernel_id=len(rows), kernel_name="setup", device_name=device, nvtx_range="init"))
    return rows


def test_step_points_are_the_per_step_aggregate():
    pts = step_points(analysed(_steps(4)), ("dram", "l2", "l1"))
    assert [p["label"] for p in pts] == [f"ProfilerStep#{k}" for k in range(4)]  # by step number, not by time share
    assert [p["index"] for p in pts] == [0, 1, 2, 3]
    # step k: 2 (k + 1) GFLOP in 2 ms = (k + 1) TFLOP/s; DRAM 3e8 B in 2 ms = 150 GB/s; intensity 2 (k + 1) GFLOP / 3e8 B
    assert [p["achieved"] for p in pts] == pytest.approx([1e12, 2e12, 3e12, 4e12])
    assert [p["bw_dram"] for p in pts] == pytest.approx([1.5e11] * 4)
    assert [p["int_dram"] for p in pts] == pytest.approx([2e9 * (k + 1) / 3e8 for k in range(4)])
    assert [p["start_s"] for p in pts] == pytest.approx([0, 1e-3, 2e-3, 3e-3])
    assert all(p["kernels"] == 2 for p in pts)
    assert step_points(analysed(_steps(1)), ("dram",)) == []  # one step: no time series


def test_step_chart_in_headless_chromium(tmp_path, open_page):  # noqa: F811
    rows = _steps(5) + _steps(1, device="Other GPU")
    path = html.write(analysed(rows), tmp_path / "steps.html")
    text = path.read_text()
    assert XSS not in text
    page, problems = open_page(path)
    assert page.evaluate("window.rooflineReport.state.steps") == 5
    assert not page.evaluate("document.getElementById('steps').hidden")
    traces = page.evaluate("document.getElementById('step-chart').data.map(t => [t.meta, t.x, t.y])")
    flop = next(t for t in traces if t[0] == "step:flop")
    assert flop[1] == [0, 1, 2, 3, 4] and flop[2] == pytest.approx([1e12, 2e12, 3e12, 4e12, 5e12], rel=1e-4)
    assert {t[0] for t in traces} == {"step:flop", "step:bw_dram", "step:bw_l2", "step:bw_l1"}
    assert all(len(t[1]) == 5 for t in traces)
    # drawn: one SVG marker per step in each of the 4 traces (FLOP/s, and bandwidth at 3 levels)
    assert page.evaluate("document.querySelectorAll('#step-chart .scatterlayer .trace .point').length") == 20
    page.locator("#steps").screenshot(path=str(tmp_path / "steps.png"))
    _screenshot(page, "report-steps.png", publish=False)
    # the other device has one step: the section hides when it is chosen
    page.select_option("#f-device", "Other GPU")
    assert page.evaluate("window.rooflineReport.state.steps") == 0
    assert page.evaluate("document.getElementById('steps').hidden")
    assert problems == []


def test_no_step_chart_without_steps(tmp_path, open_page):  # noqa: F811
    rows = [kernel_row(kernel_id=i, nvtx_range="fwd") for i in range(3)]
    page, problems = open_page(html.write(analysed(rows), tmp_path / "nosteps.html"))
    assert page.evaluate("window.rooflineReport.state.steps") == 0
    assert page.evaluate("document.getElementById('steps').hidden") and problems == []


def test_step_points_of_a_real_kineto_trace():
    """The A100 16-rank trace records ProfilerStep#550-554: one point each, its rate recomputed here from the
    kernel rows (FLOPs and DRAM bytes of the step's timed kernels over their summed time)."""
    frame = roofline.analyze(roofline.read(shared("traces/torch_a100-80gb_16rank-nccl_rank0_shapes.pt.trace.json.gz")))
    pts = step_points(frame, ("dram",))
    assert [p["label"] for p in pts] == [f"ProfilerStep#{k}" for k in range(550, 555)]
    assert [p["kernels"] for p in pts] == [2116, 1262, 1262, 1262, 1262]
    assert [p["start_s"] for p in pts] == [None] * 5  # a Kineto frame has no start_ns: x is the step number
    for p in pts:
        rows = frame[frame["nvtx_range"].str.contains(p["label"] + "(?![0-9])", regex=True).fillna(False)]
        timed = rows[rows["duration_s"] > 0]
        t = timed["duration_s"].sum()
        assert p["time"] == pytest.approx(t)
        assert p["achieved"] == pytest.approx(timed["flop_total"].sum() / t)
        assert p["bw_dram"] == pytest.approx(timed["dram_bytes"].sum() / t)
