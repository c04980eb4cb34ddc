"""Analytical roofline of LLM inference: FLOPs and bytes per layer and op, for prefill and decode.

Conventions (docs/llm.md says why):

* A linear op on N tokens, k inputs, n outputs: 2·N·k·n FLOPs; reads its k·n weights once per
  step; reads N·k and writes N·n activations. K and V projections write to the KV cache instead.
* Attention, causal: prefill has P(P+1)/2 query-key pairs per head, decode S (the context, new
  token included); QKᵀ and PV each 2·pairs·head_dim FLOPs per head; K and V are read from the cache
  once per step. Unfused attention also writes the score matrix, and softmax reads and writes it.
* The prefill computes the logits of the first generated token, so G generated tokens take G-1
  decode steps, with contexts P+1 ... P+G-1 (new token included). Decode is evaluated at their mean
  P + G/2 (every term is linear in the context, so this is the mean step wherever an op's bound
  does not flip); with G = 1 there is no decode step and TPOT is that of the next one, context P+1.
* Mixture of experts: a token runs ``experts_per_token`` experts; a step reads the weights of the
  experts its N tokens touch, E·(1-(1-k/E)^N) of them under uniform routing.
* Tensor parallelism over T GPUs: figures are per GPU (weights, heads and FLOPs ÷ T) plus two
  all-reduces of N·d activations per layer, 2·(T-1)/T·N·d bytes each over the link (ring).
* Time at the roof per op is max(FLOPs / peak, bytes / HBM bandwidth): matmuls against the tensor
  peak of the activation precision, norms and softmax against the CUDA-core peak. Ops do not
  overlap; link time is added when a link bandwidth is given. This is the same rule as
  :func:`roofline.analyze` (time at the roof = FLOPs / min(peak, I × BW)), written out here because
  analyze() takes a profile's canonical kernel frame (provenance, per-level counters), not a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from roofline.errors import RooflineError
from roofline.hardware.names import require
from roofline.hardware.specs import GpuSpec
from roofline.inference.configs import ModelConfig, load_model

#: FLOPs per element of an RMS norm (square, sum, scale, weight) and of a softmax (max, sub, exp, sum, div)
NORM_FLOP_PER_ELEMENT = 4
SOFTMAX_FLOP_PER_ELEMENT = 5
_TENSOR_KEYS = {32: ("tensor_tf32", "fp32"), 16: ("tensor_bf16", "tensor_fp16"), 8: ("tensor_fp8", "tensor_int8"),
                4: ("tensor_fp4", "tensor_int4", "tensor_fp8")}
_VECTOR_KEYS = ("fp32",)


class InferenceModelError(RooflineError):
    """Options the analytical model cannot honour (bad bit width, TP that does not divide heads...)."""


@dataclass(frozen=True)
class Hardware:
    name: str
    tensor_flop_per_s: float
    tensor_source: str
    vector_flop_per_s: float
    vector_source: str
    hbm_bytes_per_s: float
    hbm_source: str
    link_bytes_per_s: float | None = None

    @property
    def ridge_flop_per_byte(self) -> float:
        return self.tensor_flop_per_s / self.hbm_bytes_per_s


def hardware(gpu: str | GpuSpec, act_bits: int = 16, link_gbps: float | None = None) -> Hardware:
    """The spec-table roofs for a GPU, at the published (boost-clock) figures."""
    spec = gpu if isinstance(gpu, GpuSpec) else require(gpu)
    keys = _TENSOR_KEYS.get(act_bits)
    if keys is None:
        raise InferenceModelError(f"activation bits must be one of {sorted(_TENSOR_KEYS)}, got {act_bits}")
    tkey = next((k for k in keys if k in spec.figures), None)
    vkey = next((k for k in _VECTOR_KEYS if k in spec.figures), None)
    if tkey is None or vkey is None:
        raise InferenceModelError(f"{spec.name}: the spec table has no {' or '.join(keys)} figure for "
                                  f"{act_bits}-bit activations")
    return Hardware(spec.name, spec.figures[tkey].flop_per_s, _figure_note(spec, tkey),
                    spec.figures[vkey].flop_per_s, _figure_note(spec, vkey),
                    spec.dram_bytes_per_s, f"{spec.dram_source}; as published",
                    link_gbps * 1e9 if link_gbps else None)


def _figure_note(spec: GpuSpec, key: str) -> str:
    """Source and clock basis of a published figure: the clock it implies, not the boost clock
    (H100 SXM tensor figures are quoted at 1.83 GHz, below its 1.98 GHz boost)."""
    f = spec.figures[key]
    return (f"{key}: {spec.figure_source(key)}; dense, as published (implies "
            f"{spec.implied_clock_hz(key) / 1e6:.0f} MHz = {f.tflops:g} T/s ÷ ({spec.sm_count} SMs × "
            f"{f.flop_per_cycle_per_sm:g} FLOP/cycle/SM))")


@dataclass(frozen=True)
class Precision:
    weight_bits: int = 16
    act_bits: int = 16
    kv_bits: int = 16

    def __post_init__(self) -> None:
        for name in ("weight_bits", "act_bits", "kv_bits"):
            if getattr(self, name) not in (4, 8, 16, 32):
                raise InferenceModelError(f"{name} must be 4, 8, 16 or 32, got {getattr(self, name)}")


def _op(name: str, flop: float, weight: float = 0.0, act: float = 0.0, kv: float = 0.0, tensor: bool = True,
        comm: float = 0.0) -> dict[str, Any]:
    return {"op": name, "flop": flop, "weight_bytes": weight, "act_bytes": act, "kv_bytes": kv,
            "uses_tensor_cores": tensor, "link_bytes": comm}


def layer_ops(m: ModelConfig, batch: int, new_tokens: int, context: float, prec: Precision, flash: bool = True,
              tp: int = 1) -> list[dict[str, Any]]:
    """One transformer layer's ops for one step, per GPU (every layer is the same)."""
    wb, ab, kb = prec.weight_bits / 8, prec.act_bits / 8, prec.kv_bits / 8
    n = batch * new_tokens
    d, hd = m.hidden, m.head_dim
    heads, kv_heads = m.heads / tp, max(m.kv_heads / tp, 1.0)  # fewer KV heads than GPUs: replicated
    pairs = new_tokens * (new_tokens + 1) / 2 if new_tokens > 1 else context
    kv_len = new_tokens if new_tokens > 1 else context

    def linear(name: str, k: float, out: float, bias: bool = False, to_cache: bool = False) -> dict[str, Any]:
        weights = k * out + (out if bias else 0)
        flop = 2 * n * k * out + (n * out if bias else 0)
        return _op(name, flop, weights * wb, n * k * ab + (0 if to_cache else n * out * ab),
                   n * out * kb if to_cache else 0.0)

    ops = [_op("attn_norm", NORM_FLOP_PER_ELEMENT * n * d, m.norm_params * wb, 2 * n * d * ab, tensor=False),
           linear("q_proj", d, heads * hd, m.qkv_bias),
           linear("k_proj", d, kv_heads * hd, m.qkv_bias, to_cache=True),
           linear("v_proj", d, kv_heads * hd, m.qkv_bias, to_cache=True)]
    score_elems = batch * heads * pairs
    softmax_flop = SOFTMAX_FLOP_PER_ELEMENT * score_elems
    scores = _op("attn_scores", 2 * score_elems * hd + (softmax_flop if flash else 0), 0.0,
                 n * heads * hd * ab + (0 if flash else score_elems * ab), batch * kv_heads * hd * kv_len * kb)
    ops.append(scores)
    if not flash:  # the score matrix goes to memory: softmax reads and writes it
        ops.append(_op("attn_softmax", softmax_flop, 0.0, 2 * score_elems * ab, tensor=False))
    ops.append(_op("attn_output", 2 * score_elems * hd, 0.0, n * heads * hd * ab + (0 if flash else score_elems * ab),
                   batch * kv_heads * hd * kv_len * kb))
    ops.append(linear("o_proj", heads * hd, d, m.linear_bias))
    if tp > 1:
        ops.append(_op("allreduce_attn", 0.0, comm=2 * (tp - 1) / tp * n * d * ab, tensor=False))
    ops.append(_op("mlp_norm", NORM_FLOP_PER_ELEMENT * n * d, m.norm_params * wb, 2 * n * d * ab, tensor=False))
    ff = m.intermediate / tp
    k_exp = m.experts_per_token
    touched = m.experts * (1 - (1 - k_exp / m.experts) ** n) if m.experts > 1 else 1.0
    if m.experts > 1:
        ops.append(linear("router", d, m.experts / tp))
    names = ("mlp_gate", "mlp_up", "mlp_down") if m.gated_mlp else ("mlp_up", "mlp_down")
    for name in names:
        k_in, k_out = (ff, d) if name == "mlp_down" else (d, ff)
        bias = k_out if m.linear_bias else 0  # GPT-2: one add per output element
        ops.append(_op(name, (2 * k_in + (1 if bias else 0)) * n * k_exp * k_out, touched * (k_in * k_out + bias) * wb,
                       n * k_exp * (k_in + k_out) * ab))
    if m.shared_intermediate:  # every token runs the shared expert, scaled by its own sigmoid gate
        ops.append(linear("shared_expert_gate", d, 1))
        ff_s = m.shared_intermediate / tp
        for name in ("shared_gate", "shared_up", "shared_down"):
            k_in, k_out = (ff_s, d) if name == "shared_down" else (d, ff_s)
            ops.append(_op(name, 2 * n * k_in * k_out, k_in * k_out * wb, n * (k_in + k_out) * ab))
    if tp > 1:
        ops.append(_op("allreduce_mlp", 0.0, comm=2 * (tp - 1) / tp * n * d * ab, tensor=False))
    return ops


def model_ops(m: ModelConfig, batch: int, new_tokens: int, prec: Precision, tp: int = 1) -> list[dict[str, Any]]:
    """The ops outside the layers: embedding gather, final norm, LM head (logits of the last token)."""
    wb, ab = prec.weight_bits / 8, prec.act_bits / 8
    n = batch * new_tokens
    d, vocab = m.hidden, m.vocab / tp
    tables = 2 if m.positions else 1  # GPT-2 also gathers N rows of its position table and adds them
    return [_op("embed", (tables - 1) * n * d, tables * n * d * wb, n * d * ab, tensor=False),  # rows, not tables
            _op("final_norm", NORM_FLOP_PER_ELEMENT * batch * d, m.norm_params * wb, 2 * batch * d * ab, tensor=False),
            _op("lm_head", 2 * batch * d * vocab, d * vocab * wb, batch * (d + vocab) * ab)]


def _roofline(ops: pd.DataFrame, hw: Hardware) -> pd.DataFrame:
    ops["total_bytes"] = ops["weight_bytes"] + ops["act_bytes"] + ops["kv_bytes"]
    with np.errstate(divide="ignore", invalid="ignore"):
        ops["intensity_flop_per_byte"] = ops["flop"] / ops["total_bytes"]
    peak = np.where(ops["uses_tensor_cores"], hw.tensor_flop_per_s, hw.vector_flop_per_s)
    compute_s, memory_s = ops["flop"] / peak, ops["total_bytes"] / hw.hbm_bytes_per_s
    link_s = ops["link_bytes"] / hw.link_bytes_per_s if hw.link_bytes_per_s else ops["link_bytes"] * np.nan
    ops["time_at_roof_s"] = np.maximum(compute_s, memory_s) * ops["count"]
    ops["link_time_s"] = link_s.where(ops["link_bytes"] > 0, 0.0) * ops["count"]
    ops["bound"] = np.where(ops["link_bytes"] > 0, "link", np.where(compute_s >= memory_s, "compute", "memory"))
    return ops


@dataclass
class Estimate:
    """The analytical roofline of one model on one GPU; frames in ``ops``, ``phases``, ``scaling``."""

    model: ModelConfig
    hw: Hardware
    prec: Precision
    prompt: int
    generate: int
    tp: int
    flash: bool
    ops: pd.DataFrame
    phases: pd.DataFrame
    scaling: pd.DataFrame
    crossover_batch: int | None
    crossover_note: str
    weights_only_crossover_batch: int
    notes: list[str] = field(default_factory=list)

    @property
    def weight_bytes(self) -> float:
        """The model's weights in memory (per GPU under tensor parallelism)."""
        return self.model.params * self.prec.weight_bits / 8 / self.tp

    def gap(self, measured: pd.DataFrame) -> dict[str, Any]:
        """A measured profile (``roofline.analyze`` output) against this model's prefill at the smallest
        batch: the program point of :func:`~roofline.inference.plot.measured_point` plus the model's
        FLOPs and time at the roof and the measured / model ratios (time: how far from the roof;
        FLOPs: near 1 only when the profiled workload is the one modelled)."""
        from roofline.inference.plot import measured_point

        pt = measured_point(measured)
        pre = self.phases[self.phases["phase"] == "prefill"].iloc[0]
        pt.update(model_phase="prefill", model_batch=int(pre["batch"]), model_prompt=self.prompt,
                  model_flop=float(pre["flop"]), model_time_at_roof_s=float(pre["step_time_s"]),
                  time_ratio=pt["duration_s"] / float(pre["step_time_s"]),
                  flop_ratio=pt["flop"] / float(pre["flop"]) if pre["flop"] > 0 else float("nan"))
        return pt

    def plot(self, out_dir: str | Path, measured: pd.DataFrame | None = None) -> list[Path]:
        from roofline.inference.plot import plot_estimate

        return plot_estimate(self, Path(out_dir), measured)


def _phase_ops(m: ModelConfig, phase: str, batch: int, new_tokens: int, context: float, prec: Precision,
               flash: bool, tp: int) -> pd.DataFrame:
    rows = [dict(r, layer=f"each of {m.layers}", count=m.layers) for r in layer_ops(m, batch, new_tokens, context, prec,
                                                                                      flash, tp)]
    rows += [dict(r, layer="-", count=1) for r in model_ops(m, batch, new_tokens, prec, tp)]
    frame = pd.DataFrame(rows)
    frame.insert(0, "phase", phase)
    frame.insert(1, "batch", batch)
    frame.insert(2, "seq_len", context)
    return frame


def _totals(ops: pd.DataFrame, hw: Hardware) -> pd.DataFrame:
    cols = ["flop", "weight_bytes", "act_bytes", "kv_bytes", "total_bytes", "link_bytes"]
    weighted = ops[cols].mul(ops["count"], axis=0)
    weighted[["time_at_roof_s", "link_time_s"]] = ops[["time_at_roof_s", "link_time_s"]]
    weighted[["phase", "batch", "prompt", "seq_len"]] = ops[["phase", "batch", "prompt", "seq_len"]]
    weighted["compute_time_s"] = np.where(ops["bound"] == "compute", ops["time_at_roof_s"], 0.0)
    t = weighted.groupby(["prompt", "batch", "phase"], sort=False).agg(
        {**{c: "sum" for c in cols + ["time_at_roof_s", "link_time_s", "compute_time_s"]}, "seq_len": "first"})
    t = t.reset_index()
    t["intensity_flop_per_byte"] = t["flop"] / t["total_bytes"]
    t["attainable_flop_per_s"] = np.minimum(hw.tensor_flop_per_s, t["intensity_flop_per_byte"] * hw.hbm_bytes_per_s)
    t["step_time_s"] = t["time_at_roof_s"] + t["link_time_s"].fillna(0.0)
    t["bound"] = np.where(t["compute_time_s"] > t["time_at_roof_s"] / 2, "compute", "memory")
    return t.drop(columns=["compute_time_s"])


def estimate(model: str | Path | ModelConfig, gpu: str | GpuSpec, batch: int | list[int] = 1, prompt: int = 512,
             generate: int = 128, weight_bits: int = 16, act_bits: int = 16, kv_bits: int = 16, flash: bool = True,
             tp: int = 1, link_gbps: float | None = None) -> Estimate:
    """Prefill and decode rooflines of ``model`` on ``gpu`` for each batch size."""
    m = load_model(model)
    prec = Precision(weight_bits, act_bits, kv_bits)
    hw = hardware(gpu, act_bits, link_gbps)
    batches = [batch] if isinstance(batch, int) else sorted(set(batch))
    if not batches or min(batches) < 1 or prompt < 1 or generate < 1:
        raise InferenceModelError("batch sizes, --prompt and --generate must be positive")
    if tp < 1 or m.heads % tp:
        raise InferenceModelError(f"tensor parallelism {tp} must divide the {m.heads} attention heads of {m.name}")
    decode_ctx = prompt + max(generate, 2) / 2  # mean context of the G-1 decode steps (module docstring)

    def phases_for(b: int) -> pd.DataFrame:
        return pd.concat([_phase_ops(m, "prefill", b, prompt, prompt, prec, flash, tp),
                          _phase_ops(m, "decode", b, 1, decode_ctx, prec, flash, tp)], ignore_index=True)

    ops = pd.concat([phases_for(b) for b in batches], ignore_index=True)
    ops.insert(2, "prompt", prompt)  # frames of several prompt lengths (sweep) concatenate as they are
    ops = _roofline(ops, hw)
    phases = _totals(ops, hw)
    pre = phases[phases["phase"] == "prefill"].set_index("batch")
    dec = phases[phases["phase"] == "decode"].set_index("batch")
    scaling = pd.DataFrame({
        "prompt": prompt, "batch": batches,
        "ttft_s": pre["step_time_s"].to_numpy(),
        "tpot_s": dec["step_time_s"].to_numpy(),
        "decode_intensity_flop_per_byte": dec["intensity_flop_per_byte"].to_numpy(),
        "prefill_intensity_flop_per_byte": pre["intensity_flop_per_byte"].to_numpy(),
        "decode_bound": dec["bound"].to_numpy(), "prefill_bound": pre["bound"].to_numpy(),
    })
    scaling["decode_tokens_per_s"] = scaling["batch"] / scaling["tpot_s"]
    scaling["prefill_tokens_per_s"] = scaling["batch"] * prompt / scaling["ttft_s"]
    scaling["request_time_s"] = scaling["ttft_s"] + (generate - 1) * scaling["tpot_s"]  # 1st token: prefill

    def decode_intensity(b: int) -> float:
        # the decode step's FLOPs / bytes as _totals sums them, without frames: the bisection asks ~16 times
        rows = [(r, m.layers) for r in layer_ops(m, b, 1, decode_ctx, prec, flash, tp)]
        rows += [(r, 1) for r in model_ops(m, b, 1, prec, tp)]
        flop = math.fsum(r["flop"] * n for r, n in rows)
        byts = math.fsum((r["weight_bytes"] + r["act_bytes"] + r["kv_bytes"]) * n for r, n in rows)
        return flop / byts

    cross, note = _crossover(decode_intensity, hw.ridge_flop_per_byte)
    weights_only = math.ceil(hw.ridge_flop_per_byte * prec.weight_bits / 8 / 2)
    notes = [f"roofs: {hw.tensor_source}; {hw.vector_source}; HBM {hw.hbm_source}",
             "prefill computes the first token's logits (last position only); " + (
                 f"the other {generate - 1} tokens are decode steps, evaluated at their mean context {decode_ctx:g}; "
                 f"request = TTFT + {generate - 1} × TPOT" if generate > 1 else
                 f"no decode step for 1 token: TPOT is that of the next step (context {decode_ctx:g})")]
    if tp > 1 and not link_gbps:
        notes.append("tensor parallel: all-reduce bytes are listed; give --link-gbps for their time")
    return Estimate(m, hw, prec, prompt, generate, tp, flash, ops, phases, scaling, cross, note, weights_only, notes)


def sweep(model: str | Path | ModelConfig, gpu: str | GpuSpec, batch: int | list[int] = 1,
          prompt: int | list[int] = 512, generate: int = 128, **options: Any) -> list[Estimate]:
    """One :func:`estimate` per prompt length (sequence-length scaling); options as for estimate.

    Every frame carries its ``prompt`` column, so ``pd.concat([e.scaling for e in ests])`` is the
    table over prompt lengths × batch sizes; each estimate has its own crossover batch (the KV cache
    a decode step reads grows with the context).
    """
    prompts = [prompt] if isinstance(prompt, int) else sorted(set(prompt))
    if not prompts:
        raise InferenceModelError("give at least one prompt length")
    m = load_model(model)  # parsed once, shared
    return [estimate(m, gpu, batch, p, generate, **options) for p in prompts]


def _crossover(intensity_at: Any, ridge: float, limit: int = 1 << 20) -> tuple[int | None, str]:
    """Smallest batch whose decode step reaches the ridge (intensity grows with batch: bisection)."""
    if intensity_at(1) >= ridge:
        return 1, "decode is compute-bound from batch 1"
    hi = 2
    while intensity_at(hi) < ridge:
        if hi >= limit:
            asymptote = intensity_at(limit)
            return None, (f"never: the KV cache each sequence reads keeps decode under the ridge "
                          f"({asymptote:.0f} FLOP/byte at batch {limit:,} < ridge {ridge:.0f})")
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if intensity_at(mid) >= ridge else (mid, hi)
    return hi, f"decode reaches the ridge ({ridge:.0f} FLOP/byte) at batch {hi}"
