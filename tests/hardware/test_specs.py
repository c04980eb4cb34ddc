"""The spec table and peaks files: every figure sourced and consistent; bad names and files fail clearly."""

from __future__ import annotations

import dataclasses

import pytest

from roofline.hardware.names import lookup, require
from roofline.hardware.peaks import Peak, Peaks, PeaksFileError
from roofline.hardware.specs import UnknownDeviceError, known_devices, load_specs

REQUIRED = ["V100 SXM2", "V100 PCIe", "T4", "A10", "A10G", "A100 SXM4 40GB", "A100 PCIe 40GB", "A100 SXM4 80GB",
            "A100 PCIe 80GB", "L4", "L40S", "RTX 3080", "RTX 3090", "RTX 4090", "H100 SXM", "H100 PCIe", "H200",
            "GH200", "B200", "MI250X", "MI300X"]


def test_every_gpu_the_issue_names_is_in_the_table():
    assert set(REQUIRED) <= set(known_devices())


def test_datasheet_anchors_recomputed_from_sm_count_rate_and_clock():
    h100, a100 = require("H100 SXM"), require("A100 SXM4 80GB")
    assert h100.sm_count * 4096 * 1.83e9 == pytest.approx(989e12, rel=1e-3)
    assert h100.figures["tensor_bf16"].flop_per_s == pytest.approx(132 * 4096 * 1.83e9, rel=1e-3)
    assert a100.sm_count * 2048 * 1.41e9 == pytest.approx(312e12, rel=1e-3)
    assert a100.figures["tensor_bf16"].flop_per_s == pytest.approx(108 * 2048 * 1.41e9, rel=1e-3)


@pytest.mark.parametrize("spec", load_specs(), ids=lambda s: s.name)
def test_every_figure_has_a_source_and_a_plausible_implied_clock(spec):
    assert spec.source and spec.dram_source and spec.boost_clock_source
    assert spec.dram_bytes_per_s > 0 and spec.sm_count > 0
    for key, fig in spec.figures.items():
        assert spec.figure_source(key)
        # the clock a figure implies (TFLOP/s ÷ SMs ÷ per-SM rate) must be a real clock of the part:
        # catches a wrong SM count, per-SM rate or a sparse figure stored as dense
        assert 0.85 <= spec.implied_clock_hz(key) / spec.boost_clock_hz <= 1.005, key


@pytest.mark.parametrize(
    "reported, name",
    [("NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"), ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
     ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"), ("NVIDIA H100 80GB HBM3", "H100 SXM"), ("NVIDIA H100 PCIe", "H100 PCIe"),
     ("NVIDIA GH200 480GB", "GH200"), ("NVIDIA H200", "H200"), ("Tesla T4", "T4"), ("NVIDIA A10G", "A10G"),
     ("NVIDIA A10", "A10"), ("Tesla V100-SXM2-32GB", "V100 SXM2"), ("NVIDIA GeForce RTX 4090", "RTX 4090"),
     # issue 17 added these four to the table (they matched nothing before)
     ("NVIDIA H100 NVL", "H100 NVL"), ("NVIDIA H800", "H800"), ("NVIDIA GeForce RTX 3080 Ti", "RTX 3080 Ti"),
     ("NVIDIA L40", "L40"), ("Tesla V100-DGXS-32GB", "V100 SXM2"), ("NVIDIA A100-PG509-200", "A100 SXM4 40GB"),
     ("AMD Instinct MI210", "MI210"), ("NVIDIA A40", "A40"), ("RTX A6000", "RTX A6000"),
     ("NVIDIA GeForce RTX 4060", "RTX 4060"), ("NVIDIA GeForce GTX 1660 SUPER", "GTX 1660 SUPER"),
     ("AMD Instinct MI300X VF", "MI300X"), ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
     # a laptop part is another chip; ROCm's MI250X/MI250 name fits two GCDs: only the CU count tells
     ("NVIDIA GeForce RTX 4090 Laptop GPU", None), ("AMD Instinct MI250X/MI250", None),
     ("NVIDIA GeForce RTX 4060 Ti", "RTX 4060 Ti"), ("AMD Radeon Graphics", None)],
)
def test_device_names_match_the_right_entry_or_none(reported, name):
    spec = lookup(reported)
    assert (spec.name if spec else None) == name


def test_unknown_gpu_is_an_error_listing_the_known_ones():
    with pytest.raises(UnknownDeviceError) as info:
        Peaks.from_spec("H900")
    assert "H900" in str(info.value) and "H100 SXM" in str(info.value) and "MI300X" in str(info.value)


def test_peaks_are_immutable_and_validated():
    p = Peaks.from_spec("H100 SXM")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.device = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.compute["fp32"] = p.compute["fp64"]  # type: ignore[index]
    with pytest.raises(ValueError):
        Peak(-1.0, "user", "x", "boost")
    with pytest.raises(ValueError):
        Peak(1.0, "user", "x", "turbo")
    assert p.compute["tensor_bf16"].clock_basis == "as published"
    assert p.compute["tensor_bf16"].clock_hz == pytest.approx(1.83e9, rel=1e-3)
    assert p.ridge("fp32", "dram") == pytest.approx(67e12 / 3.35e12)
    assert "l2" not in p.bandwidth  # no vendor publishes L2 bandwidth
    at = Peaks.from_spec("H100 SXM", clock_hz=1.5e9)
    assert at.compute["fp32"].value == pytest.approx(132 * 256 * 1.5e9)
    assert at.compute["fp32"].clock_basis == "as profiled"


def test_peaks_file_round_trip(tmp_path):
    f = tmp_path / "peaks.toml"
    f.write_text(
        'device = "lab H100"\nbase = "H100 SXM"\nsource = "measured"\ndetail = "ERT"\n'
        "[compute]\nfp32 = 5.9e13\ntensor_bf16 = { value = 7.1e14, detail = \"cuBLAS\", clock_mhz = 1755 }\n"
        "[bandwidth]\ndram = 3.0e12\nl2 = 9.5e12\n"
    )
    p = Peaks.from_toml(f)
    assert p.device == "lab H100"
    assert p.compute["fp32"].value == 5.9e13 and p.compute["fp32"].source == "measured"
    assert p.compute["tensor_bf16"].detail == "cuBLAS" and p.compute["tensor_bf16"].clock_hz == 1.755e9
    assert p.compute["fp64"].source == "spec"  # from the base entry
    assert p.bandwidth["l2"].value == 9.5e12


@pytest.mark.parametrize(
    "text, line, field",
    [
        ("[compute]\nfp32 = 5e13\nfp33 = 1e13\n", 3, "compute.fp33"),
        ("[compute]\nfp32 = -5e13\n", 2, "compute.fp32"),
        ('[bandwidth]\ndram = "fast"\n', 2, "bandwidth.dram"),
        ("device = 'x'\ncolour = 'red'\n[compute]\nfp32 = 1e13\n", 2, "colour"),
        ("[compute]\nfp32 = 1e13\nclock_basis = 'turbo'\n", 3, "compute.clock_basis"),
        ("[compute\nfp32 = 1e13\n", 1, None),
        ("clock_basis = 'turbo'\n[compute]\nfp32 = 1e13\n", 1, "clock_basis"),
    ],
)
def test_malformed_peaks_file_names_the_line_and_the_field(tmp_path, text, line, field):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(PeaksFileError) as info:
        Peaks.from_toml(f)
    assert str(f) in str(info.value)
    assert info.value.line == line and f"line {line}" in str(info.value)
    if field:
        assert info.value.field == field and field in str(info.value)


def test_a_peak_neither_counters_nor_spec_table_give_says_why():
    """B200 has no published non-tensor FP16 figure: the peak stays NaN and its source says so and what to
    do; published figures are filled beside it."""
    from roofline.hardware.attach import fill_spec_peaks
    from roofline.schema import kernels_from_columns

    k = fill_spec_peaks(kernels_from_columns({"device_name": "NVIDIA B200", "duration_s": 1e-3}, 2))
    assert k["peak_flop_per_s_fp16"].isna().all()
    src = k["peak_flop_per_s_fp16_source"]
    assert src.str.startswith("unavailable: the spec table has no fp16").all() and src.str.contains("--peaks").all()
    assert (k["peak_flop_per_s_fp32"] == 75e12).all() and k["peak_flop_per_s_fp32_source"].str.startswith("spec:").all()


def test_tensor_paths_map_to_their_spec_figures():
    from roofline.hardware.specs import tensor_key

    assert tensor_key("mfma_fp32") == ("tensor_fp32", False)  # AMD MFMA FP32 (rocprof-compute)
    assert tensor_key("sm__ops_path_tensor_src_fp16_dst_fp32") == ("tensor_fp16", False)  # fp16 in, fp32 accumulate
    assert tensor_key("sm__ops_path_tensor_src_fp16_dst_fp16") == ("tensor_fp16_acc16", False)
    assert tensor_key("sm__ops_path_tensor_src_tf32_dst_fp32") == ("tensor_tf32", False)
    assert tensor_key("mfma_fp64") == ("tensor_fp64", False)


def test_small_frame_device_groups_match_the_pandas_path(monkeypatch):
    """The row-by-row grouping used for small frames gives the same groups, keys and order as pandas'."""
    import numpy as np
    import pandas as pd

    from roofline.hardware import attach as specs

    frame = pd.DataFrame({
        "device_name": pd.array(["NVIDIA H100 80GB HBM3", None, "NVIDIA H100 80GB HBM3", "Tesla V100", None,
                                 "NVIDIA H100 80GB HBM3"], dtype="string"),
        "compute_capability": pd.array(["9.0", None, "9.0", "7.0", None, "9.0"], dtype="string"),
        "sm_count": pd.array([132, None, 132, 80, None, 114], dtype="Int64"),
        "sm_boost_clock_hz": [1.98e9, np.nan, 1.98e9, 1.53e9, np.nan, 1.98e9],
    })
    small = specs._device_groups(frame)
    monkeypatch.setattr(specs, "_SMALL_FRAME", -1)
    big = specs._device_groups(frame)
    assert [k for k, _ in small] == [k for k, _ in big] == [
        ("NVIDIA H100 80GB HBM3", "9.0", 132, 1.98e9), (None, None, None, None), ("Tesla V100", "7.0", 80, 1.53e9),
        ("NVIDIA H100 80GB HBM3", "9.0", 114, 1.98e9)]
    for (_, a), (_, b) in zip(small, big):
        assert a.tolist() == b.tolist()
    # a frame without the optional key columns: one group, every key None, on both paths
    only_name = frame[["device_name"]]
    assert [k for k, _ in specs._device_groups(only_name)] == [
        ("NVIDIA H100 80GB HBM3", None, None, None), (None, None, None, None), ("Tesla V100", None, None, None)]
    monkeypatch.setattr(specs, "_SMALL_FRAME", 256)
    assert [k for k, _ in specs._device_groups(only_name)] == [
        ("NVIDIA H100 80GB HBM3", None, None, None), (None, None, None, None), ("Tesla V100", None, None, None)]
