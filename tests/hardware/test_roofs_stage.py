"""The roofs stage (hardware/attach.py: attach_roofs): readers give what a profile records, the stage attaches
the spec table's roofs once, each format's rows by its policy (issue 30)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import roofline
from conftest import shared
from roofline.frames import distinct_rows
from roofline.hardware import attach as specs
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


def test_interleaved_formats_are_each_filled_by_their_policy_and_the_input_frame_stays():
    """A dataset's rows mix formats in any order: each row gets what its format's fill gives it alone; the peaks'
    sources come out as a ``string`` column whatever the input held, and the caller's frame is not written."""
    frames = [read_one(shared(rel)) for rel in PROFILES]
    mixed = concat(frames)
    shuffle = np.random.default_rng(3).permutation(len(mixed))
    mixed = mixed.iloc[shuffle].reset_index(drop=True)
    before = mixed.copy()
    together = attach_roofs(mixed)
    pd.testing.assert_frame_equal(mixed, before, check_exact=True)
    apart = concat([attach_roofs(f) for f in frames])
    pd.testing.assert_frame_equal(together.iloc[np.argsort(shuffle)].reset_index(drop=True), apart, check_exact=True)
    for c in SOURCES:
        assert together[c].dtype == pd.array(["x"], dtype="string").dtype, c
    assert any(together[c].str.startswith("spec").fillna(False).any() for c in SOURCES)


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


# ---- the stage's distinct-row fill and batched lookups give exactly what the row-wise paths give (synthetic edge cases and real traces)
H100 = "NVIDIA H100 80GB HBM3"


def test_distinct_rows_codes_and_first_rows() -> None:
    frame = pd.DataFrame({"a": pd.array(["x", None, "x", "y", None, "x"], dtype="string"),
                          "b": [1.0, np.nan, 1.0, 1.0, np.nan, 2.0]})
    codes, firsts = distinct_rows(frame, ["a", "b"])
    assert codes.tolist() == [0, 1, 0, 2, 1, 3]  # in order of first appearance; missing equals missing
    assert firsts.tolist() == [0, 1, 3, 5]
    assert distinct_rows(pd.DataFrame({"a": [[1], [2]]}), ["a"]) is None  # unhashable: no codes


def _mixed_frame(n: int = 3000) -> pd.DataFrame:
    """Peaks to fill: three devices (one unknown), profiled clocks or none, tensor paths, and peaks and
    sources the counters already gave on some rows."""
    rng = np.random.default_rng(7)
    dev = rng.choice([H100, "Tesla V100-SXM2-16GB", "Mystery GPU 9000"], n)
    frame = kernels_from_columns({
        "device_name": list(dev),
        "compute_capability": ["9.0" if d == H100 else "7.0" if "V100" in d else None for d in dev],
        "sm_count": [132 if d == H100 else 80 if "V100" in d else None for d in dev],
        "sm_clock_hz": list(rng.choice([1.755e9, 1.98e9, np.nan, 1.2e9], n)),
        "tensor_path": list(rng.choice(np.array(["fp16", "tf32", None, "int8"], dtype=object), n)),
        "duration_s": list(rng.uniform(1e-6, 1e-3, n)),
    }, n)
    said = rng.uniform(size=n) < 0.2  # the counters gave a DRAM peak on some rows, and said so
    dram = frame["peak_dram_bytes_per_s"].to_numpy(copy=True)
    dram[said] = 2.0e12
    frame["peak_dram_bytes_per_s"] = dram
    src = frame[source_column("peak_dram_bytes_per_s")].to_numpy(dtype=object, na_value=None, copy=True)
    src[said] = "measured: dram__bytes.sum.peak_sustained"
    frame[source_column("peak_dram_bytes_per_s")] = pd.array(src, dtype="string")
    return frame


@pytest.mark.parametrize("at_profiled_clock", [True, False])
def test_spec_peaks_on_distinct_rows_equal_the_row_wise_fill(monkeypatch, at_profiled_clock) -> None:
    frame = _mixed_frame()
    before = frame.copy()
    fast = specs.fill_spec_peaks(frame, at_profiled_clock=at_profiled_clock)
    assert fast is not frame
    pd.testing.assert_frame_equal(frame, before)  # the input is left as it was
    monkeypatch.setattr(specs, "_distinct_fill", lambda *a: None)
    plain = specs.fill_spec_peaks(frame, at_profiled_clock=at_profiled_clock)
    pd.testing.assert_frame_equal(fast, plain)
    # not vacuous: H100 rows got profiled-clock roofs, the unknown device says why
    h100 = (fast["device_name"] == H100).to_numpy()
    assert fast.loc[h100, "peak_flop_per_s_fp32"].notna().all()
    assert fast.loc[~h100 & (fast["device_name"] == "Mystery GPU 9000").to_numpy(),
                    "peak_flop_per_s_fp32_source"].str.startswith("unavailable").all()


def test_spec_peaks_with_a_device_map_equal_the_row_wise_fill(monkeypatch) -> None:
    frame = _mixed_frame(1000)
    mapping = {"Mystery GPU 9000": "H100 SXM"}
    fast = specs.fill_spec_peaks(frame, device_map=mapping)
    monkeypatch.setattr(specs, "_distinct_fill", lambda *a: None)
    pd.testing.assert_frame_equal(fast, specs.fill_spec_peaks(frame, device_map=mapping))


def test_the_v100_trace_reads_the_same_with_the_row_wise_fill(monkeypatch) -> None:
    from roofline.ingest.torch import trace as torch_trace

    path = shared("traces/torch1.9_v100_resnet50_train_shapes.pt.trace.json.gz")
    read = torch_trace.read(path)
    fast = specs.attach_roofs(read)
    monkeypatch.setattr(specs, "_distinct_fill", lambda *a: None)
    pd.testing.assert_frame_equal(fast, specs.attach_roofs(read))
    assert len(fast) > 5000 and fast["peak_flop_per_s_fp32"].notna().all()


def test_innermost_many_equals_innermost_one_by_one() -> None:
    from roofline.ingest.torch.decode import Event
    from roofline.ingest.torch.threads import Threads

    # nested ops on two threads: [0, 100) holds [10, 50) holds [20, 30); [60, 70) on its own
    ops = [Event(cat="cpu_op", name=n, ts=ts, dur=dur, pid=1, tid=tid)
           for n, ts, dur, tid in (("outer", 0, 100, 7), ("mid", 10, 40, 7), ("inner", 20, 10, 7),
                                   ("late", 60, 10, 7), ("other", 0, 1000, 8), ("str-tid", 5, 5, "t"))]
    threads = Threads(ops)
    queries = [(1, 7, t) for t in (-1, 0, 5, 10, 25, 30, 31, 55, 65, 100, 101)] + \
              [(1, 8, 500.5), (1, 9, 5), (1, "t", 7), (2, 7, 25)]
    many = threads.innermost_many(queries)
    assert many == [threads.innermost(*q) for q in queries]
    assert many[:11] == [None, 0, 0, 1, 2, 2, 1, 0, 3, 0, None]
    assert many[11:] == [4, None, 5, None]



def test_fills_spread_over_a_column_of_several_arrow_chunks_land_on_their_rows():
    """A dataset's text columns come in one Arrow chunk per row group: each format's fills are placed chunk by
    chunk (no whole-column copy first), at their rows, nulls kept, in the chunks' layout."""
    import pyarrow as pa

    column = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array(
        [pa.array(["a", None, "c"], pa.large_string()), pa.array([], pa.large_string()),
         pa.array(["d", "e", "f"], pa.large_string())])))
    first = np.array([True, False, False, False, True, False])
    second = np.array([False, False, True, False, False, True])
    # each format's distinct fills and its rows' place among them: the first's two rows share one fill
    parts = [(first, pd.Series(["X"], dtype="string"), np.array([0, 0])),
             (second, pd.Series(["Y", None], dtype="string"), np.array([0, 1]))]
    got = specs._scatter(column, parts)
    assert list(pd.Series(got).astype(object).where(pd.Series(got).notna(), None)) == ["X", None, "Y", "d", "X", None]
    assert [len(c) for c in got.__arrow_array__().chunks] == [3, 0, 3]


def _arrow_buffers(column: pd.Series) -> list[int]:
    """Where an Arrow-backed column's data lies: equal lists are the same cells, not a copy of them."""
    return [b.address for c in column.array.__arrow_array__().chunks for b in c.buffers() if b is not None]


def test_a_mixed_frame_filled_already_keeps_its_roof_columns_uncopied():
    """A dataset's rows were filled when the batch wrote them: the stage finds its fills change nothing and
    spreads none of them (a new copy of every roof source was ~0.1 s of a 500-input report)."""
    frames = [read_one(shared(rel)) for rel in PROFILES]
    roofed = attach_roofs(concat(frames))
    again = attach_roofs(roofed)
    pd.testing.assert_frame_equal(again, roofed, check_exact=True)
    for c in SOURCES:
        assert _arrow_buffers(again[c]) == _arrow_buffers(roofed[c]), c


def test_formats_filled_already_beside_ones_to_fill_get_what_a_fill_of_all_gives():
    """The parts a fill left as they were are not spread; the rest are, at their rows only."""
    frames = [read_one(shared(rel)) for rel in PROFILES]
    torch = [i for i, f in enumerate(frames) if f["format"].iloc[0] == "torch-trace"]
    assert torch
    half = [attach_roofs(f) if i in torch else f for i, f in enumerate(frames)]
    pd.testing.assert_frame_equal(attach_roofs(concat(half)), attach_roofs(concat(frames)), check_exact=True)


def test_a_roof_source_held_as_objects_comes_back_as_a_string_column_even_when_no_fill_changes_it():
    """What the stage gives a source column does not depend on whether a fill changed it: ``string``."""
    roofed = attach_roofs(concat([read_one(shared(rel)) for rel in PROFILES]))
    loose = roofed.copy()
    loose[SOURCES[0]] = loose[SOURCES[0]].astype(object)
    out = attach_roofs(loose)
    pd.testing.assert_frame_equal(out, roofed, check_exact=True)
