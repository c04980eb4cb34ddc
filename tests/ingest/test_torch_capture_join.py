"""Graph replays joined to their capture beyond the plain case (issue 31): graphs launched inside a
torch.compile region, replays a kernel short of their capture, the capture chosen by batch size, the capture
folder's index, and SGLang's paged attention priced from the iteration annotation."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

import roofline
from conftest import shared
from roofline.ingest.torch.graphs import capture_index
from roofline.pipeline import captures_given

PROPS = [{"id": 0, "name": "AMD Instinct MI300X", "computeMajor": 9, "computeMinor": 4, "numSms": 304}]
OP = {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1}
RT = {"ph": "X", "cat": "cuda_runtime", "pid": 1, "tid": 1, "dur": 1}
FLOPS = ["flop_fp64", "flop_fp32", "flop_fp16", "flop_tensor"]


def _write(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": PROPS}))
    return path


def _capture(path: Path, m: int, extra: bool = False) -> Path:
    """A capture trace: an mm [m, 32] x [32, 16] then an add, each launching one kernel; ``extra``: a third
    kernel captured after them (launched by another mm)."""
    ev = [{**RT, "name": "hipStreamBeginCapture", "ts": 1},
          {**OP, "name": "aten::mm", "ts": 2, "dur": 5, "args": {"External id": 1, "Input Dims": [[m, 32], [32, 16]],
                                                                "Input type": ["float", "float"]}},
          {**RT, "name": "hipLaunchKernel", "ts": 3, "args": {"External id": 1, "kernel": "gemm_k", "correlation": 1}},
          {**OP, "name": "aten::add", "ts": 8, "dur": 5, "args": {"External id": 2, "Input Dims": [[m, 16], [m, 16], []],
                                                                 "Input type": ["float", "float", "Scalar"]}},
          {**RT, "name": "hipLaunchKernel", "ts": 9, "args": {"External id": 2, "kernel": "add_k", "correlation": 2}}]
    if extra:
        ev += [{**OP, "name": "aten::mm", "ts": 14, "dur": 3, "args": {"External id": 3, "Input Dims": [[m, 16], [16, 8]],
                                                                      "Input type": ["float", "float"]}},
               {**RT, "name": "hipLaunchKernel", "ts": 15, "args": {"External id": 3, "kernel": "tail_k", "correlation": 3}}]
    return _write(path, ev + [{**RT, "name": "hipStreamEndCapture", "ts": 30}])


def _compiled_replay(path: Path, annotation: str | None = None) -> Path:
    """A torch.compile replay: a ``Torch-Compiled Region`` op whose hipGraphLaunch (same External id) runs the
    graph's kernels gemm_k, add_k; optionally inside an engine's step annotation."""
    ev = [{**OP, "name": "Torch-Compiled Region: 0/0", "ts": 5, "dur": 50, "args": {"External id": 9}},
          {**RT, "name": "hipGraphLaunch", "ts": 10, "dur": 5, "args": {"External id": 9, "correlation": 7}},
          {"ph": "X", "cat": "kernel", "name": "gemm_k", "ts": 20, "dur": 10, "pid": 0, "tid": 7,
           "args": {"correlation": 7, "device": 0}},
          {"ph": "X", "cat": "kernel", "name": "add_k", "ts": 31, "dur": 2, "pid": 0, "tid": 7,
           "args": {"correlation": 7, "device": 0}}]
    if annotation:
        ev.append({"ph": "X", "cat": "user_annotation", "name": annotation, "ts": 1, "dur": 100, "pid": 1, "tid": 1})
    return _write(path, ev)


def test_a_graph_launched_inside_a_compiled_region_is_joined_and_a_missing_kernel_is_reported(tmp_path):
    """The replay's kernels have an owning op (the compiled region, no shapes): they are joined to the capture
    all the same. The capture holds a third kernel the replay did not run: aligned by name, the two replayed
    kernels take their ops (2·64·32·16 and 64·16 FLOP), the note names the one left out."""
    replay = _compiled_replay(tmp_path / "run.pt.trace.json")
    (tmp_path / "capture_traces").mkdir()
    _capture(tmp_path / "capture_traces" / "cap.pt.trace.json", 64, extra=True)
    k = roofline.read(replay).sort_values("kernel_id")
    assert list(k["kernel_name"]) == ["aten::mm", "aten::add"]
    assert (k["attribution"] == "graph replay: captured op").all()
    assert k["flop_fp32"].tolist() == [2 * 64 * 32 * 16, 64 * 16]
    [note] = k.attrs["roofline.provenance"][0]["graph_replays"]
    assert "2 kernels joined to cap.pt.trace.json" in note
    assert "2 of 2 replayed, 3 captured" in note and "captured, not replayed: 1 (tail_k)" in note


def test_a_compiled_region_without_its_capture_says_to_pass_it_not_to_record_shapes(tmp_path):
    k = roofline.read(_compiled_replay(tmp_path / "run.pt.trace.json"))
    assert len(k) == 1 and k["attribution"].iloc[0] == "op: graph replay (no capture trace joined)"
    why = k["flop_fp32_source"].iloc[0]
    assert "replays a CUDA/HIP graph" in why and "--capture" in why and "record_shapes" not in why


def test_the_capture_of_the_smallest_batch_size_holding_the_replays_is_chosen(tmp_path):
    """Two captures with the same kernels, batch sizes 8 and 32 (the folder's index says so); a step of 30
    requests replays the graph captured for 32 (engines pad a batch up): the mm is [32, 32] x [32, 16]."""
    replay = _compiled_replay(tmp_path / "run.pt.trace.json", "step[DECODE bs=30]")
    caps = tmp_path / "caps"
    caps.mkdir()
    _capture(caps / "bs_8_rank0.json.gz", 8)
    _capture(caps / "bs_32_rank0.json.gz", 32)
    (caps / "execution_details.json").write_text(json.dumps(
        [{"file": "bs_8_rank0.json.gz", "batch_size": 8, "mode": "FULL"},
         {"file": "bs_32_rank0.json.gz", "batch_size": 32, "mode": "FULL"}]))
    with captures_given([caps]):  # --capture FOLDER
        k = roofline.read(replay).sort_values("kernel_id")
    assert k["flop_fp32"].tolist() == [2 * 32 * 32 * 16, 32 * 16]
    assert "joined to bs_32_rank0.json.gz" in k.attrs["roofline.provenance"][0]["graph_replays"][0]
    with captures_given([caps]):  # a step of 4 requests: the graph of 8
        k = roofline.read(_compiled_replay(tmp_path / "small.pt.trace.json", "step[DECODE bs=4]"))
    assert k.sort_values("kernel_id")["flop_fp32"].tolist() == [2 * 8 * 32 * 16, 8 * 16]


def test_the_capture_folder_index_is_recognised_and_not_read_as_a_profile(tmp_path):
    caps = shared("traces/capture_traces/torch_rocm7.2_mi300x_sglang-qwen3-8b_decode_hipgraph")
    assert capture_index(caps / "execution_details.json") == {"bs_32_rank0.json.gz": 32}
    assert capture_index(shared("traces/torch_h100_cuda-sync-unittest_uncompressed.pt.trace.json")) is None
    from roofline.pipeline import expand

    inputs = expand([caps.parent])
    assert not [p for p in inputs.files if p.name == "execution_details.json"]
    assert sorted(p.name for p in inputs.skipped) == ["execution_details.json"] * 2
    from conftest import cli as _cli

    res = _cli("analyze", str(caps.parent), "--top", "1")
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("execution_details.json: the capture folder's index") == 2


def test_sglang_paged_attention_is_priced_from_the_iteration_annotation():
    """SGLang Qwen3-8B decode, 32 requests, Σsk = 32,785 (execute_32_…_generation_32(sq32sk32785…)): per layer
    H_Q·2·Σsq·sk·(Dqk+Dv) = 32·2·32785·256 = 537,149,440 FLOP; bytes q + o (32·32·128·2 B each) and the cache's
    k, v of 32,785 tokens at 8 KV heads: 2·262,144 + 32785·8·256·2 = 134,811,648 B. 36 layers."""
    rel = "traces/capture_traces/torch_rocm7.2_mi300x_sglang-qwen3-8b_decode_hipgraph/"
    with captures_given([shared(rel)]):
        k = roofline.read(shared("traces/torch_rocm7.2_mi300x_sglang-qwen3-8b_decode_hipgraph.pt.trace.json.gz"))
    attn = k[k["kernel_name"] == "sglang_profiler::attention_paged_attention_ragged_100"]
    assert len(attn) == 36
    assert (attn["flop_tensor"] == 32 * 2 * 32785 * 256).all() and (attn["flop_tensor"] == 537_149_440).all()
    assert (attn["dram_bytes"] == 2 * 32 * 32 * 128 * 2 + 32785 * 8 * 256 * 2).all()
    assert (attn["dram_bytes"] == 134_811_648).all() and (attn["tensor_path"] == "bf16").all()
    priced = k[FLOPS].notna().all(axis=1) & k["dram_bytes"].notna()
    assert k.loc[priced, "duration_s"].sum() >= 0.99 * k["duration_s"].sum()


#: TraceLens @ 171dd74721ca (MIT): the FLUX replay is 3.9 MB, not copied into the shared fixtures
FLUX = "tests/traces/inference/xdit_flux.1_aiter_sage"


def _tracelens() -> Path:
    root = os.environ.get("ROOFLINE_TRACELENS")
    if not root or not (Path(root) / FLUX / "profile_trace_rank_0.json.gz").is_file():
        pytest.skip("set ROOFLINE_TRACELENS to a checkout of AMD-AGI/TraceLens @ 171dd74721ca (its FLUX replay "
                    f"{FLUX}/profile_trace_rank_0.json.gz and perf_csvs/GEMM.csv)")
    return Path(root) / FLUX


def test_the_flux_torch_compile_replay_prices_every_captured_gemm_as_tracelens():
    """xDiT FLUX.1 with aiter sage attention: 4 replays of a torch.compile graph inside `Torch-Compiled Region`
    ops (1,566 kernels each, 1,567 captured). Joined, every GEMM TraceLens reports with kernels (30 rows) has as
    many rows here with FLOPs and bytes within 0.5%; TraceLens' 31st row, the addmm that was captured but not
    replayed (no kernels), is the note's one kernel left out; ≥ 70% of GPU time is priced."""
    folder = _tracelens()
    with captures_given([shared("traces/capture_traces/torch_rocm_mi300x_xdit-flux.1-aiter-sage_infer")]):
        k = roofline.read(folder / "profile_trace_rank_0.json.gz")
    notes = k.attrs["roofline.provenance"][0]["graph_replays"]
    assert len(notes) == 4 and all("1566 of 1566 replayed, 1567 captured" in n for n in notes)
    flop = k[FLOPS].sum(axis=1, min_count=1)
    rows = list(csv.DictReader((folder / "perf_csvs" / "GEMM.csv").open()))
    with_kernels = [r for r in rows if float(r["Kernel Time (µs)_sum"]) > 0]
    assert len(with_kernels) == 30
    for r in with_kernels:
        dims = json.dumps(json.loads(r["Input Dims_first"]), separators=(",", ":"))
        mine = (k["kernel_name"] == r["name"]) & (k["op_input_dims"] == dims)
        assert mine.sum() == int(r["name_count"]), (r["name"], dims)
        assert flop[mine].to_numpy() == pytest.approx(float(r["GFLOPS_first"]) * 1e9, rel=0.005)
        assert k.loc[mine, "dram_bytes"].to_numpy() == pytest.approx(float(r["Data Moved (MB)_first"]) * 2**20, rel=0.005)
    priced = k[FLOPS].notna().all(axis=1) & k["dram_bytes"].notna()
    assert k.loc[priced, "duration_s"].sum() >= 0.70 * k["duration_s"].sum()
