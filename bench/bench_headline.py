"""The cost of the headline in the terminal (issue 32): ``print_result`` of the table view on the largest shared
trace (20,540 op rows), five runs, one process per tree; run it for two trees to compare them:

    for src in /work/main/src src; do PYTHONPATH=$src python bench/bench_headline.py; done

A tree whose ``print_result`` has no ``scope`` (before issue 32) prints the 20 longest rows only."""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

from roofline.cli.common import print_result
from roofline.pipeline import run

TRACE = Path(__file__).resolve().parents[2] / "shared/fixtures/traces/torch_v100_2rank-nccl_rank1_large216k.pt.trace.json.gz"


def main() -> None:
    frame = run([TRACE]).frame
    times = []
    for _ in range(5):
        t = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            if "scope" in print_result.__code__.co_varnames:
                print_result(frame, "table", ("dram", "l2", "l1"), None, limit=20, scope=frame)
            else:
                print_result(frame.head(20), "table", ("dram", "l2", "l1"), None, total=len(frame))
        times.append(time.perf_counter() - t)
    print(f"{len(frame):,} rows: table view {sorted(times)[2] * 1e3:.0f} ms (median of 5)")


if __name__ == "__main__":
    main()
