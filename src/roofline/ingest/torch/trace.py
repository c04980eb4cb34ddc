"""PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzip: one row per GPU operation.

Every schema era is read (``shared/reference/trace_formats.md`` §2): the 1.8-era bare array with
capitalised categories and ``external id``; 1.9 with ``schemaVersion``; 1.10+ ``cpu_op``/``kernel``/
``ac2g``; 2.x with ``cuda_driver`` and float ``ts``. NVIDIA and ROCm alike.

A row is a CPU operator with the GPU work it launched (kernels, memcpys, memsets): its GPU time
is the sum of their durations, FLOPs and bytes come from the op's shapes (``metrics/ops/``),
memcpy/memset bytes and NCCL message sizes from their own args. GPU events are tied to their op by
the launch's ``correlation`` → runtime event → ``External id`` (or, failing that, the innermost op
whose span holds the launch on the same thread), then by the event's own ``External id``. GPU
events that cannot be tied (launched before the window opened, graph replays) are rows of their
own, labelled in ``attribution``: GPU time is never dropped. CUPTI range-profiler events carry
measured FP instruction counts; their rows use those.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from roofline.errors import NoGpuWorkError, NoKernelsError, path_text
from roofline.ingest.common import (
    check_exists,
    gc_paused,
    json_bytes,
    provenance_record,
)
from roofline.ingest.torch.columns import (
    dim3_columns,
    expand,
    expanded,
    first_codes,
    repeated,
    step_column,
)
from roofline.ingest.torch.comms import (
    COLLECTIVE_COLUMNS,
    NOT_COMM,
    UNNAMED,
    Annotations,
    Busy,
    collective,
    has_comm_kernel,
    is_comm,
)
from roofline.ingest.torch.costs import NO_OP_COLUMNS
from roofline.ingest.torch.costs import copy_bytes as _copy_bytes
from roofline.ingest.torch.costs import copy_cost as _copy_cost
from roofline.ingest.torch.costs import host_copy as _host_copy
from roofline.ingest.torch.costs import modelled as _modelled
from roofline.ingest.torch.decode import (
    COPY_CATS,
    KERNEL_CATS,
    NULL,
    RANGE_CAT,
    Args,
    Event,
    decode,
    range_events,
    shapes,
)
from roofline.ingest.torch.devices import unlisted_devices
from roofline.ingest.torch.graphs import graph_launched
from roofline.ingest.torch.links import link
from roofline.ingest.torch.scan import NUMBER, Scan
from roofline.ingest.torch.stream import Uncut
from roofline.ingest.torch.stream import events as stream_events
from roofline.ingest.torch.summary import estimates, trace_meta, unmodelled
from roofline.ingest.torch.threads import Threads as _Threads
from roofline.ingest.validate import note
from roofline.metrics.flops import flops_from_counts
from roofline.metrics.ops import CALLEE_OPS, NOT_RECORDED, OpCost, collective_cost, conv_out_from_consumer, cost
from roofline.metrics.ops.attention import is_paged, paged_cost
from roofline.schema import (
    COLUMN_POOL,
    UNAVAILABLE,
    kernel_dtypes,
    kernels_from_columns,
    set_provenance,
)

NAN = float("nan")
NO_CACHE = (f"{UNAVAILABLE}: a PyTorch trace has no cache counters; profile the kernel with "
            "ncu --section SpeedOfLight_HierarchicalSingleRooflineChart for L2/L1")
COLLECTIVE_WHY = f"{UNAVAILABLE}: a collective moves data; its reduction FLOPs are not modelled"
NO_MODEL = "{u}: no FLOP model for {op} (time is counted; see docs/traces.md for the ops modelled)"
#: backward ops whose shapes are int lists -> (their caller, the output_mask of their one gradient)
SPLIT_BACKWARD = {"aten::cudnn_convolution_backward_input": (("aten::cudnn_convolution_backward",), "[True, False]"),
                  "aten::cudnn_convolution_backward_weight": (("aten::cudnn_convolution_backward",), "[False, True]"),
                  "aten::miopen_convolution_backward_input": (("aten::miopen_convolution_backward",), "[True, False]"),
                  "aten::miopen_convolution_backward_weight": (("aten::miopen_convolution_backward",), "[False, True]")}
#: a row's cost columns, in the order of the tuples ``_costs`` makes
COST_COLUMNS = ("flop_fp64", "flop_fp32", "flop_fp16", "flop_tensor", "flop_fp64_source", "flop_fp32_source",
                "flop_fp16_source", "flop_tensor_source", "tensor_path", "dram_bytes", "dram_bytes_source",
                "op_args", "precision_evidence", "host_link_bytes", "op_kernels")
MISSING = object()  # a signature not modelled yet (None is a cached "no model")
#: the attribution of an op whose kernels are a graph replay no capture trace was joined to
GRAPH_IN_OP = "op: graph replay (no capture trace joined)"
NO_CAPTURE = (f"{UNAVAILABLE}: {{op}} replays a CUDA/HIP graph: its kernels' ops and shapes are in the trace "
              "recorded while the graph was captured (vLLM/SGLang write capture_traces/; torch.compile: profile the "
              "capture too); pass it with --capture")
STEP = object()  # a row whose nvtx_range is the ProfilerStep holding it (looked up for all rows at once)
#: a row's other varying columns, in the order of the tuples ``_build`` makes (``_ts`` sorts them)
ROW_COLUMNS = ("_ts", "kernel_name", "kernel_short_name", "mangled_name", "nvtx_range", "_device", "duration_s",
               "duration_s_source", "attribution", "_grid", "_block", "_cost", "op_input_dims", "op_input_types",
               "_coll")


def read(path: str | Path) -> pd.DataFrame:
    """The canonical frame of a Kineto trace: one row per CPU op with GPU work, plus orphan GPU events."""
    path = Path(path)
    check_exists(path)
    with gc_paused():
        top: dict[str, Any] = {}
        streamed = stream_events(path, top)
        try:  # decoded in pieces as the gunzip goes, where the document can be cut (every Kineto trace)
            return _build(path, [], streamed, top)
        except Uncut:
            pass
        finally:
            streamed.close()  # (an error while scanning a piece: the gunzip and its file are closed now)
        held = [json_bytes(path)]  # (a holder, not a local: _build drops the JSON once it knows it is not needed)
        events, top = decode(path, held[0])
        chunks = [events]
        del events
        return _build(path, held, chunks, top)


def _build(path: Path, raw: bytes | list[bytes], chunks: Iterable[list[Event]], top: dict[str, Any]) -> pd.DataFrame:
    """The frame of decoded events, given as lists in document order (the pieces of a streamed read, or one
    list). ``top`` (the top-level fields) is read after the events: a streamed read fills it at its end.
    ``raw`` is the JSON, or read()'s holder of it (empty for a streamed read), decoded again only for CUPTI
    range events (re-read from the file if not held). With a holder, read() uses neither it nor the lists
    afterwards: each list is emptied once scanned and the holder after the scan, so the events the reader
    does not use (flow arrows, instant events, Python frames) and the JSON (54 MB for the V100 trace, unless
    raw shapes, ``msgspec.Raw``, point into it) are freed before the frame's memory peak."""
    scan, events = Scan(), []
    for events in chunks:
        scan.add(events)
        if raw.__class__ is list:
            events.clear()  # (read() holds the one list of a whole decode: the events not kept are freed now)
    ops, by_ext, runtimes, gpu, steps, notes = scan.ops, scan.by_ext, scan.runtimes, scan.gpu, scan.steps, scan.notes
    skipped, has_ranges, n_events, skipped_gpu = scan.skipped, scan.has_ranges, scan.n_events, scan.skipped_gpu
    del scan, events
    if raw.__class__ is list:
        held, raw = raw, ((raw[0] if raw else json_bytes(path)) if has_ranges else b"")  # type: ignore[index]
        held.clear()  # type: ignore[union-attr]
    props = top.get("deviceProperties")
    devices = {p.get("id"): p for p in (props if isinstance(props, list) else []) if isinstance(p, dict)}
    dist = top.get("distributedInfo")
    rank = dist.get("rank") if isinstance(dist, dict) else None
    rank = rank if rank.__class__ is int else None  # a damaged value is no rank, not a crash later
    ranges = _ranges(path, raw) if has_ranges else []  # type: ignore[arg-type]
    if not gpu and not ranges:
        why = "no GPU events (kernel, memcpy, memset or CUPTI range): a CPU-only trace, nothing to put on a GPU roofline"
        if skipped:
            why += f"; {skipped} events lacked ts or dur"
        backend = (top.get("distributedInfo") or {}).get("backend") if isinstance(top, dict) else None
        why = why.replace("a CPU-only trace", f"a CPU-only trace ({backend} backend)" if backend else "a CPU-only trace")
        raise (NoGpuWorkError if ops else NoKernelsError)(path, why)  # events, none on a GPU: a valid trace
    steps.sort()
    threads = _Threads(ops)
    groups, orphans = link(gpu, runtimes, by_ext, threads)  # each GPU event's op, or its orphan label

    rows = _Rows(devices, steps, threads)
    if any(e.name.__class__ is str and e.name[:4].lower() in ("nccl", "rccl") for e in gpu):
        rows.busy = Busy(gpu)  # collectives: their kernels' overlap with the device's other kernels
        rows.annotations = Annotations(notes)  # (PyTorch 2.0: the tensor an nccl:<collective> annotation records)
    # annotations and launches outlive events.clear(): paged attention looks its iteration up in them
    kept = notes + list(runtimes.values())
    rows.events = kept
    in_graph = graph_launched(groups, runtimes)  # graphs launched inside an op (a torch.compile region)
    graph_notes: list[str] = []
    taken: set[int] = set()
    if in_graph or any(label.startswith("orphan: graph replay") for _, label in orphans):
        from roofline.ingest.torch.graphs import attribute

        joined, orphans, graph_notes, taken = attribute(path, orphans, kept, [(e, "op") for _, _, e in in_graph])
        for cop, evs, cap_threads in joined.values():
            rows.threads = cap_threads  # a captured op's callees are in its capture trace
            rows.add(cop, evs, "graph replay: captured op")
        rows.threads = threads
        if taken:  # (by position in the op's group: no id()-keyed state)
            gone = {in_graph[j][:2] for j in taken}
            groups = {op: kept_evs for op, evs in groups.items()
                      if (kept_evs := [e for i, e in enumerate(evs) if (op, i) not in gone])}
    replayed = {in_graph[j][0] for j in range(len(in_graph)) if j not in taken}  # ops still holding replayed kernels
    for op, evs in groups.items():
        rows.add(ops[op], evs, GRAPH_IN_OP if op in replayed else "op", op)
    for e, label in orphans:
        rows.add(None, [e], label)
    for r in ranges:
        rows.add_range(r)
    rows.settle()
    import msgspec

    meta = provenance_record(path, "torch-trace", reader=f"msgspec {msgspec.__version__}")
    meta.update(trace_meta(top, n_events, gpu + ranges, orphans, groups, skipped))
    if skipped_gpu:  # never silent: their time is missing from every total (a warning line, see ingest/validate.py)
        note(meta, f"{skipped_gpu} GPU kernel/copy events have a ts or dur that is not a number: left out, their "
                   "time is missing")
    # the events are not needed past here: freed before the frame's memory peak
    del ops, gpu, runtimes, groups, orphans, kept, threads, notes, ranges, by_ext
    rows.events = []
    rows.threads = None
    frame = rows.frame(path, rank)
    meta["unmodelled_ops"] = unmodelled(frame)
    if rows.unlisted[1]:
        meta["device_note"] = rows.unlisted[1]
    if graph_notes:
        meta["graph_replays"] = graph_notes
    return set_provenance(frame, [meta])


def _ranges(path: Path, raw: bytes) -> list[Any]:
    return [r for r in range_events(path, raw)
            if r.cat == RANGE_CAT and r.ph == "X" and r.ts.__class__ in NUMBER and r.dur.__class__ in NUMBER]


class _Rows:
    """The frame's rows as tuples (ROW_COLUMNS), with the cost columns computed once per op signature.

    A training trace repeats a few hundred distinct (op, shapes) signatures thousands of times, so the
    cost model and its source strings are built per signature and shared, not per row.
    """

    def __init__(self, devices: dict[Any, Any], steps: list[tuple[float, float, str]],
                 threads: _Threads | None = None) -> None:
        self.threads = threads  # ops by thread: a conv's consumer, a backward pass's caller
        self.devices = devices
        self.only = next(iter(devices.values())) if len(devices) == 1 else {}
        self.steps = steps
        self.mark = STEP if steps else None  # a row's nvtx_range until frame() looks its step up
        self.rows: list[tuple[Any, ...]] = []
        self.costs: dict[Any, tuple[Any, ...]] = {}
        self.models: dict[Any, OpCost | None] = {}  # per op signature: the model's cost (None: no model)
        self.texts: dict[bytes, str] = {}
        self.sources: dict[Any, str] = {}  # duration sources by (events, category), and by category for one event
        self.events: list[Event] = []
        self.iterations: Any = None
        self.unlisted: tuple[dict[str, Any], str | None] = ({}, None)  # (the props of unlisted device ids, why)
        self.busy: Busy | None = None  # the device's non-collective kernel intervals, where there are collectives
        self.annotations: Annotations | None = None
        self.pending: list[tuple[int, Event, int, Args | None, Any, list[Event]]] = []  # collective rows: settle()

    def add(self, op: Event | None, evs: list[Event], label: str, index: int | None = None) -> None:
        """A row: ``op`` (the op at ``index`` in the threads' ops, if given) and its GPU events."""
        if len(evs) == 1:
            main = evs[0]
            dur_us = float(main.dur)
        else:
            dur_us = sum(float(e.dur) for e in evs)
            main = max(evs, key=lambda e: float(e.dur))
        margs = main.args
        if margs is not None:
            dev = margs.device if margs.device is not None else main.pid
            grid, block = margs.grid, margs.block  # as recorded: frame() checks them for the whole column at once
        else:
            dev, grid, block = main.pid, None, None
        if dev.__class__ in (list, dict):  # unhashable: a damaged trace's device is no device
            dev = None
        if op is not None:
            ts, name = op.ts, op.name
        else:
            ts, name = float(main.ts), main.name
        if name.__class__ is not str:  # a damaged trace's number or null: a name all the same
            name = "" if name is None else str(name)
        src = self.sources.get(main.cat) if len(evs) == 1 else None  # (keyed by the category alone: no tuple)
        if src is None:
            key = (len(evs), main.cat)
            src = self.sources.get(key)
            if src is None:
                src = self.sources[key] = f"Σ dur of {len(evs)} GPU event(s) ({main.cat})"
                if len(evs) == 1:
                    self.sources[main.cat] = src
        c = self._cost11(op, evs, margs, label)
        if len(c) != 15:  # the 11 columns every row has, + NO_OP_COLUMNS
            c += NO_OP_COLUMNS
        a = op.args if op is not None else None
        if a is None or (a.input_dims is NULL and a.input_dims_lc is NULL and a.input_type is NULL):
            dims = types = None  # (_inputs' first case, without a call per row)
        else:
            dims, types = self._inputs(op)
        coll = NOT_COMM
        if is_comm(name, main.name):
            if index is not None and self.threads is not None:  # its caller is looked up with the others'
                self.pending.append((len(self.rows), op, index, margs, main.name, evs))
            else:
                caller = self.threads.enclosing(op) if op is not None and self.threads is not None else None
                coll = self._coll(op, caller, margs, main.name, evs)
        self.rows.append((ts, name, name if op is not None else _short(name), main.name, self.mark, dev,
                          dur_us * 1e-6, src, label, grid, block, c, dims, types, coll))

    def _coll(self, op: Event | None, caller: Event | None, margs: Args | None, kernel: Any,
              evs: list[Event]) -> tuple[Any, ...]:
        """A collective row's columns (NOT_COMM for a row that is none)."""
        found = collective(op, caller, margs, kernel, self.annotations)
        if found[0] is not None or (self.busy is not None and has_comm_kernel(evs)):
            return (*(found if found[0] is not None else UNNAMED),
                    *(self.busy.overlap(evs) if self.busy is not None else (NAN, NAN, None)))
        return NOT_COMM

    def settle(self) -> None:
        """The collective columns of the rows added with their op's index: their callers (the ops enclosing
        them on their threads) looked up all at once (``Threads.callers_of``), then each row's."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        threads = self.threads
        assert threads is not None
        found = threads.callers_of([p[2] for p in pending])
        for i, (row, op, index, margs, kernel, evs) in enumerate(pending):
            caller = threads.enclosing(op) if found is None else threads.ops[found[i]] if found[i] >= 0 else None
            self.rows[row] = (*self.rows[row][:-1], self._coll(op, caller, margs, kernel, evs))

    def _inputs(self, op: Event | None) -> tuple[str | None, str | None]:
        """The op's recorded Input Dims and Input type, as the trace wrote them (JSON text)."""
        a = op.args if op is not None else None
        if a is None or (a.input_dims is NULL and a.input_dims_lc is NULL and a.input_type is NULL):
            return None, None
        dims = a.input_dims if a.input_dims is not NULL else a.input_dims_lc
        return (None if dims is NULL else self._text(dims)), (None if a.input_type is NULL else self._text(a.input_type))

    def _text(self, raw: Any) -> str:
        """Compact JSON of a raw value (the same whichever decoder path read it), once per distinct value."""
        key = bytes(raw)
        found = self.texts.get(key)
        if found is None:
            found = self.texts[key] = _text(raw)
        return found

    def _evidence(self, op: Event, name: str, c: OpCost, dims: Any, args: Args, evs: list[Event]) -> OpCost | None:
        """A cost from the ops around this one, when its own arguments leave FLOPs or bytes unavailable: a
        convolution's consumer, a MoE's callees, a cuDNN backward op's caller."""
        if c.why == NOT_RECORDED:  # a conv without stride/padding: its output from its consumer's input
            out = self._consumer_out(op, shapes(dims))
            if out is not None:
                return cost(name, shapes(dims), shapes(args.input_type), shapes(args.concrete), out)
        elif name in CALLEE_OPS and (c.flops != c.flops or c.bytes != c.bytes):
            return self._moe(op, tuple(str(e.name) for e in evs if e.cat in KERNEL_CATS))
        elif is_paged(name) and c.flops != c.flops:  # lengths from the graph launch's iteration annotation
            return paged_cost(name, shapes(dims), shapes(args.input_type), self._iteration(op))
        elif name in SPLIT_BACKWARD:
            found = self._from_caller(op, name)
            # the caller's count where it is whole, or where it has the FLOPs this op's own args lack (a torch
            # 1.8 trace records no Input type: its bytes stay unavailable, saying so)
            if found is not None and found.flops == found.flops and (found.bytes == found.bytes or c.flops != c.flops):
                return found
        return None

    def _moe(self, op: Event, kernels: tuple[str, ...]) -> OpCost | None:
        from roofline.metrics.ops.moe import callee_cost

        if self.threads is None or op.args is None:
            return None
        children = []
        for o in self.threads.within(op):
            a = o.args
            children.append((str(o.name), shapes(a.input_dims), shapes(a.concrete), shapes(a.input_type))
                            if a is not None else (str(o.name), None, None, None))  # (weights: dims + dtype)
        a = op.args
        return callee_cost(str(op.name), shapes(a.input_dims), shapes(a.input_type), shapes(a.concrete), children, kernels)

    def _iteration(self, op: Event) -> str | None:
        """The vLLM iteration annotation an op ran under: its graph launch's, else the one holding it."""
        found = getattr(self.threads, "iteration", MISSING)
        if found is not MISSING:  # a captured op: its graph launch's (capture-trace times are another clock)
            return found  # type: ignore[no-any-return]
        if not self.events:
            return None
        if self.iterations is None:
            from roofline.ingest.torch.graphs import Iterations

            self.iterations = Iterations(self.events)
        return self.iterations.enclosing(op)  # type: ignore[no-any-return]

    def _from_caller(self, op: Event, name: str) -> OpCost | None:
        """torch ≤ 1.10's cuDNN backward ops take the weight (or input) shape as an int list the trace does
        not record; their caller, ``cudnn_convolution_backward``, holds input, grad_output and weight as
        tensors: its count for the one gradient this op computes (output_mask set accordingly)."""
        caller = self.threads.enclosing(op) if self.threads is not None else None
        a = caller.args if caller is not None else None
        if a is None or caller.name not in SPLIT_BACKWARD[name][0]:  # type: ignore[union-attr]
            return None
        dims = shapes(a.input_dims if a.input_dims is not NULL else a.input_dims_lc)
        if not isinstance(dims, list) or len(dims) != 11:
            return None
        concrete = [""] * 10 + [SPLIT_BACKWARD[name][1]]
        return cost(caller.name, dims, shapes(a.input_type), concrete)  # type: ignore[union-attr]

    def _consumer_out(self, op: Event, dims: Any) -> list[int] | None:
        """A convolution's output shape, from the op that consumes it, when the link is unambiguous."""
        if self.threads is None:
            return None
        later = []
        for o in self.threads.following(op):
            a = o.args
            later.append(shapes(a.input_dims if a.input_dims is not NULL else a.input_dims_lc) if a is not None else None)
        return conv_out_from_consumer(dims, later)

    def _cost11(self, op: Event | None, evs: list[Event], margs: Args | None, label: str) -> tuple[Any, ...]:
        args = op.args if op is not None else None
        # an estimate the trace carries (Inductor/Triton), on the op or else its kernel: used as recorded
        if (args is not None and (args.kernel_flop is not None or args.kernel_num_gb is not None)) or \
                (margs is not None and (margs.kernel_flop is not None or margs.kernel_num_gb is not None)):
            for a in (args, margs):
                if a is not None and (a.kernel_flop is not None or a.kernel_num_gb is not None):
                    est = estimates(a, args, str(op.name) if op is not None else "")
                    if est is not None:
                        return est
        if args is not None:
            name = str(op.name)  # type: ignore[union-attr]
            dims = args.input_dims if args.input_dims is not NULL else args.input_dims_lc
            if dims is NULL and args.input_type is NULL and args.concrete is NULL:
                key: Any = (name, len(evs))  # no shapes recorded (common: record_shapes off): nothing to copy
            else:
                key = (name, len(evs), bytes(dims), bytes(args.input_type), bytes(args.concrete))
            c = self.models.get(key, MISSING)
            if c is MISSING:
                c = self.models[key] = cost(name, shapes(dims), shapes(args.input_type), shapes(args.concrete))
            if c is not None:
                # the kernels decide a matmul's precision; host copies take bytes off DRAM
                if len(evs) == 1:  # (the usual op: one GPU event; the same as the general case below)
                    e = evs[0]
                    kernels = (str(e.name),) if c.matmul_like and e.cat in KERNEL_CATS else ()
                    copies = _host_copy(evs) if e.cat in COPY_CATS else 0.0
                else:
                    kernels = tuple(sorted({str(e.name) for e in evs if e.cat in KERNEL_CATS})) if c.matmul_like else ()
                    copies = _host_copy(evs) if any(e.cat in COPY_CATS for e in evs) else 0.0
                if c.flops != c.flops or c.bytes != c.bytes:  # per call: evidence beyond the op's own args
                    extra = self._evidence(op, name, c, dims, args, evs)  # type: ignore[arg-type]
                    if extra is not None:
                        # a conv priced from its neighbours: its kernels still name its algorithm (op_kernels);
                        # its precision stays the dtype's, as before
                        names = kernels or (tuple(sorted({str(e.name) for e in evs if e.cat in KERNEL_CATS}))
                                            if extra.matmul_like else ())
                        return _modelled(extra, len(evs), kernels, copies, names)
                found = self.costs.get((key, kernels, copies))
                if found is None:
                    found = self.costs[(key, kernels, copies)] = _modelled(c, len(evs), kernels, copies)
                return found
        a = margs if margs is not None and margs.nelems is not None else args
        if a is not None and a.nelems is not None:
            coll = collective_cost(a.nelems, a.out_nelems, a.dtype, a.collective)
            if coll is not None:
                why = COLLECTIVE_WHY
                return (NAN, NAN, NAN, NAN, why, why, why, why, None, coll[0], coll[1])
        if (evs[0].cat in COPY_CATS) if len(evs) == 1 else all(e.cat in COPY_CATS for e in evs):
            copied = _copy_bytes(evs)  # (floats summed from 0.0, never -0.0; NaN keys only miss the memo)
            found = self.costs.get(("copy", copied))  # one tuple per distinct (device, host, unknown): copies repeat
            if found is None:
                found = self.costs[("copy", copied)] = _copy_cost(*copied)
            return found
        # the reason depends on the label, the op's name or its signature only: one tuple per distinct one
        # (a trace recorded without shapes has thousands of rows of the same few reasons)
        memo = ("orphan", label) if op is None else ("no args", str(op.name)) if args is None else ("no model", key)
        if label is GRAPH_IN_OP:
            memo = (label, str(op.name))  # type: ignore[union-attr]
        found = self.costs.get(memo)
        if found is None:
            if op is None:
                why = f"{UNAVAILABLE}: {label}; no CPU op shapes to model it"
            elif label is GRAPH_IN_OP:
                why = NO_CAPTURE.format(op=op.name)
            elif args is None or (args.input_dims is NULL and args.input_dims_lc is NULL) or \
                    not shapes(args.input_dims if args.input_dims is not NULL else args.input_dims_lc):
                why = (f"{UNAVAILABLE}: no Input Dims for {op.name}; "  # (a collective's size needs them too)
                       "record with torch.profiler.profile(record_shapes=True)")
            elif is_comm(str(op.name), None):  # judged on the link roofs (its size: message_bytes_source)
                why = COLLECTIVE_WHY
            else:
                why = NO_MODEL.format(u=UNAVAILABLE, op=op.name)
            found = self.costs[memo] = (NAN, NAN, NAN, NAN, why, why, why, why, None, NAN, why, *NO_OP_COLUMNS)
        return found

    def add_range(self, e: Any) -> None:
        """A CUPTI range-profiler event: measured FP instruction counts, FLOPs = add + mul + 2·fma."""
        a = e.args
        counts = [getattr(a, f"c{i}") if a is not None else None for i in range(9)]
        flops, sources = [], []
        for j, (letter, p) in enumerate((("d", "fp64"), ("f", "fp32"), ("h", "fp16"))):
            vals = counts[3 * j:3 * j + 3]
            if all(v.__class__ in NUMBER for v in vals):
                flops.append(flops_from_counts(*vals, p))
                sources.append(f"measured: CUPTI range profiler {letter}add + {letter}mul + 2·{letter}fma")
            else:
                flops.append(NAN)
                sources.append(f"{UNAVAILABLE}: the range profiler did not record {letter}add/{letter}mul/{letter}fma")
        costs = (*flops, NAN, *sources, f"{UNAVAILABLE}: no tensor counters in the range profiler", None, NAN,
                 f"{UNAVAILABLE}: the range profiler recorded no DRAM counters", *NO_OP_COLUMNS)
        prop_key = next(iter(self.devices)) if self.devices else None
        self.rows.append((float(e.ts), e.name, _short(e.name), None, None, prop_key, float(e.dur) * 1e-6,
                          "cuda_profiler_range dur", "measured: CUPTI range profiler", None, None, costs, None, None,
                          NOT_COMM))

    def frame(self, path: Path, rank: Any) -> pd.DataFrame:
        """The rows as a canonical frame (no roofs: a trace records none; the roofs stage attaches the spec
        table's). Repeated values (a signature's cost tuple, the device, the steps) are converted once and
        expanded."""
        rows = sorted(self.rows, key=itemgetter(0))
        n = len(rows)
        dtypes = kernel_dtypes()
        cols: dict[str, Any] = dict(zip(ROW_COLUMNS, zip(*rows))) if n else dict.fromkeys(ROW_COLUMNS, ())
        if self.steps and n:
            cols["nvtx_range"] = step_column(self.steps, cols["_ts"], cols["nvtx_range"], STEP)
        del cols["_ts"]
        if cols["kernel_short_name"] == cols["kernel_name"]:  # (an op's short name is its name: converted once)
            with suppress(pa.ArrowTypeError, pa.ArrowInvalid):  # (not all str: each converted as any column is)
                cols["kernel_name"] = cols["kernel_short_name"] = pa.array(cols["kernel_name"], pa.large_string(),
                                                                              memory_pool=COLUMN_POOL)
        colls = cols.pop("_coll")
        if any(c is not NOT_COMM for c in colls):  # (most traces: none, and the columns stay null)
            cols.update(dict(zip(COLLECTIVE_COLUMNS, map(list, zip(*colls)))))
        costs = cols.pop("_cost")
        cost_codes, firsts = first_codes(costs, id)  # rows share their signature's cost tuple (one object)
        distinct = [costs[i] for i in firsts]
        cols.update(expanded(distinct, cost_codes, COST_COLUMNS))
        devices = cols.pop("_device")
        if len(set(devices)) == 1:  # the usual trace: one device
            dev_codes, firsts = np.zeros(n, dtype=np.intp), [0]
        else:
            dev_codes, firsts = first_codes(devices)  # (by value, as the device's properties are looked up)
        self.unlisted = unlisted_devices([devices[i] for i in firsts], self.devices)
        props = [self._device(devices[i]) for i in firsts]
        for i, c in enumerate(("device_name", "sm_count", "compute_capability")):
            # one device (the usual trace): one value per column
            cols[c] = repeated(props[0][i], n, dtypes[c]) if len(props) == 1 else \
                expand([p[i] for p in props], dev_codes, dtypes[c])
        for c in ("_grid", "_block"):
            cols.update(dim3_columns(cols.pop(c), tuple(f"{c[1:]}_{axis}" for axis in "xyz")))  # type: ignore[arg-type]
        cols.update({"format": "torch-trace", "replay_ok": True, "kernel_id": np.arange(n), "rank": rank,
                     **{c: repeated(v, n, "string") for c, v in (("l2_bytes_source", NO_CACHE),
                                                                ("l1_bytes_source", NO_CACHE),
                                                                ("source_file", path_text(path)))}})
        return kernels_from_columns(cols, n)

    def _device(self, dev: Any) -> tuple[Any, Any, Any]:
        prop = self.devices.get(dev) or self.only or self.unlisted[0]
        major, minor = prop.get("computeMajor"), prop.get("computeMinor")
        cc = f"{major}.{minor}" if major.__class__ is int and minor.__class__ is int else None  # damaged: unknown
        return prop.get("name"), prop.get("numSms"), cc


def _text(raw: Any) -> str:
    import msgspec

    try:
        return msgspec.json.encode(msgspec.json.decode(raw)).decode()
    except (TypeError, msgspec.DecodeError):
        return str(raw)


def _short(name: Any) -> str:
    name = str(name)
    base = name.split("(")[0].split("<")[0].strip()
    return base.rsplit(" ", 1)[-1].rsplit("::", 1)[-1] or name[:60]
