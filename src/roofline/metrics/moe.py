"""Fused MoE (vLLM ``moe_forward``): FLOPs from the experts' GEMMs the trace establishes.

The op's arguments hold only the tokens (``hidden_states`` [T, H]) and the router logits [T, E]; the
rest is recorded by the ops it calls and the buffers it allocates:

* top_k: the ``k`` of its routing op (``TopK``/``aten::topk``), a recorded concrete input;
* the up-projection's output: the first buffer it allocates shaped [..., T·k, I] (``aten::empty``'s
  recorded size), with I ≠ H; a fused SwiGLU (``swiglu`` in the GEMM kernel's name) halves 2·I GEMM
  columns into I, else the GEMM wrote I columns and the activation is separate;
* the down-projection's output: a buffer [..., T·k, H].

FLOPs = 2·(T·k)·H·N_up + 2·(T·k)·I·H, counted over the token-expert pairs actually routed (T·k), not
over all experts. Bytes need the weights of the experts actually used, a tensor value the trace does
not hold: they are unavailable unless every expert must be used (T·k ≥ E does not imply it), so this
model gives bytes only as the activations moved and says the weights are not counted.
"""

from __future__ import annotations

import re
from typing import Any

from roofline.metrics.op_args import size
from roofline.metrics.op_models import NAN, OpCost, compute

ROUTERS = ("TopK", "aten::topk")


def moe_cost(dims: Any, types: Any, children: list[tuple[str, Any, Any]], kernels: tuple[str, ...]) -> OpCost | None:
    """``children``: (name, Input Dims, Concrete Inputs) of the ops inside the MoE op, in order."""
    try:
        (t, h), (t2, e) = dims[0], dims[1]
    except (TypeError, ValueError, IndexError):
        return None
    k = None
    for name, _d, conc in children:
        if name in ROUTERS and isinstance(conc, list) and len(conc) > 1:
            nums = re.findall(r"^\s*(\d+)\s*$", str(conc[1]))
            k = int(nums[0]) if nums else None
            break
    if k is None:
        return OpCost(NAN, NAN, "none", None, "", "fused MoE: no routing op (TopK) with a recorded k inside it")
    rows = t * k
    allocs = []
    for name, _d, conc in children:
        if name == "aten::empty" and isinstance(conc, list) and conc:
            shape = [int(x) for x in re.findall(r"-?\d+", str(conc[0]))]
            if len(shape) >= 2 and shape[-2] == rows:
                allocs.append(shape[-1])
    inter = next((x for x in allocs if x != h), None)
    if inter is None or h not in allocs:
        return OpCost(NAN, NAN, "none", None, "", f"fused MoE: its expert GEMMs' output buffers ([…, {rows}, I] and "
                      f"[…, {rows}, {h}]) are not among the recorded allocations")
    fused = any("swiglu" in kn.lower() for kn in kernels)
    n_up = 2 * inter if fused else inter
    k_down = inter
    flops = 2 * rows * h * n_up + 2 * rows * k_down * h
    z = size(types[0]) if isinstance(types, list) and types else None
    precision, path = compute(types[0] if z else "", True)
    activ = (t * h + rows * inter + rows * h + t * h) * (z or NAN)
    return OpCost(float(flops), NAN, precision, path,
                  f"2·(T·k)·H·N_up + 2·(T·k)·I·H, T={t} k={k} H={h} I={inter} N_up={n_up}"
                  f"{' (SwiGLU fused)' if fused else ''}, E={e}; activations {activ:.0f} B",
                  "fused MoE: the weights of the experts actually used are a tensor value the trace does not hold",
                  matmul_like=True)
