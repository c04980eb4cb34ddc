"""Nsight Systems reader: speed against a bare sqlite3 query, and memory on a synthetic 1M-kernel export.

    PYTHONPATH=src .venv/bin/python bench/bench_nsys.py speed [EXPORT.sqlite] [--repeat 7] [--ab-base /tmp/base/src]
    PYTHONPATH=src .venv/bin/python bench/bench_nsys.py memory --kernels 1000000

``speed``: best-of-N and median CPU and wall time (the two interleaved) of ``roofline.ingest.nsys.export.read`` against a
bare ``sqlite3`` query of the same columns (kernel, memcpy and memset rows with their names from StringIds, a copy's
kind and devices, a memset's memory kind, the launching runtime call, and the NVTX ranges with their event type and
name or registered name), fetched with ``fetchall`` into Python tuples and nothing else. With ``--ab-base DIR`` (the
``src`` of another commit: ``git archive c8abe16 src | tar -x -C /tmp/base``) that commit's reader (its nsys,
nsys_nvtx and nsys_ranks modules; the rest of roofline is this checkout's) runs in the same rounds.
``memory``: writes a synthetic export (tests/nsys_synthetic.py) and reads it in a fresh process,
reporting the child's VmHWM (peak RSS, /proc) above its baseline after imports against the size of the frame it returns.
Results: docs/nsys.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "fixtures" / "nsys" / "nsys2026.2_h100x2_mfu-before.sqlite"

KERNEL_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "gridX", "gridY", "gridZ",
                  "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory", "dynamicSharedMemory",
                  "graphId", "graphNodeId")
BARE = """
SELECT {cols}, d.value, s.value, m.value, r.globalTid, r.start
FROM CUPTI_ACTIVITY_KIND_KERNEL k
LEFT JOIN StringIds d ON d.id = k.demangledName LEFT JOIN StringIds s ON s.id = k.shortName
LEFT JOIN StringIds m ON m.id = k.mangledName
LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)
"""
# every column the reader needs: eventType (push/pop vs start/end) and the registered name (textId) too
NVTX = "SELECT globalTid, start, end, domainId, eventType, IFNULL(text, textId) FROM NVTX_EVENTS WHERE eventType IN (59, 60)"
#: besides times, ids and bytes, the reader needs a memcpy's kind and devices and a memset's memory kind
COPY_COLUMNS = {"CUPTI_ACTIVITY_KIND_MEMCPY": ("copyKind", "srcDeviceId", "dstDeviceId"),
                "CUPTI_ACTIVITY_KIND_MEMSET": ("memKind",)}
COPIES = """
SELECT x.start, x.end, x.deviceId, x.streamId, x.correlationId, x.globalPid, x.bytes, {extra}, r.globalTid, r.start
FROM {t} x LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
ON r.correlationId = x.correlationId AND (r.globalTid >> 24) = (x.globalPid >> 24)
"""


def bare(path: Path) -> int:
    con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    have = {r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
    cols = ", ".join(f"k.{c}" if c in have else "NULL" for c in KERNEL_COLUMNS)
    n = len(con.execute(BARE.format(cols=cols)).fetchall())
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    if "NVTX_EVENTS" in tables:
        con.execute(NVTX).fetchall()
    for t, want in COPY_COLUMNS.items():
        if t in tables:
            have = {r[1] for r in con.execute(f"PRAGMA table_info({t})")}
            extra = ", ".join(f"x.{c}" if c in have else "NULL" for c in want)
            n += len(con.execute(COPIES.format(t=t, extra=extra)).fetchall())
    con.close()
    return n


def base_reader(base_src: Path):  # type: ignore[no-untyped-def]
    """``read`` of another commit's nsys reader: its nsys, nsys_nvtx and nsys_ranks modules, loaded under other
    names (the modules they import besides these two are this checkout's)."""
    mods = {}
    for name in ("nsys_nvtx", "nsys_ranks", "nsys"):
        spec = importlib.util.spec_from_file_location(f"base_{name}", base_src / "roofline" / "ingest" / f"{name}.py")
        mods[name] = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(mods[name])  # type: ignore[union-attr]
    mods["nsys"].nsys_nvtx, mods["nsys"].nsys_ranks = mods["nsys_nvtx"], mods["nsys_ranks"]
    return mods["nsys"].read


def speed(path: Path, repeat: int, base_src: Path | None = None) -> None:
    from roofline.ingest.nsys import export as nsys

    rows = bare(path)
    frame = nsys.read(path)  # warm: imports and the page cache
    fns = {"bare sqlite3": lambda: bare(path), "nsys.read": lambda: nsys.read(path)}
    if base_src is not None:
        read_base = base_reader(base_src)
        read_base(path)
        fns["base nsys.read"] = lambda: read_base(path)
    # CPU time as well as wall time: on a shared machine the wall clock measures the neighbours too.
    # The readers are interleaved, so a burst of load from elsewhere hits them alike; best and median of N.
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeat):
        for who, fn in fns.items():
            w, c = time.perf_counter(), time.process_time()
            fn()
            times.setdefault((who, "cpu"), []).append(time.process_time() - c)
            times.setdefault((who, "wall"), []).append(time.perf_counter() - w)
    print(f"{path.name}: {len(frame)} rows ({rows} from the bare query); best (median) of {repeat}")
    for what in ("cpu", "wall"):
        b, m = min(times[("bare sqlite3", what)]), statistics.median(times[("bare sqlite3", what)])
        print(f"  {what}: " + ", ".join(
            f"{who} {min(times[(who, what)]) * 1e3:.1f} ms ({statistics.median(times[(who, what)]) * 1e3:.1f})"
            + ("" if who == "bare sqlite3" else f" = {min(times[(who, what)]) / b:.2f}x bare "
               f"({statistics.median(times[(who, what)]) / m:.2f}x)") for who in fns))


def memory(kernels: int) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from nsys_synthetic import make_export

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"synthetic-{kernels}.sqlite"
        t = time.perf_counter()
        make_export(path, n_kernels=kernels)
        print(f"wrote {path.name}: {path.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - t:.0f} s")
        # VmHWM (peak resident set) of a fresh child, read from /proc before and after the read: the
        # parent's ru_maxrss would include writing the export
        code = ("import time, sys; import roofline.ingest.nsys.export as n, pandas;"
                "hwm = lambda: int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]);"
                "base = hwm(); t = time.perf_counter(); c = time.process_time();"
                f"f = n.read({str(path)!r}); dt = time.perf_counter() - t; dc = time.process_time() - c;"
                "peak = hwm(); size = f.memory_usage(deep=True).sum();"
                "print(f'{len(f)} rows in {dt:.1f} s ({dc:.1f} s CPU); frame {size / 1e6:.0f} MB; '"
                "f'VmHWM above baseline '"
                "f'{(peak - base) / 1e3:.0f} MB = {(peak - base) * 1e3 / len(f):.0f} B/row, '"
                "f'{(peak - base) * 1e3 / size:.2f}x the frame')")
        subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": str(REPO / "src")})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["speed", "memory"])
    ap.add_argument("path", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--kernels", type=int, default=1_000_000)
    ap.add_argument("--ab-base", type=Path, default=None, help="src folder of another commit to A/B against")
    a = ap.parse_args()
    if a.what == "speed":
        speed(a.path, a.repeat, a.ab_base)
    else:
        memory(a.kernels)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
