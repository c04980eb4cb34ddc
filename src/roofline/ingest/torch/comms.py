"""A Kineto row's collective: which one, the message it moves, its process group, and how much of its GPU time
ran while other kernels ran on the same device (overlapped) — what ``analysis/comm.py`` puts on the links.

What each PyTorch era records (``docs/collectives.md``):

* 2.1+: ``record_param_comms`` (and, 2.4+, the NCCL kernel itself) carries ``Collective name``, ``In msg nelems``,
  ``Out msg nelems``, ``dtype``, ``Group size``, ``Process Group Name``/``Description``/``Ranks``: used as recorded;
* 2.0: ``record_param_comms`` has only ``Input Dims``/``Input type``; its caller (``c10d::_allgather_base_``,
  ``c10d::_reduce_scatter_base_``, ``c10d::alltoall_base_``: output then input tensor) names the collective, and an
  all-gather's or reduce-scatter's two tensors give the group size (their element ratio). No process group;
* ≤ 1.13: no sizes at all: the collective from the NCCL kernel's name (``ncclKernel_AllReduce_RING_LL_Sum_float``).

Nothing is guessed: a size, group or name the trace does not hold stays missing with the reason.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from typing import Any

from roofline.ingest.torch.decode import KERNEL_CATS, NULL, Event, shapes
from roofline.ingest.torch.scan import NUMBER
from roofline.metrics.ops.collectives import canonical, collective_bytes, kernel_collective, message_bytes
from roofline.schema import UNAVAILABLE

NAN = float("nan")
#: the row columns this module fills, in the order of the tuples it makes
COLLECTIVE_COLUMNS = ("collective", "collective_source", "message_bytes", "message_bytes_source", "group_size",
                      "group_size_source", "process_group", "comm_exposed_s", "comm_overlapped_s", "comm_overlap_source")
NOT_COMM = (None, None, NAN, None, None, None, None, NAN, NAN, None)
#: a row with an NCCL/RCCL kernel that no record names (``ncclDevKernel_Generic`` launched outside the window)
UNNAMED = (None, (f"{UNAVAILABLE}: the kernel's name names no collective and no op or arg of the trace records "
                 "it (a generic NCCL/RCCL kernel with no launch in the window)"), NAN, None, None, None, None)
NO_GROUP = (f"{UNAVAILABLE}: the trace records no process group for this call (PyTorch < 2.1's record_param_comms "
            "has no Group size; distributedInfo's world size is the default group's only): profile with PyTorch 2.1+")
NO_SIZE = (f"{UNAVAILABLE}: the trace records no message size for this collective (PyTorch < 2.0 record_param_comms "
           "has no args): profile with PyTorch 2.1+ (record_param_comms records In/Out msg nelems)")
OVERLAP = ("Σ over its NCCL/RCCL kernels of the time another (non-collective) kernel ran on the same device "
           "(the trace's kernel intervals)")


def is_comm(name: str, kernel: Any) -> bool:
    """Whether a row (its op's name, its longest GPU event's name) is a collective's: cheap string tests."""
    if name == "record_param_comms" or name.startswith(("c10d::", "nccl:", "rccl:")):
        return True
    return kernel.__class__ is str and kernel[:4].lower() in ("nccl", "rccl")


def _numel(dims: Any) -> int | None:
    if not isinstance(dims, list) or not all(isinstance(d, int) for d in dims):
        return None
    return math.prod(dims)


def _first_tensor(a: Any) -> tuple[int | None, Any]:
    """(elements, dtype) of the first tensor argument an op records (a TensorList's first tensor)."""
    if a is None:
        return None, None
    raw = a.input_dims if a.input_dims is not NULL else a.input_dims_lc
    if raw is NULL:  # (no shapes recorded, the usual collective of PyTorch < 2.0: nothing to decode)
        return None, None
    dims = shapes(raw)
    if not isinstance(dims, list) or not dims:
        return None, None
    types = shapes(a.input_type)
    d0 = dims[0]
    t0 = types[0] if isinstance(types, list) and types else None
    if isinstance(d0, list) and d0 and isinstance(d0[0], list):  # a TensorList: [[N]]
        d0 = d0[0] if len(dims[0]) == 1 else None
    elif isinstance(t0, str) and t0.lower() in ("tensorlist", "genericlist"):  # a list the trace did not expand
        return None, None
    return _numel(d0), t0


def _two_tensors(a: Any) -> tuple[int | None, int | None, Any]:
    """(output elements, input elements, dtype) of a c10d ``*_base_`` op: its first two arguments."""
    dims, types = shapes(a.input_dims if a.input_dims is not NULL else a.input_dims_lc), shapes(a.input_type)
    if not isinstance(dims, list) or len(dims) < 2 or not isinstance(types, list) or len(types) < 2:
        return None, None, None
    return _numel(dims[0]), _numel(dims[1]), types[1]


class Annotations:
    """PyTorch 2.0's ``nccl:<collective>`` annotations (``user_annotation``), which record the tensor a collective
    sends (``Input Dims``/``Input type``) inside ``record_param_comms``: looked up by thread and time."""

    def __init__(self, notes: list[Event]) -> None:
        self.by_thread: dict[Any, list[tuple[float, Event]]] = defaultdict(list)
        for e in notes:
            if e.name.__class__ is str and e.name.startswith(("nccl:", "rccl:")) and e.args is not None:
                try:
                    self.by_thread[(e.pid, e.tid)].append((float(e.ts), e))
                except TypeError:
                    continue
        for v in self.by_thread.values():
            v.sort(key=lambda x: x[0])
        self.starts = {k: [x[0] for x in v] for k, v in self.by_thread.items()}  # (bisected without a key function)

    def within(self, op: Event) -> Event | None:
        """The first annotation on ``op``'s thread that starts inside its span."""
        key = (op.pid, op.tid)
        try:
            found = self.by_thread.get(key)
        except TypeError:
            return None
        if not found:
            return None
        a, b = float(op.ts), float(op.ts) + float(op.dur)
        i = bisect.bisect_left(self.starts[key], a)
        return found[i][1] if i < len(found) and found[i][0] <= b else None


def collective(op: Event | None, caller: Event | None, margs: Any, kernel: Any,
               notes: Annotations | None = None) -> tuple[Any, ...]:
    """The row's collective columns (COLLECTIVE_COLUMNS less the overlap), from the best record there is."""
    for a, where in ((margs, "the NCCL kernel's args"), (op.args if op is not None else None, "record_param_comms args")):
        if a is not None and a.collective is not None and canonical(a.collective) is not None:
            return _recorded(a, where)
    name = str(op.name) if op is not None else ""
    c10d = op if name.startswith("c10d::") else caller if caller is not None and str(caller.name).startswith("c10d::") \
        else None
    if c10d is not None and canonical(str(c10d.name).rstrip("_")) is not None:
        return _from_c10d(c10d, op, notes)
    coll = kernel_collective(kernel)
    if coll is None:
        coll = canonical(name)
        if coll is None:
            return NOT_COMM[:7]
        src = f"recorded: the op's name ({name})"
    else:
        src = f"recorded: the NCCL kernel's name ({str(kernel).split('(')[0]})"
    return (coll, src, NAN, NO_SIZE, None, NO_GROUP, None)


def _recorded(a: Any, where: str) -> tuple[Any, ...]:
    coll = canonical(a.collective)
    in_b = collective_bytes(a.nelems, a.dtype) if a.nelems is not None else None
    out_b = collective_bytes(a.out_nelems, a.dtype) if a.out_nelems is not None else None
    found = message_bytes(coll, in_b, out_b)  # type: ignore[arg-type]
    if found is None:
        size, size_src = NAN, f"{UNAVAILABLE}: {where} hold no usable In/Out msg nelems and dtype"
    else:
        size = found[0]
        nel = a.out_nelems if found[1].startswith("the output") else a.nelems
        size_src = f"recorded: {found[1]}, {nel} elements × {a.dtype} size ({where})"
    group = a.group_size if a.group_size.__class__ is int and a.group_size > 0 else None
    group_src = f"recorded: Group size ({where})" if group is not None else \
        f"{UNAVAILABLE}: {where} hold no Group size: profile with PyTorch 2.1+"
    pg = None
    if a.pg_name is not None or a.pg_ranks is not None:
        desc = f" ({a.pg_desc})" if isinstance(a.pg_desc, str) and a.pg_desc not in ("", "undefined") else ""
        pg = f"{a.pg_name}{desc}: ranks {a.pg_ranks}"
    return (coll, f"recorded: Collective name {a.collective!r} ({where})", size, size_src, group, group_src, pg)


def _from_c10d(c10d: Event, op: Event | None, notes: Annotations | None = None) -> tuple[Any, ...]:
    cname = str(c10d.name)
    coll = canonical(cname.rstrip("_"))
    src = f"recorded: the c10d op ({cname})"
    group, group_src = None, NO_GROUP
    in_b = out_b = None
    if c10d.args is not None and cname.endswith("_base_"):  # (output, input, ...): both messages and their ratio
        out_n, in_n, dtype = _two_tensors(c10d.args)
        in_b = collective_bytes(in_n, dtype) if in_n is not None else None
        out_b = collective_bytes(out_n, dtype) if out_n is not None else None
        if coll in ("all_gather", "reduce_scatter") and in_n and out_n:
            big, small = (out_n, in_n) if coll == "all_gather" else (in_n, out_n)
            if big % small == 0:
                group = big // small
                group_src = (f"derived: {cname}'s {'output' if coll == 'all_gather' else 'input'} elements / "
                             f"{'input' if coll == 'all_gather' else 'output'} elements ({big} / {small})")
        where = f"{cname} Input Dims × Input type ({dtype})"
    else:  # allreduce_/broadcast_: a TensorList the trace may not expand; record_param_comms' own first tensor
        n, dtype = _first_tensor(c10d.args)
        where = f"{cname}'s first tensor"
        if n is None and op is not None and op is not c10d:
            n, dtype = _first_tensor(op.args)
            where = "record_param_comms' first tensor"
        if n is None and notes is not None and op is not None:
            note = notes.within(op)
            if note is not None:
                n, dtype = _first_tensor(note.args)
                where = f"the {note.name} annotation's tensor"
        in_b = collective_bytes(n, dtype) if n is not None and dtype else None
        out_b = in_b
        where = f"{where}: Input Dims × Input type ({dtype})"
    found = message_bytes(coll, in_b, out_b)  # type: ignore[arg-type]
    if found is None:
        return (coll, src, NAN, (f"{UNAVAILABLE}: no tensor shapes recorded for {cname} (or a TensorList the "
                "trace does not expand): record with torch.profiler.profile(record_shapes=True) on PyTorch 2.1+"), group, group_src, None)
    return (coll, src, found[0], f"recorded: {found[1]}, {where}", group, group_src, None)


class Busy:
    """The merged intervals (µs) of the non-collective kernels of each device: how much of a collective's
    kernel ran while compute ran (overlapped) and how much ran alone (exposed)."""

    def __init__(self, gpu: list[Event]) -> None:
        # one pass with the checks of _is_comm_kernel and _device inlined, then the merge and the running sum with
        # the last end and the sum in locals: the same comparisons and float sums in the same order, ~40% less
        # time (this runs over every GPU event of a trace with collectives: 22k on the V100 trace)
        spans: dict[Any, list[tuple[float, float]]] = defaultdict(list)
        kernel_cats, number, comm = KERNEL_CATS, NUMBER, COMM_PREFIXES
        for e in gpu:
            if e.cat in kernel_cats:
                name, ts, dur = e.name, e.ts, e.dur
                if (name.__class__ is not str or name[:4].lower() not in comm) and ts.__class__ in number \
                        and dur.__class__ in number:
                    a = e.args
                    dev = a.device if a is not None and a.device is not None else e.pid
                    ts = float(ts)
                    spans[dev if dev.__class__ not in (list, dict) else None].append((ts, ts + float(dur)))
        self.merged: dict[Any, tuple[list[float], list[float], list[float]]] = {}
        for dev, iv in spans.items():
            iv.sort()
            intervals = iter(iv)
            first, last = next(intervals)
            starts, ends = [first], []
            for s, t in intervals:
                if s <= last:
                    if t > last:  # noqa: PLR1730 (max(last, t) without a call: the first of equals kept)
                        last = t
                else:
                    ends.append(last)
                    starts.append(s)
                    last = t
            ends.append(last)
            cum, total = [0.0], 0.0
            for s, t in zip(starts, ends):
                total = total + t - s
                cum.append(total)
            self.merged[dev] = (starts, ends, cum)

    def overlapped_us(self, e: Event) -> float:
        """µs of ``e``'s span during which some non-collective kernel ran on its device."""
        found = self.merged.get(_device(e))
        if found is None:
            return 0.0
        starts, ends, cum = found
        a, b = float(e.ts), float(e.ts) + float(e.dur)
        i = bisect.bisect_right(ends, a)  # first interval ending after a
        j = bisect.bisect_left(starts, b)  # intervals before j start before b
        if j <= i:
            return 0.0
        total = cum[j] - cum[i]
        total -= max(0.0, a - starts[i])  # the first interval's part before a
        total -= max(0.0, ends[j - 1] - b)  # the last interval's part after b
        return max(0.0, total)

    def overlap(self, evs: list[Event]) -> tuple[float, float, str]:
        """(seconds of the row's collective kernels that ran alone (exposed), seconds overlapped with other
        kernels, how)."""
        us = dur = 0  # (as sum() adds: from the int 0, in the events' order)
        for e in evs:
            if e.cat in KERNEL_CATS and _is_comm_kernel(e.name):
                us += self.overlapped_us(e)
                dur += float(e.dur)
        return (dur - us) * 1e-6, us * 1e-6, OVERLAP


def has_comm_kernel(evs: list[Event]) -> bool:
    return any(e.cat in KERNEL_CATS and _is_comm_kernel(e.name) for e in evs)


#: what an NCCL/RCCL kernel's name starts with, in any case
COMM_PREFIXES = ("nccl", "rccl")


def _is_comm_kernel(name: Any) -> bool:
    return name.__class__ is str and name[:4].lower() in COMM_PREFIXES


def _device(e: Event) -> Any:
    a = e.args
    dev = a.device if a is not None and a.device is not None else e.pid
    return dev if dev.__class__ not in (list, dict) else None
