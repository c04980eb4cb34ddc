"""Link roofs: the bandwidth of the links a collective runs on, each figure with its source and direction.

* inside a node: the GPU's NVLink / AMD Infinity Fabric (xGMI) links (``links.toml``, per spec-table GPU), else
  its PCIe host link (``gpus.toml``'s ``host_link``, per direction);
* between nodes: the NIC (InfiniBand / RoCE), which is no property of the GPU: the user gives it, with the node
  size that says which ranks share a node, in a links file (``--links FILE.toml``)::

      [intra_node]                       # optional: replaces the table's GPU-to-GPU links for every device
      name = "NVLink 4, 18 links"
      unidirectional_bytes_per_s = 4.5e11
      source = "H100 SXM datasheet: 900 GB/s bidirectional"
      [inter_node]                       # the network bandwidth per GPU, one direction
      name = "ConnectX-7 NDR 400 Gb/s, one per GPU"
      unidirectional_bytes_per_s = 5.0e10
      source = "our cluster's NIC"
      [placement]
      gpus_per_node = 8                  # ranks r and s share a node when r // 8 == s // 8

Every roof is unidirectional: nccl-tests' bus bandwidth is a one-direction measure (its doc/PERFORMANCE.md).
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from roofline.errors import InputError
from roofline.hardware.names import lookup

#: the GPU-to-GPU link kinds of links.toml, in the order one is chosen as a node's roof
INTRA_KINDS = ("nvlink", "xgmi")
_PCIE = re.compile(r"(PCIe [\d.]+ x\d+) \(([\d.]+) GB/s per direction")


@dataclass(frozen=True)
class Link:
    """One link roof: its name, bytes/s in one direction (and both), and where the figure comes from."""

    name: str
    unidirectional_bytes_per_s: float
    bidirectional_bytes_per_s: float | None
    source: str

    def describe(self) -> str:
        return f"{self.name}: {self.unidirectional_bytes_per_s / 1e9:g} GB/s per direction ({self.source})"


class LinksFileError(InputError):
    kind = "bad-links-file"


@functools.lru_cache(maxsize=1)
def table() -> dict[str, dict[str, Link]]:
    """links.toml: spec-table GPU name -> link kind -> Link."""
    data = tomllib.loads(resources.files("roofline.hardware").joinpath("links.toml").read_text())
    out: dict[str, dict[str, Link]] = {}
    for g in data.get("gpu", []):
        kinds = {}
        for kind, v in g.items():
            if isinstance(v, dict):
                label = {"nvlink": "NVLink", "xgmi": "Infinity Fabric (xGMI)", "nvlink_c2c": "NVLink-C2C"}[kind]
                kinds[kind] = Link(f"{label} {v['generation']}, {v['links']} link(s)",
                                   v["unidirectional_gb_s"] * 1e9, v["bidirectional_gb_s"] * 1e9, v["source"])
        out[g["name"]] = kinds
    return out


def host_link(spec: Any) -> Link | None:
    """The PCIe host link of a spec-table GPU, per direction, from gpus.toml's ``host_link``."""
    m = _PCIE.search(spec.host_link or "") if spec is not None else None
    if m is None:
        return None
    gbs = float(m.group(2))
    return Link(m.group(1), gbs * 1e9, 2 * gbs * 1e9, f"gpus.toml host_link of {spec.name} ({spec.source})")


def intra_node(device_name: Any) -> tuple[Link | None, str]:
    """(the roof inside a node for a device as the profile names it, why that one or why none)."""
    spec = lookup(device_name if isinstance(device_name, str) else None)
    if spec is None:
        return None, f"{device_name or 'the device'} is not in the spec table (see `roofline devices`)"
    kinds = table().get(spec.name, {})
    for k in INTRA_KINDS:
        if k in kinds:
            return kinds[k], f"{spec.name}'s {kinds[k].name}"
    pcie = host_link(spec)
    if pcie is not None:
        return pcie, f"{spec.name} has no GPU-to-GPU link in links.toml: its PCIe host link"
    return None, f"links.toml and gpus.toml give no GPU-to-GPU or PCIe figure for {spec.name}"


@dataclass(frozen=True)
class UserLinks:
    """A links file: roofs and placement the profile does not record."""

    path: str
    intra: Link | None = None
    inter: Link | None = None
    gpus_per_node: int | None = None


def load_links(path: str | Path) -> UserLinks:
    """Read and check a links file; a :class:`LinksFileError` naming the file and the field otherwise."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except FileNotFoundError:
        raise LinksFileError(p, "no such links file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LinksFileError(p, f"cannot read it: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise LinksFileError(p, f"not TOML: {exc}") from None
    unknown = set(data) - {"intra_node", "inter_node", "placement"}
    if unknown:
        raise LinksFileError(p, f"unknown section(s) {sorted(unknown)}: use [intra_node], [inter_node], [placement]")
    links = {}
    for section in ("intra_node", "inter_node"):
        v = data.get(section)
        if v is None:
            continue
        bw, source = v.get("unidirectional_bytes_per_s") if isinstance(v, dict) else None, \
            v.get("source") if isinstance(v, dict) else None
        if isinstance(bw, bool) or not isinstance(bw, (int, float)) or not bw > 0:
            raise LinksFileError(p, f"[{section}] unidirectional_bytes_per_s must be a positive number (bytes/s, one "
                                 "direction)")
        if not isinstance(source, str) or not source.strip():
            raise LinksFileError(p, f"[{section}] source must say where the figure comes from")
        links[section] = Link(str(v.get("name", section.replace("_", "-"))), float(bw), 2.0 * float(bw),
                              f"user: {source} ({p.name})")
    gpn = data.get("placement", {}).get("gpus_per_node") if isinstance(data.get("placement"), dict) else None
    if gpn is not None and (isinstance(gpn, bool) or not isinstance(gpn, int) or gpn < 1):
        raise LinksFileError(p, "[placement] gpus_per_node must be a positive integer")
    return UserLinks(str(p), links.get("intra_node"), links.get("inter_node"), gpn)
