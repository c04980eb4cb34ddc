"""What a warp stall and a binding pipe mean, and the step each points to (``diagnose.py``'s next steps; every
rule is in ``docs/analysis.md``). Data only: the meanings follow the Nsight Compute Profiling Guide ("Warp Stall
Reasons", "Pipelines")."""

from __future__ import annotations

#: what each warp-stall reason means (ncu Profiling Guide, "Warp Stall Reasons"), and the step it points to
STALLS = {
    "long_scoreboard": ("waiting on global/local memory (L1TEX) results",
                        ("hide memory latency: more independent loads in flight per warp, prefetch into shared memory, "
                         "or more resident warps")),
    "short_scoreboard": ("waiting on shared memory or MIO results",
                         "fewer shared-memory round trips (bank conflicts, dependent shared loads)"),
    "wait": ("fixed-latency dependencies", "more independent instructions between dependent ones (unroll, interleave)"),
    "barrier": ("waiting at __syncthreads", "less work imbalance between the warps of a block, fewer barriers"),
    "membar": ("waiting on memory barriers", "fewer memory fences"),
    "math_pipe_throttle": ("its math pipe was busy", "spread the math over more pipes, or accept: the pipe is busy"),
    "mio_throttle": ("the MIO queue was full (shared memory, special math, dynamic branches)",
                     "fewer shared-memory and special-function instructions"),
    "lg_throttle": ("the local/global memory queue was full", "fewer, wider memory instructions (vectorised loads)"),
    "tex_throttle": ("the texture queue was full", "fewer texture/surface instructions"),
    "imc_miss": ("an immediate-constant cache miss", "keep constants in registers or uniform across the warp"),
    "no_instruction": ("an instruction-cache miss or an empty pipeline after a branch", "smaller, less branchy code"),
    "branch_resolving": ("resolving branch targets", "fewer divergent branches"),
    "dispatch_stall": ("the dispatcher could not issue", "nothing in the code: a pipeline conflict"),
    "drain": ("draining memory stores at exit", "nothing: the kernel's end"),
    "sleeping": ("a nanosleep or yield", "fewer sleeps/spins"),
    "misc": ("miscellaneous reasons", ""),
    "not_selected": ("eligible but another warp issued", "nothing: enough warps are ready (fewer would do)"),
    "gmma": ("waiting on warpgroup MMA", "overlap the MMA with other work (pipelining)"),
}

#: the step a pipe-bound kernel's binding pipe points to
PIPE_STEPS = {
    "xu": "reduce transcendental work on the XU pipe (fast-math intrinsics such as __expf/exp2f, fewer exp/sin/rsqrt "
          "per element, conversions out of the inner loop)",
    "lsu": "issue fewer load/store instructions: wider (vectorised) accesses, reuse in registers or shared memory",
    "alu": "cut integer and logic instructions (index arithmetic, comparisons): hoist and strength-reduce them",
    "adu": "fewer divergent branches and address-divergent accesses",
    "cbu": "fewer branches and barriers in the inner loop",
    "fp64": "the FP64 pipe is saturated: mixed precision where accuracy allows",
    "tensor": "the tensor pipe is at its issue limit: only a narrower type (fp8/int8), 2:4 sparsity or less work is faster",
    "mfma": "the matrix cores are at their issue limit: only a narrower type, sparsity or less work is faster",
    "valu": "the vector ALU is saturated: fewer instructions per element, or matrix cores if the math is a matmul",
    "salu": "cut scalar (uniform) instructions: loop bookkeeping, address arithmetic",
    "lds": "fewer LDS accesses and bank conflicts",
    "tex": "fewer texture/surface instructions",
    "uniform": "cut uniform-datapath instructions (loop bookkeeping)",
}

__all__ = ["PIPE_STEPS", "STALLS"]
