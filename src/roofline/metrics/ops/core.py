"""The core of the operator models: the cost of one op (``OpCost``), the registry every family module
fills (``MODELS``, ``@model``), and the helpers the families share (the precision a dtype computes in,
broadcast shapes, a tensor's bytes, the first of several named arguments a call passed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roofline.metrics.ops.args import Call, numel

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


def tensors(call: Call, skip: tuple[str, ...] = ()) -> list[tuple[str, tuple[list[int], int | None]]]:
    return [(a, t) for a in call.dims if a not in skip and (t := call.tensor(a)) is not None]


def first(call: Call, *names: str) -> tuple[list[int], int | None] | None:
    for n in names:
        t = call.tensor(n)
        if t is not None:
            return t
    return None


def first_dtype(call: Call, *names: str) -> str:
    for n in names:
        if call.tensor(n) is not None:
            return call.dtype(n)
    return ""


def precision_of(call: Call, dtype: str, tensor_ok: bool) -> tuple[str, str | None]:
    if not call.typed:  # the FLOP count does not depend on it; the roof does
        return "fp32", None
    return compute(dtype, tensor_ok)
