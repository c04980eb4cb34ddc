"""Stage 1: profiles in, canonical frames out. One module per input format; ``registry`` sniffs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from roofline.ingest.registry import FORMATS, expand, reader_for, sniff
from roofline.schema import conform_kernels, empty_kernels_frame, merge_provenance, set_provenance


def _as_list(paths: str | Path | Iterable[str | Path]) -> list[str | Path]:
    if isinstance(paths, (str, Path)):
        return [paths]
    return list(paths)


def read(paths: str | Path | Iterable[str | Path]) -> pd.DataFrame:
    """The canonical kernels frame of one or more profiles (folders are expanded).

    Raises the first input's typed error; use :func:`read_each` to keep going past bad files.
    """
    frames = [reader_for(p).read(Path(p)) for p in expand(_as_list(paths))]  # type: ignore[misc]
    return concat(frames)


def read_each(paths: str | Path | Iterable[str | Path]) -> tuple[pd.DataFrame, list[tuple[Path, Exception]]]:
    """Like :func:`read` but never stops at a bad file: returns (frame, [(path, error), ...])."""
    frames, errors = [], []
    for p in expand(_as_list(paths)):
        try:
            frames.append(reader_for(p).read(Path(p)))  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001 - a batch never loses an input: record it
            errors.append((Path(p), exc))
    return concat(frames), errors


def read_metrics(path: str | Path) -> pd.DataFrame:
    """The lossless long metrics frame of one profile: every raw metric with value and unit."""
    fmt = reader_for(path)
    if fmt.read_metrics is None:
        from roofline.errors import UnsupportedFormatError

        raise UnsupportedFormatError(path, f"no long metrics frame for {fmt.name}")
    return fmt.read_metrics(Path(path))


def concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    if not frames:
        return empty_kernels_frame()
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0].copy()
    out = conform_kernels(out)
    return set_provenance(out, merge_provenance(frames))


__all__ = ["read", "read_each", "read_metrics", "sniff", "expand", "FORMATS", "concat"]
