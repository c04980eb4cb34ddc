"""Typed decoding of Kineto trace JSON: only the fields the reader uses become Python objects.

A generic parse (``orjson.loads``) builds a dict for every one of a trace's events and every
argument they carry, most of which the reader never looks at. ``msgspec`` decodes straight into
small structs, skipping unknown keys without building them (``bench/bench_trace.py``). Shapes stay raw
JSON (``msgspec.Raw``) until an op with GPU work needs its cost, and serve as the cache key of that cost.

Events are a union tagged by their phase (``ph``): complete events (``"X"``, all the reader keeps) get
every field, and every other phase (flow arrows, instant events, metadata: 92k of the V100 trace's 216k
events) an empty struct, with none of its fields decoded: 0.18 -> 0.135 s for that trace's decode.
(So invalid UTF-8 inside such an event is not looked at, as in any key the reader skips; and a
document written with ``ph`` after the other keys decodes ~25% slower, msgspec looking ahead for it.)
A ``ph`` that is missing or not a Chrome trace phase, or a complete event's ``cat`` that is not one Kineto
writes (:data:`CATEGORIES`), fails that decode: the same text is then decoded with ``ph`` and ``cat`` as
any value (:data:`Loose`) and converted, so one odd event costs a second decode of its piece, not a slow
path for the whole trace.

Typed decoding rejects documents whose events are not objects or whose ``args`` are not objects;
those are decoded generically, cleaned and converted, so odd traces read the same, only slower.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Union

import msgspec
from msgspec import field

from roofline.errors import CorruptReportError, FormatMismatchError

NULL = msgspec.Raw(b"null")
RANGE_CAT = "cuda_profiler_range"
#: the CUPTI range profiler's FP instruction counters: letter (d, f, h) x (add, mul, fma)
RANGE_COUNTERS = tuple(f"smsp__sass_thread_inst_executed_op_{letter}{op}_pred_on.sum"
                       for letter in "dfh" for op in ("add", "mul", "fma"))


#: the categories Kineto writes (libkineto's ActivityType names, the 1.8 era's capitalised ones, its "Trace" span):
#: a complete event's ``cat`` decodes to one of these str objects (a Literal), not to a new string per event, so
#: no category string is built, hashed and freed for each of the ~124k complete events of the V100 trace (its
#: decode + scan + free ~15-20 ms less, the scan's lookups hitting a cached hash; the events kept share one
#: string each, as the scan used to arrange). Any other category fails its piece's typed decode, and the piece
#: is decoded loosely, as one with an event of no known phase is: the same events, only slower.
CATEGORIES = ("cpu_op", "user_annotation", "gpu_user_annotation", "gpu_user_Annotation", "gpu_memcpy", "gpu_memset",
              "kernel", "cuda_runtime", "cuda_driver", "python_function", "overhead", "cuda_sync", "cuda_event",
              "cuda_profiler_range", "mtia_runtime", "mtia_ccp_events", "mtia_insight", "mtia_counters",
              "glow_runtime", "hpu_op", "xpu_runtime", "xpu_driver", "xpu_sync", "xpu_scope_profiler",
              "collective_comm", "privateuse1_runtime", "privateuse1_driver", "external_correlation",
              "cpu_instant_event", "Trace", "Operator", "operator", "Runtime", "runtime", "Kernel", "Memcpy",
              "Memset")
#: each category's one str object (a loosely decoded event's category is replaced by it)
_CATEGORY = {c: c for c in CATEGORIES}
CPU_CATS = frozenset({"cpu_op", "Operator", "operator"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "runtime"})
KERNEL_CATS = frozenset({"kernel", "Kernel"})
COPY_CATS = frozenset({"gpu_memcpy", "Memcpy", "gpu_memset", "Memset"})
#: category -> what the reader does with it: 1 CPU op, 2 GPU event, 3 launch, 4 CUPTI range, 5 annotation (the
#: categories read at all: an event of any other is never kept, whatever its phase)
KINDS = {**{c: 1 for c in CPU_CATS}, **{c: 2 for c in KERNEL_CATS | COPY_CATS}, **{c: 3 for c in RUNTIME_CATS},
         RANGE_CAT: 4, "user_annotation": 5}


class Args(msgspec.Struct, gc=False):
    """The ``args`` keys the reader uses; shapes stay raw JSON until an op's cost is needed. (Fields, as
    Event's, in the order Kineto writes them: msgspec looks a key up at the field after the last one
    first, ~2% of the decode.)"""

    external_id: Any = field(name="External id", default=None)
    device: Any = None
    correlation: Any = None
    grid: Any = None
    block: Any = None
    concrete: msgspec.Raw = field(name="Concrete Inputs", default=NULL)
    input_type: msgspec.Raw = field(name="Input type", default=NULL)
    input_dims: msgspec.Raw = field(name="Input Dims", default=NULL)
    external_id_lc: Any = field(name="external id", default=None)  # the 1.8 era's spelling
    input_dims_lc: msgspec.Raw = field(name="Input dims", default=NULL)
    nelems: Any = field(name="In msg nelems", default=None)
    dtype: Any = None
    bytes: Any = None
    kernel: Any = None  # a launch event's kernel name (graph capture traces)
    kernel_flop: Any = None  # torch._inductor.analysis.profile_analysis (or Inductor benchmark_kernel) estimates
    kernel_num_gb: Any = None
    out_nelems: Any = field(name="Out msg nelems", default=None)  # a collective's output message
    collective: Any = field(name="Collective name", default=None)
    group_size: Any = field(name="Group size", default=None)  # a collective's process group (PyTorch 2.1+)
    pg_name: Any = field(name="Process Group Name", default=None)
    pg_desc: Any = field(name="Process Group Description", default=None)
    pg_ranks: Any = field(name="Process Group Ranks", default=None)


class Event(msgspec.Struct, gc=False, tag_field="ph", tag="X", kw_only=True):
    """A complete event (``"ph": "X"``): an op, a launch, a kernel, a copy, an annotation. A typed decode requires
    its ``ts`` and ``dur`` to be numbers (a piece with one that is not, or lacks one, is decoded loosely: see
    :class:`Checked`)."""

    ph: ClassVar[str] = "X"
    cat: Literal[CATEGORIES] | None = None  # (any value where firm() or a test builds the event)
    name: Any = ""
    pid: Any = None
    tid: Any = None
    ts: int | float  # (any value where firm() or a test builds the event)
    dur: int | float
    args: Args | None = None


class Checked(list):  # type: ignore[type-arg]
    """Events of a typed decode: every complete event's ``ts`` and ``dur`` is an int or a float, as the scan would
    otherwise check for each (~124k on the V100 trace). Loosely decoded events come as a plain list."""

    __slots__ = ()


#: the Chrome trace format's phases (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU;
#: "=" from Chromium's trace_event_common.h)
PHASES = tuple("BEiICbneSTpFstfPNODMVvRc()=")


def _skipped(name: str, phase: str | None, tag_field: str = "ph") -> type:
    # the attributes every consumer reads, as class attributes: an event of another phase (or, tagged by
    # category, of a category the reader does not use) reads as one with no category, never kept
    tag = {"tag_field": tag_field, "tag": phase} if phase is not None else {}
    return msgspec.defstruct(name, [], gc=False, **tag,  # type: ignore[arg-type]
                             namespace={"ph": phase, "cat": None, "name": "", "ts": None, "dur": None,
                                        "pid": None, "tid": None, "args": None})


AnyEvent = Union[(Event, *(_skipped(f"Phase_{ord(p)}", p) for p in PHASES))]  # type: ignore[valid-type]
#: an event of no known phase (missing, not a string, not a Chrome trace phase), read the loose way
UNKNOWN_PHASE = _skipped("UnknownPhase", None)()
#: the same fields as Event's, with ``ph`` any value: what an event of no known phase decodes to
Loose = msgspec.defstruct("Loose", [("ph", Any, None), ("cat", Any, None), ("name", Any, ""),
                                    *((f, Any, None) for f in ("pid", "tid", "ts", "dur")),
                                    ("args", Union[Args, None], None)], gc=False)


class Trace(msgspec.Struct, gc=False):
    traceEvents: list[AnyEvent]
    deviceProperties: Any = None
    distributedInfo: Any = None
    with_flops: Any = None
    schemaVersion: Any = None


# The range profiler's counters are read in a second, narrow pass, only for traces that have them.
RangeArgs = msgspec.defstruct("RangeArgs", [(f"c{i}", Any, field(name=n, default=None))
                                            for i, n in enumerate(RANGE_COUNTERS)], gc=False)
RangeEvent = msgspec.defstruct("RangeEvent", [("ph", Any, None), ("cat", Any, None), ("name", Any, ""),
                                              ("ts", Any, None), ("dur", Any, None),
                                              ("args", Union[RangeArgs, None], None)], gc=False)
RangeTrace = msgspec.defstruct("RangeTrace", [("traceEvents", list[RangeEvent])], gc=False)

TOP_FIELDS = ("deviceProperties", "distributedInfo", "with_flops", "schemaVersion")
LooseTrace = msgspec.defstruct("LooseTrace", [("traceEvents", list[Loose]),  # type: ignore[valid-type]
                                              *((k, Any, None) for k in TOP_FIELDS)], gc=False)
_DECODER = msgspec.json.Decoder(Union[Trace, list[AnyEvent]])
_LOOSE_DECODER = msgspec.json.Decoder(Union[LooseTrace, list[Loose]])  # type: ignore[valid-type]
LOOSE_EVENTS = msgspec.json.Decoder(list[Loose])  # type: ignore[valid-type]
_RANGE_DECODER = msgspec.json.Decoder(Union[RangeTrace, list[RangeEvent]])

#: Kineto's flow events' categories (never kept, as any event of a phase other than "X")
FLOWS = ("ac2g", "async", "fwdbwd")


def _kept(cat: str) -> type:
    """A complete event of a category the reader keeps, tagged by its category: ``cat`` is the category's one str
    (a class attribute), ``ph`` must be "X", and the other fields are Event's."""
    fields = [("ph", Literal["X"]), ("name", Any, ""), ("pid", Any, None), ("tid", Any, None),
              ("ts", int | float), ("dur", int | float), ("args", Args | None, None)]
    return msgspec.defstruct(f"Kept_{cat}", fields, gc=False, tag_field="cat", tag=cat, kw_only=True,
                             namespace={"cat": cat})


#: events decoded by category, for text that is mostly Python frames (``python_function``: half the events of a
#: trace recorded with its stack, 91% of a vLLM capture trace's): those of a category the reader keeps as
#: :func:`_kept` (the fields and types of Event's), every other category Kineto writes (Python frames, flows,
#: instant events, ...) as an empty struct, none of its fields decoded (OWLv2: decode and free ~30 ms less).
#: Tagging by ``cat`` costs a look ahead past ``ph`` for every event (~80 ns), so text with few Python frames
#: is decoded by phase. Anything this decode cannot take (a category or flow Kineto does not write, an event
#: without a category, a kept category in another phase, a ts that is not a number, damage) is decoded by
#: phase. Unlike the phase decode, it does not look inside the events it skips: an invalid UTF-8 byte in a
#: Python frame's name goes unnoticed, as one in a flow event always did.
ByCategory = Union[(*(_kept(c) for c in CATEGORIES if c in KINDS),  # type: ignore[valid-type]
                    *(_skipped(f"Category_{i}", c, "cat")
                      for i, c in enumerate((*(c for c in CATEGORIES if c not in KINDS), *FLOWS))))]
BY_CATEGORY = msgspec.json.Decoder(list[ByCategory])  # type: ignore[valid-type]
#: the text sampled (at each place :func:`mostly_frames` looks) for Python frames
SAMPLE_BYTES = 16 << 10


def mostly_frames(text: Any, places: int = 1) -> bool:
    """Whether the text, sampled at ``places`` evenly spaced places, is at least a quarter Python frames (events
    holding ``"python_function"`` against those holding ``"ph"``): what decoding by category pays off on (the
    pieces of a Kineto trace are nearly all frames or nearly none)."""
    view = memoryview(text)
    frames = events = 0
    for k in range(places):
        start = len(view) * k // places
        sample = bytes(view[start:start + SAMPLE_BYTES])
        frames += sample.count(b'"python_function"')
        events += sample.count(b'"ph"')
    return frames > 0 and 4 * frames >= events


def decode(path: Any, raw: bytes) -> tuple[list[Event], dict[str, Any]]:
    """(events, top-level fields) of a trace's JSON bytes; a typed error names the file otherwise. (Always by
    phase: decoded by category, a whole document fails at its first event without a category, and Kineto writes
    its metadata events, which have none, at the end: the whole decode would be paid twice.)"""
    try:
        doc = _DECODER.decode(raw)
    except msgspec.ValidationError:  # (a subclass of DecodeError) valid JSON of an unexpected shape
        try:
            doc = _LOOSE_DECODER.decode(raw)  # an event of no known phase
        except msgspec.ValidationError:  # an event or args that is not an object
            return _lenient(path, raw, Loose, TOP_FIELDS)
        except _DAMAGED as exc:
            raise _corrupt(path, exc) from None
        if isinstance(doc, list):
            return firm(_bare(path, doc)), {}
        return firm(doc.traceEvents), {k: getattr(doc, k) for k in TOP_FIELDS}
    except _DAMAGED as exc:
        raise _corrupt(path, exc) from None
    if isinstance(doc, list):
        return Checked(_bare(path, doc)), {}
    return Checked(doc.traceEvents), {k: getattr(doc, k) for k in TOP_FIELDS}


def firm(events: list[Any]) -> list[Any]:
    """Loosely decoded events as the tagged decode gives them: an ``Event`` for ph "X" (a known category as its
    one str object), else a skipped one. In place, so that each loose event is freed as it is replaced (a whole
    document's are not held twice)."""
    category = _CATEGORY
    for i, e in enumerate(events):
        if e.ph == "X":
            cat = e.cat
            if cat.__class__ is str:
                cat = category.get(cat, cat)
            events[i] = Event(cat=cat, name=e.name, pid=e.pid, tid=e.tid, ts=e.ts, dur=e.dur, args=e.args)
        else:
            events[i] = UNKNOWN_PHASE
    return events


#: what a damaged document raises while decoding: bad JSON, invalid UTF-8 in a string (a
#: UnicodeDecodeError), nesting deeper than the decoder's stack (a RecursionError, e.g. 10^6 '[')
_DAMAGED = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


def _corrupt(path: Any, exc: BaseException) -> CorruptReportError:
    what = {UnicodeDecodeError: "invalid UTF-8", RecursionError: "nested too deeply"}.get(type(exc), "not valid JSON")
    return CorruptReportError(path, f"{what} ({exc})")


def _bare(path: Any, events: list[Any]) -> list[Any]:
    """A bare array is a trace (the 1.8 era) only if it holds trace events: objects with a ``ph``."""
    if not any(e.ph is not None for e in events):
        raise FormatMismatchError(path, "is a JSON array but holds no trace events (no object with a 'ph' "
                                        "field): not a PyTorch profiler trace")
    return events


def range_events(path: Any, raw: bytes) -> list[Any]:
    """The trace's events with their range-profiler counters (``args.c0`` … ``c8``, RANGE_COUNTERS order)."""
    try:
        doc = _RANGE_DECODER.decode(raw)
    except msgspec.ValidationError:
        return _lenient(path, raw, RangeEvent, ())[0]
    except _DAMAGED as exc:
        raise _corrupt(path, exc) from None
    return doc if isinstance(doc, list) else doc.traceEvents


def _lenient(path: Any, raw: bytes, kind: type, top_fields: tuple[str, ...]) -> tuple[list[Any], dict[str, Any]]:
    """Decode generically, drop what is not an event object, and convert the rest to ``kind``."""
    import orjson

    try:
        data = orjson.loads(raw)
    except (orjson.JSONDecodeError, *_DAMAGED) as exc:
        raise _corrupt(path, exc) from None
    if isinstance(data, list):
        events, top = data, {}
    elif isinstance(data, dict) and isinstance(data.get("traceEvents"), list):
        events, top = data["traceEvents"], {k: data.get(k) for k in top_fields}
    else:
        raise FormatMismatchError(path, "is JSON but not a PyTorch profiler trace (no traceEvents list)")
    clean = [e if isinstance(e.get("args"), (dict, type(None))) else {**e, "args": None}
             for e in events if isinstance(e, dict)]
    # a round trip through JSON (not msgspec.convert) so that raw-JSON fields decode as they would
    try:
        converted = msgspec.json.decode(msgspec.json.encode(clean), type=list[kind])
    except (*_DAMAGED, msgspec.EncodeError) as exc:  # e.g. a 10^6-deep value msgspec cannot re-encode
        raise _corrupt(path, exc) from None
    if isinstance(data, list):
        _bare(path, converted)
    return (firm(converted) if kind is Loose else converted), top


def shapes(raw: msgspec.Raw) -> Any:
    """A raw ``Input Dims``/``Input type``/``Concrete Inputs`` value as Python lists (None if absent)."""
    if raw is NULL:
        return None
    try:
        return msgspec.json.decode(raw)
    except (RecursionError, UnicodeDecodeError, msgspec.DecodeError):
        return None  # a damaged shape is no shape: the op's cost is then unavailable, with its reason
