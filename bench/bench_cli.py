"""CLI start-up: wall time of `roofline --version`, `roofline --help` and `roofline <cmd> --help`,
hyperfine-style (warm-up runs, then N timed runs in fresh processes; best and median), next to a bare
`python -c pass` for the interpreter's own share; and the slowest imports of `--help` (-X importtime).

    PYTHONPATH=src .venv/bin/python bench/bench_cli.py [--runs 20] [--src OTHER/src]

``--src``: time another checkout's sources instead (e.g. the commit before the change, unpacked
with ``git archive <commit> src | tar -x -C /tmp/before``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ENV = os.environ | {"PYTHONPATH": str(SRC)}


def _time(argv: list[str], runs: int, warmup: int = 3) -> tuple[float, float]:
    times = []
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        subprocess.run(argv, env=ENV, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def _importtime(argv: list[str], top: int = 6) -> list[tuple[int, str]]:
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], env=ENV, check=True, capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cum, name = line.split("|")
            if not name.startswith("   "):  # top-level imports only (their cumulative time includes the rest)
                rows.append((int(cum), name.strip()))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--src", type=Path, default=SRC)
    args = ap.parse_args()
    ENV["PYTHONPATH"] = str(args.src.resolve())
    py = [sys.executable]
    cases = [("python -c pass", [*py, "-c", "pass"]),
             ("roofline --version", [*py, "-m", "roofline", "--version"]),
             ("roofline --help", [*py, "-m", "roofline", "--help"])]
    cases += [(f"roofline {c} --help", [*py, "-m", "roofline", c, "--help"])
              for c in ("analyze", "batch", "compare", "llm")]
    print(f"sources: {args.src}; load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{args.runs} runs each after 3 warm-ups")
    print("| command | best s | median s |")
    print("|---|---|---|")
    for label, argv in cases:
        best, med = _time(argv, args.runs)
        print(f"| `{label}` | {best:.3f} | {med:.3f} |")
    print("\nslowest top-level imports of `roofline --help` (cumulative, -X importtime):")
    for us, name in _importtime(["-m", "roofline", "--help"]):
        print(f"  {us / 1e3:7.1f} ms  {name}")


if __name__ == "__main__":
    main()
