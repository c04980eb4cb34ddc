"""The Python API: the pipeline's stages as functions (``import roofline`` exposes them lazily).

    >>> kernels = roofline.read("report.ncu-rep")                 # the canonical kernels frame
    >>> result = roofline.analyze(kernels)                         # + the roofline columns
    >>> result = roofline.analyze("run.sqlite", counters=["top.ncu-rep"], device_map={"X": "H100 SXM"})
    >>> run = roofline.run(["a.ncu-rep", "b/"])                    # keeps going past bad inputs
    >>> run.frame, run.failures, run.messages
    >>> result.summary(), roofline.by_category(result)              # the headline; time per op category
    >>> roofline.plot(result)                                      # the HTML report's kernel chart (plotly)
    >>> roofline.compare("before.ncu-rep", "after.ncu-rep")        # kernel identity by identity

Whatever the CLI does with options, these do with keyword arguments: they are the same pipeline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from roofline import pipeline
from roofline.hardware.peaks import LEVELS, Peaks

if TYPE_CHECKING:
    from roofline.pipeline import Analysis
    from roofline.result import RooflineResult

PathsLike = str | Path | Iterable[str | Path]


def _as_list(paths: PathsLike) -> list[str | Path]:
    if isinstance(paths, (str, Path)):
        return [paths]
    return list(paths)


def _options(peaks: Peaks | str | None, levels: Sequence[str], clock: str, latency_threshold_pct: float,
             device: str | None, device_map: Mapping[str, str] | Iterable[str] | None, counters: Iterable[str | Path],
             captures: Iterable[str | Path], strict: bool, links: str | Path | None = None) -> pipeline.Options:
    pairs = tuple(f"{k}={v}" for k, v in device_map.items()) if isinstance(device_map, Mapping) \
        else tuple(device_map or ())
    return pipeline.Options(peaks=peaks if peaks is not None else "counters", device=device, device_map=pairs,
                            counters=tuple(map(Path, counters)), captures=tuple(map(Path, captures)),
                            levels=tuple(levels), clock=clock, latency_threshold_pct=latency_threshold_pct,
                            strict=strict, links=str(links) if links else None)


def read(paths: PathsLike) -> pd.DataFrame:
    """The canonical kernels frame of one or more profiles (folders are expanded): what each records, with
    the spec table's roofs attached where it records none (the pipeline's roofs stage).

    Raises the first input's typed error; use :func:`read_each` to keep going past bad files.
    """
    from roofline.hardware.attach import attach_roofs
    from roofline.ingest import concat

    inputs = pipeline.expand(_as_list(paths))
    return attach_roofs(concat([*map(pipeline.read_dataset, inputs.datasets), *map(pipeline.read_one, inputs.files)]))


def read_each(paths: PathsLike) -> tuple[pd.DataFrame, list[tuple[Path, Exception]]]:
    """Like :func:`read` but never stops at a bad file: returns (frame, [(path, error), ...])."""
    from roofline.hardware.attach import attach_roofs
    from roofline.ingest import concat

    inputs = pipeline.expand(_as_list(paths))
    frames, errors = [pipeline.read_dataset(p) for p in inputs.datasets], []
    for p in inputs.files:
        try:
            frames.append(pipeline.read_one(p))
        except Exception as exc:  # noqa: BLE001 - a batch never loses an input: record it
            errors.append((Path(p), exc))
    return attach_roofs(concat(frames)), errors


def run(paths: PathsLike, peaks: Peaks | str | None = None, levels: Sequence[str] = LEVELS, clock: str = "profiled",
        latency_threshold_pct: float = pipeline.LATENCY_THRESHOLD_PCT, *, device: str | None = None,
        device_map: Mapping[str, str] | Iterable[str] | None = None, counters: Iterable[str | Path] = (),
        captures: Iterable[str | Path] = (), strict: bool = False, links: str | Path | None = None) -> Analysis:
    """Every stage over profiles, files or folders or batch datasets, as ``roofline analyze`` runs them: the
    :class:`~roofline.pipeline.Analysis` holds the frame, the inputs that failed and the warnings.

    ``device``: the GPU of profiles that record none; ``device_map``: ``{"name in profile": "table entry"}``;
    ``counters``: ncu reports carried onto timeline inputs; ``captures``: CUDA/HIP-graph capture traces;
    ``links``: a links file (NIC, GPUs per node: docs/collectives.md)."""
    from roofline.result import as_result

    opts = _options(peaks, levels, clock, latency_threshold_pct, device, device_map, counters, captures, strict,
                    links)
    out = pipeline.run(_as_list(paths), opts)
    out.frame = as_result(out.frame)
    return out


def analyze(data: pd.DataFrame | PathsLike, peaks: Peaks | str | None = None, levels: Sequence[str] = LEVELS,
            clock: str = "profiled", latency_threshold_pct: float = pipeline.LATENCY_THRESHOLD_PCT, *,
            device: str | None = None, device_map: Mapping[str, str] | Iterable[str] | None = None,
            counters: Iterable[str | Path] = (), captures: Iterable[str | Path] = (),
            strict: bool = False, links: str | Path | None = None) -> RooflineResult:
    """The roofline frame: the kernels (same rows, same order) plus the roofline columns, as a
    :class:`~roofline.result.RooflineResult` (a DataFrame displayed compactly; ``.frame`` is the plain one).

    ``data`` is a kernels frame (``roofline.read``) or profiles (paths, as :func:`run`); with paths, the first
    input that fails raises its typed error (use :func:`run` to keep going). Peaks: ``None``/``"counters"``
    (the report's own, the spec table where missing), ``"spec"``, a GPU name, a peaks file or a
    :class:`~roofline.hardware.peaks.Peaks`. With the default levels, an optional level the frame records
    (AMD LDS) is analysed too. ``links``: a links file (docs/collectives.md)."""
    from roofline.result import as_result

    opts = _options(peaks, levels, clock, latency_threshold_pct, device, device_map, counters, captures, strict,
                    links)
    if isinstance(data, pd.DataFrame):
        return as_result(pipeline.from_frame(data, opts).frame)
    result = pipeline.run(_as_list(data), opts)
    if result.failures:
        first = result.failures[0]
        if first.error is not None:
            raise first.error
        raise pipeline.OptionError(first.message)
    return as_result(result.frame)


def _frame(result: pd.DataFrame | Analysis | PathsLike) -> pd.DataFrame:
    """A roofline frame from a result, a run (its frame) or profiles (analysed)."""
    if isinstance(result, pd.DataFrame):
        return result
    if isinstance(result, pipeline.Analysis):
        return result.frame
    return analyze(result)


def summary(result: pd.DataFrame | Analysis | PathsLike) -> pd.DataFrame:
    """The headline per profile, device and step: GPU time, the % of it with a roofline point, time by kind (they
    add up to 100%), achieved FLOP/s and bytes/s and their % of the peak (MFU, MBU), the first reason without a
    point. ``headlines()`` of a result gives them as objects, with every reason and its fix."""
    from roofline.analysis.views import view

    return view(_frame(result), "summary")


def by_category(result: pd.DataFrame | Analysis | PathsLike) -> pd.DataFrame:
    """Time per op category (GEMM, attention, convolution, …; docs/analysis.md), longest first: launches, time,
    % of GPU time (adding up to 100), cumulative %, achieved FLOP/s and DRAM bytes/s, median % of roof."""
    from roofline.analysis.views import view

    return view(_frame(result), "category")


def findings(result: pd.DataFrame | Analysis | PathsLike) -> pd.DataFrame:
    """Nsight Compute's own rule results (its guided analysis, ``IAction.rule_results_as_dicts()``), one row per
    launch and result beside the roofline rows (``kernel_id``, ``source_file``): rule, section, title, type,
    estimated speedup (``global``: of the kernel's time; ``local``: of the part the rule looks at), estimated time
    saved (speedup × the launch's time), focus metrics, message, ``rank`` across the profile by time saved
    (docs/analysis.md). Empty where no input is a full Nsight Compute report."""
    from roofline.analysis.pipes import findings as table

    return table(_frame(result))


def plot(result: pd.DataFrame | Analysis | PathsLike, device: str | None = None,
         levels: Sequence[str] | None = None, title: str | None = None) -> object:
    """The HTML report's kernel roofline chart as a plotly Figure, for one device (default: the one with the
    most drawable time): the result's roofs and one point per kernel and memory level, coloured by bound."""
    from roofline.result import plot as draw

    return draw(_frame(result), device=device, levels=levels, title=title)


def compare(before: pd.DataFrame | Analysis | PathsLike | list, after: pd.DataFrame | Analysis | PathsLike | list,
            *candidates: pd.DataFrame | Analysis | PathsLike | list, levels: Sequence[str] = LEVELS,
            mapping: Mapping[str, str] | None = None, launches: bool = False) -> pd.DataFrame:
    """The diff of a baseline and candidates by kernel identity (``roofline compare``; docs/compare.md): one row
    per (candidate, identity) with both sides' launches, median launch time, FLOPs, bytes, % of roof and bound,
    the changes and their intervals. A side given as a list of results is several captures of one program.
    ``launches=True``: the launch-by-launch pairing of two results instead (one row per launch pair)."""
    if launches:
        from roofline.analysis.compare import compare as diff

        return diff(_frame(before), _frame(after), levels=levels, mapping=mapping)
    from roofline.analysis.compare_runs import Side, compare_sides

    def side(i: int, x: object) -> Side:
        many = isinstance(x, list) and x and all(isinstance(r, (pd.DataFrame, pipeline.Analysis)) for r in x)
        runs = [_frame(r) for r in x] if many else [_frame(x)]  # type: ignore[arg-type]
        return Side(f"candidate {i}" if i else "baseline", [(f"capture {j + 1}", r) for j, r in enumerate(runs)])

    return compare_sides([side(i, x) for i, x in enumerate((before, after, *candidates))], levels, mapping).table


__all__ = ["analyze", "by_category", "compare", "findings", "plot", "read", "read_each", "run", "summary"]
