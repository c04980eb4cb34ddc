"""vLLM paged attention (``unified_attention_with_output``) from the iteration's recorded lengths.

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

A layer with a sliding window attends to at most W tokens per query; the window is not recorded, so for
such a layer these numbers are an upper bound (the row's bytes note says so).
"""

from __future__ import annotations

import re
from typing import Any

from roofline.metrics.op_models import NAN, OpCost, compute
from roofline.metrics.ops.args import bind

OPS = frozenset({"vllm::unified_attention_with_output", "vllm::unified_attention"})
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
    formula = (f"H_Q·(2·Σsq·sk − Σsq²_prefill)·(Dqk+Dv), H_Q={hq} Dqk={dqk} Dv={dv}, from the iteration annotation: "
               f"prefill Σsq={st['c_sq']} Σsk={st['c_sk']} Σsq²={st['c_sqsq']} Σsq·sk={st['c_sqsk']}, decode "
               f"Σsq={st['g_sq']} Σsk={st['g_sk']} Σsq·sk={st['g_sqsk']}")
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
