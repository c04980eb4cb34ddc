#!/usr/bin/env python
"""Benchmark PyTorch trace ingest against the JSON parse alone and against HTA.

Times, best and median of ``--repeat`` runs after a warm-up, for one trace (default: the 216k-event
V100 trace of the fixtures):

* floor: read the file, gunzip, ``orjson.loads`` with the cyclic GC off (what any reader must do);
* roofline: ``roofline.ingest.torch_trace.read`` (parse, link, model FLOPs/bytes, typed frame);
* HTA: Holistic Trace Analysis ``TraceAnalysis(trace_dir=...)`` on a copy of the file, run in its
  own virtualenv (``--hta-python``; HTA pins pandas/numpy versions of its own), timed inside it.

Targets (issue 5): roofline within 2× of the floor, and at least 5× faster than HTA.

    .venv/bin/python bench/bench_trace.py [--trace PATH] [--repeat 5] [--hta-python /tmp/hta-venv/bin/python]
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import orjson

from roofline.ingest import torch_trace
from roofline.ingest.common import json_bytes
from roofline.ingest.torch_trace_decode import decode

DEFAULT = Path(__file__).resolve().parents[2] / "shared/fixtures/traces/torch_v100_2rank-nccl_rank1_large216k.pt.trace.json.gz"
HTA_SNIPPET = """
import sys, time, json, statistics
from hta.trace_analysis import TraceAnalysis
d, n = sys.argv[1], int(sys.argv[2])
TraceAnalysis(trace_dir=d)  # warm-up (imports, caches)
ts = []
for _ in range(n):
    t0 = time.perf_counter(); TraceAnalysis(trace_dir=d); ts.append(time.perf_counter() - t0)
print(json.dumps(ts))
"""


def floor(path: Path) -> None:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    gc.disable()
    try:
        orjson.loads(raw)
    finally:
        gc.enable()


def timed(fn, repeat: int) -> list[float]:
    fn()
    out = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--hta-python", default=None, help="python of a virtualenv with HolisticTraceAnalysis")
    args = ap.parse_args()
    results = {"floor (gunzip + orjson.loads)": timed(lambda: floor(args.trace), args.repeat),
               "roofline torch_trace.read": timed(lambda: torch_trace.read(args.trace), args.repeat)}
    # where roofline's time goes: the same stages read() runs, timed one by one (GC off, as in read())
    raw = json_bytes(args.trace)
    results["  of which: gunzip"] = timed(lambda: json_bytes(args.trace), args.repeat)
    gc.disable()
    try:
        results["  of which: typed decode (msgspec)"] = timed(lambda: decode(args.trace, raw), args.repeat)
        events, top = decode(args.trace, raw)
        results["  of which: scan, link, rows, frame"] = timed(
            lambda: torch_trace._build(args.trace, raw, events, top), args.repeat)
    finally:
        gc.enable()
    if args.hta_python:
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(args.trace, Path(d) / args.trace.name)
            out = subprocess.run([args.hta_python, "-c", HTA_SNIPPET, d, str(args.repeat)], capture_output=True,
                                 text=True, check=True)
            results["HTA TraceAnalysis load"] = json.loads(out.stdout.strip().splitlines()[-1])
    base = min(results["roofline torch_trace.read"])
    print(f"{args.trace.name}: {len(torch_trace.read(args.trace))} rows")
    print(f"{'case':34s} {'best s':>8s} {'median s':>9s} {'roofline ÷ case (best)':>24s}")
    for name, ts in results.items():
        print(f"{name:34s} {min(ts):8.3f} {statistics.median(ts):9.3f} {base / min(ts):24.2f}")


if __name__ == "__main__":
    main()
