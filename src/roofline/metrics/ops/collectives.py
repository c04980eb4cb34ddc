"""Collectives: the bytes a collective (NCCL/RCCL ``all_reduce``, ``all_gather``, ...) moves per rank,
from the element counts and dtype its trace event records.

A rank reads its input message and writes its output message in its own memory: an all-gather of N ranks
writes N× its input (``Out msg nelems`` = N·``In msg nelems``), a reduce-scatter reads N× its output, an
all-reduce reads and writes one message. Where the trace records the output count, both are counted; older
traces record only ``In msg nelems``, and then the input alone is (the row says which).
"""

from __future__ import annotations

from typing import Any

from roofline.metrics.ops.args import size


def collective_bytes(nelems: Any, dtype: Any) -> float | None:
    """Bytes of one message: elements × dtype size (NCCL args)."""
    try:
        n = float(nelems)
    except (TypeError, ValueError):
        return None
    z = size(str(dtype)) or {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
                             "uint8": 1, "int8": 1}.get(str(dtype).lower())
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
