"""The roofs stage (hardware/attach.py: attach_roofs): readers give what a profile records, the stage attaches
the spec table's roofs once, each format's rows by its policy (issue 30)."""

from __future__ import annotations

import pandas as pd
import pytest

import roofline
from conftest import shared
from roofline.hardware.attach import POLICIES, attach_roofs
from roofline.ingest import concat
from roofline.ingest.amd.arch import AMD_FORMATS
from roofline.pipeline import read_one
from roofline.schema import NOT_IN_SPEC_TABLE, kernels_from_columns, source_column

PROFILES = ["ncu/sm80_a100_mistic-cub-154launches_basic.ncu-rep", "ncu/sm75_t4_numba-copy-blocked_details-page.csv",
            "nsys/nsys2024.5_a100x2_cloverleaf-mpi-cuda.sqlite",
            "traces/torch_a100_alexnet_train_small.pt.trace.json.gz", "traces/jax0.8_rocm_mi300x_gemm.xplane.pb",
            "rocprof/rocprof-compute_vcopy_MI200"]
SOURCES = [source_column(c) for c in ("peak_flop_per_s_fp64", "peak_flop_per_s_fp32", "peak_flop_per_s_fp16",
                                      "peak_flop_per_s_tensor", "peak_dram_bytes_per_s", "peak_l1_bytes_per_s")]


@pytest.mark.parametrize("rel", PROFILES)
def test_readers_attach_nothing_from_the_table_and_read_attaches_it_once(rel):
    observed = read_one(shared(rel))
    for c in SOURCES:
        assert not observed[c].str.startswith("spec").fillna(False).any(), c
    roofed = attach_roofs(observed)
    pd.testing.assert_frame_equal(roofline.read(shared(rel)), roofed, check_exact=True)
    pd.testing.assert_frame_equal(attach_roofs(roofed), roofed, check_exact=True)  # once is enough
    if observed["format"].iloc[0] in AMD_FORMATS:  # the reader's measured and modelled roofs: the table fills
        pd.testing.assert_frame_equal(roofed, observed, check_exact=True)  # only those it lacks (none here)
    elif observed["format"].iloc[0] in POLICIES:
        assert any(roofed[c].str.startswith("spec").fillna(False).any() for c in SOURCES)
    else:
        pd.testing.assert_frame_equal(roofed, observed, check_exact=True)


def test_mixed_formats_are_each_filled_by_their_policy():
    frames = [read_one(shared(rel)) for rel in PROFILES]
    together = attach_roofs(concat(frames))
    apart = concat([attach_roofs(f) for f in frames])
    pd.testing.assert_frame_equal(together, apart, check_exact=True)


def test_an_xplane_recorded_bandwidth_counts_only_where_the_table_has_no_entry():
    """ROCm reports half of MI300X's bandwidth: the table's figure wins; a GPU it lacks keeps the plane's."""
    other = "NVIDIA GPU cc9.0 7 SMs 1 GiB"
    frame = kernels_from_columns({
        "format": "xplane", "device_name": ["MI300X", other], "compute_capability": [None, "9.0"],
        "sm_count": [None, 7], "peak_dram_bytes_per_s": [2.66e12, 1e12],
        "peak_dram_bytes_per_s_source": [f"xprof: device plane memory_bandwidth 2660 GB/s (driver-reported; MI300X "
                                         f"{NOT_IN_SPEC_TABLE}", f"xprof: device plane memory_bandwidth 1000 GB/s "
                                                                 f"(driver-reported; {other} {NOT_IN_SPEC_TABLE}"]}, 2)
    out = attach_roofs(frame)
    assert out["peak_dram_bytes_per_s"].tolist() == [5.3e12, 1e12]
    assert out["peak_dram_bytes_per_s_source"].iloc[0].startswith("spec: MI300X")
    assert out["peak_dram_bytes_per_s_source"].iloc[1] == frame["peak_dram_bytes_per_s_source"].iloc[1]
    pd.testing.assert_frame_equal(attach_roofs(out), out, check_exact=True)


def test_a_timeline_roof_neither_recorded_nor_in_the_table_says_why():
    """An unknown GPU's architecture model has no L1 roof without a clock: an nsys row says so, a trace's is empty."""
    cols = {"device_name": "Mystery", "compute_capability": "9.0", "sm_count": 100}
    nsys = attach_roofs(kernels_from_columns({**cols, "format": "nsys-sqlite"}, 1)).iloc[0]
    trace = attach_roofs(kernels_from_columns({**cols, "format": "torch-trace"}, 1)).iloc[0]
    assert nsys["peak_l1_bytes_per_s_source"] == POLICIES["nsys-sqlite"].unsaid
    assert pd.isna(trace["peak_l1_bytes_per_s_source"])
    assert nsys["peak_flop_per_s_fp32_source"] == trace["peak_flop_per_s_fp32_source"]


def test_device_names_unnamed_rows_and_the_caller_frame_stays():
    frame = read_one(shared("ncu/sm75_t4_numba-copy-blocked_details-page.csv"))  # a CSV export names no GPU
    before = frame.copy()
    out = attach_roofs(frame, device="T4")
    assert (out["device_name"] == "T4").all()
    pd.testing.assert_frame_equal(frame, before, check_exact=True)
    assert get_provenance_names(out) == get_provenance_names(frame)


def get_provenance_names(frame: pd.DataFrame) -> list[str]:
    return [r["source_file"] for r in frame.attrs["roofline.provenance"]]
