"""``roofline compare``: the roofline diff of profiles and its CI gate."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click
import pandas as pd

from roofline.cli.common import EXIT_GATE, EXIT_INPUT_ERRORS, analysed, levels_option, print_result
from roofline.cli.common import err as _err
from roofline.errors import path_text


@click.command("compare")
@click.argument("profiles", nargs=-1, required=True, type=click.Path(path_type=Path, readable=False))
@click.option("--out", "-o", type=click.Path(path_type=Path), help="Write every pair to .parquet or .csv.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "ndjson", "csv"]), default="table", show_default=True)
@click.option("--levels", default="dram,l2,l1", show_default=True, callback=levels_option, help="Memory levels compared.")
@click.option("--peaks", "peaks_opt", default="counters", show_default=True, metavar="SOURCE",
              help="'counters', 'spec', a GPU name, or a peaks file (.toml), for every profile.")
@click.option("--device", default=None, metavar="NAME", help="GPU name for profiles that do not record one.")
@click.option("--map", "map_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Renamed kernels: lines 'baseline name = candidate name'.")
@click.option("--fail-on", "fail_on", default=None, metavar="RULES",
              help="Exit 4 when a rule is broken, e.g. 'time>5%,roof<-10,bound'. See docs/compare.md.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="Write the HTML diff (arrows from baseline to candidate points).")
@click.option("--groups", is_flag=True, help="Also print repeated launches compared as groups.")
def compare_cmd(profiles: tuple[Path, ...], out: Path | None, fmt: str, levels: tuple[str, ...], peaks_opt: str,
                device: str | None, map_file: str | None, fail_on: str | None, html_path: Path | None,
                groups: bool) -> None:
    """Roofline diff: BASELINE against each CANDIDATE (ncu reports, CSVs, traces, or folders of them).

    Per matched kernel: change in time, FLOPs, bytes and intensity per level, achieved FLOP/s,
    % of roof, and whether the binding roof moved; new and vanished kernels; the whole program.
    """
    from roofline.analysis import compare as cmp

    if len(profiles) < 2:
        raise click.UsageError("compare needs a baseline and at least one candidate profile")
    try:
        rules = cmp.parse_rules(fail_on) if fail_on else []
        mapping = cmp.read_mapping(map_file) if map_file else None
    except cmp.CompareError as exc:
        raise click.UsageError(str(exc)) from None
    from roofline.pipeline import Options

    frames_of, runs = [], []
    options = Options(peaks=peaks_opt, device=device, levels=levels)
    for p in profiles:
        run = analysed((p,), options)
        if run.failed or run.frame.empty:
            _err(f"{p}: cannot be compared (see the errors above)" if run.failed else f"{p}: no kernels to compare")
            sys.exit(EXIT_INPUT_ERRORS)
        frames_of.append(run.frame)
        runs.append(run)
    base = frames_of[0]
    from roofline.hardware.peaks import recorded_levels

    # LDS is compared when every profile records it (AMD), with the default levels
    levels = tuple(lv for lv in recorded_levels(base, levels)
                   if all(lv in recorded_levels(frame, levels) for frame in frames_of[1:]))
    violations: list[str] = []
    unchecked: list[str] = []  # rules the gate could not evaluate: they fail it too
    frames, summaries = [], []
    for path, cand in zip(profiles[1:], frames_of[1:]):
        diff = cmp.compare(base, cand, levels, mapping)
        diff.insert(0, "candidate", str(path))
        prog = cmp.program_change(diff)
        if fmt in ("json", "ndjson"):  # the printed rows' stable key (--out is written without it)
            from roofline.report.envelope import compare_row_keys, compare_summary

            diff.insert(0, "row_key", compare_row_keys(diff, len(frames) + 1).to_numpy())
            summaries.append({"baseline": str(profiles[0]), "candidate": str(path), **compare_summary(diff)})
        summary = (f"{profiles[0]} → {path}: {prog['matched']} matched, {prog['new']} new, {prog['vanished']} vanished; "
                   f"whole-program time {_ms(prog['time_base_s'])} → {_ms(prog['time_cand_s'])} "
                   f"({_pct_text(prog['time_change_pct'])})")
        if fmt == "table":
            click.echo(summary)
            if prog["matched"] == 0:
                click.echo("  nothing matched: are these the same program? pair renamed kernels with --map FILE")
            _devices_note(base, cand, peaks_opt)
            _formats_note(base, cand)
            click.echo(_diff_table(diff))
            if groups:
                click.echo(cmp.group_changes(diff).to_string(index=False))
        if html_path is not None:
            from roofline.report import compare_html

            target = html_path if len(profiles) == 2 else html_path.with_name(f"{html_path.stem}-{len(frames)}{html_path.suffix}")
            try:
                compare_html.write(diff, base, cand, target, f"{profiles[0]} → {path}", summary)
            except OSError as exc:  # a folder or a path under a file: the user's to fix, not a bug
                _err(f"cannot write {path_text(target)}: {exc.strerror or exc}")
                sys.exit(EXIT_INPUT_ERRORS)
        violations += cmp.gate(diff, rules)
        unchecked += cmp.unevaluated(diff, rules)
        frames.append(diff)
    everything = pd.concat(frames, ignore_index=True)
    if out is not None:
        from roofline.schema import write_table

        try:
            write_table(everything.drop(columns=["row_key"], errors="ignore"), out)  # as before the envelope
        except OSError as exc:
            _err(f"cannot write {path_text(out)}: {exc.strerror or exc}")
            sys.exit(EXIT_INPUT_ERRORS)
    if fmt == "json":
        from roofline.report.envelope import compare_envelope

        env = compare_envelope(options, runs, summaries, len(everything), {"map": map_file, "fail_on": fail_on})
        print_result(everything, fmt, levels, None, envelope=env)
    elif fmt != "table":
        print_result(everything, fmt, levels, None)
    for v in violations:
        _err(f"regression: {v}")
    for v in unchecked:
        _err(f"cannot evaluate: {v}")
    if violations or unchecked:
        _err(f"--fail-on {fail_on!r}: {len(violations)} violation(s)"
             + (f", {len(unchecked)} rule check(s) that could not be evaluated" if unchecked else ""))
        sys.exit(EXIT_GATE)


def _devices_note(base: pd.DataFrame, cand: pd.DataFrame, peaks_opt: str) -> None:
    b = set(base["device_name"].dropna().astype(str))
    c = set(cand["device_name"].dropna().astype(str))
    if b != c:
        missing = [n for n, f in (("baseline", base), ("candidate", cand)) if f["peak_dram_bytes_per_s"].isna().all()]
        click.echo(f"  different devices ({', '.join(sorted(b)) or '?'} vs {', '.join(sorted(c)) or '?'}): each is "
                   "judged against its own roofs" + (f"; {' and '.join(missing)} without roofs: give --peaks or --device"
                                                     if missing else ""))


def _formats_note(base: pd.DataFrame, cand: pd.DataFrame) -> None:
    b = set(base["format"].dropna().astype(str))
    c = set(cand["format"].dropna().astype(str))
    if b != c:
        click.echo(f"  different formats ({', '.join(sorted(b))} vs {', '.join(sorted(c))}): time, FLOPs and DRAM bytes "
                   "are comparable (traces: analytic, from shapes); L2/L1 bytes exist on the ncu side only")


def _diff_table(diff: pd.DataFrame) -> str:
    from roofline.report.table import _si

    rows = []
    for _, r in diff.iterrows():
        rows.append({
            "kernel": str(r["kernel"])[:40], "match": r["match"],
            "time": f"{_si(_num(r['duration_s_base']), 's')} → {_si(_num(r['duration_s_cand']), 's')}",
            "Δtime": _pct_text(r.get("duration_s_change_pct")), "ΔFLOP": _pct_text(r.get("flop_total_change_pct")),
            "Δachieved": _pct_text(r.get("achieved_flop_per_s_change_pct")),
            "roof": f"{r['binding_roof_base'] if isinstance(r['binding_roof_base'], str) else '-'} → "
                    f"{r['binding_roof_cand'] if isinstance(r['binding_roof_cand'], str) else '-'}"
                    + (" (moved)" if r["bound_moved"] else ""),
            "Δ%roof": "n/a" if pd.isna(r["pct_of_roof_change_pts"]) else f"{r['pct_of_roof_change_pts']:+.1f} pts",
        })
    return pd.DataFrame(rows).to_string(index=False) if rows else "(no kernels)"


def _num(v: object) -> float:
    try:
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def _ms(v: float) -> str:
    return "unavailable (a kernel has no duration)" if math.isnan(v) else f"{v * 1e3:.4g} ms"


def _pct_text(v: object) -> str:
    f = _num(v)
    return "n/a" if math.isnan(f) else f"{f:+.1f}%"

