"""A Kineto document's events decoded piece by piece as its text is gunzipped.

Decoding the whole document at once holds its text (54 MB for the 216k-event V100 trace) and every
event (~110 MB of structs) together, and a single 54 MB gunzip output costs ~35 ms of page faults
alone. Here the gunzip yields 4 MB pieces and each piece's events are decoded and scanned before the
next is inflated: the text is never whole, the pieces reuse the memory the last ones freed, and the
events the reader does not use are freed a piece at a time. (Inflating in a second thread was tried
and dropped: the inflaters take the GIL back between output blocks, and against a decoder that holds
it the thread overlapped nothing: 0.483 s against 0.473 s inline, V100 trace, median of 9.)

A piece ends at a ``}, {`` separator that has a newline in it (Kineto writes each event as a block of
lines; a raw newline cannot be inside a JSON string). A separator inside an event (an argument holding
objects one per line) leaves a piece with unbalanced brackets that fails to decode: :class:`Uncut`
is raised and the reader decodes the document whole instead, as it does a document without such
separators. The outline (the text before the first event and after the last separator) must have its
``traceEvents`` value start at the ``[`` where the pieces began, so the array cut is the top-level one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from roofline.ingest.torch_trace_decode import _DAMAGED, TOP_FIELDS, Event

#: text decoded per piece (the last separator in each gunzip output of this size ends a piece)
PIECE_BYTES = 4 << 20
#: the text before the first event is searched for this long before the document is read whole instead
HEAD_LIMIT = 64 << 20
#: where the events begin: the ``traceEvents`` key, its ``[`` (group 1) and the first event's ``{``
_START = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*(\[)[ \t\r\n]*\{')
#: a place between two objects with a newline in it (never inside a string)
_CUT = re.compile(rb"\}[ \t\r]*,[ \t\r]*\n[ \t\r\n]*\{")


class Uncut(Exception):
    """The document cannot be read in pieces: the reader decodes it whole, which reads odd documents
    leniently and names what is wrong with damaged ones."""


class Outline(msgspec.Struct, gc=False):
    """The document without its pieces: the top-level fields and the events after the last cut."""

    traceEvents: msgspec.Raw
    deviceProperties: Any = None
    distributedInfo: Any = None
    with_flops: Any = None
    schemaVersion: Any = None


_OUTLINE = msgspec.json.Decoder(Outline)
_EVENTS = msgspec.json.Decoder(list[Event])


def events(path: Path, top: dict[str, Any]) -> Iterator[list[Event]]:
    """The document's events in order, a list per piece; ``top`` gets the top-level fields at the end.
    Raises :class:`Uncut` (possibly after some pieces) when the document cannot be read this way, and
    the gunzip's typed errors (damaged, truncated, too large) as the stream reaches them."""
    from roofline.ingest.common import gunzip_pieces, json_bytes

    with path.open("rb") as fh:
        gzip = fh.read(2) == b"\x1f\x8b"
    if gzip:
        pieces = gunzip_pieces(path, piece=PIECE_BYTES)
        try:
            yield from _pieces(pieces, top)
        finally:
            pieces.close()  # (closes the file when the pieces stop early: Uncut, an error, a consumer gone)
        return
    # plain JSON: read (and size-checked) whole, then cut
    whole = memoryview(json_bytes(path))
    yield from _pieces(iter([whole[i:i + PIECE_BYTES] for i in range(0, len(whole), PIECE_BYTES)]), top)


def _pieces(texts: Iterator[bytes], top: dict[str, Any]) -> Iterator[list[Event]]:
    head = b""
    for text in texts:  # the text before the first event
        head = bytes(text) if not head else head + text
        start = _START.search(head)
        if start is not None:
            break
        if len(head) > HEAD_LIMIT:
            raise Uncut
    else:
        raise Uncut
    bracket, first = start.start(1), start.end() - 1
    pending: list[Any] = [memoryview(head)[first:]]  # text after the last cut (from an event's '{')
    head = head[:first]
    for text in texts:
        cut = _last_cut(text)
        if cut is None:
            pending.append(text)
            continue
        try:
            yield _EVENTS.decode(b"".join((b"[", *pending, memoryview(text)[:cut[0]], b"]")))
        except (msgspec.DecodeError, *_DAMAGED):
            raise Uncut from None
        pending = [memoryview(text)[cut[1]:]]
    outline_bytes = b"".join((head, *pending))
    del pending
    try:
        outline = _OUTLINE.decode(outline_bytes)
        if _address(outline.traceEvents) - _address(outline_bytes) != bracket:
            raise Uncut  # the array cut is not the top-level traceEvents
        last = _EVENTS.decode(outline.traceEvents)
    except (msgspec.DecodeError, *_DAMAGED):
        raise Uncut from None
    top.update({k: getattr(outline, k) for k in TOP_FIELDS})
    yield last


def _last_cut(text: bytes) -> tuple[int, int] | None:
    """(end of the last event before the text's last separator, start of the one after it), or None."""
    for window in (1 << 12, 1 << 16, len(text)):
        found = None
        for found in _CUT.finditer(text, max(0, len(text) - window)):
            pass
        if found is not None:
            return found.start() + 1, found.end() - 1
        if window >= len(text):
            break
    return None


def _address(buffer: Any) -> int:
    """Where a bytes-like object's data starts in memory (a Raw value points into the bytes it came from)."""
    import numpy as np

    return int(np.frombuffer(buffer, dtype=np.uint8).__array_interface__["data"][0])
