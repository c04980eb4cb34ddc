"""Typed decoding of Kineto trace JSON: only the fields the reader uses become Python objects.

A generic parse (``orjson.loads``) builds a dict for every one of a trace's events and every
argument they carry, most of which the reader never looks at. ``msgspec`` decodes straight into
small structs, skipping unknown keys without building them: on the 216k-event V100 trace it takes
~0.17 s against ~0.33 s for ``orjson.loads`` (``bench/bench_trace.py``). Shapes stay raw JSON
(``msgspec.Raw``) until an op with GPU work needs its cost, and serve as the cache key of that cost.

Typed decoding rejects documents whose events are not objects or whose ``args`` are not objects;
those are decoded generically, cleaned and converted, so odd traces read the same, only slower.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Union

import msgspec
from msgspec import field

from roofline.errors import CorruptReportError, FormatMismatchError

NULL = msgspec.Raw(b"null")
RANGE_CAT = "cuda_profiler_range"
#: the CUPTI range profiler's FP instruction counters: letter (d, f, h) x (add, mul, fma)
RANGE_COUNTERS = tuple(f"smsp__sass_thread_inst_executed_op_{letter}{op}_pred_on.sum"
                       for letter in "dfh" for op in ("add", "mul", "fma"))


class Args(msgspec.Struct, gc=False):
    """The ``args`` keys the reader uses; shapes stay raw JSON until an op's cost is needed."""

    external_id: Any = field(name="External id", default=None)
    external_id_lc: Any = field(name="external id", default=None)  # the 1.8 era's spelling
    correlation: Any = None
    input_dims: msgspec.Raw = field(name="Input Dims", default=NULL)
    input_dims_lc: msgspec.Raw = field(name="Input dims", default=NULL)
    input_type: msgspec.Raw = field(name="Input type", default=NULL)
    concrete: msgspec.Raw = field(name="Concrete Inputs", default=NULL)
    nelems: Any = field(name="In msg nelems", default=None)
    dtype: Any = None
    device: Any = None
    grid: Any = None
    block: Any = None
    bytes: Any = None
    kernel: Any = None  # a launch event's kernel name (graph capture traces)
    kernel_flop: Any = None  # torch._inductor.analysis.profile_analysis (or Inductor benchmark_kernel) estimates
    kernel_num_gb: Any = None


class Event(msgspec.Struct, gc=False):
    ph: Any = None
    cat: Any = None
    name: Any = ""
    ts: Any = None
    dur: Any = None
    pid: Any = None
    tid: Any = None
    args: Union[Args, None] = None


class Trace(msgspec.Struct, gc=False):
    traceEvents: list[Event]
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

_DECODER = msgspec.json.Decoder(Union[Trace, list[Event]])
_RANGE_DECODER = msgspec.json.Decoder(Union[RangeTrace, list[RangeEvent]])
TOP_FIELDS = ("deviceProperties", "distributedInfo", "with_flops", "schemaVersion")


def decode(path: Any, raw: bytes) -> tuple[list[Event], dict[str, Any]]:
    """(events, top-level fields) of a trace's JSON bytes; a typed error names the file otherwise."""
    try:
        doc = _DECODER.decode(raw)
    except msgspec.ValidationError:  # (a subclass of DecodeError) valid JSON of an unexpected shape
        return _lenient(path, raw, Event, TOP_FIELDS)
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
    return (_bare(path, converted) if isinstance(data, list) else converted), top


#: JSON decoded per piece: the events of a piece are scanned and the ones not used freed before the next
#: is decoded, so a trace's decoded events never all live at once (and freed ones make room for the next)
PIECE_BYTES = 4 << 20
#: where the events begin: the ``traceEvents`` key, its ``[`` (group 1) and the first event's ``{``
_START = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*(\[)[ \t\r\n]*\{')
#: a place between two objects that has a newline in it: a raw newline cannot be inside a JSON string, so
#: the match is never in a name (whether it is between two events, not inside one, is checked by decoding)
_CUT = re.compile(rb"\}[ \t\r]*,[ \t\r]*\n[ \t\r\n]*\{")


class Outline(msgspec.Struct, gc=False):
    """The document with its events' middle cut out: the top-level fields and the last piece's events."""

    traceEvents: msgspec.Raw
    deviceProperties: Any = None
    distributedInfo: Any = None
    with_flops: Any = None
    schemaVersion: Any = None


_OUTLINE = msgspec.json.Decoder(Outline)
_EVENTS = msgspec.json.Decoder(list[Event])


class Uncut(Exception):
    """A piece did not decode as a list of events: the document is decoded whole (decode()) instead, which
    reads odd documents leniently and names what is wrong with damaged ones."""


def pieces(raw: bytes) -> tuple[Iterator[list[Event]], dict[str, Any]] | None:
    """The events of a large Kineto document, decoded piece by piece, in document order, and its top-level
    fields; None when the document is small or cannot be cut (then decode() reads it whole).

    Pieces are cut at ``}, {`` separators with a newline (Kineto writes one event per block of lines). A cut
    inside an event leaves a piece with unbalanced brackets, which fails to decode: the generator then
    raises :class:`Uncut`. The outline (all but the middle pieces) must have its ``traceEvents`` value start
    at the ``[`` found, so the array cut is the top-level one and not one nested in another field.
    """
    if len(raw) < 2 * PIECE_BYTES or raw.__class__ is not bytes:
        return None
    start = _START.search(raw)
    if start is None:
        return None
    bracket, first = start.start(1), start.end() - 1
    cuts: list[tuple[int, int]] = []  # (end of a piece: after its last '}', start of the next: its '{')
    at = first + PIECE_BYTES
    while (cut := _CUT.search(raw, at)) is not None:
        cuts.append((cut.start() + 1, cut.end() - 1))
        at = cut.end() + PIECE_BYTES
    if not cuts:
        return None
    outline_bytes = raw[:first] + raw[cuts[-1][1]:]
    try:
        outline = _OUTLINE.decode(outline_bytes)
        if _address(outline.traceEvents) - _address(outline_bytes) != bracket:
            return None
        last = _EVENTS.decode(outline.traceEvents)
    except (msgspec.DecodeError, *_DAMAGED):  # (ValidationError is a DecodeError)
        return None
    top = {k: getattr(outline, k) for k in TOP_FIELDS}

    def events() -> Iterator[list[Event]]:
        view = memoryview(raw)
        begin = first
        for end, following in cuts:
            try:
                yield _EVENTS.decode(b"".join((b"[", view[begin:end], b"]")))
            except (msgspec.DecodeError, *_DAMAGED):
                raise Uncut from None
            begin = following
        yield last

    return events(), top


def _address(buffer: Any) -> int:
    """Where a bytes-like object's data starts in memory (a Raw value points into the bytes it came from)."""
    import numpy as np

    return int(np.frombuffer(buffer, dtype=np.uint8).__array_interface__["data"][0])


def shapes(raw: msgspec.Raw) -> Any:
    """A raw ``Input Dims``/``Input type``/``Concrete Inputs`` value as Python lists (None if absent)."""
    if raw is NULL:
        return None
    try:
        return msgspec.json.decode(raw)
    except (RecursionError, UnicodeDecodeError, msgspec.DecodeError):
        return None  # a damaged shape is no shape: the op's cost is then unavailable, with its reason
