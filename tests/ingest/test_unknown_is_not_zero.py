"""Issue 31's smaller items: unknown is never 0 (XLA custom-calls), 0 measured where the evidence says so (per-
opcode counts), no "inf" in a table, full kernel names from rocpd's string table, a rocprof v1 JSON is not a
CPU-only trace, a details-page CSV's DRAM roof from its own DRAM throughput."""

from __future__ import annotations

import shutil
import sqlite3

import pandas as pd
import pytest

import roofline
from conftest import OWN, kernel_row, shared
from roofline.metrics import derive


def test_an_xla_custom_call_of_unknown_cost_is_unavailable_not_0_flop():
    """XLA's cost analysis gives an opaque custom-call (Transformer Engine's fused attention on gfx950) 0 FLOPs:
    that is "not known", not "no arithmetic". A library GEMM is modelled from its shapes instead."""
    from roofline.ingest.xla.cost import library_gemm, unknown_custom_call

    te = ('%custom-call.12 = (bf16[4,2048,32,128]{3,2,1,0}, f32[4,32,2048,1]{3,2,1,0}) custom-call(bf16[4,2048,32,128]'
          '{3,2,1,0} %p0, bf16[4,2048,8,128]{3,2,1,0} %p1, bf16[4,2048,8,128]{3,2,1,0} %p2), '
          'custom_call_target="te_fused_attn_forward_ffi", api_version=API_VERSION_TYPED_FFI')
    why = unknown_custom_call(te)
    assert why is not None and "te_fused_attn_forward_ffi" in why and library_gemm(te) is None
    assert unknown_custom_call("%fusion.3 = f32[1024]{0} fusion(f32[1024]{0} %p), kind=kLoop") is None


def test_a_precision_without_counters_is_0_when_the_per_opcode_counts_show_none_of_its_instructions():
    """A full set before ncu 2025.1 has no FP16 counters; the InstructionStats per-opcode counts are complete: a
    kernel with FFMA and no HADD/HMUL/HFMA did 0 FP16 FLOPs (measured), not "FP16 unavailable" (a false lower
    bound); a kernel with HFMA2 keeps FP16 unavailable."""
    raw = {"gpu__time_duration.sum": 1000.0, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 100.0,
           "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 0.0,
           "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 0.0}
    row = derive(raw, {"FFMA": 4.0, "LDG.E.64": 2.0, "EXIT": 1.0}, (8, 0))
    assert row["flop_fp32"] == 200 and row["flop_fp16"] == 0 and row["flop_fp64"] == 0
    assert "no HADD/HMUL/HFMA instruction executed" in row["flop_fp16_source"]
    assert pd.isna(derive(raw, {"FFMA": 4.0, "HFMA2.MMA": 2.0}, (8, 0))["flop_fp16"])
    assert pd.isna(derive(raw, None, (8, 0))["flop_fp16"])  # no per-opcode counts: no evidence either way


def test_an_intensity_over_0_bytes_is_not_printed_as_inf():
    from roofline.report.table import format_table

    k = pd.DataFrame([kernel_row(l1_bytes=0.0)])
    r = roofline.analyze(k)
    assert r["intensity_l1_flop_per_byte"].iloc[0] == float("inf")  # the number stays what it is
    text = format_table(r)
    assert "inf" not in text.replace("information", "")
    assert " 0 B " in text and "I 0 B: no bytes moved at that level" in text


def test_rocpd_kernels_cut_to_a_bare_name_take_their_full_name_from_the_string_table(tmp_path):
    """rocprofiler-sdk formats ck_tile::kentry<…>(…) as "kentry": the dispatch's region name in rocpd_string is
    the full one. Made from the rocpd fixture: the vecCopy symbol's display name cut to "vecCopy"."""
    db = tmp_path / "cut.db"
    shutil.copyfile(OWN / "rocprof" / "rocpd_mi210.db", db)
    con = sqlite3.connect(db)
    sym = next(n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
               if n.startswith("rocpd_info_kernel_symbol_"))
    con.execute(f'UPDATE "{sym}" SET display_name = \'vecCopy\' WHERE display_name LIKE \'vecCopy(%\'')
    con.commit()
    con.close()
    k = roofline.read(db)
    copies = k[k["kernel_short_name"] == "vecCopy"]
    assert len(copies) == 3 and (copies["kernel_name"] == "vecCopy(double*, double*, double*, int, int)").all()


def test_a_legacy_rocprof_hip_trace_is_recognised_not_called_cpu_only(tmp_path):
    """rocprof (v1)'s results.json (tblextr.py's layout: an empty first event, process labels, string times, no
    categories) holds GPU kernels and copies: exit 1 saying what it is and what to use, never "CPU-only"; a
    trace that truly has no GPU work exits 0 (the gloo fixture)."""
    p = tmp_path / "results.json"
    p.write_text('{ "traceEvents":[{}\n'
                 ',{"args":{"name":"CPU HIP API"},"ph":"M","pid":2,"name":"process_name","sort_index":0}\n'
                 ',{"args":{"name":"GPU0"},"ph":"M","pid":6,"name":"process_name","sort_index":1}\n'
                 ',{"ph":"X","name":"hipLaunchKernel","pid":"2","tid":"7","ts":"100","dur":"5",\n'
                 '  "args":{\n    "args":"kernel(vecCopy)"\n  }\n}\n'
                 ',{"ph":"X","name":"vecCopy(double*, double*, double*, int, int)","pid":"6","tid":"0",'
                 '"ts":"110","dur":"20",\n  "args":{\n    "BeginNs":"110000"\n  }\n}\n'
                 '],\n"otherData": {\n    "Device": "gfx90a"\n  }\n}')
    from roofline.errors import UnsupportedFormatError
    from roofline.ingest.registry import sniff

    assert sniff(p) == "rocprof-v1"
    with pytest.raises(UnsupportedFormatError, match=r"rocprof \(v1\).*rocprofv3"):
        roofline.read(p)
    from conftest import cli as _cli

    res = _cli("analyze", str(p))
    assert res.returncode == 1 and "CPU-only" not in res.stderr and "rocprof (v1)" in res.stderr
    cpu = _cli("analyze", str(shared("traces/torch_cpu-only_gloo-300rank_rank34.pt.trace.json.gz")))
    assert cpu.returncode == 0


def test_a_details_page_csv_takes_its_dram_roof_from_its_own_dram_throughput():
    """The T4 details-page CSV names no device and has no DRAM .peak_sustained: CC 7.5 with 40 SMs is a T4 or an
    RTX 2070 SUPER, whose 448 GB/s the table's upper bound gave. Its Speed Of Light section holds the achieved
    DRAM bytes/s and "DRAM Throughput" %: 196.46 GB/s ÷ 61.84% = 317.7 GB/s, the T4's 320 GB/s class."""
    k = roofline.read(shared("ncu/sm75_t4_numba-copy-blocked_details-page.csv"))
    first = k.iloc[0]
    assert first["peak_dram_bytes_per_s"] == pytest.approx(196_456_177_859.63 / 0.6184, rel=2e-3)
    assert first["peak_dram_bytes_per_s"] == pytest.approx(317.7e9, rel=1e-3)
    assert "DRAM Throughput" not in first["peak_dram_bytes_per_s_source"]  # named by its metric
    assert "gpu__dram_throughput" in first["peak_dram_bytes_per_s_source"]
