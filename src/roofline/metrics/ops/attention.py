"""Attention: SDPA (flash, efficient, cudnn), packed-sequence (varlen) attention and vLLM's paged
attention.

* attention (SDPA, flash, efficient, cudnn): forward 2·B·H·Sq·Sk·(Dqk + Dv), halved when causal (as
  TraceLens); backward twice the forward. Bytes: Q, K, V, O (+ dO, dQ, dK, dV in backward).

vLLM paged attention (``unified_attention_with_output``) from the iteration's recorded lengths (``paged_cost``;
its model from the op's own arguments alone says the lengths are not there).

The op's arguments hold the new tokens' q, k, v and output, not the context lengths: those live in the
engine's attention metadata. vLLM's detailed iteration annotation (a ``user_annotation`` named
``execute_<N>_context_<c>(sq…sk…sqsq…sqsk…)_generation_<g>(sq…sk…sqsq…sqsk…)``, written around each
model step) records the sums the attention work depends on, per phase: Σsq (new tokens), Σsk (tokens
attended, context included), Σsq² and Σsq·sk. Every attention layer of the step runs over the same
requests, so each layer's op is priced from them (the same aggregates TraceLens's InferenceAttention
reads, "g_sk = 55086" in the graph case):

* FLOPs: H_Q·(2·Σsq·sk·(Dqk + Dv)) per phase, minus the causal half of the prefill's own block
  H_Q·Σsq²·(Dqk + Dv) (context phase only; a decode token sees its whole context);
* bytes: q read and o written for Σsq tokens, their own k and v (Σsq) at the q dtype, and the cached
  keys and values (Σsk − Σsq) at the key's dtype: the cache tensor is not among the op's arguments, so
  its dtype is taken to be the key's (vLLM's kv_cache_dtype "auto"; an fp8 cache moves half).

SGLang's paged decode attention (``sglang_profiler::attention_paged_attention_ragged_<line>``, aiter's
``paged_attention_ragged``: out, workspace, query [tokens, H_Q, D], key and value caches [pages, page size, H_KV,
D], …, recorded by position, no schema) is priced the same way from the iteration annotation SGLang's replay
carries: its query gives H_Q and D, its key cache H_KV; there are no new k, v among its arguments (the cache was
written before), so the cached tokens are Σsk (the new tokens' k, v included) at the cache's dtype.

Sliding windows. Flash attention (``_flash_attention_forward``/``_backward``) and aiter's varlen/prefill ops
record ``window_size_left``/``window_size_right``: query i (aligned bottom-right, as flash-attn does) attends
to keys [i − left, i + right] (−1: unbounded; causal: right = 0), and the FLOPs count those pairs exactly
(2·B·H·pairs·(Dqk + Dv)) where the window cuts any (GPT-OSS's 128-token layers: ~S/128 × fewer than full
attention); bytes are unchanged (Q, K, V, O each move once). Memory-efficient attention's ``window_size`` has
no documented alignment: a row with one says its FLOPs are an upper bound. Paged attention records no window
(vLLM's and SGLang's): for a sliding-window layer its FLOPs and bytes are upper bounds, and both sources say so.
"""

from __future__ import annotations

import re
from typing import Any

from roofline.metrics.ops.args import DTYPE_BYTES, Call, bind, numel
from roofline.metrics.ops.core import NAN, OpCost, compute, first, model, precision_of

# ---- attention ------------------------------------------------------------------------------------

@model("_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
       "_scaled_dot_product_cudnn_attention", "scaled_dot_product_attention", "_flash_attention_forward",
       "_efficient_attention_forward", "_scaled_dot_product_flash_attention_backward",
       "_scaled_dot_product_efficient_attention_backward", "_scaled_dot_product_cudnn_attention_backward",
       "_flash_attention_backward", "_efficient_attention_backward",
       "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_attention_math")
def _attention(call: Call, _: Any) -> OpCost | None:
    backward = "backward" in call.name
    q, k, v = call.tensor("query"), call.tensor("key"), call.tensor("value")
    if q is None or k is None or v is None:
        return None
    (qs, zq), (ks, _), (vs, _) = q, k, v
    if call.name in ("aten::_flash_attention_forward", "aten::_flash_attention_backward",
                     "aten::_efficient_attention_forward", "aten::_efficient_attention_backward"):
        if call.tensor("cum_seq_q") is not None and not backward:  # varlen: q is [Σ tokens, H, D]
            return _varlen_attention(call, None)
        b, sq, h, dqk = qs  # these take [B, S, H, D]
        sk, dv = ks[1], vs[3]
    else:
        b, h, sq, dqk = (qs[0], qs[1], qs[-2], qs[-1]) if len(qs) == 4 else (qs[0], 1, qs[-2], qs[-1])
        sk, dv = ks[-2], vs[-1]
    causal = bool(call.flag("is_causal")) or bool(call.flag("causal"))
    fwd = 2 * b * h * sq * sk * (dqk + dv)
    if causal:
        fwd //= 2
    windowed = _windowed(call, sq, sk, causal)
    if windowed is not None:
        fwd = 2 * b * h * windowed[0] * (dqk + dv)
    z = zq or NAN
    io = (b * h * sq * dqk + b * h * sk * dqk + b * h * sk * dv + b * h * sq * dv) * z
    each = f"2·B·H·pairs·(Dqk+Dv), {windowed[1]}" if windowed else \
        f"2·B·H·Sq·Sk·(Dqk+Dv){' × ½ (causal)' if causal else ''}"
    if backward:
        flops, moved = 2 * fwd, 2 * io
        formula = f"2 × forward ({each})"
    else:
        flops, moved = fwd, io
        formula = f"{each}, B={b} H={h} Sq={sq} Sk={sk} D={dqk}"
    formula += _unknown_window(call)
    precision, path = precision_of(call, call.dtype("query"), True)
    return OpCost(float(flops), float(moved), precision, path, formula, matmul_like=True)


def window_pairs(sq: int, sk: int, left: int, right: int) -> int:
    """Query-key pairs a sliding window keeps: query i (0 ≤ i < sq), aligned to key i + sk − sq (flash-attn's
    bottom-right alignment), attends to keys [i' − left, i' + right] ∩ [0, sk) (−1: unbounded)."""
    import numpy as np

    pos = np.arange(sq, dtype=np.int64) + (sk - sq)
    lo = np.zeros(sq, dtype=np.int64) if left < 0 else np.maximum(pos - left, 0)
    hi = np.full(sq, sk - 1, dtype=np.int64) if right < 0 else np.minimum(pos + right, sk - 1)
    return int(np.maximum(hi - lo + 1, 0).sum())


def _windowed(call: Call, sq: int, sk: int, causal: bool) -> tuple[int, str] | None:
    """(pairs per batch and head, how) where the call records a sliding window that cuts any query-key pair;
    None when it records none (or one as wide as the sequence: the full or causal count stands)."""
    left, right = call.ints("window_size_left"), call.ints("window_size_right")
    if left is None or right is None or (left[0] < 0 and right[0] < 0):
        return None
    r = 0 if causal else right[0]
    pairs = window_pairs(sq, sk, left[0], r)
    if pairs >= window_pairs(sq, sk, -1, 0 if causal else -1):
        return None
    return pairs, f"sliding window left={left[0]} right={r}{' (causal)' if causal else ''}: {pairs} query-key pairs"


def _unknown_window(call: Call) -> str:
    """A window the model cannot place (memory-efficient attention's ``window_size``): say the FLOPs are high."""
    w = call.ints("window_size")
    return "" if not w or w[0] <= 0 else (f"; an upper bound: window_size={w[0]} (the window's alignment is not "
                                          "recorded, so the full count is given)")


@model("aiter::mha_batch_prefill", "aiter::mha_varlen_fwd")
def _varlen_attention(call: Call, _: Any) -> OpCost | None:
    """Packed-sequence attention: per-sequence lengths are tensor values the trace does not record, only
    their bounds. They are exact when the bounds leave no choice: Σ q = batch · max_q makes every query
    length max_q, and a prefill's key length lies between its query length and max_k, so max_k = max_q
    makes every key length max_q too. (flash-attn varlen through ``_flash_attention_forward`` too.)"""
    q, k, v = first(call, "q", "query"), first(call, "k", "key"), first(call, "v", "value")
    cu = first(call, "cu_seqlens_q", "cum_seq_q")
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
    windowed = _windowed(call, s, s, causal)
    each = f"Σ 2·H·Sq·Sk·(Dqk+Dv){' × ½ (causal)' if causal else ''}"
    if windowed is not None:
        flops, each = batch * 2 * hq * windowed[0] * (dqk + dv), f"Σ 2·H·pairs·(Dqk+Dv), {windowed[1]} per sequence"
    z = q[1] or NAN
    moved = (total * hq * dqk + total * hk * dqk + total * hk * dv + total * hq * dv) * z
    precision, path = precision_of(call, call.dtype("q") or call.dtype("query"), True)
    return OpCost(float(flops), float(moved), precision, path,
                  f"{each}, {batch} sequences of {s} tokens "
                  "(Σq = batch·max_q, max_k = max_q); q, k, v, o of those tokens", matmul_like=True)


@model("vllm::unified_attention_with_output", "vllm::unified_attention")
def _paged_attention(call: Call, _: Any) -> OpCost | None:
    q = call.tensor("query")
    if q is None:
        return None
    return OpCost(NAN, NAN, "none", None, "", NO_LENGTHS)


#: SGLang's profiler names each wrapped call <module>_<function>_<source line>
SGLANG_PAGED = re.compile(r"^sglang_profiler::attention_paged_attention_ragged(_\d+)?$")
NO_LENGTHS = ("paged attention: the context lengths live in the engine's attention metadata (block tables, seq_lens), "
              "which the op's recorded arguments do not carry; vLLM's detailed iteration annotation "
              "(execute_…_generation_…(sq…sk…)) around a graph replay gives them")


def sglang_paged(name: str, dims: Any) -> OpCost | None:
    """SGLang's paged attention before its lengths are known (no ATen schema: read by position)."""
    if not SGLANG_PAGED.match(name) or _sglang_tensors(dims, None) is None:
        return None
    return OpCost(NAN, NAN, "none", None, "", NO_LENGTHS)


def _sglang_tensors(dims: Any, types: Any) -> tuple[list[int], list[int], str, str] | None:
    """(query dims, key cache dims, query dtype, cache dtype) of aiter's paged_attention_ragged as recorded:
    out, workspace, query [tokens, H_Q, D], key cache, value cache [pages, page size, H_KV, D], …"""
    if not isinstance(dims, list) or len(dims) < 5:
        return None
    q, kc, vc = dims[2], dims[3], dims[4]
    if not (isinstance(q, list) and len(q) == 3 and isinstance(kc, list) and len(kc) == 4 and kc == vc
            and all(isinstance(x, int) for x in q + kc) and q[2] == kc[3]):
        return None
    t = types if isinstance(types, list) and len(types) >= 5 else [""] * 5
    return q, kc, str(t[2] or ""), str(t[3] or "")


# ---- paged attention from the iteration's recorded lengths -------------------------------------------

OPS = frozenset({"vllm::unified_attention_with_output", "vllm::unified_attention"})


def is_paged(name: str) -> bool:
    """An op priced from its iteration annotation (vLLM's unified attention, SGLang's paged attention)."""
    return name in OPS or SGLANG_PAGED.match(name) is not None
_PHASE = r"_(\d+)\(sq(\d+)sk(\d+)sqsq(\d+)sqsk(\d+)\)"
ITERATION = re.compile(r"execute_(\d+)_context" + _PHASE + "_generation" + _PHASE)


def iteration_stats(name: str) -> dict[str, int] | None:
    """The sums of a vLLM detailed iteration annotation; None for any other name."""
    m = ITERATION.search(name)
    if m is None:
        return None
    v = [int(x) for x in m.groups()]
    keys = ("tokens", "c_req", "c_sq", "c_sk", "c_sqsq", "c_sqsk", "g_req", "g_sq", "g_sk", "g_sqsq", "g_sqsk")
    return dict(zip(keys, v))


def paged_cost(name: str, dims: Any, types: Any, annotation: str | None) -> OpCost | None:
    """The op's cost from its query/key/value (read by schema name) and its iteration's annotation
    (None: no annotation, or arguments that match no schema of ``name``)."""
    st = iteration_stats(annotation) if annotation else None
    if st is not None and SGLANG_PAGED.match(name):
        return _sglang_cost(dims, types, st, annotation)  # type: ignore[arg-type]
    call = bind(name, dims, types, None) if st is not None and isinstance(dims, list) else None
    if call is None or st is None:
        return None
    q, k, v = call.tensor("query"), call.tensor("key"), call.tensor("value")
    try:
        (nq, hq, dqk), zq = q  # type: ignore[misc]
        (nk, hkv, _d), zk = k  # type: ignore[misc]
        (_nv, _hv, dv), _zv = v  # type: ignore[misc]
    except (TypeError, ValueError):
        return None
    sq = st["c_sq"] + st["g_sq"]
    if nq != sq or nk != sq:
        return OpCost(NAN, NAN, "none", None, "", f"paged attention: the iteration annotation's {sq} new tokens "
                      f"({annotation}) are not the op's {nq} query rows (a padded graph batch?)")
    flops = hq * (2 * st["c_sqsk"] * (dqk + dv) - st["c_sqsq"] * (dqk + dv)) + hq * 2 * st["g_sqsk"] * (dqk + dv)
    precision, path = compute(call.dtype("query") if zq else "", True)
    formula = _paged_formula(hq, dqk, dv, st)
    if not zq or not zk:
        return OpCost(float(flops), NAN, precision, path, formula, "paged attention: q/k dtypes not recorded",
                      matmul_like=True)
    cached = (st["c_sk"] - st["c_sq"]) + (st["g_sk"] - st["g_sq"])
    moved = sq * (hq * (dqk + dv) + hkv * (dqk + dv)) * zq + cached * hkv * (dqk + dv) * zk
    note = (f"q, o of {sq} tokens, their own k, v, and the cached k, v of Σsk − Σsq = {cached} context tokens at "
            f"the key's dtype ({call.dtype('key')}: the cache tensor is not an argument); exact for full attention, an "
            "upper bound for a sliding-window layer (the window is not recorded)")
    return OpCost(float(flops), float(moved), precision, path, formula, args=call.described(), matmul_like=True,
                  bytes_note=note)


def _sglang_cost(dims: Any, types: Any, st: dict[str, int], annotation: str) -> OpCost | None:
    """SGLang's paged attention from the iteration annotation: the same FLOPs as vLLM's; bytes: q read and o
    written for Σsq tokens at the query's dtype, the cache's k and v of all Σsk tokens (the new ones were written
    to the cache before the op) at the cache's dtype."""
    found = _sglang_tensors(dims, types)
    if found is None:
        return None
    (nq, hq, dqk), kc, tq, tk = found
    hkv, dv = kc[2], kc[3]
    sq = st["c_sq"] + st["g_sq"]
    if nq != sq:
        return OpCost(NAN, NAN, "none", None, "", f"paged attention: the iteration annotation's {sq} new tokens "
                      f"({annotation}) are not the op's {nq} query rows (a padded graph batch?)")
    flops = hq * (2 * st["c_sqsk"] * (dqk + dv) - st["c_sqsq"] * (dqk + dv)) + hq * 2 * st["g_sqsk"] * (dqk + dv)
    precision, path = compute(tq, True)
    formula = _paged_formula(hq, dqk, dv, st)
    args = f"query {nq}x{hq}x{dqk} ({tq}), key/value cache {'x'.join(map(str, kc))} ({tk}) (by position)"
    zq, zk = DTYPE_BYTES.get(tq.lower()), DTYPE_BYTES.get(tk.lower())
    if not zq or not zk:
        return OpCost(float(flops), NAN, precision, path, formula, "paged attention: q/cache dtypes not recorded",
                      args=args, matmul_like=True)
    keys = st["c_sk"] + st["g_sk"]
    moved = sq * hq * (dqk + dv) * zq + keys * hkv * (dqk + dv) * zk
    note = (f"q, o of {sq} tokens and the cached k, v of Σsk = {keys} tokens ({hkv} KV heads); exact for full "
            "attention, an upper bound for a sliding-window layer (the window is not recorded)")
    return OpCost(float(flops), float(moved), precision, path, formula, args=args, matmul_like=True, bytes_note=note)


def _paged_formula(hq: int, dqk: int, dv: int, st: dict[str, int]) -> str:
    return (f"H_Q·(2·Σsq·sk − Σsq²_prefill)·(Dqk+Dv), H_Q={hq} Dqk={dqk} Dv={dv}, from the iteration annotation: "
            f"prefill Σsq={st['c_sq']} Σsk={st['c_sk']} Σsq²={st['c_sqsq']} Σsq·sk={st['c_sqsk']}, decode "
            f"Σsq={st['g_sq']} Σsk={st['g_sk']} Σsq·sk={st['g_sqsk']}; exact for full attention, an upper bound for "
            "a sliding-window layer (the window is not recorded)")
