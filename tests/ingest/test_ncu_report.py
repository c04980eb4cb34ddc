"""Nsight Compute reports through the real ncu_report reader, checked against independent values."""

from __future__ import annotations

import math

import pytest

import roofline
from conftest import REPORTS, shared
from conftest import ncu_actions as _actions
from roofline.metrics.tensor import OPCODE_METRIC, tensor_flops_from_opcodes
from roofline.schema import kernel_columns

T4 = "ncu/sm75_t4_wmma-gemm-fp16_full-hier.ncu-rep"
A10G = "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"



def test_fixture_list_not_empty():
    shared("ncu")  # skips locally (fails in CI) without the shared fixtures
    assert len(REPORTS) >= 16


@pytest.mark.parametrize("name", REPORTS)
def test_every_report_ingests_one_row_per_launch(name):
    path = shared(f"ncu/{name}")
    kernels = roofline.read(path)
    actions = list(_actions(path))
    assert len(kernels) == len(actions) > 0
    assert list(kernels.columns[: len(kernel_columns())]) == kernel_columns()
    assert kernels["kernel_id"].tolist() == list(range(len(actions)))
    assert kernels["kernel_name"].notna().all()
    assert kernels["device_name"].notna().all()
    # durations are gpu__time_duration.sum exactly (ns -> s), or NaN where the replay failed
    for (_, row), a in zip(kernels.iterrows(), actions):
        m = a.metric_by_name("gpu__time_duration.sum") or a.metric_by_name("gpu__time_duration")
        expected = m.value() * 1e-9
        if math.isnan(expected):
            assert math.isnan(row["duration_s"]) and not row["replay_ok"]
        else:
            assert row["duration_s"] == pytest.approx(expected, rel=1e-12)
    # a missing quantity is NaN with a reason, never a silent 0
    for col in ("flop_fp32", "flop_tensor", "dram_bytes", "l2_bytes", "l1_bytes"):
        src = kernels[f"{col}_source"]
        missing = kernels[col].isna()
        assert src[missing].str.startswith("unavailable:").all()
        assert not src[~missing].str.startswith("unavailable").any()
    prov = kernels.attrs["roofline.provenance"]
    assert prov[0]["format"] == "ncu-rep" and prov[0]["reader"].startswith("ncu_report")


def test_t4_wmma_tensor_flops_are_2mnk_exactly():
    k = roofline.read(shared(T4))
    gemm = k[k["kernel_short_name"] == "wmma_gemm"].iloc[0]
    assert gemm["flop_tensor"] == 2 * 4096**3
    assert gemm["tensor_path"] == "src_fp16_bf16_tf32_dst_fp32"
    assert "sm__ops_path_tensor" in gemm["flop_tensor_source"]
    # the init kernels do no tensor work: an honest, counted zero
    assert (k.loc[k["kernel_short_name"] == "init_matrix_half", "flop_tensor"] == 0).all()


def test_t4_tensor_flops_agree_with_per_opcode_counts():
    """Independent route: HMMA.1688 instruction counts × 2·16·8·8 per warp instruction."""
    path = shared(T4)
    actions = list(_actions(path))
    m = actions[2].metric_by_name(OPCODE_METRIC)
    keys = m.correlation_ids()
    counts = {keys.value(i): m.value(i) for i in range(m.num_instances())}
    assert counts["HMMA.1688.F32"] == 67_108_864
    assert tensor_flops_from_opcodes(counts).value == 2 * 4096**3


def test_a10g_sgemm_variants_are_2n3_fp32_flops():
    k = roofline.read(shared(A10G))
    assert len(k) == 4
    for v in k["flop_fp32"]:
        assert v == pytest.approx(2 * 1024**3, rel=1e-3)
    assert (k["flop_fp64"] == 0).all() and (k["flop_tensor"] == 0).all()


def test_cutlass_int8_tensor_ops_from_imma_shapes_and_nvtx():
    k = roofline.read(shared("ncu/sm80_a100_cutlass-b2b-int8-gemm_full-nvtx.ncu-rep"))
    assert k["nvtx_range"].tolist() == ["Fused-GEMM", "Non-fused-GEMM", "Non-fused-GEMM"]
    # 110,592 IMMA.16832 warp instructions × 2·16·8·32
    assert k.loc[1, "flop_tensor"] == 110_592 * 8192
    assert "IMMA.16832" in k.loc[1, "flop_tensor_source"]
    assert k["kernel_name"].str.startswith("void cutlass::Kernel<").all()


def test_basic_set_flops_are_unavailable_with_the_option_that_collects_them():
    k = roofline.read(shared("ncu/sm80_a100_mistic-cub-154launches_basic.ncu-rep"))
    assert len(k) == 154
    assert k["flop_fp32"].isna().all()
    src = k.loc[0, "flop_fp32_source"]
    assert src.startswith("unavailable:") and "--set full" in src
    assert k.loc[0, "dram_bytes_source"].startswith("unavailable:")
    res = roofline.analyze(k)
    assert (res["bound"] == "unavailable").all()
    assert res["pct_of_roof"].isna().all()


def test_nan_kernel_is_kept_and_flagged():
    k = roofline.read(shared("ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep"))
    assert len(k) == 5
    fa = k[k["kernel_short_name"] == "flash_fwd_kernel"].iloc[0]
    assert not fa["replay_ok"]
    assert "replay incomplete" in fa["flags"]
    assert fa["duration_s_source"].startswith("unavailable: NaN in the report")
    assert k.loc[k["kernel_short_name"] != "flash_fwd_kernel", "replay_ok"].all()


def test_provenance_version_capture_time_and_command_line():
    k = roofline.read(shared(T4))
    prov = k.attrs["roofline.provenance"][0]
    assert prov["tool_version"] == "2025.1.1.0"
    assert prov["capture_time"].startswith("2026-03-09")
    assert "ncu --set full" in prov["command_line"]
    legacy = roofline.read(shared("ncu/sm61_gtx1070ti_twisty-curand_basic-legacy.nsight-cuprof-report"))
    assert legacy.attrs["roofline.provenance"][0]["capture_time"].startswith("2021-12-27")


def _rate(a, name):
    m = a.metric_by_name(name)
    return None if m is None else m.value()


@pytest.mark.parametrize("name", REPORTS)
def test_rates_agree_with_the_reports_own_rate_metrics(name):
    """Our bytes and FLOPs divided by the duration match ncu's own rate metrics within 0.5%."""
    path = shared(f"ncu/{name}")
    kernels = roofline.read(path)
    checked = 0
    for (_, row), a in zip(kernels.iterrows(), _actions(path)):
        if not row["replay_ok"] or not row["duration_s"] > 0:
            continue
        dur = row["duration_s"]
        pairs = [
            ("dram_bytes", "dram__bytes.sum.per_second", 1.0),
            ("l2_bytes", "derived__lts__lts2xbar_bytes.sum.per_second", 1.0),
            ("l1_bytes", "derived__l1tex__lsu_writeback_bytes_mem_lg.sum.per_second", 1.0),
        ]
        for col, metric, scale in pairs:
            own = _rate(a, metric)
            if own is None or math.isnan(row[col]) or own == 0 or "per_second" in row[f"{col}_source"]:
                continue  # absent, or our value came from this very rate
            assert row[col] / dur == pytest.approx(own * scale, rel=5e-3), (col, metric)
            checked += 1
        # ncu's own derived FMA metrics hold 2 × FMA per cycle; our FLOPs are add + mul + 2·fma
        clk = _rate(a, "smsp__cycles_elapsed.avg.per_second")
        for letter, col in (("f", "flop_fp32"), ("d", "flop_fp64")):
            base = "smsp__sass_thread_inst_executed_op_"
            x2 = _rate(a, f"derived__{base}{letter}fma_pred_on_x2")
            add = _rate(a, f"{base}{letter}add_pred_on.sum.per_cycle_elapsed")
            mul = _rate(a, f"{base}{letter}mul_pred_on.sum.per_cycle_elapsed")
            if None not in (x2, clk, add, mul) and row[col] > 1e6:
                expected_rate = (x2 + add + mul) * clk
                assert row[col] / dur == pytest.approx(expected_rate, rel=5e-3), col
                checked += 1
    if name.endswith("_full.ncu-rep") or "full-" in name:
        assert checked > 0


@pytest.mark.parametrize("name", ["sm75_rtx2070_numba-kernel_full.ncu-rep", "sm61_gtx1070ti_twisty-curand_basic-legacy.nsight-cuprof-report",
                                  "sm120_rtx5060ti_transpose_custom-metrics.ncu-rep"])
def test_metric_values_through_the_swig_functions_are_the_wrappers(name):
    """The reader's own value dispatch gives IMetric.value() for every metric of a launch (every value kind,
    NaN included), and the str/int/float type it gives."""
    import ncu_report

    from roofline.ingest.ncu import report

    value = report._value_of(ncu_report)
    for a in _actions(shared(f"ncu/{name}")):
        for n in a.metric_names():
            want, got = a.metric_by_name(n).value(), value(a, n)
            nan = isinstance(want, float) and math.isnan(want) and isinstance(got, float) and math.isnan(got)
            assert type(got) is type(want) and (got == want or nan), n


def test_the_command_line_search_finds_what_the_regex_finds():
    """Where no command line sits near the version (a GUI capture), the whole file is searched by the literal
    ``ncu`` first: the same first match as the regex over every window, or none."""
    from roofline.ingest.ncu import report

    cases = [b"/ncu ", b'x/ncu.exe" a', b"ncu /ncu ", b"\\ncu.exe  ", b"/ncu", b'ncuncu/ncu"  ', b"//ncu ", b"ncu", b"a\\ncux /ncu "]
    for data in cases:
        for start in range(len(data) + 1):
            for end in range(start, len(data) + 1):
                want, got = report._NCU_EXE_RE.search(data, start, end), report._find_exe(data, start, end)
                assert (want and want.span()) == (got and got.span()), (data, start, end)
    data = shared("ncu/sm80_a100_mistic-selfjoin-fp64_full.ncu-rep").read_bytes() + b"\0/usr/bin/ncu --set full ./a.out\0"
    assert report._command_line(data, 0) == "/usr/bin/ncu --set full ./a.out"


def test_the_kept_name_split_is_the_classification_and_stays_bounded():
    from roofline.ingest.ncu import report
    from roofline.metrics.derive import is_relevant
    from roofline.metrics.evidence import is_evidence

    report._WANTED.clear()
    for i in range(report._WANTED_MOST + 3):  # past the bound: cleared, then classified again
        names = ("gpu__time_duration.sum", "sm__warps_active.avg.pct_of_peak_sustained_active", f"other{i}",
                 "dram__bytes.sum")
        want = ([n for n in names if is_relevant(n)], [n for n in names if is_evidence(n)])
        assert report._wanted(names) == want and report._wanted(tuple(names)) == want
        assert len(report._WANTED) <= report._WANTED_MOST
