"""The batch acceptance run at full size: every shared fixture copied N times under different
names plus corrupt files; an uninterrupted batch, and a batch SIGKILLed part-way and re-run.
Checks that every input is accounted for exactly once and that both datasets are equal.

    .venv/bin/python bench/batch_every_fixture.py [--copies 50] [--kill-at 0.5] [--workers 2]

(tests/batch/test_batch.py runs the same checks with 2 copies, within CI's time.)
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from roofline.batch import open_dataset  # noqa: E402
from test_batch import _copies, _corrupt, _every_fixture, dataset_digest  # noqa: E402


def _batch(inputs: Path, out: Path, workers: int, kill_after: int | None = None) -> float:
    args = [sys.executable, "-m", "roofline.cli", "batch", str(inputs), "-o", str(out), "-j", str(workers), "-v"]
    start = time.perf_counter()
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, start_new_session=True)
    seen = 0
    for line in proc.stderr:
        seen += line.startswith(("ok:", "failed:"))
        if kill_after is not None and seen >= kill_after:
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=50)
    ap.add_argument("--kill-at", type=float, default=0.5)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        files = _copies(_every_fixture(), t / "in", a.copies) + _corrupt(t / "in" / "bad")
        n = len(files)
        whole = _batch(t / "in", t / "whole", a.workers)
        killed_after = int(n * a.kill_at)
        first = _batch(t / "in", t / "killed", a.workers, kill_after=killed_after)
        partial = len(open_dataset(t / "killed", "runs")) + len(open_dataset(t / "killed", "errors"))
        rest = _batch(t / "in", t / "killed", a.workers)
        runs, errors = open_dataset(t / "whole", "runs"), open_dataset(t / "whole", "errors")
        accounted = sorted(list(runs["source_file"]) + list(errors["source_file"]))
        assert accounted == sorted(str(p.absolute()) for p in files), "inputs lost or duplicated"
        # byte-identical files (Parquet writes are deterministic), checked without loading 10^6 rows
        assert dataset_digest(t / "whole") == dataset_digest(t / "killed"), "datasets differ"
        kernels = int(runs["kernels"].sum())
    print(f"{n} inputs ({a.copies} copies of {len(_every_fixture())} fixtures + {n - a.copies * len(_every_fixture())}"
          f" corrupt): {len(runs)} ok, {len(errors)} failed, each exactly once; {kernels} kernel rows")
    print(f"uninterrupted: {whole:.1f} s; killed after {killed_after} inputs ({first:.1f} s; {partial} recorded), "
          f"re-run {rest:.1f} s; datasets byte-identical: yes")


if __name__ == "__main__":
    main()
