"""CUDA/HIP graph replays joined to their capture trace: replayed kernels get the captured ops' shapes."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import roofline
from conftest import shared

PROPS = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}]


def _write(path, events):
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": PROPS}))


def _pair(tmp_path, kernel_names=("gemm_k", "add_k")):
    """A replay (one graph launch, two kernels without ops) and, in capture_traces/, the trace recorded while
    that graph was captured: begin/end capture, an mm and an add each launching one kernel (by hand)."""
    replay = tmp_path / "run.pt.trace.json"
    _write(replay, [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "ts": 10, "dur": 5, "pid": 1, "tid": 1,
         "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": kernel_names[0], "ts": 20, "dur": 10, "pid": 0, "tid": 7,
         "args": {"correlation": 7, "device": 0}},
        {"ph": "X", "cat": "kernel", "name": kernel_names[1], "ts": 31, "dur": 2, "pid": 0, "tid": 7,
         "args": {"correlation": 7, "device": 0}}])
    (tmp_path / "capture_traces").mkdir()
    op = {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1}
    rt = {"ph": "X", "cat": "cuda_runtime", "pid": 1, "tid": 1, "dur": 1}
    _write(tmp_path / "capture_traces" / "cap.pt.trace.json", [
        {**rt, "name": "cudaStreamBeginCapture", "ts": 1},
        {**op, "name": "aten::mm", "ts": 2, "dur": 5, "args": {"External id": 1, "Input Dims": [[64, 32], [32, 16]],
                                                              "Input type": ["float", "float"]}},
        {**rt, "name": "cudaLaunchKernel", "ts": 3, "args": {"External id": 1, "kernel": "gemm_k", "correlation": 1}},
        {**op, "name": "aten::add", "ts": 8, "dur": 5, "args": {"External id": 2, "Input Dims": [[64, 16], [64, 16], []],
                                                               "Input type": ["float", "float", "Scalar"]}},
        {**rt, "name": "cudaLaunchKernel", "ts": 9, "args": {"External id": 2, "kernel": "add_k", "correlation": 2}},
        {**rt, "name": "cudaStreamEndCapture", "ts": 20}])
    return replay


def test_replayed_kernels_take_the_captured_ops_shapes(tmp_path):
    k = roofline.read(_pair(tmp_path)).sort_values("kernel_id")
    assert list(k["kernel_name"]) == ["aten::mm", "aten::add"]
    assert (k["attribution"] == "graph replay: captured op").all()
    assert k["flop_fp32"].tolist() == [2 * 64 * 32 * 16, 64 * 16]
    assert k["dram_bytes"].tolist() == [(64 * 32 + 32 * 16 + 64 * 16) * 4, 3 * 64 * 16 * 4]
    assert k["duration_s"].sum() == pytest.approx(12e-6)
    assert "joined to cap.pt.trace.json" in k.attrs["roofline.provenance"][0]["graph_replays"][0]


def test_a_replay_that_matches_no_captured_graph_stays_orphaned(tmp_path):
    k = roofline.read(_pair(tmp_path, ("other_k", "add_k")))
    assert k["attribution"].str.startswith("orphan: graph replay").all() and len(k) == 2
    assert "match no captured graph" in k.attrs["roofline.provenance"][0]["graph_replays"][0]


def test_the_vllm_full_graph_decode_is_joined_to_its_capture():
    """vLLM decode with full HIP graphs: all 421 replayed kernels are tied to the ops captured in
    capture_traces/ (picked up beside the replay), in order, their names equal to the captured launches'."""
    k = roofline.read(shared("traces/vllm_decode_full-graph/graph_execution.pt.trace.json.gz"))
    notes = k.attrs["roofline.provenance"][0]["graph_replays"]
    assert notes == ["graph launch 505113: 421 kernels joined to graph_capture_rank_0.pt.trace.json.gz"]
    assert not k["attribution"].str.startswith("orphan: graph").any()
    rms = k[k["kernel_name"] == "aiter::rmsnorm2d_fwd_with_add_ck"]
    assert len(rms) > 0 and (rms["flop_fp32"] + rms["flop_fp16"] + rms["flop_tensor"] > 0).all()


def test_inductor_kernels_use_the_estimates_the_trace_carries(tmp_path):
    """kernel_flop / kernel_num_gb (torch._inductor.analysis.profile_analysis) are used as recorded; an
    Inductor Triton op without them gets its buffers' bytes and FLOPs unavailable, saying why."""
    p = tmp_path / "ind.pt.trace.json"
    op = {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "dur": 5}
    rt = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "dur": 1}
    k = {"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "dur": 4}
    _write(p, [
        {**op, "name": "triton_poi_fused_add_0", "ts": 1, "args": {"External id": 1, "Input Dims": [[1024], [1024], []],
                                                                "Input type": ["c10::BFloat16"] * 2 + ["Scalar"],
                                                                "kernel_flop": 1024, "kernel_num_gb": 4.096e-06}},
        {**rt, "ts": 2, "args": {"External id": 1, "correlation": 1}},
        {**k, "name": "triton_poi_fused_add_0", "ts": 3, "args": {"correlation": 1, "device": 0}},
        {**op, "name": "triton_red_fused_sum_1", "ts": 10, "args": {"External id": 2, "Input Dims": [[64, 32], [64], []],
                                                                 "Input type": ["float", "float", "Scalar"]}},
        {**rt, "ts": 11, "args": {"External id": 2, "correlation": 2}},
        {**k, "name": "triton_red_fused_sum_1", "ts": 12, "args": {"correlation": 2, "device": 0}}])
    r = roofline.read(p).sort_values("kernel_id")
    est, buf = r.iloc[0], r.iloc[1]
    assert est["flop_fp16"] == 1024 and est["dram_bytes"] == pytest.approx(4096)
    assert est["flop_fp16_source"].startswith("trace estimate") and est["precision_evidence"] == "trace estimate"
    assert buf["dram_bytes"] == (64 * 32 + 64) * 4 and pd.isna(buf["flop_fp32"])
    assert "arithmetic is not recorded" in buf["flop_fp32_source"]


def test_fused_moe_flops_come_from_the_routed_token_expert_pairs():
    """vLLM moe_forward in the graph case: T=32 tokens, top_k=4 from its TopK op, H=3072; the up GEMM writes
    [128, 2944] through a fused SwiGLU (2·2944 GEMM columns), the down GEMM [128, 3072]:
    2·128·3072·5888 + 2·128·2944·3072 FLOP. Bytes: an upper bound, all min(E, T·k) = 32 experts' mxfp4
    weights (the uint8 views [32, 1536, 5888] and [32, 1472, 3072], two values a byte, + one e8m0 scale
    byte per 32 values) read once, + the activations; the row says "upper bound"."""
    k = roofline.read(shared("traces/vllm_decode_full-graph/graph_execution.pt.trace.json.gz"))
    moe = k[k["kernel_name"] == "vllm::moe_forward"]
    assert len(moe) == 24
    assert (moe["flop_tensor"] == 2 * 128 * 3072 * 5888 + 2 * 128 * 2944 * 3072).all()
    packed = 32 * 1536 * 5888 + 32 * 1472 * 3072
    scales = 2 * packed // 32
    activations = (2 * 32 * 3072 + 2 * 128 * 2944 + 2 * 128 * 3072) * 2
    assert (moe["dram_bytes"] == packed + scales + activations).all()
    assert moe["dram_bytes_source"].str.contains("upper bound: mxfp4 weights").all()
    assert moe["dram_bytes_source"].str.contains("32 of 32 experts").all()
    assert (moe["tensor_path"] == "bf16").all()
    assert moe["precision_evidence"].str.contains("bf16xbf16xmxfp4").all()
    assert moe["precision_evidence"].str.contains("upcast").all()


def test_the_vllm_graph_case_has_flops_and_bytes_on_at_least_90_percent_of_its_gpu_time():
    """Issue 16's acceptance: MoE (upper-bound weights), paged attention (iteration annotation), the
    routing ops (their allocations), Inductor copies/pads (0 FLOP) are priced; only triton_poi_fused_0
    (its name says nothing of its arithmetic) is left: 99.9% of the 10.7 ms."""
    k = roofline.read(shared("traces/vllm_decode_full-graph/graph_execution.pt.trace.json.gz"))
    flops = k[["flop_fp64", "flop_fp32", "flop_fp16", "flop_tensor"]].notna().all(axis=1)
    both = flops & k["dram_bytes"].notna()
    assert k.loc[both, "duration_s"].sum() >= 0.99 * k["duration_s"].sum()
    left = set(k.loc[~both, "kernel_name"])
    assert left == {"triton_poi_fused_0"}, left
