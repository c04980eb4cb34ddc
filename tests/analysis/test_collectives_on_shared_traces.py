"""Collectives of the shared multi-rank Kineto traces, recomputed here from the raw JSON (json + gzip, none of
roofline's readers): message bytes as nccl-tests' S, algorithm bandwidth S/t over the NCCL kernels' time, bus
bandwidth with nccl-tests' factor, the link roof's source, and exposed + overlapped = the collectives' time."""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import Counter, defaultdict

import pandas as pd
import pytest

from conftest import shared
from roofline.pipeline import run

V100 = "traces/torch_v100_2rank-nccl_rank1_large216k.pt.trace.json.gz"
A100 = "traces/torch_a100-80gb_16rank-nccl_rank0_shapes.pt.trace.json.gz"
B200 = "traces/torch_cuda12.9_b200_8rank-nccl_eager_rank0.pt.trace.json.gz"
MI300X = "traces/torch_rocm6.4_mi300x_8rank_resnet-act-ckpt_train_rank0.pt.trace.json.gz"
#: element sizes by the dtype names these traces write (c10::ScalarType names), written out here
ELEM = {"BFloat16": 2, "Float": 4, "Long": 8, "Int": 4, "Half": 2, "Byte": 1, "float": 4, "long": 8, "int": 4}
#: nccl-tests' bus factors (doc/PERFORMANCE.md), written out here
FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
          "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
          "broadcast": lambda n: 1.0}
NAMES = {"allreduce": "all_reduce", "_allgather_base": "all_gather", "broadcast": "broadcast",
         "c10d::allreduce_": "all_reduce", "c10d::_allgather_base_": "all_gather",
         "c10d::_reduce_scatter_base_": "reduce_scatter", "c10d::alltoall_base_": "all_to_all",
         "c10d::broadcast_": "broadcast"}


def _events(rel: str) -> list[dict]:
    with gzip.open(shared(rel)) as f:
        return json.load(f)["traceEvents"]


def _nccl(e: dict) -> bool:
    return e.get("cat") == "kernel" and e.get("name", "").lower().startswith(("nccl", "rccl"))


def _frame(rel: str):
    a = run([shared(rel)])
    return a.frame, a


def _sized(frame):
    return frame[frame["collective"].notna() & frame["message_bytes"].notna()]


def _check(frame, expected: list[tuple[str, float, int | None, float]]) -> None:
    """Each expected (collective, S bytes, n, t µs) matches one row: bytes exact, algbw and busbw within 0.5%."""
    rows = _sized(frame)
    assert len(rows) == len(expected)
    pool = defaultdict(list)
    for _, r in rows.iterrows():
        n = None if pd.isna(r["group_size"]) else int(r["group_size"])
        pool[(r["collective"], float(r["message_bytes"]), n)].append(r)
    for coll, size, n, t_us in expected:
        cands = pool[(coll, float(size), n)]
        assert cands, (coll, size, n)
        j = min(range(len(cands)), key=lambda i: abs(cands[i]["duration_s"] * 1e6 - t_us))
        r = cands.pop(j)
        assert r["duration_s"] * 1e6 == pytest.approx(t_us, rel=1e-9)
        algbw = size / (t_us * 1e-6)
        assert r["algorithm_bandwidth_bytes_per_s"] == pytest.approx(algbw, rel=0.005)
        if n is None:
            assert math.isnan(r["bus_bandwidth_bytes_per_s"])
            assert r["bus_bandwidth_bytes_per_s_source"].startswith("unavailable: ")
        else:
            assert r["bus_bandwidth_bytes_per_s"] == pytest.approx(algbw * FACTOR[coll](n), rel=0.005)
            assert coll.replace("_", "") in r["bus_factor_source"].replace("_", "") and f"n={n}" in r["bus_factor_source"]
        assert r["link_roof_bytes_per_s_source"].startswith("spec: ") and re.search(r"data ?sheet", r["link_roof_bytes_per_s_source"])
        assert r["link_placement"].startswith("intra-node (assumed: ")


@pytest.mark.parametrize("rel", [B200, MI300X])
def test_recorded_collective_args_give_bytes_and_bandwidths_as_recomputed_from_the_kernels(rel):
    """PyTorch 2.4+ writes Collective name, In/Out msg nelems, dtype and Group size on the NCCL kernel itself."""
    expected = []
    for e in _events(rel):
        a = e.get("args", {})
        if _nccl(e) and "Collective name" in a:
            coll = NAMES[a["Collective name"]]
            nelems = a["Out msg nelems"] if coll == "all_gather" else a["In msg nelems"]
            expected.append((coll, nelems * ELEM[a["dtype"]], a["Group size"], e["dur"]))
    assert expected
    frame, _ = _frame(rel)
    _check(frame, expected)


def test_a100_pytorch_2_0_collectives_from_their_c10d_callers_shapes():
    """PyTorch 2.0: the kernel's launch (correlation) runs inside record_param_comms (or the c10d op) on its thread;
    the c10d op holding it records (output, input) tensors; an all-gather's or reduce-scatter's element ratio is
    the group size."""
    ev = _events(A100)
    ops = [e for e in ev if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    notes = [e for e in ev if e.get("cat") == "user_annotation" and e.get("name", "").startswith("nccl:")]
    by_ext = {e["args"]["External id"]: e for e in ops if "External id" in e.get("args", {})}
    launches = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    expected = []
    for k in ev:
        if not _nccl(k):
            continue
        rt = launches.get(k["args"]["correlation"])
        op = by_ext.get(rt["args"].get("External id")) if rt else None
        if op is None and rt is not None:  # the innermost op on the launch's thread that holds the launch
            held = [o for o in ops if o["tid"] == rt["tid"] and o["pid"] == rt["pid"]
                    and o["ts"] <= rt["ts"] <= o["ts"] + o["dur"]]
            op = max(held, key=lambda o: (o["ts"], -o["dur"])) if held else None
        if op is None:
            continue
        c10d = op
        if op["name"] == "record_param_comms":  # its caller: the innermost c10d op on its thread that holds it
            holders = [o for o in ops if o["tid"] == op["tid"] and o["pid"] == op["pid"] and o["name"].startswith("c10d::")
                       and o["ts"] <= op["ts"] and o["ts"] + o["dur"] >= op["ts"] + op["dur"]]
            c10d = max(holders, key=lambda o: o["ts"])
        coll = NAMES[c10d["name"]]
        dims, types = c10d["args"]["Input Dims"], c10d["args"]["Input type"]
        if not c10d["name"].endswith("_base_"):  # allreduce_: a TensorList the trace does not expand; the
            # nccl:all_reduce annotation inside record_param_comms records the tensor; no group size anywhere
            note = min((n for n in notes if n["tid"] == op["tid"] and op["ts"] <= n["ts"] <= op["ts"] + op["dur"]),
                       key=lambda n: n["ts"])
            expected.append((coll, math.prod(note["args"]["Input Dims"][0]) * ELEM[note["args"]["Input type"][0]],
                             None, k["dur"]))
            continue
        out_n, in_n = math.prod(dims[0]), math.prod(dims[1])
        size = (out_n if coll == "all_gather" else in_n) * ELEM[types[1]]
        n = out_n // in_n if coll == "all_gather" else in_n // out_n if coll == "reduce_scatter" else None
        expected.append((coll, size, n, k["dur"]))
    assert Counter(c for c, *_ in expected) == {"all_to_all": 45, "reduce_scatter": 10, "all_gather": 10,
                                                "all_reduce": 10}
    frame, _ = _frame(A100)
    _check(frame, expected)
    unsized = frame[frame["collective"].notna() & frame["message_bytes"].isna()]
    assert set(unsized["collective"]) == {"send_recv"}  # kernels launched before the window: no op, no size
    assert unsized["message_bytes_source"].str.startswith("unavailable: ").all()


def test_v100_pytorch_1_13_trace_records_no_sizes_and_says_so():
    ev = _events(V100)
    kernels = [e for e in ev if _nccl(e)]
    frame, _ = _frame(V100)
    coll = frame[frame["collective"].notna()]
    assert len(coll) == len(kernels) == 2020
    assert set(coll["collective"]) == {"all_reduce"}
    assert coll["message_bytes"].isna().all() and coll["algorithm_bandwidth_bytes_per_s"].isna().all()
    assert coll["message_bytes_source"].str.startswith("unavailable: ").all()
    assert coll["group_size_source"].str.contains("records no process group").all()
    assert (coll["link_roof_bytes_per_s"] == 150e9).all()  # V100 SXM2: 6 NVLink 2 links × 25 GB/s per direction


def _overlap_us(ev: list[dict]) -> tuple[float, float]:
    """(Σ NCCL kernel µs, Σ of it while another kernel ran on the same device): a plain sweep per kernel."""
    other = defaultdict(list)
    for e in ev:
        if e.get("cat") == "kernel" and not _nccl(e):
            other[e["args"].get("device", e.get("pid"))].append((e["ts"], e["ts"] + e["dur"]))
    total = over = 0.0
    for e in ev:
        if not _nccl(e):
            continue
        a, b = e["ts"], e["ts"] + e["dur"]
        total += e["dur"]
        cut = sorted((max(s, a), min(t, b)) for s, t in other[e["args"].get("device", e.get("pid"))] if s < b and t > a)
        end = a
        for s, t in cut:  # the union of the other kernels inside [a, b]
            if t > end:
                over += t - max(s, end)
                end = t
    return total, over


@pytest.mark.parametrize("rel", [V100, A100, B200, MI300X])
def test_exposed_plus_overlapped_is_the_collectives_time_of_the_rank(rel):
    total_us, over_us = _overlap_us(_events(rel))
    frame, _ = _frame(rel)
    from roofline.analysis.headline import headlines

    h = headlines(frame)[0]
    assert h.comm_exposed_s + h.comm_overlapped_s == pytest.approx(total_us * 1e-6, rel=1e-9)
    assert h.comm_overlapped_s == pytest.approx(over_us * 1e-6, rel=1e-6, abs=1e-12)
    steps = [x for x in headlines(frame) if x.step is not None]
    if steps:  # per step: each step's share adds up to no more than the whole
        assert sum(x.comm_exposed_s + x.comm_overlapped_s for x in steps) <= total_us * 1e-6 * (1 + 1e-9)


@pytest.mark.parametrize("rel", ["nsys/nsys2026.2_h100x2_mfu-before.sqlite", "nsys/nsys2026.2_h100x2_mfu-after.sqlite"])
def test_nsys_nccl_kernels_are_collectives_with_their_exposed_time_from_the_timeline(rel):
    """Nsight Systems names the collective in the kernel and records when each kernel ran, not the message size:
    exposed + overlapped per device recomputed from the export's own KERNEL table (sqlite3), sizes unavailable."""
    import sqlite3

    con = sqlite3.connect(shared(rel))
    rows = con.execute("SELECT k.start, k.end, k.deviceId, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                       "JOIN StringIds s ON s.id = k.demangledName").fetchall()
    con.close()
    total = over = 0.0
    for a, b, dev, name in rows:
        if not name.lower().startswith("nccl"):
            continue
        total += b - a
        cut = sorted((max(s, a), min(t, b)) for s, t, d, n in rows
                     if d == dev and not n.lower().startswith("nccl") and s < b and t > a)
        end = a
        for s, t in cut:
            if t > end:
                over += t - max(s, end)
                end = t
    frame, _ = _frame(rel)
    coll = frame[frame["collective"].notna()]
    assert len(coll) == sum(1 for r in rows if r[3].lower().startswith("nccl"))
    assert coll["message_bytes_source"].str.startswith("unavailable: ").all()
    assert (coll["comm_exposed_s"] + coll["comm_overlapped_s"]).sum() == pytest.approx(total * 1e-9, rel=1e-9)
    assert coll["comm_overlapped_s"].sum() == pytest.approx(over * 1e-9, rel=1e-6, abs=1e-12)
