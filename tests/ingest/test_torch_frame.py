"""The Kineto reader's column-at-once frame equals a plain per-row construction of the same rows.

The reference below builds every column cell by cell (the reader's frame before the column fast paths):
per-row step lookup, per-row cost, device and launch-dimension lists. The fast frame must equal it exactly,
on odd rows and on real traces; with the roofs stage's spec roofs (``attach_roofs``, by distinct rows or
row by row) it must equal the reference filled by ``fill_spec_peaks``.
"""

from __future__ import annotations

import math
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import shared
from roofline.errors import path_text
from roofline.hardware import attach
from roofline.hardware.attach import attach_roofs, fill_spec_peaks
from roofline.ingest.torch import trace as torch_trace
from roofline.ingest.torch.columns import NONE3, dim3, dim3_columns, step_column
from roofline.ingest.torch.comms import COLLECTIVE_COLUMNS, NOT_COMM
from roofline.ingest.torch.trace import COST_COLUMNS, NO_CACHE, ROW_COLUMNS, STEP, _Rows
from roofline.schema import kernels_from_columns

NAN = float("nan")
GRID = ("grid_x", "grid_y", "grid_z")


def plain_frame(rows: _Rows, path: Path, rank: Any) -> pd.DataFrame:
    """The frame of ``rows`` built cell by cell (as read: no roofs)."""
    rs = sorted(rows.rows, key=itemgetter(0))
    n = len(rs)
    cols: dict[str, Any] = {c: [r[i] for r in rs] for i, c in enumerate(ROW_COLUMNS)}
    steps = rows.steps
    named = []
    for t, mark in zip(cols.pop("_ts"), cols["nvtx_range"]):
        j = max((i for i, s in enumerate(steps) if s[0] <= t), default=None)  # the latest-starting step
        named.append(steps[j][2] if mark is STEP and j is not None and steps[j][1] >= t else None)
    cols["nvtx_range"] = named if steps else cols["nvtx_range"]
    colls = cols.pop("_coll")  # a collective's columns (ingest/torch/comms.py), NOT_COMM on other rows
    for i, c in enumerate(COLLECTIVE_COLUMNS):
        cols[c] = [t[i] for t in colls]
    costs = cols.pop("_cost")
    for i, c in enumerate(COST_COLUMNS):
        cols[c] = [t[i] for t in costs]
    props = [rows._device(d) for d in cols.pop("_device")]
    for i, c in enumerate(("device_name", "sm_count", "compute_capability")):
        cols[c] = [p[i] for p in props]
    for c in ("_grid", "_block"):
        checked = [dim3(v) or NONE3 for v in cols.pop(c)]
        for axis, name in enumerate(f"{c[1:]}_{a}" for a in "xyz"):
            cols[name] = [d[axis] for d in checked]
    cols.update({"format": ["torch-trace"] * n, "replay_ok": [True] * n, "kernel_id": list(range(n)),
                 "rank": [rank] * n, "l2_bytes_source": [NO_CACHE] * n, "l1_bytes_source": [NO_CACHE] * n,
                 "source_file": [path_text(path)] * n})
    return kernels_from_columns(cols, n)


def _props(i: int, name: Any, major: Any, minor: Any, sms: Any) -> dict[str, Any]:
    return {"id": i, "name": name, "computeMajor": major, "computeMinor": minor, "numSms": sms}


def _cost(fp32: float, src: Any, path: Any, dram: float, evidence: Any = None) -> tuple[Any, ...]:
    return (0.0, fp32, 0.0, 0.0, src, src, src, src, path, dram, src, None, evidence, NAN, None)


def _row(ts: Any, name: Any, dev: Any, cost: tuple[Any, ...], grid: Any = None, block: Any = None,
         mark: Any = STEP, label: str = "op", dims: Any = None) -> tuple[Any, ...]:
    return (ts, name, name, f"k_{name}", mark, dev, 1e-6, "Σ dur of 1 GPU event(s) (kernel)", label, grid, block,
            cost, dims, None, NOT_COMM)


def _odd_rows(devices: dict[Any, Any], steps: list[tuple[float, float, str]]) -> _Rows:
    rows = _Rows(devices, steps)
    shared_cost = _cost(2e9, "model: 2·M·N·K", "tf32", 4096.0, "the dtype (tf32, tensor cores)")
    other = _cost(NAN, "unavailable: no model", None, NAN)
    odd = [
        _row(5.0, "aten::mm", 0, shared_cost, [1, 2, 3], [128, 1, 1]),
        _row(1.0, "aten::add", 1, other, None, [32, 1, 1]),  # out of ts order: sorted
        _row(15.0, "aten::mm", 0, _cost(2e9, "model: 2·M·N·K", "tf32", 4096.0, "the dtype (tf32, tensor cores)"),
             [1.0, 2, 3], [True, 1, 1]),  # an equal but distinct cost tuple; a float and a bool dimension
        _row(25.0, "aten::bmm", 2, _cost(1e9, "model: bmm", "fp16_bf16_tf32", 8.0), [2**63, 1, 1], [1, 2]),
        _row(35.0, "range", 0, other, [None, 1, 2], "abc", mark=None, label="measured"),  # a CUPTI range row
        _row(45.0, "aten::mm", 1, shared_cost, [[1], 2, 3], {"x": 1}),
        _row(55.0, "aten::mm", 0, _cost(3.0, 7, None, 1.0), [-1, 0, 2**63 - 1], [1, 2, 3], dims="[[2, 3]]"),
        _row(65.0, "aten::mm", 3, shared_cost, [], [float("nan"), 1, 1]),  # an unknown device id: the only one
        _row(65.0, "aten::mul", 0, other, 5, [1, 1, 1]),  # a tie in ts: kept in append order
    ]
    rows.rows.extend(odd)
    return rows


DEVICES = {0: _props(0, "NVIDIA A100-SXM4-80GB", 8, 0, 108), 1: _props(1, "Tesla V100-SXM2-16GB", 7, 0, 80),
           2: _props(2, "Mystery GPU 9000", None, None, None)}
STEPS = [(0.0, 20.0, "ProfilerStep#1"), (10.0, 12.0, "ProfilerStep#2"), (30.0, 50.0, "ProfilerStep#3")]


@pytest.fixture(params=[0, 10**9], ids=["distinct-fill", "whole-fill"])
def fill_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Both ways the roofs stage fills the spec peaks: per distinct row, and on the whole frame."""
    monkeypatch.setattr(attach, "_SMALL_FRAME", request.param)
    return int(request.param)


def assert_equal_read_and_roofed(got: pd.DataFrame, want: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    pd.testing.assert_frame_equal(attach_roofs(got), fill_spec_peaks(want), check_exact=True)


def test_odd_rows_equal_plain_construction(fill_path: int) -> None:
    rows = _odd_rows(DEVICES, STEPS)
    got = rows.frame(Path("odd.json"), 3)
    want = plain_frame(rows, Path("odd.json"), 3)
    assert_equal_read_and_roofed(got, want)
    # what the plain construction decides, spelled out: a float or bool dimension is no dimension, an int
    # beyond int64 is missing alone; steps by start; the equal-valued distinct cost tuple gives equal cells
    assert got["grid_x"].isna().tolist() == [True, False, True, True, True, True, False, True, True]
    assert got["grid_y"].tolist()[3] == 1 and got["grid_x"].tolist()[6] == -1
    assert got["grid_z"].tolist()[6] == 2**63 - 1
    # (ts 15 is in step 2's span start-wise, which ended at 12: no step; the range row is in none)
    assert [None if pd.isna(v) else v for v in got["nvtx_range"]] == [
        "ProfilerStep#1", "ProfilerStep#1", None, None, None, "ProfilerStep#3", None, None, None]
    assert got["flop_fp32_source"].tolist()[6] == "7"  # a non-str in a string column, converted as any cell
    assert got["peak_flop_per_s_tensor"].isna().all()  # a trace records no roofs: the stage attaches them
    roofed = attach_roofs(got)
    assert roofed["peak_flop_per_s_tensor"].notna().any()
    assert roofed["peak_flop_per_s_fp32_source"].str.startswith("unavailable").tolist()[3]  # the unknown GPU


def test_one_device_and_no_steps_equal_plain_construction(fill_path: int) -> None:
    rows = _odd_rows({0: DEVICES[0]}, [])
    rows.rows[:] = [r[:5] + (0,) + r[6:] for r in rows.rows]
    got = rows.frame(Path("one.json"), None)
    assert_equal_read_and_roofed(got, plain_frame(rows, Path("one.json"), None))
    assert got["device_name"].unique().tolist() == ["NVIDIA A100-SXM4-80GB"]


def test_damaged_device_properties_fall_back_to_the_whole_fill(fill_path: int) -> None:
    devices = {0: _props(0, ["not", "a", "name"], 8, 0, 108), 1: _props(1, "Tesla V100-SXM2-16GB", "7", 0, "80")}
    rows = _odd_rows(devices, STEPS)
    got = rows.frame(Path("damaged.json"), 0)
    assert_equal_read_and_roofed(got, plain_frame(rows, Path("damaged.json"), 0))


@pytest.mark.parametrize("values", [
    [[1, 2, 3], None, [4, 5, 6]],
    [None, None],
    [],
    [[1, 2, 3], [1.0, 2, 3]],
    [[True, 2, 3]],
    [[1, 2], [1, 2, 3, 4]],  # lengths that sum to 3 per row
    [[[1, 1, 1], 2, 3], 0],  # a nested list beside a falsy value
    [[1, 2, 3], []],
    [[2**63, 1, 1], [1, 1, 1]],
    [[-(2**63), 1, 1]],
    [[-(2**63) - 1, 1, 1]],
    [[None, 1, 2]],
    [[NAN, 1, 2]],
    [[1, 2, 3], 5],
    ["abc", "123"],
    [{"a": 1, "b": 2, "c": 3}],
    [(1, 2, 3)],  # a tuple is not what dim3 keeps
    [[1, 2, "3"]],
])
def test_dim3_columns_equal_per_row(values: list[Any]) -> None:
    _assert_dim3_equals_per_row(values)


def _assert_dim3_equals_per_row(values: list[Any]) -> None:
    n = len(values)
    got = kernels_from_columns(dim3_columns(values, GRID), n)[list(GRID)]
    checked = [dim3(v) or NONE3 for v in values]
    want = kernels_from_columns({c: [d[i] for d in checked] for i, c in enumerate(GRID)}, n)[list(GRID)]
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_dim3_columns_random_mixtures() -> None:
    rng = np.random.default_rng(7)
    odd = [None, [1.5, 1, 1], [False, 1, 1], [1, 1], [2**64, 1, 1], "xyz", [1, [2], 3]]
    for _ in range(50):
        values: list[Any] = [[int(x) for x in rng.integers(-5, 2**31, 3)] for _ in range(int(rng.integers(1, 30)))]
        for _ in range(int(rng.integers(0, 3))):
            values.insert(int(rng.integers(0, len(values) + 1)), odd[int(rng.integers(0, len(odd)))])
        _assert_dim3_equals_per_row(values)


def test_step_column_equals_per_row_lookup() -> None:
    steps = [(0.0, 10.0, "ProfilerStep#1"), (5.0, 6.0, "ProfilerStep#2"), (5.0, 30.0, "ProfilerStep#3"),
             (40.0, 41.0, "ProfilerStep#4")]
    ts = (-1.0, 0.0, 5.5, 7, 10.0, 30.0, 35.0, 41.0, 41.5, 5.0)
    for marks in ((STEP,) * len(ts), (STEP, None) * (len(ts) // 2)):
        got = kernels_from_columns({"nvtx_range": step_column(steps, ts, marks, STEP)}, len(ts))["nvtx_range"]
        want = []
        for t, m in zip(ts, marks):
            j = max((i for i, s in enumerate(steps) if s[0] <= t), default=None)
            want.append(steps[j][2] if m is STEP and j is not None and steps[j][1] >= t else None)
        assert got.tolist() == [w if w is not None else pd.NA for w in want]
    assert got.tolist()[2] == "ProfilerStep#3"  # the latest-starting step


TRACES = ["traces/torch_a100_alexnet_train_small.pt.trace.json.gz",
          "traces/torch_a100_cupti-range-profiler_sass-flop-counters.pt.trace.json.gz",
          "traces/torch_rocm6.2_mi250_minitoy_train.pt.trace.json.gz",
          "traces/torch2.6_h100_bert-small_infer_flops-flag.pt.trace.json.gz",
          "traces/torch_rocm_mi300x_inductor-triton-kernels.pt.trace.json.gz",  # Inductor's own estimates
          "traces/torch_cuda12.9_b200_8rank-nccl_eager_rank0.pt.trace.json.gz"]  # 713 rows: NCCL, memcpy


@pytest.mark.parametrize("rel", TRACES)
def test_real_traces_equal_plain_construction(rel: str, monkeypatch: pytest.MonkeyPatch, fill_path: int) -> None:
    path = shared(rel)
    seen = []
    real = _Rows.frame

    def frame(self: _Rows, p: Path, rank: Any) -> pd.DataFrame:
        got = real(self, p, rank)
        seen.append((got, plain_frame(self, p, rank)))
        return got

    monkeypatch.setattr(torch_trace._Rows, "frame", frame)
    torch_trace.read(path)
    assert len(seen) == 1
    got, want = seen[0]
    assert_equal_read_and_roofed(got, want)
    assert len(got) > 0 and not math.isnan(float(got["duration_s"].sum()))
