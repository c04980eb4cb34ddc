"""Operator models: the FLOPs and bytes that an operator's semantics imply, from the shapes a PyTorch
trace records.

Traces carry no hardware counters: these are "useful work" models, like TraceLens' and
``torch.utils.flop_counter``'s, computed from ``Input Dims``, ``Input type`` and ``Concrete Inputs``,
each argument read **by name** from the op's schema (``args.py``, ``aten_schemas.json``). Bytes are
what the op must move at least once, with no cache effects: the DRAM/HBM traffic of a perfect
implementation. Conventions (``docs/traces.md`` lists where they differ from TraceLens, with arithmetic)
are in each family's module:

* ``gemm``: the matmul family, convolutions forward and backward, the GEMMs of inference engines, grouped GEMM;
* ``attention``: SDPA/flash/efficient/cudnn attention, packed-sequence (varlen) attention, vLLM paged attention;
* ``norms``: softmax, norms and their backward passes, fused RMSNorm;
* ``elementwise``: unary and binary elementwise ops, act-and-mul, RoPE, reductions;
* ``movement``: copies and fills, gathers/scatters, cat/pad/upsample/dropout/losses, KV-cache stores,
  Inductor's Triton kernels priced from their buffers;
* ``moe``: fused MoE (vLLM ``moe_forward``) and its routing ops;
* ``collectives``: the bytes a collective moves per rank.

This package is the registry: importing it imports every family, each registering its models into
``core.MODELS`` with ``@model(...)``, so ``cost`` sees them all. An op without a model gets ``None``: its
time still counts and the summary says how many.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

# (imported for their models: each family registers them into MODELS)
from roofline.metrics.ops import attention, elementwise, gemm, moe, movement, norms  # noqa: F401
from roofline.metrics.ops.args import DTYPE_BYTES, bind, schemas
from roofline.metrics.ops.collectives import collective_bytes, collective_cost
from roofline.metrics.ops.core import MODELS, NAN, OpCost, compute, unavailable
from roofline.metrics.ops.gemm import NOT_RECORDED, conv_out_from_consumer
from roofline.metrics.ops.moe import CALLEE_OPS, callee_cost
from roofline.metrics.ops.movement import inductor_buffers, inductor_moves_only

__all__ = ["CALLEE_OPS", "DTYPE_BYTES", "MODELS", "NOT_RECORDED", "OpCost", "callee_cost", "collective_bytes",
           "collective_cost",
           "compute", "conv_out_from_consumer", "cost", "inductor_moves_only", "modelled_ops"]


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
        return inductor_buffers(name, dims, types)
    if f is None and name.startswith("sglang_profiler::"):
        return attention.sglang_paged(name, dims)  # (no schema: by position; priced once its lengths are known)
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
