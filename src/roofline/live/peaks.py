"""Measured peaks: a large matmul for FLOP/s, a copy larger than the caches for bandwidth.

Timing: ``torch.utils.benchmark.Timer.blocked_autorange`` (it synchronises CUDA, picks a number of
calls per block that dwarfs the timer's overhead, and runs blocks for ``min_run_time`` seconds). The
peak is the median block, as torch.utils.benchmark reports it: on a shared machine the best block is
an outlier (one block of a 512² matmul on this 2-core VM ran 3.7× faster than the median while
others competed for the cores); the best block is kept in the source text.

Results are cached per (device, dtype, TF32 setting) for the life of the process. TF32 is pinned
off while measuring fp32 unless ``allow_tf32=True``: with it on, an "fp32" peak is really a TF32
tensor-core peak, several times higher, and every fp32 kernel would look slow against it.
"""

from __future__ import annotations

import statistics
from typing import Any

from roofline.hardware.peaks import Peak, Peaks
from roofline.live.torch_import import torch_module as _torch

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


def _timed(fn: Any, repeat: int, min_run_time: float) -> tuple[float, float, int]:
    """(median, best, blocks): seconds per call over at least ``repeat`` blocks of blocked_autorange."""
    from torch.utils import benchmark

    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn})
    m = timer.blocked_autorange(min_run_time=min_run_time)
    times = list(m.times)
    while len(times) < repeat:
        times.extend(timer.timeit(m.number_per_run).times)
    return statistics.median(times), min(times), len(times)


def measure_peaks(device: Any = "cpu", dtype: Any = None, matmul_size: int | None = None,
                  copy_bytes: int | None = None, repeat: int = 5, allow_tf32: bool = False,
                  refresh: bool = False, min_run_time: float = 0.2) -> Peaks:
    """Peak FLOP/s (n×n matmul) and streaming bandwidth (a large copy), as Peaks.

    Each is timed with ``torch.utils.benchmark`` (blocked autorange, ``min_run_time`` seconds and at
    least ``repeat`` blocks); the peak is the median block. Defaults: n = 2048 and a 256 MiB copy on
    CPU; n = 8192 and 2 GiB on a GPU. The copy reads and writes every byte, so bandwidth =
    2 × bytes / time.
    """
    torch = _torch()

    dtype = dtype or torch.float32
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    dname, tname = _key(dev, dtype)
    cache_key = (dname, tname, allow_tf32)
    if cache_key in _CACHE and not refresh:
        return _CACHE[cache_key]
    precision = _precision(tname, cuda)
    n = matmul_size or (8192 if cuda else 2048)
    nbytes = copy_bytes or ((2 << 30) if cuda else (256 << 20))
    tf32_before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        a = torch.randn(n, n, device=dev, dtype=dtype)
        b = torch.randn(n, n, device=dev, dtype=dtype)
        t, t_best, blocks = _timed(lambda: torch.mm(a, b), repeat, min_run_time)
        flops = 2.0 * n**3 / t
        del a, b
        src = torch.empty(nbytes // 4, device=dev, dtype=torch.float32)
        dst = torch.empty_like(src)
        t_copy, t_copy_best, copy_blocks = _timed(lambda: dst.copy_(src), repeat, min_run_time)
        bandwidth = 2.0 * src.numel() * 4 / t_copy
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32_before
    name = torch.cuda.get_device_name(dev) if cuda else f"CPU ({torch.get_num_threads()} threads)"
    clock = None
    peaks = Peaks(
        name,
        {precision: Peak(flops, "measured", f"torch.mm {n}×{n} {tname}, median of {blocks} blocks "
                         f"(torch.utils.benchmark blocked_autorange; best {2.0 * n**3 / t_best:.4g} FLOP/s)"
                         + ("" if precision != "fp32" or not cuda else f", TF32 {'on' if allow_tf32 else 'off'}"),
                         "measured", clock)},
        {"dram": Peak(bandwidth, "measured", f"copy of {nbytes >> 20} MiB (read + write), median of {copy_blocks} blocks "
                      f"(torch.utils.benchmark blocked_autorange; best {2.0 * src.numel() * 4 / t_copy_best:.4g} B/s)",
                      "measured", clock)},
    )
    _CACHE[cache_key] = peaks
    return peaks
