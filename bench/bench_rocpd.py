"""The rocpd reader at scale (issue 36): ``rocpd.read`` of a synthetic database of N kernel dispatches (default
50,000) with the project fixture's 28 counters each, against a bare ``fetchall`` of the rows it needs (the
dispatches and their counter events), both in this process, alternating, best and median of ``--repeat``.

The database is the fixture ``tests/fixtures/rocprof/rocpd_mi210.db`` (rocprofiler-sdk's own schema) with its
first dispatch and that dispatch's 28 counter rows copied N times under new ids.

    PYTHONPATH=src .venv/bin/python bench/bench_rocpd.py [--dispatches 50000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "rocprof" / "rocpd_mi210.db"


def synthetic(path: Path, n: int) -> Path:
    shutil.copyfile(FIXTURE, path)
    con = sqlite3.connect(path)
    (kd,) = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_kernel_dispatch_%'")]
    suffix = kd.removeprefix("rocpd_kernel_dispatch")
    pmc = f"rocpd_pmc_event{suffix}"
    cols = [r[1] for r in con.execute(f'PRAGMA table_info("{kd}")')]
    first = con.execute(f'SELECT * FROM "{kd}" ORDER BY id LIMIT 1').fetchone()
    counters = con.execute(f'SELECT pmc_id, value FROM "{pmc}" WHERE event_id = ?', (first[cols.index("event_id")],)) \
        .fetchall()
    top_id = con.execute(f'SELECT max(id) FROM "{kd}"').fetchone()[0]
    top_event = con.execute(f'SELECT max(event_id) FROM "{kd}"').fetchone()[0]
    top_dispatch = con.execute(f'SELECT max(dispatch_id) FROM "{kd}"').fetchone()[0]
    rows, events = [], []
    for i in range(1, n - con.execute(f'SELECT count(*) FROM "{kd}"').fetchone()[0] + 1):
        r = list(first)
        r[cols.index("id")], r[cols.index("event_id")] = top_id + i, top_event + i
        r[cols.index("dispatch_id")] = top_dispatch + i
        r[cols.index("start")] += 100_000 * i
        r[cols.index("end")] += 100_000 * i
        rows.append(r)
        events += [(first[1], top_event + i, pid, value * (1 + i % 7), "{}") for pid, value in counters]
    con.executemany(f'INSERT INTO "{kd}" VALUES ({",".join("?" * len(cols))})', rows)
    con.executemany(f'INSERT INTO "{pmc}" (guid, event_id, pmc_id, value, extdata) VALUES (?, ?, ?, ?, ?)', events)
    con.commit()
    con.close()
    return path


def bare(path: Path) -> int:
    """What any reader must do: open it, fetch the dispatch rows and the counter rows."""
    from roofline.ingest.amd.rocpd import connect

    con = connect(path)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        kd = next(t for t in names if t.startswith("rocpd_kernel_dispatch"))
        pmc = next(t for t in names if t.startswith("rocpd_pmc_event"))
        a = con.execute(f'SELECT start, "end", agent_id, queue_id, kernel_id, dispatch_id, workgroup_size_x, '
                        f'workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, event_id '
                        f'FROM "{kd}"').fetchall()
        b = con.execute(f'SELECT event_id, pmc_id, value FROM "{pmc}"').fetchall()
        return len(a) + len(b)
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dispatches", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from roofline.ingest.amd import rocpd

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        db = synthetic(Path(tmp) / "big.db", a.dispatches)
        frame = rocpd.read(db)
        print(f"{len(frame)} dispatches, {db.stat().st_size / 1e6:.0f} MB; warm-up done")
        times: dict[str, list[float]] = {"bare fetchall": [], "rocpd.read": []}
        for _ in range(a.repeat):
            for label, fn in (("bare fetchall", bare), ("rocpd.read", rocpd.read)):
                t = time.perf_counter()
                fn(db)
                times[label].append(time.perf_counter() - t)
        for label, ts in times.items():
            print(f"{label}: best {min(ts):.3f} s, median {statistics.median(ts):.3f} s")
        print(f"ratio (best): {min(times['rocpd.read']) / min(times['bare fetchall']):.2f}x, "
              f"(median): {statistics.median(times['rocpd.read']) / statistics.median(times['bare fetchall']):.2f}x")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
