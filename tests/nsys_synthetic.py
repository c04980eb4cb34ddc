"""Small synthetic Nsight Systems SQLite exports, written with sqlite3 in the layout of real ones.

The column names and enum ids follow the real exports in ../shared/fixtures/nsys (schema 3.13 and
3.25); ``old=True`` uses the older ``EXPORT_META_DATA`` table and drops columns later schemas added
(mangledName, graphId, graphNodeId), as exports of nsys 2021-2023 do. Used by the tests and by
``bench/nsys_read.py`` (a 1,000,000-kernel export for the flat-memory check).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

GPID = (1 << 56) | (4242 << 24)  # globalPid of process 4242; its main thread's globalTid adds the tid
TID = GPID + 4242
KERNELS = ("void gemm_kernel<float>(float const*, float*, int)", "gemm_kernel", "_Z11gemm_kernelIfEvPKfPfi")


def make_export(path: Path, n_kernels: int = 4, old: bool = False, nvtx: bool = True, gpu_info: bool = True,
                chunk: int = 100_000) -> Path:
    con = sqlite3.connect(path)
    meta = "EXPORT_META_DATA" if old else "META_DATA_EXPORT"
    con.execute(f"CREATE TABLE {meta} (name TEXT, value TEXT)")
    con.executemany(f"INSERT INTO {meta} VALUES (?, ?)",
                    [("EXPORT_SCHEMA_VERSION", "3.4.1" if old else "3.25.0"),
                     ("EXPORT_PRODUCT_VERSION", "2022.1.1" if old else "2026.2.1")])
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.executemany("INSERT INTO StringIds VALUES (?, ?)",
                    [(1, KERNELS[0]), (2, KERNELS[1]), (3, KERNELS[2]), (4, "cudaLaunchKernel"), (5, "step")])
    cols = ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "demangledName",
            "shortName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread",
            "staticSharedMemory", "dynamicSharedMemory"]
    if not old:
        cols += ["mangledName", "graphNodeId", "graphId"]
    con.execute(f"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL ({', '.join(c + ' INTEGER' for c in cols)})")
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER, eventClass INTEGER, "
                "globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER)")
    for lo in range(0, n_kernels, chunk):
        hi = min(n_kernels, lo + chunk)
        # kernel i: launched at 1000 i on the CPU, runs from 1000 i + 500 for 100 + i % 7 ns
        rows = []
        for i in range(lo, hi):
            r = [1000 * i + 500, 1000 * i + 600 + i % 7, 0, 1, 7, i + 1, GPID, 1, 2, 64 + i % 3, 1, 1, 256, 1, 1,
                 32, 0, 1024]
            if not old:
                r += [3, 9, 2]  # graph-launched: node 9 of graph 2
            rows.append(r)
        con.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * len(cols))})", rows)
        con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, 4, 0)",
                        [(1000 * i, 1000 * i + 50, TID, i + 1) for i in range(lo, hi)])
    con.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, "
                "streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER, "
                "srcKind INTEGER, dstKind INTEGER)")
    base = 1000 * n_kernels
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 7, ?, ?, ?, ?, 2, 2)",
                    [(base + 100, base + 200, 10**9, GPID, 4096, 8),  # DtoD, no runtime call: orphan
                     (base + 300, base + 400, 10**9 + 1, GPID, 1 << 20, 1)])  # HtoD
    if nvtx:
        con.execute("CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER, "
                    "category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, "
                    "textId INTEGER, domainId INTEGER)")
        con.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, NULL, NULL, NULL, ?, ?, NULL, ?, ?)", [
            (0, None, 75, "mydomain", TID, None, 7),  # domain 7 is created with a name
            (0, 1000 * n_kernels, 59, "train", TID, None, 0),  # push/pop around every launch
            (500, 1500, 59, None, TID, 5, 0),  # registered string "step" around launch 1 (at 1000)
            (900, 1100, 60, "io", TID, None, 7),  # start/end range in domain 7 around launch 1
            (0, 10**12, 59, "other thread", TID + 1, None, 0),  # another thread: encloses nothing here
        ])
    if gpu_info and old:  # the device table of exports up to early 2021, keyed by deviceId
        con.execute("CREATE TABLE TARGET_INFO_CUDA_GPU (deviceId INTEGER, name TEXT, numMultiprocessors INTEGER, "
                    "coreClockRate INTEGER, memoryBandwidth INTEGER, computeCapabilityMajor INTEGER, "
                    "computeCapabilityMinor INTEGER)")
        con.execute("INSERT INTO TARGET_INFO_CUDA_GPU VALUES (0, 'NVIDIA H100 80GB HBM3', 132, 1980000000, "
                    "3352320000000, 9, 0)")
    elif gpu_info:
        con.execute("CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, smCount INTEGER, clockRate INTEGER, "
                    "memoryBandwidth INTEGER, computeMajor INTEGER, computeMinor INTEGER)")
        con.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H100 80GB HBM3', 132, 1980000000, "
                    "3352320000000, 9, 0)")
    con.execute("CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT)")
    con.execute("INSERT INTO PROCESSES VALUES (?, 4242, 'train.py')", (GPID,))
    con.commit()
    con.close()
    return path


def export_of_launches(path: Path, launches: list[tuple[str, str, str, tuple[int, ...], int]],
                       device: str | None = None) -> Path:
    """An export whose kernels are ``launches``: (demangled, short, mangled, grid + block (6 ints), duration ns),
    one after another on stream 7 of process 4242 (device 0 named ``device`` in TARGET_INFO_GPU if given)."""
    make_export(path, n_kernels=0, nvtx=False, gpu_info=False)
    con = sqlite3.connect(path)
    names = sorted({n for launch in launches for n in launch[:3]})
    ids = {n: 100 + i for i, n in enumerate(names)}
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, n) for n, i in ids.items()])
    t = 0
    rows, calls = [], []
    for i, (dem, short, mangled, dims, dur) in enumerate(launches):
        rows.append([t + 500, t + 500 + dur, 0, 1, 7, i + 1, GPID, ids[dem], ids[short], *dims, 32, 0, 0,
                     ids[mangled], None, None])
        calls.append((t, t + 50, TID, i + 1))
        t += 1000 + dur
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?" + ",?" * 20 + ")", rows)
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, 4, 0)", calls)
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    if device:
        con.execute("CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, smCount INTEGER, clockRate INTEGER, "
                    "memoryBandwidth INTEGER, computeMajor INTEGER, computeMinor INTEGER)")
        con.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, NULL, NULL, NULL, NULL, NULL)", (device,))
    con.commit()
    con.close()
    return path


def run_sql(path: Path, *statements: str) -> Path:
    """Run statements on a (synthetic) export in place: damage it, trim it, add ranges."""
    con = sqlite3.connect(path)
    for st in statements:
        con.execute(st)
    con.commit()
    con.close()
    return path
