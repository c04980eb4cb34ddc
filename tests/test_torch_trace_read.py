"""read() frees the JSON and the unused events before building rows: same frame as building from kept copies."""

from __future__ import annotations

import json

import pandas as pd

from roofline.ingest import torch_trace
from roofline.ingest.common import json_bytes
from roofline.ingest.torch_trace_decode import RANGE_COUNTERS, decode
from roofline.schema import get_provenance

OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10, "dur": 50, "pid": 1, "tid": 1,
      "args": {"External id": 7, "Input Dims": [[64, 32], [32, 16]], "Input type": ["float", "float"]}}
INNER = {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "ts": 100, "dur": 20, "pid": 1, "tid": 1,
         "args": {"External id": 8}}
LAUNCH = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 20, "dur": 5, "pid": 1, "tid": 1,
          "args": {"correlation": 99, "External id": 7}}
# a launch whose External id names no op: linked to the innermost op holding it on its thread (INNER)
LAUNCH2 = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 105, "dur": 5, "pid": 1, "tid": 1,
           "args": {"correlation": 100, "External id": 12345}}
KERNEL = {"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "ts": 30, "dur": 8, "pid": 0, "tid": 7,
          "args": {"correlation": 99, "External id": 7, "device": 0, "grid": [4, 2, 1], "block": [128, 1, 1]}}
KERNEL2 = {"ph": "X", "cat": "kernel", "name": "add_kernel", "ts": 110, "dur": 3, "pid": 0, "tid": 7,
           "args": {"correlation": 100, "device": 0, "grid": [1, 1, 1], "block": [64, 1, 1]}}
UNUSED = [{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 99, "ts": 20, "pid": 1, "tid": 1},
          {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/linear.py(114): forward", "ts": 5,
           "dur": 60, "pid": 1, "tid": 1, "args": {"Python id": 3}},
          {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 12, "pid": 1, "tid": 1, "s": "t"}]
RANGE = {"ph": "X", "cat": "cuda_profiler_range", "name": "range_0", "ts": 200, "dur": 10, "pid": 0, "tid": 0,
         "args": {c: 10 * (i + 1) for i, c in enumerate(RANGE_COUNTERS)}}
PROPS = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}]


def _both(tmp_path, events):
    p = tmp_path / "t.pt.trace.json"
    p.write_bytes(json.dumps({"traceEvents": events, "deviceProperties": PROPS}).encode())
    got = torch_trace.read(p)  # the holder path: JSON and unused events dropped after the scan
    raw = json_bytes(p)
    decoded, top = decode(p, raw)
    kept = torch_trace._build(p, raw, decoded, top)  # the bytes path: nothing dropped
    assert len(decoded) == len(events)  # (the bytes path leaves the caller's events alone)
    return got, kept


def _same(got, kept):
    pd.testing.assert_frame_equal(got, kept)
    meta, want = get_provenance(got)[0], get_provenance(kept)[0]
    assert {k: v for k, v in meta.items() if k != "ingested_at"} == \
        {k: v for k, v in want.items() if k != "ingested_at"}


def test_read_drops_nothing_it_needs(tmp_path):
    events = [OP, INNER, LAUNCH, LAUNCH2, KERNEL, KERNEL2, *UNUSED]
    got, kept = _both(tmp_path, events)
    _same(got, kept)
    assert get_provenance(got)[0]["trace_events"] == len(events)
    assert list(got["kernel_name"]) == ["aten::mm", "aten::add_"]
    assert list(got["mangled_name"]) == ["sgemm_kernel", "add_kernel"]
    assert got["flop_fp32"].iloc[0] == 2 * 64 * 32 * 16


def test_read_keeps_the_json_for_range_events(tmp_path):
    got, kept = _both(tmp_path, [OP, LAUNCH, KERNEL, RANGE, *UNUSED])
    _same(got, kept)
    r = got[got["attribution"] == "measured: CUPTI range profiler"]
    assert len(r) == 1
    # FLOPs = add + mul + 2·fma per precision: counters 10..90 in RANGE_COUNTERS order (d, f, h); a half
    # instruction is counted as packed half2, 2 lanes (metrics/flops.py WEIGHTS, as ncu's roofline does)
    assert r["flop_fp64"].iloc[0] == 10 + 20 + 2 * 30
    assert r["flop_fp32"].iloc[0] == 40 + 50 + 2 * 60
    assert r["flop_fp16"].iloc[0] == 2 * (70 + 80 + 2 * 90)
