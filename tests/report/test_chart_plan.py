"""The chart plan (``report._chart_jobs``) and the cheap paths of a chart job: each planned chart has the bytes
``png.write`` gives the same rows taken from the whole frame (every column there, the roofs computed again);
the roof sets, points, kernel order and bounds are the ones the plain pandas forms give."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import analysed, fixture_analysis, fixture_params, kernel_row
from roofline.hardware.peaks import LEVELS
from roofline.report import _chart_jobs, _write_set, png
from roofline.report.chart_data import MAX_ROOF_SETS, points, roof_sets

#: pipe roofs and 3 roof sets; tensor roofs per data path; 2 roof sets; two devices (and collectives)
PLANNED = ["ncu/sm89_rtx4060_kmeans-cartoonizer_full.ncu-rep", "ncu/sm75_t4_wmma-gemm-fp16_full-hier.ncu-rep",
           "ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep", "traces/torch_cuda12.9_b200_8rank-nccl_eager_rank0.pt.trace.json.gz",
           "beyond MAX_ROOF_SETS"]


def _sets_beyond_the_charted():
    """One device whose kernels ran at more clocks than it gets charts (the last charts' note names the rest)."""
    return analysed([kernel_row(kernel_id=i, kernel_name=f"k{i}", kernel_short_name=f"k{i}", duration_s=1e-3 * (9 - i),
                                peak_flop_per_s_fp32=2e13 * 1.2 ** i) for i in range(MAX_ROOF_SETS + 2)])


@pytest.mark.parametrize("rel", fixture_params(PLANNED))
def test_each_planned_chart_is_the_chart_of_its_rows_with_every_column_and_roofs_computed_again(tmp_path, rel):
    if rel == "beyond MAX_ROOF_SETS":
        frame, levels = _sets_beyond_the_charted(), tuple(LEVELS)
    else:
        analysis = fixture_analysis(rel)
        frame, levels = analysis.frame, analysis.levels
    jobs, paths = _chart_jobs(frame, tmp_path / "plan", levels, "profiled", False)
    (tmp_path / "plan").mkdir()
    (tmp_path / "whole").mkdir()
    assert len(jobs) == len(paths) >= 1
    for job in jobs:
        assert job.func is _write_set
        view, at, job_levels, clock, note, roof_list, path = job.args
        assert len(view.columns) < len(frame.columns)  # the job reads its columns only
        job()
        again = png.write(frame.take(at), tmp_path / "whole" / path.name, job_levels, clock=clock, note=note)
        assert path.read_bytes() == again.read_bytes(), path.name
        assert roof_sets(frame.take(at), levels)[0].roofs == list(roof_list)
    if rel == "beyond MAX_ROOF_SETS":
        assert len(paths) == MAX_ROOF_SETS and "further roof set(s) have no chart" in job.args[4]
    if "cartoonizer" in rel:  # the view keeps what the pipe roofs read: the charts drew some
        fig = png.draw(frame, levels)
        assert any((line.get_gid() or "").startswith("pipe:") for line in fig.axes[0].lines)


def test_a_missing_roof_source_is_one_kind_with_an_unknown_one_and_another_than_counters():
    """A missing source reads as "" (kind "unknown"): one roof set with a source of unknown kind."""
    frame = pd.DataFrame({
        "duration_s": [1e-3] * 4, "achieved_flop_per_s": [1e12] * 4, "dram_bytes": [1e6] * 4,
        "peak_dram_bytes_per_s": [2e12] * 4,
        "peak_dram_bytes_per_s_source": pd.array([None, "counters: dram", "x", None], dtype="string"),
    })
    sets = roof_sets(frame, ["dram"])
    assert [st.mask.tolist() for st in sets] == [[True, False, True, True], [False, True, False, False]]
    assert [r.short_source for r in sets[0].roofs] == ["unknown"]


def _points_per_level(frame: pd.DataFrame, levels) -> pd.DataFrame:
    """``chart_data.points`` as a frame per level and their concatenation (its plain form)."""
    drawn = (pd.to_numeric(frame["achieved_flop_per_s"], errors="coerce") > 0).fillna(False).to_numpy()
    rows = []
    for lv in levels:
        col = f"intensity_{lv}_flop_per_byte"
        if col not in frame:
            continue
        x = pd.to_numeric(frame[col][drawn], errors="coerce")
        ok = (x > 0) & np.isfinite(x)
        rows.append(pd.DataFrame({
            "row": np.flatnonzero(drawn)[ok.to_numpy()],
            "kernel_id": frame["kernel_id"][drawn][ok] if "kernel_id" in frame else np.arange(ok.sum()),
            "level": lv,
            "intensity_flop_per_byte": x[ok],
            "achieved_flop_per_s": pd.to_numeric(frame["achieved_flop_per_s"][drawn][ok], errors="coerce"),
            "duration_s": pd.to_numeric(frame["duration_s"][drawn][ok], errors="coerce"),
        }))
    return pd.concat(rows, ignore_index=True)


@pytest.mark.parametrize("rel", fixture_params(["ncu/sm89_rtx4060_kmeans-cartoonizer_full.ncu-rep",
                                                "traces/torch_cuda12.9_b200_8rank-nccl_eager_rank0.pt.trace.json.gz"]))
def test_points_order_and_bounds_equal_their_plain_pandas_forms(rel):
    analysis = fixture_analysis(rel)
    frame, levels = analysis.frame, analysis.levels
    no_ids = frame.drop(columns=["kernel_id"])
    nothing = frame.assign(achieved_flop_per_s=np.nan)
    for f in (frame, no_ids, nothing):
        pd.testing.assert_frame_equal(points(f, levels), _points_per_level(f, levels), check_exact=True)
    pts = points(frame, levels)
    assert len(pts) > 1
    pd.testing.assert_series_equal(png._longest_first(pts),
                                   pts.groupby("row")["duration_s"].first().sort_values(ascending=False))
    some_missing = frame.assign(bound=frame["bound"].where(np.arange(len(frame)) % 2 == 0))
    for f in (frame, some_missing, frame.assign(bound=frame["bound"].astype("string"))):
        plain = f["bound"].astype("string").fillna("unavailable").to_numpy()
        assert png._bounds(f).tolist() == plain.tolist()
    assert "unavailable" in png._bounds(some_missing).tolist()
