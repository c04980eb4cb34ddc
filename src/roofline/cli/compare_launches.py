"""``roofline compare --launches``: launch-by-launch pairing (the n-th launch of a kernel), its table and gate.

Identities (the default, ``cli/compare.py``) are what a CI gate should act on; this view pairs every launch
and is kept for looking at one launch's change. Names are whole in ``--out``/JSON; the table cuts them with "…".
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import click
import pandas as pd

from roofline.cli.common import EXIT_INPUT_ERRORS, print_result
from roofline.cli.common import err as _err
from roofline.errors import path_text

NAME_WIDTH = 60


def launches_cmd(profiles: tuple[Path, ...], frames_of: list[pd.DataFrame], levels: tuple[str, ...],
                 mapping: dict[str, str] | None, rules: list, fail_on: str | None, fmt: str, out: Path | None,
                 html_path: Path | None, groups: bool, peaks_opt: str,
                 envelope_of: tuple[Any, list[Any], str | None] | None = None) -> None:
    from roofline.analysis import compare as cmp

    base = frames_of[0]
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
    if fmt == "json" and envelope_of is not None:
        from roofline.report.envelope import compare_envelope

        options, runs, map_file = envelope_of
        env = compare_envelope(options, runs, {"pairs": summaries}, len(everything),
                               {"map": map_file, "fail_on": fail_on, "launches": True}, by="compare-launches")
        print_result(everything, fmt, levels, None, envelope=env)
    elif fmt != "table":
        print_result(everything, fmt, levels, None)
    from roofline.cli.common import exit_on_gate

    exit_on_gate(violations, unchecked, fail_on)


def cut(name: str, width: int = NAME_WIDTH) -> str:
    """A name that fits ``width``: its head and tail around "…" (never silently cut)."""
    if len(name) <= width:
        return name
    tail = width // 3
    return name[:width - tail - 1] + "…" + name[-tail:]


def _diff_table(diff: pd.DataFrame) -> str:
    from roofline.report.table import _si

    rows = []
    for _, r in diff.iterrows():
        rows.append({
            "kernel": cut(str(r["kernel"])), "match": r["match"],
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
