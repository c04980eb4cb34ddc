"""Typed errors. Every error about an input names the file and what is wrong with it.

The CLI turns any :class:`RooflineError` into one line on stderr and a non-zero exit; a batch
records it in its error table. Nothing here carries a traceback to the user.
"""

from __future__ import annotations

import os
from pathlib import Path


def path_text(path: str | Path) -> str:
    """A path as text safe anywhere (Arrow, JSON, a terminal): a file name that is not valid UTF-8
    (Python carries its bytes as lone surrogates) gets them escaped as ``\\xNN``, once, here at the edge."""
    text = os.fspath(path)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return os.fsencode(text).decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate that is no escaped byte
            return text.encode("utf-8", "backslashreplace").decode("utf-8")


class RooflineError(Exception):
    """Base class of every error roofline raises on purpose."""


class InputError(RooflineError):
    """Something is wrong with one input file."""

    #: short machine-readable kind, used in error tables
    kind = "input-error"

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = path_text(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class InputNotFoundError(InputError):
    kind = "not-found"

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, "no such file or directory")


class UnreadableInputError(InputError):
    """The path exists but cannot be read as a file: no permission, a FIFO or device, an I/O error."""

    kind = "unreadable"


class EmptyInputError(InputError):
    kind = "empty"

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, "file is empty (0 bytes)")


class LfsPointerError(InputError):
    kind = "git-lfs-pointer"

    def __init__(self, path: str | Path) -> None:
        super().__init__(
            path,
            "is a Git LFS pointer, not the profile itself; fetch the content with "
            "`git lfs pull` (or `git lfs fetch && git lfs checkout`)",
        )


class UnknownFormatError(InputError):
    kind = "unknown-format"


class FormatMismatchError(InputError):
    """The file's name promises one format but its content is another."""

    kind = "format-mismatch"


class CorruptReportError(InputError):
    """The file has the right magic but cannot be read as a whole report (truncated, damaged)."""

    kind = "corrupt"


class ReaderCrashedError(CorruptReportError):
    """A native reader (NVIDIA's ``ncu_report``) killed the child process reading this file: the file is
    damaged in a way its structure check cannot see (``roofline.ingest.isolate``)."""

    kind = "reader-crashed"


class InputTooLargeError(InputError):
    """An input past a configured size bound (e.g. a gzip stream expanding past its cap)."""

    kind = "too-large"


class NoKernelsError(InputError):
    kind = "no-kernels"


class NoGpuWorkError(NoKernelsError):
    """A valid profile of a run that put no work on a GPU (a CPU-only trace): nothing to draw, which is
    not a failure of the analysis (the CLI says so in one line and exits 0, as HTA and XProf load such a
    trace without error); ``roofline.read`` still raises it, as there is no kernel row to return."""

    kind = "no-gpu-work"


class UnsupportedFormatError(InputError):
    """A format roofline recognises but has no reader for yet."""

    kind = "unsupported-format"


class MissingDependencyError(RooflineError):
    """An optional dependency needed for this input is not installed."""


class SchemaError(RooflineError):
    """A frame or a stored table does not follow the canonical schema."""
