"""XLA xplanes and XProf trace JSON: per-HLO-op rows against XProf's own tables, program rows,
peaks, steps, bad input. XProf's outputs in shared/fixtures/traces/reference/xprof were made by the
xprof 2.24.2 converter from the same xplanes (MANIFEST.md)."""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import roofline
from conftest import shared
from roofline.analysis.aggregate import aggregate
from roofline.errors import (
    CorruptReportError,
    EmptyInputError,
    FormatMismatchError,
    NoKernelsError,
)
from roofline.ingest import sniff
from roofline.ingest.xla import xplane
from roofline.ingest.xla.cost import flop_column, library_gemm
from roofline.ingest.xla.protos import xplane_pb2

XLA = ["jax0.8_rocm_mi300x_gemm", "jax0.8_rocm_mi300x_elementwise", "jax0.6_rocm_mi300x_conv3d",
       "jax_tpuv6e-4chip_host-offload-allreduce"]
GIB = 2**30


def _xplane(name: str) -> Path:
    return shared(f"traces/{name}.xplane.pb")


def _table(name: str, tool: str) -> tuple[dict, list[dict]]:
    """XProf's DataTable JSON as (p, rows of {column id: value}); the first table of a list."""
    data = json.loads(gzip.decompress(shared(f"traces/reference/xprof/{name}.{tool}.json.gz").read_bytes()))
    t = data[0] if isinstance(data, list) else data
    ids = [c["id"] for c in t["cols"]]
    return t.get("p") or {}, [{k: (c or {}).get("v") for k, c in zip(ids, r["c"])} for r in t["rows"]]


@pytest.fixture(scope="module")
def frames() -> dict[str, object]:
    return {n: roofline.analyze(roofline.read(_xplane(n))) for n in XLA}


def _row(res, pid: str, op: str):
    m = res[(res["program_id"] == pid) & (res["hlo_op"] == op)]
    assert len(m) == 1, (pid, op, len(m))
    return m.iloc[0]


def _close(a: float, b: float, rel: float = 1e-9) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-3 if b == 0 else 0.0)


@pytest.mark.parametrize("name", XLA)
def test_ops_match_xprof_roofline_model(frames, name):
    res = frames[name]
    _, rows = _table(name, "roofline_model")
    ops = [r for r in rows if r["step"] == "Total" and r["category"] != "Program"]
    assert ops
    seen = set()
    for r in ops:
        m = _row(res, r["hlo_module_id"], r["operation"])
        seen.add((r["hlo_module_id"], r["operation"]))
        t = r["total_time"] * 1e-6
        assert m["occurrences"] == r["occurrences"]
        assert _close(m["total_time_s"], t, 1e-3) and _close(m["duration_s"], r["total_self_time"] * 1e-6, 1e-3)
        assert _close(m["xla_flop"], (r.get("measured_flop_rate") or 0) * 1e9 * t)  # XProf's FLOPs, exactly
        assert _close(m["xla_accessed_bytes"], (r.get("measured_memory_bw") or 0) * GIB * t)
        hbm = (r.get("hbm_bw") or 0) * GIB * t
        if str(m["dram_bytes_source"]).startswith("model:"):
            assert hbm == 0  # a library GEMM: XProf has no bytes, ours come from shapes
        elif np.isnan(m["dram_bytes"]):
            # no per-memory breakdown: XProf's per-op HBM figure is all of bytes_accessed
            assert "no per-memory breakdown" in m["dram_bytes_source"] and _close(m["xla_accessed_bytes"], hbm)
        else:
            assert _close(m["dram_bytes"], hbm)
    # every op row of ours is one of XProf's (the IDLE rows aside)
    ours = {(p, o) for p, o in zip(res["program_id"], res["hlo_op"]) if o != "IDLE"}
    assert ours == seen


@pytest.mark.parametrize("name", XLA)
def test_ops_match_xprof_hlo_stats(frames, name):
    res = frames[name]
    _, rows = _table(name, "hlo_stats")
    for r in rows:
        m = _row(res, r["program_id"], r["hlo_op_name"])
        assert m["occurrences"] == r["occurrences"]
        assert _close(m["duration_s"], r["total_self_time"] * 1e-6, 1e-3)
        assert m["hlo_category"] == r["category"]
        t = r["total_time"] * 1e-6
        assert _close(m["xla_model_flop"], (r.get("model_flop_rate") or 0) * 1e9 * t)


@pytest.mark.parametrize("name", XLA)
def test_program_row_matches_xprof(frames, name):
    res = frames[name]
    _, rows = _table(name, "roofline_model")
    prog = next(r for r in rows if r["category"] == "Program" and r["step"] == "Total")
    agg = aggregate(res, by="program")
    assert len(agg) == 1
    a = agg.iloc[0]
    t = prog["total_time"] * 1e-6
    assert _close(a["duration_s"], t, 1e-6)  # op self times + IDLE = XProf's device time
    assert _close(res["xla_flop"].sum() / a["duration_s"], prog["measured_flop_rate"] * 1e9, 0.01)
    model = res["dram_bytes_source"].astype(str).str.startswith("model:")
    xprof_hbm = res.loc[~model, "dram_bytes"].sum() / a["duration_s"]
    assert _close(xprof_hbm, prog["hbm_bw"] * GIB, 0.01)
    if model.any():  # library GEMMs: our program adds their shape-derived FLOPs and bytes
        assert a["achieved_flop_per_s"] > prog["measured_flop_rate"] * 1e9 * 2
    else:
        assert _close(a["achieved_flop_per_s"], prog["measured_flop_rate"] * 1e9, 0.01)
        assert _close(a["achieved_dram_bytes_per_s"], prog["hbm_bw"] * GIB, 0.01)


def test_library_gemm_flops_from_shapes(frames):
    res = frames["jax0.8_rocm_mi300x_gemm"]
    # program 49: bf16[8192,4096] x bf16[4096,8192], 3 runs; XProf gives 0 FLOPs
    m = _row(res, "49", "custom-call.1")
    assert m["xla_flop"] == 0 and m["flop_tensor"] == 2 * 8192 * 8192 * 4096 * 3
    assert m["tensor_path"] == "bf16" and m["flop_tensor_source"].startswith("model: 2·M·N·K")
    assert m["dram_bytes"] == 3 * 2 * (8192 * 4096 * 2 + 8192 * 8192)
    # a Triton GEMM fusion keeps XLA's own count
    g = _row(res, "5", "gemm_fusion_dot_general.1")
    assert g["flop_tensor"] == 2 * 256**3 * 3 == g["xla_flop"]
    assert library_gemm('%f = f32[8]{0} fusion(f32[8]{0} %p), kind=kLoop') is None


def test_flop_columns():
    assert flop_column("convolution", "x", "", True) == ("flop_tensor", "xla")
    assert flop_column("loop fusion", "loop_convert_fusion",
                       "%loop_convert_fusion = f32[16]{0} fusion(bf16[16]{0} %p), kind=kLoop", False) == ("flop_fp32", None)
    assert flop_column("custom-call", "cudnn-conv.1", "%cudnn-conv.1 = (bf16[1,8]{1,0}, u8[4]{0}) custom-call("
                       "bf16[1,4]{1,0} %a, bf16[8,4]{1,0} %b), custom_call_target=\"__cudnn$convForward\"",
                       False) == ("flop_tensor", "bf16")


def test_peaks(frames):
    tpu = frames["jax_tpuv6e-4chip_host-offload-allreduce"]
    assert (tpu["device_name"] == "TPU v6 Lite").all()
    assert (tpu["peak_flop_per_s_tensor"] == 918e12).all()
    assert np.allclose(tpu["peak_dram_bytes_per_s"], 1637.993152512e9)
    assert tpu["peak_dram_bytes_per_s_source"].str.startswith("xprof: device plane").all()
    assert tpu["peak_flop_per_s_fp32"].isna().all()
    gpu = frames["jax0.8_rocm_mi300x_gemm"]
    assert (gpu["device_name"] == "MI300X").all()
    assert (gpu["peak_dram_bytes_per_s"] == 5.3e12).all()  # the spec table, not the plane's 2.66 TB/s
    assert gpu["peak_dram_bytes_per_s_source"].str.startswith("spec:").all()
    # XProf's TPU roofline efficiency is reproduced (GB/s peak and GB/s bytes: the GiB cancel)
    _, rows = _table("jax_tpuv6e-4chip_host-offload-allreduce", "roofline_model")
    r = next(r for r in rows if r["operation"] == "broadcast_add_fusion.2")
    assert _close(_row(tpu, r["hlo_module_id"], r["operation"])["pct_of_roof"], r["roofline_efficiency"] * 100, 1e-6)


def test_idle_rows(frames):
    res = frames["jax0.8_rocm_mi300x_gemm"]
    idle = res[res["hlo_op"] == "IDLE"]
    assert len(idle) == 1 and idle["flop_total"].iloc[0] == 0 and idle["dram_bytes"].iloc[0] == 0
    assert "12 device event(s) that are not XLA ops" in idle["flags"].iloc[0]
    prov = roofline.schema.get_provenance(res)[0]
    assert _close(res["duration_s"].sum(), prov["device_time_s"])


def test_cost_analysis_off_gives_times_and_says_why():
    path = _xplane("jax0.8_rocm_mi300x_gemm")
    on, off = roofline.read(path), xplane.read(path, cost_analysis=False)
    assert np.array_equal(on["duration_s"].to_numpy(), off["duration_s"].to_numpy())
    ops = off[off["hlo_op"] != "IDLE"]
    assert ops["flop_fp32"].isna().all() and ops["dram_bytes"].isna().all()
    assert ops["flop_fp32_source"].str.contains("cost analysis was not run").all()


@pytest.mark.parametrize("name", ["jax0.8_rocm_mi300x_gemm", "jax_tpuv6e-4chip_host-offload-allreduce"])
def test_trace_viewer_json_timing(name):
    path = shared(f"traces/derived/{name}.xprof-trace_viewer.json.gz")
    assert sniff(path) == "xprof-trace"
    j, x = roofline.read(path), roofline.read(_xplane(name))
    assert (j["format"] == "xprof-trace").all()
    m = x.merge(j, on="kernel_name", suffixes=("_x", "_j"))
    assert len(m) == len(x) == len(j)
    assert (m["occurrences_x"] == m["occurrences_j"]).all()
    assert np.allclose(m["duration_s_j"], m["duration_s_x"], rtol=1e-3)
    ops = j[j["hlo_op"] != "IDLE"]
    assert ops["flop_fp32"].isna().all() and ops["flop_fp32_source"].str.contains("trace-viewer JSON").all()


def test_kineto_traces_are_not_taken_for_xprof_json():
    assert sniff(shared("traces/torch_a100_alexnet_train_small.pt.trace.json.gz")) == "torch-trace"
    assert sniff(shared("traces/torch_h100_cuda-sync-unittest_uncompressed.pt.trace.json")) == "torch-trace"


# ---- hand-built XSpaces (written with the project's own protobuf module, in the test) ----

def _stat(plane, holder, name: str, **value) -> None:
    ids = {m.name: k for k, m in plane.stat_metadata.items()}
    if name not in ids:
        k = len(ids) + 1
        plane.stat_metadata[k].id, plane.stat_metadata[k].name = k, name
        ids[name] = k
    s = holder.stats.add()
    s.metadata_id = ids[name]
    for k, v in value.items():
        setattr(s, k, v)


def _tpu_space(path: Path, steps: bool) -> Path:
    space = xplane_pb2.XSpace()
    plane = space.planes.add()
    plane.name = "/device:TPU:0"
    _stat(plane, plane, "device_type_string", str_value="TPU test")
    _stat(plane, plane, "peak_teraflops_per_second", double_value=100.0)
    _stat(plane, plane, "peak_hbm_bw_gigabytes_per_second", double_value=1000.0)
    ops = {1: ("while.1", "while", 0), 2: ("fusion.1", "loop fusion", 1000), 3: ("root", "", 0)}
    for mid, (name, cat, flops) in ops.items():
        md = plane.event_metadata[mid]
        md.id, md.name, md.display_name = mid, f"%{name} = f32[10]{{0}} op()", name
        _stat(plane, md, "program_id", int64_value=7)
        _stat(plane, md, "symbol_id", int64_value=0 if name == "root" else mid)
        if cat:
            _stat(plane, md, "hlo_category", str_value=cat)
        _stat(plane, md, "flops", int64_value=flops)
        breakdown = xplane_pb2.MemoryAccessBreakdown()
        for t, n in ((1, 400), (2, 100)):
            b = breakdown.memory_accessed.add()
            b.operation_type, b.memory_space, b.bytes_accessed = t, 1, n
        b = breakdown.memory_accessed.add()
        b.operation_type, b.memory_space, b.bytes_accessed = 1, 3, 50  # an on-chip memory
        _stat(plane, md, "bytes_accessed", int64_value=550)
        _stat(plane, md, "memory_access_breakdown", bytes_value=breakdown.SerializeToString())
    line = plane.lines.add()
    line.id, line.name = 3, "XLA Ops"
    # two runs: each a while op (10 µs) holding two fusions (3 µs each), then the module root (1 µs)
    for base in (0, 20_000_000):
        for mid, off, dur in ((1, 0, 10_000_000), (2, 1_000_000, 3_000_000), (2, 5_000_000, 3_000_000),
                              (3, 12_000_000, 1_000_000)):
            ev = line.events.add()
            ev.metadata_id, ev.offset_ps, ev.duration_ps = mid, base + off, dur
    if steps:
        sl = plane.lines.add()
        sl.id, sl.name = 4, "Steps"
        for i, base in enumerate((0, 20_000_000)):
            md = plane.event_metadata[10 + i]
            md.id, md.name = 10 + i, str(i)
            ev = sl.events.add()
            ev.metadata_id, ev.offset_ps, ev.duration_ps = 10 + i, base, 15_000_000
    path.write_bytes(space.SerializeToString())
    return path


def test_nesting_self_time_and_outer_ops(tmp_path):
    res = roofline.analyze(roofline.read(_tpu_space(tmp_path / "t.xplane.pb", steps=False)))
    w, f = _row(res, "7", "while.1"), _row(res, "7", "fusion.1")
    assert f["occurrences"] == 4 and _close(f["duration_s"], 12e-6)
    assert _close(w["total_time_s"], 20e-6) and _close(w["duration_s"], 8e-6)  # 2 × (10 - 3 - 3) µs
    assert f["flop_tensor"] == 4000 and f["dram_bytes"] == 2000 and f["onchip_read_bytes"] == 200
    assert w["flop_tensor"] == 0 and w["dram_bytes"] == 0 and w["xla_flop"] == 0  # its work is in fusion.1
    assert "root" not in set(res["hlo_op"])  # symbol 0: the module itself, not an op
    # device time 33 µs (0 .. 33): ops 20 µs self, IDLE the rest (the roots included)
    assert _close(res["duration_s"].sum(), 33e-6)
    assert _close(res.loc[res["hlo_op"] == "IDLE", "duration_s"].sum(), 13e-6)
    assert (res["peak_flop_per_s_tensor"] == 100e12).all() and (res["peak_dram_bytes_per_s"] == 1e12).all()


def test_steps_give_per_step_rows(tmp_path):
    res = roofline.analyze(roofline.read(_tpu_space(tmp_path / "s.xplane.pb", steps=True)))
    assert set(res["nvtx_range"].dropna()) == {"step 0", "step 1"}
    per = aggregate(res, by="nvtx").set_index("nvtx")
    assert set(per.index) == {"step 0", "step 1", "(none)"}
    assert _close(per.loc["step 0", "duration_s"], 15e-6) and _close(per.loc["step 1", "duration_s"], 15e-6)
    assert per.loc["step 0", "flop_tensor"] == 2000
    assert _close(aggregate(res, by="program")["duration_s"].iloc[0], 35e-6)  # 0 .. 35 µs with the steps


def test_bad_inputs(tmp_path):
    good = _xplane("jax0.8_rocm_mi300x_gemm").read_bytes()
    (tmp_path / "cut.xplane.pb").write_bytes(good[: len(good) // 2])
    (tmp_path / "text.xplane.pb").write_text("hello, not a profile\n")
    (tmp_path / "empty.xplane.pb").write_bytes(b"")
    (tmp_path / "json.xplane.pb").write_bytes(gzip.compress(b'{"traceEvents": []}'))
    with pytest.raises(CorruptReportError, match="cut.xplane.pb"):
        roofline.read(tmp_path / "cut.xplane.pb")
    with pytest.raises((CorruptReportError, FormatMismatchError), match="text.xplane.pb"):
        roofline.read(tmp_path / "text.xplane.pb")
    with pytest.raises(EmptyInputError):
        roofline.read(tmp_path / "empty.xplane.pb")
    with pytest.raises(FormatMismatchError, match="holds gzip data"):
        roofline.read(tmp_path / "json.xplane.pb")
    space = xplane_pb2.XSpace()
    host = space.planes.add()
    host.name = "/host:CPU"
    host.lines.add().events.add().duration_ps = 5
    (tmp_path / "cpu.xplane.pb").write_bytes(space.SerializeToString())
    with pytest.raises(NoKernelsError, match="CPU-only"):
        roofline.read(tmp_path / "cpu.xplane.pb")
    # TensorFlow ops, not XLA: timed kernel rows now (test_roofs.py), no error
    (tmp_path / "cpu.trace.json").write_text(json.dumps({"displayTimeUnit": "ns", "metadata": {"highres-ticks": True},
                                                         "traceEvents": [{"ph": "M", "name": "process_name", "pid": 1,
                                                                          "args": {"name": "/host:CPU"}}]}))
    assert sniff(tmp_path / "cpu.trace.json") == "xprof-trace"
    with pytest.raises(NoKernelsError, match="CPU-only"):
        roofline.read(tmp_path / "cpu.trace.json")


def test_cli_analyze_and_program(tmp_path):
    path = _xplane("jax0.8_rocm_mi300x_gemm")
    run = [sys.executable, "-m", "roofline.cli", "analyze", str(path)]
    out = subprocess.run(run + ["--by", "program"], capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    assert "1 program row(s) on MI300X" in out.stdout and "compute-bound" in out.stdout
    out = subprocess.run(run + ["--format", "json", "--top", "3"], capture_output=True, text=True, timeout=300, check=False)
    recs = json.loads(out.stdout)["rows"]
    assert out.returncode == 0 and recs[0]["kernel_name"] == "IDLE"
    assert recs[1]["kernel_name"] == "jit_dot(49)/custom-call.1" and recs[1]["bound"] == "compute-bound"


def test_generated_module_has_no_runtime_pin():
    # protoc 25 gencode: no runtime version check, so protobuf >= 4.25 (the pin) loads it
    text = Path(xplane_pb2.__file__).read_text()
    assert "_runtime_version" not in text and "Protobuf Python Version: 4.25" in text
    assert xplane_pb2.DESCRIPTOR.package == "roofline.xplane"


def test_cli_tpu_xplane_with_device_plane_peaks_exits_0():
    path = _xplane("jax_tpuv6e-4chip_host-offload-allreduce")
    out = subprocess.run([sys.executable, "-m", "roofline.cli", "analyze", str(path), "--by", "program"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr  # its peaks come from the profile, not the spec table


def _gpu_space(path: Path) -> Path:
    """A GPU plane whose kernels carry hlo_op and hlo_module but no program_id (TensorFlow XLA clusters)."""
    space = xplane_pb2.XSpace()
    plane = space.planes.add()
    plane.name = "/device:GPU:0"
    for name, v in (("device_vendor", "Nvidia"), ("compute_cap_major", 9), ("compute_cap_minor", 0),
                    ("core_count", 7), ("memory_size", 2**30), ("clock_rate", 1_000_000)):
        _stat(plane, plane, name, **({"str_value": v} if isinstance(v, str) else {"int64_value": v}))
    md = plane.event_metadata[1]
    md.id, md.name = 1, "fusion_kernel"
    line = plane.lines.add()
    line.id, line.name, line.timestamp_ns = 1, "Stream #7(Kernel)", 1000
    for off, dur, module, op in ((0, 2_000_000, "cluster_1", "fusion.1"), (3_000_000, 2_000_000, "cluster_1", "fusion.1"),
                                 (6_000_000, 1_000_000, "cluster_2", "fusion.1"), (8_000_000, 1_000_000, None, None)):
        ev = line.events.add()
        ev.metadata_id, ev.offset_ps, ev.duration_ps = 1, off, dur
        if op:
            _stat(plane, ev, "hlo_op", str_value=op)
            _stat(plane, ev, "hlo_module", str_value=module)
    path.write_bytes(space.SerializeToString())
    return path


def test_gpu_ops_without_program_id_keep_their_times(tmp_path):
    res = roofline.read(_gpu_space(tmp_path / "g.xplane.pb"))  # through the registry: xprof runs and finds no HLO
    ops = res[res["hlo_op"] != "IDLE"].set_index("kernel_name")
    assert set(ops.index) == {"cluster_1/fusion.1", "cluster_2/fusion.1"}  # same op name, two modules: two rows
    assert ops.loc["cluster_1/fusion.1", "occurrences"] == 2 and _close(ops.loc["cluster_1/fusion.1", "duration_s"], 4e-6)
    assert ops["program_id"].isna().all() and ops["flop_fp32"].isna().all()
    assert ops["flop_fp32_source"].str.contains("carry no program_id").all()
    idle = res[res["hlo_op"] == "IDLE"].iloc[0]  # 0 .. 9 µs on the device, 5 µs of ops
    assert _close(idle["duration_s"], 4e-6) and "1 device event(s) that are not XLA ops" in idle["flags"]
    assert res["device_name"].iloc[0] == "NVIDIA GPU cc9.0 7 SMs 1 GiB"  # not in the spec table: named by its caps


def test_tpu_op_keys_on_events_and_sparsecore_planes(tmp_path):
    space = xplane_pb2.XSpace()
    space.ParseFromString(_tpu_space(tmp_path / "t.xplane.pb", steps=False).read_bytes())
    plane = space.planes[0]
    ids = {m.name: k for k, m in plane.stat_metadata.items()}
    for md in plane.event_metadata.values():  # move program_id/symbol_id from the metadata to each event
        keep = [s for s in md.stats if s.metadata_id not in (ids["program_id"], ids["symbol_id"])]
        sym = next(s.int64_value for s in md.stats if s.metadata_id == ids["symbol_id"])
        del md.stats[:]
        md.stats.extend(keep)
        for ev in plane.lines[0].events:
            if ev.metadata_id == md.id:
                _stat(plane, ev, "program_id", int64_value=9)
                _stat(plane, ev, "symbol_id", int64_value=sym)
    sc = space.planes.add()  # a SparseCore plane: XProf counts its work inside the TensorCore ops
    sc.name = "/device:TPU:0 SparseCore 0"
    ln = sc.lines.add()
    ln.name = "Sparse Core Ops"
    ln.events.add().duration_ps = 10**9
    (tmp_path / "e.xplane.pb").write_bytes(space.SerializeToString())
    res = roofline.read(tmp_path / "e.xplane.pb")
    f = _row(res, "9", "fusion.1")
    assert f["occurrences"] == 4 and f["flop_tensor"] == 4000
    assert "root" not in set(res["hlo_op"])
    assert roofline.schema.get_provenance(res)[0]["device_planes"] == ["/device:TPU:0"]
    assert _close(res["duration_s"].sum(), 33e-6)


def test_flags_explain_points_above_a_roof(frames):
    ew = frames["jax0.8_rocm_mi300x_elementwise"]
    sin = _row(ew, "13", "loop_convert_fusion")
    assert sin["over_roof"] and "668 FLOP per element" in sin["flags"]  # XLA's cycle-cost units, kept as given
    assert pd.isna(_row(ew, "11", "loop_convert_fusion")["flags"])  # an add: 12 FLOP per element, no caveat
    tpu = frames["jax_tpuv6e-4chip_host-offload-allreduce"]
    starts = tpu[tpu["hlo_category"] == "copy-start"]
    assert len(starts) == 6 and starts["flags"].str.startswith("async op").all()
    assert tpu.loc[tpu["over_roof"].fillna(False).to_numpy(), "flags"].str.startswith("async op").all()


def test_gpu_named_from_plane_capabilities():
    def caps(vendor, cc, cores, gib, bw, mhz):
        major, minor = cc.split(".")
        return {"device_vendor": vendor, "compute_cap_major": int(major), "compute_cap_minor": int(minor),
                "core_count": cores, "memory_size": gib * 2**30, "memory_bandwidth": bw, "clock_rate": mhz * 1000}

    name = xplane.device_name
    assert name(caps("Nvidia", "9.0", 132, 80, 3.352e12, 1980), "/device:GPU:0") == "H100 SXM"
    # A100 80 GB parts differ only in bandwidth: the plane's (memory clock x bus width) tells them apart
    assert name(caps("Nvidia", "8.0", 108, 80, 1.935e12, 1410), "/device:GPU:0") == "A100 PCIe 80GB"
    assert name(caps("Nvidia", "8.0", 108, 80, 2.039e12, 1410), "/device:GPU:0") == "A100 SXM4 80GB"
    # L40 looks like L40S but for a 1.2% lower clock: the clock tells them apart (L40 joined the table in issue 17)
    assert name(caps("Nvidia", "8.9", 142, 45, 864e9, 2490), "/device:GPU:0") == "L40"
    assert name(caps("Nvidia", "8.9", 142, 45, 864e9, 2520), "/device:GPU:0") == "L40S"
    # a part the table does not hold is named by its capabilities, never guessed
    assert name(caps("Nvidia", "8.9", 142, 45, 864e9, 2300), "/device:GPU:0") == "NVIDIA GPU cc8.9 142 SMs 45 GiB"
    # ROCm reports half of MI300X's bandwidth: matched on its capabilities and memory instead
    assert name(caps("AMD", "9.4", 304, 192, 2.6624e12, 2100), "/device:GPU:0") == "MI300X"


def test_xprof_trace_events_with_unhashable_ids_are_dropped_not_a_crash(tmp_path):
    """Damaged trace-viewer JSON: an event whose pid is a list is skipped; the rest reads as before."""
    src = shared("traces/derived/jax0.8_rocm_mi300x_gemm.xprof-trace_viewer.json.gz")
    doc = json.loads(gzip.decompress(src.read_bytes()))
    before = roofline.read(src)
    x = next(e for e in doc["traceEvents"] if e.get("ph") == "X" and "hlo_op" in e.get("args", {}))
    meta = next(e for e in doc["traceEvents"] if e.get("ph") == "M")
    doc["traceEvents"] += [{**x, "tid": [1, 2]}, {**x, "pid": {"a": 1}}, {**meta, "pid": [3]}]
    p = tmp_path / "damaged.xprof-trace_viewer.json"
    p.write_text(json.dumps(doc))
    after = roofline.read(p)
    cols = [c for c in before.columns if c != "source_file"]
    pd.testing.assert_frame_equal(before[cols], after[cols])


def test_typed_frame_of_the_rows_is_the_conformed_generic_frame(tmp_path):
    """The rows built into a frame column by column give what a generic frame conformed to the schema gave: the
    canonical columns, then the XLA ones outside it with their inferred types (keys missing from IDLE rows,
    program ids all missing)."""
    from roofline.ingest.xla import xplane_decode, xprof_trace
    from roofline.schema import conform_kernels

    tpu = _xplane("jax_tpuv6e-4chip_host-offload-allreduce")
    space = xplane_decode.load(tpu)
    cases = [xplane.build_rows(xplane_decode.device_planes(tpu, space), xplane_decode.module_names(space), None,
                               False, None)]
    gpu = _gpu_space(tmp_path / "g.xplane.pb")
    cases.append(xplane.build_rows(xplane_decode.device_planes(gpu, xplane_decode.load(gpu)), {}, None, True,
                                   xplane.SKIPPED))
    tv = shared("traces/derived/jax0.8_rocm_mi300x_gemm.xprof-trace_viewer.json.gz")
    cases.append(xplane.build_rows(xprof_trace._planes(tv, xprof_trace._load(tv)), {}, None, False, "timing only"))
    for rows in cases:
        for i, r in enumerate(rows):
            r["kernel_id"] = i
        expected = conform_kernels(pd.DataFrame.from_records(rows))
        assert len(expected.columns) > len(roofline.schema.kernel_columns())
        pd.testing.assert_frame_equal(xplane.frame_of(rows), expected, check_exact=True)


def test_core_count_past_64_bits_is_damage_not_a_missing_sm_count(tmp_path):
    space = xplane_pb2.XSpace()
    space.ParseFromString(_gpu_space(tmp_path / "g.xplane.pb").read_bytes())
    plane = space.planes[0]
    core = next(k for k, m in plane.stat_metadata.items() if m.name == "core_count")
    next(s for s in plane.stats if s.metadata_id == core).uint64_value = 2**64 - 1
    (tmp_path / "big.xplane.pb").write_bytes(space.SerializeToString())
    with pytest.raises(CorruptReportError, match="big.xplane.pb"):
        roofline.read(tmp_path / "big.xplane.pb")
