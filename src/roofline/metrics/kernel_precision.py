"""Which data path a matmul/convolution ran on, from the names of the kernels it launched.

The dtype says what the op computes in; the kernel says how: PyTorch's fp32 matmuls and cuDNN's fp32
convolutions may run on TF32 tensor cores (``torch.backends.cuda.matmul.allow_tf32``,
``torch.backends.cudnn.allow_tf32``, which is on by default), and a half GEMM may run on CUDA cores.
The name patterns are data (``kernel_precision.toml``), each with the library it comes from.
"""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def patterns() -> dict[str, list[tuple[re.Pattern[str], str]]]:
    text = resources.files(__package__).joinpath("kernel_precision.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    return {k: [(re.compile(e["pattern"], re.IGNORECASE), e["library"]) for e in v] for k, v in data.items()}


@lru_cache(maxsize=4096)
def decide(precision: str, path: str | None, kernels: tuple[str, ...]) -> tuple[str, str | None, str] | None:
    """(precision slot, tensor path, evidence) when the kernel names decide it; None to keep the dtype's."""
    p = patterns()
    if precision == "fp32":
        for k in kernels:
            for rx, lib in p.get("tf32", ()):
                if rx.search(k):
                    return "tensor", "tf32", f"kernel name {k[:60]!r} ({lib}): fp32 on TF32 tensor cores"
    if precision == "tensor" and path in ("fp16", "bf16") and kernels:
        for k in kernels:
            for rx, lib in p.get("upcast_weights", ()):
                if rx.search(k):
                    return "tensor", path, (f"kernel name {k[:60]!r} ({lib}): {path} tensor cores; the narrow "
                                            "weights are upcast in-kernel (no matrix instruction takes bf16 × fp4)")
        hits = [(k, lib) for k in kernels for rx, lib in p.get("cuda_core", ()) if rx.search(k)]
        if len({k for k, _ in hits}) == len(kernels):
            k, lib = hits[0]
            return "fp16", None, f"kernel name {k[:60]!r} ({lib}): {path} on CUDA cores"
    return None
