"""What the commands share: exit codes, one-line errors, option callbacks, running the pipeline with its
messages on stderr, and printing a result (table, JSON, CSV).

Nothing here imports pandas at module level: ``roofline --help``/``--version`` stay instant.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

if TYPE_CHECKING:
    import pandas as pd

    from roofline.pipeline import Analysis, Message, Options

EXIT_INPUT_ERRORS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_GATE = 4

PRECISIONS = ("fp64", "fp32", "fp16", "tensor", "mixed", "none")


def err(msg: str) -> None:
    click.echo(f"roofline: {msg}", err=True)


def fail(msg: str) -> NoReturn:
    """One line on stderr, exit 1 (an input or output the user must fix)."""
    err(msg)
    sys.exit(EXIT_INPUT_ERRORS)


def levels_option(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[str, ...]:
    from roofline.hardware.peaks import ALL_LEVELS

    levels = tuple(v.strip().lower() for v in value.split(",") if v.strip())
    bad = [lv for lv in levels if lv not in ALL_LEVELS]
    if bad or not levels:
        raise click.BadParameter(f"choose from {','.join(ALL_LEVELS)} (comma-separated); got {value!r}")
    return levels


def precision_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A misspelt precision is a usage error (exit 2), not a filter that silently keeps nothing."""
    if value is None:
        return None
    v = value.strip().lower()
    if v in PRECISIONS or (v.startswith("tensor:") and len(v) > len("tensor:")):
        return v
    raise click.BadParameter(f"choose from {', '.join(PRECISIONS)} or tensor:<path> (e.g. tensor:bf16); got {value!r}")


def say(message: Message) -> None:
    """A pipeline message as one stderr line."""
    err(message.text)


@contextmanager
def _progress(files: list[Path]) -> Iterator[Iterable[Path]]:
    show = len(files) > 1 and sys.stderr.isatty()
    with click.progressbar(files, label="ingesting", file=sys.stderr, show_pos=True, hidden=not show) as bar:
        yield bar


@contextmanager
def usage_errors() -> Iterator[None]:
    """The pipeline's option errors as click usage errors (exit 2), naming the option."""
    from roofline.pipeline import OptionError

    try:
        yield
    except OptionError as exc:
        if exc.option:
            raise click.BadParameter(str(exc), param_hint=exc.option) from None
        raise click.UsageError(str(exc)) from None


def analysed(paths: Iterable[Path], options: Options) -> Analysis:
    """The pipeline over ``paths``: failures and warnings on stderr as they arise, a bar on a terminal."""
    from roofline.pipeline import run

    with usage_errors():
        return run(paths, options, report=say, progress=_progress)


def exit_if_failed(analysis: Analysis) -> None:
    """After the output is written: the count of failed inputs, exit 1 (the good ones were analysed)."""
    if analysis.failed:
        fail(f"{analysis.failed} of {analysis.inputs} input(s) failed")


def print_result(result: pd.DataFrame, fmt: str, levels: tuple[str, ...], by: str | None, limit: int | None = None,
                 total: int | None = None, latency_threshold: float = 20.0, more: str = "--top N or --all",
                 collect_from: pd.DataFrame | None = None) -> None:
    """``limit``: rows of the table shown (the rest counted in its footer); JSON and CSV get every row (with
    their ``collect_next`` commands). ``collect_from``: the rows whose collect-next block the table prints once
    (the longest kernels lacking counters or shapes; analysis/collect.py)."""
    if fmt == "table":
        from roofline.report.table import format_table

        if not result.empty:
            from roofline.ingest.amd.arch import device_labels

            devices = device_labels(result) or "unknown device"  # with SMs / CUs: NVIDIA and AMD side by side
            what = f"{total if total is not None else len(result):,} {by or 'kernel'} row(s)"
            click.echo(f"{what} on {devices}; hierarchical roofline over {', '.join(lv.upper() for lv in levels)}; "
                       "longest first")
        click.echo(format_table(result, levels=levels, by=by, limit=limit, total=total,
                                latency_threshold=latency_threshold, more=more))
        for prov in result.attrs.get("roofline.provenance", []):  # CPU-only inputs: why they have no rows
            if isinstance(prov, dict) and prov.get("no_gpu_work"):
                click.echo(f"{prov['source_file']}: no GPU kernels: {prov['no_gpu_work']}")
        for prov in result.attrs.get("roofline.provenance", []) if by is None else []:  # traces: what is not priced
            for table, lost in (prov.get("missing_tables") or {}).items() if isinstance(prov, dict) else ():
                click.echo(f"{prov.get('source_file', '')}: no {table} table in the export; lost: {lost}")
            missing = prov.get("unmodelled_ops") if isinstance(prov, dict) else None
            if missing:
                click.echo(f"{prov.get('source_file', '')}: GPU time without FLOPs or bytes: " + ", ".join(
                    f"{m['op']} {100 * m['gpu_time_share']:.1f}%" for m in missing[:6]))
        if collect_from is not None and not collect_from.empty:
            from roofline.analysis.collect import summary

            for line in summary(collect_from):
                click.echo(line)
    elif fmt in ("json", "ndjson"):
        from roofline.report.records import stream_json

        stream_json(result, ndjson=fmt == "ndjson")
    else:
        click.echo(result.to_csv(index=False), nl=False)


def write_html(result: pd.DataFrame, path: Path, levels: tuple[str, ...], clock: str, top: int = 10) -> None:
    from roofline.report import html, write_charts

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        html.write(result, path, levels, clock=clock, top=top)
        write_charts(result, path.parent, levels, clock)
    except OSError as exc:
        fail(f"cannot write {path}: {exc}")


def write_frame(frame: pd.DataFrame, out: Path) -> None:
    from roofline.errors import RooflineError
    from roofline.schema import write_table

    try:
        write_table(frame, out)
    except (RooflineError, OSError) as exc:
        fail(f"cannot write {out}: {exc}")
