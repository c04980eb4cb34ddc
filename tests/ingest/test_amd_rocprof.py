"""AMD inputs: rocprof-compute workload folders and rocprofv3 JSON.

Every number is checked against a value recomputed here, independently of the reader, from the
raw files (pmc_perf.csv read with the csv module, roofline.csv, timestamps.csv) with the definitions
written out in ../shared/fixtures/rocprof/MANIFEST.md.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
from pathlib import Path

import pytest

from conftest import OWN, shared

MI200 = "rocprof/rocprof-compute_vcopy_MI200"
MI300X = "rocprof/rocprof-compute_vcopy_MI300X_A1"
V3_JSON = "rocprof/rocprofv3_mi350x_908_results.json.gz"
HAND_JSON = OWN / "rocprof" / "counters_gfx942.rocprofv3.json"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _x(row: dict[str, str], name: str) -> float:
    """X_sum as the MANIFEST defines it: the sum of the per-channel columns X[0], X[1], ... (else the column)."""
    if name.endswith("_sum"):
        chans = [v for k, v in row.items() if re.fullmatch(re.escape(name[:-4]) + r"\[\d+\]", k)]
        if chans:
            return sum(float(v) for v in chans)
    return float(row[name])


def _expected_bytes(row: dict[str, str], arch: str) -> dict[str, float]:
    x = lambda n: _x(row, n)
    if arch == "gfx90a":
        hbm = (32 * x("TCC_EA_RDREQ_32B_sum") + 64 * (x("TCC_EA_RDREQ_sum") - x("TCC_EA_RDREQ_32B_sum"))
               + 64 * x("TCC_EA_WRREQ_64B_sum") + 32 * (x("TCC_EA_WRREQ_sum") - x("TCC_EA_WRREQ_64B_sum")))
    else:
        hbm = (128 * x("TCC_BUBBLE_sum") + 32 * x("TCC_EA0_RDREQ_32B_sum")
               + 64 * (x("TCC_EA0_RDREQ_sum") - x("TCC_BUBBLE_sum") - x("TCC_EA0_RDREQ_32B_sum"))
               + 32 * (x("TCC_EA0_WRREQ_sum") - x("TCC_EA0_WRREQ_64B_sum")) + 64 * x("TCC_EA0_WRREQ_64B_sum"))
    l2 = 64 * (x("TCP_TCC_READ_REQ_sum") + x("TCP_TCC_WRITE_REQ_sum") + x("TCP_TCC_ATOMIC_WITH_RET_REQ_sum")
               + x("TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum"))
    return {"dram_bytes": hbm, "l2_bytes": l2, "l1_bytes": 64 * x("TCP_TOTAL_CACHE_ACCESSES_sum")}


@pytest.mark.parametrize("rel,arch", [(MI200, "gfx90a"), (MI300X, "gfx942")])
def test_workload_one_row_per_dispatch_and_bytes_per_level_match_the_definitions(rel, arch):
    import roofline

    folder = shared(rel)
    frame = roofline.read(folder)
    rows = _rows(folder / "pmc_perf.csv")
    assert len(frame) == len(rows) == 3
    assert set(frame["format"]) == {"rocprof-compute"} and set(frame["compute_capability"]) == {arch}
    assert list(frame["kernel_short_name"]) == ["vecCopy"] * 3
    for level in ("dram_bytes", "l2_bytes", "l1_bytes"):
        want = sum(_expected_bytes(r, arch)[level] for r in rows)
        got = frame[level].sum()
        assert got == pytest.approx(want, rel=0.005), level
        assert frame[f"{level}_source"].str.contains("rocprof-compute").all()
    assert frame["l2_bytes_source"].str.contains("64 B lines").all()
    # vcopy moves 1M doubles in and out: 16 MiB at HBM (the independent physical check)
    assert frame["dram_bytes"].iloc[0] == pytest.approx(2 * 8 * 1048576, rel=0.01)
    # no FLOPs in a copy kernel: counted, and zero (not unavailable)
    assert (frame[["flop_fp64", "flop_fp32", "flop_fp16"]] == 0).all().all()
    assert frame["grid_x"].tolist() == [1048576 // 256] * 3 and frame["block_x"].tolist() == [256] * 3


def test_durations_equal_the_timestamps():
    import roofline

    folder = shared(MI200)
    frame = roofline.read(folder)
    ts = _rows(folder / "timestamps.csv")
    want = [(int(r["End_Timestamp"]) - int(r["Start_Timestamp"])) * 1e-9 for r in ts]
    assert frame["duration_s"].tolist() == pytest.approx(want, rel=1e-12)
    assert frame["duration_s"].iloc[0] == pytest.approx(20480e-9)


def test_rounded_timestamps_give_no_duration_not_zero():
    """The MI300X fixture writes timestamps as 8.1097E+14: End − Start = 0 is no duration."""
    import roofline

    frame = roofline.read(shared(MI300X))
    assert frame["duration_s"].isna().all()
    assert frame["duration_s_source"].str.startswith("unavailable:").all()
    assert frame["duration_s_source"].str.contains("scientific notation").all()


def test_measured_roofs_equal_roofline_csv():
    import roofline

    folder = shared(MI200)
    frame = roofline.read(folder)
    bench = _rows(folder / "roofline.csv")[0]  # device 0, rocprof-compute's default
    g = 1e9
    pairs = {"peak_dram_bytes_per_s": "HBMBw", "peak_l2_bytes_per_s": "L2Bw", "peak_l1_bytes_per_s": "L1Bw",
             "peak_lds_bytes_per_s": "LDSBw", "peak_flop_per_s_fp64": "FP64Flops",
             "peak_flop_per_s_fp32": "FP32Flops", "peak_flop_per_s_tensor": "MFMAF16Flops"}
    for col, name in pairs.items():
        assert frame[col].iloc[0] == pytest.approx(float(bench[name]) * g, rel=1e-9), col
        src = frame[f"{col}_source"].iloc[0]
        assert src.startswith("measured: roofline.csv device 0 " + name), src
    assert "low 1388.38 – high 1389.48" in frame["peak_dram_bytes_per_s_source"].iloc[0]


def test_measured_roofs_api_reads_every_column_with_its_spread():
    from roofline.ingest.amd.rocprof_compute import measured_roofs

    path = shared(MI200) / "roofline.csv"
    roofs = measured_roofs(path, device=1)
    row = _rows(path)[1]
    assert roofs["peak_flop_per_s_tensor:mfma_int8"][0] == pytest.approx(float(row["MFMAI8Ops"]) * 1e9)
    value, lo, hi, name = roofs["peak_dram_bytes_per_s"]
    assert (lo, hi) == pytest.approx((float(row["HBMBwLow"]) * 1e9, float(row["hbmBwHigh"]) * 1e9))
    assert roofs["peak_flop_per_s_tensor:mfma_int8"][1] == pytest.approx(float(row["MFMAFI8OpsLow"]) * 1e9)


def test_architecture_model_from_sysinfo():
    """MI300X without roofline.csv: roofs = CUs × per-CU rate × max_sclk, rates as in gpus.toml's MI300X."""
    import roofline
    from roofline.hardware.names import require

    frame = roofline.read(shared(MI300X))
    spec = require("MI300X")
    cus, clk = 304, 2100e6
    assert frame["peak_flop_per_s_fp64"].iloc[0] == pytest.approx(
        cus * clk * spec.figures["fp64"].flop_per_cycle_per_sm)
    assert frame["peak_flop_per_s_tensor"].iloc[0] == pytest.approx(
        cus * clk * spec.figures["tensor_fp16"].flop_per_cycle_per_sm)
    assert frame["peak_flop_per_s_tensor"].iloc[0] == pytest.approx(1307.4e12, rel=1e-3)  # data sheet
    assert frame["peak_dram_bytes_per_s"].iloc[0] == pytest.approx(5324.8e9)
    assert frame["peak_l1_bytes_per_s"].iloc[0] == pytest.approx(128 * cus * clk)
    assert frame["peak_l2_bytes_per_s"].iloc[0] == pytest.approx(128 * 128 * clk)
    assert frame["peak_flop_per_s_fp64_source"].str.startswith("model:").all()


def test_arch_rates_agree_with_the_spec_table():
    from roofline.hardware.names import require
    from roofline.ingest.amd.arch import RATES

    for fam, gpu in (("CDNA2", "MI250X"), ("CDNA3", "MI300X")):
        spec = require(gpu)
        for key, ours in (("fp64", "fp64"), ("fp32", "fp32"), ("tensor_fp64", "mfma_fp64"),
                          ("tensor_fp16", "mfma_fp16"), ("tensor_bf16", "mfma_bf16"), ("tensor_int8", "mfma_int8")):
            assert RATES[fam][ours] == spec.figures[key].flop_per_cycle_per_sm, (gpu, key)


def test_line_size_of_the_newer_release():
    from roofline.ingest.amd import rocprof_compute

    folder = shared(MI300X)
    new = rocprof_compute.read(folder, definitions="3.7")
    old = rocprof_compute.read(folder)
    assert (new["l1_bytes"] == 2 * old["l1_bytes"]).all() and (new["l2_bytes"] == 2 * old["l2_bytes"]).all()
    assert (new["dram_bytes"] == old["dram_bytes"]).all()
    assert new["l1_bytes_source"].str.contains("≥3.7, 128 B lines").all()
    mi200 = rocprof_compute.read(shared(MI200), definitions="3.7")  # gfx90a kept its 64 B lines
    assert mi200["l1_bytes_source"].str.contains("64 B lines").all()


def test_registry_takes_a_workload_folder_as_one_input(tmp_path):
    import shutil

    from roofline.ingest.registry import expand, sniff

    root = tmp_path / "runs"
    shutil.copytree(shared(MI200), root / "a" / "MI200")
    shutil.copytree(shared(MI300X), root / "MI300X")
    assert sniff(root / "MI300X") == "rocprof-compute"
    assert sniff(root / "MI300X" / "pmc_perf.csv") == "rocprof-compute"
    assert expand([root]) == sorted([root / "a" / "MI200", root / "MI300X"])
    assert expand([root / "MI300X"]) == [root / "MI300X"]


def test_pmc_perf_without_sysinfo_is_a_typed_error(tmp_path):
    import shutil

    import roofline
    from roofline.errors import RooflineError

    lone = tmp_path / "pmc_perf.csv"
    shutil.copyfile(shared(MI200) / "pmc_perf.csv", lone)
    with pytest.raises(RooflineError, match="sysinfo.csv"):
        roofline.read(lone)


def test_rocprofv3_json_dispatches_names_agents_durations():
    import roofline

    path = shared(V3_JSON)
    frame = roofline.read(path)
    assert len(frame) == 43915
    assert frame["kernel_name"].notna().all() and (frame["kernel_name"].str.len() > 0).all()
    assert set(frame["device_name"]) == {"MI350X"} and set(frame["compute_capability"]) == {"gfx950"}
    assert set(frame["sm_count"]) == {256} and set(frame["agent_id"]) == {2}
    # independent: the durations straight from the JSON
    raw = json.loads(gzip.decompress(path.read_bytes()))["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"]
    want = sorted((d["end_timestamp"] - d["start_timestamp"]) * 1e-9 for d in raw)
    assert sorted(frame["duration_s"]) == pytest.approx(want, rel=1e-12)
    assert frame["duration_s"].sum() == pytest.approx(sum(want), rel=1e-12)
    assert frame["flop_fp32_source"].str.startswith("unavailable:").all() and frame["flop_fp32"].isna().all()


def test_rocprofv3_counters_go_through_the_rocprof_compute_definitions():
    import roofline

    frame = roofline.read(HAND_JSON)
    assert frame["kernel_short_name"].tolist() == ["__amd_rocclr_fillBufferAligned", "gemm"]
    gemm = frame.iloc[1]
    assert gemm["flop_fp32"] == 64 * (100 + 0 + 2 * (600 + 400) + 50)
    assert gemm["flop_tensor"] == 512 * 2000 and gemm["tensor_path"] == "mfma_bf16"
    assert gemm["l2_bytes"] == 64 * (3000 + 1000) and gemm["l1_bytes"] == 64 * 8000
    assert math.isnan(gemm["dram_bytes"]) and gemm["dram_bytes_source"].startswith("unavailable:")
    assert gemm["duration_s"] == pytest.approx(10000e-9) and gemm["grid_x"] == 256 and gemm["grid_y"] == 4
    fill = frame.iloc[0]
    assert math.isnan(fill["flop_fp32"]) and "no counter_collection record" in fill["flop_fp32_source"]
    assert gemm["peak_flop_per_s_tensor"] == pytest.approx(304 * 2100e6 * 2048)


def test_analyze_and_report_end_to_end(tmp_path):
    from click.testing import CliRunner

    from roofline.cli import cli

    runner = CliRunner()
    args = [str(shared(MI200)), str(shared(MI300X)), str(HAND_JSON)]
    res = runner.invoke(cli, ["analyze", *args])
    assert res.exit_code == 0, res.output
    assert "vecCopy" in res.output and "gemm" in res.output
    res = runner.invoke(cli, ["report", *args, "-o", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out" / "roofline.png").stat().st_size > 0 and (tmp_path / "out" / "report.html").exists()


def test_batch_takes_workload_folders_beside_other_inputs(tmp_path):
    from roofline.batch import open_dataset, run_batch

    summary = run_batch([shared(MI200), HAND_JSON], tmp_path / "ds", workers=1)
    assert summary.ok == 2 and summary.failed == 0, summary
    runs = open_dataset(tmp_path / "ds", "runs")
    assert sorted(runs["kernels"]) == [2, 3]
    roof = open_dataset(tmp_path / "ds", "roofline")
    assert set(roof["format"]) == {"rocprof-compute", "rocprofv3"}


def test_peaks_option_selects_measured_or_model():
    import roofline
    from roofline.ingest.amd.rocprof_compute import peaks_from

    folder = shared(MI200)
    kernels = roofline.read(folder)
    measured = roofline.analyze(kernels, peaks=peaks_from(folder / "roofline.csv"))
    model = roofline.analyze(kernels, peaks=peaks_from(folder / "sysinfo.csv"))
    bench = _rows(folder / "roofline.csv")[0]
    assert measured["peak_dram_bytes_per_s"].iloc[0] == pytest.approx(float(bench["HBMBw"]) * 1e9)
    assert measured["peak_dram_bytes_per_s_source"].str.startswith("measured:").all()
    assert model["peak_dram_bytes_per_s"].iloc[0] == pytest.approx(1638.4e9)  # sysinfo hbm_bw
    # vcopy at HBM: the same bytes and time against two roofs, in their ratio
    ratio = measured["pct_of_roof"].iloc[0] / model["pct_of_roof"].iloc[0]
    assert ratio == pytest.approx(1638.4 / float(bench["HBMBw"]), rel=1e-6)


V3CSV = OWN / "rocprof" / "v3csv"


def test_rocprofv3_csv_set_equals_the_json_of_the_same_run():
    """The hand-made CSV set holds the same two dispatches and counters as the hand-made JSON."""
    import roofline

    csv_rows = roofline.read(V3CSV / "4242_kernel_trace.csv")
    json_rows = roofline.read(HAND_JSON)
    assert set(csv_rows["format"]) == {"rocprofv3-csv"}
    for col in ("kernel_name", "duration_s", "flop_fp32", "flop_tensor", "tensor_path", "l2_bytes", "l1_bytes",
                "dram_bytes", "grid_x", "grid_y", "block_x", "device_name", "sm_count", "dispatch_id",
                "peak_flop_per_s_tensor", "peak_l1_bytes_per_s"):
        assert csv_rows[col].astype(str).tolist() == json_rows[col].astype(str).tolist(), col
    assert csv_rows["flop_fp32"].iloc[1] == 64 * (100 + 2 * 1000 + 50)
    prov = csv_rows.attrs["roofline.provenance"][0]
    assert prov["memory_copies"] == 1 and prov["counters"] == "4242_counter_collection.csv"


def test_rocprofv3_csv_companions_are_not_inputs_and_counters_alone_are():
    import roofline
    from roofline.ingest.registry import expand, sniff

    assert expand([V3CSV]) == [V3CSV / "4242_kernel_trace.csv"]
    assert sniff(V3CSV / "4242_counter_collection.csv") == "rocprofv3-csv"
    alone = roofline.read(V3CSV / "4242_counter_collection.csv")
    assert alone["kernel_name"].tolist() == ["gemm(float*, float*, float*)"]
    assert alone["l1_bytes"].iloc[0] == 64 * 8000 and alone["duration_s"].iloc[0] == pytest.approx(1e-5)


def test_workload_long_metrics_frame_keeps_every_counter():
    import roofline

    folder = shared(MI300X)
    long = roofline.read_metrics(folder)
    rows = _rows(folder / "pmc_perf.csv")
    assert len(long) == len(rows) * len(rows[0])
    inst = long["instance"].astype(object).fillna("")
    pick = ((long["kernel_id"] == 1) & (long["metric"] == "TCC_EA0_RDREQ")).to_numpy(bool) & (inst == "5").to_numpy()
    one = long[pick]
    assert one["value"].tolist() == [float(rows[1]["TCC_EA0_RDREQ[5]"])]
    summed = long[((long["kernel_id"] == 0) & (long["metric"] == "TCC_HIT_sum")).to_numpy(bool)]["value"].tolist()
    assert summed == [float(rows[0]["TCC_HIT_sum"])]


def test_damaged_amd_inputs_are_typed_errors_naming_the_file(tmp_path):
    import shutil

    import roofline
    from roofline.errors import RooflineError

    empty = tmp_path / "w"
    empty.mkdir()
    shutil.copyfile(shared(MI200) / "sysinfo.csv", empty / "sysinfo.csv")
    (empty / "pmc_perf.csv").write_bytes(b"")
    truncated = tmp_path / "cut.json.gz"
    truncated.write_bytes(gzip.compress(HAND_JSON.read_bytes())[:200])
    shape = tmp_path / "shape.json"
    shape.write_text('{"rocprofiler-sdk-tool": {"agents": []}}')
    for bad, named in ((empty, empty / "pmc_perf.csv"), (truncated, truncated), (shape, shape)):
        with pytest.raises(RooflineError) as err:
            roofline.read(bad)
        assert str(named) in str(err.value)


def test_gzipped_pmc_perf_and_a_sysinfo_without_hbm_bw(tmp_path):
    """rocprof-compute's own test workloads store pmc_perf.csv.gz, and newer sysinfo.csv has no hbm_bw
    (max_mclk × 32 B × num_hbm_channels instead, which equals hbm_bw where a file has both)."""
    import shutil

    import roofline

    src = shared(MI300X)
    folder = tmp_path / "MI300X_A1"
    folder.mkdir()
    (folder / "pmc_perf.csv.gz").write_bytes(gzip.compress((src / "pmc_perf.csv").read_bytes()))
    shutil.copyfile(src / "timestamps.csv", folder / "timestamps.csv")
    info = _rows(src / "sysinfo.csv")[0]
    del info["hbm_bw"]
    with (folder / "sysinfo.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(info))
        w.writeheader()
        w.writerow(info)
    new, old = roofline.read(folder), roofline.read(src)
    assert new["dram_bytes"].tolist() == old["dram_bytes"].tolist() and len(new) == 3
    assert new["peak_dram_bytes_per_s"].iloc[0] == pytest.approx(5324.8e9)  # 1300 MHz × 32 B × 128
    assert "128 HBM channels" in new["peak_dram_bytes_per_s_source"].iloc[0]


def test_per_pass_results_files_merge_like_pmc_perf(tmp_path):
    """A workload with per-pass long files (results_pmc_perf_<n>.csv, no merged pmc_perf.csv), made here
    from the MI200 pmc_perf.csv: two passes, GRBM_GUI_ACTIVE in both (the first pass's value is kept)."""
    import shutil

    import roofline

    src = shared(MI200)
    rows = _rows(src / "pmc_perf.csv")
    ident = ["Dispatch_ID", "Kernel_Name", "GPU_ID", "Grid_Size", "Workgroup_Size", "Start_Timestamp",
             "End_Timestamp"]
    counters = [c for c in rows[0] if c not in ident and (c.startswith(("SQ_", "TCP_", "TCC_")))]
    half = len(counters) // 2
    folder = tmp_path / "MI200"
    folder.mkdir()
    for n, names in enumerate((counters[:half] + ["GRBM_GUI_ACTIVE"], counters[half:] + ["GRBM_GUI_ACTIVE"])):
        with (folder / f"results_pmc_perf_{n}.csv").open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(ident + ["Counter_Name", "Counter_Value"])
            for r in rows:
                for c in names:
                    value = float(r[c]) + (1000 if (n and c == "GRBM_GUI_ACTIVE") else 0)
                    w.writerow([r[k] for k in ident] + [c, value])
    shutil.copyfile(src / "sysinfo.csv", folder / "sysinfo.csv")
    merged, direct = roofline.read(folder), roofline.read(src)
    for col in ("duration_s", "dram_bytes", "l2_bytes", "l1_bytes", "flop_fp64", "kernel_name", "grid_x"):
        assert merged[col].tolist() == direct[col].tolist(), col
    long = roofline.read_metrics(folder)
    grbm = long[(long["metric"] == "GRBM_GUI_ACTIVE").to_numpy(bool)]["value"].tolist()
    assert grbm == [float(r["GRBM_GUI_ACTIVE"]) for r in rows]


@pytest.mark.parametrize("arch,cus,mhz,key,published", [
    ("gfx908", 120, 1502, "fp64", 11.5e12), ("gfx908", 120, 1502, "peak_flop_per_s_tensor:mfma_fp16", 184.6e12),
    ("gfx908", 120, 1502, "peak_flop_per_s_tensor:mfma_bf16", 92.3e12),       # MI100 data sheet
    ("gfx90a", 104, 1700, "fp64", 22.6e12), ("gfx90a", 104, 1700, "peak_flop_per_s_tensor:mfma_fp64", 45.3e12),
    ("gfx90a", 104, 1700, "peak_flop_per_s_tensor:mfma_fp16", 181.0e12),      # MI210 data sheet
    ("gfx950", 256, 2400, "peak_flop_per_s_tensor:mfma_fp16", 2.5e15),
    ("gfx950", 256, 2400, "peak_flop_per_s_tensor:mfma_fp6_fp4", 10.1e15),    # MI355X data sheet
])
def test_architecture_model_reproduces_published_figures(arch, cus, mhz, key, published):
    from roofline.ingest.amd.arch import model_peaks

    peaks = model_peaks({"gpu_arch": arch, "cu_per_gpu": cus, "max_sclk": mhz})
    col = key if key.startswith("peak_") else f"peak_flop_per_s_{key}"
    assert peaks[col][0] == pytest.approx(published, rel=0.01)
