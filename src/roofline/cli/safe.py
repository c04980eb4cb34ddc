"""Terminal safety: what the CLI prints never carries a control sequence that came from a profile.

Kernel, op, device and file names come from profiles, which are untrusted: an ESC sequence in a kernel name
printed raw can write the clipboard (OSC 52), clear the screen or set the window title. The CLI's stdout and
stderr are wrapped (:func:`safe_streams`, installed by ``roofline.cli.main``) so that every text written
through them has its control characters escaped as ``\\xNN`` / ``\\uNNNN``: the C0 controls but newline
and tab, DEL, the C1 controls (U+0080-U+009F: U+009B is a one-character CSI), the line and paragraph
separators and the bidirectional overrides (text that displays in another order than it reads). The
bytes path (JSON records, written with orjson, which already escapes C0) gets C1 escaped the JSON way.

The progress bars are the CLI's own and are drawn with ESC sequences on a terminal: they write to
:func:`raw` of the stream. Nothing else does.
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: in JSON bytes, what orjson leaves raw of those (it escapes C0): C1, U+2028/9, the bidi controls, as UTF-8
_UNSAFE_JSON = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80[\xa8-\xae]|\xe2\x81[\xa6-\xa9]|\x1b")
#: the same, one pattern per alternative (each with a literal start: a fast search)
_UNSAFE_JSON_PARTS = tuple(re.compile(p) for p in (rb"\xc2[\x80-\x9f]", rb"\xe2\x80[\xa8-\xae]",
                                                    rb"\xe2\x81[\xa6-\xa9]", rb"\x1b"))


#: characters (text) or bytes per write: one write of 2 GiB or more comes back short (Linux moves at most 0x7ffff000
#: bytes a call, and CPython's buffered writer returns that count instead of looping), so the tail of a larger
#: output (a 5,000-input dataset's CSV) was lost without an error
CHUNK = 1 << 24


def write_all(stream: Any, data: str | bytes) -> None:
    """Every character of ``data`` (a ``str``, to a text stream) or every byte (to a binary stream), in pieces of
    :data:`CHUNK`, a binary stream's short writes written again from where they stopped."""
    if isinstance(data, str):
        for i in range(0, len(data), CHUNK):
            stream.write(data[i:i + CHUNK])
        return
    view = memoryview(data)
    while len(view):
        n = stream.write(view[:CHUNK])
        if not n:  # (None: a non-blocking stream that took nothing; the CLI's streams block)
            raise OSError(f"the output took no bytes with {len(view):,} left to write")
        view = view[n:]


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every control character but newline and tab escaped (``\\x1b``, ``\\u202e``)."""
    return _UNSAFE.sub(_escape, text)


def _json_escape(m: re.Match[bytes]) -> bytes:
    c = m.group().decode("utf-8")
    return f"\\u{ord(c):04x}".encode()


class SafeText(io.TextIOBase):
    """A text stream that writes ``terminal_safe`` text to another one (attributes are the other's)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, s: str) -> int:
        if not isinstance(s, str):  # click probes with b"" to tell text from binary streams
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        write_all(self.inner, terminal_safe(s))
        return len(s)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.inner, "errors", None) or "strict"

    @property
    def buffer(self) -> Any:
        buf = getattr(self.inner, "buffer", None)
        return None if buf is None else _SafeJsonBytes(buf)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _may_be_unsafe(data: bytes | memoryview) -> bool:
    """Whether ``data`` holds a sequence :data:`_UNSAFE_JSON` escapes, looked for one alternative at a time: a
    pattern that starts with a literal is searched for much faster than the alternation, and most JSON holds
    none."""
    return any(p.search(data) is not None for p in _UNSAFE_JSON_PARTS)


def escape_json(data: bytes) -> bytes:
    """JSON bytes with C1, bidi and ESC escaped the JSON way (``\\u0085``), as the CLI's stdout escapes every byte
    written to it; ``data`` itself where there is nothing to escape."""
    return _UNSAFE_JSON.sub(_json_escape, data) if _may_be_unsafe(data) else data


class _SafeJsonBytes:
    """The bytes path of a :class:`SafeText`: JSON records (orjson escapes C0; C1 is escaped here)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def write(self, b: bytes | memoryview) -> int:
        write_all(self.inner, escape_json(bytes(b)))
        return len(b)

    def write_escaped(self, b: bytes | memoryview) -> int:
        """Bytes joined from pieces that were each passed through :func:`escape_json` (records, written by
        ``report/records.py``): written as they are. Escaping the pieces is escaping the whole, as long as each
        piece is whole UTF-8 characters (an escaped sequence is one character)."""
        write_all(self.inner, b)
        return len(b)

    def flush(self) -> None:
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def raw(stream: TextIO) -> TextIO:
    """The stream under a :class:`SafeText` (the progress bars draw with ESC sequences), else the stream."""
    return stream.inner if isinstance(stream, SafeText) else stream


@contextmanager
def safe_streams() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` wrapped in :class:`SafeText` inside the block."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (s if s is None or isinstance(s, SafeText) else SafeText(s) for s in saved)
    try:
        yield
    finally:
        for s in (sys.stdout, sys.stderr):
            if isinstance(s, SafeText):
                try:
                    s.flush()
                except (OSError, ValueError):  # a closed pipe: nothing more to write
                    pass
        sys.stdout, sys.stderr = saved


__all__ = ["SafeText", "escape_json", "raw", "safe_streams", "terminal_safe"]
