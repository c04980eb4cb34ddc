"""Measured peaks: a large matmul for FLOP/s, a copy larger than the caches for bandwidth.

Results are cached per (device, dtype, TF32 setting) for the life of the process. TF32 is pinned
off while measuring fp32 unless ``allow_tf32=True``: with it on, an "fp32" peak is really a TF32
tensor-core peak, several times higher, and every fp32 kernel would look slow against it.
"""

from __future__ import annotations

import time
from typing import Any

from roofline.hardware.peaks import Peak, Peaks

_CACHE: dict[tuple[str, str, bool], Peaks] = {}


def _key(device: Any, dtype: Any) -> tuple[str, str]:
    return str(device), str(dtype).removeprefix("torch.")


def _precision(dtype_name: str, cuda: bool) -> str:
    if dtype_name == "float64":
        return "fp64" if not cuda else "tensor_fp64"
    if dtype_name == "float32":
        return "fp32"
    if dtype_name in ("float16", "bfloat16"):
        return ("tensor_fp16" if dtype_name == "float16" else "tensor_bf16") if cuda else "fp16"
    raise ValueError(f"measure_peaks: unsupported dtype {dtype_name}")


def _timed(fn: Any, sync: Any, repeat: int) -> float:
    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


def measure_peaks(device: Any = "cpu", dtype: Any = None, matmul_size: int | None = None,
                  copy_bytes: int | None = None, repeat: int = 5, allow_tf32: bool = False,
                  refresh: bool = False) -> Peaks:
    """Peak FLOP/s (n×n matmul, best of ``repeat``) and streaming bandwidth (a large copy), as Peaks.

    Defaults: n = 2048 and a 256 MiB copy on CPU; n = 8192 and 2 GiB on a GPU. The copy reads and
    writes every byte, so bandwidth = 2 × bytes / time.
    """
    import torch

    dtype = dtype or torch.float32
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    dname, tname = _key(dev, dtype)
    cache_key = (dname, tname, allow_tf32)
    if cache_key in _CACHE and not refresh:
        return _CACHE[cache_key]
    precision = _precision(tname, cuda)
    sync = (lambda: torch.cuda.synchronize(dev)) if cuda else (lambda: None)
    n = matmul_size or (8192 if cuda else 2048)
    nbytes = copy_bytes or ((2 << 30) if cuda else (256 << 20))
    tf32_before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        a = torch.randn(n, n, device=dev, dtype=dtype)
        b = torch.randn(n, n, device=dev, dtype=dtype)
        t = _timed(lambda: torch.mm(a, b), sync, repeat)
        flops = 2.0 * n**3 / t
        del a, b
        src = torch.empty(nbytes // 4, device=dev, dtype=torch.float32)
        dst = torch.empty_like(src)
        t_copy = _timed(lambda: dst.copy_(src), sync, repeat)
        bandwidth = 2.0 * src.numel() * 4 / t_copy
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32_before
    name = torch.cuda.get_device_name(dev) if cuda else f"CPU ({torch.get_num_threads()} threads)"
    clock = None
    peaks = Peaks(
        name,
        {precision: Peak(flops, "measured", f"torch.mm {n}×{n} {tname}, best of {repeat}"
                         + ("" if precision != "fp32" or not cuda else f", TF32 {'on' if allow_tf32 else 'off'}"),
                         "measured", clock)},
        {"dram": Peak(bandwidth, "measured", f"copy of {nbytes >> 20} MiB (read + write), best of {repeat}",
                      "measured", clock)},
    )
    _CACHE[cache_key] = peaks
    return peaks
