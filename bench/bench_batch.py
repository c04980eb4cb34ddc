"""Batch throughput and driver memory.

1. files/s of the local pool (2 workers) and of a Dask LocalCluster (2 single-thread worker
   processes) on the same cores, alternately, `--rounds` times: `roofline batch` in a fresh process
   on fresh copies (nothing skipped); figures from the batch's own log (`_batches/*.json`).
2. a simulated batch of `--sim` inputs (tiny CSV exports, default 10,000) against 1,000: the
   driver's peak memory (VmHWM from /proc/self/status, read by the driver process itself, a child
   of this one) must not grow with the number of inputs.

    PYTHONPATH=src .venv/bin/python bench/bench_batch.py [--files 1000] [--rounds 2] [--sim 10000]
    PYTHONPATH=src .venv/bin/python bench/bench_batch.py --dask-rss 5 --files 500 [--mix all|ncu|no-ncu-rep]
        [--dask-profiler]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures" / "ncu"
DEFAULT = FIXTURES / "sm86_a10g_gemm-variants_roofline.ncu-rep"
TINY = FIXTURES / "sm80_a100_gemm-variants_roofline-metrics-printfp.csv"
ENV = os.environ | {"PYTHONPATH": str(REPO / "src")}

#: run in the driver's own process: the batch, then its VmHWM (peak resident set) from the kernel
DRIVER = r"""
import json, sys
from roofline.batch import run_batch
inputs, out, scheduler = sys.argv[1], sys.argv[2], sys.argv[3] or None
s = run_batch([inputs], out, scheduler=scheduler, workers=None if scheduler else 2)
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"inputs": s.inputs, "ok": s.ok, "failed": s.failed, "files_per_s": s.files_per_s,
                  "elapsed_s": s.elapsed_s, "vmhwm_mb": hwm / 1024}))
"""


def _copies(src: Path, folder: Path, n: int) -> Path:
    for i in range(n):
        sub = folder / f"run{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, sub / f"copy{i:05d}{''.join(src.suffixes[-1:])}")
    return folder


def _batch(inputs: Path, out: Path, *extra: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "roofline", "batch", str(inputs), "-o", str(out), *extra],
                          check=False, capture_output=True, text=True, env=ENV)
    if done.returncode not in (0, 1):  # 1: some inputs failed (a mix holds CPU-only traces)
        raise SystemExit(f"batch exit {done.returncode}: {done.stderr[-2000:]}")
    (log,) = (out / "_batches").glob("*.json")
    return json.loads(log.read_text())


def _driver(inputs: Path, out: Path, scheduler: str = "") -> dict:
    done = subprocess.run([sys.executable, "-c", DRIVER, str(inputs), str(out), scheduler],
                          check=True, capture_output=True, text=True, env=ENV)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000, help="copies for the throughput rounds (0 with --rounds 0: skip)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--report", type=Path, default=DEFAULT)
    ap.add_argument("--sim", type=int, default=10_000, help="inputs of the simulated batch (0: skip)")
    ap.add_argument("--tiny", type=Path, default=TINY)
    ap.add_argument("--dask-rss", type=int, default=0, metavar="N",
                    help="only: N consecutive batches of --files inputs of the bench_dataset mix (--mix) on one Dask "
                    "LocalCluster (2 single-thread worker processes); each worker's resident MB after each batch")
    ap.add_argument("--mix", choices=["all", "ncu", "no-ncu-rep"], default="all")
    ap.add_argument("--dask-profiler", action="store_true",
                    help="with --dask-rss: keep the workers' statistical profiler on (Dask's default; docs/batch.md)")
    args = ap.parse_args()
    if args.dask_rss:
        return dask_rss(args.dask_rss, args.files, args.mix, args.dask_profiler)
    from distributed import LocalCluster

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp, LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                            dashboard_address=None) as cluster:
        t = Path(tmp)
        addr = cluster.scheduler_address
        inputs = _copies(args.report, t / "in", args.files)
        print(f"\n{args.files} copies of {args.report.name} ({args.report.stat().st_size / 1e3:.0f} kB)")
        print("| round | local pool, 2 workers files/s | Dask LocalCluster, 2 workers files/s | Dask / local |")
        print("|---|---|---|---|")
        for r in range(args.rounds):
            local = _batch(inputs, t / f"local{r}", "-j", "2")
            dask = _batch(inputs, t / f"dask{r}", "--scheduler", addr)
            print(f"| {r + 1} | {local['files_per_s']:.1f} | {dask['files_per_s']:.1f} | "
                  f"{dask['files_per_s'] / local['files_per_s']:.2f} |", flush=True)
        shutil.rmtree(t / "in", ignore_errors=True)  # (none with --files 0: the simulated batch alone)
        if args.sim:
            print(f"\nsimulated batches of {args.tiny.name} ({args.tiny.stat().st_size / 1e3:.1f} kB) copies; "
                  "driver VmHWM read by the driver process")
            print("| inputs | where | ok | failed | files/s | elapsed s | driver VmHWM MB |")
            print("|---|---|---|---|---|---|---|")
            for n in (1000, args.sim):
                folder = _copies(args.tiny, t / f"tiny{n}", n)
                for label, sched in (("Dask LocalCluster, 2 workers", addr),):  # the local pool's driver: issue 8
                    d = _driver(folder, t / f"sim{n}-{bool(sched)}", sched)
                    print(f"| {d['inputs']} | {label} | {d['ok']} | {d['failed']} | {d['files_per_s']:.1f} | "
                          f"{d['elapsed_s']:.1f} | {d['vmhwm_mb']:.0f} |", flush=True)
                shutil.rmtree(folder)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


#: a Dask worker samples its tasks' call stacks every 10 ms and keeps a tree of dicts per second for the last
#: 1,000 seconds (``distributed.admin.low-level-log-length``), twice (all tasks, per task key): ~0.07 MB more per
#: input read until that window is full. The cluster recipe (docs/batch.md) turns it off; so does this bench
NO_PROFILER = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}


def dask_rss(batches: int, files: int, kind: str, profiler: bool = False) -> None:
    """Issue 36: a Dask worker's resident memory across consecutive batches (each into a new dataset, so every
    input is read each time), read on the workers themselves after each batch; workers without the statistical
    profiler unless ``profiler``."""
    import dask

    if not profiler:  # (the worker processes read it from the environment; this process from its config)
        os.environ.update(NO_PROFILER)
        dask.config.refresh()
    from distributed import Client, LocalCluster

    sys.path.insert(0, str(REPO / "bench"))
    from bench_dataset import mix

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp, LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                            dashboard_address=None) as cluster, \
            Client(cluster) as client:
        t = Path(tmp)
        inputs = mix(t / "in", files, "all" if kind == "no-ncu-rep" else kind)
        if kind == "no-ncu-rep":  # without NVIDIA's ncu_report (which keeps ~1.7 MB per report it opened)
            for p in inputs:
                if p.suffix in (".ncu-rep", ".nsight-cuprof-report"):
                    p.unlink()
        print(f"{sum(1 for p in (t / 'in').rglob('*') if p.is_file())} inputs ({kind}); worker RSS MB after each batch; "
              f"profiler {'on' if profiler else 'off'}")
        print("| batch | files/s | worker 1 MB | worker 2 MB |")
        print("|---|---|---|---|")
        for b in range(batches):
            log = _batch(t / "in", t / f"ds{b}", "--scheduler", cluster.scheduler_address)
            rss = sorted(client.run(_rss_mb).values())
            print(f"| {b + 1} | {log['files_per_s']:.1f} | " + " | ".join(f"{r:.0f}" for r in rss) + " |", flush=True)
            shutil.rmtree(t / f"ds{b}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
