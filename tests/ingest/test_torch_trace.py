"""PyTorch (Kineto) traces: every fixture ingests or fails typed; op FLOPs/bytes equal TraceLens'."""

from __future__ import annotations

import csv
import gzip
import os

import pandas as pd
import pytest

import roofline
from conftest import SHARED, read_or_typed_error, shared
from roofline import errors
from roofline.metrics.ops import cost

TRACES = sorted(p.name for p in (SHARED / "traces").glob("*.pt.trace.json*")) if (SHARED / "traces").exists() else []
if not TRACES and os.environ.get("CI"):
    raise RuntimeError("shared trace fixtures missing")
TRACELENS = ["torch2.6_h100_bert-small_infer_flops-flag", "torch2.6_h100_qwen1.5-0.5b_infer_flops-flag"]


@pytest.mark.parametrize("name", TRACES)
def test_every_trace_ingests_or_fails_typed_and_keeps_all_gpu_time(name):
    path = shared(f"traces/{name}")
    try:
        k = roofline.read(path)
    except errors.NoKernelsError as exc:
        assert "cpu-only" in name and "no GPU events" in str(exc)
        return
    prov = k.attrs["roofline.provenance"][0]
    # attributed + orphan GPU time = all GPU time: nothing is dropped
    assert k["duration_s"].sum() == pytest.approx(prov["gpu_time_s"], rel=1e-9, abs=1e-12)
    orphan = k.loc[k["attribution"].str.startswith("orphan"), "duration_s"].sum()
    assert orphan == pytest.approx(prov["orphan_gpu_time_s"], rel=1e-9, abs=1e-12)
    assert k["format"].eq("torch-trace").all() and (k["duration_s"] >= 0).all()
    # a row without a model says why, never a silent 0
    no_flops = k["flop_fp32"].isna()
    assert k.loc[no_flops, "flop_fp32_source"].str.startswith("unavailable").all()
    assert roofline.analyze(k)["bound"].notna().all()


@pytest.mark.parametrize("stem", TRACELENS)
@pytest.mark.parametrize("kind", ["GEMM", "SDPA_fwd"])
def test_gemm_and_sdpa_flops_and_bytes_equal_tracelens(stem, kind):
    """Exact FLOPs; bytes equal TraceLens' "Data Moved" (MiB × 2²⁰): both count A, B, C, bias once.

    Convention difference: TraceLens files the flash kernel under the SDPA op
    (aten::_scaled_dot_product_flash_attention); we tie a kernel to the innermost op that launched it,
    aten::_flash_attention_forward, whose shapes are the same tensors in [B, S, H, D] order.
    """
    k = roofline.read(shared(f"traces/{stem}.pt.trace.json.gz"))
    flops = k[["flop_fp64", "flop_fp32", "flop_fp16", "flop_tensor"]].sum(axis=1)
    ref = list(csv.DictReader(open(shared(f"traces/reference/tracelens/{stem}.{kind}.csv"), encoding="utf-8")))
    assert ref
    expected_count: dict[tuple[str, int], int] = {}
    for r in ref:
        name = "aten::_flash_attention_forward" if kind == "SDPA_fwd" else r["name"]
        key = (name, round(float(r["GFLOPS_first"]) * 1e9))
        expected_count[key] = expected_count.get(key, 0) + int(r["name_count"])
        sel = k[(k["kernel_name"] == name) & (flops.round() == key[1])]
        assert len(sel) > 0, key
        assert set(sel["dram_bytes"]) == {round(float(r["Data Moved (MB)_first"]) * 2**20)}
        if "BFloat16" in r["param: dtype_A_B"]:  # bf16 matmuls run on tensor cores; the fp32 bmm on CUDA cores
            assert (sel["flop_tensor"] > 0).all() and (sel["tensor_path"] == "bf16").all()
        else:
            assert (sel["flop_fp32"] > 0).all()
    for (name, fl), n in expected_count.items():
        assert ((k["kernel_name"] == name) & (flops.round() == fl)).sum() == n


def test_cost_models_by_hand():
    c = cost("aten::addmm", [[512], [141, 512], [512, 512], [], []], ["c10::BFloat16"] * 3 + ["Scalar"] * 2)
    assert c.flops == 2 * 141 * 512 * 512 + 141 * 512 and c.bytes == (512 + 141 * 512 * 2 + 512 * 512) * 2
    # conv 3x3, stride 2, pad 1 on 1x64x56x56 -> 28x28 out
    c = cost("aten::convolution", [[1, 64, 56, 56], [128, 64, 3, 3], [], [], [], [], [], [], []],
             ["float"] * 2 + [""] * 7, ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])
    assert c.flops == 2 * 1 * 128 * 28 * 28 * 64 * 9 and c.precision == "fp32"
    c = cost("aten::_scaled_dot_product_flash_attention", [[2, 4, 128, 64]] * 3 + [[]] * 4,
             ["c10::Half"] * 3 + ["Scalar"] * 3 + [""], ["", "", "", "0.", "True", "False", ""])
    assert c.flops == 2 * 2 * 4 * 128 * 128 * 128 // 2 and c.tensor_path == "fp16"
    assert cost("aten::mystery", [[4]], ["float"]) is None


def test_cupti_range_profiler_flops_are_measured():
    k = roofline.read(shared("traces/torch_a100_cupti-range-profiler_sass-flop-counters.pt.trace.json.gz"))
    assert (k["attribution"] == "measured: CUPTI range profiler").all()
    assert k["flop_fp32_source"].str.startswith("measured").all() and (k["flop_fp32"] >= 0).all()


def test_bad_traces_raise_typed_errors(tmp_path):
    real = shared("traces/torch_a100_alexnet_train_small.pt.trace.json.gz").read_bytes()
    cases = {
        "truncated.pt.trace.json.gz": (real[: len(real) // 2], errors.CorruptReportError),
        "invalid.pt.trace.json": (b'{"traceEvents": [ {"ph": "X",', errors.CorruptReportError),
        "other.pt.trace.json": (b'{"hello": "world"}', errors.FormatMismatchError),
        "nots.pt.trace.json": (b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k"}]}', errors.NoKernelsError),
        "rows.pt.trace.json": (b'[{"name": "fusion", "flops": 3}, {"name": "copy"}]', errors.FormatMismatchError),
        "empty-array.pt.trace.json": (b'[]', errors.FormatMismatchError),
        "numbers.pt.trace.json": (b'[1, 2, 3]', errors.FormatMismatchError),
        "cpu.pt.trace.json": (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}',
                              errors.NoKernelsError),
    }
    for name, (data, exc) in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(exc) as info:
            roofline.read(p)
        assert str(p) in str(info.value)
    nots = str(pytest.raises(errors.NoKernelsError, roofline.read, tmp_path / "nots.pt.trace.json").value)
    assert "lacked ts or dur" in nots
    assert gzip.decompress(real)  # the fixture itself is fine


def _trace(events, **top):
    import json

    return json.dumps({"traceEvents": events, **top}).encode()


OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10, "dur": 50, "pid": 1, "tid": 1,
      "args": {"External id": 7, "Input Dims": [[64, 32], [32, 16]], "Input type": ["float", "float"]}}
LAUNCH = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 20, "dur": 5, "pid": 1, "tid": 1,
          "args": {"correlation": 99, "External id": 7}}
KERNEL = {"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "ts": 30, "dur": 8, "pid": 0, "tid": 7,
          "args": {"correlation": 99, "External id": 7, "device": 0, "grid": [4, 2, 1], "block": [128, 1, 1]}}
PROPS = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}]


def test_a_hand_made_trace_reads_exactly(tmp_path):
    """Every column the reader fills, checked on a trace small enough to compute by hand."""
    p = tmp_path / "tiny.pt.trace.json"
    p.write_bytes(_trace([OP, LAUNCH, KERNEL], deviceProperties=PROPS, distributedInfo={"rank": 3}))
    k = roofline.read(p)
    assert len(k) == 1
    r = k.iloc[0]
    assert r["kernel_name"] == "aten::mm" and r["mangled_name"] == "sgemm_kernel" and r["attribution"] == "op"
    assert r["flop_fp32"] == 2 * 64 * 32 * 16 and r["flop_tensor"] == 0
    assert r["dram_bytes"] == (64 * 32 + 32 * 16 + 64 * 16) * 4
    assert r["duration_s"] == pytest.approx(8e-6) and r["rank"] == 3 and r["kernel_id"] == 0
    assert (r["grid_x"], r["grid_y"], r["block_x"]) == (4, 2, 128)
    assert r["device_name"] == "NVIDIA H100 80GB HBM3" and r["compute_capability"] == "9.0" and r["sm_count"] == 132
    assert r["l2_bytes_source"].startswith("unavailable") and pd.isna(r["l2_bytes"])
    assert r["peak_dram_bytes_per_s_source"].startswith("spec: ")


def test_odd_events_are_read_leniently(tmp_path):
    """Events that are not objects, args that are not objects, unhashable ids, a non-list deviceProperties:
    the typed decoder rejects them, the lenient path reads the rest exactly as without them."""
    clean = tmp_path / "clean.pt.trace.json"
    clean.write_bytes(_trace([OP, LAUNCH, KERNEL], deviceProperties=PROPS))
    odd = tmp_path / "odd.pt.trace.json"
    junk = ["not an event", 42, None, {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 1,
                                       "args": "oops"},
            {"ph": "X", "cat": ["unhashable"], "ts": 1, "dur": 1},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 2, "dur": 1,
             "args": {"correlation": [1, 2]}}]
    odd.write_bytes(_trace(junk + [OP, LAUNCH, KERNEL], deviceProperties=PROPS))
    a, b = roofline.read(clean), roofline.read(odd)
    cols = [c for c in a.columns if c != "source_file"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    bad_props = tmp_path / "props.pt.trace.json"
    bad_props.write_bytes(_trace([OP, LAUNCH, KERNEL], deviceProperties=5))
    assert roofline.read(bad_props)["device_name"].isna().all()


def test_a_bare_event_array_and_kernels_without_launches(tmp_path):
    """The 1.8-era bare array; a kernel whose launch is missing is an orphan row that keeps its time."""
    import json

    p = tmp_path / "bare.pt.trace.json"
    lone = {**KERNEL, "ts": 500, "args": {"correlation": 5}}
    p.write_bytes(json.dumps([OP, LAUNCH, KERNEL, lone]).encode())
    k = roofline.read(p)
    assert list(k["attribution"]) == ["op", "orphan: launched outside the capture window (no launch event)"]
    assert k["duration_s"].sum() == pytest.approx(16e-6)
    assert k["flop_fp32_source"].iloc[1].startswith("unavailable")


def test_kernels_from_columns_types_and_checks():
    from roofline.schema import SchemaError, kernel_dtypes, kernels_from_columns

    k = kernels_from_columns({"kernel_name": ["a", None], "grid_x": [4, None], "duration_s": [1.0, None],
                              "format": "x", "rank": None, "replay_ok": True}, 2)
    assert list(k.columns) == list(kernel_dtypes()) and {str(t) for t in k.dtypes} <= set(kernel_dtypes().values())
    assert k["kernel_name"].isna().tolist() == [False, True] and k["grid_x"].isna().tolist() == [False, True]
    assert k["grid_x"].iloc[0] == 4 and pd.isna(k["duration_s"].iloc[1]) and (k["format"] == "x").all()
    assert k["rank"].isna().all() and k["replay_ok"].all()
    with pytest.raises(SchemaError, match="not_a_column"):
        kernels_from_columns({"not_a_column": [1]}, 1)


def test_conform_kernels_adds_every_missing_column_and_keeps_the_frames_labels():
    from roofline.schema import conform_kernels, kernel_dtypes

    frame = pd.DataFrame({"kernel_name": ["a", "b"], "extra": [1, 2]}, index=[7, 7])
    frame.columns.name, frame.attrs["x"] = "metric", 1
    out = conform_kernels(frame)
    assert list(out.columns) == [*kernel_dtypes(), "extra"] and out.columns.name == "metric"
    assert [str(t) for t in out.dtypes[:-1]] == list(kernel_dtypes().values())
    assert out.index.tolist() == [7, 7] and out.attrs == {"x": 1} and out["grid_x"].isna().all()


def test_damaged_values_become_missing_not_crashes(tmp_path):
    """A grid of strings, a rank that is not an integer, a name that is a number: read, marked missing."""
    p = tmp_path / "damaged.pt.trace.json"
    kernel = {**KERNEL, "args": {**KERNEL["args"], "grid": ["a", 1, 1], "block": [1.5, 1, 1]}}
    op = {**OP, "name": 12345}
    p.write_bytes(_trace([op, LAUNCH, kernel], deviceProperties=PROPS, distributedInfo={"rank": "three"}))
    k = roofline.read(p)
    assert len(k) == 1 and k["grid_x"].isna().all() and k["block_x"].isna().all() and k["rank"].isna().all()
    assert k["kernel_name"].iloc[0] == "12345" and k["flop_fp32_source"].iloc[0].startswith("unavailable")


def test_any_damage_is_read_or_a_typed_error(tmp_path_factory):
    """Property: events whose fields hold any JSON value read, or fail with a RooflineError; never a crash."""
    import json

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    scalar = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=False, allow_infinity=False),
                       st.sampled_from(["X", "kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "cuda_profiler_range",
                                        "aten::mm", "ProfilerStep#1", ""]))
    value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=3), inner, max_size=2)),
                         max_leaves=6)
    base = [OP, LAUNCH, KERNEL]
    keys = ["ph", "cat", "name", "ts", "dur", "pid", "tid", "args"]
    arg_keys = ["External id", "correlation", "Input Dims", "Input type", "Concrete Inputs", "grid", "block",
                "bytes", "device", "In msg nelems", "dtype"]
    damage = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(keys + arg_keys + ["(the whole event)"]), value),
                      min_size=1, max_size=4)
    folder = tmp_path_factory.mktemp("fuzz")

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(damage=damage, props=st.one_of(st.just(PROPS), value))
    def check(damage, props):
        events = [json.loads(json.dumps(e)) for e in base]
        for i, key, v in damage:
            if key == "(the whole event)":
                events[i] = v
            elif not isinstance(events[i], dict):
                continue
            elif key in keys:
                events[i][key] = v
            elif isinstance(events[i].get("args"), dict):
                events[i]["args"][key] = v
        p = folder / "fuzz.pt.trace.json"
        p.write_bytes(_trace(events, deviceProperties=props))
        read_or_typed_error(p)

    check()


def test_a_launch_without_external_id_finds_its_op_by_time_even_beside_damaged_ops(tmp_path):
    """Linking by time (innermost op on the launching thread) when the launch carries no External id; an op
    with an unhashable tid elsewhere in the trace does not stop it."""
    p = tmp_path / "bytime.pt.trace.json"
    launch = {**LAUNCH, "args": {"correlation": 99}}
    kernel = {**KERNEL, "args": {"correlation": 99, "device": 0}}
    outer = {**OP, "name": "aten::linear", "ts": 5, "dur": 80, "args": {"External id": 6}}
    damaged = {**OP, "name": "aten::add", "tid": [1], "args": {"External id": 8}}
    p.write_bytes(_trace([damaged, outer, OP, launch, kernel], deviceProperties=PROPS))
    k = roofline.read(p)
    assert list(k["kernel_name"]) == ["aten::mm"] and list(k["attribution"]) == ["op"]


def test_a_launch_no_op_holds_says_why_its_kernel_is_an_orphan(tmp_path):
    """A launch outside every op on its thread: a graph replay, a plain launch, or a launch whose thread id
    cannot be a key (unhashable), each with its own reason; the kernel keeps its time either way."""
    p = tmp_path / "outside.pt.trace.json"
    events = [OP]
    for corr, (name, tid) in enumerate([("cudaGraphLaunch", 1), ("cudaLaunchKernel", 1),
                                        ("cudaLaunchKernel", [1])], start=100):
        events.append({**LAUNCH, "name": name, "tid": tid, "ts": 200 + corr, "args": {"correlation": corr}})
        events.append({**KERNEL, "ts": 400 + corr, "args": {"correlation": corr, "device": 0}})
    p.write_bytes(_trace(events, deviceProperties=PROPS))
    k = roofline.read(p)
    assert sorted(k["attribution"]) == ["orphan: graph replay (the graph's ops are not in the trace)",
                                        "orphan: launch outside any CPU op",
                                        "orphan: unusable correlation or External id"]
    assert k["duration_s"].sum() == pytest.approx(24e-6)


def test_copies_count_their_bytes_and_say_when_they_cannot(tmp_path):
    """A device-to-device copy moves its bytes twice (read + write); a memset once; a copy without a bytes
    arg leaves DRAM bytes unavailable (never 0); a host-to-device copy is not DRAM traffic."""
    def copy(name, cat, args, ts):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": 2, "pid": 0, "tid": 7, "args": args}

    events = [copy("Memcpy DtoD (Device -> Device)", "gpu_memcpy", {"bytes": 1000}, 1),
              copy("Memset (Device)", "gpu_memset", {"bytes": 64}, 5),
              copy("Memcpy DtoD (Device -> Device)", "gpu_memcpy", {"bytes": "lots"}, 9),
              copy("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", {"bytes": 4096}, 13)]
    p = tmp_path / "copies.pt.trace.json"
    p.write_bytes(_trace(events, deviceProperties=PROPS))
    k = roofline.read(p).sort_values("kernel_id")
    assert k["dram_bytes"].iloc[0] == 2000 and k["dram_bytes"].iloc[1] == 64
    assert pd.isna(k["dram_bytes"].iloc[2]) and "without a numeric bytes" in k["dram_bytes_source"].iloc[2]
    assert pd.isna(k["dram_bytes"].iloc[3]) and "PCIe" in k["dram_bytes_source"].iloc[3]
    assert k["host_link_bytes"].iloc[3] == 4096 and k["host_link_bytes"].iloc[:3].isna().all()
    assert (k["flop_fp32"] == 0).all()


def test_gather_reads_one_element_per_index_not_the_whole_source():
    """aten::gather of 888 x 2880 bf16 elements out of a 25136 x 2880 table (the B200 trace's call): index
    int64 read, gathered elements read, output written: 888·2880·(8 + 2·2) bytes."""
    c = cost("aten::gather", [[25136, 2880], [], [888, 2880], [], [888, 2880]],
             ["c10::BFloat16", "Scalar", "long int", "Scalar", "c10::BFloat16"], ["", "0", "", "False", ""])
    assert c.flops == 0 and c.bytes == 888 * 2880 * (8 + 2 * 2)


def test_copy_into_a_tensor_reads_the_source_and_writes_the_destination_once():
    """aten::copy_(self bf16, src fp32): src read (4 B) and self written (2 B) per element; clone reads and
    writes a new tensor; an in-place add reads self and other and writes self: self moves twice (read-modify-
    write), as TraceLens counts it (its add_ of two 16-element fp32 tensors moves 192 B = 3·16·4)."""
    n = 16 * 1024
    assert cost("aten::copy_", [[16, 1024], [16, 1024], []], ["c10::BFloat16", "float", "Scalar"]).bytes == n * 6
    assert cost("aten::clone", [[16, 1024], []], ["float", ""]).bytes == n * 8
    assert cost("aten::add_", [[16, 1024], [16, 1024], []], ["float", "float", "Scalar"]).bytes == n * 12


def test_an_out_argument_is_the_output_not_another_input():
    """aten::mul recorded from mul.out(self, other, *, out): [[512, 2862], [], [512, 2862]] with a 0-dim double
    other: self read, other read (8 B), out written once: 512·2862·(4 + 4) + 8 bytes (it was counted twice);
    where(cond, self, other) keeps its three inputs; results have the dtype the op gives them."""
    n = 512 * 2862
    c = cost("aten::mul", [[512, 2862], [], [512, 2862]], ["float", "double", "float"])
    assert c.bytes == n * 8 + 8 and c.flops == n
    assert cost("aten::mul", [[512, 2862], [512, 2862]], ["float", "float"]).bytes == n * 12
    w = cost("aten::where", [[64], [64], [64]], ["bool", "float", "float"])
    assert w.bytes == 64 * (1 + 4 + 4) + 64 * 4  # the result has self's dtype, not the condition's
    assert cost("aten::lt", [[64], [64]], ["float", "float"]).bytes == 64 * (4 + 4) + 64 * 1  # a bool result


def test_a_modelled_op_above_the_dram_roof_is_explained_by_caching_not_a_wrong_peak():
    """OWLv2's residual adds (two 1x5185x1024 bf16 inputs, just written by the previous op) run above H100's
    HBM roof: their bytes are modelled as if from DRAM, so the note names caching, not a wrong peak."""
    a = roofline.analyze(roofline.read(shared("traces/torch2.6_h100_owlv2-large_infer_flops-flag_132k.pt.trace.json.gz")))
    over = a[a["over_roof"].fillna(False).astype(bool)]
    assert len(over) > 0 and set(over["kernel_name"]) == {"aten::add"}
    assert over["analysis_note"].str.contains("modelled from shapes").all()
    assert not over["analysis_note"].str.contains("likely a wrong peak").any()
