"""roofline llm: parameter counts, decode/prefill bounds, FLOPs per token and the decode crossover
against hand computations; config errors; the CLI with a measured trace."""

from __future__ import annotations

import json
import math

import pytest

import roofline
from roofline.hardware.specs import require
from roofline.inference import ModelConfigError, estimate, load_model
from roofline.inference.plot import measured_point

from conftest import OWN, shared
from test_errors_cli import _cli

#: published parameter counts (model cards / safetensors totals; Mixtral: total and active)
PUBLISHED = {"llama-2-7b": 6.738e9, "llama-2-13b": 13.016e9, "llama-2-70b": 68.977e9, "llama-3-8b": 8.030e9,
             "llama-3-70b": 70.554e9, "mistral-7b": 7.242e9, "qwen2.5-7b": 7.616e9, "mixtral-8x7b": 46.703e9}
LLM = OWN / "llm"
QWEN_TRACE = "traces/torch2.6_h100_qwen1.5-0.5b_infer_flops-flag.pt.trace.json.gz"


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_weight_bytes_are_published_parameters_times_bytes_per_weight(name):
    m = load_model(name)
    assert m.params == pytest.approx(PUBLISHED[name], rel=0.01)
    for bits in (16, 8, 4):
        est = estimate(name, "H100 SXM", weight_bits=bits, act_bits=16)
        assert est.weight_bytes == pytest.approx(PUBLISHED[name] * bits / 8, rel=0.01)


def test_mixtral_active_parameters_and_its_decode_weight_traffic():
    m = load_model("Mixtral-8x7B")
    assert m.active_params == pytest.approx(12.9e9, rel=0.01)
    dec = estimate(m, "h100-sxm", batch=1).phases.query("phase == 'decode'").iloc[0]
    # batch 1 touches 2 of 8 experts: every active weight except the embedding table, once
    assert dec["weight_bytes"] == pytest.approx(2 * (m.active_params - m.embedding_params), rel=0.001)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_decode_at_batch_1_is_memory_bound_near_1_to_2_flop_per_byte(name):
    sc = estimate(name, "h100-sxm", batch=1, prompt=512, generate=128).scaling.iloc[0]
    assert sc["decode_bound"] == "memory"
    assert 0.9 <= sc["decode_intensity_flop_per_byte"] <= 2.0


def test_long_prefill_is_compute_bound_on_h100():
    for name in ("llama-3-8b", "llama-2-70b", "mistral-7b"):
        sc = estimate(name, "h100-sxm", batch=1, prompt=4096, generate=1).scaling.iloc[0]
        assert sc["prefill_bound"] == "compute" and sc["prefill_intensity_flop_per_byte"] > 295


def test_decode_flops_per_token_are_twice_the_parameters_plus_attention():
    m = load_model("llama-3-8b")
    prompt, generate = 1000, 1
    ctx = prompt + 1  # mean context of one generated token
    dec = estimate(m, "h100-sxm", batch=1, prompt=prompt, generate=generate).phases.query("phase == 'decode'").iloc[0]
    hand = 2 * (m.params - m.embedding_params) + 4 * m.layers * m.heads * m.head_dim * ctx
    # what is left: norms and softmax, a few FLOPs per element
    assert dec["flop"] == pytest.approx(hand, rel=0.002)
    assert dec["flop"] > hand


def test_decode_crossover_batch_matches_a_hand_computation():
    m, spec = load_model("llama-3-8b"), require("H100 SXM")
    ridge = spec.figures["tensor_bf16"].flop_per_s / spec.dram_bytes_per_s  # 989.4 TFLOP/s / 3.35 TB/s
    prompt, generate = 16, 16
    ctx = prompt + (generate + 1) / 2
    d, hd, heads, layers = m.hidden, m.head_dim, m.heads, m.layers
    weights = 2 * (m.params - m.embedding_params)  # bytes read once per step, whatever the batch
    # per sequence and step: FLOPs (matmuls, QK^T and PV, softmax 5/score, RMS norms 4/element) ...
    flop_per_seq = (2 * (m.params - m.embedding_params) + 4 * layers * heads * hd * ctx + 5 * layers * heads * ctx
                    + 4 * d * (2 * layers + 1))
    # ... KV cache: K and V of the context read, the new token's written (2 bytes each) ...
    kv_per_seq = 2 * layers * m.kv_heads * hd * 2 * (ctx + 1)
    # ... activations (2 bytes): per layer 11·d (norm in/out x2, q/k/v/o, MLP in/out), 4·H·hd
    # (q out, q read by attention, attention out, o in), 3·ff (gate/up out, down in); embedding row
    # gathered and written, final norm, LM head in/out
    act_per_seq = 2 * (layers * (11 * d + 4 * heads * hd + 3 * m.intermediate) + 2 * d + 2 * d + d + m.vocab)
    hand = math.ceil(ridge * weights / (flop_per_seq - ridge * (kv_per_seq + act_per_seq)))
    est = estimate(m, "h100-sxm", batch=1, prompt=prompt, generate=generate)
    assert abs(est.crossover_batch - hand) <= 1
    assert est.weights_only_crossover_batch == math.ceil(ridge)  # 2 bytes per weight, 2 FLOPs per weight
    # at 576 tokens of context the KV cache alone keeps Llama-3-8B decode under the ridge
    long = estimate(m, "h100-sxm", batch=1, prompt=512, generate=128)
    assert long.crossover_batch is None and long.crossover_note.startswith("never")


def test_gqa_flash_and_tensor_parallel_terms():
    m = load_model("llama-2-70b")  # 64 heads, 8 KV heads
    ops = estimate(m, "h100-sxm", batch=4, prompt=256, generate=8).ops
    pre = ops[(ops["phase"] == "prefill")].set_index("op")
    assert pre.loc["k_proj", "kv_bytes"] * m.heads / m.kv_heads == pytest.approx(4 * 256 * m.heads * m.head_dim * 2)
    unfused = estimate(m, "h100-sxm", batch=4, prompt=256, generate=8, flash=False).ops
    upre = unfused[unfused["phase"] == "prefill"].set_index("op")
    pairs = 256 * 257 / 2
    score_bytes = 4 * m.heads * pairs * 2  # batch × heads × pairs × 2 bytes
    extra = (upre.loc["attn_scores", "act_bytes"] - pre.loc["attn_scores", "act_bytes"]
             + upre.loc["attn_softmax", "act_bytes"] + upre.loc["attn_output", "act_bytes"] - pre.loc["attn_output", "act_bytes"])
    assert extra == pytest.approx(4 * score_bytes)  # written, read + written by softmax, read by PV
    tp = estimate(m, "h100-sxm", batch=4, prompt=256, generate=8, tp=4)
    assert tp.weight_bytes == pytest.approx(estimate(m, "h100-sxm").weight_bytes / 4)
    tpre = tp.ops[tp.ops["phase"] == "prefill"].set_index("op")
    assert tpre.loc["allreduce_attn", "link_bytes"] == pytest.approx(2 * 3 / 4 * 4 * 256 * m.hidden * 2)
    assert "link" in tp.notes[-1] or "--link-gbps" in tp.notes[-1]


@pytest.mark.parametrize("fixture, field", [
    ("bert-base.config.json", "model_type"), ("t5-small.config.json", "is_encoder_decoder"),
    ("no-intermediate.config.json", "intermediate_size"),
])
def test_configs_that_are_not_decoder_only_or_lack_a_field_name_it(fixture, field):
    with pytest.raises(ModelConfigError, match=field):
        load_model(LLM / fixture)
    res = _cli("llm", "--model", LLM / fixture, "--gpu", "h100-sxm")
    assert res.returncode == 1 and field in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_cli_example_and_measured_trace(tmp_path):
    res = _cli("llm", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "1,8,32", "--prompt", "512",
               "--generate", "128", "-o", tmp_path)
    assert res.returncode == 0, res.stderr
    assert "decode crossover" in res.stdout and "TTFT" in res.stdout
    for name in ("llm-roofline.png", "llm-batch-scaling.png", "llm-ops.csv", "llm-phases.csv", "llm-scaling.csv"):
        assert (tmp_path / name).stat().st_size > 0
    trace = shared(QWEN_TRACE)
    res = _cli("llm", "--model", LLM / "qwen1.5-0.5b.config.json", "--gpu", "h100-sxm", "--measured", trace,
               "--format", "json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    direct = measured_point(roofline.analyze(roofline.read(trace)))
    assert out["measured"]["duration_s"] == pytest.approx(direct["duration_s"])
    assert out["measured"]["flop"] == pytest.approx(direct["flop"])
    assert out["params"] == pytest.approx(0.464e9, rel=0.01)  # Qwen1.5-0.5B, tied embeddings
