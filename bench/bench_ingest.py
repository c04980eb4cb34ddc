#!/usr/bin/env python
"""Benchmark roofline's ingest of Nsight Compute binary reports against bare ``ncu_report`` reads.

For every ``.ncu-rep`` / ``.nsight-cuprof-report`` in the fixture folder this times two paths:

* roofline: ``roofline.ingest.ncu.report.read(path)``, which returns the canonical kernels frame;
* bare: ``ncu_report.load_report`` and, for every range and action, the same metrics roofline
  reads (``metric_names()`` filtered by ``roofline.metrics.derive.is_relevant``), the instance
  values of ``sass__inst_executed_per_opcode_with_modifier_all`` when present, and the three
  ``name()`` variants.

Each file is warmed up once per path, then timed ``--repeat`` times with ``time.perf_counter``,
alternating which path runs first. The table gives best-of-N and median per report and per kernel,
and the ratio roofline / bare (of the best times, and of the medians).

Usage (from the repo root)::

    .venv/bin/python bench/bench_ingest.py [--repeat 5] [--fixtures ../shared/fixtures/ncu]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import ncu_report

from roofline.ingest.ncu import report as ncu_rep
from roofline.metrics.derive import is_relevant

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures" / "ncu"
SUFFIXES = (".ncu-rep", ".nsight-cuprof-report")
OPCODE_METRIC = "sass__inst_executed_per_opcode_with_modifier_all"
NAME_BASES = (
    ncu_report.IAction.NameBase_FUNCTION,
    ncu_report.IAction.NameBase_DEMANGLED,
    ncu_report.IAction.NameBase_MANGLED,
)


def bare_read(path: Path) -> tuple[int, list[int]]:
    """Read what roofline reads, with nothing around it. Returns (kernels, metrics read per kernel)."""
    ctx = ncu_report.load_report(str(path))
    per_kernel: list[int] = []
    sink: list[Any] = []
    for r_idx in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r_idx)
        for a_idx in range(rng.num_actions()):
            a = rng.action_by_idx(a_idx)
            names = a.metric_names()
            wanted = [n for n in names if is_relevant(n)]
            for n in wanted:
                sink.append(a.metric_by_name(n).value())
            m = a.metric_by_name(OPCODE_METRIC)
            if m is not None and m.has_correlation_ids():
                keys = m.correlation_ids()
                for k in range(m.num_instances()):
                    sink.append((keys.value(k), m.value(k)))
            for base in NAME_BASES:
                sink.append(a.name(base))
            per_kernel.append(len(wanted))
    return len(per_kernel), per_kernel


def roofline_read(path: Path) -> int:
    return len(ncu_rep.read(path))


def _time(fn: Callable[[Path], Any], path: Path) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn(path)
    return time.perf_counter() - t0


def bench_file(path: Path, repeat: int) -> dict[str, Any]:
    n_kernels, per_kernel = bare_read(path)  # warm-up of the bare path; also gives the counts
    n_rows = roofline_read(path)  # warm-up of the roofline path
    if n_rows != n_kernels:
        print(f"warning: {path.name}: roofline gave {n_rows} rows, bare read saw {n_kernels} kernels",
              file=sys.stderr)
    t_roof: list[float] = []
    t_bare: list[float] = []
    for i in range(repeat):
        if i % 2 == 0:
            t_roof.append(_time(roofline_read, path))
            t_bare.append(_time(bare_read, path))
        else:
            t_bare.append(_time(bare_read, path))
            t_roof.append(_time(roofline_read, path))
    return {
        "file": path.name,
        "kernels": n_kernels,
        "metrics_min": min(per_kernel) if per_kernel else 0,
        "metrics_max": max(per_kernel) if per_kernel else 0,
        "roof_best": min(t_roof),
        "roof_med": statistics.median(t_roof),
        "bare_best": min(t_bare),
        "bare_med": statistics.median(t_bare),
    }


def _ms(s: float) -> str:
    return f"{s * 1e3:.1f}"


def _msk(s: float, k: int) -> str:
    return f"{s * 1e3 / k:.2f}" if k else "-"


def _metrics(r: dict[str, Any]) -> str:
    lo, hi = r["metrics_min"], r["metrics_max"]
    return str(lo) if lo == hi else f"{lo}-{hi}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per path and file (default 5)")
    ap.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES,
                    help="folder of Nsight Compute reports (default ../shared/fixtures/ncu)")
    ap.add_argument("--only", default=None, help="only files whose name contains this text")
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    fixtures = args.fixtures if args.fixtures.is_absolute() else (Path.cwd() / args.fixtures)
    files = sorted(p for p in fixtures.iterdir() if p.suffix in SUFFIXES or p.name.endswith(SUFFIXES))
    if args.only:
        files = [p for p in files if args.only in p.name]
    if not files:
        print(f"no Nsight Compute reports in {fixtures}", file=sys.stderr)
        return 1

    print(f"ncu_report {ncu_report.load_report(str(files[0])).get_version()}, python "
          f"{sys.version.split()[0]}, repeat {args.repeat} (best / median of N, warm-up excluded)\n")
    print("| file | kernels | metrics/kernel | roofline best ms | bare best ms | roofline ms/kernel "
          "| bare ms/kernel | ratio (best) | roofline median ms | bare median ms | ratio (median) |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    results = []
    for path in files:
        r = bench_file(path, args.repeat)
        results.append(r)
        k = r["kernels"]
        print(f"| {r['file']} | {k} | {_metrics(r)} | {_ms(r['roof_best'])} | {_ms(r['bare_best'])} "
              f"| {_msk(r['roof_best'], k)} | {_msk(r['bare_best'], k)} "
              f"| {r['roof_best'] / r['bare_best']:.2f}× | {_ms(r['roof_med'])} | {_ms(r['bare_med'])} "
              f"| {r['roof_med'] / r['bare_med']:.2f}× |", flush=True)
    tot = {key: sum(r[key] for r in results) for key in ("kernels", "roof_best", "bare_best", "roof_med", "bare_med")}
    k = tot["kernels"]
    print(f"| **total ({len(results)} files)** | {k} | | {_ms(tot['roof_best'])} | {_ms(tot['bare_best'])} "
          f"| {_msk(tot['roof_best'], k)} | {_msk(tot['bare_best'], k)} "
          f"| {tot['roof_best'] / tot['bare_best']:.2f}× | {_ms(tot['roof_med'])} | {_ms(tot['bare_med'])} "
          f"| {tot['roof_med'] / tot['bare_med']:.2f}× |")
    worst = max(results, key=lambda r: r["roof_best"] / r["bare_best"])
    print(f"\nTotal: roofline {_ms(tot['roof_best'])} ms vs bare {_ms(tot['bare_best'])} ms over {k} kernels "
          f"in {len(results)} files; overall ratio {tot['roof_best'] / tot['bare_best']:.2f}× (best), "
          f"{tot['roof_med'] / tot['bare_med']:.2f}× (median); worst file {worst['file']} "
          f"at {worst['roof_best'] / worst['bare_best']:.2f}×; target ≤ 1.5×.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
