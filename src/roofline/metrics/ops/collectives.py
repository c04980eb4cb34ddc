"""Collectives: the bytes a collective (NCCL/RCCL ``all_reduce``, ``all_gather``, ...) moves per rank,
from the element counts and dtype its trace event records.

A rank reads its input message and writes its output message in its own memory: an all-gather of N ranks
writes N× its input (``Out msg nelems`` = N·``In msg nelems``), a reduce-scatter reads N× its output, an
all-reduce reads and writes one message. Where the trace records the output count, both are counted; older
traces record only ``In msg nelems``, and then the input alone is (the row says which).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from roofline.metrics.ops.args import size


def collective_bytes(nelems: Any, dtype: Any) -> float | None:
    """Bytes of one message: elements × dtype size (NCCL args)."""
    try:
        n = float(nelems)
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(n) or n < 0 or isinstance(nelems, bool):  # a damaged count is no size, never inf or < 0
        return None
    z = size(str(dtype)) or {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
                             "uint8": 1, "int8": 1, "byte": 1, "float8_e4m3fn": 1,
                             "float8_e5m2": 1}.get(str(dtype).lower())
    return n * z if z else None


def collective_cost(in_nelems: Any, out_nelems: Any, dtype: Any, name: Any = None) -> tuple[float, str] | None:
    """(bytes a collective moves in this rank's memory, how): the input message read and, where recorded, the
    output message written; None when the input's count or the dtype is not usable."""
    read = collective_bytes(in_nelems, dtype)
    if read is None:
        return None
    what = f"NCCL {name}" if isinstance(name, str) and name else "NCCL message"
    written = collective_bytes(out_nelems, dtype) if out_nelems is not None else None
    if written is None:
        return read, f"{what}: In msg nelems × dtype size (no Out msg nelems recorded: the input only)"
    return read + written, (f"{what}: input read + output written, (In msg {in_nelems} + Out msg {out_nelems} "
                            f"nelems) × {dtype} size")


# ---- nccl-tests' bandwidths (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md) ----------------
#
# algbw = S / t, with S the size nccl-tests prints for the collective: the message as the collective moves it
# (an all-gather's S is its whole output, n × each rank's input; a reduce-scatter's its whole input; an
# all-to-all's the whole send buffer). busbw = algbw × factor(n), the factor that makes a ring's bandwidth
# comparable with the links' (nccl-tests src/<collective>.cu, GetBw).

#: canonical collective -> (factor as text, factor of n)
BUS_FACTORS: dict[str, tuple[str, Any]] = {
    "all_reduce": ("2(n−1)/n", lambda n: 2.0 * (n - 1) / n),
    "all_gather": ("(n−1)/n", lambda n: (n - 1) / n),
    "reduce_scatter": ("(n−1)/n", lambda n: (n - 1) / n),
    "all_to_all": ("(n−1)/n", lambda n: (n - 1) / n),
    "gather": ("(n−1)/n", lambda n: (n - 1) / n),
    "scatter": ("(n−1)/n", lambda n: (n - 1) / n),
    "broadcast": ("1", lambda n: 1.0),
    "reduce": ("1", lambda n: 1.0),
    "send_recv": ("1", lambda n: 1.0),
}
#: spellings (lower case, leading "_", "_base", "_coalesced", "_into_tensor", "_tensor" and "_" removed) -> canonical
_SPELLINGS = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
              "alltoall": "all_to_all", "alltoallv": "all_to_all", "alltoallsingle": "all_to_all",
              "broadcast": "broadcast", "reduce": "reduce", "send": "send_recv", "recv": "send_recv",
              "sendrecv": "send_recv", "gather": "gather", "scatter": "scatter", "barrier": "barrier"}
_STRIP = re.compile(r"(_base|_coalesced|_into_tensor|_tensor|_single)+$")


def canonical(name: Any) -> str | None:
    """The nccl-tests name of a collective from any of its spellings (NCCL's ``AllReduce``, c10d's
    ``_allgather_base``, ``nccl:_reduce_scatter_base``, Kineto's ``Collective name``); None when not one."""
    if name.__class__ is str:  # (a str subclass, whose methods may differ, is not cached)
        return _canonical_str(name)
    if not isinstance(name, str) or not name:
        return None
    return _spelled(name)


@functools.lru_cache(maxsize=4096)
def _canonical_str(name: str) -> str | None:
    """``canonical`` of a plain str, remembered: a trace's collective rows look the same few names up two or
    three times each (the V100 trace's 2,020 rows: 4,040 calls, 3-6 ms uncached, under 1 ms so)."""
    return _spelled(name) if name else None


def _spelled(name: str) -> str | None:
    low = name.lower().strip()
    for prefix in ("c10d::", "nccl:", "rccl:"):
        low = low.removeprefix(prefix)
    low = _STRIP.sub("", low.lstrip("_").rstrip("_"))
    return _SPELLINGS.get(low.replace("_", ""))


def kernel_collective(kernel: Any) -> str | None:
    """The collective an NCCL/RCCL kernel's name spells (``ncclKernel_AllReduce_RING_LL_Sum_float``,
    ``ncclDevKernel_AllGather_RING_LL``); None for generic kernels (``ncclDevKernel_Generic``)."""
    m = _KERNEL.match(kernel) if isinstance(kernel, str) else None
    return canonical(m.group(1)) if m else None


_KERNEL = re.compile(r"^\s*(?:void\s+)?[nr]ccl(?:Dev)?Kernel_([A-Za-z]+)")


def message_bytes(collective: str, in_bytes: float | None, out_bytes: float | None) -> tuple[float, str] | None:
    """(S, which message it is): nccl-tests' size for the collective, from the input and output messages."""
    if collective in ("all_gather", "gather"):
        return (out_bytes, "the output message (n × each rank's input)") if out_bytes is not None else None
    if collective in ("reduce_scatter", "scatter"):
        return (in_bytes, "the input message (n × each rank's output)") if in_bytes is not None else None
    if in_bytes is not None:
        return in_bytes, "the input message"
    return (out_bytes, "the output message") if out_bytes is not None else None


def bus_factor(collective: str | None, n: Any) -> tuple[float, str] | None:
    """(busbw / algbw, the factor named with its n) for a group of ``n`` ranks; None when not defined."""
    f = BUS_FACTORS.get(collective or "")
    try:
        n = int(n)
    except (TypeError, ValueError):
        return None
    if f is None or n < 1:
        return None
    return float(f[1](n)), f"{collective} {f[0]}, n={n}"
