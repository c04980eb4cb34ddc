#!/usr/bin/env python
"""Generate ``tests/fixtures/rocprof/rocpd_mi210.db``: a small rocpd SQLite database (what
``rocprofv3 --output-format rocpd`` writes) built from rocprofiler-sdk's own schema files.

Schema: the DDL is not retyped here. It is read at generation time from ROCm/rocm-systems @
1b1610fc2b2ab32af71e6e04e4d4a6a4ae597992 (the release whose rocprof-compute wrote the shared
fixtures), files ``projects/rocprofiler-sdk/source/share/rocprofiler-sdk-rocpd/{rocpd_tables,
rocpd_indexes,rocpd_views,data_views}.sql`` (MIT licence, Copyright (c) Advanced Micro Devices,
Inc.; notice in tests/fixtures/README.md), from a local clone (``--repo``, read with ``git show``)
or a folder holding those files (``--schema-dir``). ``{{uuid}}`` and ``{{guid}}`` are substituted
as rocprofiler-sdk's ``rocpd::sql`` does (``sql.cpp``): the uuid gets a leading ``_`` and ``-`` →
``_``, so tables are ``rocpd_kernel_dispatch_<uuid>`` and the views ``rocpd_kernel_dispatch``,
``kernels``, ``counters_collection``, ``memory_copies`` sit on top of them.

Rows: the values are inserted the way ``generateRocpd.cpp`` fills them (agent ``id`` = node id,
agent ``extdata`` = the agent struct as JSON, kernel symbol ``display_name`` = formatted name, one
``rocpd_event`` per dispatch, one ``rocpd_pmc_event`` row per counter instance):

- dispatches 1-3: ``vecCopy`` on an MI210 (gfx90a, 104 CUs, 1700 MHz), their counters and start/end
  timestamps copied from the three dispatches of the shared rocprof-compute MI200 workload
  (``../shared/fixtures/rocprof/rocprof-compute_vcopy_MI200/pmc_perf.csv`` and ``timestamps.csv``),
  so the rocpd reader's numbers are checkable against the pmc_perf.csv path;
- dispatch 4: ``fma_lds`` with made-up counters whose FLOPs and bytes are worked out by hand in
  tests/ingest/test_amd_rocpd.py (SQ_INSTS_VALU_FMA_F32 over 4 instance rows, SQ_LDS_IDX_ACTIVE over 3);
- dispatch 5: ``empty`` with no counter record (its FLOPs and bytes must be unavailable, not 0);
- one host-to-device memory copy.

    PYTHONPATH=src python tools/make_rocpd_fixture.py --repo /path/to/rocm-systems   # rewrites the .db
"""

from __future__ import annotations

import argparse
import csv
import json
import sqlite3
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests/fixtures/rocprof/rocpd_mi210.db"
COMMIT = "1b1610fc2b2ab32af71e6e04e4d4a6a4ae597992"
SCHEMA_PATH = "projects/rocprofiler-sdk/source/share/rocprofiler-sdk-rocpd"
SCHEMA_FILES = ("rocpd_tables.sql", "rocpd_indexes.sql", "rocpd_views.sql", "data_views.sql")
MI200 = ROOT.parent / "shared/fixtures/rocprof/rocprof-compute_vcopy_MI200"
GUID = "0198a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"  # fixed, so the file is reproducible
UUID = "_" + GUID.replace("-", "_")

#: the counters rocprof-compute's roofline reads on gfx90a (docs/amd.md), copied from pmc_perf.csv
VCOPY_COUNTERS = (
    *(f"SQ_INSTS_VALU_{op}_{p}" for p in ("F16", "F32", "F64") for op in ("ADD", "MUL", "FMA", "TRANS")),
    *(f"SQ_INSTS_VALU_MFMA_MOPS_{t}" for t in ("F16", "BF16", "F32", "F64", "I8")),
    "TCC_EA_RDREQ_sum", "TCC_EA_RDREQ_32B_sum", "TCC_EA_WRREQ_sum", "TCC_EA_WRREQ_64B_sum",
    "TCP_TCC_READ_REQ_sum", "TCP_TCC_WRITE_REQ_sum", "TCP_TCC_ATOMIC_WITH_RET_REQ_sum",
    "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum", "TCP_TOTAL_CACHE_ACCESSES_sum", "SQ_LDS_IDX_ACTIVE", "SQ_LDS_BANK_CONFLICT",
)
#: dispatch 4's counters: a list is one row per hardware instance (summed by the readers)
FMA_LDS_COUNTERS: dict[str, float | list[float]] = {
    **{c: 0.0 for c in VCOPY_COUNTERS},
    "SQ_INSTS_VALU_ADD_F32": 1000.0, "SQ_INSTS_VALU_FMA_F32": [2500.0, 2500.0, 2500.0, 2500.0],
    "SQ_INSTS_VALU_FMA_F64": 500.0, "SQ_INSTS_VALU_MFMA_MOPS_F16": 300.0,
    "SQ_LDS_IDX_ACTIVE": [4000.0, 4000.0, 2000.0], "SQ_LDS_BANK_CONFLICT": 1000.0,
    "TCC_EA_RDREQ_sum": 2048.0, "TCC_EA_WRREQ_sum": 1024.0, "TCC_EA_WRREQ_64B_sum": 1024.0,
    "TCP_TCC_READ_REQ_sum": 4096.0, "TCP_TCC_WRITE_REQ_sum": 1024.0, "TCP_TOTAL_CACHE_ACCESSES_sum": 16384.0,
}


def schema_text(name: str, repo: Path | None, schema_dir: Path | None) -> str:
    if schema_dir is not None:
        text = (schema_dir / name).read_text()
    else:
        assert repo is not None
        text = subprocess.run(["git", "-C", str(repo), "show", f"{COMMIT}:{SCHEMA_PATH}/{name}"], check=True,
                              capture_output=True, text=True).stdout
    return text.replace("{{uuid}}", UUID).replace("{{guid}}", GUID)


def mi200_rows() -> list[dict[str, str]]:
    with open(MI200 / "pmc_perf.csv", newline="") as fh:
        pmc = list(csv.DictReader(fh))
    with open(MI200 / "timestamps.csv", newline="") as fh:
        ts = list(csv.DictReader(fh))
    for row, t in zip(pmc, ts):
        row["Start_Timestamp"], row["End_Timestamp"] = t["Start_Timestamp"], t["End_Timestamp"]
    return pmc


def build(con: sqlite3.Connection) -> None:
    def ins(table: str, **values: object) -> int:
        cols = ", ".join(f'"{k}"' for k in values)
        marks = ", ".join("?" for _ in values)
        cur = con.execute(f'INSERT INTO "{table}{UUID}" ({cols}) VALUES ({marks})', tuple(values.values()))
        return int(cur.lastrowid or 0)

    strings: dict[str, int] = {}

    def string(s: str) -> int:
        if s not in strings:
            strings[s] = ins("rocpd_string", string=s)
        return strings[s]

    ins("rocpd_info_node", id=1, hash=123456789, machine_id="0123456789abcdef0123456789abcdef",
        system_name="Linux", hostname="fixture-host", release="6.8.0", version="#1 SMP", hardware_name="x86_64",
        domain_name="(none)")
    ins("rocpd_info_process", id=1, nid=1, ppid=4110590, pid=4110591, init=1411551767000000,
        fini=1411551768000000, start=1411551767100000, end=1411551767900000, command="./vcopy -n 1048576 -b 256 -i 3")
    ins("rocpd_info_thread", id=1, nid=1, ppid=4110590, pid=1, tid=4110591, name="vcopy",
        start=1411551767100000, end=1411551767900000)
    cpu = {"size": 0, "id": {"handle": 0}, "type": 1, "cpu_cores_count": 16, "simd_count": 0, "cu_count": 0,
           "wave_front_size": 0, "max_engine_clk_fcompute": 4200, "name": "AMD EPYC 7713 64-Core Processor",
           "product_name": "AMD EPYC 7713 64-Core Processor", "node_id": 0, "logical_node_id": 0,
           "logical_node_type_id": 0, "num_xcc": 0}
    gpu = {"size": 0, "id": {"handle": 2}, "type": 2, "cpu_cores_count": 0, "simd_count": 416, "cu_count": 104,
           "wave_front_size": 64, "max_engine_clk_fcompute": 1700, "name": "gfx90a",
           "product_name": "AMD Instinct MI210", "vendor_name": "AMD", "node_id": 2, "logical_node_id": 1,
           "logical_node_type_id": 0, "num_xcc": 1, "lds_size_in_kb": 64, "simd_per_cu": 4}
    for a, kind in ((cpu, "CPU"), (gpu, "GPU")):
        ins("rocpd_info_agent", id=a["node_id"], nid=1, pid=1, type=kind, absolute_index=a["node_id"],
            logical_index=a["logical_node_id"], type_index=a["logical_node_type_id"], uuid=0, name=a["name"],
            model_name="aldebaran" if kind == "GPU" else "", vendor_name="AMD" if kind == "GPU" else "CPU",
            product_name=a["product_name"], user_name=a["product_name"], extdata=json.dumps(a))
    ins("rocpd_info_queue", id=1, nid=1, pid=1, name="Queue 1")
    ins("rocpd_info_stream", id=0, nid=1, pid=1, name="Stream 0")
    ins("rocpd_info_code_object", id=1, nid=1, pid=1, agent_id=2, uri="file:///work/vcopy#offset=0&size=0",
        load_base=0, load_size=0, load_delta=0, storage_type="FILE")
    symbols = (("_Z7vecCopyPdS_S_ii.kd", "vecCopy(double*, double*, double*, int, int)"),
               ("_Z7fma_ldsPfPKfi.kd", "fma_lds(float*, float const*, int)"), ("_Z5emptyv.kd", "empty()"))
    for kid, (mangled, formatted) in enumerate(symbols, start=1):
        ins("rocpd_info_kernel_symbol", id=kid, nid=1, pid=1, code_object_id=1, kernel_name=mangled,
            display_name=formatted, kernel_object=0, kernarg_segment_size=32, kernarg_segment_alignment=8,
            group_segment_size=0, private_segment_size=0, sgpr_count=16, arch_vgpr_count=8, accum_vgpr_count=0,
            extdata=json.dumps({"kernel_id": kid, "formatted_kernel_name": formatted, "kernel_name": mangled}))
    pmc_ids: dict[str, int] = {}
    for i, name in enumerate(VCOPY_COUNTERS, start=1):
        pmc_ids[name] = ins("rocpd_info_pmc", id=i, nid=1, pid=1, agent_id=2, target_arch="GPU", name=name,
                            symbol=name, description="", component="rocm", value_type="ABS",
                            block=name.split("_")[0], expression="", is_constant=0, is_derived=int("_sum" in name))

    vcopy = mi200_rows()
    dispatches: list[tuple[int, int, int, int, int, dict[str, float | list[float]] | None]] = []
    for row in vcopy:  # (kernel id, start, end, grid, workgroup, counters)
        dispatches.append((1, int(row["Start_Timestamp"]), int(row["End_Timestamp"]), int(row["Grid_Size"]),
                           int(row["Workgroup_Size"]), {c: float(row[c]) for c in VCOPY_COUNTERS}))
    dispatches.append((2, 1411551767900000, 1411551767910000, 262144, 256, FMA_LDS_COUNTERS))
    dispatches.append((3, 1411551767920000, 1411551767921500, 64, 64, None))
    category = string("KERNEL_DISPATCH")
    pmc_row = 1
    for dispatch_id, (kid, start, end, grid, wg, counters) in enumerate(dispatches, start=1):
        event = ins("rocpd_event", category_id=category, stack_id=dispatch_id, parent_stack_id=dispatch_id,
                    correlation_id=0)
        ins("rocpd_kernel_dispatch", id=dispatch_id, nid=1, pid=1, tid=1, agent_id=2, kernel_id=kid,
            dispatch_id=dispatch_id, queue_id=1, stream_id=0, start=start, end=end, private_segment_size=0,
            group_segment_size=0, workgroup_size_x=wg, workgroup_size_y=1, workgroup_size_z=1, grid_size_x=grid,
            grid_size_y=1, grid_size_z=1, region_name_id=string(symbols[kid - 1][1]), event_id=event)
        for name, value in (counters or {}).items():
            for v in value if isinstance(value, list) else [value]:
                ins("rocpd_pmc_event", id=pmc_row, event_id=event, pmc_id=pmc_ids[name], value=v)
                pmc_row += 1
    copy_event = ins("rocpd_event", category_id=string("MEMORY_COPY"), stack_id=99, parent_stack_id=99,
                     correlation_id=0)
    ins("rocpd_memory_copy", id=1, nid=1, pid=1, tid=1, start=1411551767500000, end=1411551767600000,
        name_id=string("MEMORY_COPY_HOST_TO_DEVICE"), dst_agent_id=2, dst_address=0, src_agent_id=0,
        src_address=0, size=8388608, queue_id=1, stream_id=0, event_id=copy_event)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--repo", type=Path, help=f"a clone of ROCm/rocm-systems holding commit {COMMIT[:7]}")
    src.add_argument("--schema-dir", type=Path, help="a folder with the four .sql files of that commit")
    ap.add_argument("-o", "--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.unlink(missing_ok=True)
    con = sqlite3.connect(args.out)
    try:
        for name in SCHEMA_FILES:
            con.executescript(schema_text(name, args.repo, args.schema_dir))
        with con:
            build(con)
        con.execute("VACUUM")
    finally:
        con.close()
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
