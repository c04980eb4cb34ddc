"""``roofline analyze``: the hierarchical roofline table of profiles (or records for scripts)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from roofline.cli.common import (
    analysed,
    exit_if_failed,
    levels_option,
    precision_option,
    print_result,
    summarised,
    write_frame,
    write_html,
)

if TYPE_CHECKING:
    import pandas as pd


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, readable=False))
@click.option("--out", "-o", type=click.Path(path_type=Path), help="Write the full table to .parquet or .csv.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "ndjson", "csv"]), default="table", show_default=True,
    help="What to print on stdout: a table for people; JSON (an array), NDJSON or CSV records for scripts.",
)
@click.option("--levels", default="dram,l2,l1", show_default=True, callback=levels_option,
              help="Memory levels of the hierarchical roofline, comma-separated.")
@click.option(
    "--peaks", "peaks_opt", default="counters", show_default=True, metavar="SOURCE",
    help="Where the roofs come from: 'counters' (the report's own, spec table where missing), 'spec' "
    "(the spec table), a GPU name from `roofline devices`, or a peaks file (.toml; AMD: rocprof-compute's "
    "roofline.csv for its measured roofs, sysinfo.csv for the architecture model).",
)
@click.option("--clock", type=click.Choice(["profiled", "boost", "both"]), default="profiled", show_default=True,
              help="Clock basis of compute and L1 roofs: as profiled, rescaled to the boost clock, or both views.")
@click.option(
    "--device", default=None, metavar="NAME",
    help="GPU name for profiles that do not record one (ncu CSV exports), e.g. 'A100-PCIE-40GB'; "
    "it selects the spec-table peaks. Unknown names are an error listing the known ones.",
)
@click.option("--name", "name_rx", default=None, metavar="REGEX", help="Only kernels whose name matches.")
@click.option("--bound", default=None, metavar="KIND", help="Only kernels with this bound: compute, memory, latency.")
@click.option("--precision", default=None, metavar="P", callback=precision_option,
              help="Only kernels whose work is P: fp64, fp32, fp16, tensor, mixed, none, or a tensor path (tensor:bf16).")
@click.option("--nvtx", default=None, metavar="REGEX", help="Only kernels in NVTX ranges that match.")
@click.option("--top", type=click.IntRange(min=1), default=None,
              help="Only the N longest (default: all in --out/json/csv; the table shows the 20 longest).")
@click.option("--all", "all_rows", is_flag=True,
              help="Print every row in the table, those without a roofline point too (default: the 20 longest with "
              "one; the others are summed into one line per reason).")
@click.option("--by", type=click.Choice(["kernel", "nvtx", "program", "process", "rank", "step", "category", "summary",
                                         "collective"]),
              default=None,
              help="Aggregate to one roofline point per kernel (name and input shapes or launch configuration), NVTX "
              "range, program (input file), process (nsys), rank (Kineto) or training step (ProfilerStep#N or an NVTX "
              "'step N' range); 'category': time per op category (GEMM, attention, ...: docs/analysis.md); "
              "'summary': the headline per profile, device and step (coverage, time by kind, MFU); 'collective': "
              "one row per NCCL/RCCL collective, size and group with its bus bandwidth and link roof "
              "(docs/collectives.md).")
@click.option("--full-names", is_flag=True, help="Print kernel names in full (default: abbreviated, told apart).")
@click.option("--latency-threshold", type=click.FloatRange(0, 100), default=20.0, show_default=True,
              help="Under this % of every roof a kernel is called latency-limited.")
@click.option("--counters", "counters", multiple=True, type=click.Path(path_type=Path), metavar="REPORT",
              help="ncu reports or CSV exports whose per-launch counters are carried onto every launch of the "
              "timeline PATHS (nsys export, Kineto trace, sparse ncu report); repeatable. See docs/nsys.md.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="Also write the interactive HTML report (and the PNG chart beside it).")
@click.option("--capture", "captures", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="PyTorch trace recorded while CUDA/HIP graphs were captured, or a folder of them (its "
              "execution_details.json gives their batch sizes): replayed graph kernels, torch.compile's included, get "
              "the captured ops' shapes (default: capture_traces/ beside the replay).")
@click.option("--device-map", "device_map", multiple=True, metavar="NAME=KNOWN",
              help="Take the roofs of a device the profile names NAME from the table entry KNOWN (repeatable).")
@click.option("--strict", is_flag=True, help="Exit 1 when some device has no roofs (default: a warning).")
@click.option("--runs", "runs", is_flag=True,
              help="The inputs are captures of one program (a file each, or a dataset's runs): per kernel identity "
                   "the median launch time over them and its spread (min, max).")
@click.option("--links", "links", type=click.Path(path_type=Path), default=None, metavar="FILE.toml",
              help="Link roofs and placement the profile does not record: the NIC between nodes, GPUs per node, "
              "an intra-node link (docs/collectives.md).")
def analyze(paths: tuple[Path, ...], out: Path | None, fmt: str, levels: tuple[str, ...], peaks_opt: str,
            clock: str, device: str | None, name_rx: str | None, bound: str | None, precision: str | None,
            nvtx: str | None, top: int | None, all_rows: bool, by: str | None, latency_threshold: float,
            html_path: Path | None, captures: tuple[Path, ...] = (), counters: tuple[Path, ...] = (),
            device_map: tuple[str, ...] = (), strict: bool = False, full_names: bool = False, runs: bool = False,
            links: Path | None = None) -> None:
    """Hierarchical roofline of profiles: per kernel and memory level the intensity, attainable and
    achieved FLOP/s, the binding roof, the % of it reached and the time at the roof.

    PATHS are profile files or folders of them. Bad files are reported one line each; the good
    ones are still analysed.
    """
    from roofline.analysis.views import table_rows
    from roofline.pipeline import Options

    options = Options(peaks=peaks_opt, device=device, device_map=device_map, counters=counters, captures=captures,
                      levels=levels, clock=clock, latency_threshold_pct=latency_threshold, strict=strict,
                      links=str(links) if links else None)
    from roofline.report.table import DEFAULT_TOP

    # the default table leads with the headline of every kernel, so it reads the whole frame; a --by summary
    # of batch datasets streams from the Parquet scan (roofline.batch.scan), never every row at once
    if html_path is None and out is None and by and by not in ("category", "summary", "collective"):
        streamed = summarised(paths, options, by=by, top=top or (None if by else DEFAULT_TOP), name=name_rx,
                              nvtx=nvtx, bound=bound, precision=precision)
        if streamed is not None:
            run, n_rows = streamed
            env = None
            if fmt in ("json", "ndjson"):
                from roofline.report.envelope import envelope, notes_of, with_row_keys

                with_row_keys(run.frame, by)
                unseen = {"level": "info", "rows": None, "text": "headline and peaks: not computed for a streamed "
                          "dataset summary (--by without --out); run without --by for them"}
                env = envelope("analyze", options=options, analysis=run, scope=run.frame, by=by, headline=[],
                               peaks=[], notes=[unseen, *notes_of(run, run.frame)], row_count=len(run.frame),
                               rows_total=n_rows, extra_options=_filters(by, top, name_rx, nvtx, bound, precision))
            print_result(run.frame, fmt, run.levels, by, limit=None if (top or all_rows) else DEFAULT_TOP,
                         total=n_rows, latency_threshold=latency_threshold, envelope=env)
            exit_if_failed(run)
            return
    run = analysed(paths, options)
    levels = run.levels
    try:
        # name and NVTX filters pick kernels, before any grouping; bound, precision and top pick rows
        result, kernels_view = table_rows(run.frame, by=by, levels=levels, latency_threshold_pct=latency_threshold,
                                          name=name_rx, nvtx=nvtx, bound=bound, precision=precision)
        n_rows = len(result)  # before --top: the table's footer says how many were left out
        every = result  # the table folds rows without a point before it takes the --top longest
        result = result.head(top) if top else result
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if runs:
        _runs(kernels_view, levels, fmt, out, None if all_rows else (top or DEFAULT_TOP))
        exit_if_failed(run)
        return
    if html_path is not None:
        write_html(kernels_view, html_path, levels, clock)
    if out is not None:
        write_frame(result, out)
    if fmt == "table" and not all_rows:
        print_result(every, fmt, levels, by, limit=top or DEFAULT_TOP, latency_threshold=latency_threshold,
                     scope=kernels_view, full_names=full_names)
    else:
        if fmt in ("json", "ndjson"):
            result = _keyed(result, run.frame, by)
        env = None
        if fmt == "json":
            from roofline.report.envelope import envelope

            env = envelope("analyze", options=options, analysis=run, scope=kernels_view, by=by,
                           row_count=len(result), rows_total=n_rows,
                           extra_options=_filters(by, top, name_rx, nvtx, bound, precision))
        print_result(result, fmt, levels, by, limit=None, total=n_rows, latency_threshold=latency_threshold,
                     scope=kernels_view, fold=False, full_names=full_names, envelope=env)
    exit_if_failed(run)


def _runs(frame: object, levels: tuple[str, ...], fmt: str, out: Path | None, top: int | None) -> None:
    """``--runs``: the spread of each kernel identity across the captures (``analysis/compare_runs.spread``)."""
    from roofline.analysis.compare_runs import spread
    from roofline.analysis.identity import split_runs
    from roofline.report.table import _si

    captures = split_runs(frame)  # type: ignore[arg-type]
    table = spread(captures, levels)
    if out is not None:
        write_frame(table, out)
    if fmt != "table":
        print_result(table, fmt, levels, None)
        return
    click.echo(f"{len(captures)} capture(s) of one program; per identity the median launch time over them, "
               "[min … max] and the spread in % of the median")
    shown = table if top is None else table.head(top)
    for r in shown.itertuples():
        click.echo(f"  {_si(r.total_s, 's'):>9} {r.share_pct:5.1f}%  {_si(r.median_s, 's'):>9} "
                   f"[{_si(r.median_s_min, 's')} … {_si(r.median_s_max, 's')}] ±{r.spread_pct / 2:.1f}%  "
                   f"{int(r.captures)}/{len(captures)}  {r.identity}")
    if len(shown) < len(table):
        click.echo(f"  … {len(table) - len(shown)} more identities (--all, --out FILE, --format json)")


def _keyed(result: pd.DataFrame, frame: pd.DataFrame, by: str | None) -> pd.DataFrame:
    """The printed rows with their stable key first (``--out`` and ``--html`` are written without it). A kernel
    row's key is taken over the whole frame, before any filter: ``--name`` or ``--top`` do not change it."""
    from roofline.report.envelope import row_keys

    if by is None and frame.index.is_unique and result.index.isin(frame.index).all():
        keys = row_keys(frame).reindex(result.index).to_numpy()
    else:
        keys = row_keys(result, by).to_numpy()
    out = result.copy(deep=False)  # (copy-on-write: the new column does not reach ``result``; no rows copied)
    out.insert(0, "row_key", keys)
    return out


def _filters(by: str | None, top: int | None, name: str | None, nvtx: str | None, bound: str | None,
             precision: str | None) -> dict[str, object]:
    """The row options of the envelope (beside the pipeline's ``Options``)."""
    return {"by": by, "top": top, "name": name, "nvtx": nvtx, "bound": bound, "precision": precision}
