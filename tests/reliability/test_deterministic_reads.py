"""Deterministic reads: the same trace gives the same frame, read again in one process or in another.

The Kineto reader's graph join keyed its state on ``id(op) ^ hash(corr)``, which collides: the campaign's
vLLM piecewise-graph trace read 8 times in one process gave 327 rows 4 times, 323 twice, 319 twice. The
state is keyed by values now, and no ``id()`` is left in the package (checked below by its AST).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import roofline
from conftest import REPO, SHARED, shared

_TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".xplane.pb", ".xprof-trace_viewer.json.gz")


def shared_traces() -> list[Path]:
    """Every trace of the shared fixtures (Kineto, xplane, XProf), capture traces included."""
    shared("traces")
    return sorted(p for p in (SHARED / "traces").rglob("*") if p.name.endswith(_TRACE_SUFFIXES)
                  and "reference" not in p.parts)


_CHILD = textwrap.dedent("""
    import hashlib, json, sys
    import roofline
    from roofline.errors import RooflineError

    def digest(path):
        try:
            frame = roofline.read(path)
        except RooflineError as exc:
            return type(exc).__name__
        return f"{len(frame)} " + hashlib.sha256(frame.to_csv(index=False).encode()).hexdigest()

    out = {}
    for path in sys.argv[2:]:
        out[path] = [digest(path) for _ in range(int(sys.argv[1]))]
    print(json.dumps(out))
""")


def test_every_shared_trace_reads_the_same_twice_in_a_process_and_across_processes():
    """Two processes with different string-hash seeds, at once: one reads every trace twice, one once."""
    paths = [str(p) for p in shared_traces()]
    assert len(paths) >= 25
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    runs = [subprocess.Popen([sys.executable, "-c", _CHILD, str(n), *paths], stdout=subprocess.PIPE, text=True,
                             env={**env, "PYTHONHASHSEED": str(seed)}) for n, seed in ((2, 1), (1, 2))]
    twice, once = (json.loads(r.communicate(timeout=300)[0]) for r in runs)
    assert all(r.returncode == 0 for r in runs)
    differ = [p for p in paths if len({*twice[p], *once[p]}) != 1]
    assert not differ, {p: (twice[p], once[p]) for p in differ}
    assert sum(d[0][0].isdigit() for d in twice.values()) >= 20  # frames, not only errors, were compared


def _write(path: Path, events: list[dict]) -> None:
    props = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}]
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": props}))


def test_two_launches_of_one_graph_give_each_captured_op_once_per_launch(tmp_path):
    """Each (captured op, graph launch) is one row: the ops' kernels are neither merged across launches
    nor split (what a key collision or a per-object key did at random)."""
    rt = {"ph": "X", "cat": "cuda_runtime", "pid": 1, "tid": 1, "dur": 1}
    events = []
    for corr, t in ((7, 10), (8, 100)):
        events += [{**rt, "name": "cudaGraphLaunch", "ts": t, "args": {"correlation": corr}}]
        events += [{"ph": "X", "cat": "kernel", "name": n, "ts": t + 10 + 5 * i, "dur": 2, "pid": 0, "tid": 7,
                    "args": {"correlation": corr, "device": 0}} for i, n in enumerate(("gemm_k", "add_k"))]
    replay = tmp_path / "run.pt.trace.json"
    _write(replay, events)
    (tmp_path / "capture_traces").mkdir()
    op = {"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "dur": 5}
    _write(tmp_path / "capture_traces" / "cap.pt.trace.json", [
        {**rt, "name": "cudaStreamBeginCapture", "ts": 1},
        {**op, "name": "aten::mm", "ts": 2, "args": {"External id": 1, "Input Dims": [[64, 32], [32, 16]],
                                                    "Input type": ["float", "float"]}},
        {**rt, "name": "cudaLaunchKernel", "ts": 3, "args": {"External id": 1, "kernel": "gemm_k", "correlation": 1}},
        {**op, "name": "aten::add", "ts": 8, "args": {"External id": 2, "Input Dims": [[64, 16], [64, 16], []],
                                                     "Input type": ["float", "float", "Scalar"]}},
        {**rt, "name": "cudaLaunchKernel", "ts": 9, "args": {"External id": 2, "kernel": "add_k", "correlation": 2}},
        {**rt, "name": "cudaStreamEndCapture", "ts": 20}])
    frames = [roofline.read(replay) for _ in range(3)]
    k = frames[0]
    assert sorted(k["kernel_name"]) == ["aten::add", "aten::add", "aten::mm", "aten::mm"]
    assert (k["attribution"] == "graph replay: captured op").all()
    assert all(f.equals(k) for f in frames[1:])


def test_no_id_keyed_state_in_the_package():
    """``id()`` of an object is reused once it is freed and differs between runs: never a key."""
    calls = []
    for path in sorted((REPO / "src" / "roofline").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "id":
                calls.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not calls

