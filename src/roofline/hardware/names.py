"""Device names as profilers spell them → a spec-table entry (or the architecture model), with the steps.

Real spellings carry vendor prefixes ("NVIDIA ", "Tesla ", "GeForce ", "AMD Instinct "), memory sizes
("-32GB"), form factors ("SXM2", "PCIE"), board codes ("A100-PG509-200"), DGX Station parts ("DGXS"),
SR-IOV virtual functions ("… VF") and MIG slices ("… MIG 3g.20gb"). :func:`resolve` strips and
records each, matches the model against the table, narrows by the profile's compute capability and
SM count, and says every step (``roofline devices --explain NAME``). A name that still matches
nothing falls back on the architecture model when the profile records its CC (gfx) and SM count;
DRAM bandwidth then stays unavailable (no profile format records it per kernel). Nothing is guessed:
where candidates differ and the profile cannot tell them apart, the roofs are the higher of their
figures (an upper bound) and the note says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from types import MappingProxyType

from roofline.hardware.archs import Arch, arch_for
from roofline.hardware.specs import Figure, GpuSpec, UnknownDeviceError, arch_figures, load_specs

_PREFIXES = ("nvidia", "tesla", "geforce", "quadro", "amd", "instinct", "radeon")
_FORMS = ("sxm", "sxm2", "sxm4", "sxm5", "pcie", "nvl", "hbm3")
_MIG = re.compile(r"\bmig (\d)g\.(\d+)gb\b(\+me)?")
_MEM = re.compile(r"\b(\d+)\s?gb\b")
#: HIP "compute capabilities" no NVIDIA part has: a device reporting one is AMD
_AMD_ONLY_CC = ("9.4", "9.5", "11.0", "11.5")


@dataclass(frozen=True)
class Resolution:
    query: str | None
    spec: GpuSpec | None
    steps: tuple[str, ...]
    by_name: bool = False  # the name itself picked the entry (not the profile's attributes)

    @property
    def reason(self) -> str:
        return self.steps[-1] if self.steps else "no device name"

    def explain(self) -> str:
        head = f"{self.query!r} -> {self.spec.name if self.spec else 'no roofs'}"
        return "\n".join([head] + [f"  {i}. {s}" for i, s in enumerate(self.steps, 1)])


@dataclass(frozen=True)
class _Parsed:
    model: str
    memory_gb: float | None
    mig: tuple[int, int] | None
    vf: bool


def _parse(name: str) -> _Parsed:
    s = re.sub(r"[\s_-]+", " ", name.strip().lower())
    mig = None
    m = _MIG.search(s)
    if m:
        mig = (int(m.group(1)), int(m.group(2)))
        s = _MIG.sub(" ", s)
    words = s.split()
    while words and words[0] in _PREFIXES:
        words = words[1:]
    vf = bool(words) and words[-1] == "vf"
    if vf:
        words = words[:-1]
    s = " ".join(words)
    mem = None
    m = _MEM.search(s)
    if m:
        mem = float(m.group(1))
        s = _MEM.sub(" ", s)
    return _Parsed(" ".join(s.split()), mem, mig, vf)


@lru_cache(maxsize=1)
def _models() -> tuple[tuple[str, tuple[str, ...], GpuSpec], ...]:
    """(model, aliases, spec) of every table entry, normalised like device names."""
    out = []
    for spec in load_specs():
        aliases = tuple(_parse(a).model for a in spec.aliases)
        out.append((_parse(spec.name).model, aliases, spec))
    return tuple(out)


def _same_roofs(specs: list[GpuSpec]) -> bool:
    first = specs[0]
    return all(s.sm_count == first.sm_count and s.dram_bytes_per_s == first.dram_bytes_per_s
               and {k: f.flop_per_cycle_per_sm for k, f in s.figures.items()}
               == {k: f.flop_per_cycle_per_sm for k, f in first.figures.items()}
               and s.boost_clock_hz == first.boost_clock_hz for s in specs)


def _upper_bound(label: str, specs: list[GpuSpec]) -> GpuSpec:
    """The higher of the candidates' figures: a roof no candidate exceeds."""
    keys = {k for s in specs for k in s.figures}
    figs = {}
    for k in sorted(keys):
        best = max((s for s in specs if k in s.figures), key=lambda s: s.figures[k].tflops)
        f = best.figures[k]
        figs[k] = Figure(f.tflops, f.flop_per_cycle_per_sm, f"{best.name}: {f.derived or best.source}")
    top = max(specs, key=lambda s: s.dram_bytes_per_s)
    fast = max(specs, key=lambda s: s.boost_clock_hz)
    names = ", ".join(s.name for s in specs)
    return replace(specs[0], name=f"{label} (one of {names})", figures=MappingProxyType(figs),
                   dram_bytes_per_s=top.dram_bytes_per_s, dram_source=f"{top.name}: {top.dram_source}",
                   boost_clock_hz=fast.boost_clock_hz, boost_clock_source=f"{fast.name}: {fast.boost_clock_source}",
                   sm_count=max(s.sm_count for s in specs),
                   note=f"ambiguous: {names}; roofs are the higher of their figures (an upper bound)")


def _choose(label: str, cands: list[GpuSpec], steps: list[str]) -> GpuSpec:
    if len(cands) == 1:
        return cands[0]
    if _same_roofs(cands):
        steps.append(f"{', '.join(s.name for s in cands)} have the same roofs: {cands[0].name}")
        others = ", ".join(s.name for s in cands[1:])
        return replace(cands[0], name=f"{cands[0].name} (same roofs as {others})")
    steps.append(f"still one of {', '.join(s.name for s in cands)}: roofs are the higher of their figures "
                 "(an upper bound); pass --device-map to pick one")
    return _upper_bound(label, cands)


def _narrow(cands: list[GpuSpec], cc: str | None, sms: int | None, mem: float | None,
            steps: list[str], mig: bool) -> list[GpuSpec]:
    if cc:
        by_cc = [s for s in cands if _cc_fits(s, cc)]
        if by_cc and len(by_cc) < len(cands):
            steps.append(f"profile CC {cc}: {', '.join(s.name for s in by_cc)}")
            cands = by_cc
    if sms and not mig:
        by_sm = [s for s in cands if s.sm_count == sms]
        if by_sm and len(by_sm) < len(cands):
            steps.append(f"profile SM count {sms}: {', '.join(s.name for s in by_sm)}")
            cands = by_sm
    if mem:
        by_mem = [s for s in cands if not s.memory_gb or mem in s.memory_gb]
        if by_mem and len(by_mem) < len(cands):
            steps.append(f"memory {mem:g} GB: {', '.join(s.name for s in by_mem)}")
            cands = by_mem
        elif not by_mem:
            steps.append(f"memory {mem:g} GB matches no entry's memory size ({', '.join(s.name for s in cands)}): ignored")
    return cands


def _cc_fits(spec: GpuSpec, cc: str) -> bool:
    if spec.vendor == "AMD":
        arch = spec.arch
        return arch is not None and (arch.hip_cc == cc or cc in arch.targets)
    return spec.compute_capability == cc


def _vendor(name: str, cc: str | None) -> str:
    low = name.lower()
    if any(w in low for w in ("amd", "radeon", "instinct")) or (cc or "").startswith("gfx") or cc in _AMD_ONLY_CC:
        return "AMD"
    return "NVIDIA"


def _at_profile(spec: GpuSpec, sms: int | None, steps: list[str], cc: str | None = None) -> GpuSpec:
    """The profile's SM count where it differs from the entry's (compute roofs scale with SMs)."""
    if not sms or sms == spec.sm_count:
        return spec
    if cc and not _cc_fits(spec, cc):  # another GPU's roofs were asked for (--peaks NAME): its own SMs count
        steps.append(f"the profile's CC {cc} is not {spec.name}'s: its SM count ({sms}) is not used")
        return spec
    ratio = sms / spec.sm_count
    figs = {k: Figure(f.tflops * ratio, f.flop_per_cycle_per_sm,
                      f"{f.derived or spec.source}; x {sms}/{spec.sm_count} SMs (the profile's SM count)")
            for k, f in spec.figures.items()}
    steps.append(f"the profile records {sms} SMs, {spec.name} has {spec.sm_count}: compute roofs use {sms}")
    return replace(spec, sm_count=sms, figures=MappingProxyType(figs),
                   note=((spec.note + "; ") if spec.note else "") + f"{sms} of {spec.sm_count} SMs")


def _mig(spec: GpuSpec, mig: tuple[int, int], mem: float | None, sms: int | None, steps: list[str]) -> GpuSpec:
    g, slice_gb = mig
    total = mem or (max(spec.memory_gb) if spec.memory_gb else None)
    label = f"{spec.name} MIG {g}g.{slice_gb}gb"
    if sms:
        n, how = sms, "the profile's SM count"
    else:
        n, how = max(1, math.floor(spec.sm_count * g / 7)), f"{g}/7 of the GPU's SMs (approximate: no SM count recorded)"
    ratio = n / spec.sm_count
    figs = {k: Figure(f.tflops * ratio, f.flop_per_cycle_per_sm,
                      f"{f.derived or spec.source}; MIG {g}g: x {n}/{spec.sm_count} SMs ({how})")
            for k, f in spec.figures.items()}
    if total:
        share = slice_gb / total
        dram, dram_src = spec.dram_bytes_per_s * share, f"{spec.dram_source}; MIG: x {slice_gb}/{total:g} GB of memory slices"
    else:
        dram, dram_src = math.nan, f"unavailable: MIG slice of {spec.name} with no total memory known"
    steps.append(f"MIG slice {g}g.{slice_gb}gb: compute x {n}/{spec.sm_count} SMs ({how}), "
                 + (f"DRAM x {slice_gb}/{total:g} GB" if total else "DRAM unavailable"))
    return replace(spec, name=label, sm_count=n, figures=MappingProxyType(figs), dram_bytes_per_s=dram,
                   dram_source=dram_src, note=f"MIG {g}g.{slice_gb}gb slice of {spec.name}")


def _from_arch(arch: Arch, name: str, sms: int, boost_hz: float | None, steps: list[str]) -> GpuSpec:
    clock = boost_hz if boost_hz and boost_hz > 0 else math.nan
    figs = arch_figures(arch, sms, clock, "the profile's max clock") if math.isfinite(clock) else {
        k: Figure(math.nan, r.per_clk, f"arch model {arch.label()}: {r.per_clk:g} FLOP/clk/SM x {sms} SMs ({r.source})")
        for k, r in arch.dense.items()}
    steps.append(f"architecture model {arch.label()} ({arch.name}) x {sms} SMs"
                 + (f" x {clock / 1e6:.0f} MHz" if math.isfinite(clock) else " x the profiled SM clock")
                 + "; DRAM bandwidth unavailable (not in the spec table)")
    return GpuSpec(name=f"{name or 'unnamed GPU'} (arch model {arch.label()}, {sms} SMs)", pattern="",
                   vendor=arch.vendor, architecture=arch.name, compute_capability=arch.targets[0], sm_count=sms,
                   boost_clock_hz=clock, boost_clock_source="the profile's max SM clock", dram_bytes_per_s=math.nan,
                   dram_source=f"unavailable: {name or 'the device'} is not in the spec table; pass --peaks FILE.toml "
                               "with [bandwidth] dram", source=f"architecture model {arch.label()}",
                   figures=MappingProxyType(figs), note="architecture model")


#: a profile's SM count past the named GPU's by more than this: not that GPU (full dies have ~10% more SMs
#: than their products: GH100 144 vs H100 SXM 132)
MAX_SM_EXCESS = 1.1


def resolve(name: str | None, compute_capability: str | None = None, sm_count: int | None = None,
            boost_clock_hz: float | None = None, device_map: Mapping[str, str] | None = None) -> Resolution:
    """The spec of a device as a profile records it (name, CC or gfx, SMs, max clock), with the steps."""
    key = (name, compute_capability, sm_count, boost_clock_hz, tuple(sorted((device_map or {}).items())))
    return _resolve(*key)


@lru_cache(maxsize=512)
def _resolve(name: str | None, cc: str | None, sms: int | None, boost: float | None,
             dmap: tuple[tuple[str, str], ...]) -> Resolution:
    steps: list[str] = []
    raw = name if isinstance(name, str) else ""
    cc = str(cc) if cc else None
    sms = int(sms) if sms and sms > 0 else None
    mapped = dict(dmap).get(raw)
    if mapped:
        steps.append(f"--device-map {raw}={mapped}")
        inner = _resolve(mapped, None, None, None, ())
        if inner.spec is None:
            return Resolution(name, None, tuple(steps + list(inner.steps)))
        return Resolution(name, _at_profile(inner.spec, sms, steps + list(inner.steps), cc) if sms else inner.spec,
                          tuple(steps + list(inner.steps)), True)
    p = _parse(raw)
    if raw:
        bits = [f"model {p.model!r}"] + ([f"{p.memory_gb:g} GB"] if p.memory_gb else []) \
            + ([f"MIG {p.mig[0]}g.{p.mig[1]}gb"] if p.mig else []) + (["SR-IOV VF = the physical GPU"] if p.vf else [])
        steps.append("read " + ", ".join(bits))
    cands: list[GpuSpec] = []
    if p.model:
        cands = [s for m, al, s in _models() if p.model == m or p.model in al]
        if cands:
            steps.append(f"table entry by name: {', '.join(s.name for s in cands)}")
        else:
            fam = [s for m, al, s in _models() if m.startswith(p.model + " ") and m[len(p.model) + 1:] in _FORMS]
            if fam:
                steps.append(f"no form factor in the name; {p.model!r} is one of {', '.join(s.name for s in fam)}")
                cands = fam
        stepping = re.fullmatch(r"(.+) ([a-d]\d)", p.model)  # rocprof's gpu_model "MI300X_A1": silicon stepping
        if not cands and stepping:
            cands = [s for m, al, s in _models() if stepping.group(1) == m or stepping.group(1) in al]
            if cands:
                steps.append(f"stepping {stepping.group(2).upper()} dropped: {', '.join(s.name for s in cands)}")
    by_name = bool(cands)
    if not cands and (cc and sms):
        vendor = _vendor(raw, cc)
        cands = [s for s in load_specs() if s.vendor == vendor and _cc_fits(s, cc) and s.sm_count == sms]
        if cands:
            steps.append(f"no table entry by name; {vendor} CC {cc} with {sms} SMs: {', '.join(s.name for s in cands)}")
    if cands:
        cands = _narrow(cands, cc, sms, p.memory_gb, steps, p.mig is not None)
        spec = _choose(raw or f"unnamed CC {cc} GPU", cands, steps)
        if by_name and sms and not p.mig and sms > spec.sm_count * MAX_SM_EXCESS:
            # more SMs than the named GPU has: the name does not describe this hardware (an MI300X trace whose
            # device reads "H100" showed 304 SMs). Its roofs would be another GPU's: none, and said why
            steps.append(f"the profile records {sms} SMs, more than {spec.name}'s {spec.sm_count}: the device name "
                         f"does not match the hardware; no roofs from the table (--device-map \"{raw}=<GPU>\" "
                         "names the GPU)")
            return Resolution(name, None, tuple(steps))
        spec = _mig(spec, p.mig, p.memory_gb, sms, steps) if p.mig else _at_profile(spec, sms, steps, cc)
        return Resolution(name, spec, tuple(steps), by_name)
    if cc and sms:
        vendor = _vendor(raw, cc)
        arch = arch_for(cc, None, vendor)
        if arch is not None:
            return Resolution(name, _from_arch(arch, raw, sms, boost, steps), tuple(steps))
        steps.append(f"no architecture-model entry for {vendor} CC {cc}: roofs unavailable")
        return Resolution(name, None, tuple(steps))
    what = "the profile names no GPU" if not raw else f"{raw!r} is not in the spec table"
    need = "its compute capability and SM count are not recorded" if not (cc and sms) else ""
    steps.append(f"{what} and {need}: roofs unavailable")
    return Resolution(name, None, tuple(steps))


def lookup(device_name: str | None) -> GpuSpec | None:
    """The spec for a device name as profilers spell it (see :mod:`roofline.hardware.names`)."""
    if not device_name or not isinstance(device_name, str):
        return None
    res = resolve(device_name)
    return res.spec if res.by_name else None


def by_capabilities(vendor: str, cc: str, cores: int, bandwidth: float, clock_hz: float) -> str | None:
    """The one table GPU whose capabilities a profile that records no name gives (an XLA device plane:
    compute capability, SM count, memory bandwidth B/s, maximum SM clock Hz), else None (a wrong name is
    worse than none).

    NVIDIA only: CUDA's memory bandwidth (memory clock × bus width) and maximum SM clock agree with the
    datasheets, while ROCm reports half of MI300X's bandwidth. Compute capability and SM count must be
    equal, the bandwidth within 5% and the clock within 1% (L40 and L40S differ by 1.2%), and only one
    part may be left.
    """
    if vendor != "NVIDIA" or not bandwidth or not clock_hz:
        return None
    fits = [s.name for s in load_specs() if s.vendor == "NVIDIA" and s.compute_capability == cc and s.sm_count == cores
            and abs(s.dram_bytes_per_s / bandwidth - 1) <= 0.05 and abs(s.boost_clock_hz / clock_hz - 1) <= 0.01]
    return fits[0] if len(fits) == 1 else None


def require(device_name: str) -> GpuSpec:
    """Like :func:`lookup`, but an unknown name is an error that lists the known ones."""
    spec = lookup(device_name)
    if spec is None:
        raise UnknownDeviceError(device_name)
    return spec
