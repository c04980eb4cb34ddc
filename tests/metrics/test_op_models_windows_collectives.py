"""Op models issue 31 adds: sliding-window attention from its recorded window (else FLOPs flagged an upper
bound), collectives' output messages, torch 1.8's backward-weight convolutions from their caller's weight."""

from __future__ import annotations

import pytest

import roofline
from conftest import shared
from roofline.metrics.ops import cost

BF16 = "c10::BFloat16"


def _flash(s: int, left: str, right: str, causal: str = "True"):
    """``_flash_attention_forward`` as torch 2.6 records it (15 arguments): q, k, v [1, S, 64 heads, 64]."""
    return cost("aten::_flash_attention_forward", [[1, s, 64, 64]] * 3 + [[]] * 12,
                [BF16] * 3 + [""] * 2 + ["Scalar"] * 5 + ["", "Scalar", "Scalar", "", ""],
                ["", "", "", "", "", "0", "0", "0.", causal, "False", "", left, right, "", ""])


def test_a_sliding_window_layer_counts_only_the_pairs_in_its_window():
    """GPT-OSS's windowed layers: 128 keys per query (window_size_left=127, causal). For S = 4096 the pairs are
    Σ min(i+1, 128) = 128·129/2 + (4096−128)·128 = 516,160, against the full causal S²/2 = 8,388,608: FLOPs
    2·B·H·pairs·(Dqk+Dv) = 2·64·516,160·128; bytes (q, k, v, o once each) as without the window."""
    win, full = _flash(4096, "127", "0"), _flash(4096, "-1", "-1")
    pairs = 128 * 129 // 2 + (4096 - 128) * 128
    assert pairs == 516_160
    assert win.flops == 2 * 64 * pairs * 128 == 8_456_765_440
    assert full.flops == 2 * 64 * 4096 * 4096 * 128 // 2 and full.flops / win.flops == pytest.approx(16.25, rel=1e-3)
    assert win.bytes == full.bytes == 4 * 4096 * 64 * 64 * 2
    assert "sliding window left=127 right=0 (causal): 516160 query-key pairs" in win.formula
    # a window as wide as the sequence cuts nothing: the causal count (TraceLens' S²/2) stands
    assert _flash(100, "127", "0").flops == 2 * 64 * 100 * 100 * 128 // 2


def test_a_non_causal_window_counts_both_sides():
    """left = right = 2 over S = 8 keys: per query min(7, i+2) − max(0, i−2) + 1 = 3,4,5,5,5,5,4,3 = 34 pairs."""
    c = _flash(8, "2", "2", causal="False")
    assert c.flops == 2 * 64 * 34 * 128


def test_paged_attention_flops_say_they_are_an_upper_bound_for_a_window_layer():
    """vLLM and SGLang record no window: the FLOPs source says so, as the bytes source does."""
    k = roofline.read(shared("traces/vllm_decode_full-graph/graph_execution.pt.trace.json.gz"))
    paged = k[k["kernel_name"] == "vllm::unified_attention_with_output"]
    assert len(paged) > 0 and paged["flop_tensor"].notna().all()
    assert paged["flop_tensor_source"].str.contains("an upper bound for a sliding-window layer").all()
    assert paged["dram_bytes_source"].str.contains("upper bound for a sliding-window layer").all()


def test_an_all_gather_writes_its_output_message_and_reads_its_input():
    """B200, 8 ranks: _allgather_base of 25,136 bf16 in (50,272 B), 201,088 out (402,176 B, 8×): the rank reads
    its input and writes the gathered output, 452,448 B; before, only the 50,272 B input was counted."""
    k = roofline.read(shared("traces/torch_cuda12.9_b200_8rank-nccl_eager_rank0.pt.trace.json.gz"))
    ag = k[k["dram_bytes_source"].str.contains("_allgather_base", na=False)]
    assert len(ag) == 1
    assert ag["dram_bytes"].iloc[0] == 25_136 * 2 + 201_088 * 2 == 452_448
    assert "input read + output written" in ag["dram_bytes_source"].iloc[0]
    from roofline.metrics.ops import collective_cost

    assert collective_cost(100, None, "float")[0] == 400  # an older trace without Out msg nelems: the input only
    assert collective_cost(800, 100, "BFloat16")[0] == 1800  # reduce-scatter: reads 8× what it writes


def test_torch_1_8_backward_weight_convolutions_take_the_weight_their_caller_records():
    """ResNet-50 training, torch 1.8 era: cudnn_convolution_backward_weight records the weight's shape as an int
    list (not in the trace) and no dtypes; its caller cudnn_convolution_backward records input, grad_output and
    weight. All 318 get FLOPs (23% of GPU time); the 1×1 conv 512→2048 on 7×7 of batch 32:
    2·32·2048·7·7·512 = 3,288,334,336. Bytes stay unavailable: no dtype is recorded."""
    k = roofline.read(shared("traces/torch1.8-dev_gpu-unrecorded_resnet50_train_legacy-array.pt.trace.json.gz"))
    w = k[k["kernel_name"] == "aten::cudnn_convolution_backward_weight"]
    assert len(w) == 318 and w["flop_fp32"].notna().all()
    assert w["duration_s"].sum() / k["duration_s"].sum() == pytest.approx(0.233, abs=0.002)
    one = w[w["op_input_dims"] == "[[],[32,2048,7,7],[32,512,7,7],[],[],[],[],[],[],[]]"]
    assert len(one) > 0 and (one["flop_fp32"] == 2 * 32 * 2048 * 7 * 7 * 512).all()
    assert (one["flop_fp32"] == 3_288_334_336).all()
    assert w["flop_fp32_source"].str.contains("wgrad").all()
    assert w["dram_bytes_source"].str.contains("Input type not recorded").all()
