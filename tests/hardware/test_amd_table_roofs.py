"""AMD workloads that do not record every roof get the spec table's, by the resolved SKU, labelled (issue 31):
a ROCm 7 sysinfo.csv without hbm_bw, an MI350 one with max_sclk 0.

The workloads are made inside the tests from the shared MI300X rocprof-compute workload (a copy in a temporary
folder, as the truncated-report tests do): sysinfo.csv edited as rocprof-compute 3.x / an MI350 writes it, and
pmc_perf.csv's timestamps written out in full (the shared file rounds them to 5 digits, End − Start = 0): each
dispatch is given 8,000 ns, so its 16.79 MB at HBM is 2.10 TB/s, 39.6% of the MI300X's 5.3 TB/s."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

import roofline
from conftest import shared

MI300X = "rocprof/rocprof-compute_vcopy_MI300X_A1"
DUR_NS = 8000


def _workload(tmp_path: Path, drop: tuple[str, ...], **sysinfo: str) -> Path:
    folder = tmp_path / "workload"
    shutil.copytree(shared(MI300X), folder)
    info = pd.read_csv(folder / "sysinfo.csv", dtype=str, keep_default_na=False).drop(columns=list(drop))
    for k, v in sysinfo.items():
        info[k] = v
    info.to_csv(folder / "sysinfo.csv", index=False)
    pmc = pd.read_csv(folder / "pmc_perf.csv", dtype=str, keep_default_na=False)
    start = 810_970_000_000_000 + 100_000 * pmc.index.to_numpy()
    pmc["Start_Timestamp"], pmc["End_Timestamp"] = start.astype(str), (start + DUR_NS).astype(str)
    pmc.to_csv(folder / "pmc_perf.csv", index=False)
    (folder / "timestamps.csv").unlink()
    return folder


def test_a_rocm7_workload_without_hbm_bw_gets_the_mi300x_dram_roof_from_the_table_and_is_dram_bound(tmp_path):
    """rocprof-compute 3.x writes no hbm_bw (nor here the channel count its own formula needs): MI300X_A1
    resolves to the table's MI300X, whose 5.3 TB/s is the DRAM roof, labelled as the data sheet's; the copy is
    DRAM memory-bound at 16.79 MB / 8 µs / 5.3 TB/s = 39.6%, not "L1 latency-limited"."""
    folder = _workload(tmp_path, ("hbm_bw", "num_hbm_channels"))
    r = roofline.analyze(roofline.read(folder))
    assert (r["peak_dram_bytes_per_s"] == 5.3e12).all()
    assert r["peak_dram_bytes_per_s_source"].str.startswith("spec: MI300X 5.3 TB/s (AMD Instinct MI300X data sheet").all()
    assert (r["binding_roof"] == "dram").all() and (r["bound"] == "memory-bound").all()
    assert r["pct_of_roof"].to_numpy() == pytest.approx(r["dram_bytes"].to_numpy() / (DUR_NS * 1e-9) / 5.3e12 * 100)
    assert r["pct_of_roof"].iloc[0] == pytest.approx(16_792_512 / 8e-6 / 5.3e12 * 100) == pytest.approx(39.6, abs=0.05)
    # the workload's own roofs are kept: compute and L1 from the architecture model at max_sclk
    assert r["peak_l1_bytes_per_s_source"].str.startswith("model:").all()


def test_an_mi350_workload_with_max_sclk_0_gets_compute_and_dram_roofs_from_the_table(tmp_path):
    """rocprof-compute names an MI350X "MI350" (its chip id 30112) and may write max_sclk 0: 0 is no clock,
    not a zero roof. The table's MI350X (alias MI350) gives its published peaks, at its 2.2 GHz boost: FP64
    vector 72.1 TFLOP/s, FP32 144.2, and 8 TB/s HBM3E."""
    folder = _workload(tmp_path, ("hbm_bw", "num_hbm_channels"), gpu_model="MI350", gpu_arch="gfx950",
                       cu_per_gpu="256", max_sclk="0", cur_sclk="0", max_mclk="0", cur_mclk="0")
    k = roofline.read(folder)
    assert k["sm_boost_clock_hz"].isna().all() and k["sm_clock_hz"].isna().all()  # 0 MHz: not recorded
    r = roofline.analyze(k)
    assert (r["peak_dram_bytes_per_s"] == 8e12).all()
    assert r["peak_dram_bytes_per_s_source"].str.contains("MI350X data sheet: 8 TB/s").all()
    assert r["peak_flop_per_s_fp64"].to_numpy() == pytest.approx([72.1e12] * 3)
    assert r["peak_flop_per_s_fp32"].to_numpy() == pytest.approx([144.2e12] * 3)
    assert r["peak_flop_per_s_fp32_source"].str.contains("MI350X").all()
    assert (r["binding_roof"] == "dram").all()
    from roofline.hardware.roofs import missing_roofs

    assert list(missing_roofs(r)) == []


def test_an_amd_device_the_table_does_not_know_says_why_it_has_no_dram_roof(tmp_path):
    folder = _workload(tmp_path, ("hbm_bw", "num_hbm_channels"), gpu_model="MI999", gpu_arch="gfx9999")
    r = roofline.analyze(roofline.read(folder))
    assert r["peak_dram_bytes_per_s"].isna().all()
    why = r["peak_dram_bytes_per_s_source"].iloc[0]
    assert why.startswith("unavailable:") and "gfx9999" in why and "roofs unavailable" in why
    from roofline.report.table import format_table

    assert "roof ()" not in format_table(r)
