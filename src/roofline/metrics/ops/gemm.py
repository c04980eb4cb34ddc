"""GEMMs and convolutions: the matmul family, convolutions forward and backward, the GEMMs of inference
engines (aiter, vLLM) and the grouped GEMM of MoE experts.

* matmul family: 2·M·N·K (per batch); ``addmm``/``baddbmm`` add M·N for the bias, as TraceLens does.
  Bytes: A + B + C (+ bias), each at its own dtype size.
* convolution: 2·N·Cout·∏out·(Cin/groups)·∏kernel (``flop_counter``'s count, no bias term). The output
  size comes from stride/padding/dilation when the trace recorded them, else from an output shape the
  trace establishes (``out_dims``, given by the reader), else FLOPs and bytes are unavailable: nothing is
  assumed. Backward: that count per gradient ``output_mask`` asks for; bytes per gradient pass (dgrad
  reads grad_out + weight, writes grad_input; wgrad reads grad_out + input, writes grad_weight).
"""

from __future__ import annotations

import math
from typing import Any

from roofline.metrics.ops.args import Call, numel
from roofline.metrics.ops.core import NAN, OpCost, first, first_dtype, model, nbytes, precision_of, unavailable

# ---- matmul ---------------------------------------------------------------------------------------

@model("mm", "matmul", "bmm", "addmm", "baddbmm", "linear", "_addmm_activation", "addbmm")
def _matmul(call: Call, _: Any) -> OpCost | None:
    a = first(call, "mat1", "batch1", "self", "input")
    b = first(call, "mat2", "other", "weight", "batch2")
    if a is None or b is None:
        return None
    bias = first(call, "bias") if call.has("bias") else (
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
    dtype = first_dtype(call, "mat1", "batch1", "self", "input")
    precision, path = precision_of(call, dtype, True)
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
    x, w = first(call, "input", "self"), call.tensor("weight")
    if x is None or w is None or len(x[0]) < 3 or len(w[0]) != len(x[0]):
        return None
    (xs, zx), (ws, _) = x, w
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
    precision, path = precision_of(call, call.dtype("input") or call.dtype("self"), True)
    formula = f"2·N·Cout·∏out·Cin/g·∏k, out={out}, {how}, groups={groups if groups else '?'}"
    return OpCost(float(flops), float(moved), precision, path, formula, matmul_like=True)


@model("convolution_backward", "cudnn_convolution_backward", "miopen_convolution_backward",
       "cudnn_convolution_backward_input", "cudnn_convolution_backward_weight",
       "miopen_convolution_backward_input", "miopen_convolution_backward_weight")
def _conv_backward(call: Call, _: Any) -> OpCost | None:
    g = call.tensor("grad_output")
    x = first(call, "input", "self")
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
    precision, path = precision_of(call, call.dtype("grad_output"), True)
    which = "+".join(n for n, m in zip(("dgrad", "wgrad", "bias grad"), mask) if m)
    formula = f"{grads} × 2·N·Cout·∏out·Cin/g·∏k ({which}), each pass reads its operands and writes its gradient"
    # (bytes unknown with every shape known: no dtype recorded, which cost() says)
    why = "" if not math.isnan(moved) or x is not None else \
        f"{name}: the input's shape is an int list the trace does not record"
    return OpCost(float(flops), float(moved), precision, path, formula, why, matmul_like=True)


# ---- GEMMs of inference engines, grouped GEMM --------------------------------------------------------

@model("aiter::gemm_a16w16", "vllm::rocm_unquantized_gemm")
def _engine_gemm(call: Call, _: Any) -> OpCost | None:
    a, b = first(call, "A", "x"), first(call, "B", "weight")
    if a is None or b is None:
        return None
    m, k, n = numel(a[0][:-1]), a[0][-1], b[0][0]
    bias = call.tensor("bias")
    flops = 2 * m * n * k + (m * n if bias else 0)
    moved = nbytes(a) + nbytes(b) + m * n * (a[1] or NAN) + (nbytes(bias) if bias else 0)
    precision, path = precision_of(call, call.dtype("A") or call.dtype("x"), True)
    return OpCost(float(flops), float(moved), precision, path,
                  f"2·M·N·K{' + M·N (bias)' if bias else ''}, M={m} N={n} K={k} (B is [N, K])", matmul_like=True)


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
    precision, path = precision_of(call, call.dtype("self"), True)
    return OpCost(float(2 * m * kk * n), NAN, precision, path, f"2·ΣM·K·N over {g} groups, ΣM={m} K={kk} N={n}",
                  "grouped GEMM: which groups got rows (offs) is a tensor value, so the weights read are unknown",
                  matmul_like=True)
