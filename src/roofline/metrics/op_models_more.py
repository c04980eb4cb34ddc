"""More operator models: softmax, norms forward and backward, gathers/scatters, data movement,
losses, and the fused ops of inference engines (aiter, vLLM, SGLang). Registered into
``op_models.MODELS``; conventions in ``docs/traces.md``.
"""

from __future__ import annotations

import math
from typing import Any

from roofline.metrics.op_models import MODELS, NAN, OpCost, _first, _precision, model, nbytes
from roofline.metrics.ops.args import Call, numel


def _tensors(call: Call, skip: tuple[str, ...] = ()) -> list[tuple[str, tuple[list[int], int | None]]]:
    return [(a, t) for a in call.dims if a not in skip and (t := call.tensor(a)) is not None]


def _per_element(call: Call, main: tuple[list[int], int | None], per: float, formula: str, out_times: int = 1,
                 extra_read: float = 0.0, tensor: bool = False) -> OpCost:
    n = numel(main[0])
    reads = sum(nbytes(t) for a, t in _tensors(call, ("out",)))
    moved = reads + out_times * nbytes(main) + extra_read
    precision, _ = _precision(call, call.dtype(next(iter(call.dims))), tensor)
    return OpCost(float(per * n), float(moved), precision, None, formula)


@model("softmax", "_softmax", "log_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data",
       "_safe_softmax")
def _softmax(call: Call, _: Any) -> OpCost | None:
    t = _first(call, "self", "grad_output", "input")
    if t is None:
        return None
    if "backward" in call.name:  # grad_input = y·(g − Σ g·y): mul, sum, sub, mul per element
        return _per_element(call, t, 4, "4 FLOP per element (softmax backward: mul, sum, sub, mul)")
    return _per_element(call, t, 5, "5 FLOP per element (max, sub, exp, sum, div)")


NORMS = {"layer_norm": 5, "native_layer_norm": 5, "group_norm": 5, "native_group_norm": 5, "batch_norm": 5,
         "native_batch_norm": 5, "_batch_norm_impl_index": 5, "cudnn_batch_norm": 5, "miopen_batch_norm": 5,
         "_native_batch_norm_legit": 5, "_native_batch_norm_legit_no_training": 5, "instance_norm": 5,
         "rms_norm": 4, "_fused_rms_norm": 4}
NORM_BACKWARD = ("native_layer_norm_backward", "native_batch_norm_backward", "cudnn_batch_norm_backward",
                 "miopen_batch_norm_backward", "native_group_norm_backward", "_fused_rms_norm_backward",
                 "_batch_norm_impl_index_backward")


@model(*NORMS)
def _norm(call: Call, _: Any) -> OpCost | None:
    t = _first(call, "input", "self", "X")
    if t is None:
        return None
    per = NORMS[call.name.removeprefix("aten::")]
    return _per_element(call, t, per, f"{per} FLOP per element (normalise: mean/var, sub, div, scale, shift)")


@model(*NORM_BACKWARD)
def _norm_backward(call: Call, _: Any) -> OpCost | None:
    g = _first(call, "grad_out", "grad_output", "dY")
    if g is None:
        return None
    mask = (call.flags("output_mask") or []) + [True, True, True]
    w = _first(call, "weight", "gamma")
    # the affine gradients written (dgamma, dbeta), each the weight's size
    grads = (nbytes(w) * sum(1 for m in mask[1:3 if "rms" not in call.name else 2] if m)) if w else 0.0
    if "rms" in call.name:
        # dx = rstd·(g·w − x̂·mean(g·w·x̂)): 8 FLOP per element; dweight's Σ g·x̂ is not shared with dx
        # (dx needs g·w, not g): 2 more per element when it is asked for
        per = 8 + (2 if mask[1] else 0)
    else:
        # dx needs Σg and Σg·x̂ per group, which are dbeta and dgamma themselves: 9 FLOP per element whichever
        # gradients output_mask asks for (x̂ = (x−μ)·rstd: 2; g·x̂, two sums: 3; dx = rstd·(g − mean g − x̂·mean g·x̂): 4)
        per = 9
    return _per_element(call, g, per, f"{per} FLOP per element (norm backward: x̂, sums, dx)", extra_read=grads)


@model("embedding", "index_select", "gather", "embedding_dense_backward", "index", "take", "embedding_bag",
       "_embedding_bag", "_embedding_bag_forward_only", "index_add", "index_add_", "index_copy", "index_copy_", "index_put", "index_put_",
       "_index_put_impl_", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
       "scatter_reduce_", "masked_select", "nonzero")
def _gather(call: Call, _: Any) -> OpCost | None:
    base = call.name.removeprefix("aten::")
    src = _first(call, "weight", "self", "input")
    idx = _first(call, "indices", "index")
    if src is None:
        return None
    (ss, zs) = src
    if base in ("embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only") and idx is not None:
        rows = numel(idx[0])
        moved = nbytes(idx) + 2 * rows * ss[-1] * (zs or NAN)  # the rows read, then written
        flops = rows * ss[-1] if "bag" in base else 0  # a bag sums its rows
        return OpCost(float(flops), float(moved), "fp32" if flops else "none", None,
                      "gather: indices + rows read + output" + (" (bag: 1 add per element)" if flops else ""))
    if base == "index_select" and idx is not None:
        dim = (call.ints("dim") or [0])[0] % max(1, len(ss))
        per_row = numel(ss) // max(1, ss[dim])
        return OpCost(0.0, float(nbytes(idx) + 2 * numel(idx[0]) * per_row * (zs or NAN)), "none", None,
                      "gather: indices + rows read + output")
    if base in ("gather", "take") and idx is not None:
        n = numel(idx[0])
        return OpCost(0.0, float(nbytes(idx) + 2 * n * (zs or NAN)), "none", None,
                      "gather: one source element per index read + output")
    if base.startswith(("scatter", "index_add", "index_copy", "index_put", "_index_put")):
        upd = _first(call, "src", "source", "values")
        if upd is None:
            return None
        n = numel(upd[0])
        flops = n if "add" in base or "reduce" in base or call.flag("accumulate") else 0
        moved = nbytes(upd) + (nbytes(idx) if idx else 0) + n * (zs or NAN) * (2 if flops else 1)
        if not base.endswith("_"):
            moved += 2 * nbytes(src)  # out of place: self copied first
        return OpCost(float(flops), float(moved), "fp32" if flops else "none", None,
                      "scatter: updates + indices read, the elements written (read too when accumulating)")
    t = [nbytes(t) for _, t in _tensors(call)]
    return OpCost(0.0, float(2 * sum(t)), "none", None, "gather: inputs read + output")


@model("cat", "stack", "_cat", "hstack", "vstack", "constant_pad_nd", "repeat", "flip", "roll", "tril", "triu",
       "upsample_nearest2d", "upsample_bilinear2d", "upsample_nearest1d", "upsample_nearest3d",
       "upsample_bicubic2d", "_upsample_nearest_exact2d", "_upsample_bilinear2d_aa", "upsample_linear1d",
       "upsample_trilinear3d", "upsample_nearest2d_backward", "upsample_bilinear2d_backward", "native_dropout", "dropout", "feature_dropout", "bernoulli_", "native_dropout_backward",
       "nll_loss_forward", "nll_loss", "cross_entropy_loss", "nll_loss_backward", "nll_loss2d_forward")
def _movement(call: Call, _: Any) -> OpCost | None:
    base = call.name.removeprefix("aten::")
    if base in ("cat", "stack", "_cat", "hstack", "vstack"):
        d = call.dims.get("tensors")
        if not isinstance(d, list):
            return None
        shapes = [s for s in d if isinstance(s, list) and all(isinstance(x, int) for x in s)]
        if not shapes:
            return None
        n = sum(numel(s) for s in shapes)
        return OpCost(0.0, NAN, "none", None, f"concatenation: read + write {n} elements",
                      "a TensorList's element dtype is not recorded (Input type says only 'TensorList'), "
                      f"so the bytes of its {n} elements read and written are unknown")
    t = _first(call, "self", "input", "grad_output")
    if t is None:
        return None
    if base.startswith(("upsample", "_upsample")) and not base.endswith("backward"):
        size_out = call.ints("output_size")
        scales = call.values.get("scale_factors")
        if size_out is None and isinstance(scales, str) and scales.strip():
            import re

            factors = [float(f) for f in re.findall(r"[-\d.eE]+", scales)]
            if len(factors) == len(t[0]) - 2:  # PyTorch: output size = floor(input size × scale)
                size_out = [int(math.floor(d * f)) for d, f in zip(t[0][2:], factors)]
        if size_out is None:
            return OpCost(NAN, NAN, "none", None, "", f"{base}: neither output_size nor scale_factors recorded")
        out = t[0][:2] + size_out
        per = {"nearest": 0, "linear": 7, "bilinear": 7, "bicubic": 31, "trilinear": 15}
        kind = next((k for k in ("bicubic", "trilinear", "bilinear", "linear", "nearest") if k in base), "nearest")
        n = numel(out)
        precision, _ = _precision(call, call.dtype("self") or call.dtype("input"), False)
        return OpCost(float(per[kind] * n), float(nbytes(t) + n * (t[1] or NAN)), precision if per[kind] else "none",
                      None, f"interpolate ({kind}): {per[kind]} FLOP per output element; input + output")
    if "dropout" in base or base == "bernoulli_":  # mask draw + scale: 2 FLOP, writes output (+ bool mask)
        n = numel(t[0])
        mask = n if base == "native_dropout" else 0
        return OpCost(float(2 * n), float(2 * nbytes(t) + mask), _precision(call, call.dtype("input"), False)[0],
                      None, "dropout: 2 FLOP per element; input + output (+ its bool mask)")
    if base.startswith(("nll_loss", "cross_entropy")):
        n = numel(t[0][:-1]) if len(t[0]) > 1 else 1
        tgt = call.tensor("target")
        return OpCost(float(2 * n), float(n * (t[1] or NAN) + nbytes(tgt)), _precision(call, call.dtype("self"), False)[0],
                      None, "NLL: one element read per target; target read")
    return OpCost(0.0, float(2 * nbytes(t)), "none", None, "data movement: read + write every element")


# ---- fused ops of inference engines ----------------------------------------------------------------

@model("aiter::rmsnorm", "aiter::rms_norm", "_C::rms_norm", "aiter::add_rmsnorm", "aiter::rmsnorm2d_fwd_with_add_ck",
       "_C::fused_add_rms_norm")
def _rmsnorm(call: Call, _: Any) -> OpCost | None:
    x, w = call.tensor("input"), call.tensor("weight")
    if x is None or w is None:
        return None
    n = numel(x[0])
    fused = call.tensor("residual_in") is not None or call.tensor("residual") is not None
    # x², sum, rsqrt·x, ·w: 4 per element (+1 for the residual add)
    flops = (5 if fused else 4) * n
    moved = nbytes(x) + nbytes(w) + nbytes(x)  # read input and weight, write the output
    if fused:
        moved += 2 * nbytes(x)  # read the residual, write the new residual
    precision, _ = _precision(call, call.dtype("input"), False)
    return OpCost(float(flops), float(moved), precision, None,
                  f"RMSNorm{' + residual add' if fused else ''}: {5 if fused else 4} FLOP per element; "
                  f"input, weight{', residual in/out' if fused else ''}, output")


@model("sgl_kernel::rotary_embedding", "_C::rotary_embedding")
def _rope(call: Call, _: Any) -> OpCost | None:
    q, k, pos, cache = call.tensor("query"), call.tensor("key"), call.tensor("positions"), call.tensor("cos_sin_cache")
    if q is None or pos is None or cache is None:
        return None
    head = (call.ints("head_size") or [cache[0][-1]])[0]
    rot = cache[0][-1]  # rotary dim
    elems = numel(q[0]) + (numel(k[0]) if k else 0)
    rotated = elems // max(1, head) * rot  # elements that rotate: rotary_dim of each head
    tokens = numel(pos[0])
    # x1·cos − x2·sin, x2·cos + x1·sin: 3 FLOP per rotated element
    flops = 3 * rotated
    moved = 2 * (nbytes(q) + nbytes(k)) + nbytes(pos) + tokens * rot * (cache[1] or NAN)
    precision, _ = _precision(call, call.dtype("query"), False)
    return OpCost(float(flops), float(moved), precision, None,
                  "RoPE: 3 FLOP per rotated element; q, k read and written, positions and their cos/sin rows read")


@model("sgl_kernel::silu_and_mul", "sgl_kernel::gelu_and_mul", "_C::silu_and_mul")
def _act_and_mul(call: Call, _: Any) -> OpCost | None:
    x = call.tensor("input")
    if x is None:
        return None
    half = numel(x[0]) // 2
    # silu(a)·b: a/(1+exp(−a)) is 4, ·b 1: 5 FLOP per output element
    precision, _ = _precision(call, call.dtype("input"), False)
    return OpCost(float(5 * half), float(nbytes(x) + half * (x[1] or NAN)), precision, None,
                  "act(a)·b: 5 FLOP per output element; input [.., 2·d] read, output [.., d] written")


@model("aiter::gemm_a16w16", "vllm::rocm_unquantized_gemm")
def _engine_gemm(call: Call, _: Any) -> OpCost | None:
    a, b = _first(call, "A", "x"), _first(call, "B", "weight")
    if a is None or b is None:
        return None
    m, k, n = numel(a[0][:-1]), a[0][-1], b[0][0]
    bias = call.tensor("bias")
    flops = 2 * m * n * k + (m * n if bias else 0)
    moved = nbytes(a) + nbytes(b) + m * n * (a[1] or NAN) + (nbytes(bias) if bias else 0)
    precision, path = _precision(call, call.dtype("A") or call.dtype("x"), True)
    return OpCost(float(flops), float(moved), precision, path,
                  f"2·M·N·K{' + M·N (bias)' if bias else ''}, M={m} N={n} K={k} (B is [N, K])", matmul_like=True)


@model("_C_cache_ops::reshape_and_cache_flash")
def _reshape_and_cache(call: Call, _: Any) -> OpCost | None:
    k, v, kc, slots = call.tensor("key"), call.tensor("value"), call.tensor("key_cache"), call.tensor("slot_mapping")
    if k is None or v is None or kc is None:
        return None
    z = kc[1] or NAN  # the cache's element size (fp8 caches: 1 B)
    moved = nbytes(k) + nbytes(v) + (numel(k[0]) + numel(v[0])) * z + nbytes(slots)
    return OpCost(0.0, float(moved), "none", None,
                  "KV-cache store: new key, value read, written into the cache at its dtype; slot mapping read")


@model("vllm::moe_forward")
def _moe(call: Call, _: Any) -> OpCost | None:
    h, r = call.tensor("hidden_states"), call.tensor("router_logits")
    if h is None or r is None:
        return None
    return OpCost(NAN, NAN, "none", None, "", "fused MoE: the experts' weight shapes and top_k are not among the op's "
                  f"arguments (hidden_states {h[0]}, router_logits {r[0]}, the layer's name)", matmul_like=True)


def _routing(call: Call, _: Any) -> OpCost | None:
    from roofline.metrics.moe import routing_base  # (moe.py imports op_models, which imports this module)

    return routing_base(call)


MODELS["TopK"] = MODELS["SortTokens"] = _routing  # triton_kernels' names: no aten:: prefix


@model("sglang::store_cache")
def _store_cache(call: Call, _: Any) -> OpCost | None:
    k, v, idx = call.tensor("k"), call.tensor("v"), call.tensor("indices")
    if k is None or v is None:
        return None
    return OpCost(0.0, float(2 * (nbytes(k) + nbytes(v)) + nbytes(idx)), "none", None,
                  "KV-cache store: new k, v read and written into the cache at their slots; indices read")


@model("aiter::mha_batch_prefill", "aiter::mha_varlen_fwd")
def _varlen_attention(call: Call, _: Any) -> OpCost | None:
    """Packed-sequence attention: per-sequence lengths are tensor values the trace does not record, only
    their bounds. They are exact when the bounds leave no choice: Σ q = batch · max_q makes every query
    length max_q, and a prefill's key length lies between its query length and max_k, so max_k = max_q
    makes every key length max_q too. (flash-attn varlen through ``_flash_attention_forward`` too.)"""
    q, k, v = _first(call, "q", "query"), _first(call, "k", "key"), _first(call, "v", "value")
    cu = _first(call, "cu_seqlens_q", "cum_seq_q")
    max_q, max_k = call.ints("max_seqlen_q") or call.ints("max_q"), call.ints("max_seqlen_k") or call.ints("max_k")
    if q is None or k is None or v is None or cu is None:
        return None
    batch = numel(cu[0]) - 1
    total, hq, dqk = q[0]
    hk, dv = k[0][-2], v[0][-1]
    if max_q is None or max_k is None or batch <= 0 or total != batch * max_q[0] or max_k[0] != max_q[0]:
        return OpCost(NAN, NAN, "none", None, "", "per-sequence lengths are tensor values the trace does not record "
                      f"and its bounds (Σq={total}, batch={batch}, max_q={max_q}, max_k={max_k}) do not fix them")
    s = max_q[0]
    causal = bool(call.flag("is_causal"))
    flops = batch * 2 * hq * s * s * (dqk + dv) // (2 if causal else 1)
    z = q[1] or NAN
    moved = (total * hq * dqk + total * hk * dqk + total * hk * dv + total * hq * dv) * z
    precision, path = _precision(call, call.dtype("q") or call.dtype("query"), True)
    return OpCost(float(flops), float(moved), precision, path,
                  f"Σ 2·H·Sq·Sk·(Dqk+Dv){' × ½ (causal)' if causal else ''}, {batch} sequences of {s} tokens "
                  "(Σq = batch·max_q, max_k = max_q); q, k, v, o of those tokens", matmul_like=True)


@model("vllm::unified_attention_with_output", "vllm::unified_attention")
def _paged_attention(call: Call, _: Any) -> OpCost | None:
    q = call.tensor("query")
    if q is None:
        return None
    return OpCost(NAN, NAN, "none", None, "", "paged attention: the context lengths live in the engine's attention "
                  "metadata (block tables, seq_lens), which the op's recorded arguments do not carry; vLLM's detailed "
                  "iteration annotation (execute_…_generation_…(sq…sk…)) around a graph replay gives them")


@model("_grouped_mm", "_scaled_grouped_mm")
def _grouped_mm(call: Call, _: Any) -> OpCost | None:
    """Grouped GEMM (MoE experts): rows of ``self`` [Σ tokens, K] each multiply their group's [K, N] of
    ``mat2`` [G, K, N]: 2·Σtokens·K·N whatever the split (``offs``, a tensor value). Bytes: the groups that
    got rows are a tensor value too, so the weights read are not known: unavailable."""
    a, b = call.tensor("self"), call.tensor("mat2")
    if a is None or b is None or len(a[0]) != 2 or len(b[0]) != 3:
        return None
    m, kk = a[0]
    g, _k2, n = b[0]
    precision, path = _precision(call, call.dtype("self"), True)
    return OpCost(float(2 * m * kk * n), NAN, precision, path, f"2·ΣM·K·N over {g} groups, ΣM={m} K={kk} N={n}",
                  "grouped GEMM: which groups got rows (offs) is a tensor value, so the weights read are unknown",
                  matmul_like=True)
