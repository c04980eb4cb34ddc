#!/usr/bin/env python
"""Generate ``src/roofline/metrics/ops/aten_schemas.json``: the argument names of the operators the trace
models read, from PyTorch's own schema registry (``torch._C._jit_get_all_schemas()``).

Kineto records an op's arguments by position (``Input Dims``, ``Input type``, ``Concrete Inputs``) under
its name without the overload (``aten::add`` for ``add.Tensor``, ``add.Scalar`` and ``add.out``), so
the reader needs every overload's argument names to read them by name (``metrics/ops/args.py``). Only
the ops the models use are written (the whole registry is 4000+ schemas), in a compact form: one
string per overload, ``"overload(name:K, name:K, *, name:K)"`` with K the kind of argument that
matters for matching a trace: ``T`` tensor, ``T?`` optional tensor, ``L`` list of numbers, ``TL``
list of tensors, ``S`` anything else (number, bool, string, dtype...).

Signatures that no longer exist in the torch this runs with (the cuDNN convolution backward ops of
torch ≤ 1.10, which traces of that era record) and custom ops of inference engines (aiter, vLLM,
SGLang), which torch does not register, are added by hand below from their sources.

    PYTHONPATH=src .venv/bin/python tools/gen_aten_schemas.py   # rewrites the JSON
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src/roofline/metrics/ops/aten_schemas.json"

#: torch 1.9's native_functions.yaml (v1.9.0): removed in torch 1.11, still in the traces of that era
LEGACY = {
    "aten::cudnn_convolution_backward": [
        "1.9(self:T, grad_output:T, weight:T, padding:L, stride:L, dilation:L, groups:S, benchmark:S, "
        "deterministic:S, allow_tf32:S, output_mask:L)"],
    "aten::cudnn_convolution_backward_input": [
        "1.9(self_size:L, grad_output:T, weight:T, padding:L, stride:L, dilation:L, groups:S, benchmark:S, "
        "deterministic:S, allow_tf32:S)"],
    "aten::cudnn_convolution_backward_weight": [
        "1.9(weight_size:L, grad_output:T, self:T, padding:L, stride:L, dilation:L, groups:S, benchmark:S, "
        "deterministic:S, allow_tf32:S)"],
    "aten::miopen_convolution_backward": [
        "1.9(self:T, grad_output:T, weight:T, padding:L, stride:L, dilation:L, groups:S, benchmark:S, "
        "deterministic:S, output_mask:L)"],
    "aten::cudnn_convolution": [  # torch 1.8's deprecated overload with a bias
        "deprecated(self:T, weight:T, bias:T?, padding:L, stride:L, dilation:L, groups:S, benchmark:S, "
        "deterministic:S)"],
}

#: custom ops of inference engines (aiter, sgl-kernel, vLLM), which torch does not register: names
#: after the engines' Python/C++ signatures (vLLM's csrc/pos_encoding.cpp for rotary_embedding), the
#: positions and kinds checked against the types the shared traces record; a name the models do not
#: read is left generic (argN)
CUSTOM = {
    "aiter::gemm_a16w16": ["(A:T, B:T, bias:T?, arg3:S, arg4:S, arg5:S, arg6:S)"],  # only the tensors are read
    "aiter::rmsnorm": ["(out:T, input:T, weight:T, epsilon:S)"],
    "aiter::rms_norm": ["(input:T, weight:T, epsilon:S, use_model_sensitive_rmsnorm:S)"],
    "aiter::add_rmsnorm": ["(out:T, input:T, residual_in:T, residual_out:T, weight:T, epsilon:S)"],
    "aiter::rmsnorm2d_fwd_with_add_ck": [
        "(out:T, input:T, residual_in:T, residual_out:T, weight:T, epsilon:S, use_model_sensitive_rmsnorm:S)"],
    "sgl_kernel::rotary_embedding": ["(positions:T, query:T, key:T, head_size:S, cos_sin_cache:T, is_neox:S)"],
    "sgl_kernel::silu_and_mul": ["(out:T, input:T)"],
    "sgl_kernel::gelu_and_mul": ["(out:T, input:T)"],
    "vllm::rocm_unquantized_gemm": ["(x:T, weight:T, bias:T?)"],
    "vllm::unified_attention_with_output": [
        "(query:T, key:T, value:T, output:T, layer_name:S, output_scale:T?, output_block_scale:T?, kv_cache_dummy_dep:T?)"],
    "sglang::store_cache": ["(k:T, v:T, k_cache:T, v_cache:T, indices:T, arg5:S, arg6:S)"],
    "aiter::mha_batch_prefill": [  # 6 tensors, 12 scalars, 12 optional tensors (as the SGLang trace records)
        "(q:T, k:T, v:T, cu_seqlens_q:T, kv_indptr:T, kv_page_indices:T, max_seqlen_q:S, max_seqlen_k:S, "
        "dropout_p:S, softmax_scale:S, logits_soft_cap:S, zero_tensors:S, is_causal:S, window_size_left:S, "
        "window_size_right:S, " + ", ".join(f"arg{i}:S" for i in range(15, 18)) + ", "
        + ", ".join(f"arg{i}:T?" for i in range(18, 30)) + ")"],
    "_C_cache_ops::reshape_and_cache_flash": [
        "(key:T, value:T, key_cache:T, value_cache:T, slot_mapping:T, kv_cache_dtype:S, k_scale:T?, v_scale:T?)"],
    "vllm::moe_forward": ["(hidden_states:T, router_logits:T, layer_name:S)",
                          "(hidden_states:T, router_logits:T, layer_name:S, arg3:S)"],
    "_C::rms_norm": ["(result:T, input:T, weight:T, epsilon:S)"],
    "_C::fused_add_rms_norm": ["(input:T, residual:T, weight:T, epsilon:S)"],
    "_C::rotary_embedding": ["(positions:T, query:T, key:T?, head_size:S, cos_sin_cache:T, is_neox:S)"],
    "_C::silu_and_mul": ["(result:T, input:T)"],
    # triton_kernels' routing autograd Functions (vLLM's GPT-OSS MoE): topk.py, routing.py
    "TopK": ["(x:T, k:S, apply_softmax:S, dim:S, return_bitmatrix:S, y_indx:T?, n_rows:S)"],
    "SortTokens": ["(expt_scal:T, expt_indx:T, n_expts_tot:S)"],
}


def kind(t: str) -> str | None:
    if t == "Tensor":
        return "T"
    if t == "Optional[Tensor]":
        return "T?"
    if t in ("List[Tensor]", "List[Optional[Tensor]]"):
        return "TL"
    if t.startswith(("List[int]", "List[bool]", "List[float]", "Optional[List[int]]", "Optional[List[float]]",
                     "List[SymInt]", "Optional[List[SymInt]]")):
        return "L"
    if t.startswith("List[") or t in ("complex", "Any"):
        return None  # TorchScript's list/string/complex overloads: never a kernel launch in a trace
    return "S"


def main(names: list[str]) -> None:
    import torch

    wanted = set(names)
    ops: dict[str, list[str]] = {}
    for s in torch._C._jit_get_all_schemas():
        if s.name not in wanted:
            continue
        parts, star = [], False
        for a in s.arguments:
            k = kind(str(a.type))
            if k is None:
                break
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(f"{a.name}:{k}")
        else:
            if any(p.endswith((":T", ":T?", ":TL")) for p in parts):
                ops.setdefault(s.name, []).append(f"{s.overload_name}({', '.join(parts)})")
    for name, sigs in LEGACY.items():
        ops.setdefault(name, []).extend(sigs)
    for name, sigs in CUSTOM.items():
        ops[name] = sigs
    missing = sorted(wanted - set(ops))
    doc = {"torch": torch.__version__, "generator": "tools/gen_aten_schemas.py",
           "legacy": "torch 1.9 native_functions.yaml for the ops of LEGACY; custom ops from their sources",
           "ops": dict(sorted(ops.items()))}
    lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in doc["ops"].items()]  # one op a line: small, diffable
    head = json.dumps({k: v for k, v in doc.items() if k != "ops"})[:-1]
    OUT.write_text(head + ', "ops": {\n' + ",\n".join(lines) + "\n}}\n", encoding="utf-8")
    print(f"{OUT}: {len(ops)} ops, {sum(map(len, ops.values()))} overloads (torch {torch.__version__})"
          + (f"; not in torch: {missing}" if missing else ""), file=sys.stderr)


if __name__ == "__main__":
    from roofline.metrics.ops import modelled_ops

    main(modelled_ops())
