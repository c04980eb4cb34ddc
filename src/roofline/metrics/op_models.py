"""FLOPs and bytes that an operator's semantics imply, from the shapes a PyTorch trace records.

Traces carry no hardware counters: these are "useful work" models, like TraceLens' and
``torch.utils.flop_counter``'s, computed from ``Input Dims``, ``Input type`` and ``Concrete Inputs``.
Bytes are what the op must read and write at least once (inputs + outputs), with no cache effects,
so they are the DRAM/HBM traffic of a perfect implementation.

Conventions (tests hold them against TraceLens' reference outputs):

* matmul family: 2·M·N·K (per batch); ``addmm``/``baddbmm`` add M·N for the bias, as TraceLens does.
  Bytes: A + B + C (+ bias), each at its own dtype size.
* convolution: 2·N·Cout·∏out·(Cin/groups)·∏kernel (``flop_counter``'s count, no bias term); backward
  twice that per gradient asked for. Bytes: input + weight (+ bias) + output.
* attention (SDPA, flash, efficient, cudnn): forward 2·B·H·Sq·Sk·(Dqk + Dv), halved when causal (as
  TraceLens); backward twice the forward (``flop_counter``; no recomputation counted).
  Bytes: Q, K, V, O (+ dO, dQ, dK, dV in backward).
* elementwise: 1 FLOP per output element (copies and fills: 0); reductions 1 per input element;
  softmax 5, layer/group/batch norm 5, RMS norm 4 per element (max/sub/exp/sum/div; mean/var/normalise/
  scale/shift). Bytes: tensor inputs + the broadcast output.
* embedding / index_select / gather: no FLOPs; bytes = indices + the rows read + the output.

An op without a model gets ``None``: its time still counts and the summary says how many.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DTYPE_BYTES = {
    "float": 4, "double": 8, "c10::half": 2, "c10::bfloat16": 2, "half": 2, "bfloat16": 2,
    "long int": 8, "long": 8, "int": 4, "short": 2, "short int": 2, "bool": 1, "unsigned char": 1,
    "signed char": 1, "char": 1, "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1, "c10::float8_e4m3fnuz": 1,
    "c10::float8_e5m2fnuz": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
}
#: the precision a floating-point dtype computes in on CUDA cores, and on tensor cores
PRECISION = {"float": "fp32", "double": "fp64", "c10::half": "fp16", "c10::bfloat16": "bf16", "half": "fp16",
             "bfloat16": "bf16"}


@dataclass(frozen=True)
class OpCost:
    flops: float
    bytes: float
    precision: str  # "fp64", "fp32", "fp16", "tensor" or "none"
    tensor_path: str | None  # e.g. "bf16" for tensor work
    formula: str


def _numel(dims: Any) -> int:
    if not isinstance(dims, list) or any(not isinstance(d, (int, float)) for d in dims):
        return 0
    return int(math.prod(int(d) for d in dims))


def _size(t: str) -> int | None:
    return DTYPE_BYTES.get(t.lower().strip()) if isinstance(t, str) else None


def _tensors(dims: Sequence[Any], types: Sequence[str]) -> list[tuple[list[int], int]]:
    """(shape, itemsize) of the plain tensor inputs (TensorLists and scalars left out)."""
    out = []
    for d, t in zip(dims, types):
        size = _size(t)
        if size and isinstance(d, list) and all(isinstance(x, (int, float)) for x in d):
            out.append(([int(x) for x in d], size))
    return out


def _broadcast(shapes: list[list[int]]) -> list[int]:
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, v in enumerate([1] * (n - len(s)) + s):
            out[i] = max(out[i], v)
    return out


def _ints(text: Any) -> list[int] | None:
    if not isinstance(text, str):
        return None
    nums = re.findall(r"-?\d+", text)
    return [int(x) for x in nums] if nums else None


def _flag(text: Any) -> bool:
    return isinstance(text, str) and text.strip().lower() in ("true", "1")


def _compute(t: str, tensor_ok: bool) -> tuple[str, str | None]:
    p = PRECISION.get((t or "").lower().strip())
    if p is None:
        return ("fp8" if "float8" in (t or "").lower() else "none"), None
    if tensor_ok and p in ("fp16", "bf16"):
        return "tensor", p
    if tensor_ok and "float8" in (t or "").lower():
        return "tensor", "fp8"
    return ("fp16" if p == "bf16" else p), None


MATMUL = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear", "aten::_addmm_activation"}
CONV = {"aten::convolution", "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d",
        "aten::cudnn_convolution", "aten::miopen_convolution", "aten::convolution_backward"}
ATTENTION = {"aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
             "aten::_scaled_dot_product_cudnn_attention", "aten::scaled_dot_product_attention",
             "aten::_scaled_dot_product_flash_attention_backward", "aten::_scaled_dot_product_efficient_attention_backward",
             "aten::_scaled_dot_product_cudnn_attention_backward", "aten::_flash_attention_forward",
             "aten::_flash_attention_backward", "aten::_efficient_attention_forward", "aten::_efficient_attention_backward"}
ELEMENTWISE = {"add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "pow", "rsqrt", "sqrt", "exp", "log",
               "cos", "sin", "tanh", "sigmoid", "relu", "relu_", "gelu", "silu", "silu_", "threshold_backward",
               "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward", "clamp", "clamp_", "where",
               "eq", "ne", "lt", "gt", "le", "ge", "abs", "reciprocal", "addcmul_", "addcdiv_", "lerp_", "erf",
               "masked_fill", "masked_fill_", "hardtanh", "hardtanh_", "leaky_relu", "minimum", "maximum", "fmod"}
#: tensor inputs of an out-of-place elementwise op; one more, shaped like the result, is its ``out=``
#: (``aten::mul`` of ``mul.out``) and must not be counted as an input and again as the output
ELEMENTWISE_ARITY = {**dict.fromkeys(("neg", "rsqrt", "sqrt", "exp", "log", "cos", "sin", "tanh", "sigmoid", "relu",
                                      "gelu", "silu", "abs", "reciprocal", "erf", "hardtanh", "leaky_relu"), 1),
                     **dict.fromkeys(("add", "sub", "mul", "div", "pow", "eq", "ne", "lt", "gt", "le", "ge",
                                      "minimum", "maximum", "fmod", "threshold_backward", "gelu_backward",
                                      "silu_backward", "sigmoid_backward", "tanh_backward"), 2),
                     "where": 3, "clamp": 3, "masked_fill": 3}
COMPARISONS = {"eq", "ne", "lt", "gt", "le", "ge"}
MOVES = {"copy_", "fill_", "zero_", "clone", "contiguous", "_to_copy", "cat", "stack"}
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "all", "any", "norm", "var", "std", "prod"}
SOFTMAX = {"softmax", "_softmax", "log_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data"}
NORMS = {"layer_norm": 5, "native_layer_norm": 5, "group_norm": 5, "native_group_norm": 5, "batch_norm": 5,
         "native_batch_norm": 5, "_batch_norm_impl_index": 5, "cudnn_batch_norm": 5, "rms_norm": 4, "_fused_rms_norm": 4,
         "native_layer_norm_backward": 10, "native_batch_norm_backward": 10, "cudnn_batch_norm_backward": 10}
GATHERS = {"embedding", "index_select", "gather", "embedding_dense_backward", "index"}


def cost(name: str, dims: Sequence[Any] | None, types: Sequence[str] | None,
         concrete: Sequence[Any] | None = None) -> OpCost | None:
    """The modelled cost of one call of ``name``, or None when there is no model (or no shapes)."""
    if not dims or not types or not isinstance(dims, (list, tuple)) or not isinstance(types, (list, tuple)):
        return None  # (a damaged trace's shapes are no shapes)
    concrete = list(concrete) if isinstance(concrete, (list, tuple)) else []
    try:
        if name in MATMUL:
            return _matmul(name, dims, types)
        if name in CONV:
            return _conv(name, dims, types, concrete)
        if name in ATTENTION:
            return _attention(name, dims, types, concrete)
        base = name.removeprefix("aten::")
        if base in ELEMENTWISE or base in MOVES:
            return _elementwise(base, dims, types)
        if base in REDUCTIONS:
            return _per_input(base, dims, types, 1, "1 FLOP per input element (reduction)")
        if base in SOFTMAX:
            return _per_input(base, dims, types, 5, "5 FLOP per element (max, sub, exp, sum, div)", out_same=True)
        if base in NORMS:
            return _per_input(base, dims, types, NORMS[base], f"{NORMS[base]} FLOP per element (normalisation)",
                              out_same=True)
        if base in GATHERS:
            return _gather(base, dims, types)
    except (ValueError, IndexError, TypeError, ZeroDivisionError):
        return None
    return None


def _matmul(name: str, dims: Sequence[Any], types: Sequence[str]) -> OpCost | None:
    t = [(d, _size(ty), ty) for d, ty in zip(dims, types)]
    if name in ("aten::addmm", "aten::_addmm_activation"):
        (bias, sb, _), (a, s, ty), (b, s2, _) = t[0], t[1], t[2]
        m, k, n = a[0], a[1], b[1]
        flops = 2 * m * n * k + m * n
        nbytes = _numel(bias) * (sb or s) + (m * k + m * n) * s + k * n * (s2 or s)
        formula = f"2·M·N·K + M·N (bias), M={m} N={n} K={k}"
    elif name == "aten::baddbmm":
        (bias, sb, _), (a, s, ty), (b, s2, _) = t[0], t[1], t[2]
        bt, m, k, n = a[0], a[1], a[2], b[2]
        flops = bt * (2 * m * n * k + m * n)
        nbytes = _numel(bias) * (sb or s) + bt * ((m * k + m * n) * s + k * n * (s2 or s))
        formula = f"B·(2·M·N·K + M·N), B={bt} M={m} N={n} K={k}"
    elif name == "aten::bmm":
        (a, s, ty), (b, s2, _) = t[0], t[1]
        bt, m, k, n = a[0], a[1], a[2], b[2]
        flops = 2 * bt * m * n * k
        nbytes = bt * ((m * k + m * n) * s + k * n * (s2 or s))
        formula = f"2·B·M·N·K, B={bt} M={m} N={n} K={k}"
    elif name == "aten::linear":
        (x, s, ty), (w, s2, _) = t[0], t[1]
        m, k, n = _numel(x[:-1]) or 1, x[-1], w[0]
        has_bias = len(t) > 2 and isinstance(t[2][0], list) and len(t[2][0]) > 0
        flops = 2 * m * n * k + (m * n if has_bias else 0)
        nbytes = (m * k + m * n) * s + n * k * (s2 or s) + (n * s if has_bias else 0)
        formula = f"2·M·N·K{' + M·N (bias)' if has_bias else ''}, M={m} N={n} K={k}"
    else:  # mm, matmul (2-D)
        (a, s, ty), (b, s2, _) = t[0], t[1]
        if len(a) != 2 or len(b) != 2:
            return None
        m, k, n = a[0], a[1], b[1]
        flops = 2 * m * n * k
        nbytes = (m * k + m * n) * s + k * n * (s2 or s)
        formula = f"2·M·N·K, M={m} N={n} K={k}"
    precision, path = _compute(ty, True)
    return OpCost(float(flops), float(nbytes), precision, path, formula)


def _conv(name: str, dims: Sequence[Any], types: Sequence[str], concrete: list[Any]) -> OpCost | None:
    backward = name == "aten::convolution_backward"
    if backward:  # grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, out_pad, groups, mask
        grad, x, w = dims[0], dims[1], dims[2]
        stride, pad, dil = (_ints(concrete[i]) if len(concrete) > i else None for i in (4, 5, 6))
        groups = (_ints(concrete[9]) or [1])[0] if len(concrete) > 9 else 1
        mask = re.findall(r"true|false", str(concrete[10]).lower()) if len(concrete) > 10 else []
    elif name == "aten::cudnn_convolution":  # input, weight, padding, stride, dilation, groups, ...
        x, w = dims[0], dims[1]
        pad, stride, dil = (_ints(concrete[i]) if len(concrete) > i else None for i in (2, 3, 4))
        groups = (_ints(concrete[5]) or [1])[0] if len(concrete) > 5 else 1
    else:  # input, weight, bias, stride, padding, dilation, (transposed, output_padding,) groups
        x, w = dims[0], dims[1]
        stride, pad, dil = (_ints(concrete[i]) if len(concrete) > i else None for i in (3, 4, 5))
        gi = 8 if name in ("aten::convolution", "aten::_convolution") else 6
        groups = (_ints(concrete[gi]) or [1])[0] if len(concrete) > gi else 1
    nsp = len(x) - 2
    stride, pad, dil = (v if v and len(v) == nsp else (v * nsp if v and len(v) == 1 else d)
                        for v, d in ((stride, [1] * nsp), (pad, [0] * nsp), (dil, [1] * nsp)))
    out = [(x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    if backward:
        out = list(dims[0][2:])
    n, cout, cin_g = x[0], w[0], w[1]
    fwd = 2 * n * cout * math.prod(out) * cin_g * math.prod(w[2:])
    s = _size(types[0]) or 4
    x_b, w_b, y_b = _numel(x) * s, _numel(w) * s, n * cout * math.prod(out) * s
    if backward:
        grads = sum(1 for m in mask[:2] if m == "true") if mask else 2
        flops, nbytes = fwd * grads, y_b + x_b + w_b + (x_b if not mask or mask[0] == "true" else 0) + (
            w_b if not mask or (len(mask) > 1 and mask[1] == "true") else 0)
        formula = f"{grads} × 2·N·Cout·∏out·Cin/g·∏k (backward), groups={groups}"
    else:
        has_bias = len(dims) > 2 and isinstance(dims[2], list) and len(dims[2]) > 0
        flops, nbytes = fwd, x_b + w_b + y_b + (cout * s if has_bias else 0)
        formula = f"2·N·Cout·∏out·Cin/g·∏k, out={out}, stride={stride}, pad={pad}, dil={dil}, groups={groups}"
    precision, path = _compute(types[0], True)
    return OpCost(float(flops), float(nbytes), precision, path, formula)


def _attention(name: str, dims: Sequence[Any], types: Sequence[str], concrete: list[Any]) -> OpCost | None:
    backward = "backward" in name
    if name in ("aten::_flash_attention_forward", "aten::_flash_attention_backward",
                "aten::_efficient_attention_forward", "aten::_efficient_attention_backward"):
        # these take [B, S, H, D]
        qi = 1 if backward else 0
        q, k, v = dims[qi], dims[qi + 1], dims[qi + 2]
        b, sq, h, dqk = q
        sk, dv = k[1], v[3]
    else:
        qi = 1 if backward else 0  # backward: grad_out, q, k, v, ...
        q, k, v = dims[qi], dims[qi + 1], dims[qi + 2]
        b, h, sq, dqk = q[0], q[1], q[-2], q[-1]
        if len(q) == 3:
            b, h = q[0], 1
        sk, dv = k[-2], v[-1]
    causal = _causal(name, concrete)
    fwd = 2 * b * h * sq * sk * (dqk + dv)
    if causal:
        fwd //= 2
    s = _size(types[qi]) or 2
    io = (b * h * sq * dqk + b * h * sk * dqk + b * h * sk * dv + b * h * sq * dv) * s
    if backward:
        flops, nbytes = 2 * fwd, io + (b * h * sq * dv + b * h * sq * dqk + b * h * sk * dqk + b * h * sk * dv) * s
        formula = f"2 × forward (2·B·H·Sq·Sk·(Dqk+Dv){', causal ½' if causal else ''})"
    else:
        flops, nbytes = fwd, io
        formula = f"2·B·H·Sq·Sk·(Dqk+Dv){' × ½ (causal)' if causal else ''}, B={b} H={h} Sq={sq} Sk={sk} D={dqk}"
    precision, path = _compute(types[qi], True)
    return OpCost(float(flops), float(nbytes), precision, path, formula)


def _causal(name: str, concrete: list[Any]) -> bool:
    # position of is_causal in each schema
    pos = {"aten::_scaled_dot_product_flash_attention": 4, "aten::_scaled_dot_product_efficient_attention": 6,
           "aten::_scaled_dot_product_cudnn_attention": 6, "aten::scaled_dot_product_attention": 5,
           "aten::_flash_attention_forward": 8, "aten::_scaled_dot_product_flash_attention_backward": 9,
           "aten::_scaled_dot_product_efficient_attention_backward": 10}.get(name)
    return pos is not None and len(concrete) > pos and _flag(concrete[pos])


def _elementwise(base: str, dims: Sequence[Any], types: Sequence[str]) -> OpCost | None:
    ts = _tensors(dims, types)
    if not ts:
        return None
    if base in ("cat", "stack"):
        moved = sum(_numel(s) * z for s, z in ts)
        return OpCost(0.0, float(2 * moved), "none", None, "concatenation: read + write every element")
    # result element size: a comparison's is bool, where(cond, self, other)'s that of self, else the first input's
    out_size = 1 if base in COMPARISONS else ts[1][1] if base == "where" and len(ts) > 1 else ts[0][1]
    arity = ELEMENTWISE_ARITY.get(base)
    if arity and len(ts) == arity + 1 and ts[-1][0] == _broadcast([s for s, _ in ts[:-1]]):
        ts, out_size = ts[:-1], ts[-1][1]  # the trailing tensor is out=: the output, written once
    out = _broadcast([s for s, _ in ts])
    out_bytes = _numel(out) * out_size
    # every tensor once: an in-place op's (and copy_'s) output is its self, already counted among the inputs
    nbytes = sum(_numel(s) * z for s, z in ts) + (0 if base.endswith("_") else out_bytes)
    if base in MOVES:
        if base in ("fill_", "zero_"):
            return OpCost(0.0, float(out_bytes), "none", None, "fill: write every element")
        return OpCost(0.0, float(nbytes), "none", None, "copy: read + write every element")
    precision, _ = _compute(next((t for t in types if _size(t)), ""), False)
    return OpCost(float(_numel(out)), float(nbytes), precision, None, "1 FLOP per output element")


def _per_input(base: str, dims: Sequence[Any], types: Sequence[str], per: int, formula: str,
               out_same: bool = False) -> OpCost | None:
    ts = _tensors(dims, types)
    if not ts:
        return None
    shape, size = ts[0]
    n = _numel(shape)
    nbytes = sum(_numel(s) * z for s, z in ts) + (n * size if out_same else 0)
    precision, _ = _compute(types[0], False)
    return OpCost(float(per * n), float(nbytes), precision, None, formula)


def _gather(base: str, dims: Sequence[Any], types: Sequence[str]) -> OpCost | None:
    ts = [(d, _size(t)) for d, t in zip(dims, types)]
    if base == "embedding":
        (w, sw), (idx, si) = ts[0], ts[1]
        rows = _numel(idx)
        nbytes = rows * (si or 8) + 2 * rows * w[-1] * (sw or 4)
    elif base == "index_select":  # self, dim, index
        (x, sx), (idx, si) = ts[0], ts[2]
        rows = _numel(idx)
        per_row = _numel(x) // max(1, x[0]) if x else 0
        nbytes = rows * (si or 8) + 2 * rows * per_row * (sx or 4)
    elif base == "gather":  # self, dim, index[, sparse_grad, out]: one element of self per index, not all of self
        (x, sx), (idx, si) = ts[0], ts[2]
        n = _numel(idx)
        nbytes = n * (si or 8) + 2 * n * (sx or 4)
    else:
        t = _tensors(dims, types)
        nbytes = sum(_numel(s) * z for s, z in t) * 2
    return OpCost(0.0, float(nbytes), "none", None, "gather: indices + rows read + output written")


def collective_bytes(nelems: Any, dtype: Any) -> float | None:
    """Bytes a collective moves per rank: elements × dtype size (NCCL args)."""
    try:
        n = float(nelems)
    except (TypeError, ValueError):
        return None
    size = _size(str(dtype)) or {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
                                 "uint8": 1, "int8": 1}.get(str(dtype).lower())
    return n * size if size else None
