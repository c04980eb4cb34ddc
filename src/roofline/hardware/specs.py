"""The vetted spec table (``gpus.toml``): datasheet peaks by GPU name, each with its source.

The figures are dense (non-sparse) and quoted by the vendor at a boost clock. ncu measures at
the clock the kernel ran at (``--clock-control base`` locks it to base by default), so a spec
compute peak used beside counters is rescaled to the profiled SM clock through the per-SM rate
(rate × SMs × clock); the source says so. Bandwidth is used as published.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from types import MappingProxyType

import pandas as pd

from roofline.errors import RooflineError
from roofline.hardware.archs import COMPUTE_KEYS, Arch, arch_for

TFLOP = 1e12

#: bytes per cycle per SM that ncu's L1 roof assumes (lsu_writeback × 128, formulas.md §1)
L1_BYTES_PER_CYCLE_PER_SM = 128


class UnknownDeviceError(RooflineError):
    """A GPU name that is not in the spec table: never replaced by a silent default."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"unknown GPU {name!r}; known GPUs: {', '.join(known_devices())} "
                         "(or give your own peaks with --peaks FILE.toml)")


@dataclass(frozen=True)
class Figure:
    """One published dense peak and the per-SM rate behind it."""

    tflops: float  # TFLOP/s (TOPS for integer paths), dense, as published
    flop_per_cycle_per_sm: float
    derived: str | None = None  # why, when the figure is not printed in the spec's source

    @property
    def flop_per_s(self) -> float:
        return self.tflops * TFLOP


@dataclass(frozen=True)
class GpuSpec:
    name: str
    pattern: str  # case-insensitive regex over the device names profilers record
    vendor: str
    architecture: str
    compute_capability: str
    sm_count: int
    boost_clock_hz: float
    boost_clock_source: str
    dram_bytes_per_s: float
    dram_source: str
    source: str
    figures: Mapping[str, Figure]
    memory_gb: tuple[float, ...] = ()
    host_link: str | None = None
    variant: str | None = None
    aliases: tuple[str, ...] = ()
    note: str | None = None  # how a resolved device differs from the table entry (MIG, SMs, ambiguity)

    @property
    def arch(self) -> Arch | None:
        """The architecture-model entry of this SKU (its CC or gfx target and variant)."""
        return arch_for(self.compute_capability, self.variant, self.vendor)

    def implied_clock_hz(self, key: str) -> float:
        """The clock a published figure implies: FLOP/s ÷ (SMs × per-SM rate)."""
        f = self.figures[key]
        return f.flop_per_s / (self.sm_count * f.flop_per_cycle_per_sm)

    def flop_per_s_at(self, key: str, clock_hz: float) -> float:
        """A compute peak at a given SM clock: per-SM rate × SMs × clock."""
        return self.figures[key].flop_per_cycle_per_sm * self.sm_count * clock_hz

    def figure_source(self, key: str) -> str:
        f = self.figures[key]
        return f"{self.name} {key} {f.tflops:g} T/s: {f.derived or self.source}"

    def l1_bytes_per_s_at(self, clock_hz: float) -> float | None:
        """L1 roof as ncu draws it (128 B/cycle/SM); NVIDIA only."""
        if self.vendor != "NVIDIA":
            return None
        return L1_BYTES_PER_CYCLE_PER_SM * self.sm_count * clock_hz


def _parse(data: Mapping[str, object]) -> tuple[GpuSpec, ...]:
    specs = []
    for g in data["gpu"]:  # type: ignore[union-attr]
        derived = g.get("derived", {})
        figures = {
            k: Figure(float(v[0]), float(v[1]), derived.get(k)) for k, v in g.get("dense", {}).items()
        }
        unknown = set(figures) - set(COMPUTE_KEYS)
        if unknown:
            raise ValueError(f"gpus.toml {g['name']}: unknown figure(s) {sorted(unknown)}")
        spec = GpuSpec(
            name=g["name"], pattern=g.get("match", ""), vendor=g["vendor"], architecture=g["architecture"],
            compute_capability=str(g["compute_capability"]), sm_count=int(g["sm_count"]),
            boost_clock_hz=float(g["boost_clock_mhz"]) * 1e6,
            boost_clock_source=g.get("boost_clock_source", g["source"]),
            dram_bytes_per_s=float(g["dram_bytes_per_s"]), dram_source=g.get("dram_source", g["source"]),
            source=g["source"], figures=MappingProxyType(figures),
            memory_gb=tuple(float(m) for m in g.get("memory_gb", ())), host_link=g.get("host_link"),
            variant=g.get("variant"), aliases=tuple(g.get("aliases", ())),
        )
        # figures the datasheet does not print come from the architecture model at the boost clock
        # (a SKU without published figures gets all of them from there), each labelled as such
        spec = with_arch_figures(spec, tuple(g.get("no_model", ())))
        specs.append(spec)
    return tuple(specs)


def arch_figures(arch: Arch, sm_count: int, clock_hz: float, clock_what: str) -> dict[str, Figure]:
    """Dense figures of an architecture: rate × SMs × clock, each naming the rate's source."""
    return {k: Figure(r.per_clk * sm_count * clock_hz / TFLOP, r.per_clk,
                      f"arch model {arch.label()}: {r.per_clk:g} FLOP/clk/SM x {sm_count} SMs x {clock_what} "
                      f"{clock_hz / 1e6:.0f} MHz ({r.source})")
            for k, r in arch.dense.items()}


def with_arch_figures(spec: GpuSpec, no_model: tuple[str, ...] = ()) -> GpuSpec:
    arch = spec.arch
    if arch is None and spec.figures:
        return spec
    if arch is None:
        raise ValueError(f"gpus.toml {spec.name}: no architecture-model entry for {spec.compute_capability} "
                         f"(variant {spec.variant}) and no published figures")
    model = {k: f for k, f in arch_figures(arch, spec.sm_count, spec.boost_clock_hz, "boost clock").items()
             if k not in no_model}
    return replace(spec, figures=MappingProxyType({**model, **spec.figures}))


@lru_cache(maxsize=1)
def load_specs() -> tuple[GpuSpec, ...]:
    text = resources.files(__package__).joinpath("gpus.toml").read_text(encoding="utf-8")
    return _parse(tomllib.loads(text))


def known_devices() -> list[str]:
    return [s.name for s in load_specs()]


def tensor_key(path: str | None) -> tuple[str, bool]:
    """Spec key of a tensor data path (ncu ops path or opcode kind) and whether it is sparse.

    ``None`` (no tensor work) maps to dense FP16, the roof ncu draws by default.
    """
    if not path:
        return "tensor_fp16", False
    p = path.lower()
    sparse = "sparsity_on" in p
    if "fp64" in p:
        return "tensor_fp64", False
    if "fp16_bf16_tf32" in p:  # Turing's one aggregate path: its rate is the FP16 rate
        return "tensor_fp16", sparse
    for token, key in (("tf32", "tensor_tf32"), ("bf16", "tensor_bf16"), ("fp8", "tensor_fp8"),
                       ("fp4", "tensor_fp4"), ("int8", "tensor_int8"), ("int4", "tensor_int4")):
        if token in p:
            return key, sparse
    if "fp16_dst_fp16" in p:
        return "tensor_fp16_acc16", sparse
    if "fp16" in p:
        return "tensor_fp16", sparse
    if "fp32" in p:  # AMD MFMA FP32 in and out; after fp16, so NVIDIA's fp16-in/fp32-accumulate paths never land here
        return "tensor_fp32", sparse
    return f"tensor_{p}", sparse  # e.g. int1: no spec figure, reported as unavailable


def spec_tensor_figure(spec: GpuSpec, path: str | None) -> tuple[str, bool] | None:
    """The figure of ``spec`` for a tensor path (FP16-accumulate falls back to FP32-accumulate)."""
    key, sparse = tensor_key(path)
    if key == "tensor_fp16_acc16" and key not in spec.figures:
        key = "tensor_fp16"
    if key == "tensor_bf16" and key not in spec.figures and "tensor_fp16" in spec.figures:
        key = "tensor_fp16"  # Volta/Turing have no BF16 path; ncu folds it into FP16
    return (key, sparse) if key in spec.figures else None


def specs_frame() -> pd.DataFrame:
    """The table as a frame: one row per GPU and figure, with its source (for docs and CLI)."""
    rows = []
    for s in load_specs():
        for key, f in s.figures.items():
            rows.append({
                "gpu": s.name, "figure": key, "dense_tflop_per_s": f.tflops,
                "flop_per_cycle_per_sm": f.flop_per_cycle_per_sm, "sm_count": s.sm_count,
                "implied_clock_mhz": s.implied_clock_hz(key) / 1e6, "boost_clock_mhz": s.boost_clock_hz / 1e6,
                "source": f.derived or s.source,
            })
        rows.append({"gpu": s.name, "figure": "dram_bytes_per_s", "dense_tflop_per_s": float("nan"),
                     "sm_count": s.sm_count, "boost_clock_mhz": s.boost_clock_hz / 1e6,
                     "source": s.dram_source, "dram_tb_per_s": s.dram_bytes_per_s / 1e12,
                     "compute_capability": s.compute_capability, "arch": s.arch.label() if s.arch else None,
                     "memory_gb": "/".join(f"{m:g}" for m in s.memory_gb), "host_link": s.host_link})
    return pd.DataFrame(rows)
