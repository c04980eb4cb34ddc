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


# --- hand computations from published constants only (no value taken from the code under test) ---

H100_BF16, H100_HBM = 989.4e12, 3.35e12  # H100 SXM datasheet: dense bf16 tensor FLOP/s, HBM3 bytes/s
#: vocab × hidden of each model card: the embedding table a decode step gathers one row of
EMBED = {"llama-2-7b": 32000 * 4096, "qwen2.5-7b": 152064 * 3584, "llama-3-8b": 128256 * 4096}
HIDDEN = {"llama-2-7b": 4096, "qwen2.5-7b": 3584, "llama-3-8b": 4096}


@pytest.mark.parametrize("bits", [16, 8, 4])
@pytest.mark.parametrize("name", sorted(EMBED))
def test_dense_decode_step_reads_every_weight_but_the_embedding_table_once(name, bits):
    # batch 1: every layer weight, the final norm and the LM head once, plus one gathered embedding row
    dec = estimate(name, "H100 SXM", batch=1, weight_bits=bits).phases.query("phase == 'decode'").iloc[0]
    hand = (PUBLISHED[name] - EMBED[name] + HIDDEN[name]) * bits / 8
    assert dec["weight_bytes"] == pytest.approx(hand, rel=0.01)


def test_llama3_8b_tpot_ttft_and_intensity_at_the_roof_by_hand():
    layers, heads, kv_heads, head_dim, ctx = 32, 32, 8, 128, 512 + (128 + 1) / 2
    body = PUBLISHED["llama-3-8b"] - EMBED["llama-3-8b"]  # every weight a token multiplies
    kv = layers * 2 * kv_heads * head_dim * 2 * ctx  # K and V of the mean context, 2 bytes each
    flop = 2 * body + 4 * layers * heads * head_dim * ctx
    est = estimate("llama-3-8b", "h100-sxm", batch=[1, 8, 32], prompt=512, generate=128)
    sc = est.scaling.set_index("batch")
    # batch 1 decode: every op memory-bound, so TPOT = bytes / HBM bandwidth (activations < 0.1%)
    assert sc.loc[1, "tpot_s"] == pytest.approx((2 * body + kv) / H100_HBM, rel=0.002)
    assert sc.loc[1, "decode_intensity_flop_per_byte"] == pytest.approx(flop / (2 * body + kv), rel=0.002)
    assert sc.loc[1, "decode_tokens_per_s"] == pytest.approx(1 / sc.loc[1, "tpot_s"])
    # 8-bit weights halve the weight bytes: intensity about doubles (≈2 FLOP/byte)
    q8 = estimate("llama-3-8b", "h100-sxm", batch=1, prompt=512, generate=128, weight_bits=8).scaling.iloc[0]
    assert q8["decode_intensity_flop_per_byte"] == pytest.approx(flop / (body + kv), rel=0.002)
    # long prefill: TTFT is at least FLOPs / tensor peak (LM head on the last token only), and the
    # memory-bound norms and near-ridge projections add only a few percent
    p = 4096
    pre_flop = 2 * p * (body - EMBED["llama-3-8b"]) + 2 * EMBED["llama-3-8b"] + 4 * layers * heads * head_dim * p * (p + 1) / 2
    ttft = estimate("llama-3-8b", "h100-sxm", batch=1, prompt=p, generate=1).scaling.iloc[0]["ttft_s"]
    assert pre_flop / H100_BF16 <= ttft <= 1.05 * pre_flop / H100_BF16


def test_the_llm_command_object_through_clirunner_json_and_gpu_name_spellings():
    from click.testing import CliRunner

    from roofline.inference.command import llm

    outs = []
    for gpu in ("h100-sxm", "H100 SXM", "H100_SXM"):
        res = CliRunner().invoke(llm, ["--model", "Llama-3-8B", "--gpu", gpu, "--batch", "1,8",
                                       "--prompt", "16", "--generate", "16", "--format", "json"])
        assert res.exit_code == 0, res.output
        outs.append(json.loads(res.output))
    assert outs[0] == outs[1] == outs[2]
    out = outs[0]
    assert out["gpu"] == "H100 SXM" and [r["batch"] for r in out["scaling"]] == [1, 8]
    assert 300 < out["crossover_batch"] < 450  # the hand computation above pins it within 1
    assert out["weights_only_crossover_batch"] == math.ceil(H100_BF16 / H100_HBM)


@pytest.mark.parametrize("missing", ["hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size",
                                     "intermediate_size"])
def test_each_missing_required_field_is_named(missing):
    from roofline.inference import parse_config

    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}
    parse_config(cfg, "tiny")  # complete: parses
    del cfg[missing]
    with pytest.raises(ModelConfigError, match=missing):
        parse_config(cfg, "tiny")


def test_an_encoder_architecture_without_model_type_is_refused():
    from roofline.inference import parse_config

    with pytest.raises(ModelConfigError, match="architectures"):
        parse_config({"architectures": ["BertModel"], "hidden_size": 768, "intermediate_size": 3072,
                      "num_hidden_layers": 12, "num_attention_heads": 12, "vocab_size": 30522}, "bert")


def test_repeated_batch_sizes_are_one_row_each():
    res = _cli("llm", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "8,1,1", "--format", "json")
    assert res.returncode == 0, res.stderr
    assert [r["batch"] for r in json.loads(res.stdout)["scaling"]] == [1, 8]
