"""ncu CSV exports, checked against the CSV's own numbers read independently with csv."""

from __future__ import annotations

import csv

import pytest

import roofline
from conftest import CSVS, OWN, read_or_typed_error, shared

V100 = "ncu/sm70_v100_cutlass-cublas-gemm_roofline-metrics.csv"
A100 = "ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv"
DETAILS = "ncu/sm75_t4_numba-copy-blocked_details-page.csv"


def _values(path):
    """{(id, metric): float} straight from the file, without roofline."""
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    out = {}
    for rec in csv.DictReader(lines[start:]):
        if rec["Metric Name"]:
            try:
                out[(int(rec["ID"]), rec["Metric Name"])] = float(rec["Metric Value"].replace(",", ""))
            except ValueError:
                pass
    return out


def test_csv_list_not_empty():
    shared("ncu")  # skips locally (fails in CI) without the shared fixtures
    assert len(CSVS) >= 3


@pytest.mark.parametrize("name", CSVS)
def test_every_csv_ingests(name):
    k = roofline.read(shared(f"ncu/{name}"))
    assert len(k) > 0 and (k["format"] == "ncu-csv").all()
    assert k["duration_s"].notna().all()


def test_v100_csv_volta_tensor_is_pipe_tensor_times_512_and_time_from_cycles():
    path = shared(V100)
    vals = _values(path)
    k = roofline.read(path)
    assert len(k) == 11
    assert (k["device_name"] == "Tesla V100-PCIE-32GB").all()
    for _, row in k.iterrows():
        i = row["kernel_id"]
        pipe = vals.get((i, "sm__inst_executed_pipe_tensor.sum"), vals.get((i, "smsp__inst_executed_pipe_tensor.sum")))
        assert row["flop_tensor"] == pipe * 512
        assert row["dram_bytes"] == vals[(i, "dram__bytes.sum")]
        assert row["l2_bytes"] == vals[(i, "lts__t_bytes.sum")]
        assert "lts__t_bytes" in row["l2_bytes_source"]
        assert row["l1_bytes"] == vals[(i, "l1tex__t_bytes.sum")]
    assert "cycles_elapsed" in k.loc[0, "duration_s_source"]
    # no peak counters in a --metrics CSV: the spec table fills them, labelled
    assert k.loc[0, "peak_dram_bytes_per_s_source"].startswith("spec:")


def test_a100_printfp_csv_counts_and_no_volta_factor_on_ampere():
    path = shared(A100)
    vals = _values(path)
    k = roofline.read(path)
    gemm = k[k["kernel_short_name"] == "gemm_v0"].iloc[0]
    i = gemm["kernel_id"]
    assert gemm["flop_fp32"] == 2 * vals[(i, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")]
    assert gemm["flop_fp16"] == 4 * vals[(i, "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum")]
    assert gemm["duration_s"] == pytest.approx(
        vals[(i, "smsp__cycles_elapsed.avg")] / vals[(i, "smsp__cycles_elapsed.avg.per_second")]
    )
    # 104,857,600 pipe-tensor instructions on sm_80: x512 would be wrong, so unavailable
    assert gemm["flop_tensor_source"].startswith("unavailable:") and "Volta" in gemm["flop_tensor_source"]


def test_details_page_labels_map_to_metrics():
    k = roofline.read(shared(DETAILS))
    row = k.iloc[0]
    assert row["duration_s"] == pytest.approx(21_058_944e-9)
    assert row["sm_clock_hz"] == pytest.approx(584_998_877.44)
    # DRAM bytes from the Memory Workload Analysis throughput (byte/s) × duration
    assert row["dram_bytes"] == pytest.approx(196_456_177_859.63 * 21_058_944e-9, rel=1e-9)
    assert row["flop_fp32_source"].startswith("unavailable:")
    assert (row["grid_x"], row["block_x"]) == (1024, 256)


def test_own_tiny_csv_units_and_device_from_program_output():
    k = roofline.read(OWN / "tiny_metrics.csv")
    row = k.iloc[0]
    assert row["duration_s"] == pytest.approx(10.5e-6)
    assert row["dram_bytes"] == pytest.approx(12.58e6)
    assert row["flop_fp32"] == 2 * 1_048_576
    assert row["flop_tensor"] == 0
    assert row["device_name"] == "Tesla V100-SXM2-16GB"
    assert row["kernel_short_name"] == "axpy"
    res = roofline.analyze(k).iloc[0]
    assert res["bound"] == "memory-bound"
    assert res["intensity_dram_flop_per_byte"] == pytest.approx(2 * 1_048_576 / 12.58e6)


def test_long_metrics_frame_is_lossless():
    path = shared(V100)
    m = roofline.read_metrics(path)
    assert len(m) == len(_values(path))
    assert set(m.columns) == {"source_file", "range_id", "kernel_id", "metric", "instance", "value", "value_text", "unit"}


@pytest.mark.parametrize(
    "unit, factor, native",
    [("Gbyte/second", 1e9, "byte/s"), ("Kbyte/s", 1e3, "byte/s"), ("Mbyte", 1e6, "byte"),
     ("cycle/usecond", 1e6, "hz"), ("Mcycle", 1e6, "cycle"), ("usecond", 1e3, "ns"), ("inst", 1.0, "inst")],
)
def test_csv_unit_conversion(unit, factor, native):
    from roofline.ingest.ncu.csv_export import convert_unit

    assert convert_unit(unit) == (factor, native)


def test_utf16_and_bom_csv_exports_read_like_utf8(tmp_path):
    text = (OWN / "tiny_metrics.csv").read_text()
    for name, data in (("u16.csv", text.encode("utf-16")), ("bom.csv", text.encode("utf-8-sig"))):
        p = tmp_path / name
        p.write_bytes(data)
        k = roofline.read(p)
        assert k.iloc[0]["flop_fp32"] == 2 * 1_048_576


def test_sm_clock_from_the_smsp_counter_when_sm_is_not_collected():
    """This A100 CSV collected smsp__cycles_elapsed.avg.per_second only: SMSPs run on the SM clock (765 MHz,
    MANIFEST), so spec peaks are scaled to it: fp32 = 128 FLOP/cycle/SM x 108 SMs x the clock."""
    k = roofline.read(shared("ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv"))
    assert k["sm_clock_hz"].round(-3).eq(765_000_000).all()
    a = roofline.analyze(k, peaks="A100 PCIe 40GB")
    assert a["peak_flop_per_s_fp32"].to_numpy() == pytest.approx(128 * 108 * k["sm_clock_hz"].to_numpy(), rel=1e-12)
    assert a["peak_flop_per_s_fp32_source"].str.contains("profiled SM clock 765 MHz").all()


def test_any_damaged_cell_is_read_or_a_typed_error(tmp_path_factory):
    """Property: a real CSV export with any cells replaced (text, huge, infinite, empty) or cut short reads,
    or fails with a RooflineError; it never crashes, and what reads can be analysed."""
    import io

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    shared("ncu")  # skips locally (fails in CI) without the shared fixtures: the strategy needs tables
    sources = [shared(f"ncu/{name}") for name in CSVS]
    tables = [list(csv.reader(open(p, encoding="utf-8"))) for p in sources]
    cell = st.sampled_from(["", "n/a", "-1", "1e400", "nan", "abc", "1,2,3", '"', "0", "(1, 2)", "(a, b, c)",
                            "999999999999999999999999", "9.0", "x.y", "inf"])
    folder = tmp_path_factory.mktemp("fuzz")

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
    @given(which=st.integers(0, len(tables) - 1), edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 50),
                                                                           cell), min_size=1, max_size=6),
           cut=st.one_of(st.none(), st.integers(1, 40)))
    def check(which, edits, cut):
        rows = [list(r) for r in tables[which]]
        for r, c, v in edits:
            row = rows[r % len(rows)]
            if row:
                row[c % len(row)] = v
        if cut is not None:
            rows = rows[:cut]
        buf = io.StringIO()
        csv.writer(buf, quoting=csv.QUOTE_ALL).writerows(rows)
        p = folder / "damaged.csv"
        p.write_text(buf.getvalue(), encoding="utf-8")
        read_or_typed_error(p)

    check()


def test_infinite_and_huge_values_are_unavailable_not_numbers(tmp_path):
    """An export whose DRAM bytes read 1e400 (inf), whose clock is inf and whose grid is beyond int64: the
    bytes and the clock are unavailable (not inf), the grid is missing, and the spec roofs do not use the clock."""
    src = shared("ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv")
    rows = list(csv.reader(open(src, encoding="utf-8")))
    h = rows[0]
    for r in rows[1:]:
        if r[h.index("Metric Name")] == "dram__bytes.sum":
            r[h.index("Metric Value")] = "1e400"
        if r[h.index("Metric Name")] == "smsp__cycles_elapsed.avg.per_second":
            r[h.index("Metric Value")] = "inf"
        r[h.index("Grid Size")] = "(999999999999999999999999, 1, 1)"
    p = tmp_path / "inf.csv"
    with open(p, "w", encoding="utf-8", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    k = roofline.read(p)
    assert k["dram_bytes"].isna().all() and k["dram_bytes_source"].str.startswith("unavailable").all()
    assert k["sm_clock_hz"].isna().all() and k["grid_x"].isna().all() and (k["grid_y"] == 1).all()
    a = roofline.analyze(k, peaks="A100 PCIe 40GB")
    assert (a["peak_flop_per_s_fp32"] == 19.5e12).all()  # as published: no usable profiled clock


@pytest.mark.parametrize("body", [
    ['"ID","Kernel Name","Metric Value"', '"0","void k<int, 2>(float*)","1,024"'],  # every field quoted: split
    ['"0","a","b",', '"1","c","d"'],  # empty trailing field (details pages)
    ['"0","say ""hi""","x"'],  # an escaped quote
    ['"0","a" ,"b"'],  # text between a quote and the separator
    ['"0","multi', 'line"'],  # a quote left open across lines
    ['"0","a\0b"'],  # a NUL
    ['"'],  # a lone quote
])
def test_rows_are_what_csv_reader_gives_whatever_the_lines_hold(body):
    """The quoted-fields shortcut gives csv.reader's rows where it applies and steps aside (None) elsewhere."""
    import io

    from roofline.ingest.ncu.csv_export import _quoted_rows

    fast = _quoted_rows(body)
    want = list(csv.reader(io.StringIO("\n".join(body))))
    assert fast is None or fast == want
    assert (fast is not None) == (body[0].startswith('"ID"'))


@pytest.mark.parametrize("text", ["a\r\nb\rc\nd", "a\r\r\nb", "\n\r", "x\u2028y\x85z\x0cw", ""])
def test_lines_break_at_crlf_cr_and_lf_only(text):
    import re

    from roofline.ingest.ncu.csv_export import _lines

    assert _lines(text) == re.split(r"\r\n|\r|\n", text)
