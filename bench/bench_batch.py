"""Batch throughput and memory: files/s for 1 and 2 local workers and a 2-worker Dask cluster,
and peak RSS of the driver and of any one worker for 100 and 1,000 inputs.

    .venv/bin/python bench/bench_batch.py [--files 1000] [--report PATH]

Each configuration runs `roofline batch` in a fresh process on fresh copies (so nothing is
skipped) and reads the figures from the batch's own log (`_batches/*.json`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "fixtures" / "ncu" / "sm86_a10g_gemm-variants_roofline.ncu-rep"


def _copies(src: Path, folder: Path, n: int) -> Path:
    for i in range(n):
        sub = folder / f"run{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, sub / f"copy{i:05d}.ncu-rep")
    return folder


def _batch(inputs: Path, out: Path, *extra: str) -> dict:
    subprocess.run([sys.executable, "-m", "roofline.cli", "batch", str(inputs), "-o", str(out), *extra],
                   check=True, capture_output=True, text=True)
    (log,) = (out / "_batches").glob("*.json")
    return json.loads(log.read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--report", type=Path, default=DEFAULT)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for n in sorted({100, args.files}):
            inputs = _copies(args.report, t / f"in{n}", n)
            for label, extra in (("1 worker", ["-j", "1"]), ("2 workers", ["-j", "2"])):
                log = _batch(inputs, t / f"out-{n}-{label[0]}", *extra)
                rows.append((n, label, log))
            if n == args.files:
                from distributed import LocalCluster

                with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
                    rows.append((n, "Dask LocalCluster, 2 workers", _batch(inputs, t / f"out-{n}-dask",
                                                                          "--scheduler", c.scheduler_address)))
    print(f"report: {args.report.name} ({args.report.stat().st_size / 1e3:.0f} kB)")
    print("| inputs | where | files/s | elapsed s | driver max RSS MB | worker max RSS MB |")
    print("|---|---|---|---|---|---|")
    for n, label, log in rows:
        worker = f"{log['workers_max_rss_mb']:.0f}"
        print(f"| {n} | {label} | {log['files_per_s']:.1f} | {log['elapsed_s']:.2f} | {log['driver_max_rss_mb']:.0f} "
              f"| {worker} |")
    one = next(r[2]["files_per_s"] for r in rows if r[0] == args.files and r[1] == "1 worker")
    two = next(r[2]["files_per_s"] for r in rows if r[0] == args.files and r[1] == "2 workers")
    print(f"speed-up 1 -> 2 workers at {args.files} files: {two / one:.2f}x")


if __name__ == "__main__":
    main()
