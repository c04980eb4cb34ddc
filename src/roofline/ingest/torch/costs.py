"""The cost columns of a Kineto reader row that an op model or its memcpy/memset events price (the tuples
``torch_trace._Rows`` shares between rows of one signature). Split out of ``torch_trace.py``."""

from __future__ import annotations

from typing import Any

from roofline.ingest.torch.decode import COPY_CATS, Event
from roofline.ingest.torch.scan import NUMBER
from roofline.metrics.kernel_precision import decide as precision_evidence
from roofline.metrics.ops import OpCost
from roofline.schema import UNAVAILABLE

NAN = float("nan")
#: where an op's modelled FLOPs go, by the precision of its cost
FLOP_SLOT = {"fp64": 0, "fp32": 1, "fp16": 2, "bf16": 2, "tensor": 3}
NO_OP_COLUMNS = (None, None, NAN, None)  # op_args, precision_evidence, host_link_bytes, op_kernels of a row no op model priced


def modelled(c: OpCost, n_events: int, kernels: tuple[str, ...] = (), host: float = 0.0,
             op_kernels: tuple[str, ...] | None = None) -> tuple[Any, ...]:
    """The cost columns of a modelled op: FLOPs in the slot of the precision the evidence gives (the
    dtype, or the kernel names: an fp32 GEMM on TF32 tensor cores), bytes as the hardware moves them.
    ``op_kernels``: the kernels the ``op_kernels`` column names (default: ``kernels`` of a matmul-like op)."""
    precision, path = c.precision, c.tensor_path
    evidence = ("no dtype recorded: filed under fp32, PyTorch's default dtype" if c.why.startswith("Input type not")
                else f"the dtype ({path or precision}{', tensor cores' if path else ''})")
    if c.matmul_like and kernels:
        decided = precision_evidence(c.precision, c.tensor_path, kernels)
        if decided is not None:
            precision, path, evidence = decided
    why_flops = why_bytes = None
    if c.flops != c.flops:
        why_flops = f"{UNAVAILABLE}: {c.why}"
    if c.bytes != c.bytes:
        why_bytes = f"{UNAVAILABLE}: {c.why}"
    flops = [0.0, 0.0, 0.0, 0.0] if why_flops is None else [NAN] * 4
    slot = FLOP_SLOT.get(precision)
    if slot is not None and why_flops is None:
        flops[slot] = c.flops
    args = f" [{c.args}]" if c.args else ""
    src = why_flops or f"model: {c.formula}{args} (from Input Dims; precision from {evidence}; {n_events} GPU event(s))"
    nbytes = c.bytes
    bsrc = why_bytes or f"model: {c.bytes_note or 'bytes each tensor moves (in-place self read and written, out= written once)'}"
    if host:
        nbytes, bsrc = NAN, (f"{UNAVAILABLE}: {host:.0f} B crossed the host link (PCIe/NVLink-C2C/xGMI), not device "
                             "memory (host_link_bytes); the spec table has no link bandwidth yet, so no link roof")
    # the kernels a matmul/conv ran (what its algorithm is told by: cuDNN Winograd, FFT...; analysis/diagnose.py)
    return (*flops, src, src, src, src, path, nbytes, bsrc, c.args or None, evidence, host if host else NAN,
            "\n".join(names) if (names := (kernels if c.matmul_like else ()) if op_kernels is None else op_kernels)
            else None)


def copy_cost(device: float, host: float, unknown: int) -> tuple[Any, ...]:
    """The cost columns of a memcpy/memset-only row, from its (device bytes, host bytes, events without bytes)."""
    note = "memcpy/memset: no FLOPs"
    if unknown:
        why = f"{UNAVAILABLE}: {unknown} memcpy/memset event(s) without a numeric bytes arg"
        return (0.0, 0.0, 0.0, 0.0, note, note, note, note, None, NAN, why, *NO_OP_COLUMNS)
    if host:
        why = (f"{UNAVAILABLE}: host<->device copy of {host:.0f} B: bound by PCIe/NVLink, "
               "not by device memory (host_link_bytes)")
        return (0.0, 0.0, 0.0, 0.0, note, note, note, note, None, NAN, why, None, None, host, None)
    return (0.0, 0.0, 0.0, 0.0, note, note, note, note, None, device,
            "memcpy/memset args: bytes (device-to-device copies read and write: × 2)", *NO_OP_COLUMNS)


def host_copy(evs: list[Event]) -> float:
    """Bytes of the op's host<->device/peer memcpy events: they cross a link, not DRAM."""
    return copy_bytes(evs)[1] if any(e.cat in COPY_CATS for e in evs) else 0.0


def copy_bytes(evs: list[Event]) -> tuple[float, float, int]:
    """(device-memory bytes, host<->device bytes, events without a usable ``bytes``) of the
    memcpy/memset events among ``evs``."""
    device = host = 0.0
    unknown = 0
    for e in evs:
        if e.cat not in COPY_CATS:
            continue
        n = e.args.bytes if e.args is not None else None
        if n.__class__ not in NUMBER:  # absent or damaged: unknown, never a silent 0
            unknown += 1
            continue
        name = str(e.name)
        if "memset" in name.lower() or "Memset" in str(e.cat):
            device += n
        elif "DtoD" in name:
            device += 2 * n
        else:  # HtoD, DtoH, HtoH, PtoP: the link bounds them
            host += n
    return device, host, unknown
