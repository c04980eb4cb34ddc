"""Extreme and non-finite values: kept out of JSON and charts with a flag; nothing achieved, no bound."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest

import roofline
from conftest import analysed, kernel_row, shared
from roofline.report import html


def test_report_on_durations_of_1e308_writes_finite_json_with_a_flag(tmp_path):
    doc = json.loads(gzip.decompress(shared("traces/torch_a100_alexnet_train_small.pt.trace.json.gz").read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["dur"] = 1e308  # µs: sums of these overflow to inf
    trace = tmp_path / "extreme.pt.trace.json"
    trace.write_text(json.dumps(doc))
    result = roofline.analyze(roofline.read(trace), peaks="A100 SXM4 40GB")
    assert np.isinf(result["duration_s"]).any()
    # before: ValueError "Out of range float values are not JSON compliant" (exit 3 from `roofline report`)
    data = html.read_data(html.render(result))
    assert data["meta"]["non_finite_values"] > 0


@pytest.mark.parametrize(("duration", "why"), [(0.0, "zero duration"), (-1e-3, "negative duration"),
                                               (math.nan, "no duration (NaN)"), (math.inf, "infinite duration")])
def test_nothing_achieved_means_no_bound_with_the_reason(duration, why):
    r = analysed([kernel_row(duration_s=duration), kernel_row(kernel_id=1)])
    assert r.loc[0, "bound"] == "unavailable" and r.loc[0, "binding_roof"] == "unavailable"
    assert np.isnan(r.loc[0, "pct_of_roof"]) and np.isnan(r.loc[0, "achieved_flop_per_s"])
    assert why in r.loc[0, "analysis_note"] and "nothing achieved can be computed, so no bound" in r.loc[0, "analysis_note"]
    assert r.loc[1, "bound"] != "unavailable"  # the well-formed kernel beside it is judged as before


@pytest.mark.parametrize(("rows", "off_scale"), [
    ([kernel_row(flop_fp32=1e308), kernel_row(kernel_id=1)], True),  # achieved overflows to inf
    ([kernel_row(duration_s=1e-300), kernel_row(kernel_id=1)], True),
    ([kernel_row(peak_flop_per_s_fp32=1e308, peak_dram_bytes_per_s=1e308)], True),  # roofs at float's edge
    ([kernel_row(dram_bytes=1e-300), kernel_row(kernel_id=1)], False),
])
def test_charts_of_extreme_values_are_drawn_with_what_is_off_scale_flagged(rows, off_scale):
    import warnings

    import matplotlib.pyplot as plt

    from roofline.report import png

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # before: overflow in hierarchy.py, then OverflowError
        r = analysed(rows)
        fig = png.draw(r)  # draws the canvas (labels are placed on it): tick locators run here
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    plt.close(fig)
    assert any("not drawn" in t for t in legend) == off_scale


def test_a_device_name_of_300_characters_gives_short_distinct_chart_names():
    from roofline.report import _slug  # the per-device chart is roofline-<slug>.png

    a, b = _slug("G" * 300 + "A"), _slug("G" * 300 + "B")
    assert a != b and len(a) <= 60 and len(b) <= 60  # before: 301 characters, past the 255-byte name limit
    assert _slug("NVIDIA A100-SXM4-40GB") == "nvidia-a100-sxm4-40gb"  # short names as before


def test_eight_device_ids_of_one_model_are_one_device_so_one_chart(tmp_path):
    """Charts are per device name (roofline.png, roofline-<slug>.png): ids of one model share a name."""
    doc = json.loads(gzip.decompress(shared("traces/torch_a100_alexnet_train_small.pt.trace.json.gz").read_bytes()))
    first = doc["deviceProperties"][0]
    doc["deviceProperties"] = [dict(first, id=i) for i in range(8)]
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    for i, e in enumerate(kernels):
        e.setdefault("args", {})["device"] = i % 8
    trace = tmp_path / "ids.pt.trace.json"
    trace.write_text(json.dumps(doc))
    assert roofline.read(trace)["device_name"].nunique(dropna=False) == 1
