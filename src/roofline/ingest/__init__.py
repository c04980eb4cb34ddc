"""Stage 1: profiles in, canonical frames out. One package per format family; ``registry`` sniffs.

The pipeline (``roofline.pipeline``) reads through the registry; ``roofline.read`` is its read stage."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from roofline.ingest.registry import FORMATS, expand, reader_for, sniff
from roofline.schema import conform_kernels, empty_kernels_frame, merge_provenance, set_provenance


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


__all__ = ["FORMATS", "concat", "expand", "read_metrics", "sniff"]
