"""Collectives: the bytes a collective (NCCL/RCCL ``all_reduce``, ``all_gather``, ...) moves per rank,
from the element count and dtype its trace event records.
"""

from __future__ import annotations

from typing import Any

from roofline.metrics.ops.args import size


def collective_bytes(nelems: Any, dtype: Any) -> float | None:
    """Bytes a collective moves per rank: elements × dtype size (NCCL args)."""
    try:
        n = float(nelems)
    except (TypeError, ValueError):
        return None
    z = size(str(dtype)) or {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4,
                             "uint8": 1, "int8": 1}.get(str(dtype).lower())
    return n * z if z else None
