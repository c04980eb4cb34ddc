"""A Kineto document's events decoded piece by piece as its text is gunzipped.

Decoding the whole document at once holds its text (54 MB for the 216k-event V100 trace) and every
event (~110 MB of structs) together, and a single 54 MB gunzip output costs ~35 ms of page faults
alone. Here the gunzip yields 256 KB pieces and each piece's events are decoded and scanned before the
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

A piece is decoded by phase (``decode.AnyEvent``), or, when it is mostly Python frames, by category
(``decode.ByCategory``, see :func:`_decoded`): the same events kept, the frames skipped undecoded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from roofline.ingest.torch.decode import (
    _DAMAGED,
    LOOSE_EVENTS,
    TOP_FIELDS,
    AnyEvent,
    Checked,
    Event,
    firm,
    mostly_frames,
)
from roofline.ingest.torch.decode import BY_CATEGORY as _BY_CATEGORY

#: text decoded per piece: once this much is waiting, the last separator of the text that completes it ends one.
#: Small enough that a piece is still in the CPU's cache when it is decoded: the V100 trace reads in ~0.40 s
#: at 128-512 KB against ~0.43 s at 4 MB (A/B in docs/benchmarks.md, the trace section's fifth stop)
PIECE_BYTES = 256 << 10
#: the text before the first event is searched for this long before the document is read whole instead
HEAD_LIMIT = 64 << 20
#: where the events begin: the ``traceEvents`` key, its ``[`` (group 1) and the first event's ``{``
_START = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*(\[)[ \t\r\n]*\{')
_SPACE = re.compile(rb"[ \t\r\n]*")
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
_EVENTS = msgspec.json.Decoder(list[AnyEvent])


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


def all_events(path: Path) -> list[Event]:
    """Every event of a document in one list, as read() gets them: streamed in pieces where it can be cut (those
    mostly Python frames decoded by category), else decoded whole (``decode.decode``)."""
    from roofline.ingest.common import json_bytes
    from roofline.ingest.torch.decode import decode

    pieces = events(path, {})
    try:
        return [e for piece in pieces for e in piece]
    except Uncut:
        pass
    finally:
        pieces.close()
    return decode(path, json_bytes(path))[0]


def _pieces(texts: Iterator[bytes | memoryview], top: dict[str, Any]) -> Iterator[list[Event]]:
    """The events of the document ``texts`` make up, a list per piece of text (cut at its last separator).

    Why a successful decode proves the cuts: each piece decoded as ``[`` + text + ``]`` is a list of complete
    values, so every cut fell between two values of one array; and the outline (the text before the first
    event and after the last cut) decodes with its top-level ``traceEvents`` value starting at the ``[`` the
    pieces came from, so that array is the top-level one and the pieces are its elements, in order.
    """
    # the text before the first event, searched each time it has doubled (and grown by a piece at least):
    # a search per output (a gzip of many small members inflates in small outputs) or per piece (a
    # head of many pieces) would be quadratic in the head
    parts: list[Any] = []
    size = searched = 0
    start = None
    opened = False  # (the first character that is not whitespace has been seen, and is '{')
    for text in texts:
        if not opened:
            lead = _SPACE.match(text).end()  # type: ignore[union-attr]
            if lead < len(text):
                if bytes(text[lead:lead + 1]) != b"{":
                    raise Uncut  # not an object (a 1.8-era bare array, or not JSON): the whole decode decides
                opened = True
        parts.append(text)
        size += len(text)
        if size - searched >= max(PIECE_BYTES, searched) or size > HEAD_LIMIT:  # (and once past the limit)
            start, parts, searched = _start(parts)
            if start is not None:
                break
            if size > HEAD_LIMIT:
                raise Uncut
    else:
        start, parts, searched = _start(parts) if parts else (None, parts, 0)
        if start is None:
            raise Uncut
    head = parts[0]
    by_category = [True]  # (decoding pieces by category is tried until it fails once)
    bracket, first = start.start(1), start.end() - 1
    pending: list[Any] = [memoryview(head)[first:]]  # text after the last cut (from an event's '{')
    waiting = len(head) - first
    head = head[:first]
    for text in texts:
        # a piece is decoded once a piece's worth of text is waiting, at the last separator of the text
        # that completes it (small texts just wait)
        cut = _last_cut(text) if waiting + len(text) >= PIECE_BYTES else None
        if cut is None:
            pending.append(text)
            waiting += len(text)
            continue
        try:
            yield _decoded(b"".join((b"[", *pending, memoryview(text)[:cut[0]], b"]")), by_category)
        except _DAMAGED:  # (msgspec.ValidationError is a DecodeError)
            raise Uncut from None
        pending = [memoryview(text)[cut[1]:]]
        waiting = len(text) - cut[1]
    outline_bytes = b"".join((head, *pending))
    del pending
    if outline_bytes.count(b'"traceEvents"') != 1:
        # a duplicate key (or the name in a string): the whole decode keeps its rules for those
        raise Uncut
    try:
        outline = _OUTLINE.decode(outline_bytes)
        if _address(outline.traceEvents) - _address(outline_bytes) != bracket:
            raise Uncut  # the array cut is not the top-level traceEvents
        # (a whole document, if it had no cut: not by category where metadata events, which have no category and
        # would fail that decode at its end, are seen in its last 64 KB, as Kineto writes them)
        rest = outline.traceEvents
        last = _decoded(rest, by_category if b'"M"' not in bytes(memoryview(rest)[-(1 << 16):]) else None, 3)
    except _DAMAGED:
        raise Uncut from None
    top.update({k: getattr(outline, k) for k in TOP_FIELDS})
    yield last


def _decoded(text: Any, state: list[bool] | None = None, places: int = 1) -> list[Event]:
    """A piece's events; one with no known phase costs the piece a second, loose decode (not an Uncut). A piece
    that is mostly Python frames is decoded by category first (``decode.ByCategory``); one that decode cannot
    take is decoded by phase, and so are the document's later pieces (``state``: [whether decoding by category
    is still tried]; ``places``: how many places of the text are sampled for Python frames)."""
    if state is not None and state[0] and mostly_frames(text, places):
        try:
            return Checked(_BY_CATEGORY.decode(text))
        except _DAMAGED:
            state[0] = False
    try:
        return Checked(_EVENTS.decode(text))
    except msgspec.ValidationError:
        return firm(LOOSE_EVENTS.decode(text))  # (an event or args not an object fails here too: Uncut)


def _start(parts: list[Any]) -> tuple[re.Match[bytes] | None, list[bytes], int]:
    """(where the events begin in the joined text, [the joined text], its length)."""
    head = b"".join(parts)
    return _START.search(head), [head], len(head)


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
    """Where a bytes-like object's data starts in memory. A decoded ``msgspec.Raw`` points into the bytes it
    came from (msgspec 0.18-0.22); were a version to copy it, every read would fall back to the whole decode,
    which ``tests/ingest/test_torch_streamed_read.py`` would show (it counts the pieces of a streamed read)."""
    import numpy as np

    return int(np.frombuffer(buffer, dtype=np.uint8).__array_interface__["data"][0])
