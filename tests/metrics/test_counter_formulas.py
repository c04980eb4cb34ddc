"""Metric formulas against values computed by hand."""

from __future__ import annotations

import math

import pytest

from roofline.metrics import derive, flops_from_counts, flops_per_instruction, tensor_flops_from_opcodes
from roofline.metrics.resolve import count, duration_s
from roofline.metrics.tensor import ops_paths, resolve_tensor


def test_flops_add_mul_two_fma():
    assert flops_from_counts(3, 5, 7, "fp32") == 3 + 5 + 14
    assert flops_from_counts(3, 5, 7, "fp64") == 3 + 5 + 14
    # current ncu: packed half2, so 2·hadd + 2·hmul + 4·hfma
    assert flops_from_counts(3, 5, 7, "fp16") == 6 + 10 + 28


@pytest.mark.parametrize(
    "op, flops",
    [
        ("HMMA.884.F32.F32.STEP0", 2 * 8 * 8 * 4),  # Volta: 512, the classic factor
        ("HMMA.1688.F32", 2 * 16 * 8 * 8),
        ("HMMA.16816.F32.BF16", 2 * 16 * 8 * 16),
        ("HMMA.1684.F32.TF32", 2 * 16 * 8 * 4),
        ("IMMA.16832.S8.S8.SAT", 2 * 16 * 8 * 32),
        ("IMMA.8816.S8.S8", 2 * 8 * 8 * 16),
        ("DMMA.884", 2 * 8 * 8 * 4),
        ("BMMA.168256.AND.POPC", 2 * 16 * 8 * 256),
        ("HGMMA.64x128x16.F32.BF16", 2 * 64 * 128 * 16 / 4),
    ],
)
def test_flops_per_tensor_instruction(op, flops):
    assert flops_per_instruction(op) == flops


def test_unknown_shape_is_unavailable_not_zero():
    res = tensor_flops_from_opcodes({"HMMA.999.F32": 10, "FFMA": 100})
    assert math.isnan(res.value) and "HMMA.999.F32" in res.source


def test_no_tensor_opcodes_is_zero():
    assert tensor_flops_from_opcodes({"FFMA": 100, "LDSM.16.M88.4": 3}).value == 0


def test_count_forms_in_order_of_preference():
    dur = duration_s({"gpu__time_duration.sum": 2000.0})  # 2 µs
    assert dur.value == pytest.approx(2e-6)
    raw = {"x__y.sum.per_cycle_elapsed": 3.0, "x__cycles_elapsed.avg": 1000.0, "x__y.sum.per_second": 1.0}
    r = count(raw, ["x__y"], dur)
    assert r.value == 3000 and "per_cycle_elapsed" in r.source
    raw2 = {"x__y.sum.per_second": 5e9}
    assert count(raw2, ["x__y"], dur).value == pytest.approx(1e4)
    raw3 = {"x__y.sum": 7.0, **raw}
    assert count(raw3, ["x__y"], dur, scale=32).value == 224


def test_volta_pipe_tensor_times_512_only_on_volta():
    dur = duration_s({"gpu__time_duration.sum": 1000.0})
    raw = {"sm__inst_executed_pipe_tensor.sum": 16.0}
    assert resolve_tensor(raw, None, 7, 0, dur)[0].value == 16 * 512
    res = resolve_tensor(raw, None, 8, 0, dur)[0]
    assert math.isnan(res.value) and "Volta" in res.source
    assert resolve_tensor({"sm__inst_executed_pipe_tensor.sum": 0.0}, None, 8, 0, dur)[0].value == 0


def test_ops_paths_prefer_aggregates_and_split_sparsity():
    raw = {
        "sm__ops_path_tensor_src_fp16.sum": 1.0,
        "sm__ops_path_tensor_src_fp8_sparsity_on.sum": 2.0,
        "sm__ops_path_tensor_src_fp8_sparsity_off.sum": 3.0,
        "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum": 1.0,
    }
    assert ops_paths(raw) == [
        "sm__ops_path_tensor_src_fp16",
        "sm__ops_path_tensor_src_fp8_sparsity_off",
        "sm__ops_path_tensor_src_fp8_sparsity_on",
    ]
    dur = duration_s({"gpu__time_duration.sum": 1.0})
    total, path = resolve_tensor(raw, None, 9, 0, dur)
    assert total.value == 6 and path == "src_fp8_sparsity_off"


def test_peaks_from_counters_at_the_profiled_clock():
    raw = {
        "gpu__time_duration.sum": 1e6,
        "device__attribute_compute_capability_major": 7.0,
        "device__attribute_compute_capability_minor": 0.0,
        "sm__cycles_elapsed.avg.per_second": 1.295e9,
        "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained": 2560.0,
        "dram__bytes.sum.peak_sustained": 1000.0,
        "dram__cycles_elapsed.avg.per_second": 0.877e9,
        "dram__bytes.sum": 5.0,
    }
    row = derive(raw)
    # V100 FP64 at 1.295 GHz: 2 × 2560 × 1.295e9 = 6.63 TFLOP/s (ncu_report_api.md §6)
    assert row["peak_flop_per_s_fp64"] == pytest.approx(6.6304e12)
    assert "profiled clock" in row["peak_flop_per_s_fp64_source"]
    assert row["peak_dram_bytes_per_s"] == pytest.approx(877e9)
    assert row["flop_fp64_source"].startswith("unavailable:")


def test_integrated_gpu_has_no_dram_roof():
    raw = {
        "gpu__time_duration.sum": 1e3,
        "device__attribute_compute_capability_major": 8.0,
        "device__attribute_compute_capability_minor": 7.0,
        "dram__bytes.sum": 100.0,
    }
    row = derive(raw)
    assert math.isnan(row["dram_bytes"]) and "integrated" in row["dram_bytes_source"]


@pytest.mark.parametrize(
    "op, kind",
    [("IMMA.16832.S8.S8.SAT", "imma_int8"), ("HMMA.1688.F32.TF32", "hmma_tf32"), ("HMMA.16816.F32.BF16", "hmma_bf16"),
     ("HMMA.1688.F32", "hmma_fp16"), ("DMMA.884", "dmma_fp64"), ("IMMA.8832.S4.S4", "imma_int4")],
)
def test_tensor_opcode_kinds(op, kind):
    from roofline.metrics.tensor import opcode_kind

    assert opcode_kind(op) == kind


def test_int8_tensor_work_is_never_held_against_the_fp16_peak():
    import roofline
    from conftest import shared

    k = roofline.read(shared("ncu/sm80_a100_cutlass-b2b-int8-gemm_full-nvtx.ncu-rep"))
    assert (k["tensor_path"] == "imma_int8").all()
    # the report has no int8 peak counter: the spec table's int8 figure (4096 ops/cycle/SM on A100),
    # at the profiled clock, fills it; never the fp16 one (2048)
    assert k["peak_flop_per_s_tensor_source"].str.contains("tensor_int8").all()
    assert k["peak_flop_per_s_tensor"].to_numpy() == pytest.approx((4096 * 108 * k["sm_clock_hz"]).to_numpy())


def test_spec_compute_peaks_are_rescaled_to_the_profiled_clock():
    import pandas as pd

    from roofline.hardware.attach import fill_spec_peaks
    from roofline.hardware.names import lookup
    from roofline.schema import conform_kernels

    k = conform_kernels(pd.DataFrame([{"device_name": "Tesla V100-PCIE-32GB", "sm_clock_hz": 1.233e9}]))
    out = fill_spec_peaks(k).iloc[0]
    spec = lookup("Tesla V100-PCIE-32GB")
    assert out["peak_flop_per_s_fp32"] == pytest.approx(128 * 80 * 1.233e9)  # V100: 128 FLOP/cycle/SM
    assert out["peak_flop_per_s_fp32"] == pytest.approx(spec.flop_per_s_at("fp32", 1.233e9))
    assert "the profiled SM clock 1233 MHz" in out["peak_flop_per_s_fp32_source"]
    assert out["peak_dram_bytes_per_s"] == spec.dram_bytes_per_s


def test_bandwidth_peak_from_pct_of_peak_when_no_peak_counter():
    dur = duration_s({"gpu__time_duration.sum": 1e6})  # 1 ms
    from roofline.metrics.memory import resolve_level

    raw = {
        "l1tex__lsu_writeback_active_mem_lg.sum": 1e6,  # × 128 B = 128 MB in 1 ms = 128 GB/s
        "l1tex__lsu_writeback_active_mem_lg.sum.pct_of_peak_sustained_elapsed": 2.0,
    }
    b, peak = resolve_level(raw, "l1", (8, 6), dur)
    assert b.value == 128e6
    assert peak.value == pytest.approx(128e9 / 0.02)


def test_nan_count_falls_back_to_the_next_form():
    dur = duration_s({"gpu__time_duration.sum": 1e3})
    raw = {"dram__bytes.sum": float("nan"), "dram__bytes_read.sum": 3.0, "dram__bytes_write.sum": 4.0}
    from roofline.metrics.memory import resolve_level

    assert resolve_level(raw, "dram", (8, 0), dur)[0].value == 7.0
