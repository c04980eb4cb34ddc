"""The architecture model (``archs.toml``): per-SM (per-CU) rates per clock, each with its source.

A roof is rate × SMs × clock. ``gpus.toml`` SKUs point at an architecture by compute capability
(NVIDIA) or gfx target (AMD) and may name a variant (GeForce tensor rates, TU116 without tensor cores);
a device the SKU table does not know but whose profile records its CC and SM count gets its compute
roofs from here alone.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from types import MappingProxyType

#: keys of compute figures, CUDA-core first, then tensor paths (shared with gpus.toml)
COMPUTE_KEYS: tuple[str, ...] = (
    "fp64", "fp32", "fp16",
    "tensor_fp64", "tensor_tf32", "tensor_fp32", "tensor_fp16", "tensor_fp16_acc16", "tensor_bf16",
    "tensor_fp8", "tensor_int8", "tensor_int4", "tensor_fp4",
)


@dataclass(frozen=True)
class Rate:
    """One per-SM (per-CU) rate per clock and the document it comes from."""

    per_clk: float
    source: str


@dataclass(frozen=True)
class Arch:
    id: str
    vendor: str
    name: str
    targets: tuple[str, ...]
    hip_cc: str | None
    dense: Mapping[str, Rate]
    sparse: Mapping[str, Rate]
    l1_bytes_per_clk: Rate | None
    l2_bytes_per_clk: Rate | None
    variant: str | None = None

    def label(self) -> str:
        return self.id + (f" ({self.variant})" if self.variant else "")


def _rates(table: Mapping[str, object], sources: Mapping[str, str], default: str, where: str) -> dict[str, Rate]:
    bad = set(table) - set(COMPUTE_KEYS)
    if bad:
        raise ValueError(f"archs.toml {where}: unknown figure(s) {sorted(bad)}")
    return {k: Rate(float(v), sources.get(k, default)) for k, v in table.items()}  # type: ignore[arg-type]


def _parse(data: Mapping[str, object]) -> dict[tuple[str, str | None], Arch]:
    out: dict[tuple[str, str | None], Arch] = {}
    for a in data["arch"]:  # type: ignore[union-attr]
        src = a.get("sources", {})
        dense = _rates(a.get("dense", {}), src, a["source"], a["id"])
        sparse = _rates(a.get("sparse", {}), src, a["source"], a["id"])

        def mem(key: str, a=a, src=src) -> Rate | None:  # type: ignore[no-untyped-def]
            return Rate(float(a[key]), src.get(key, a["source"])) if key in a else None

        base = Arch(a["id"], a["vendor"], a["name"], tuple(a["targets"]), a.get("hip_cc"),
                    MappingProxyType(dense), MappingProxyType(sparse), mem("l1_bytes_per_clk"), mem("l2_bytes_per_clk"))
        out[(base.id, None)] = base
        for v in a.get("variant", []):
            vd, vs = dict(dense), dict(sparse)
            vd.update(_rates(v.get("dense", {}), {}, v["source"], f"{a['id']}/{v['name']}"))
            vs.update(_rates(v.get("sparse", {}), {}, v["source"], f"{a['id']}/{v['name']}"))
            for k in v.get("drop", []):
                vd.pop(k, None)
                vs.pop(k, None)
            out[(base.id, v["name"])] = Arch(base.id, base.vendor, base.name, base.targets, base.hip_cc,
                                             MappingProxyType(vd), MappingProxyType(vs), base.l1_bytes_per_clk,
                                             base.l2_bytes_per_clk, v["name"])
    return out


@lru_cache(maxsize=1)
def load_archs() -> Mapping[tuple[str, str | None], Arch]:
    text = resources.files(__package__).joinpath("archs.toml").read_text(encoding="utf-8")
    return MappingProxyType(_parse(tomllib.loads(text)))


def arch_for(target: str | None, variant: str | None = None, vendor: str | None = None) -> Arch | None:
    """The architecture of a compute capability ("8.6") or gfx target ("gfx942"), optionally a variant.

    For AMD devices a HIP "compute capability" (gfx942 reports 9.4) is accepted when ``vendor`` is AMD
    and it names exactly one architecture (9.0 covers gfx906, gfx908 and gfx90a: no answer).
    """
    if not target:
        return None
    t = str(target).strip().lower()
    archs = load_archs()
    if vendor == "AMD" and not t.startswith("gfx"):
        hits = {a.id for a in archs.values() if a.vendor == "AMD" and a.hip_cc == t}
        if len(hits) != 1:
            return None
        t = archs[(hits.pop(), None)].targets[0]
    for (aid, var), a in archs.items():
        if var == variant and t in a.targets and (vendor is None or a.vendor == vendor):
            return a
    return None


def arch_rows() -> list[dict[str, object]]:
    """Every figure of the model, one row each (for docs, `roofline devices --archs` and tests)."""
    rows: list[dict[str, object]] = []
    for a in load_archs().values():
        for kind, table in (("dense", a.dense), ("sparse", a.sparse)):
            for k, r in table.items():
                rows.append({"arch": a.label(), "targets": " ".join(a.targets), "figure": k, "kind": kind,
                             "per_clk": r.per_clk, "source": r.source})
        for k, r in (("l1_bytes_per_clk", a.l1_bytes_per_clk), ("l2_bytes_per_clk", a.l2_bytes_per_clk)):
            if r is not None:
                rows.append({"arch": a.label(), "targets": " ".join(a.targets), "figure": k, "kind": "bytes",
                             "per_clk": r.per_clk, "source": r.source})
    return rows
