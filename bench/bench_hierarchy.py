#!/usr/bin/env python
"""Benchmark the hierarchical roofline on N synthetic kernel rows (default 1,000,000).

The rows look like a real batch: four precisions (about a third of the kernels mixed, a tenth
without FLOPs), DRAM/L2/L1 bytes with a few missing levels and zero-byte kernels, per-kernel
peaks, source strings and tensor paths. Timed with ``time.perf_counter``, best and median of
``--repeat`` runs after one warm-up, for:

* ``hierarchical``: the roofline columns alone (``roofline.analysis.hierarchical``);
* ``analyze``: the public API (peaks from the frame, plus the concat onto the kernels frame);
* ``analyze --clock both``: the profiled and boost views.

Per call, also the user and system CPU seconds and the minor page faults (``getrusage`` deltas,
medians): a million-row result is about 210 MB of new float64 columns, and how the kernel backs them
(huge pages or 4 KB pages) can cost more system time than computing them.

Usage (from the repo root)::

    .venv/bin/python bench/bench_hierarchy.py [--rows 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import time

import numpy as np
import pandas as pd

from roofline.analysis import analyze, hierarchical
from roofline.schema import conform_kernels


def synthetic(n: int, seed: int = 20261122) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    dur = 10 ** rng.uniform(-6, -1, n)
    cols: dict[str, object] = {
        "kernel_id": np.arange(n), "kernel_name": "kernel", "kernel_short_name": "kernel",
        "device_name": "NVIDIA H100 80GB HBM3", "duration_s": dur,
        "sm_clock_hz": 1.755e9, "sm_boost_clock_hz": 1.98e9,
    }
    kind = rng.uniform(size=n)
    fp32 = 10 ** rng.uniform(6, 12, n)
    tensor = np.where(kind < 0.35, 10 ** rng.uniform(9, 14, n), 0.0)
    cols["flop_fp32"] = np.where(kind > 0.9, 0.0, fp32)
    cols["flop_tensor"] = tensor
    cols["flop_fp64"] = np.where(kind > 0.97, 10 ** rng.uniform(6, 10, n), 0.0)
    cols["flop_fp16"] = np.where(rng.uniform(size=n) < 0.02, np.nan, 0.0)
    for lv, scale in (("dram", 1.0), ("l2", 2.0), ("l1", 6.0)):
        b = 10 ** rng.uniform(4, 10, n) * scale
        b[rng.uniform(size=n) < 0.01] = 0.0
        b[rng.uniform(size=n) < 0.02] = np.nan
        cols[f"{lv}_bytes"] = b
        cols[f"{lv}_bytes_source"] = np.where(np.isnan(b), "unavailable: no counters; collect with ncu --set full", "counters")
    peaks = {"fp64": 6.7e13, "fp32": 6.7e13, "fp16": 1.3e14, "tensor": 9.9e14}
    for p, v in peaks.items():
        cols[f"peak_flop_per_s_{p}"] = v * rng.uniform(0.88, 1.0, n)
        cols[f"peak_flop_per_s_{p}_source"] = "counters: x.peak_sustained × sm__cycles_elapsed.avg.per_second"
    for lv, v in (("dram", 3.35e12), ("l2", 1.0e13), ("l1", 3.0e13)):
        cols[f"peak_{lv}_bytes_per_s"] = v
        cols[f"peak_{lv}_bytes_per_s_source"] = "counters: y.peak_sustained × lts__cycles_elapsed.avg.per_second"
    cols["tensor_path"] = np.where(tensor > 0, "src_bf16_dst_fp32_sparsity_off", None)
    return conform_kernels(pd.DataFrame(cols))


def timed(fn, repeat: int) -> tuple[float, float, float, float, float]:
    """Best and median wall seconds, then median user s, system s and minor page faults per call."""
    fn()  # warm-up
    times, user, system, faults = [], [], [], []
    for _ in range(repeat):
        gc.collect()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        user.append(r1.ru_utime - r0.ru_utime)
        system.append(r1.ru_stime - r0.ru_stime)
        faults.append(r1.ru_minflt - r0.ru_minflt)
    return (min(times), statistics.median(times), statistics.median(user), statistics.median(system),
            statistics.median(faults))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    t0 = time.perf_counter()
    frame = synthetic(args.rows)
    print(f"{args.rows:,} synthetic kernel rows built in {time.perf_counter() - t0:.2f} s")
    cases = {
        "hierarchical (roofline columns)": lambda: hierarchical(frame),
        "analyze (public API)": lambda: analyze(frame),
        "analyze --clock both": lambda: analyze(frame, clock="both"),
    }
    print(f"{'case':34s} {'best s':>8s} {'median s':>9s} {'rows/s (best)':>14s} {'user s':>7s} {'sys s':>6s} {'faults':>7s}")
    for name, fn in cases.items():
        best, med, user, system, faults = timed(fn, args.repeat)
        print(f"{name:34s} {best:8.3f} {med:9.3f} {args.rows / best:14,.0f} {user:7.3f} {system:6.3f} {faults:7.0f}")


if __name__ == "__main__":
    main()
