#!/usr/bin/env python
"""Benchmark XLA xplane ingest and analysis on every fixture xplane (and the trace-viewer JSONs).

Per file, best and median of ``--repeat`` runs after a warm-up:

* decode: ``XSpace.ParseFromString`` of the file's bytes (protobuf upb; the floor of any reader);
* ops: decode + op occurrences of every device plane (``xplane_decode``), no cost analysis;
* read: ``roofline.read`` (for GPU xplanes this includes the xprof converter in a child process);
* read, no cost: ``xplane.read(path, cost_analysis=False)`` (times only);
* analyze: ``roofline.analyze`` of the read frame, plus ``aggregate(by="program")``;
* xprof in-process: ``xspace_to_tool_data([copy], "hlo_stats")`` in this process on a fresh copy
  (what the child process runs; the difference to "read" is the process start and imports).

    .venv/bin/python bench/bench_xplane.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import roofline
from roofline.analysis.aggregate import aggregate
from roofline.ingest.xla import xplane, xplane_decode
from roofline.ingest.xla.protos import xplane_pb2

TRACES = Path(__file__).resolve().parents[2] / "shared/fixtures/traces"


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out), statistics.median(out)


def xprof_in_process(path: Path) -> None:
    from xprof.convert import raw_to_tool_data

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "host.xplane.pb"
        shutil.copyfile(path, copy)
        raw_to_tool_data.xspace_to_tool_data([str(copy)], "hlo_stats", {})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    files = sorted(TRACES.glob("*.xplane.pb")) + sorted((TRACES / "derived").glob("*.json.gz"))
    print("| file | size | rows | decode | ops | read | read, no cost | analyze + program | xprof in-process |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in files:
        data = path.read_bytes()
        cells = []
        if path.name.endswith(".xplane.pb"):
            cells.append(timed(lambda: xplane_pb2.XSpace().ParseFromString(data), args.repeat))
            try:
                space = xplane_decode.load(path)
                xplane_decode.device_planes(path, space)
            except roofline.errors.RooflineError as exc:
                print(f"| {path.name} | {len(data) / 1e6:.2f} MB | error: {exc.problem[:60]} | "
                      f"{cells[0][0] * 1e3:.1f} ms | | | | | |")
                continue
            cells.append(timed(lambda: xplane_decode.device_planes(path, xplane_decode.load(path)), args.repeat))
        else:
            cells += [None, None]
        frame = roofline.read(path)
        cells.append(timed(lambda: roofline.read(path), args.repeat))
        cells.append(timed(lambda: xplane.read(path, cost_analysis=False), args.repeat)
                     if path.name.endswith(".xplane.pb") else None)
        cells.append(timed(lambda: aggregate(roofline.analyze(frame), by="program"), args.repeat))
        gpu = path.name.endswith(".xplane.pb") and "tpu" not in path.name
        cells.append(timed(lambda: xprof_in_process(path), args.repeat) if gpu else None)
        text = " | ".join("" if c is None else f"{c[0] * 1e3:.1f} ms ({c[1] * 1e3:.1f})" for c in cells)
        print(f"| {path.name} | {len(data) / 1e6:.2f} MB | {len(frame)} | {text} |")
    print("\nbest (median) of", args.repeat, "runs after a warm-up")


if __name__ == "__main__":
    main()
