"""FLOPs and bytes that an operator's semantics imply, from the shapes a PyTorch trace records.

Traces carry no hardware counters: these are "useful work" models, like TraceLens' and
``torch.utils.flop_counter``'s, computed from ``Input Dims``, ``Input type`` and ``Concrete Inputs``,
each argument read **by name** from the op's schema (``op_args.py``, ``aten_schemas.json``). Bytes are
what the op must move at least once, with no cache effects: the DRAM/HBM traffic of a perfect
implementation. Conventions (``docs/traces.md`` lists where they differ from TraceLens, with arithmetic):

* matmul family: 2·M·N·K (per batch); ``addmm``/``baddbmm`` add M·N for the bias, as TraceLens does.
  Bytes: A + B + C (+ bias), each at its own dtype size.
* convolution: 2·N·Cout·∏out·(Cin/groups)·∏kernel (``flop_counter``'s count, no bias term). The output
  size comes from stride/padding/dilation when the trace recorded them, else from an output shape the
  trace establishes (``out_dims``, given by the reader), else FLOPs and bytes are unavailable: nothing is
  assumed. Backward: that count per gradient ``output_mask`` asks for; bytes per gradient pass (dgrad
  reads grad_out + weight, writes grad_input; wgrad reads grad_out + input, writes grad_weight).
* attention (SDPA, flash, efficient, cudnn): forward 2·B·H·Sq·Sk·(Dqk + Dv), halved when causal (as
  TraceLens); backward twice the forward. Bytes: Q, K, V, O (+ dO, dQ, dK, dV in backward).
* elementwise: 1 FLOP per output element (copies and fills: 0); an in-place op reads and writes its
  self (counted twice), an ``out=`` tensor is written once. Reductions 1 per input element; softmax 5,
  norms 4–5 per element. Gathers: no FLOPs; indices + the elements read + the output.

More models (norm backward, inference fused ops, MoE, ...) live in ``op_models_more.py``. An op
without a model gets ``None``: its time still counts and the summary says how many.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from roofline.metrics.ops.args import DTYPE_BYTES, Call, bind, numel, schemas, size

__all__ = ["DTYPE_BYTES", "OpCost", "cost", "collective_bytes", "modelled_ops"]

#: the precision a floating-point dtype computes in on CUDA cores, and on tensor cores
PRECISION = {"float": "fp32", "double": "fp64", "c10::half": "fp16", "c10::bfloat16": "bf16", "half": "fp16",
             "bfloat16": "bf16"}
NAN = float("nan")


@dataclass(frozen=True)
class OpCost:
    flops: float  # NaN when unavailable (``why`` says why)
    bytes: float
    precision: str  # "fp64", "fp32", "fp16", "tensor" or "none"
    tensor_path: str | None  # e.g. "bf16" for tensor work
    formula: str
    why: str = ""  # why FLOPs or bytes are NaN
    args: str = ""  # the schema and the named arguments the model read
    matmul_like: bool = False  # tensor-core eligible: kernel names may decide its precision (TF32)
    bytes_note: str = ""  # what the bytes are when not simply each tensor once (e.g. "upper bound: …")


def unavailable(why: str, args: str = "") -> OpCost:
    return OpCost(NAN, NAN, "none", None, "", why, args)


def compute(t: str, tensor_ok: bool) -> tuple[str, str | None]:
    """(precision slot, tensor path) of work in dtype ``t``."""
    low = (t or "").lower().strip()
    p = PRECISION.get(low)
    if p is None:
        if "float8" in low:
            return ("tensor", "fp8") if tensor_ok else ("fp16", None)
        return "none", None
    if tensor_ok and p in ("fp16", "bf16"):
        return "tensor", p
    return ("fp16" if p == "bf16" else p), None


def broadcast(shapes: list[list[int]]) -> list[int]:
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, v in enumerate([1] * (n - len(s)) + s):
            out[i] = max(out[i], v)
    return out


def nbytes(t: tuple[list[int], int | None] | None) -> float:
    """Bytes of a tensor; NaN when its dtype is not recorded (never a guessed size)."""
    if t is None:
        return 0.0
    return float(numel(t[0]) * t[1]) if t[1] else NAN


Model = Callable[[Call, Any], OpCost | None]
MODELS: dict[str, Model] = {}


def model(*names: str) -> Callable[[Model], Model]:
    def register(f: Model) -> Model:
        for n in names:
            MODELS[n if "::" in n else f"aten::{n}"] = f
        return f
    return register


def modelled_ops() -> list[str]:
    return sorted(MODELS)


def cost(name: str, dims: Sequence[Any] | None, types: Sequence[str] | None,
         concrete: Sequence[Any] | None = None, out_dims: list[int] | None = None) -> OpCost | None:
    """The modelled cost of one call of ``name``; None when there is no model (or no shapes).

    ``out_dims``: the op's output shape where the trace establishes it otherwise (a convolution
    without stride/padding: the reader finds its consumer's input)."""
    f = MODELS.get(name)
    if f is None and name.startswith(("triton_poi_", "triton_red_", "triton_per_")) and isinstance(dims, list) \
            and isinstance(types, list):
        return _inductor_buffers(name, dims, types)
    if f is None or not dims or not isinstance(dims, (list, tuple)):
        return None
    if types is not None and not isinstance(types, (list, tuple)):
        return None  # (a damaged trace's shapes are no shapes)
    call = bind(name, list(dims), list(types) if types else None, concrete if isinstance(concrete, (list, tuple)) else None)
    if call is None:
        known = name in schemas()["ops"]
        return unavailable(f"the {len(dims)} recorded arguments match no schema of {name}"
                           + ("" if known else " (no schema shipped)"))
    try:
        c = f(call, out_dims)
    except (ValueError, IndexError, TypeError, ZeroDivisionError, KeyError):
        return None
    if c is not None and not c.args:
        c = replace(c, args=call.described())
    if c is not None and not call.typed and c.why == "":
        why = "Input type not recorded (a torch 1.8-era trace): bytes need each tensor's dtype"
        c = replace(c, bytes=NAN, why=why)
    return c


#: ATen ops that only move or convert data (no arithmetic, as ``aten::copy_``: docs/traces.md convention 1),
#: and custom ops Inductor never compiles into a Triton kernel (extern calls): in a kernel's name they only
#: say where the data goes
MOVES = frozenset({"_to_copy", "to_copy", "copy", "clone", "constant_pad_nd", "cat", "slice", "select", "view",
                   "permute", "transpose", "expand", "unsqueeze", "squeeze", "as_strided", "reshape", "t",
                   "index_select", "full", "fill", "zeros", "ones", "empty", "new_zeros", "alias", "unbind", "split"})
EXTERN = frozenset({"moe_forward", "unified_attention_with_output", "all_reduce", "rmsnorm2d_fwd_with_add_ck"})
_FUSED = re.compile(r"^triton_(?:poi|red|per)_fused_(.+?)_\d+$")


def inductor_moves_only(name: str) -> bool:
    """Whether an Inductor kernel's name (``triton_poi_fused_<origin ops>_<n>``) lists only data movement:
    its origin ops split, at underscores, into names of MOVES and EXTERN and at least one of MOVES."""
    m = _FUSED.match(name)
    if m is None:
        return False
    words = m.group(1).split("_")
    reach: dict[int, bool] = {0: False}  # word position -> reached, with a move among the names so far
    for i in range(len(words)):
        if i not in reach:
            continue
        for j in range(i + 1, len(words) + 1):
            w = "_".join(words[i:j]).lstrip("_")  # "_to_copy" splits as "", "to", "copy"
            if w in MOVES:
                reach[j] = True
            elif w in EXTERN:
                reach[j] = reach.get(j, False) or reach[i]
    return reach.get(len(words), False)


def _inductor_buffers(name: str, dims: list[Any], types: list[Any]) -> OpCost | None:
    """An Inductor pointwise/reduction Triton kernel without estimates: each buffer it is passed is read or
    written once (an in_out buffer is both, so this is a lower bound); its arithmetic is not recorded,
    unless its name lists only data movement (``triton_poi_fused__to_copy_1``, ``…constant_pad_nd…``):
    then it does none (a copy does no arithmetic)."""
    moved = 0.0
    index = None
    sizes = set()
    for d, t in zip(dims, types):
        z = size(t)
        if z and isinstance(d, list) and d and all(isinstance(v, int) for v in d):
            moved += numel(d) * z
            sizes.add(numel(d))
            if str(t).strip().lower() in INDEX_TYPES and index is None:
                index = (d, t)
    if not moved:
        return None
    once = "each buffer argument once (Inductor Triton kernel; an in-out buffer is read and written: a lower bound)"
    if index is not None and len(sizes) > 1:  # e.g. 32 token ids into a [201088, 2880] table: not 1.2 GB
        moved = NAN
    else:
        index = None
    if inductor_moves_only(name):
        return OpCost(0.0, moved, "none", None, "0: its name lists only data movement (a copy does no arithmetic)",
                      "" if index is None else _GATHER.format(*index),
                      bytes_note="each buffer argument once, read or written (Inductor Triton kernel)")
    return OpCost(NAN, moved, "none", None, once,
                  "an Inductor Triton kernel's arithmetic is not recorded (Input Dims hold its buffers; "
                  "torch._inductor.analysis.profile_analysis adds kernel_flop/kernel_num_gb estimates)"
                  + ("" if index is None else "; " + _GATHER.format(*index)), bytes_note=once)


#: integer tensors an Inductor kernel may index with (a gather reads only the rows they pick); with buffers
#: of different sizes beside them, the bytes are unavailable rather than a table counted whole
INDEX_TYPES = frozenset({"int", "long int", "long", "short", "short int"})
_GATHER = ("bytes: it takes an integer tensor {0} ({1}), so it may gather: the elements it reads are picked by "
           "index values the trace does not hold")


def _first(call: Call, *names: str) -> tuple[list[int], int | None] | None:
    for n in names:
        t = call.tensor(n)
        if t is not None:
            return t
    return None


def _dtype(call: Call, *names: str) -> str:
    for n in names:
        if call.tensor(n) is not None:
            return call.dtype(n)
    return ""


def _precision(call: Call, dtype: str, tensor_ok: bool) -> tuple[str, str | None]:
    if not call.typed:  # the FLOP count does not depend on it; the roof does
        return "fp32", None
    return compute(dtype, tensor_ok)


# ---- matmul ---------------------------------------------------------------------------------------

@model("mm", "matmul", "bmm", "addmm", "baddbmm", "linear", "_addmm_activation", "addbmm")
def _matmul(call: Call, _: Any) -> OpCost | None:
    a = _first(call, "mat1", "batch1", "self", "input")
    b = _first(call, "mat2", "other", "weight", "batch2")
    if a is None or b is None:
        return None
    bias = _first(call, "bias") if call.has("bias") else (
        call.tensor("self") if call.has("mat1") or call.has("batch1") else None)
    (sa, za), (sb, zb) = a, b
    name = call.name
    if name == "aten::linear":
        m, k, n, batch = numel(sa[:-1]) or 1, sa[-1], sb[0], 1
    elif len(sa) == 3 and len(sb) == 3:
        batch, m, k, n = sa[0], sa[1], sa[2], sb[2]
    elif len(sa) == 2 and len(sb) == 2:
        batch, m, k, n = 1, sa[0], sa[1], sb[1]
    else:
        return None  # (matmul of other ranks dispatches to mm/bmm, which carry the kernels)
    if name == "aten::addbmm":
        bias_flops = m * n
    else:
        bias_flops = batch * m * n if bias is not None and numel(bias[0]) > 0 else 0
    flops = 2 * batch * m * n * k + bias_flops
    out_t = call.tensor("out") if call.has("out") else None
    zc = (out_t[1] if out_t else za) or NAN
    outs = 1 if name in ("aten::linear", "aten::addbmm") else batch  # linear folds its batch into M
    moved = batch * (m * k * (za or NAN) + k * n * (zb or NAN)) + outs * m * n * zc
    if name == "aten::linear":
        moved = m * k * (za or NAN) + k * n * (zb or NAN) + m * n * zc
    moved += nbytes(bias) if bias is not None else 0
    dtype = _dtype(call, "mat1", "batch1", "self", "input")
    precision, path = _precision(call, dtype, True)
    formula = (f"{'B·' if batch > 1 else ''}2·M·N·K{' + M·N (bias)' if bias_flops else ''}, "
               + (f"B={batch} " if batch > 1 else "") + f"M={m} N={n} K={k}")
    return OpCost(float(flops), float(moved), precision, path, formula, matmul_like=True)


# ---- convolution ----------------------------------------------------------------------------------

FORWARD_CONV = ("convolution", "_convolution", "conv1d", "conv2d", "conv3d", "cudnn_convolution",
                "miopen_convolution", "mkldnn_convolution", "conv_transpose1d", "conv_transpose2d",
                "conv_transpose3d", "cudnn_convolution_transpose", "miopen_depthwise_convolution")
NOT_RECORDED = ("stride/padding/dilation not recorded and the output shape is not established by the trace "
                "(PyTorch >= 2.x with record_shapes=True records them)")


def conv_out(x: list[int], w: list[int], stride: list[int], pad: list[int], dil: list[int],
             transposed: bool = False, out_pad: list[int] | None = None) -> list[int]:
    nsp = len(x) - 2
    op = out_pad or [0] * nsp
    if transposed:
        return [(x[2 + i] - 1) * stride[i] - 2 * pad[i] + dil[i] * (w[2 + i] - 1) + op[i] + 1 for i in range(nsp)]
    return [(x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]


def _spatial(v: list[int] | None, nsp: int) -> list[int] | None:
    if v is None:
        return None
    return v * nsp if len(v) == 1 else v if len(v) == nsp else None


def conv_out_from_consumer(dims: Any, later: list[Any]) -> list[int] | None:
    """A convolution's output shape from the op that consumes it, only when the link is unambiguous:
    among the ops that follow it on its thread, the first that takes a tensor of the output's rank must
    take exactly one shaped [N, Cout, …] whose spatial sizes some stride ≥ 1 and padding ≤ kernel reach;
    anything else (none, two, an impossible size) establishes nothing."""
    try:
        x, w = dims[0], dims[1]
        rank = len(x)
        for d in later:
            if not isinstance(d, list):
                continue
            flat = [s for s in d if isinstance(s, list) and len(s) == rank and all(isinstance(v, int) for v in s)]
            if not flat:
                continue
            fits = [s for s in flat if s[0] == x[0] and s[1] == w[0] and
                    all(1 <= s[2 + i] <= x[2 + i] + 2 * w[2 + i] - w[2 + i] + 1 for i in range(rank - 2))]
            uniq = {tuple(s) for s in fits}
            return list(next(iter(uniq))) if len(uniq) == 1 else None
    except (TypeError, IndexError):
        return None
    return None


@model(*FORWARD_CONV)
def _conv(call: Call, out_dims: Any) -> OpCost | None:
    x, w = _first(call, "input", "self"), call.tensor("weight")
    if x is None or w is None or len(x[0]) < 3 or len(w[0]) != len(x[0]):
        return None
    (xs, zx), (ws, zw) = x, w
    nsp = len(xs) - 2
    transposed = "transpose" in call.name or bool(call.flag("transposed"))
    stride, pad, dil = (_spatial(call.ints(a), nsp) for a in ("stride", "padding", "dilation"))
    pad_text = str(call.values.get("padding", "")).strip().strip("'\"").lower()
    if pad_text in ("same", "valid") and stride is not None and dil is not None:
        pad = None if pad_text == "same" else [0] * nsp
        out = [xs[2 + i] for i in range(nsp)] if pad_text == "same" else None
        if out is None:
            out = conv_out(xs, ws, stride, [0] * nsp, dil)
        how = f"padding='{pad_text}'"
    elif stride is not None and pad is not None and dil is not None:
        out = conv_out(xs, ws, stride, pad, dil, transposed, _spatial(call.ints("output_padding"), nsp))
        how = f"stride={stride} pad={pad} dil={dil}"
    elif out_dims is not None and len(out_dims) == len(xs) and out_dims[0] == xs[0] and \
            out_dims[1] == (ws[1] * max(1, xs[1] // max(1, ws[0])) if transposed else ws[0]):
        out = list(out_dims[2:])
        how = "output shape from the op that consumes it (stride/padding not recorded)"
    else:
        return unavailable(NOT_RECORDED)
    n = xs[0]
    if transposed:  # weight [Cin, Cout/g, k...]: each input element scatters into Cout/g·∏k outputs
        cout = ws[1] * max(1, xs[1] // max(1, ws[0])) if call.ints("groups") is None else ws[1] * call.ints("groups")[0]
        flops = 2 * n * xs[1] * math.prod(xs[2:]) * ws[1] * math.prod(ws[2:])
    else:
        cout = ws[0]
        flops = 2 * n * cout * math.prod(out) * ws[1] * math.prod(ws[2:])
    groups = xs[1] // ws[1] if not transposed and ws[1] else None
    bias = call.tensor("bias") if call.has("bias") else None
    y = n * cout * math.prod(out) * (zx or NAN)
    moved = nbytes(x) + nbytes(w) + y + (nbytes(bias) if bias else 0)
    precision, path = _precision(call, call.dtype("input") or call.dtype("self"), True)
    formula = f"2·N·Cout·∏out·Cin/g·∏k, out={out}, {how}, groups={groups if groups else '?'}"
    return OpCost(float(flops), float(moved), precision, path, formula, matmul_like=True)


@model("convolution_backward", "cudnn_convolution_backward", "miopen_convolution_backward",
       "cudnn_convolution_backward_input", "cudnn_convolution_backward_weight",
       "miopen_convolution_backward_input", "miopen_convolution_backward_weight")
def _conv_backward(call: Call, _: Any) -> OpCost | None:
    g = call.tensor("grad_output")
    x = _first(call, "input", "self")
    w = call.tensor("weight")
    if g is None:
        return None
    name = call.name
    if name.endswith("_input"):
        mask = [True, False, False]
    elif name.endswith("_weight"):
        mask = [False, True, False]
    else:
        m = call.flags("output_mask")
        mask = (m + [False] * 3)[:3] if m else [True, True, False]
    gs = g[0]
    if w is None:
        if x is None:
            return None
        return unavailable(f"{name}: the weight's shape is an int list the trace does not record "
                           "(the kernel size is not recorded in traces of this era)")
    ws = w[0]
    fwd = 2 * gs[0] * gs[1] * math.prod(gs[2:]) * ws[1] * math.prod(ws[2:])
    grads = sum(mask[:2])
    flops = fwd * grads + (gs[0] * gs[1] * math.prod(gs[2:]) if mask[2] else 0)
    gb, wb = nbytes(g), nbytes(w)
    xb = nbytes(x) if x is not None else NAN
    moved = (gb + wb + xb if mask[0] else 0) + (gb + xb + wb if mask[1] else 0) + (gb + gs[1] * (g[1] or NAN) if mask[2] else 0)
    precision, path = _precision(call, call.dtype("grad_output"), True)
    which = "+".join(n for n, m in zip(("dgrad", "wgrad", "bias grad"), mask) if m)
    formula = f"{grads} × 2·N·Cout·∏out·Cin/g·∏k ({which}), each pass reads its operands and writes its gradient"
    why = "" if not math.isnan(moved) else f"{name}: the input's shape is an int list the trace does not record"
    return OpCost(float(flops), float(moved), precision, path, formula, why, matmul_like=True)


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
            from roofline.metrics.op_models_more import _varlen_attention

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
    z = zq or NAN
    io = (b * h * sq * dqk + b * h * sk * dqk + b * h * sk * dv + b * h * sq * dv) * z
    if backward:
        flops, moved = 2 * fwd, 2 * io
        formula = f"2 × forward (2·B·H·Sq·Sk·(Dqk+Dv){', causal ½' if causal else ''})"
    else:
        flops, moved = fwd, io
        formula = f"2·B·H·Sq·Sk·(Dqk+Dv){' × ½ (causal)' if causal else ''}, B={b} H={h} Sq={sq} Sk={sk} D={dqk}"
    precision, path = _precision(call, call.dtype("query"), True)
    return OpCost(float(flops), float(moved), precision, path, formula, matmul_like=True)


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
    precision, _p = _precision(call, dtype, False)
    how = "in place: self read and written" if inplace else ("out= written once" if out_t else "inputs + output")
    return OpCost(float(numel(shape)), float(moved), precision, None, f"1 FLOP per output element ({how})")


@model("copy_", "clone", "contiguous", "_to_copy", "to", "fill_", "zero_", "zeros_like", "ones_like", "full",
       "new_zeros", "masked_scatter_")
def _move(call: Call, _: Any) -> OpCost | None:
    base = call.name.removeprefix("aten::")
    if base in ("fill_", "zero_"):
        t = call.tensor("self")
        return OpCost(0.0, nbytes(t), "none", None, "fill: write every element") if t else None
    if base == "copy_":  # self is written, src read; self is not read
        s, d = call.tensor("src"), call.tensor("self")
        if s is None or d is None:
            return None
        return OpCost(0.0, nbytes(s) + numel(broadcast([s[0], d[0]])) * (d[1] or NAN), "none", None,
                      "copy: src read + self written (no arithmetic)")
    t = call.tensor("self")
    if t is None:
        return None
    return OpCost(0.0, 2 * nbytes(t), "none", None, "copy: read + write every element")


# ---- reductions, softmax, norms, gathers ----------------------------------------------------------

REDUCTIONS = ("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "all", "any", "norm", "var",
              "std", "prod", "cumsum", "logsumexp", "var_mean", "std_mean", "linalg_vector_norm")


@model(*REDUCTIONS)
def _reduce(call: Call, _: Any) -> OpCost | None:
    t = _first(call, "self", "input")
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
    precision, _p = _precision(call, _dtype(call, "self", "input"), False)
    return OpCost(float(n), nbytes(t) + out * (osize or NAN), precision, None,
                  "1 FLOP per input element (reduction); input + output")


def collective_bytes(nelems: Any, dtype: Any) -> float | None:
    """Bytes a collective moves per rank: elements × dtype size (NCCL args)."""
    try:
        n = float(nelems)
    except (TypeError, ValueError):
        return None
    z = size(str(dtype)) or {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
                             "uint8": 1, "int8": 1}.get(str(dtype).lower())
    return n * z if z else None


import roofline.metrics.op_models_more  # noqa: E402,F401  (registers its models into MODELS)
