"""The report page's cheaper paths give what the direct computations give: several groupings from one set of
per-kernel sums (analysis/aggregate.py), names encoded per distinct text and the communication exposure per
distinct (rank, NVTX path) (report/html.py, report/comm_chart.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import analysed, kernel_row
from roofline.analysis.aggregate import GROUPINGS, aggregate, aggregate_each, step_ranges
from roofline.report import html
from roofline.report.comm_chart import exposure

PATHS = ["ProfilerStep#2/fwd", "ProfilerStep#1/fwd", None, "ProfilerStep#1/bwd", "loader", "ProfilerStep#2/bwd"]


def _kernels() -> pd.DataFrame:
    """Two programs on two devices, kernels in and out of step ranges, untimed and unpriced ones, two ranks."""
    rows = []
    for i in range(30):
        kw = {"kernel_id": i, "source_file": "a.json" if i % 3 else "b.ncu-rep", "device_name": "H100" if i % 4 else "A100",
              "nvtx_range": PATHS[i % len(PATHS)], "rank": i % 2, "duration_s": (i % 5 + 1) * 1e-4 + i * 1e-7,
              "kernel_name": f"k{i % 4}", "grid_x": i % 3, "grid_y": 1, "grid_z": 1, "block_x": 128, "block_y": 1,
              "block_z": 1}
        if i % 6 == 0:
            kw.update(flop_tensor=3e9, tensor_path="hmma_fp16")
        if i % 7 == 0:
            kw.update(dram_bytes=np.nan, peak_flop_per_s_fp32=np.nan)
        if i == 11:
            kw.update(duration_s=0.0)
        rows.append(kernel_row(**kw))
    return analysed(rows)


def test_every_grouping_from_one_set_of_sums_is_the_grouping_alone():
    frame = _kernels()
    each = aggregate_each(frame, list(GROUPINGS), levels=("dram", "l2"))
    assert list(each) == list(GROUPINGS)
    for by, agg in each.items():
        pd.testing.assert_frame_equal(agg, aggregate(frame, by=by, levels=("dram", "l2")), check_exact=True)
        assert len(agg) > 1 and agg["kernel_count"].sum() == len(frame)
    empty = aggregate_each(frame.iloc[:0], ["program", "nvtx"])
    assert all(agg.empty for agg in empty.values())
    with pytest.raises(ValueError, match="by must be one of"):
        aggregate_each(frame, ["program", "colour"])


def test_names_are_the_json_of_each_text_cut_to_the_limit():
    values = pd.Series(["short", None, "x" * 25, 'quote " and <tag> é', "short", "x" * 25, ""], dtype="string")
    expected = ["short", "", "x" * 19 + "…", 'quote " and <tag> é', "short", "x" * 19 + "…", ""]
    assert html._strings(values, 20) == json.dumps(expected)
    assert html._strings(values.iloc[:0], 20) == "[]"


def test_each_rows_step_is_the_step_of_its_path():
    nvtx = pd.Series(PATHS, index=[10, 11, 12, 13, 14, 15], dtype="string")
    steps = step_ranges(nvtx)
    assert steps.dtype == "string" and list(steps.index) == list(nvtx.index)
    assert steps.tolist() == ["ProfilerStep#2", "ProfilerStep#1", pd.NA, "ProfilerStep#1", pd.NA, "ProfilerStep#2"]
    assert step_ranges(pd.Series([None, None], dtype="string")).isna().all()


def test_exposure_sums_each_rank_and_step_over_all_its_paths_in_order_of_first_row():
    n = len(PATHS) * 4
    frame = pd.DataFrame({
        "rank": pd.array([i % 2 for i in range(n)], dtype="Int64"),
        "nvtx_range": pd.array([PATHS[i % len(PATHS)] for i in range(n)], dtype="string"),
        "comm_exposed_s": [1e-3 * i if i % 5 == 0 else np.nan for i in range(n)],
        "comm_overlapped_s": [2e-4 * i if i % 3 == 0 else np.nan for i in range(n)],
        "duration_s": [1e-2 + i * 1e-4 for i in range(n)],
    })
    got = exposure(frame)
    step = frame["nvtx_range"].str.extract(r"(ProfilerStep#\d+)")[0].fillna("(no step)")
    expected = []
    for (rank, st), part in frame.groupby([frame["rank"].astype("string"), step], sort=False):
        if part["comm_exposed_s"].notna().any():
            expected.append({"rank": rank, "step": st, "exposed_s": float(part["comm_exposed_s"].sum()),
                             "overlapped_s": float(part["comm_overlapped_s"].sum()),
                             "gpu_time_s": float(part["duration_s"].sum())})
    assert got == expected and len(got) == 4  # rank 1: both paths of step 1 are one group
    assert [(g["rank"], g["step"]) for g in got][:2] == [("0", "ProfilerStep#2"), ("1", "ProfilerStep#1")]
    assert {g["rank"] for g in exposure(frame.drop(columns=["rank"]))} == {None}
