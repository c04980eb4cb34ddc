"""Data movement: copies and fills, gathers and scatters, concatenation, padding, upsampling, dropout and
losses, the KV-cache stores of inference engines (vLLM, SGLang), and Inductor's Triton kernels priced from
their buffers (those whose names list only data movement do no arithmetic).

* copies and fills: 0 FLOPs; every element read and written (a fill only writes). Gathers: no FLOPs;
  indices + the elements read + the output.
"""

from __future__ import annotations

import math
import re
from typing import Any

from roofline.metrics.ops.args import Call, numel, size
from roofline.metrics.ops.core import NAN, OpCost, broadcast, first, model, nbytes, precision_of, tensors

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


def inductor_buffers(name: str, dims: list[Any], types: list[Any]) -> OpCost | None:
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


@model("embedding", "index_select", "gather", "embedding_dense_backward", "index", "take", "embedding_bag",
       "_embedding_bag", "_embedding_bag_forward_only", "index_add", "index_add_", "index_copy", "index_copy_", "index_put", "index_put_",
       "_index_put_impl_", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
       "scatter_reduce_", "masked_select", "nonzero")
def _gather(call: Call, _: Any) -> OpCost | None:
    base = call.name.removeprefix("aten::")
    src = first(call, "weight", "self", "input")
    idx = first(call, "indices", "index")
    if src is None:
        return None
    (ss, zs) = src
    if base in ("embedding", "embedding_bag", "_embedding_bag", "_embedding_bag_forward_only") and idx is not None:
        rows = numel(idx[0])
        moved = nbytes(idx) + 2 * rows * ss[-1] * (zs or NAN)  # the rows read, then written
        flops = rows * ss[-1] if "bag" in base else 0  # a bag sums its rows
        return OpCost(float(flops), float(moved), "fp32" if flops else "none", None,
                      "gather: indices + rows read + output" + (" (bag: 1 add per element)" if flops else ""))
    if base == "index_select" and idx is not None:
        dim = (call.ints("dim") or [0])[0] % max(1, len(ss))
        per_row = numel(ss) // max(1, ss[dim])
        return OpCost(0.0, float(nbytes(idx) + 2 * numel(idx[0]) * per_row * (zs or NAN)), "none", None,
                      "gather: indices + rows read + output")
    if base in ("gather", "take") and idx is not None:
        n = numel(idx[0])
        return OpCost(0.0, float(nbytes(idx) + 2 * n * (zs or NAN)), "none", None,
                      "gather: one source element per index read + output")
    if base.startswith(("scatter", "index_add", "index_copy", "index_put", "_index_put")):
        upd = first(call, "src", "source", "values")
        if upd is None:
            return None
        n = numel(upd[0])
        flops = n if "add" in base or "reduce" in base or call.flag("accumulate") else 0
        moved = nbytes(upd) + (nbytes(idx) if idx else 0) + n * (zs or NAN) * (2 if flops else 1)
        if not base.endswith("_"):
            moved += 2 * nbytes(src)  # out of place: self copied first
        return OpCost(float(flops), float(moved), "fp32" if flops else "none", None,
                      "scatter: updates + indices read, the elements written (read too when accumulating)")
    t = [nbytes(t) for _, t in tensors(call)]
    return OpCost(0.0, float(2 * sum(t)), "none", None, "gather: inputs read + output")


@model("cat", "stack", "_cat", "hstack", "vstack", "constant_pad_nd", "repeat", "flip", "roll", "tril", "triu",
       "upsample_nearest2d", "upsample_bilinear2d", "upsample_nearest1d", "upsample_nearest3d",
       "upsample_bicubic2d", "_upsample_nearest_exact2d", "_upsample_bilinear2d_aa", "upsample_linear1d",
       "upsample_trilinear3d", "upsample_nearest2d_backward", "upsample_bilinear2d_backward", "native_dropout", "dropout", "feature_dropout", "bernoulli_", "native_dropout_backward",
       "nll_loss_forward", "nll_loss", "cross_entropy_loss", "nll_loss_backward", "nll_loss2d_forward")
def _movement(call: Call, _: Any) -> OpCost | None:
    base = call.name.removeprefix("aten::")
    if base in ("cat", "stack", "_cat", "hstack", "vstack"):
        d = call.dims.get("tensors")
        if not isinstance(d, list):
            return None
        shapes = [s for s in d if isinstance(s, list) and all(isinstance(x, int) for x in s)]
        if not shapes:
            return None
        n = sum(numel(s) for s in shapes)
        return OpCost(0.0, NAN, "none", None, f"concatenation: read + write {n} elements",
                      "a TensorList's element dtype is not recorded (Input type says only 'TensorList'), "
                      f"so the bytes of its {n} elements read and written are unknown")
    t = first(call, "self", "input", "grad_output")
    if t is None:
        return None
    if base.startswith(("upsample", "_upsample")) and not base.endswith("backward"):
        size_out = call.ints("output_size")
        scales = call.values.get("scale_factors")
        if size_out is None and isinstance(scales, str) and scales.strip():
            import re

            factors = [float(f) for f in re.findall(r"[-\d.eE]+", scales)]
            if len(factors) == len(t[0]) - 2:  # PyTorch: output size = floor(input size × scale)
                size_out = [int(math.floor(d * f)) for d, f in zip(t[0][2:], factors)]
        if size_out is None:
            return OpCost(NAN, NAN, "none", None, "", f"{base}: neither output_size nor scale_factors recorded")
        out = t[0][:2] + size_out
        per = {"nearest": 0, "linear": 7, "bilinear": 7, "bicubic": 31, "trilinear": 15}
        kind = next((k for k in ("bicubic", "trilinear", "bilinear", "linear", "nearest") if k in base), "nearest")
        n = numel(out)
        precision, _ = precision_of(call, call.dtype("self") or call.dtype("input"), False)
        return OpCost(float(per[kind] * n), float(nbytes(t) + n * (t[1] or NAN)), precision if per[kind] else "none",
                      None, f"interpolate ({kind}): {per[kind]} FLOP per output element; input + output")
    if "dropout" in base or base == "bernoulli_":  # mask draw + scale: 2 FLOP, writes output (+ bool mask)
        n = numel(t[0])
        mask = n if base == "native_dropout" else 0
        return OpCost(float(2 * n), float(2 * nbytes(t) + mask), precision_of(call, call.dtype("input"), False)[0],
                      None, "dropout: 2 FLOP per element; input + output (+ its bool mask)")
    if base.startswith(("nll_loss", "cross_entropy")):
        n = numel(t[0][:-1]) if len(t[0]) > 1 else 1
        tgt = call.tensor("target")
        return OpCost(float(2 * n), float(n * (t[1] or NAN) + nbytes(tgt)), precision_of(call, call.dtype("self"), False)[0],
                      None, "NLL: one element read per target; target read")
    return OpCost(0.0, float(2 * nbytes(t)), "none", None, "data movement: read + write every element")


# ---- KV-cache stores of inference engines ---------------------------------------------------------

@model("_C_cache_ops::reshape_and_cache_flash")
def _reshape_and_cache(call: Call, _: Any) -> OpCost | None:
    k, v, kc, slots = call.tensor("key"), call.tensor("value"), call.tensor("key_cache"), call.tensor("slot_mapping")
    if k is None or v is None or kc is None:
        return None
    z = kc[1] or NAN  # the cache's element size (fp8 caches: 1 B)
    moved = nbytes(k) + nbytes(v) + (numel(k[0]) + numel(v[0])) * z + nbytes(slots)
    return OpCost(0.0, float(moved), "none", None,
                  "KV-cache store: new key, value read, written into the cache at its dtype; slot mapping read")


@model("sglang::store_cache")
def _store_cache(call: Call, _: Any) -> OpCost | None:
    k, v, idx = call.tensor("k"), call.tensor("v"), call.tensor("indices")
    if k is None or v is None:
        return None
    return OpCost(0.0, float(2 * (nbytes(k) + nbytes(v)) + nbytes(idx)), "none", None,
                  "KV-cache store: new k, v read and written into the cache at their slots; indices read")
