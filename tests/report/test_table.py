"""The terminal table: top rows with a footer, numbered notes with the reasons, a legend, file/device
columns, kernel names told apart; JSON and NDJSON records for scripts."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from conftest import analysed, kernel_row
from conftest import cli as _cli
from roofline import samples
from roofline.report.table import display_names, format_table, split_note


def _many(n: int) -> pd.DataFrame:
    return analysed([kernel_row(kernel_id=i, kernel_name=f"k{i}", kernel_short_name=f"k{i}", duration_s=1e-3 * (n - i))
                     for i in range(n)])


def test_top_rows_and_a_footer_saying_how_many_were_left_out():
    frame = _many(45)
    text = format_table(frame, limit=20)
    assert "20 of 45 rows, longest first; --top N or --all for more" in text
    body = text.split("\nshown: 20 of 45")[0].splitlines()
    assert len(body) == 1 + 20 and body[1].split()[1] == "k0"  # header + 20 rows, in frame order
    assert "of 45 rows" not in format_table(frame)  # everything shown: no footer
    big = format_table(_many(3), limit=2, total=20_540)
    assert "2 of 20,540 rows" in big


def test_notes_carry_the_reasons_and_the_legend_the_markers():
    rows = [kernel_row(kernel_id=0, l2_bytes=np.nan, l2_bytes_source="unavailable: no counter; collect with ncu --set full"),
            kernel_row(kernel_id=1, flop_fp32=1e12, duration_s=1e-3)]  # 1 PFLOP/s: above the 20 TFLOP/s fp32 roof
    frame = analysed(rows)
    assert bool(frame.loc[frame["kernel_id"] == 1, "over_roof"].item())
    text = format_table(frame)
    assert "notes:" in text and "L2 level absent: no L2 bytes (unavailable: no counter; collect with ncu --set full)" in text
    # no evidence (a counters peak, FLOPs of no known count): the note says what to check, not "wrong peak"
    assert "above the compute roof: no recorded evidence explains it" in text and "wrong peak" not in text
    # an absent level is a dash, explained in the legend (its reason is in the notes), not an unknown number
    assert "! above a roof (cause in the notes)" in text and "- no bytes at that level (the notes say why)" in text
    table = text.split("notes:")[0]
    assert " ! " in table or table.rstrip().endswith("!") or "!  " in table


def test_a_note_splits_only_where_a_new_reason_starts():
    note = ("no FLOPs: unavailable: a GPU xplane holds no FLOPs or bytes; install the extra roofline[xla]; "
            "DRAM level absent: no DRAM bytes (unavailable: x; y); under 20% of every roof: latency- or occupancy-limited")
    assert split_note(note) == [
        "no FLOPs: unavailable: a GPU xplane holds no FLOPs or bytes; install the extra roofline[xla]",
        "DRAM level absent: no DRAM bytes (unavailable: x; y)",
        "under 20% of every roof: latency- or occupancy-limited",
    ]


def test_file_and_device_columns_only_when_inputs_differ():
    one = analysed([kernel_row(kernel_id=i, source_file="/a/x.ncu-rep") for i in range(2)])
    header = format_table(one).splitlines()[0].split()
    assert "file" not in header and "device" not in header
    two = analysed([kernel_row(kernel_id=0, source_file="/a/x.ncu-rep", device_name="A"),
                    kernel_row(kernel_id=0, source_file="/b/x.ncu-rep", device_name="B")])
    text = format_table(two)
    assert text.splitlines()[0].split()[:4] == ["id", "kernel", "file", "device"]
    # kernel ids restart in every file: the table's ids carry the file's number, so each is unique
    assert [ln.split()[0] for ln in text.splitlines()[1:3]] == ["1:0", "2:0"]
    assert "a/x.ncu-rep" in text and "b/x.ncu-rep" in text  # same file name: the folder tells them apart


def test_template_instantiations_are_told_apart():
    long_args = ", ".join(f"(int){i}" for i in range(30))
    frame = pd.DataFrame({
        "kernel_short_name": ["gemm", "gemm", "copy", "big", "big"],
        "kernel_name": ["void gemm<(int)64, (int)8>(float *)", "void gemm<(int)128, (int)8>(float *)", "copy(float *)",
                        f"void big<{long_args}>(int)", f"void big<{long_args}, (int)99>(int)"],
    })
    names, hashed = display_names(frame, max_name=40)
    assert names[:3] == ["gemm<64,8>", "gemm<128,8>", "copy"]
    assert names[3].startswith("big#") and names[4].startswith("big#") and names[3] != names[4] and hashed
    rows = analysed([kernel_row(kernel_id=i, kernel_short_name="gemm", kernel_name=n)
                     for i, n in enumerate(frame["kernel_name"][:2])])
    assert "gemm<64,8>" in format_table(rows) and "gemm<128,8>" in format_table(rows)
    # --by kernel: one row per full name, abbreviated (casts, return type and parameters dropped), or in full
    from roofline.analysis.aggregate import aggregate

    text = format_table(aggregate(rows, by="kernel"), by="kernel")
    assert "gemm<64, 8>" in text and "gemm<128, 8>" in text and "(float *)" not in text
    text = format_table(aggregate(rows, by="kernel"), by="kernel", full_names=True)
    assert "void gemm<(int)64, (int)8>(float *)" in text and "void gemm<(int)128, (int)8>(float *)" in text


def test_cli_table_default_top_all_and_streamed_records():
    trace = samples.path("h100-bert-small")  # 61 rows, 60 with a roofline point
    p = _cli("analyze", trace)
    assert p.returncode == 0, p.stderr
    assert "20 of 60 rows, longest first; --top N or --all for more" in p.stdout and "legend:" in p.stdout
    assert "notes:" in p.stdout and "a PyTorch trace has no cache counters" in p.stdout
    everything = _cli("analyze", trace, "--all")  # every row, the one without a point too
    assert "of 61 rows" not in everything.stdout and "aten::_local_scalar_dense" in everything.stdout.split("legend:")[0]
    full = _cli("analyze", trace, "--by", "kernel", "--top", "2")  # 10 names, 15 with their shapes
    assert "2 of 15 rows" in full.stdout
    nd = _cli("analyze", trace, "--format", "ndjson")
    lines = nd.stdout.splitlines()
    assert nd.returncode == 0 and len(lines) == 61 and all(json.loads(ln)["format"] == "torch-trace" for ln in lines)
    arr = json.loads(_cli("analyze", trace, "--format", "json").stdout)["rows"]
    assert [r["kernel_id"] for r in arr] == [json.loads(ln)["kernel_id"] for ln in lines]


def test_integer_work_is_counted_in_operations_not_flops():
    """An int8 tensor-core GEMM (IMMA) does integer operations: the table prints OP and OP/s for its rows,
    FLOP for the floating-point ones beside it (the A100 CUTLASS int8 report: two IMMA launches, one mixed)."""
    from conftest import shared
    from roofline.analysis.analyze import analyze
    from roofline.ingest.ncu.report import read

    frame = analyze(read(shared("ncu/sm80_a100_cutlass-b2b-int8-gemm_full-nvtx.ncu-rep")))
    lines = format_table(frame).splitlines()
    imma = [ln for ln in lines if "tensor:imma_int8" in ln]
    assert len(imma) == 2 and all(" MOP " in ln and "TOP/s" in ln for ln in imma)
    mixed = next(ln for ln in lines if " mixed " in ln)
    assert "FLOP" in mixed and " OP" not in mixed


def test_name_filter_searches_short_full_and_mangled_names():
    """A trace's op row names the op; the GEMM kernel it ran is only in mangled_name (issue 32)."""
    from roofline.analysis.select import select

    frame = pd.DataFrame({"kernel_name": ["aten::mm", "aten::add", "void k<int>(float *)"],
                          "kernel_short_name": ["aten::mm", "aten::add", "k"],
                          "mangled_name": ["sm90_xmma_gemm_bf16bf16_bf16f32", "vectorized_elementwise_kernel", None],
                          "duration_s": [3.0, 2.0, 1.0]})
    assert select(frame, name="xmma_gemm")["kernel_name"].tolist() == ["aten::mm"]
    assert select(frame, name="^k$")["kernel_name"].tolist() == ["void k<int>(float *)"]  # the short name
    assert select(frame, name="ADD")["kernel_name"].tolist() == ["aten::add"]


def test_by_kernel_groups_by_name_and_shapes_with_short_unique_left_aligned_names():
    from roofline.analysis.aggregate import aggregate
    from roofline.report.table import abbreviate, unique_labels

    trace = roofline_trace()
    by = aggregate(trace, by="kernel")
    addmm = by[by["kernel"] == "aten::addmm"]
    # TraceLens-style: one row per (name, input shapes); the launches add up to the op's launches
    assert len(addmm) == 4 and addmm["kernel_count"].sum() == (trace["kernel_name"] == "aten::addmm").sum()
    assert addmm["kernel_config"].str.startswith("[[").all() and addmm["kernel_config"].is_unique
    name = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
            "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, "
            "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
            "at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)")
    short = abbreviate(name, 60)
    assert short == "vectorized_elementwise_kernel<4, BinaryFunctor<…>, array<…>>" and len(short) <= 60
    assert abbreviate("aten::addmm") == "aten::addmm"  # an op name stays as it is
    assert unique_labels(["k", "k", "j"], ["k<1>", "k<2>", "j"])[2] == "j"
    a, b, _ = unique_labels(["k", "k", "j"], ["k<1>", "k<2>", "j"])
    assert a != b and a.startswith("k#") and b.startswith("k#")
    text = format_table(by, by="kernel")
    lines = text.splitlines()
    assert lines[0].startswith("kernel ") and "shapes / launch" in lines[0]
    start = lines[0].index("shapes / launch")
    body = [ln for ln in lines[1:] if ln.strip() and not ln.startswith(("notes", "legend", " [", "shown"))]
    assert all(not ln[0].isspace() for ln in body)  # names left-aligned: no row starts blank
    assert all(ln[start] == "[" for ln in body)  # the shapes column starts where its header does


def roofline_trace():
    import roofline

    return roofline.analyze(samples.path("h100-bert-small"))
