"""FLOPs per precision on the CUDA cores: add + mul + 2·fma, from SASS thread-instruction counters.

Formulas follow the current Nsight Compute section files (``shared/reference/formulas.md`` §2).
Half precision: current ncu (2025.1 and later) counts each half thread instruction as a packed
half2, so FP16 FLOPs = 2·hadd + 2·hmul + 4·hfma; ncu 2023.x and NERSC used hadd + hmul + 2·hfma.
roofline always uses the current weighting, whatever ncu version wrote the report, so the same
kernel gets the same FLOPs from every report; the weighting is written into the source column.
"""

from __future__ import annotations

from collections.abc import Mapping

from roofline.metrics.resolve import Raw, Resolved, combine, count, num, unavailable

#: (add, mul, fma) weights per precision
WEIGHTS: dict[str, tuple[float, float, float]] = {
    "fp64": (1.0, 1.0, 2.0),
    "fp32": (1.0, 1.0, 2.0),
    "fp16": (2.0, 2.0, 4.0),
}
#: the weighting ncu 2023.x and NERSC scripts used for half precision (kept for comparisons)
FP16_LEGACY_WEIGHTS = (1.0, 1.0, 2.0)

_OP_LETTER = {"fp64": "d", "fp32": "f", "fp16": "h"}

HINT = (
    "ncu --set full (ncu >= 2023.1 also needs the hierarchical roofline sections for fp16), "
    "or --metrics smsp__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum"
)


def flops_from_counts(add: float, mul: float, fma: float, precision: str = "fp32") -> float:
    """FLOPs from thread-level add, mul and fma instruction counts of one precision."""
    wa, wm, wf = WEIGHTS[precision]
    return wa * add + wm * mul + wf * fma


def _bases(precision: str, op: str) -> list[str]:
    letter = _OP_LETTER[precision]
    return [
        f"smsp__sass_thread_inst_executed_op_{letter}{op}_pred_on",
        f"sm__sass_thread_inst_executed_op_{letter}{op}_pred_on",
    ]


def resolve_flops(raw: Raw, precision: str, duration: Resolved) -> Resolved:
    """FLOPs of one CUDA-core precision for one launch."""
    parts = [
        (w, count(raw, _bases(precision, op), duration))
        for w, op in zip(WEIGHTS[precision], ("add", "mul", "fma"))
    ]
    wa, wm, wf = WEIGHTS[precision]
    letter = _OP_LETTER[precision]
    label = f"{wa:g}·{letter}add + {wm:g}·{letter}mul + {wf:g}·{letter}fma".replace("1·", "")
    res = combine(parts, label)
    if not res.ok:
        return unavailable(res.source.split("; ", 1)[-1], HINT)
    return res


#: the SASS opcodes (per-opcode counts, modifiers after a '.') that do a precision's add, mul and fma
_OPCODES = {"fp64": ("DADD", "DMUL", "DFMA"), "fp32": ("FADD", "FMUL", "FFMA"), "fp16": ("HADD", "HMUL", "HFMA")}


def none_executed(res: Resolved, precision: str, opcode_counts: Mapping[str, float] | None) -> Resolved:
    """``res``, or 0 FLOPs where its counters are missing but the kernel's per-opcode instruction counts (the
    InstructionStats section) show that no add, mul or fma of that precision ran: then 0 is measured, not a
    gap (ncu's full sets before 2025.1 have no FP16 counters; a kernel without HFMA2 still did no FP16 work)."""
    if res.ok or not opcode_counts:
        return res
    names = _OPCODES[precision]
    if any(n and str(op).split(".")[0].startswith(names) for op, n in opcode_counts.items()):
        return res  # it ran some: its FLOPs are unknown
    return Resolved(0.0, f"counters: per-opcode instruction counts ({len(opcode_counts)} opcodes) show no "
                         f"{'/'.join(names)} instruction executed: 0 {precision} FLOPs")


def peak_flops(raw: Raw, precision: str, sm_clock: Resolved) -> Resolved:
    """Peak FLOP/s of one CUDA-core precision at the profiled SM clock.

    ``fma.peak_sustained`` is in thread instructions per cycle over all SMs; an FMA is 2 FLOPs
    (4 for packed half2), exactly as NVIDIA's roofline sections build their peaks.
    """
    letter = _OP_LETTER[precision]
    factor = WEIGHTS[precision][2]
    for unit in ("sm", "smsp"):
        name = f"{unit}__sass_thread_inst_executed_op_{letter}fma_pred_on.sum.peak_sustained"
        v = num(raw, name)
        if v and v > 0 and sm_clock.ok:
            return Resolved(
                factor * float(v) * sm_clock.value,
                f"counters: {factor:g} × {name} × {sm_clock.source} "
                f"({sm_clock.value / 1e9:.3f} GHz, profiled clock)",
            )
    return unavailable(f"no {letter}fma .peak_sustained counter in the report", "ncu --set full")
