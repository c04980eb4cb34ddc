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

    from roofline.analysis.headline import RowFacts
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
    from roofline.cli.safe import raw

    show = len(files) > 1 and sys.stderr.isatty()
    with click.progressbar(files, label="ingesting", file=raw(sys.stderr), show_pos=True, hidden=not show) as bar:
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


def summarised(paths: Iterable[Path], options: Options, **how: object) -> tuple[Analysis, int] | None:
    """:func:`roofline.pipeline.summarise` (batch datasets, streamed) with its messages on stderr; None when the
    paths are not all datasets."""
    from roofline.pipeline import summarise

    with usage_errors():
        try:
            return summarise(paths, options, report=say, **how)  # type: ignore[arg-type]
        except ValueError as exc:  # a bad --name/--bound pattern, as the whole-frame path says it
            raise click.UsageError(str(exc)) from None


def exit_if_failed(analysis: Analysis) -> None:
    """After the output is written: the count of failed inputs, exit 1 (the good ones were analysed)."""
    if analysis.failed:
        fail(f"{analysis.failed} of {analysis.inputs} input(s) failed")


def _top_findings(frame: pd.DataFrame, top: int = 3) -> list[str]:
    """Nsight Compute's findings with the largest estimated time saved across the profile (roofline.findings)."""
    if "ncu_rules_json" not in frame or not frame["ncu_rules_json"].notna().any():
        return []
    from roofline.analysis.pipes import findings
    from roofline.report.table import _si

    table = findings(frame)
    ranked = table[table["est_time_saved_s"] > 0]
    if ranked.empty:
        return []
    lines = [f"ncu's findings by estimated time saved ({len(ranked):,} with an estimate; roofline.findings lists all):"]
    for f in ranked.head(top).itertuples():
        name = f.kernel_short_name if isinstance(f.kernel_short_name, str) else str(f.kernel_name)
        lines.append(f"  {f.rank}. {f.title}: {name} (id {f.kernel_id}), est. {f.speedup_type} speedup "
                     f"{f.est_speedup_pct:.0f}% of {_si(f.duration_s, 's')} = {_si(f.est_time_saved_s, 's')}")
    return lines


def print_result(result: pd.DataFrame, fmt: str, levels: tuple[str, ...], by: str | None, limit: int | None = None,
                 total: int | None = None, latency_threshold: float = 20.0, more: str = "--top N or --all",
                 scope: pd.DataFrame | None = None, fold: bool = True, full_names: bool = False,
                 envelope: dict | None = None) -> None:
    """``limit``: rows of the table shown (the rest counted in its footer; ``total``: how many there are, when
    ``result`` holds only the first); JSON and CSV get every row. ``envelope``: JSON's object around the rows
    (:mod:`roofline.report.envelope`: schema version, inputs, headline, peaks, notes, errors), rows last.

    The table view starts with the headline of ``scope`` (the kernels the rows come from: coverage, time by
    kind, MFU); with ``fold``, rows without a roofline point are not listed but summed into one line per
    reason, and idle rows are never listed (their time is in the headline); it ends with the collect-next
    commands for the longest kernels of ``scope`` lacking counters or shapes, printed once (analysis/collect.py).
    JSON and CSV carry them per row (``collect_next``)."""
    if fmt == "table" and by in ("category", "summary", "collective"):
        from roofline.report.summary import format_categories, format_collectives, format_headlines

        if by == "collective":
            click.echo(format_collectives(result))
        elif by == "summary":
            from roofline.analysis.headline import headlines

            click.echo(format_headlines(headlines(scope if scope is not None else result)))
        else:
            click.echo(format_categories(result))
        return
    if fmt == "table":
        for line in table_lines(result, levels, by, limit, total, latency_threshold, more, scope, fold, full_names):
            click.echo(line)
    elif fmt in ("json", "ndjson"):
        from roofline.report.records import stream_json

        if fmt == "json" and envelope is not None:  # --by summary too: its headlines are the envelope's
            stream_json(_with_collect(result, scope, by), ndjson=False, header=envelope)
            return
        if by == "summary":  # NDJSON: the headlines, nested as they are (reasons, kinds, peaks), one per line
            import orjson

            from roofline.analysis.headline import headlines

            items = [h.to_dict() for h in headlines(scope if scope is not None else result)]
            if fmt == "ndjson":
                click.echo("\n".join(orjson.dumps(i).decode() for i in items))
            else:
                click.echo(orjson.dumps(items, option=orjson.OPT_INDENT_2).decode())
            return
        stream_json(_with_collect(result, scope, by), ndjson=fmt == "ndjson")
    else:
        from roofline.cli.csv_text import echo_csv

        echo_csv(_with_collect(result, scope, by))


#: what the table reads of every listed row (besides the rows it shows): files and devices, and the devices' labels
_TABLE_WIDE = ("source_file", "device_name", "format", "compute_capability", "sm_count")


def table_lines(result: pd.DataFrame, levels: tuple[str, ...], by: str | None, limit: int | None = None,
                total: int | None = None, latency_threshold: float = 20.0, more: str = "--top N or --all",
                scope: pd.DataFrame | None = None, fold: bool = True, full_names: bool = False,
                facts: RowFacts | None = None, scope_facts: RowFacts | None = None) -> list[str]:
    """:func:`print_result`'s table view as its lines (each echoed as one): ``roofline report`` builds them
    while other processes draw its charts, and prints them once the charts are written. ``facts`` and
    ``scope_facts``: the :func:`~roofline.analysis.headline.row_facts` of ``result`` and ``scope``, when known."""
    import numpy as np
    import pandas as pd

    from roofline.analysis.categories import IDLE, categorize
    from roofline.analysis.coverage import has_point
    from roofline.report.table import format_table

    out: list[str] = []
    if scope is not None and not scope.empty:
        from roofline.analysis.headline import headlines
        from roofline.report.summary import format_headlines

        out.append(format_headlines(headlines(scope, facts=scope_facts)) + "\n")
    folded, listed = result.iloc[0:0], result  # listed: every row given, for the folded rows' share of time
    whole = None  # the rows the table stands for, where `result` holds only the first `limit` of them
    why = None  # the folded rows' reasons and fixes, when the facts give them
    if not result.empty:
        from roofline.analysis.headline import REASON_COLUMNS, narrow

        slim = narrow(result)  # (the columns a headline reads)
        cats = categorize(slim) if facts is None else facts.of(result)
        keep = (cats != IDLE).to_numpy()  # idle time is in the headline, not a row
        if fold:
            point = has_point(result).to_numpy() if facts is None else facts.point
            # only what is read of them: the folded rows' reasons, and of the listed rows the first `limit`
            # whole and a few columns of the rest (each a copy of the whole frame, for a dataset, otherwise)
            if facts is not None and by is None:  # the folded rows are those the facts give a reason (no point,
                # not idle): of them only the names and durations are read (all 40 columns: ~40 ms of a dataset)
                why = (facts.reason[keep & ~point], facts.fix[keep & ~point])
                folded = slim[[c for c in REASON_COLUMNS if c in slim.columns]][keep & ~point]
            else:
                folded = (slim if by is None else result)[keep & ~point]
            shown = np.flatnonzero(keep & point)
            total = len(shown)
            if limit:
                whole = result[[c for c in _TABLE_WIDE if c in result.columns]].iloc[shown]
                shown = shown[:limit]
            result = result.iloc[shown]
        elif not keep.all():
            result = result[keep]
    if not result.empty:
        from roofline.ingest.amd.arch import device_labels
        from roofline.report.summary import compact_list

        devices = compact_list(device_labels(result if whole is None else whole).split(", ")) or "unknown device"
        what = f"{total if total is not None else len(result):,} {by or 'kernel'} row(s)"
        aside = f" ({len(folded):,} more without a roofline point: below)" if len(folded) else ""
        out.append(f"{what} on {devices}{aside}; hierarchical roofline over "
                   f"{', '.join(lv.upper() for lv in levels)}; longest first")
    if not result.empty or folded.empty:
        out.append(format_table(result, levels=levels, by=by, limit=limit, total=total,
                                latency_threshold=latency_threshold, more=more, full_names=full_names, whole=whole))
    if not folded.empty:
        from roofline.report.summary import format_folded

        whole = scope if scope is not None else listed
        gpu = float(pd.to_numeric(whole["duration_s"], errors="coerce").clip(lower=0).sum())
        out.append(format_folded(folded, gpu, by, headline=scope is not None, why=why))
    for prov in result.attrs.get("roofline.provenance", []):  # CPU-only inputs: why they have no rows
        if isinstance(prov, dict) and prov.get("no_gpu_work"):
            out.append(f"{prov['source_file']}: no GPU kernels: {prov['no_gpu_work']}")
    for prov in result.attrs.get("roofline.provenance", []) if by is None else []:  # exports: what is missing
        for table, lost in (prov.get("missing_tables") or {}).items() if isinstance(prov, dict) else ():
            out.append(f"{prov.get('source_file', '')}: no {table} table in the export; lost: {lost}")
        if isinstance(prov, dict) and prov.get("device_note"):
            out.append(f"{prov.get('source_file', '')}: {prov['device_note']}")
    # kernel tables only: a --by summary of a batch dataset streams from its scan and prints the same table
    if scope is not None and not scope.empty and by is None:
        from roofline.analysis.collect import summary

        out += _top_findings(scope)  # ncu's own findings, ranked across the profile
        out += summary(scope)  # the longest kernels lacking counters or shapes, once
    return out


def _with_collect(result: pd.DataFrame, scope: pd.DataFrame | None, by: str | None) -> pd.DataFrame:
    from roofline.analysis.collect import with_collect_next

    return with_collect_next(result, scope, by)


def write_html(result: pd.DataFrame, path: Path, levels: tuple[str, ...], clock: str, top: int = 10) -> None:
    from roofline.report import html, undrawable_reasons, write_charts

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        html.write(result, path, levels, clock=clock, top=top)
        write_charts(result, path.parent, levels, clock)
        for line in undrawable_reasons(result):
            err(line)
    except OSError as exc:
        fail(f"cannot write {path}: {exc}")


def write_frame(frame: pd.DataFrame, out: Path) -> None:
    from roofline.errors import RooflineError
    from roofline.schema import write_table

    try:
        write_table(frame, out)
    except (RooflineError, OSError) as exc:
        fail(f"cannot write {out}: {exc}")


def exit_on_gate(violations: list[str], unchecked: list[str], fail_on: str | None) -> None:
    """compare's gate: one line per violated rule and per rule that could not be evaluated, then exit 4."""
    for v in violations:
        err(f"regression: {v}")
    for v in unchecked:
        err(f"cannot evaluate: {v}")
    if violations or unchecked:
        err(f"--fail-on {fail_on!r}: {len(violations)} violation(s)"
            + (f", {len(unchecked)} rule check(s) that could not be evaluated" if unchecked else ""))
        sys.exit(EXIT_GATE)
