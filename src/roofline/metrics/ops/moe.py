"""Fused MoE (vLLM ``moe_forward``): FLOPs and bytes from the experts' GEMMs the trace establishes.

The op's arguments hold only the tokens (``hidden_states`` [T, H]) and the router logits [T, E]; the
rest is recorded by the ops it calls and the buffers it allocates:

* top_k: the ``k`` of its routing op (``TopK``/``aten::topk``), a recorded concrete input;
* the up-projection's output: the first buffer it allocates shaped [..., T·k, I] (``aten::empty``'s
  recorded size), with I ≠ H; a fused SwiGLU (``swiglu`` in the GEMM kernel's name) halves 2·I GEMM
  columns into I, else the GEMM wrote I columns and the activation is separate;
* the down-projection's output: a buffer [..., T·k, H];
* the expert weights: the tensors it views before each GEMM, [E, ·, ·] with E·H·N_up (up) and E·I·H
  (down) values. mxfp4 weights (``mxfp4`` in the GEMM kernels' names) are recorded as ``unsigned char``
  holding two 4-bit values per byte; their e8m0 scales (one byte per 32 values, the OCP MX format) are
  not viewed in the trace, their size follows from the format: 4.25 bits per weight in all.

FLOPs = 2·(T·k)·H·N_up + 2·(T·k)·I·H, counted over the token-expert pairs actually routed (T·k).
Bytes: which experts the router chose is a tensor value, so the weights read are an **upper bound**:
min(E, T·k) experts' weights, each read once (docs/traces.md, "Fused MoE"), plus the activations each
GEMM reads and writes. The row's formula says "upper bound" and how many experts it counts.

The routing ops inside it (triton_kernels' ``TopK`` and ``SortTokens``) are priced from their tensor
arguments and the buffers they allocate (``routing_cost``). The op models registered here for
``vllm::moe_forward``, ``TopK`` and ``SortTokens`` are what their own arguments give; the reader prices
them from the ops they call (``callee_cost``, ``CALLEE_OPS``).
"""

from __future__ import annotations

import math
import re
from typing import Any

from roofline.metrics.ops.args import Call, bind, size
from roofline.metrics.ops.core import MODELS, NAN, OpCost, compute, model

ROUTERS = ("TopK", "aten::topk")
PACKED = ("unsigned char", "uint8")  # mxfp4 weights: two e2m1 values per byte
MX_BLOCK = 32  # OCP MX: one e8m0 scale byte per 32 values


def _ints(text: Any) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", str(text))]


def moe_cost(dims: Any, types: Any, children: list[tuple[Any, ...]], kernels: tuple[str, ...]) -> OpCost | None:
    """``children``: (name, Input Dims, Concrete Inputs[, Input type]) of the ops inside the MoE op, in order."""
    try:
        (t, h), (_t2, e) = dims[0], dims[1]
    except (TypeError, ValueError, IndexError):
        return None
    k = None
    for name, _d, conc, *_ in children:
        if name in ROUTERS and isinstance(conc, list) and len(conc) > 1:
            nums = re.findall(r"^\s*(\d+)\s*$", str(conc[1]))
            k = int(nums[0]) if nums else None
            break
    if k is None:
        return OpCost(NAN, NAN, "none", None, "", "fused MoE: no routing op (TopK) with a recorded k inside it")
    rows = t * k
    allocs = []
    for name, _d, conc, *_ in children:
        if name == "aten::empty" and isinstance(conc, list) and conc:
            shape = _ints(conc[0])
            if len(shape) >= 2 and shape[-2] == rows:
                allocs.append(shape[-1])
    inter = next((x for x in allocs if x != h), None)
    if inter is None or h not in allocs:
        return OpCost(NAN, NAN, "none", None, "", f"fused MoE: its expert GEMMs' output buffers ([…, {rows}, I] and "
                      f"[…, {rows}, {h}]) are not among the recorded allocations")
    fused = any("swiglu" in kn.lower() for kn in kernels)
    n_up = 2 * inter if fused else inter
    flops = 2 * rows * h * n_up + 2 * rows * inter * h
    z = size(types[0]) if isinstance(types, list) and types else None
    precision, path = compute(types[0] if z else "", True)
    formula = (f"2·(T·k)·H·N_up + 2·(T·k)·I·H, T={t} k={k} H={h} I={inter} N_up={n_up}"
               f"{' (SwiGLU fused)' if fused else ''}, E={e}")
    weights, wnote = _weights(children, e, h, inter, n_up, kernels)
    if weights is None or not z:
        return OpCost(float(flops), NAN, precision, path, formula,
                      "fused MoE: " + (wnote if weights is None else "the tokens' dtype is not recorded"),
                      matmul_like=True)
    # each GEMM's activations: x [T, H] read, up output [T·k, I] written and read by the down GEMM, its
    # output [T·k, H] written and read by the scatter-reduce, which writes [T, H]
    activ = (2 * t * h + 2 * rows * inter + 2 * rows * h) * z
    used = min(e, rows)
    moved = weights * used / e + activ
    return OpCost(float(flops), float(moved), precision, path, formula, matmul_like=True,
                  bytes_note=f"upper bound: {wnote} of min(E, T·k) = {used} of {e} experts, each read once (which "
                  f"experts the router chose is a tensor value) + activations {activ:.0f} B (x, the [T·k, I] and "
                  f"[T·k, H] buffers written and read, the output)")


def _weights(children: list[tuple[Any, ...]], e: int, h: int, inter: int, n_up: int,
             kernels: tuple[str, ...]) -> tuple[float | None, str]:
    """(bytes of all E experts' up and down weights, what they are), or (None, why not) when the trace
    does not record them: a child op's [E, ·, ·] tensor holding E·H·N_up (up) or E·I·H (down) values."""
    mx = any("mxfp4" in kn.lower() for kn in kernels)
    found: dict[str, float] = {}
    for child in children:
        d, types = child[1], child[3] if len(child) > 3 else None
        if not isinstance(d, list) or not isinstance(types, list) or not d or not isinstance(d[0], list):
            continue
        shape, dtype = d[0], str(types[0]).lower() if types else ""
        if len(shape) != 3 or shape[0] != e or not all(isinstance(x, int) for x in shape):
            continue
        per = 2 if (mx and dtype in PACKED) else 1  # values per element
        stored = size(dtype)
        if not stored:
            continue
        values = math.prod(shape) * per
        for which, want in (("up", e * h * n_up), ("down", e * inter * h)):
            if values == want and which not in found:
                found[which] = float(math.prod(shape) * stored)
                break
    if len(found) < 2:
        return None, ("the weights of the experts actually used are a tensor value, and the experts' weight "
                      "tensors ([E, ·, ·] views of E·H·N_up and E·I·H values) are not recorded inside the op")
    packed = found["up"] + found["down"]
    if mx:
        scales = (e * h * n_up + e * inter * h) / MX_BLOCK  # one e8m0 byte per 32 values
        return packed + scales, (f"mxfp4 weights ({packed:.0f} B of 4-bit values as recorded + {scales:.0f} B of "
                                 "e8m0 scales, one per 32 values: 4.25 bit/weight)")
    return packed, f"weights ({packed:.0f} B as recorded)"


# ---- the MoE's routing ops (triton_kernels' TopK and SortTokens autograd Functions) ----------------------
ROUTING_OPS = frozenset({"TopK", "SortTokens"})
#: ops priced from the ops they call (``children``): the ingest passes them to ``callee_cost``
CALLEE_OPS = frozenset({"vllm::moe_forward"}) | ROUTING_OPS
#: c10::ScalarType codes, as ``aten::empty`` records its dtype argument -> bytes per element
#: (c10/core/ScalarType.h: 2 Short, 3 Int, 15 BFloat16, 27-29 UInt16/32/64)
SCALAR_TYPE_BYTES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 15: 2, 23: 1, 24: 1, 25: 1, 26: 1,
                     27: 2, 28: 4, 29: 8}
ALLOCS = {"aten::empty": (0, 1), "aten::empty_strided": (0, 2)}  # (size, dtype) positions of the allocators


def routing_base(call: Any) -> OpCost:
    """TopK/SortTokens from their own arguments: the outputs are buffers they allocate inside, which only
    their callees record, so bytes wait for those (``routing_cost``)."""
    return OpCost(NAN, NAN, "none", None, "", f"{call.name}: its outputs are the buffers it allocates, recorded "
                  "only by its callees (aten::empty)")


def routing_cost(call: Any, children: list[tuple[Any, ...]]) -> OpCost | None:
    """Bytes: its tensor arguments read once + every buffer it allocates (``aten::empty``/``empty_strided``
    with a recorded size and dtype) written once. FLOPs: TopK's softmax over the k kept values, 5 per value
    (as softmax), when ``apply_softmax``; the selection and SortTokens' histogram/sort compare and count
    integers: no floating-point arithmetic."""
    read = 0.0
    names = ("x",) if call.name == "TopK" else ("expt_scal", "expt_indx")
    for a in names:
        t = call.tensor(a)
        if t is None or not t[1]:
            return None
        read += math.prod(t[0]) * t[1]
    written = 0.0
    for child in children:
        pos = ALLOCS.get(child[0])
        conc = child[2]
        if pos is None or not isinstance(conc, list) or len(conc) <= pos[1]:
            continue
        code = _ints(conc[pos[1]])
        z = SCALAR_TYPE_BYTES.get(code[0]) if len(code) == 1 else None
        if z is None:
            return None  # an allocation we cannot size: no silent 0
        written += math.prod(_ints(conc[pos[0]])) * z
    if not written:
        return None
    flops, precision, path, what = 0.0, "none", None, "0: the selection compares, the sort counts integers"
    if call.name == "TopK":
        x, k = call.tensor("x"), call.ints("k")
        if call.flag("apply_softmax") and x is not None and k:
            rows = math.prod(x[0][:-1])
            flops = 5.0 * rows * k[0]
            precision, path = compute(call.dtype("x"), False)
            what = f"5 FLOP per kept value (softmax over the top {k[0]} of {rows} rows); the selection compares"
    return OpCost(flops, read + written, precision, path, what, args=call.described(),
                  bytes_note=f"inputs read once ({read:.0f} B) + the buffers it allocates written once ({written:.0f} B)")


def callee_cost(name: str, dims: Any, types: Any, concrete: Any, children: list[tuple[Any, ...]],
                kernels: tuple[str, ...]) -> OpCost | None:
    """The cost of a CALLEE_OPS op from the ops it calls (``children``: name, dims, concrete, types)."""
    call = bind(name, dims, types, concrete) if isinstance(dims, list) else None
    if call is None:
        return None
    if name in ROUTING_OPS:
        return routing_cost(call, children)
    x, logits = call.tensor("hidden_states"), call.tensor("router_logits")  # by name, as every model
    if x is None or logits is None:
        return None
    return moe_cost([x[0], logits[0]], [call.dtype("hidden_states"), call.dtype("router_logits")], children, kernels)


# ---- the op models: moe_forward from its own arguments, the routing ops by name ---------------------

@model("vllm::moe_forward")
def _moe(call: Call, _: Any) -> OpCost | None:
    h, r = call.tensor("hidden_states"), call.tensor("router_logits")
    if h is None or r is None:
        return None
    return OpCost(NAN, NAN, "none", None, "", "fused MoE: the experts' weight shapes and top_k are not among the op's "
                  f"arguments (hidden_states {h[0]}, router_logits {r[0]}, the layer's name)", matmul_like=True)


def _routing(call: Call, _: Any) -> OpCost | None:
    return routing_base(call)


MODELS["TopK"] = MODELS["SortTokens"] = _routing  # triton_kernels' names: no aten:: prefix
