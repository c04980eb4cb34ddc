#!/usr/bin/env python
"""A/B of ``roofline.read`` between two commits: each commit's whole ``src`` in a worker process of its own,
the reads interleaved (the order flipped every round), timed in CPU and wall time; best and median.

``roofline.read`` is what a profile gives the pipeline, its spec-table roofs attached: a commit whose readers
attach them and one whose roofs stage does are compared like for like (``bench_trace.py`` and
``bench_nsys.py`` time a reader module alone).

    git -C /work/main archive 7d62d37 src | tar -x -C /tmp/base
    PYTHONPATH=src .venv/bin/python bench/bench_read_ab.py --base /tmp/base/src --rounds 15 PROFILE...
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: one side: reads the path on each line of its stdin (after one read to warm up), answers "cpu wall rows"
WORKER = """
import gc, json, sys, time
import roofline
for line in sys.stdin:
    path = line.strip()
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    rows = len(roofline.read(path))
    print(json.dumps([time.process_time() - c0, time.perf_counter() - w0, rows]), flush=True)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--base", type=Path, required=True, help="src folder of the other commit")
    ap.add_argument("--this", type=Path, default=REPO / "src", help="src folder of this side (default: this checkout)")
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    sides = {"base": a.base.resolve(), "this": a.this.resolve()}
    workers = {k: subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True, env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"})
               for k, src in sides.items()}

    def read(side: str, path: Path) -> list[float]:
        w = workers[side]
        w.stdin.write(f"{path.resolve()}\n")  # type: ignore[union-attr]
        w.stdin.flush()  # type: ignore[union-attr]
        line = w.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise SystemExit(f"the {side} worker ended (exit status {w.wait()}); its error is above")
        return json.loads(line)

    times: dict[tuple[str, Path], list[list[float]]] = {(k, p): [] for k in sides for p in a.paths}
    try:
        for p in a.paths:  # warm-up: imports, the page cache
            for k in sides:
                read(k, p)
        for r in range(a.rounds):
            for p in a.paths:
                for k in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
                    times[(k, p)].append(read(k, p))
    finally:
        for w in workers.values():
            w.stdin.close()  # type: ignore[union-attr]
            w.wait()
    for p in a.paths:
        print(f"{p.name} ({a.rounds} rounds; best (median) ms)")
        for k in sides:
            t = times[(k, p)]
            cpu, wall = [x[0] * 1e3 for x in t], [x[1] * 1e3 for x in t]
            print(f"  {k:4s} {int(t[0][2]):7d} rows: cpu {min(cpu):7.1f} ({statistics.median(cpu):7.1f}) | "
                  f"wall {min(wall):7.1f} ({statistics.median(wall):7.1f})")


if __name__ == "__main__":
    main()
