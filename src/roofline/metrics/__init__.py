"""Stage 2: FLOPs per precision, bytes per memory level and peaks, from raw counters.

Each formula is a named pure function; ``derive`` applies them to one launch's raw metrics.
"""

from roofline.metrics.derive import derive, is_relevant
from roofline.metrics.flops import flops_from_counts
from roofline.metrics.tensor import flops_per_instruction, tensor_flops_from_opcodes

__all__ = ["derive", "flops_from_counts", "flops_per_instruction", "is_relevant", "tensor_flops_from_opcodes"]
