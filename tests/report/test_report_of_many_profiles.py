"""A report of many profiles takes cheaper paths (per-scope arrays, narrow columns, one sorted copy): each gives what
the direct computation on the scope's own rows gives (analysis/headline.py, analysis/aggregate.py, report/)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from conftest import analysed, kernel_row
from roofline.analysis.aggregate import aggregate, partial
from roofline.analysis.headline import by_device, headline, headlines, row_facts
from roofline.analysis.scope_rows import Rows
from roofline.analysis.select import select
from roofline.cli.common import table_lines
from roofline.report import html
from roofline.report.table import format_table

NO_SHAPES = "unavailable: no Input Dims for aten::mm; record with torch.profiler.profile(record_shapes=True)"


def _profiles() -> pd.DataFrame:
    """Three profiles on two devices, interleaved: tensor kernels of two data paths, rows without a point, NaNs."""
    rows = []
    for i in range(24):
        dev, src = ("A100", "a.ncu-rep") if i % 3 == 0 else ("H100", "b.ncu-rep") if i % 3 == 1 else ("H100", "c.json")
        kw = {"kernel_id": i, "device_name": dev, "source_file": src, "duration_s": (i % 7 + 1) * 1e-4 + i * 1e-7,
              "kernel_name": f"k{i % 5}", "kernel_short_name": f"k{i % 5}"}
        if i % 4 == 0:
            kw.update(flop_tensor=2e9, flop_fp32=0.0, tensor_path="imma_int8" if i % 8 == 0 else "hmma_fp16")
        if i % 5 == 0:
            kw.update(kernel_name="aten::mm", kernel_short_name="aten::mm", flop_fp32=np.nan, flop_fp64=np.nan,
                      flop_fp16=np.nan, flop_tensor=np.nan, dram_bytes=np.nan, l2_bytes=np.nan, l1_bytes=np.nan,
                      flop_fp32_source=NO_SHAPES, dram_bytes_source=NO_SHAPES)
        if i == 7:
            kw.update(duration_s=np.nan)
        rows.append(kernel_row(**kw))
    return analysed(rows)


def test_each_devices_headline_is_the_headline_of_its_own_rows():
    frame = _profiles()
    got = by_device(frame)
    assert list(got) == ["A100", "H100"]
    for device, h in got.items():
        own = frame[frame["device_name"] == device]
        assert h.to_dict() == headline(own, device=device).to_dict()  # to the last bit: sums in the same order
    assert got["H100"].reasons and got["H100"].compute_peak is not None


def test_each_profiles_headline_is_the_headline_of_its_own_rows():
    frame = _profiles()
    items = headlines(frame)
    assert items[0].profile is None and len(items) == 4
    for h in items[1:]:
        own = frame[(frame["source_file"] == h.profile) & (frame["device_name"] == h.device)]
        assert h.to_dict() == headline(own, profile=h.profile, device=h.device).to_dict()


def test_a_groups_tensor_paths_are_its_kernels_distinct_paths():
    frame = _profiles()
    # (the profiles take turns: a row of each in three)
    cycle = {"a.ncu-rep": ["imma_int8", None, "hmma_fp16"], "b.ncu-rep": ["hmma_fp16", None], "c.json": [None]}
    frame["tensor_path"] = pd.array([cycle[f][n // 3 % len(cycle[f])] for n, f in enumerate(frame["source_file"])],
                                    dtype="string")
    sums = partial(frame, "program")  # (the sums of the groups' rows: their distinct paths, missing left out)
    assert sums["_tensor_paths"].to_dict() == {("a.ncu-rep", "A100"): frozenset({"imma_int8", "hmma_fp16"}),
                                               ("b.ncu-rep", "H100"): frozenset({"hmma_fp16"}),
                                               ("c.json", "H100"): frozenset()}
    assert list(aggregate(frame, by="program")["program"]) == list(aggregate(frame.drop(columns="tensor_path"),
                                                                              by="program")["program"])


def test_the_page_of_rows_sorted_already_is_the_page_of_the_frame():
    frame = _profiles()
    ordered = select(frame)
    assert html.longest_first(ordered["duration_s"]) and not html.longest_first(frame["duration_s"])
    assert not html.longest_first(pd.Series([3.0, np.nan, 1.0]))  # a missing time sorts last
    assert html.render(ordered) == html.render(frame)


def test_numbers_are_formatted_per_value_with_negative_zero_and_nulls_kept():
    values = [0.0, -0.0, np.nan, np.inf, 1.23456789, 1.23456789, -np.inf, 0.0]
    assert html._numbers(values) == "[0,-0,null,null,1.2346,1.2346,null,0]"
    assert html._numbers([]) == "[]"


def test_codes_of_a_categorical_are_the_codes_of_its_texts():
    values = pd.Series(["b", None, "a", "b", "c"], dtype="category").cat.set_categories(["c", "b", "a", "z"])
    assert html._codes(values) == html._codes(values.astype("string")) == ("[0,-1,1,0,2]", ["b", "a", "c"])


def test_a_table_of_the_first_rows_counts_files_from_all_of_them():
    frame = select(_profiles())
    wide = frame[["source_file", "device_name"]]
    for limit in (1, 3):  # files (their numbers) and devices told apart by every row, not only the rows shown
        assert format_table(frame.head(limit), limit=limit, total=len(frame), whole=wide) == \
            format_table(frame, limit=limit)


def test_a_scope_is_row_positions_however_given():
    rows = Rows(pd.DataFrame({"x": range(6)}))
    assert rows.positions(slice(1, 4)).tolist() == [1, 2, 3]
    assert rows.positions(np.array([True, False, True, False, False, True])).tolist() == [0, 2, 5]
    assert rows.positions(np.array([4, 1])).tolist() == [4, 1]


def test_write_report_does_the_further_work_once_and_pages_sorted_rows_alike(tmp_path):
    from roofline.report import write_report

    frame = _profiles()
    calls: list[int] = []
    plain = write_report(frame, tmp_path / "plain", workers=1)
    given = write_report(frame, tmp_path / "given", workers=1, also=lambda: calls.append(1),
                         longest_first=select(frame))
    assert calls == [1] and [p.name for p in plain] == [p.name for p in given]
    for a, b in zip(plain, given):
        assert a.read_bytes() == b.read_bytes()


def test_row_facts_of_the_sorted_rows_are_the_frames_facts_taken_in_that_order():
    frame = _profiles()
    ordered = select(frame)
    facts = row_facts(frame)
    moved = facts.take(frame.index.get_indexer(ordered.index))
    own = row_facts(ordered)
    assert moved.categories.tolist() == own.categories.tolist()
    for name in ("point", "kinds", "reason", "fix"):
        assert getattr(moved, name).tolist() == getattr(own, name).tolist()
    assert any(r is not None for r in own.reason) and not own.point.all()  # rows with and without a reason


def test_headlines_table_and_page_read_the_same_from_facts_given_as_from_their_own():
    frame = _profiles()
    ordered = select(frame)
    facts = row_facts(frame)
    moved = facts.take(frame.index.get_indexer(ordered.index))
    assert [h.to_dict() for h in headlines(frame, facts=facts)] == [h.to_dict() for h in headlines(frame)]
    page = ordered.reset_index(drop=True)
    assert {d: h.to_dict() for d, h in by_device(page, moved).items()} == \
        {d: h.to_dict() for d, h in by_device(page).items()}
    levels = ("dram", "l2", "l1")
    assert table_lines(ordered, levels, None, limit=5, scope=frame, facts=moved, scope_facts=facts) == \
        table_lines(ordered, levels, None, limit=5, scope=frame)
    assert html.render(ordered, levels, compress=False, facts=moved) == html.render(ordered, levels, compress=False)


def test_step_points_leave_out_devices_with_one_step_and_are_empty_when_every_device_has_one():
    from roofline.report.timeseries import step_points

    rows = [kernel_row(kernel_id=i, device_name=dev, nvtx_range=nv, duration_s=1e-4 * (i + 1))
            for i, (dev, nv) in enumerate([("A100", "ProfilerStep#1/fwd"), ("A100", "ProfilerStep#1/bwd"),
                                           ("H100", "step 2"), ("H100", None)])]
    assert step_points(analysed(rows), ("dram",)) == []  # a step each: no chart
    rows.append(kernel_row(kernel_id=9, device_name="H100", nvtx_range="step 3", duration_s=1e-4))
    got = step_points(analysed(rows), ("dram",))
    assert [(p["device"], p["label"]) for p in got] == [("H100", "step 2"), ("H100", "step 3")]


def test_write_report_given_the_sorted_rows_and_facts_as_functions_writes_the_same_page(tmp_path):
    from roofline.report import write_report

    frame = _profiles()
    ordered = select(frame)
    moved = row_facts(frame).take(frame.index.get_indexer(ordered.index))
    calls = []
    write_report(frame, tmp_path / "given", workers=1, longest_first=ordered, facts=moved)
    write_report(frame, tmp_path / "later", workers=1, longest_first=lambda: calls.append(1) or ordered,
                 facts=lambda: moved)
    assert calls == [1]
    assert (tmp_path / "given" / "report.html").read_bytes() == (tmp_path / "later" / "report.html").read_bytes()
    assert sorted(p.name for p in (tmp_path / "later").iterdir()) == sorted(p.name for p in (tmp_path / "given").iterdir())
