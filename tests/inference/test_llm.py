"""roofline llm: parameter counts, decode/prefill bounds, FLOPs per token and the decode crossover
against hand computations; the GEMM FLOPs of a real trace at its own workload; config errors; the
CLI with a measured trace; decode-step accounting, sequence-length sweeps and the charts' points."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import roofline
from conftest import OWN, shared
from conftest import cli as _cli
from roofline.hardware.names import require
from roofline.inference import ModelConfigError, estimate, load_model
from roofline.inference.plot import measured_point

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
    ctx = prompt + generate / 2  # the G-1 decode steps have contexts P+1 ... P+G-1
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
    assert est.crossover_batch == hand  # 369.6 -> 370
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


@pytest.mark.parametrize("fixture, total, active", [
    ("qwen3-30b-a3b", 30.5e9, 3.3e9), ("qwen1.5-moe-a2.7b", 14.3e9, 2.7e9)])
def test_qwen_moe_experts_use_moe_intermediate_size_and_the_shared_expert(fixture, total, active):
    """Qwen-MoE configs: intermediate_size is the dense width, each expert is moe_intermediate_size wide;
    Qwen1.5-MoE adds an always-on shared expert (shared_expert_intermediate_size, with a 1-wide gate).
    Totals and active counts as the model cards publish them (30.5B/3.3B, 14.3B/2.7B)."""
    m = load_model(LLM / f"{fixture}.config.json")
    assert m.params == pytest.approx(total, rel=0.01) and m.active_params == pytest.approx(active, rel=0.02)
    d, e = 2048, 3 * 2048 * m.intermediate
    shared = (3 * d * 5632 + d) if fixture.startswith("qwen1.5") else 0
    qkv_bias = 3 * d if fixture.startswith("qwen1.5") else 0
    attn = d * m.heads * m.head_dim * 2 + 2 * d * m.kv_heads * m.head_dim + qkv_bias
    per_layer = attn + m.experts * e + d * m.experts + shared + 2 * d
    assert m.params == m.layers * per_layer + 2 * 151936 * d + d
    assert m.active_params == m.params - m.layers * (m.experts - m.experts_per_token) * e
    dec = estimate(m, "h100-sxm", batch=1).phases.query("phase == 'decode'").iloc[0]
    assert dec["weight_bytes"] == 2 * (m.active_params - m.embedding_params) + 2 * d  # + one gathered row


def test_gpt2_config_with_null_n_inner_counts_every_parameter():
    """GPT-2 small: n_inner null means 4 x n_embd (HF GPT2MLP); biases on every linear, LayerNorm weight and
    bias, a learned position table, tied LM head (the config has no tie key; GPT2Config ties): 124,439,808
    parameters, the count of the published checkpoint."""
    m = load_model(LLM / "gpt2.config.json")
    assert (m.intermediate, m.tied_embeddings, m.positions) == (3072, True, 1024)
    d, v, L = 768, 50257, 12
    per_layer = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d)
    assert m.params == (v + 1024) * d + L * per_layer + 2 * d == 124_439_808
    dec = estimate(m, "h100-sxm", batch=1, prompt=128, generate=2).phases.query("phase == 'decode'").iloc[0]
    # bf16: every layer weight and the final norm once, the tied table once as the LM head, two gathered rows
    assert dec["weight_bytes"] == 2 * (L * per_layer + 2 * d) + 2 * v * d + 2 * 2 * d
    ctx = 129  # the one decode step of generate=2 attends over prompt + 1
    attn = 2 * 12 * ctx * 64 * 2 + 5 * 12 * ctx
    linears = 3 * (2 * d * d + d) + (2 * d * d + d) + (2 * d * 4 * d + 4 * d) + (2 * 4 * d * d + d)
    assert dec["flop"] == pytest.approx(L * (linears + attn + 2 * 4 * d) + d + 4 * d + 2 * d * v, rel=1e-12)


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
    layers, heads, kv_heads, head_dim, ctx = 32, 32, 8, 128, 512 + 128 / 2  # mean of 513 ... 639
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

    from roofline.cli.llm import llm

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


# --- decode-step accounting, a real trace at its own workload, sweeps, charts, peaks, names ---

QWEN_CFG = LLM / "qwen1.5-0.5b.config.json"


def _trace_events(path):
    """The trace's events read with gzip + json only (independent of roofline's trace reader)."""
    import gzip

    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


@pytest.mark.parametrize("generate, ctx", [(1, 101), (2, 101), (3, 101.5), (128, 164)])
def test_generated_tokens_take_g_minus_1_decode_steps_at_their_mean_context(generate, ctx):
    # the prefill yields token 1; tokens 2..G come from decode steps with contexts P+1 ... P+G-1
    est = estimate("llama-3-8b", "h100-sxm", batch=1, prompt=100, generate=generate)
    dec = est.phases.query("phase == 'decode'").iloc[0]
    assert dec["seq_len"] == ctx
    sc = est.scaling.iloc[0]
    assert sc["request_time_s"] == pytest.approx(sc["ttft_s"] + (generate - 1) * sc["tpot_s"])
    if generate == 2:  # one step: K and V of 101 tokens read, the new token's K and V written, 2 bytes each
        assert dec["kv_bytes"] == pytest.approx(32 * (2 * 8 * 128 * 2 * 101 + 2 * 8 * 128 * 2))


def test_gemm_flops_match_a_real_qwen_trace_at_its_own_workload():
    trace = shared(QWEN_TRACE)
    ops = [e for e in _trace_events(trace) if e.get("cat") == "cpu_op"]
    # the profiled workload, from the embedding lookup's input: [batch, sequence]
    batch, seq = next(e["args"]["Input Dims"][1] for e in ops if e["name"] == "aten::embedding")
    assert (batch, seq) == (16, 559)
    # every projection and MLP GEMM of the trace by hand from its shapes: mm 2·M·K·N, addmm (+bias) 2·M·K·N + M·N
    dims = [(e["name"], e["args"]["Input Dims"]) for e in ops if e["name"] in ("aten::mm", "aten::addmm")]
    hand = sum(2 * d[0][0] * d[0][1] * d[1][1] if n == "aten::mm"
               else 2 * d[1][0] * d[1][1] * d[2][1] + d[1][0] * d[2][1] for n, d in dims)
    assert len(dims) == 24 * 7  # q, k, v (addmm, biased), o, gate, up, down per layer
    pre = estimate(QWEN_CFG, "h100-sxm", batch=batch, prompt=seq, generate=1).ops.query("phase == 'prefill'")
    linear = pre[pre["op"].isin(["q_proj", "k_proj", "v_proj", "o_proj", "mlp_gate", "mlp_up", "mlp_down"])]
    assert (linear["flop"] * linear["count"]).sum() == pytest.approx(hand, rel=1e-12)
    # causal attention, QKᵀ and PV: 2 × 2·B·H·hd per query-key pair, P(P+1)/2 pairs
    attn = pre.set_index("op").loc["attn_output"]
    assert 2 * attn["flop"] == pytest.approx(4 * batch * 16 * 64 * seq * (seq + 1) / 2)


def test_measured_gap_at_the_traces_workload_through_the_command_object():
    from click.testing import CliRunner

    from roofline.cli.llm import llm

    trace = shared(QWEN_TRACE)
    gpu_s = sum(e["dur"] for e in _trace_events(trace) if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")) * 1e-6
    args = ["--model", str(QWEN_CFG), "--gpu", "h100-sxm", "--generate", "1", "--measured", str(trace)]
    res = CliRunner().invoke(llm, [*args, "--batch", "16", "--prompt", "559", "--format", "json"])
    assert res.exit_code == 0, res.output
    gap = json.loads(res.output)["measured"]
    assert gap["duration_s"] == pytest.approx(gpu_s)  # every GPU event of the trace, by hand
    assert gap["model_batch"] == 16 and gap["model_prompt"] == 559
    assert gap["time_ratio"] == pytest.approx(gap["duration_s"] / gap["model_time_at_roof_s"])
    # Qwen2Model (no LM head) at the same workload: the model's prefill FLOPs are the trace's within 1%
    assert gap["flop_ratio"] == pytest.approx(1.0, abs=0.01)
    assert gap["time_ratio"] > 1  # nothing runs above the roof
    assert gap["unknown_flop_kernels"] > 0 and "lower bound" in gap["note"]  # kernels launched before the window
    text = CliRunner().invoke(llm, [*args, "--batch", "16", "--prompt", "559"]).output
    assert "measured / model: time" in text and "differ from the model's" not in text
    wrong = CliRunner().invoke(llm, [*args, "--batch", "1", "--prompt", "512"]).output
    assert "differ from the model's by more than 10%" in wrong


def test_charts_draw_the_frames_points():
    from roofline.inference.plot import measured_ops, roofline_figure, scaling_figure

    est = estimate(QWEN_CFG, "h100-sxm", batch=[1, 16], prompt=559, generate=1)
    result = roofline.analyze(roofline.read(shared(QWEN_TRACE)))
    fig = roofline_figure(est, result)
    drawn = {a.get_gid(): a for a in fig.axes[0].get_children() if a.get_gid()}
    for phase in ("prefill", "decode"):
        rows = est.phases.query("phase == @phase")
        pts = np.asarray(drawn[f"model:{phase}"].get_offsets())
        assert pts[:, 0].tolist() == pytest.approx(rows["intensity_flop_per_byte"].tolist())
        assert pts[:, 1].tolist() == pytest.approx((rows["flop"] / rows["step_time_s"]).tolist())
    pt = measured_point(result)
    assert np.asarray(drawn["measured:program"].get_offsets())[0].tolist() == pytest.approx(
        [pt["intensity_flop_per_byte"], pt["achieved_flop_per_s"]])
    assert len(drawn["measured:ops"].get_offsets()) == len(measured_ops(result)) > 100
    ests = [est, estimate(QWEN_CFG, "h100-sxm", batch=[1, 16], prompt=2048, generate=1)]
    lines = {a.get_gid(): a for ax in scaling_figure(ests).axes for a in ax.get_lines() if a.get_gid()}
    for e in ests:
        assert list(lines[f"scaling:tokens:{e.prompt}"].get_ydata()) == pytest.approx(
            e.scaling["decode_tokens_per_s"].tolist())


def test_sequence_length_sweep_frames_and_cli():
    from roofline.inference import sweep

    short, long = sweep("llama-3-8b", "h100-sxm", batch=[1, 8], prompt=[4096, 512], generate=2)
    assert (short.prompt, long.prompt) == (512, 4096)
    assert set(long.ops["prompt"]) == set(long.phases["prompt"]) == set(long.scaling["prompt"]) == {4096}
    # one decode step at context P+1: the longer prompt reads 3584 more tokens of K and V per sequence
    d = {e.prompt: e.phases.query("phase == 'decode' and batch == 1").iloc[0] for e in (short, long)}
    assert d[4096]["kv_bytes"] - d[512]["kv_bytes"] == pytest.approx(32 * 2 * 8 * 128 * 2 * 3584)
    from click.testing import CliRunner

    from roofline.cli.llm import llm

    res = CliRunner().invoke(llm, ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "1,8", "--prompt",
                                   "512,4096", "--generate", "2", "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [(r["prompt"], r["batch"]) for r in out["scaling"]] == [(512, 1), (512, 8), (4096, 1), (4096, 8)]
    assert [c["prompt"] for c in out["crossover"]] == [512, 4096]


def test_peaks_name_their_source_and_the_clock_the_figure_implies():
    est = estimate("llama-3-8b", "h100-sxm")
    # 989.4 TFLOP/s ÷ (132 SMs × 4096 FLOP/cycle/SM) = 1.830 GHz: the datasheet's tensor clock, not the 1.98 GHz boost
    assert "1830 MHz" in est.hw.tensor_source and "dense" in est.hw.tensor_source
    assert "datasheet" in est.hw.hbm_source
    assert est.hw.ridge_flop_per_byte == pytest.approx(H100_BF16 / H100_HBM)


def test_model_names_and_config_files_resolve():
    ref = load_model("llama-3-8b")
    for spelling in ("llama3-8b", "Llama 3 8B", "LLAMA_3_8B", "Llama-3-8B"):
        assert load_model(spelling) == ref
    assert load_model(QWEN_CFG).name == "qwen1.5-0.5b"


def test_a_config_that_is_not_a_json_object_is_refused(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ModelConfigError, match="JSON object"):
        load_model(bad)


def test_tensor_parallel_all_reduce_time_over_the_link_by_hand():
    # Llama-2-70B, batch 4, decode, TP 4 over 300 GB/s: 2 ring all-reduces per layer of 2·(T-1)/T·N·d·2 bytes
    est = estimate("llama-2-70b", "h100-sxm", batch=4, prompt=256, generate=8, tp=4, link_gbps=300)
    dec = est.phases.query("phase == 'decode'").iloc[0]
    link_bytes = 80 * 2 * (2 * 3 / 4 * 4 * 8192 * 2)
    assert dec["link_bytes"] == pytest.approx(link_bytes)
    assert dec["link_time_s"] == pytest.approx(link_bytes / 300e9)
    assert dec["step_time_s"] == pytest.approx(dec["time_at_roof_s"] + link_bytes / 300e9)
