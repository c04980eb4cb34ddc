"""Tensor-core FLOPs, by architecture and by what the report holds.

Order of preference (``shared/reference/formulas.md`` §3):

1. ``sm__ops_path_tensor_*`` (ncu 2025.1+ full sets): these count FLOPs directly, one metric per
   data path. The ``src_*`` aggregates partition the work by data type; the ``op_*`` metrics
   split the same work by instruction and are used only when no aggregate exists.
2. Volta (sm_70) only: ``sm__inst_executed_pipe_tensor`` × 512. One 16×16×16 WMMA is 8192 FLOPs
   and compiles to 16 ``HMMA.884`` instructions. On Turing and later one HMMA does 1024-4096
   FLOPs depending on its shape, so the factor is wrong there and is never applied.
3. Per-opcode warp-level instruction counts
   (``sass__inst_executed_per_opcode_with_modifier_all``, e.g. ``HMMA.1688.F32``) times the
   FLOPs of that instruction's shape: 2·m·n·k for mma shapes; warpgroup MMAs (``HGMMA.64x128x16``)
   are issued by each of the 4 warps of the group, so each warp instruction carries 2·m·n·k/4.
4. A pipe-tensor instruction count of exactly 0 means 0 tensor FLOPs on any architecture.

Otherwise the tensor FLOPs are unavailable, with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from roofline.metrics.resolve import Raw, Resolved, count, elapsed_cycles, num, unavailable

OPS_PREFIX = "sm__ops_path_tensor_"
OPCODE_METRIC = "sass__inst_executed_per_opcode_with_modifier_all"

HINT = (
    "ncu --set full (ncu >= 2025.1 records sm__ops_path_tensor_*; older full sets record "
    "per-opcode counts in the InstructionStats/SourceCounters sections)"
)

#: mma shape tokens as they appear in SASS modifiers -> (m, n, k)
MMA_SHAPES: dict[str, tuple[int, int, int]] = {
    "884": (8, 8, 4),
    "1684": (16, 8, 4),
    "1688": (16, 8, 8),
    "8816": (8, 8, 16),
    "16816": (16, 8, 16),
    "8832": (8, 8, 32),
    "16832": (16, 8, 32),
    "16864": (16, 8, 64),
    "88128": (8, 8, 128),
    "168128": (16, 8, 128),
    "168256": (16, 8, 256),
}
MMA_OPCODES = ("HMMA", "IMMA", "DMMA", "BMMA", "QMMA", "OMMA")
GMMA_OPCODES = ("HGMMA", "IGMMA", "BGMMA", "QGMMA", "OGMMA")
WARPS_PER_WARPGROUP = 4


def flops_per_instruction(opcode_with_modifiers: str) -> float | None:
    """FLOPs one warp-level tensor instruction performs, or None if its shape is unknown."""
    parts = opcode_with_modifiers.split(".")
    op = parts[0]
    if op in MMA_OPCODES:
        for token in parts[1:]:
            if token in MMA_SHAPES:
                m, n, k = MMA_SHAPES[token]
                return 2.0 * m * n * k
        return None
    if op in GMMA_OPCODES:
        for token in parts[1:]:
            match = re.fullmatch(r"(\d+)x(\d+)x(\d+)", token)
            if match:
                m, n, k = (int(g) for g in match.groups())
                return 2.0 * m * n * k / WARPS_PER_WARPGROUP
        return None
    return None


def is_tensor_opcode(opcode_with_modifiers: str) -> bool:
    op = opcode_with_modifiers.split(".")[0]
    return op in MMA_OPCODES or op in GMMA_OPCODES or op.startswith("UTC")


def opcode_kind(opcode_with_modifiers: str) -> str:
    """The data path of a tensor instruction, e.g. ``hmma_fp16``, ``imma_int8``, ``dmma_fp64``."""
    parts = opcode_with_modifiers.split(".")
    op, mods = parts[0].lower(), {m.upper() for m in parts[1:]}
    if op == "dmma":
        return "dmma_fp64"
    if op in ("imma", "igmma"):
        return f"{op}_int4" if mods & {"S4", "U4"} else f"{op}_int8"
    if op in ("bmma", "bgmma"):
        return f"{op}_int1"
    if op in ("qmma", "qgmma"):
        return f"{op}_fp8"
    if op in ("omma", "ogmma"):
        return f"{op}_fp4"
    if "TF32" in mods:
        return f"{op}_tf32"
    if "BF16" in mods:
        return f"{op}_bf16"
    return f"{op}_fp16"


def is_fp16_path(path: str | None) -> bool:
    """Whether a tensor path runs at the dense FP16/BF16 tensor rate (None: no tensor work)."""
    if path is None:
        return True
    p = path.lower()
    return "fp16" in p or "bf16" in p


def dominant_opcode_kind(counts: Mapping[str, float]) -> str | None:
    flops: dict[str, float] = {}
    for key, n in counts.items():
        per = flops_per_instruction(key) if is_tensor_opcode(key) and n else None
        if per:
            kind = opcode_kind(key)
            flops[kind] = flops.get(kind, 0.0) + per * float(n)
    return max(flops, key=lambda k: flops[k]) if flops else None


def tensor_flops_from_opcodes(counts: Mapping[str, float]) -> Resolved:
    """Tensor FLOPs from per-opcode warp-instruction counts (pure function, no report needed)."""
    total = 0.0
    unknown: list[str] = []
    used: list[str] = []
    for key, n in counts.items():
        if not is_tensor_opcode(key) or not n:
            continue
        per = flops_per_instruction(key)
        if per is None:
            unknown.append(key)
            continue
        total += per * float(n)
        used.append(key)
    if unknown:
        return unavailable(
            f"tensor instructions of unknown shape in {OPCODE_METRIC}: {', '.join(sorted(unknown))}"
        )
    if not used:
        return Resolved(0.0, f"{OPCODE_METRIC}: no tensor-core instructions executed")
    return Resolved(total, f"{OPCODE_METRIC}: Σ count × 2·m·n·k per shape ({', '.join(sorted(used))})")


def ops_paths(raw: Raw) -> list[str]:
    """The tensor data paths the report holds, without double counting.

    ``src_*`` aggregates are preferred over ``op_*`` per-instruction paths; a path that also
    exists split by ``_sparsity_on``/``_sparsity_off`` is represented by the split ones.
    """
    bases: set[str] = set()
    for name in raw:
        if name.startswith(OPS_PREFIX) and (
            name.endswith(".sum") or name.endswith(".sum.per_cycle_elapsed") or name.endswith(".sum.per_second")
        ):
            bases.add(name.split(".", 1)[0])
    src = {b for b in bases if b.startswith(OPS_PREFIX + "src_")}
    chosen = src or {b for b in bases if b.startswith(OPS_PREFIX + "op_")}
    return sorted(b for b in chosen if not any(o != b and o.startswith(b + "_sparsity") for o in chosen))


def resolve_tensor(
    raw: Raw,
    opcode_counts: Mapping[str, float] | None,
    cc_major: int | None,
    cc_minor: int | None,
    duration: Resolved,
) -> tuple[Resolved, str | None]:
    """Tensor FLOPs of one launch and its dominant data path (or None)."""
    paths = ops_paths(raw)
    if paths:
        per_path = {p: count(raw, [p], duration) for p in paths}
        bad = [p for p, r in per_path.items() if not r.ok]
        if not bad:
            total = sum(r.value for r in per_path.values())
            dominant = max(per_path, key=lambda p: per_path[p].value)
            form = "count" if per_path[dominant].source.endswith(".sum") else "rate × sm__cycles_elapsed.avg"
            src = f"Σ {OPS_PREFIX}src_*/op_* over {len(paths)} paths ({form})"
            return Resolved(total, src), (dominant.removeprefix(OPS_PREFIX) if total > 0 else None)

    pipe = count(raw, ["sm__inst_executed_pipe_tensor", "smsp__inst_executed_pipe_tensor"], duration)
    if not pipe.ok:
        derived = num(raw, "derived__smsp__inst_executed_pipe_tensor_x512")
        if derived is not None and duration.ok:
            cyc = elapsed_cycles(raw, "smsp", duration)
            if cyc.ok:
                pipe = Resolved(derived * cyc.value / 512.0, f"derived__smsp__inst_executed_pipe_tensor_x512 / 512 × {cyc.source}")

    if cc_major == 7 and cc_minor == 0 and pipe.ok:
        src = (f"{pipe.source} × 512 (Volta HMMA.884 with FP32 accumulate: 512 FLOP per warp "
               "instruction; FP16-accumulate code issues fewer steps per MMA and would be undercounted)")
        return Resolved(pipe.value * 512.0, src), ("hmma_fp16" if pipe.value > 0 else None)

    if opcode_counts is not None:
        res = tensor_flops_from_opcodes(opcode_counts)
        if res.ok:
            return res, dominant_opcode_kind(opcode_counts)
        return unavailable(res.source.removeprefix("unavailable: "), HINT), None

    if pipe.ok and pipe.value == 0:
        return Resolved(0.0, f"{pipe.source} = 0 (no tensor instructions)"), None
    if pipe.ok:
        return (
            unavailable(
                f"only a tensor pipe instruction count ({pipe.value:.6g}) is recorded; × 512 is right "
                f"only on Volta (sm_70), not on compute capability {cc_major}.{cc_minor}, and no "
                "per-opcode counts or sm__ops_path_tensor_* metrics are present",
                HINT,
            ),
            None,
        )
    return unavailable("no tensor-core counters in the report", HINT), None


def peak_tensor(raw: Raw, path: str | None, volta: bool, sm_clock: Resolved) -> Resolved:
    """Peak tensor FLOP/s at the profiled clock for the dominant path (dense fp16 if none)."""
    if not sm_clock.ok:
        return unavailable("no SM clock to scale .peak_sustained with")
    candidates = []
    if path:
        candidates.append(OPS_PREFIX + path)
    if not is_fp16_path(path):
        candidates = [c for c in candidates if num(raw, f"{c}.sum.peak_sustained")]
        if not candidates:
            return unavailable(f"no peak counter for the {path} tensor path in this report")
    candidates += [
        OPS_PREFIX + p
        for p in (
            "src_fp16_dst_fp32_sparsity_off",
            "src_fp16_bf16_tf32_dst_fp32",
            "src_fp16_sparsity_off",
            "src_fp16",
            "op_hgmma_src_fp16_sparsity_off",
            "op_hmma_src_fp16_dst_fp32_sparsity_off",
        )
    ]
    clock = f"{sm_clock.source} ({sm_clock.value / 1e9:.3f} GHz, profiled clock)"
    for base in candidates:
        v = num(raw, f"{base}.sum.peak_sustained")
        if v:
            return Resolved(v * sm_clock.value, f"counters: {base}.sum.peak_sustained × {clock}")
    if volta and is_fp16_path(path):
        for unit in ("sm", "smsp"):
            v = num(raw, f"{unit}__inst_executed_pipe_tensor.sum.peak_sustained")
            if v:
                return Resolved(
                    512.0 * v * sm_clock.value,
                    f"counters: 512 × {unit}__inst_executed_pipe_tensor.sum.peak_sustained × {clock}",
                )
    return unavailable("no tensor .peak_sustained counter in the report", "ncu --set full (ncu >= 2025.1)")
