"""links.toml: every link figure has a source, names a spec-table GPU, and its arithmetic holds (links × per-link
= unidirectional; bidirectional = 2 × unidirectional); PCIe roofs come from gpus.toml's host_link."""

from __future__ import annotations

import re
import tomllib
from importlib import resources

import pytest

from roofline.hardware.links import host_link, intra_node, table
from roofline.hardware.specs import load_specs

RAW = tomllib.loads(resources.files("roofline.hardware").joinpath("links.toml").read_text())


@pytest.mark.parametrize("entry", RAW["gpu"], ids=lambda g: g["name"])
def test_every_link_figure_is_sourced_and_adds_up(entry):
    assert entry["name"] in {s.name for s in load_specs()}
    links = {k: v for k, v in entry.items() if isinstance(v, dict)}
    assert links
    for kind, v in links.items():
        assert kind in ("nvlink", "xgmi", "nvlink_c2c")
        assert v["links"] * v["per_link_unidirectional_gb_s"] == v["unidirectional_gb_s"]
        assert v["bidirectional_gb_s"] == 2 * v["unidirectional_gb_s"]
        # the source prints the bidirectional figure the table holds (datasheets print both directions together)
        printed = f"{v['bidirectional_gb_s']:g} GB/s" if v["bidirectional_gb_s"] < 1000 else \
            f"{v['bidirectional_gb_s'] / 1000:g} TB/s"
        assert re.search(r"data ?sheet", v["source"]) and printed in v["source"], v["source"]


@pytest.mark.parametrize(("device", "gbs"), [("Tesla V100-SXM2-32GB", 150), ("NVIDIA A100-SXM4-80GB", 300),
                                             ("NVIDIA H100 80GB HBM3", 450), ("NVIDIA B200", 900),
                                             ("AMD Instinct MI300X", 448)])
def test_the_intra_node_roof_is_the_unidirectional_gpu_to_gpu_figure(device, gbs):
    link, why = intra_node(device)
    assert link.unidirectional_bytes_per_s == gbs * 1e9 and link.bidirectional_bytes_per_s == 2 * gbs * 1e9
    assert why


def test_pcie_roofs_are_gpus_toml_host_links_per_direction():
    found = 0
    for spec in load_specs():
        m = re.search(r"\(([\d.]+) GB/s per direction", spec.host_link or "")
        link = host_link(spec)
        if m is None:
            assert link is None
            continue
        found += 1
        assert link.unidirectional_bytes_per_s == float(m.group(1)) * 1e9
        assert link.name.startswith("PCIe ") and spec.name in link.source
    assert found >= 20
    pcie, why = intra_node("NVIDIA A100-PCIE-40GB")  # no NVLink in the table for a PCIe card: its host link
    assert pcie.name == "PCIe 4.0 x16" and "host link" in why


def test_a_device_outside_the_spec_table_has_no_link_roof_and_says_why():
    link, why = intra_node("Some Future GPU")
    assert link is None and "not in the spec table" in why
    assert "V100 SXM2" in table()


def test_roofline_devices_lists_each_gpus_links_with_both_directions_and_the_source():
    from conftest import cli

    out = cli("devices").stdout
    assert ("  NVLink 3, 12 link(s): 300 GB/s per direction, 600 GB/s both (NVIDIA A100 Tensor Core GPU datasheet"
            in out)
    assert "Infinity Fabric (xGMI) 4, 7 link(s): 448 GB/s per direction, 896 GB/s both" in out
