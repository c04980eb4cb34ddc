"""vLLM inference models without shared fixtures: paged attention from the iteration annotation, Inductor
kernels that only move data, the MoE's weight bytes (mxfp4 with scales) and its routing ops."""

from __future__ import annotations

import math

import pytest

from roofline.metrics.ops import inductor_moves_only
from roofline.metrics.ops.attention import iteration_stats, paged_cost
from roofline.metrics.ops.moe import callee_cost, moe_cost

ANNOTATION = "execute_3_context_1(sq2sk10sqsq4sqsk20)_generation_1(sq1sk7sqsq1sqsk7)"
BF16 = "c10::BFloat16"
UA = "vllm::unified_attention_with_output"


def test_iteration_annotation_sums():
    st = iteration_stats("prefix " + ANNOTATION)
    assert st == {"tokens": 3, "c_req": 1, "c_sq": 2, "c_sk": 10, "c_sqsq": 4, "c_sqsk": 20,
                  "g_req": 1, "g_sq": 1, "g_sk": 7, "g_sqsq": 1, "g_sqsk": 7}
    assert iteration_stats("execute_context_0(0)_generation_64(64)") is None  # the native one has no lengths


def test_paged_attention_from_the_iteration_sums():
    """A prefill chunk of 2 tokens over 10 (Σsq·sk = 20, Σsq² = 4) and one decode token over 7; 4 query heads,
    2 kv heads, head size 8: FLOPs 4·(2·20 − 4)·16 + 4·2·7·16; bytes q, o, own k/v of 3 tokens, cached k/v
    of (10 − 2) + (7 − 1) tokens, all bf16."""
    dims = [[3, 4, 8], [3, 2, 8], [3, 2, 8], [3, 4, 8], [], [], [], []]
    types = [BF16] * 4 + ["String", "", "", ""]
    c = paged_cost(UA, dims, types, ANNOTATION)
    assert c.flops == 4 * (2 * 20 - 4) * 16 + 4 * 2 * 7 * 16
    assert c.bytes == (3 * (4 * 16 + 2 * 16) + 14 * 2 * 16) * 2
    assert c.tensor_path == "bf16" and "upper bound for a sliding-window layer" in c.bytes_note
    assert paged_cost(UA, dims, types, None) is None
    assert paged_cost("vllm::unified_attention", dims, types, ANNOTATION) is None  # no schema shipped: not read
    padded = paged_cost(UA, [[4, 4, 8], [4, 2, 8], [4, 2, 8], [4, 4, 8], [], [], [], []], types, ANNOTATION)  # 4 rows, 3 tokens: not guessed
    assert math.isnan(padded.flops) and "padded" in padded.why


@pytest.mark.parametrize("name, moves", [
    ("triton_poi_fused__to_copy_1", True), ("triton_poi_fused_constant_pad_nd_moe_forward_0", True),
    ("triton_poi_fused_cat_clone_3", True), ("triton_poi_fused_0", False), ("triton_poi_fused_add_0", False),
    ("triton_poi_fused__to_copy_add_2", False), ("triton_poi_fused_moe_forward_0", False),
    ("triton_red_fused_sum_1", False), ("aten::copy_", False)])
def test_inductor_kernels_that_only_move_data(name, moves):
    assert inductor_moves_only(name) is moves


def _moe_children(weights):
    return [("TopK", None, ["", "2", "True", "1", "True", "", ""], None),
            ("aten::empty", None, ["[1, 8, 6]", "15"], None),
            ("aten::empty", None, ["[1, 1, 8, 4]", "15"], None),
            *weights]


def test_moe_bytes_need_the_weights_and_count_mxfp4_scales():
    """T=4 tokens, k=2, H=4, I=6 (SwiGLU: N_up=12), E=3 experts; mxfp4 weights viewed as uint8 [3, 2, 12] and
    [3, 3, 4] (two values a byte): bytes = min(3, 8) = all 3 experts' packed weights + one scale byte per
    32 values + activations; without the weight views the bytes are unavailable, saying why."""
    kernels = ("_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu",)
    views = [("aten::view", [[3, 2, 12], []], ["", "[3, 2, 12]"], ["unsigned char", "ScalarList"]),
             ("aten::view", [[3, 3, 4], []], ["", "[3, 3, 4]"], ["unsigned char", "ScalarList"])]
    c = moe_cost([[4, 4], [4, 3]], [BF16, BF16], _moe_children(views), kernels)
    assert c.flops == 2 * 8 * 4 * 12 + 2 * 8 * 6 * 4
    values = 3 * 4 * 12 + 3 * 6 * 4
    assert c.bytes == values / 2 + values / 32 + (2 * 4 * 4 + 2 * 8 * 6 + 2 * 8 * 4) * 2
    assert c.bytes_note.startswith("upper bound: mxfp4 weights") and "3 of 3 experts" in c.bytes_note
    bare = moe_cost([[4, 4], [4, 3]], [BF16, BF16], _moe_children([]), kernels)
    assert bare.flops == c.flops and math.isnan(bare.bytes) and "not recorded" in bare.why


def test_routing_ops_read_their_inputs_and_write_what_they_allocate():
    """TopK of [32, 32] bf16 logits, k=4 with softmax: 2048 B read; it allocates values [32, 4] bf16,
    indices [32, 4] int16 and a bitmatrix [1, 32] uint32 (c10 ScalarType 15, 2, 28); FLOPs 5 per kept value."""
    kids = [("aten::empty", None, ["[32, 4]", "15"], None), ("aten::empty", None, ["[32, 4]", "2"], None),
            ("aten::empty", None, ["[1, 32]", "28"], None)]
    dims = [[32, 32], [], [], [], [], [], []]
    types = [BF16, "Scalar", "Scalar", "Scalar", "Scalar", "", ""]
    c = callee_cost("TopK", dims, types, ["", "4", "True", "1", "True", "", ""], kids, ())
    assert c.bytes == 32 * 32 * 2 + 32 * 4 * 2 + 32 * 4 * 2 + 32 * 4
    assert c.flops == 5 * 32 * 4
    unknown = kids + [("aten::empty", None, ["[8]", "99"], None)]  # a dtype code we cannot size: no silent 0
    assert callee_cost("TopK", dims, types, ["", "4", "True", "1", "True", "", ""], unknown, ()) is None


def test_an_eager_paged_attention_op_takes_the_iteration_annotation_that_holds_it(tmp_path):
    """vLLM without full graphs (eager, or piecewise graphs: attention runs between the pieces): the
    unified_attention op lies inside the step's user_annotation on its thread; one decode token over 7."""
    import json

    import roofline

    op = {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1}
    dims = [[1, 4, 8], [1, 2, 8], [1, 2, 8], [1, 4, 8], [], [], [], []]
    step = "execute_1_context_0(sq0sk0sqsq0sqsk0)_generation_1(sq1sk7sqsq1sqsk7)"
    events = [
        {"ph": "X", "cat": "user_annotation", "name": step, "ts": 0, "dur": 100, "pid": 1, "tid": 1},
        {**op, "name": UA, "ts": 10, "dur": 20, "args": {"External id": 1, "Input Dims": dims,
                                                        "Input type": [BF16] * 4 + ["", "", "", ""]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 11, "dur": 1, "pid": 1, "tid": 1,
         "args": {"External id": 1, "correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "kernel_unified_attention_2d", "ts": 40, "dur": 3, "pid": 0, "tid": 7,
         "args": {"correlation": 5, "device": 0}},
        {**op, "name": UA, "ts": 200, "dur": 20, "args": {"External id": 2, "Input Dims": dims,  # outside any step
                                                         "Input type": [BF16] * 4 + ["", "", "", ""]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 201, "dur": 1, "pid": 1, "tid": 1,
         "args": {"External id": 2, "correlation": 6}},
        {"ph": "X", "cat": "kernel", "name": "kernel_unified_attention_2d", "ts": 240, "dur": 3, "pid": 0, "tid": 7,
         "args": {"correlation": 6, "device": 0}}]
    p = tmp_path / "eager.pt.trace.json"
    p.write_text(json.dumps({"traceEvents": events, "deviceProperties": [
        {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}]}))
    k = roofline.read(p).sort_values("kernel_id")
    inside, outside = k.iloc[0], k.iloc[1]
    assert inside["flop_tensor"] == 4 * 2 * 7 * 16
    assert inside["dram_bytes"] == (1 * (4 * 16 + 2 * 16) + 6 * 2 * 16) * 2
    assert math.isnan(outside["flop_tensor"]) and "context lengths" in outside["flop_tensor_source"]


def test_an_inductor_kernel_that_may_gather_has_no_bytes_rather_than_a_whole_table():
    """triton_poi_fused_0 of the graph case takes 32 int token ids and the [201088, 2880] bf16 embedding table:
    counting every buffer once gave 1.2 GB in 10.6 µs; an int tensor beside buffers of other sizes may index
    them, so the bytes are unavailable. Same-size int elementwise work keeps its bytes; copies keep 0 FLOP."""
    from roofline.metrics.ops import cost

    gather = cost("triton_poi_fused_0", [[32], [201088, 2880], [32, 2880], []], ["int", BF16, BF16, "Scalar"])
    assert math.isnan(gather.bytes) and "may gather" in gather.why
    add = cost("triton_poi_fused_add_0", [[32], [32], []], ["int", "int", "Scalar"])
    assert add.bytes == 2 * 32 * 4 and math.isnan(add.flops)
    copy = cost("triton_poi_fused__to_copy_1", [[131072, 64], [131072, 64], []], ["float", BF16, "Scalar"])
    assert copy.flops == 0 and copy.bytes == 131072 * 64 * 6
