#!/usr/bin/env python
"""Benchmark PyTorch trace ingest against the JSON parse alone and against HTA.

Times, best and median of ``--repeat`` runs after a warm-up, for each trace (default: the two large
fixture traces, the 216k-event V100 and the 132k-event H100 OWLv2 trace), all in one run:

* floor: read the file, gunzip, ``orjson.loads`` with the cyclic GC off (what any reader must do);
* roofline: ``roofline.ingest.torch.trace.read`` + the roofs stage (parse, link, model FLOPs/bytes, typed frame, spec roofs);
  floor and roofline alternate (floor, roofline, floor, ...) so that a load change on a shared
  machine hits both;
* the stages of roofline's time (gunzip, typed decode, scan/link/rows/frame), each timed alone, and the
  gunzip and decode as read() runs them: each piece (256 KB) gunzipped and decoded in turn;
* peak memory: a fresh child process imports roofline, reads the trace once and reports its
  ``VmHWM`` from /proc/self/status (``ru_maxrss`` would include the parent's, inherited across
  fork+exec), against the decompressed JSON size; the child's VmHWM right after the imports is
  reported too, so the read's own share is visible;
* with ``--ab-base DIR`` (the ``src`` of another commit, e.g. ``git archive 7c91ebd src | tar -x -C
  /tmp/base``): that commit's reader and this one, each in a worker process of its own with its
  commit's ``src`` first on the path, alternating with the floor (a third worker) in CPU time and wall
  time (on a shared machine a single run's ratio is noisy; an alternating A/B is what tells a change
  from the load);
* HTA: Holistic Trace Analysis ``TraceAnalysis(trace_dir=...)`` on a copy of the file, run in its
  own virtualenv (``--hta-python``; HTA pins pandas/numpy versions of its own), timed inside it.

* with ``--decode-floor`` (issue 36) only: the decode floor, ISA-L's gunzip of the whole file and a msgspec decode
  of 5 fields per event (ph, cat, name, ts, dur) with the cyclic GC off, against ``read`` + the roofs stage,
  alternating in this warm process, in CPU seconds (``time.process_time``: on a shared machine wall time is the
  neighbours' too); then ``read``'s CPU seconds in ``--repeat`` fresh processes (the first read after the
  imports, and the process's whole CPU with the imports); and HTA when ``--hta-python`` is given.

Targets: issue 16, roofline within 1.2x of the floor on the 216k-event trace; issue 23, <= 0.8x the
floor and >= 10x faster than HTA on both, peak memory <= 3x the decompressed JSON; issue 36, ``read`` <= 2x the
decode floor in one warm process, <= 0.30 s in a fresh one, >= 14x HTA.

    .venv/bin/python bench/bench_trace.py [--trace PATH ...] [--repeat 5] [--hta-python /tmp/hta-venv/bin/python]
        [--ab-base /tmp/base/src] [--decode-floor]
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import orjson

from roofline.hardware.attach import attach_roofs
from roofline.ingest.common import json_bytes
from roofline.ingest.torch import stream as torch_trace_stream
from roofline.ingest.torch import trace as torch_trace
from roofline.ingest.torch.decode import decode

TRACES = Path(__file__).resolve().parents[2] / "shared/fixtures/traces"
DEFAULT = [TRACES / "torch_v100_2rank-nccl_rank1_large216k.pt.trace.json.gz",
           TRACES / "torch2.6_h100_owlv2-large_infer_flops-flag_132k.pt.trace.json.gz"]
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
#: run in a fresh interpreter: VmHWM (peak resident set) after the imports, then after one read
MEMORY_SNIPPET = """
import sys
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
try:  # the package layout (roofline.ingest.torch), its roofs attached by the pipeline's stage
    from roofline.ingest.torch import trace as torch_trace
    from roofline.hardware.attach import attach_roofs
    read = lambda p: attach_roofs(torch_trace.read(p))  # noqa: E731
except ImportError:  # a commit before the house (issue 30): the reader attached the roofs itself
    from roofline.ingest import torch_trace
    read = torch_trace.read
import roofline.hardware.specs  # (imported by the read; counted as imports)
before = hwm()
frame = read(sys.argv[1])
print(before, hwm(), len(frame))
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


def alternating(fns: dict[str, object], repeat: int) -> dict[str, list[float]]:
    """Each function once as a warm-up, then ``repeat`` rounds of one call of each, in turn."""
    for fn in fns.values():
        fn()  # type: ignore[operator]
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()  # type: ignore[operator]
            out[name].append(time.perf_counter() - t0)
    return out


#: an A/B side: a worker process with one commit's ``src`` first on its path, timing a read (or the
#: floor) each time it reads a line, and answering "cpu wall" seconds
AB_WORKER = """
import gc, gzip, sys, time
sys.path.insert(0, sys.argv[1])
import orjson
try:  # the package layout (roofline.ingest.torch), its roofs attached by the pipeline's stage
    from roofline.ingest.torch import trace as torch_trace
    from roofline.hardware.attach import attach_roofs
    read = lambda p: attach_roofs(torch_trace.read(p))  # noqa: E731
except ImportError:  # a commit before the house (issue 30): the reader attached the roofs itself
    from roofline.ingest import torch_trace
    read = torch_trace.read
path = sys.argv[2]

def floor():
    raw = open(path, "rb").read()
    raw = gzip.decompress(raw) if raw[:2] == b"\\x1f\\x8b" else raw
    gc.disable()
    try:
        orjson.loads(raw)
    finally:
        gc.enable()

fn = floor if sys.argv[3] == "floor" else (lambda: read(path))
fn()
for _ in sys.stdin:
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    print(time.process_time() - c0, time.perf_counter() - w0, flush=True)
"""


def ab(path: Path, base_src: Path, repeat: int) -> None:
    """Floor, the other commit's reader and this one, each in a worker process of its own (the whole
    package of each commit, not one module), alternating, timed in CPU and wall seconds."""
    this_src = Path(torch_trace.__file__).resolve().parents[2]
    sides = {"floor": (this_src, "floor"), "base": (base_src.resolve(), "read"), "this": (this_src, "read")}
    workers = {k: subprocess.Popen([sys.executable, "-c", AB_WORKER, str(src), str(path), what],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for k, (src, what) in sides.items()}
    cpu: dict[str, list[float]] = {k: [] for k in workers}
    wall: dict[str, list[float]] = {k: [] for k in workers}
    try:
        for _ in range(repeat):
            for k, w in workers.items():  # one at a time: the others wait on their stdin
                w.stdin.write("go\n")  # type: ignore[union-attr]
                w.stdin.flush()  # type: ignore[union-attr]
                line = w.stdout.readline()  # type: ignore[union-attr]
                if not line:
                    raise SystemExit(f"A/B: the {k} worker ended (exit status {w.wait()}); its error is above")
                c, t = (float(x) for x in line.split())
                cpu[k].append(c)
                wall[k].append(t)
    finally:
        for w in workers.values():
            w.stdin.close()  # type: ignore[union-attr]
            w.wait()
    for clock, r in (("cpu", cpu), ("wall", wall)):
        best = {k: min(v) for k, v in r.items()}
        med = {k: statistics.median(v) for k, v in r.items()}
        print(f"A/B ({clock}, {repeat} rounds): " + " | ".join(f"{k} {best[k]:.3f} s ({med[k]:.3f})" for k in r)
              + f" | base ÷ floor {best['base'] / best['floor']:.2f} ({med['base'] / med['floor']:.2f})"
              + f" | this ÷ floor {best['this'] / best['floor']:.2f} ({med['this'] / med['floor']:.2f})")


class _Five(msgspec.Struct, gc=False):
    """The 5 fields of an event the decode floor decodes (every other key is skipped by msgspec)."""

    ph: Any = None
    cat: Any = None
    name: Any = None
    ts: Any = None
    dur: Any = None


class _FiveTrace(msgspec.Struct, gc=False):
    traceEvents: list[_Five]


_FIVE = msgspec.json.Decoder(_FiveTrace)

#: run in a fresh interpreter: the CPU seconds of the first read after the imports, and of the whole process
FRESH_SNIPPET = """
import sys, time
c0 = time.process_time()
from roofline.ingest.torch import trace as torch_trace
from roofline.hardware.attach import attach_roofs
c1 = time.process_time()
frame = attach_roofs(torch_trace.read(sys.argv[1]))
c2 = time.process_time()
print(c2 - c1, c2 - c0, len(frame))
"""


def decode_floor(path: Path) -> int:
    """Issue 36's floor: ISA-L gunzip of the whole file, then a msgspec decode of 5 fields per event."""
    from isal import isal_zlib

    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = isal_zlib.decompress(raw, wbits=31)
    gc.disable()
    try:
        return len(_FIVE.decode(raw).traceEvents)
    finally:
        gc.enable()


def issue36(path: Path, repeat: int, hta_python: str | None) -> None:
    """The decode floor and ``read`` alternating in CPU time in this process, ``read`` in fresh processes, HTA."""
    fns = {"decode floor (isal gunzip + msgspec 5 fields)": lambda: decode_floor(path),
           "roofline read + roofs stage": lambda: attach_roofs(torch_trace.read(path))}
    for fn in fns.values():
        fn()
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            gc.collect()
            c0 = time.process_time()
            fn()
            cpu[k].append(time.process_time() - c0)
    floor_k, read_k = fns
    print(f"\n{path.name}: {decode_floor(path)} events; CPU s, best (median) of {repeat}, alternating in one process")
    for k, v in cpu.items():
        print(f"  {k:48s} {min(v):.3f} ({statistics.median(v):.3f})")
    print(f"  read / floor: {min(cpu[read_k]) / min(cpu[floor_k]):.2f} "
          f"({statistics.median(cpu[read_k]) / statistics.median(cpu[floor_k]):.2f})")
    fresh = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", FRESH_SNIPPET, str(path)], capture_output=True, text=True,
                             check=True)
        fresh.append(tuple(float(x) for x in out.stdout.split()[:2]))
    reads, whole = [r for r, _ in fresh], [w for _, w in fresh]
    print(f"  fresh process, first read (CPU s), best (median) of {repeat}: {min(reads):.3f} "
          f"({statistics.median(reads):.3f}); with the imports: {min(whole):.3f} ({statistics.median(whole):.3f})")
    if hta_python:
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(path, Path(d) / path.name)
            out = subprocess.run([hta_python, "-c", HTA_SNIPPET, d, str(repeat)], capture_output=True,
                                 text=True, check=True)
        hta = json.loads(out.stdout.strip().splitlines()[-1])
        wall = []  # read's wall time right after HTA's runs, best of the same number
        for _ in range(repeat):
            gc.collect()
            t0 = time.perf_counter()
            attach_roofs(torch_trace.read(path))
            wall.append(time.perf_counter() - t0)
        print(f"  HTA TraceAnalysis load (wall s) {min(hta):.3f} ({statistics.median(hta):.3f}); read (wall s) "
              f"{min(wall):.3f} ({statistics.median(wall):.3f}): HTA / read {min(hta) / min(wall):.1f}x "
              f"({statistics.median(hta) / statistics.median(wall):.1f}x)")


def streamed(path: Path) -> tuple[list, dict]:
    """The events and top-level fields as read() gets them: gunzipped and decoded piece by piece."""
    top: dict = {}
    return [e for piece in torch_trace_stream.events(path, top) for e in piece], top


def memory(path: Path) -> tuple[int, int, int]:
    """(VmHWM after imports, VmHWM after the read, rows) of a fresh child process reading ``path``."""
    out = subprocess.run([sys.executable, "-c", MEMORY_SNIPPET, str(path)], capture_output=True, text=True,
                         check=True)
    before, after, rows = (int(x) for x in out.stdout.split())
    return before, after, rows


def bench(path: Path, repeat: int, hta_python: str | None, base_src: Path | None = None) -> None:
    results = alternating({"floor (gunzip + orjson.loads)": lambda: floor(path),
                           "roofline torch_trace.read": lambda: attach_roofs(torch_trace.read(path))}, repeat)
    # where roofline's time goes: the same stages read() runs, timed one by one (GC off, as in read())
    raw = json_bytes(path)
    results["  of which: gunzip"] = timed(lambda: json_bytes(path), repeat)
    gc.disable()
    try:
        results["  of which: typed decode (msgspec)"] = timed(lambda: decode(path, raw), repeat)
        # read() gunzips a piece at a time and decodes it (scanning it before the next)
        results["  as read(): gunzip + decode in pieces"] = timed(lambda: streamed(path), repeat)
        events, top = streamed(path)
        results["  of which: scan, link, rows, frame"] = timed(
            lambda: torch_trace._build(path, raw, [events], top), repeat)
    finally:
        gc.enable()
    if hta_python:
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(path, Path(d) / path.name)
            out = subprocess.run([hta_python, "-c", HTA_SNIPPET, d, str(repeat)], capture_output=True,
                                 text=True, check=True)
            results["HTA TraceAnalysis load"] = json.loads(out.stdout.strip().splitlines()[-1])
    before, after, rows = memory(path)
    base = min(results["roofline torch_trace.read"])
    base_med = statistics.median(results["roofline torch_trace.read"])
    print(f"\n{path.name}: {rows} rows, {len(events)} events, {len(raw) / 1e6:.1f} MB of JSON")
    print(f"{'case':36s} {'best s':>8s} {'median s':>9s} {'roofline ÷ case':>16s} {'(median)':>9s}")
    for name, ts in results.items():
        print(f"{name:36s} {min(ts):8.3f} {statistics.median(ts):9.3f} {base / min(ts):16.2f} "
              f"{base_med / statistics.median(ts):9.2f}")
    print(f"peak memory (VmHWM, fresh process): {after / 1e6:.0f} MB = {after / len(raw):.2f}× the JSON "
          f"({before / 1e6:.0f} MB after imports; the read adds {(after - before) / 1e6:.0f} MB = "
          f"{(after - before) / len(raw):.2f}× the JSON)")
    if base_src is not None:
        ab(path, base_src, repeat)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", type=Path, action="append", default=None, help="a trace (repeatable)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--hta-python", default=None, help="python of a virtualenv with HolisticTraceAnalysis")
    ap.add_argument("--ab-base", type=Path, default=None, help="src folder of another commit to A/B against")
    ap.add_argument("--decode-floor", action="store_true", help="only issue 36's measures (see above)")
    args = ap.parse_args()
    if args.decode_floor:
        for path in args.trace or DEFAULT[:1]:
            issue36(path, args.repeat, args.hta_python)
        return
    for path in args.trace or DEFAULT:
        bench(path, args.repeat, args.hta_python, args.ab_base)


if __name__ == "__main__":
    main()
