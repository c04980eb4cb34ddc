"""``roofline report`` (the chart and the HTML page of profiles) and ``roofline demo`` (it, on the bundled samples)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from roofline.cli.common import analysed, exit_if_failed, fail, levels_option, table_lines


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, readable=False))
@click.option("--out", "-o", "out_dir", type=click.Path(path_type=Path), default=Path("roofline-report"),
              show_default=True, help="Folder for roofline.png and report.html.")
@click.option("--svg", is_flag=True, help="Also write the chart as SVG.")
@click.option("--levels", default="dram,l2,l1", show_default=True, callback=levels_option,
              help="Memory levels of the hierarchical roofline, comma-separated.")
@click.option("--peaks", "peaks_opt", default="counters", show_default=True, metavar="SOURCE",
              help="'counters', 'spec', a GPU name, or a peaks file (.toml); see `roofline analyze --help`.")
@click.option("--clock", type=click.Choice(["profiled", "boost"]), default="profiled", show_default=True,
              help="Clock basis of the compute and L1 roofs drawn.")
@click.option("--device", default=None, metavar="NAME", help="GPU name for profiles that do not record one.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True,
              help="Kernels in the terminal summary and the report's top table.")
@click.option("--latency-threshold", type=click.FloatRange(0, 100), default=20.0, show_default=True,
              help="Under this % of every roof a kernel is called latency-limited.")
@click.option("--device-map", "device_map", multiple=True, metavar="NAME=KNOWN",
              help="Take the roofs of a device the profile names NAME from the table entry KNOWN (repeatable).")
@click.option("--strict", is_flag=True, help="Exit 1 when some device has no roofs (default: a warning).")
@click.option("--links", "links", type=click.Path(path_type=Path), default=None, metavar="FILE.toml",
              help="Link roofs and placement the profile does not record (docs/collectives.md).")
def report(paths: tuple[Path, ...], out_dir: Path, svg: bool, levels: tuple[str, ...], peaks_opt: str, clock: str,
           device: str | None, top: int, latency_threshold: float, device_map: tuple[str, ...] = (),
           strict: bool = False, links: Path | None = None) -> None:
    """Write the roofline chart (PNG, SVG on request) and the interactive HTML report of profiles,
    and print the slowest kernels with their roofline figures."""
    from roofline.analysis.headline import row_facts
    from roofline.analysis.select import select
    from roofline.pipeline import Options
    from roofline.report import undrawable_reasons, write_report

    run = analysed(paths, Options(peaks=peaks_opt, device=device, device_map=device_map, levels=levels, clock=clock,
                                  latency_threshold_pct=latency_threshold, strict=strict,
                                  links=str(links) if links else None))
    result = run.frame
    prepared: dict[str, Any] = {}

    def prepare() -> dict[str, Any]:  # once, after the charts' processes are started (this is not their work)
        if not prepared:
            # longest first: the table's rows, and the page's (one sorted copy for both)
            prepared["ordered"] = ordered = select(result)
            # every row's category, point, kind and reasons, taken once: the table's headlines read them in the
            # frame's order, its rows and the page in the sorted order (each a function of its row alone)
            prepared["facts"] = facts = row_facts(result) if result.index.is_unique else None
            prepared["sorted_facts"] = \
                facts.take(result.index.get_indexer(ordered.index)) if facts is not None else None
        return prepared

    lines: list[str] = []

    def table() -> None:  # built while other processes draw the charts, printed once they are written
        rows = prepare()
        lines.extend(table_lines(rows["ordered"], run.levels, None, limit=top, latency_threshold=latency_threshold,
                                 more="--top N", scope=result, facts=rows["sorted_facts"], scope_facts=rows["facts"]))
        lines.extend(undrawable_reasons(result))  # an empty chart says nothing: no chart, and why

    try:
        written = write_report(result, out_dir, run.levels, clock=clock, svg=svg, top=top, also=table,
                               longest_first=lambda: prepare()["ordered"], facts=lambda: prepare()["sorted_facts"])
    except OSError as exc:
        fail(f"cannot write the report to {out_dir}: {exc}")
    for line in lines:
        click.echo(line)
    for path in written:
        click.echo(f"wrote {path}")
    exit_if_failed(run)


@click.command()
@click.option("--out", "-o", "out_dir", type=click.Path(path_type=Path), default=Path("roofline-demo"),
              show_default=True, help="Folder for roofline*.png and report.html.")
@click.pass_context
def demo(ctx: click.Context, out_dir: Path) -> None:
    """Run `roofline report` on the bundled samples: a table here, the charts and the HTML report in OUT."""
    from roofline import samples
    from roofline.hardware.peaks import LEVELS

    ctx.invoke(report, paths=tuple(samples.paths()), out_dir=out_dir, svg=False, levels=tuple(LEVELS),
               peaks_opt="counters", clock="profiled", device=None, top=20, latency_threshold=20.0)
