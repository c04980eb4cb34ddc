"""Elementwise ops and reductions: unary and binary elementwise ops, the fused act-and-mul and RoPE of
inference engines (SGLang, vLLM), and reductions.

* elementwise: 1 FLOP per output element; an in-place op reads and writes its self (counted twice), an
  ``out=`` tensor is written once. Reductions 1 per input element.
"""

from __future__ import annotations

from typing import Any

from roofline.metrics.ops.args import Call, numel
from roofline.metrics.ops.core import NAN, OpCost, broadcast, first, first_dtype, model, nbytes, precision_of

# ---- elementwise ----------------------------------------------------------------------------------

UNARY = ("neg", "rsqrt", "sqrt", "exp", "log", "cos", "sin", "tanh", "sigmoid", "relu", "gelu", "silu", "abs",
         "reciprocal", "erf", "hardtanh", "leaky_relu", "clamp", "clamp_min", "clamp_max", "masked_fill",
         "hardswish", "hardsigmoid", "elu", "log1p", "expm1", "exp2", "floor", "ceil", "round", "sign",
         "logical_not", "bitwise_not", "square", "mish", "softplus", "nan_to_num", "pow", "threshold")
BINARY = ("add", "sub", "mul", "div", "eq", "ne", "lt", "gt", "le", "ge", "minimum", "maximum", "fmod",
          "remainder", "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward",
          "tanh_backward", "where", "addcmul", "addcdiv", "lerp", "logical_and", "logical_or", "bitwise_and",
          "bitwise_or", "rsub", "floor_divide", "atan2", "hardtanh_backward", "leaky_relu_backward",
          "hardswish_backward", "mish_backward", "softplus_backward", "elu_backward")
COMPARISONS = frozenset({"eq", "ne", "lt", "gt", "le", "ge", "logical_and", "logical_or", "logical_not"})
ELEMENTWISE = UNARY + BINARY + tuple(f"{n}_" for n in UNARY + BINARY)


@model(*ELEMENTWISE)
def _elementwise(call: Call, _: Any) -> OpCost | None:
    base = call.name.removeprefix("aten::")
    inplace = base.endswith("_")
    ins = [(a, t) for a in call.dims if a != "out" and (t := call.tensor(a)) is not None]
    if not ins:
        return None
    out_t = call.tensor("out") if call.has("out") else None
    shape = broadcast([s for _, (s, _) in ins])
    first = dict(ins).get("self") or ins[0][1]
    if out_t is not None:
        out_size = out_t[1]
    elif base.rstrip("_") in COMPARISONS:
        out_size = 1
    elif base.rstrip("_") == "where":
        out_size = (dict(ins).get("self") or first)[1]
    else:
        out_size = first[1]
    read = sum(nbytes(t) for _, t in ins)
    # in place: self is read and written (its write is the output); out=: written once, not read
    moved = read + numel(shape) * (out_size or NAN)
    dtype = next((call.dtype(a) for a, _ in ins), "")
    precision, _p = precision_of(call, dtype, False)
    how = "in place: self read and written" if inplace else ("out= written once" if out_t else "inputs + output")
    return OpCost(float(numel(shape)), float(moved), precision, None, f"1 FLOP per output element ({how})")


# ---- fused ops of inference engines ----------------------------------------------------------------

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
    precision, _ = precision_of(call, call.dtype("query"), False)
    return OpCost(float(flops), float(moved), precision, None,
                  "RoPE: 3 FLOP per rotated element; q, k read and written, positions and their cos/sin rows read")


@model("sgl_kernel::silu_and_mul", "sgl_kernel::gelu_and_mul", "_C::silu_and_mul")
def _act_and_mul(call: Call, _: Any) -> OpCost | None:
    x = call.tensor("input")
    if x is None:
        return None
    half = numel(x[0]) // 2
    # silu(a)·b: a/(1+exp(−a)) is 4, ·b 1: 5 FLOP per output element
    precision, _ = precision_of(call, call.dtype("input"), False)
    return OpCost(float(5 * half), float(nbytes(x) + half * (x[1] or NAN)), precision, None,
                  "act(a)·b: 5 FLOP per output element; input [.., 2·d] read, output [.., d] written")


# ---- reductions -----------------------------------------------------------------------------------

REDUCTIONS = ("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "all", "any", "norm", "var",
              "std", "prod", "cumsum", "logsumexp", "var_mean", "std_mean", "linalg_vector_norm")


@model(*REDUCTIONS)
def _reduce(call: Call, _: Any) -> OpCost | None:
    t = first(call, "self", "input")
    if t is None:
        return None
    n = numel(t[0])
    out = n if call.name == "aten::cumsum" else None
    dims = call.ints("dim")
    if out is None:
        if dims is None:
            out = 1
        else:
            rank = len(t[0])
            keep = [d for i, d in enumerate(t[0]) if i not in {x % max(rank, 1) for x in dims}]
            out = numel(keep)
    out_t = call.tensor("out") if call.has("out") else None
    osize = out_t[1] if out_t else t[1]
    if call.name in ("aten::argmax", "aten::argmin"):
        osize = 8
    precision, _p = precision_of(call, first_dtype(call, "self", "input"), False)
    return OpCost(float(n), nbytes(t) + out * (osize or NAN), precision, None,
                  "1 FLOP per input element (reduction); input + output")
