"""Softmax and norms: softmax forward and backward, layer/group/batch/instance/RMS norms, their backward
passes, and the fused RMSNorm (+ residual add) of inference engines (aiter, vLLM).

Softmax 5 FLOP per element, norms 4–5 per element (backward 8–10); bytes: the tensor arguments read
once and the outputs written.
"""

from __future__ import annotations

from typing import Any

from roofline.metrics.ops.args import Call, numel
from roofline.metrics.ops.core import OpCost, first, model, nbytes, precision_of, tensors


def _per_element(call: Call, main: tuple[list[int], int | None], per: float, formula: str, out_times: int = 1,
                 extra_read: float = 0.0, tensor: bool = False) -> OpCost:
    n = numel(main[0])
    reads = sum(nbytes(t) for a, t in tensors(call, ("out",)))
    moved = reads + out_times * nbytes(main) + extra_read
    precision, _ = precision_of(call, call.dtype(next(iter(call.dims))), tensor)
    return OpCost(float(per * n), float(moved), precision, None, formula)


@model("softmax", "_softmax", "log_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data",
       "_safe_softmax")
def _softmax(call: Call, _: Any) -> OpCost | None:
    t = first(call, "self", "grad_output", "input")
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
    t = first(call, "input", "self", "X")
    if t is None:
        return None
    per = NORMS[call.name.removeprefix("aten::")]
    return _per_element(call, t, per, f"{per} FLOP per element (normalise: mean/var, sub, div, scale, shift)")


@model(*NORM_BACKWARD)
def _norm_backward(call: Call, _: Any) -> OpCost | None:
    g = first(call, "grad_out", "grad_output", "dY")
    if g is None:
        return None
    mask = (call.flags("output_mask") or []) + [True, True, True]
    w = first(call, "weight", "gamma")
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
    precision, _ = precision_of(call, call.dtype("input"), False)
    return OpCost(float(flops), float(moved), precision, None,
                  f"RMSNorm{' + residual add' if fused else ''}: {5 if fused else 4} FLOP per element; "
                  f"input, weight{', residual in/out' if fused else ''}, output")
