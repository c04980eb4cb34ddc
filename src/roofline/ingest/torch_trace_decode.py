"""Typed decoding of Kineto trace JSON: only the fields the reader uses become Python objects.

A generic parse (``orjson.loads``) builds a dict for every one of a trace's events and every
argument they carry, most of which the reader never looks at. ``msgspec`` decodes straight into
small structs, skipping unknown keys without building them (``bench/bench_trace.py``). Shapes stay raw
JSON (``msgspec.Raw``) until an op with GPU work needs its cost, and serve as the cache key of that cost.

Events are a union tagged by their phase (``ph``): complete events (``"X"``, all the reader keeps) get
every field, and every other phase (flow arrows, instant events, metadata: 92k of the V100 trace's 216k
events) an empty struct, with none of its fields decoded: 0.18 -> 0.135 s for that trace's decode.

Typed decoding rejects documents whose events are not objects, whose ``args`` are not objects, or whose
``ph`` is missing or not a Chrome trace phase; those are decoded generically, cleaned and converted,
so odd traces read the same, only slower.
"""

from __future__ import annotations

from typing import Any, ClassVar, Union

import msgspec
from msgspec import field

from roofline.errors import CorruptReportError, FormatMismatchError

NULL = msgspec.Raw(b"null")
RANGE_CAT = "cuda_profiler_range"
#: the CUPTI range profiler's FP instruction counters: letter (d, f, h) x (add, mul, fma)
RANGE_COUNTERS = tuple(f"smsp__sass_thread_inst_executed_op_{letter}{op}_pred_on.sum"
                       for letter in "dfh" for op in ("add", "mul", "fma"))


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


class Event(msgspec.Struct, gc=False, tag_field="ph", tag="X"):
    """A complete event (``"ph": "X"``): an op, a launch, a kernel, a copy, an annotation."""

    ph: ClassVar[str] = "X"
    cat: Any = None
    name: Any = ""
    pid: Any = None
    tid: Any = None
    ts: Any = None
    dur: Any = None
    args: Union[Args, None] = None


#: the Chrome trace format's phases (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU)
#: and OTHER, which the generic decode gives an event whose ph is none of them
PHASES = tuple("BEiICbneSTpFstfPNODMVvRc()")
OTHER = "?"


def _skipped(phase: str) -> type:
    # the attributes every consumer reads, as class attributes: an event of another phase reads as one
    # with no category, never kept
    return msgspec.defstruct(f"Phase_{ord(phase)}", [], gc=False, tag_field="ph", tag=phase,
                             namespace={"ph": phase, "cat": None, "name": "", "ts": None, "dur": None,
                                        "pid": None, "tid": None, "args": None})


AnyEvent = Union[(Event, *(_skipped(p) for p in (*PHASES, OTHER)))]  # type: ignore[valid-type]


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

_DECODER = msgspec.json.Decoder(Union[Trace, list[AnyEvent]])
_RANGE_DECODER = msgspec.json.Decoder(Union[RangeTrace, list[RangeEvent]])
TOP_FIELDS = ("deviceProperties", "distributedInfo", "with_flops", "schemaVersion")


def decode(path: Any, raw: bytes) -> tuple[list[Event], dict[str, Any]]:
    """(events, top-level fields) of a trace's JSON bytes; a typed error names the file otherwise."""
    try:
        doc = _DECODER.decode(raw)
    except msgspec.ValidationError:  # (a subclass of DecodeError) valid JSON of an unexpected shape
        return _lenient(path, raw, AnyEvent, TOP_FIELDS)
    except _DAMAGED as exc:
        raise _corrupt(path, exc) from None
    if isinstance(doc, list):
        return _bare(path, doc), {}
    return doc.traceEvents, {k: getattr(doc, k) for k in TOP_FIELDS}


#: what a damaged document raises while decoding: bad JSON, invalid UTF-8 in a string (a
#: UnicodeDecodeError), nesting deeper than the decoder's stack (a RecursionError, e.g. 10^6 '[')
_DAMAGED = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)


def _corrupt(path: Any, exc: BaseException) -> CorruptReportError:
    what = {UnicodeDecodeError: "invalid UTF-8", RecursionError: "nested too deeply"}.get(type(exc), "not valid JSON")
    return CorruptReportError(path, f"{what} ({exc})")


def _bare(path: Any, events: list[Any]) -> list[Any]:
    """A bare array is a trace (the 1.8 era) only if it holds trace events: objects with a ``ph``."""
    if not any(e.ph is not None and e.ph != OTHER for e in events):
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
    tagged = kind is AnyEvent
    clean = [_cleaned(e, tagged) for e in events if isinstance(e, dict)]
    # a round trip through JSON (not msgspec.convert) so that raw-JSON fields decode as they would
    try:
        converted = msgspec.json.decode(msgspec.json.encode(clean), type=list[kind])
    except (*_DAMAGED, msgspec.EncodeError) as exc:  # e.g. a 10^6-deep value msgspec cannot re-encode
        raise _corrupt(path, exc) from None
    return (_bare(path, converted) if isinstance(data, list) else converted), top


_PHASE_SET = frozenset(PHASES) | {"X"}


def _cleaned(event: dict[str, Any], tagged: bool) -> dict[str, Any]:
    """An event the typed decode takes: ``args`` an object or null, and (``tagged``) a known ``ph``, else OTHER."""
    if not isinstance(event.get("args"), (dict, type(None))):
        event = {**event, "args": None}
    ph = event.get("ph")
    if tagged and not (ph.__class__ is str and ph in _PHASE_SET):
        event = {**event, "ph": OTHER}  # (a missing, null, numeric or unknown phase: an event never kept)
    return event


def shapes(raw: msgspec.Raw) -> Any:
    """A raw ``Input Dims``/``Input type``/``Concrete Inputs`` value as Python lists (None if absent)."""
    if raw is NULL:
        return None
    try:
        return msgspec.json.decode(raw)
    except (RecursionError, UnicodeDecodeError, msgspec.DecodeError):
        return None  # a damaged shape is no shape: the op's cost is then unavailable, with its reason
