"""The collective rows' overlap intervals (``comms.Busy``, ``Busy.overlap``), PyTorch 2.0 annotation lookups
(``comms.Annotations.within``) and an op's first tensor against plain references: the code they had before their
checks were inlined, the merge kept its last end in a local and a shape-less op stopped decoding its types."""

from __future__ import annotations

import bisect
import random
from collections import defaultdict
from typing import Any

import msgspec
import pytest

from roofline.ingest.torch.comms import OVERLAP, Annotations, Busy, _first_tensor
from roofline.ingest.torch.decode import NULL, Args, Event


def reference_merged(gpu: list[Event]) -> dict[Any, tuple[list[float], list[float], list[float]]]:
    """Busy's intervals as first written: a call per check, ``max`` on the list's last end, sums through it."""
    spans: dict[Any, list[tuple[float, float]]] = defaultdict(list)
    for e in gpu:
        name = e.name
        comm = name.__class__ is str and name[:4].lower() in ("nccl", "rccl")
        if e.cat in ("kernel", "Kernel") and not comm and e.ts.__class__ in (int, float) \
                and e.dur.__class__ in (int, float):
            a = e.args
            dev = a.device if a is not None and a.device is not None else e.pid
            dev = dev if dev.__class__ not in (list, dict) else None
            spans[dev].append((float(e.ts), float(e.ts) + float(e.dur)))
    merged = {}
    for dev, iv in spans.items():
        iv.sort()
        starts, ends = [iv[0][0]], [iv[0][1]]
        for s, t in iv[1:]:
            if s <= ends[-1]:
                ends[-1] = max(ends[-1], t)
            else:
                starts.append(s)
                ends.append(t)
        cum = [0.0]
        for s, t in zip(starts, ends):
            cum.append(cum[-1] + t - s)
        merged[dev] = (starts, ends, cum)
    return merged


def _kernel(rng: random.Random) -> Event:
    ts = rng.choice([rng.randint(0, 400), rng.randint(0, 400) + rng.choice([0.5, 0.25, 0.1]), -0.0, 0.0,
                     "12", None, 2 ** 60 + rng.randint(0, 9)])
    dur = rng.choice([rng.randint(0, 30), rng.random() * 30, 0.0, -0.0, 0, "3", None, 1e-9])
    name = rng.choice(["gemm", "ncclKernel_AllReduce", "NCCLx", "rcclAllGather", "RcCl_y", "nccl", "ncc", "",
                       None, 7, "İnccl", "elementwise"])
    cat = rng.choice(["kernel", "kernel", "Kernel", "gpu_memcpy", "gpu_memset"])
    device = rng.choice([None, 0, 1, [1], {"a": 1}, "2"])
    args = rng.choice([None, Args(device=device), Args(device=device), Args()])
    return Event(cat=cat, name=name, pid=rng.choice([0, 1, 9, [3]]), tid=1, ts=ts, dur=dur, args=args)


@pytest.mark.parametrize("seed", range(40))
def test_busy_intervals_are_the_reference_merge_on_random_kernels(seed: int) -> None:
    rng = random.Random(seed)
    gpu = [_kernel(rng) for _ in range(rng.randint(1, 300))]
    # (repr: NaN-free floats compare exactly, and -0.0 is told from 0.0)
    assert repr(Busy(gpu).merged) == repr(reference_merged(gpu))


def test_busy_keeps_the_first_of_equal_ends_and_sums_in_the_same_order() -> None:
    gpu = [Event(cat="kernel", name="k", pid=0, tid=0, ts=ts, dur=dur, args=Args(device=0))
           for ts, dur in ((0, 0.0), (-0.0, 0.0), (0.1, 0.2), (0.2, 0.1), (5, 1), (6, 0), (1e16, 3), (1e16, 1))]
    got = Busy(gpu).merged
    assert repr(got) == repr(reference_merged(gpu))
    assert got[0][0][:3] == [-0.0, 0.1, 5.0] and got[0][1][2] == 6.0


def test_busy_leaves_out_collective_kernels_copies_and_events_without_numbers() -> None:
    keep = Event(cat="kernel", name="gemm", pid=0, tid=0, ts=10, dur=5, args=Args(device=3))
    gpu = [keep, Event(cat="kernel", name="ncclKernel_AllReduce", pid=0, tid=0, ts=0, dur=100, args=Args(device=3)),
           Event(cat="gpu_memcpy", name="Memcpy HtoD", pid=0, tid=0, ts=0, dur=100, args=Args(device=3)),
           Event(cat="kernel", name="gemm", pid=0, tid=0, ts="0", dur=100, args=Args(device=3))]
    assert Busy(gpu).merged == {3: ([10.0], [15.0], [0.0, 5.0])}


def _note(rng: random.Random) -> Event:
    return Event(cat="user_annotation", name=rng.choice(["nccl:all_reduce", "rccl:x", "other", None]),
                 pid=rng.choice([1, 2, [1]]), tid=rng.choice([1, 2]), ts=rng.choice([rng.randint(0, 99), rng.random() * 99]),
                 dur=5, args=rng.choice([None, Args()]))


@pytest.mark.parametrize("seed", range(20))
def test_an_annotation_within_an_op_is_the_first_one_starting_in_its_span(seed: int) -> None:
    rng = random.Random(seed)
    notes = [_note(rng) for _ in range(rng.randint(0, 80))]
    found = Annotations(notes)
    per: dict[Any, list[tuple[float, Event]]] = defaultdict(list)
    for e in notes:
        if e.name.__class__ is str and e.name.startswith(("nccl:", "rccl:")) and e.args is not None and \
                e.pid.__class__ is int:
            per[(e.pid, e.tid)].append((float(e.ts), e))
    for v in per.values():
        v.sort(key=lambda x: x[0])
    for _ in range(60):
        op = Event(cat="cpu_op", name="record_param_comms", pid=rng.choice([1, 2, 3, [1]]), tid=rng.choice([1, 2]),
                   ts=rng.randint(-5, 100), dur=rng.choice([0, 3, 20]))
        key = (op.pid, op.tid) if op.pid.__class__ is int else None
        hits = per.get(key, []) if key is not None else []
        i = bisect.bisect_left(hits, float(op.ts), key=lambda x: x[0])
        want = hits[i][1] if i < len(hits) and hits[i][0] <= float(op.ts) + float(op.dur) else None
        assert found.within(op) is want


def reference_overlap(busy: Busy, evs: list[Event]) -> tuple[float, float, str]:
    comm = [e for e in evs if e.cat in ("kernel", "Kernel") and e.name.__class__ is str
            and e.name[:4].lower() in ("nccl", "rccl")]
    us = sum(busy.overlapped_us(e) for e in comm)
    return (sum(float(e.dur) for e in comm) - us) * 1e-6, us * 1e-6, OVERLAP


@pytest.mark.parametrize("seed", range(20))
def test_a_rows_overlap_sums_its_collective_kernels_as_the_reference_does(seed: int) -> None:
    rng = random.Random(seed)
    gpu = [_kernel(rng) for _ in range(200)]
    gpu = [e for e in gpu if e.ts.__class__ in (int, float) and e.dur.__class__ in (int, float)]
    busy = Busy(gpu)
    for _ in range(50):
        evs = rng.sample(gpu, rng.randint(1, min(4, len(gpu))))
        assert repr(busy.overlap(evs)) == repr(reference_overlap(busy, evs))
    assert repr(busy.overlap([])) == repr(reference_overlap(busy, [])) == "(0.0, 0.0, " + repr(OVERLAP) + ")"


@pytest.mark.parametrize(("dims", "types", "want"), [
    (None, None, (None, None)),
    (None, b'["float"]', (None, None)),  # a dtype without shapes is no tensor
    (b"[[4, 8]]", b'["float"]', (32, "float")),
    (b"[[[4, 8]]]", b'["TensorList"]', (32, "TensorList")),
    (b"[]", b"[]", (None, None)),
    (b"[[2, 3]]", None, (6, None)),
])
def test_the_first_tensor_of_an_op_is_read_from_its_recorded_shapes(dims: bytes | None, types: bytes | None,
                                                                     want: tuple[Any, Any]) -> None:
    raw = (lambda b: msgspec.Raw(b) if b is not None else NULL)
    for field in ("input_dims", "input_dims_lc"):
        assert _first_tensor(Args(**{field: raw(dims)}, input_type=raw(types))) == want
    assert _first_tensor(None) == (None, None)
