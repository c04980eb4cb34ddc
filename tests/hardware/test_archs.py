"""The architecture model and the SKU table agree; real device spellings resolve (issue 17)."""

from __future__ import annotations

import math

import pytest

from roofline.hardware.archs import COMPUTE_KEYS, arch_for, arch_rows, load_archs
from roofline.hardware.names import lookup, require, resolve
from roofline.hardware.specs import load_specs

NVIDIA_CCS = ["6.0", "6.1", "7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "10.3", "12.0"]
AMD_TARGETS = ["gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1102",
               "gfx1200", "gfx1201"]


@pytest.mark.parametrize("target", NVIDIA_CCS + AMD_TARGETS)
def test_every_architecture_the_issue_names_is_modelled_and_sourced(target):
    arch = arch_for(target)
    assert arch is not None and arch.dense
    for key, rate in list(arch.dense.items()) + list(arch.sparse.items()):
        assert key in COMPUTE_KEYS and rate.per_clk > 0 and len(rate.source) > 20, (target, key)
    for key, rate in arch.sparse.items():  # sparse figures are separate and 2x their dense figure
        if "not 2x" not in rate.source:  # unless the vendor says otherwise (Blackwell Ultra FP4)
            assert rate.per_clk == 2 * arch.dense[key].per_clk, (target, key)


def test_every_model_row_has_a_source():
    rows = arch_rows()
    assert len(rows) > 150 and all(r["source"] for r in rows)


@pytest.mark.parametrize(("gpu", "key", "sms", "rate", "ghz", "tflops"), [
    # the issue's anchors: rate x SMs x clock from the model, against the datasheet figure
    ("H100 SXM", "tensor_bf16", 132, 4096, 1.83, 989.4),
    ("A100 SXM4 80GB", "tensor_bf16", 108, 2048, 1.41, 311.9),
    ("MI300X", "tensor_fp16", 304, 2048, 2.1, 1307.4),
])
def test_issue_anchors_recomputed_from_the_model(gpu, key, sms, rate, ghz, tflops):
    spec = require(gpu)
    assert spec.sm_count == sms and spec.arch.dense[key].per_clk == rate
    assert spec.arch.dense[key].per_clk * spec.sm_count * ghz * 1e9 == pytest.approx(tflops * 1e12, rel=1e-3)
    assert spec.figures[key].flop_per_s == pytest.approx(tflops * 1e12, rel=1e-3)


def test_every_published_table_figure_uses_its_architectures_rate():
    """Every figure printed in gpus.toml is recomputable from the model: same per-SM rate (the clock check
    in test_specs bounds the clock). The one exception is a datasheet quirk the table documents."""
    checked = 0
    for spec in load_specs():
        arch = spec.arch
        assert arch is not None, spec.name
        for key, fig in spec.figures.items():
            if fig.derived and "datasheet prints" in fig.derived:
                continue  # L40S INT4 printed equal to INT8
            assert key in arch.dense, (spec.name, key)
            assert fig.flop_per_cycle_per_sm == arch.dense[key].per_clk, (spec.name, key)
            checked += 1
    assert checked > 500


@pytest.mark.parametrize(("gpu", "key", "tflops"), [
    # model-derived SKUs against the vendor's own printed figure (quoted in each entry's source)
    ("A40", "fp32", 37.4), ("A40", "tensor_tf32", 74.8), ("A40", "tensor_fp16", 149.7),
    ("RTX A6000", "fp32", 38.7), ("A30", "tensor_fp16", 165), ("A30", "fp64", 5.2), ("A2", "fp32", 4.5),
    ("L40", "fp32", 90.5), ("RTX 6000 Ada", "fp32", 91.1), ("RTX 5090", "tensor_fp16", 209.5),
    ("RTX 5090", "tensor_fp16_acc16", 419), ("RTX 2080 Ti", "tensor_fp16", 53.8), ("RTX 2080 Ti", "tensor_fp16_acc16", 107.6),
    ("Quadro RTX 6000", "tensor_fp16", 130.5), ("MI210", "fp64", 22.6), ("MI210", "tensor_fp16", 181),
    ("MI100", "tensor_fp32", 46.1), ("MI100", "tensor_bf16", 92.3), ("MI300A", "tensor_fp16", 980.6),
    ("MI355X", "tensor_fp16", 2516.6), ("MI60", "fp32", 14.7), ("RX 7900 XTX", "fp32", 61.4),
    ("RX 7900 XTX", "fp16", 122.8), ("RX 9070 XT", "fp32", 48.7), ("RTX PRO 6000 Blackwell", "fp32", 125),
])
def test_model_derived_figures_match_the_vendors_printed_ones(gpu, key, tflops):
    assert require(gpu).figures[key].tflops == pytest.approx(tflops, rel=0.012)


def test_sku_table_is_broad_and_every_entry_is_sourced():
    specs = load_specs()
    assert len(specs) >= 60
    names = {s.name for s in specs}
    for want in ["V100 SXM2", "B200", "GB200", "MI100", "MI355X", "T4", "A2", "A10", "A16", "A30", "A40", "L4", "L40",
                 "L40S", "RTX A4000", "RTX A5000", "RTX A6000", "RTX 6000 Ada", "RTX PRO 6000 Blackwell",
                 "RTX 2080 Ti", "RTX 3090", "RTX 4090", "RTX 5090"]:
        assert want in names, want
    for s in specs:
        assert s.source and s.dram_source and s.boost_clock_source and s.host_link, s.name
        assert s.memory_gb and s.sm_count > 0 and s.dram_bytes_per_s > 0, s.name
        assert all(f.tflops > 0 and (f.derived or s.source) for f in s.figures.values()), s.name


def test_variants_geforce_half_rate_fp32_accumulate_and_tu116_without_tensor_cores():
    assert arch_for("8.6", "geforce").dense["tensor_fp16"].per_clk * 2 == arch_for("8.6").dense["tensor_fp16"].per_clk
    assert "tensor_fp16" not in require("GTX 1660 SUPER").figures and "fp16" in require("GTX 1660 SUPER").figures
    assert "fp64" not in require("H800").figures and require("H800").figures["tensor_bf16"].tflops > 1000


@pytest.mark.parametrize(("name", "cc", "sms", "want"), [
    ("Tesla V100-DGXS-32GB", "7.0", 80, "V100 SXM2"),
    ("NVIDIA A100-PG509-200", "8.0", 108, "A100 SXM4 40GB"),
    ("AMD Instinct MI210", None, None, "MI210"),
    ("NVIDIA A40", "8.6", 84, "A40"),
    ("RTX A6000", None, None, "RTX A6000"),
    ("NVIDIA GeForce RTX 4060", "8.9", 24, "RTX 4060"),
    ("NVIDIA GeForce GTX 1070 Ti", "6.1", 19, "GTX 1070 Ti"),
    ("NVIDIA GeForce RTX 5060 Ti", "12.0", 36, "RTX 5060 Ti"),
    ("AMD Instinct MI300X VF", "9.4", 304, "MI300X"),
    ("AMD Instinct MI250X/MI250", "9.0", 110, "MI250X GCD"),  # by CU count
    ("MI300X_A1", "gfx942", 304, "MI300X"),  # rocprof-compute sysinfo gpu_model
    ("MI200", "gfx90a", 104, "MI210"),  # rocprof-compute sysinfo: 104 CUs = MI210 = MI250 GCD (same roofs)
    ("NVIDIA A100-SXM4-80GB", "8.0", 108, "A100 SXM4 80GB"),  # nsys TARGET_INFO_GPU
    ("AMD Instinct MI350X", "gfx950", 256, "MI350X"),
])
def test_real_spellings_resolve(name, cc, sms, want):
    res = resolve(name, cc, sms)
    assert res.spec is not None and res.spec.name.startswith(want), res.explain()


def test_mig_slice_scales_sms_and_bandwidth_and_says_so():
    res = resolve("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "8.0", 42)
    s, full = res.spec, require("A100 SXM4 40GB")
    assert s.name == "A100 SXM4 40GB MIG 3g.20gb" and s.sm_count == 42
    assert s.figures["tensor_bf16"].flop_per_s == pytest.approx(full.figures["tensor_bf16"].flop_per_s * 42 / 108)
    assert s.dram_bytes_per_s == pytest.approx(full.dram_bytes_per_s / 2)
    assert "MIG" in res.explain() and "20/40 GB" in res.explain()


def test_unknown_name_with_cc_and_sms_uses_the_architecture_model_without_dram():
    res = resolve("Some Future GPU", "8.9", 20, 2.0e9)
    s = res.spec
    assert s is not None and "arch model sm_89" in s.name and math.isnan(s.dram_bytes_per_s)
    assert s.figures["fp32"].flop_per_s == pytest.approx(256 * 20 * 2.0e9)
    assert "unavailable" in s.dram_source


def test_unresolvable_name_says_why():
    res = resolve("Mystery Accelerator")
    assert res.spec is None and "not in the spec table" in res.reason


def test_ambiguous_name_gives_an_upper_bound_and_names_the_candidates():
    res = resolve("NVIDIA H100", "9.0", 132)
    assert "H100 SXM" in res.spec.name and "H100 NVL" in res.spec.name
    assert res.spec.dram_bytes_per_s == require("H100 NVL").dram_bytes_per_s  # the higher one
    assert res.spec.figures["tensor_bf16"].flop_per_s == require("H100 SXM").figures["tensor_bf16"].flop_per_s


def test_device_map_overrides_the_name():
    res = resolve("NVIDIA Prototype", device_map={"NVIDIA Prototype": "H100 SXM"})
    assert res.spec.name == "H100 SXM" and "--device-map" in res.explain()


def test_all_archs_loaded_once():
    assert len({a.id for a in load_archs().values()}) >= 18


def test_another_gpus_roofs_keep_their_own_sm_count():
    """--peaks "H100 SXM" on an A100 profile: the A100's 108 SMs must not shrink the H100's roofs."""
    res = resolve("H100 SXM", "8.0", 108)
    assert res.spec.sm_count == 132 and "not used" in res.explain()
    assert resolve("H100 SXM", "9.0", 114).spec.sm_count == 114  # same CC, fewer SMs: a cut-down part, scaled


@pytest.mark.parametrize(("gpu", "key", "sms", "rate", "ghz", "tflops"), [
    # Blackwell Ultra (issue 17): NVIDIA publishes per-GPU figures and 160 SMs, no clock and no per-SM rate;
    # the model's rates put every GB300 figure at one clock (1.907 GHz) and every HGX B300 tensor figure at 1.717
    ("GB300", "tensor_fp4", 160, 49152, 1.9073, 15000), ("GB300", "tensor_bf16", 160, 8192, 1.9073, 2500),
    ("GB300", "tensor_fp8", 160, 16384, 1.9073, 5000), ("GB300", "tensor_tf32", 160, 4096, 1.9073, 1250),
    ("B300", "tensor_bf16", 160, 8192, 1.7166, 2250), ("B300", "tensor_fp8", 160, 16384, 1.7166, 4500),
    ("B300", "tensor_tf32", 160, 4096, 1.7166, 1125), ("B300", "fp32", 160, 256, 1.8311, 75),
])
def test_blackwell_ultra_figures_recomputed_from_the_model(gpu, key, sms, rate, ghz, tflops):
    spec = require(gpu)
    assert spec.sm_count == sms and spec.arch.dense[key].per_clk == rate and spec.compute_capability == "10.3"
    assert rate * sms * ghz * 1e9 == pytest.approx(tflops * 1e12, rel=1e-3)
    assert spec.figures[key].tflops == pytest.approx(tflops, rel=1e-9)


def test_blackwell_ultra_unpublished_figures_are_left_out_and_names_resolve():
    b300, gb300 = require("B300"), require("GB300")
    # B300's FP4 (105 or 108 PFLOPS per HGX, fitting no per-SM rate), FP64, INT8: not in the table, not modelled
    assert not {"tensor_fp4", "fp64", "tensor_fp64", "tensor_int8"} & set(b300.figures)
    assert not {"fp32", "fp64", "tensor_int8"} & set(gb300.figures)
    assert b300.dram_bytes_per_s == gb300.dram_bytes_per_s == 8e12 and 288 in b300.memory_gb
    assert lookup("NVIDIA B300 SXM6 AC").name == "B300" and lookup("NVIDIA GB300").name == "GB300"
    assert lookup("NVIDIA B200").name == "B200" and lookup("NVIDIA GB200").name == "GB200"
