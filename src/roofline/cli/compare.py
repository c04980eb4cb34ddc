"""``roofline compare``: a baseline against candidates, identity by identity, and its CI gate (docs/compare.md)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import click
import pandas as pd

from roofline.cli.common import EXIT_INPUT_ERRORS, analysed, levels_option, print_result
from roofline.cli.common import err as _err
from roofline.errors import path_text

_GLOB = re.compile(r"[*?\[]")


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    m = re.fullmatch(r"\s*([0-9.]+(?:e-?\d+)?)\s*(s|ms|us|µs|ns)?\s*", value or "")
    if not m:
        raise click.BadParameter(f"{value!r}: a time such as 0.1us, 100ns, 2ms")
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, None: 1.0}[m.group(2)]
    return float(m.group(1)) * scale


@click.command("compare")
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path, readable=False))
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Regressions, improvements and one-sided identities shown per candidate.")
@click.option("--all", "show_all", is_flag=True, help="Every identity in the terminal output (not only the top N).")
@click.option("--out", "-o", type=click.Path(path_type=Path), help="Write the full table to .parquet or .csv.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "ndjson", "csv"]), default="table", show_default=True,
              help="json: the summary and every identity; ndjson/csv: every identity (every pair with --launches).")
@click.option("--runs", "split", is_flag=True,
              help="A folder or dataset is several captures of one side (one per file), not one profile.")
@click.option("--min-share", type=float, default=1.0, show_default=True, metavar="PCT",
              help="Noise floor: rules act on identities with at least this % of program time.")
@click.option("--min-change", default="0.1us", show_default=True, callback=_duration, metavar="TIME",
              help="Noise floor: time rules ignore per-launch changes smaller than this.")
@click.option("--normalise", type=click.Choice(["auto", "step", "launch", "none"]), default="auto", show_default=True,
              help="How totals are compared: per training step, per launch, or as they are (auto: step if recorded, "
                   "else launch where counts differ).")
@click.option("--by-name", is_flag=True, help="Identities by name alone (not shapes or launch configuration).")
@click.option("--launches", is_flag=True, help="Pair launch by launch (the n-th launch of a kernel), not by identity.")
@click.option("--levels", default="dram,l2,l1", show_default=True, callback=levels_option, help="Memory levels compared.")
@click.option("--peaks", "peaks_opt", default="counters", show_default=True, metavar="SOURCE",
              help="'counters', 'spec', a GPU name, or a peaks file (.toml), for every profile.")
@click.option("--device", default=None, metavar="NAME", help="GPU name for profiles that do not record one.")
@click.option("--map", "map_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Renamed kernels: lines 'baseline name = candidate name'.")
@click.option("--fail-on", "fail_on", default=None, metavar="RULES",
              help="Exit 4 when a rule is broken, e.g. 'time>5%,comm_time>20%,roof<-10,bound'. See docs/compare.md.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="Write the HTML diff: summary, sortable paged table, roofline and spread charts.")
@click.option("--groups", is_flag=True, help="With --launches: also print repeated launches compared as groups.")
def compare_cmd(profiles: tuple[Path, ...], top: int, show_all: bool, out: Path | None, fmt: str, split: bool,
                min_share: float, min_change: float, normalise: str, by_name: bool, launches: bool,
                levels: tuple[str, ...], peaks_opt: str, device: str | None, map_file: str | None, fail_on: str | None,
                html_path: Path | None, groups: bool) -> None:
    """Roofline diff: BASELINE against each CANDIDATE, kernel identity by identity.

    Each side is a profile (ncu report, nsys export, trace, CSV), a folder or dataset, or a quoted glob of
    several captures of the same program (with --runs, a folder's files are captures too). Per identity:
    launches, median launch time, FLOPs, bytes, % of roof and bound on each side, the change with its
    interval over captures; the program's time normalised per step or launch. Top regressions first.
    """
    from roofline.analysis import compare as cmp
    from roofline.analysis import compare_gate

    if len(profiles) < 2:
        raise click.UsageError("compare needs a baseline and at least one candidate profile")
    try:
        rules = (cmp.parse_rules if launches else compare_gate.parse_rules)(fail_on) if fail_on else []
        mapping = cmp.read_mapping(map_file) if map_file else None
    except cmp.CompareError as exc:
        raise click.UsageError(str(exc)) from None
    from roofline.pipeline import Options

    options = Options(peaks=peaks_opt, device=device, levels=levels)
    read: dict[str, Any] = {}  # a file named twice (a profile against itself) is read once: path -> its Analysis
    sides = [_side(p, options, split, read) for p in profiles]
    frames = [f for _, runs in sides for _, f in runs]
    from roofline.hardware.peaks import recorded_levels

    # LDS is compared when every profile records it (AMD), with the default levels
    levels = tuple(lv for lv in recorded_levels(frames[0], levels)
                   if all(lv in recorded_levels(frame, levels) for frame in frames[1:]))
    if launches:
        from roofline.cli.compare_launches import launches_cmd

        launches_cmd(profiles, [runs[0][1] for _, runs in sides], levels, mapping, rules, fail_on, fmt, out,
                     html_path, groups, peaks_opt, envelope_of=(options, list(read.values()), map_file))
        return
    _identities(sides, levels, mapping, rules, fail_on, fmt, out, html_path, None if show_all else top,
                compare_gate.Floor(min_share, min_change), normalise, not by_name,
                envelope_of=(options, list(read.values()), map_file))


def _side(p: Path, options: object, split: bool, read: dict[str, Any]
          ) -> tuple[str, list[tuple[str, pd.DataFrame]]]:
    """One side: its label and captures (label, analysed frame); a failed or empty input exits 1."""
    from roofline.analysis.identity import split_runs

    text = str(p)
    if not p.exists() and _GLOB.search(text):  # a quoted glob: each file it matches is one capture
        from roofline.pipeline import expand

        paths = expand([text], globs=True, absolute=True).files
        if not paths:
            _err(f"{path_text(p)}: no file matches this pattern")
            sys.exit(EXIT_INPUT_ERRORS)
        return text, [(q.name, _analysed(q, options, read)) for q in paths]
    frame = _analysed(p, options, read)
    runs = split_runs(frame) if split else [(text, frame)]
    return text, runs


def _analysed(p: Path, options: object, read: dict[str, Any]) -> pd.DataFrame:
    key = str(p.resolve())
    if key in read:
        return read[key].frame  # type: ignore[no-any-return]
    run = analysed((p,), options)  # type: ignore[arg-type]
    if run.failed or run.frame.empty:
        _err(f"{path_text(p)}: cannot be compared (see the errors above)" if run.failed
             else f"{path_text(p)}: no kernels to compare")
        sys.exit(EXIT_INPUT_ERRORS)
    read[key] = run
    return run.frame


def _identities(sides: list[tuple[str, list[tuple[str, pd.DataFrame]]]], levels: tuple[str, ...],
                mapping: dict[str, str] | None, rules: list, fail_on: str | None, fmt: str, out: Path | None,
                html_path: Path | None, top: int | None, floor: object, normalise: str, config: bool,
                envelope_of: tuple[Any, list[Any], str | None]) -> None:
    from roofline.analysis import compare_gate
    from roofline.analysis.compare_runs import Side, compare_sides
    from roofline.analysis.compare_summary import gate_result, summary
    from roofline.report.compare_text import render

    try:
        comp = compare_sides([Side(label, runs) for label, runs in sides], levels, mapping, config, normalise)
    except ValueError as exc:  # --normalise step where a capture has no step
        raise click.UsageError(str(exc)) from None
    violations = compare_gate.gate(comp, rules, floor) if rules else []  # type: ignore[arg-type]
    unchecked = compare_gate.unevaluated(comp, rules, floor) if rules else []  # type: ignore[arg-type]
    result = summary(comp, top, floor, gate_result(rules, violations, unchecked) if rules else None)  # type: ignore[arg-type]
    table = comp.table.drop(columns=["key"])
    if fmt == "table":
        lines = render(result, top).split("\n")
        notes = _devices_note([f for _, runs in sides for _, f in runs])
        click.echo("\n".join([*lines[:4], *notes, *lines[4:]]))  # after the first candidate's header
    elif fmt == "json":  # the envelope (docs/agents.md): the summary, then every identity as a keyed row
        from roofline.report.envelope import compare_envelope, identity_row_keys

        options, runs, map_file = envelope_of
        rows = table.copy()
        rows.insert(0, "row_key", identity_row_keys(comp.table).to_numpy())
        env = compare_envelope(options, runs, result, len(rows), {"map": map_file, "fail_on": fail_on, "top": top})
        print_result(rows, fmt, levels, None, envelope=env)
    else:
        print_result(table, fmt, levels, None)
    if out is not None:
        from roofline.schema import write_table

        try:
            write_table(table, out)
        except OSError as exc:
            _err(f"cannot write {path_text(out)}: {exc.strerror or exc}")
            sys.exit(EXIT_INPUT_ERRORS)
    if html_path is not None:
        from roofline.report import compare_html

        try:
            compare_html.write_identities(comp, summary(comp, None, floor, result["gate"]),  # type: ignore[arg-type]
                                          html_path, [runs[0][1] for _, runs in sides])
        except OSError as exc:  # a folder or a path under a file: the user's to fix, not a bug
            _err(f"cannot write {path_text(html_path)}: {exc.strerror or exc}")
            sys.exit(EXIT_INPUT_ERRORS)
    from roofline.cli.common import exit_on_gate

    exit_on_gate(violations, unchecked, fail_on)


def _devices_note(frames: list[pd.DataFrame]) -> list[str]:
    names = [set(f["device_name"].dropna().astype(str)) if "device_name" in f else set() for f in frames]
    formats = [set(f["format"].dropna().astype(str)) if "format" in f else set() for f in frames]
    out = []
    if any(n != names[0] for n in names[1:]):
        out.append(f"  different devices ({' vs '.join(', '.join(sorted(n)) or '?' for n in names)}): each capture is "
                   "judged against its own roofs")
    if any(f != formats[0] for f in formats[1:]):
        out.append(f"  different formats ({' vs '.join(', '.join(sorted(f)) for f in formats)}): time, FLOPs and DRAM "
                   "bytes are comparable (traces: analytic, from shapes); L2/L1 bytes exist on the ncu side only")
    return out
