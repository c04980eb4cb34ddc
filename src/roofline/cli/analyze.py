"""``roofline analyze``: the hierarchical roofline table of profiles (or records for scripts)."""

from __future__ import annotations

from pathlib import Path

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
@click.option("--by", type=click.Choice(["kernel", "nvtx", "program", "process", "rank", "step", "category", "summary"]),
              default=None,
              help="Aggregate to one roofline point per kernel (name and input shapes or launch configuration), NVTX "
              "range, program (input file), process (nsys), rank (Kineto) or training step (ProfilerStep#N or an NVTX "
              "'step N' range); 'category': time per op category (GEMM, attention, ...: docs/analysis.md); "
              "'summary': the headline per profile, device and step (coverage, time by kind, MFU).")
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
def analyze(paths: tuple[Path, ...], out: Path | None, fmt: str, levels: tuple[str, ...], peaks_opt: str,
            clock: str, device: str | None, name_rx: str | None, bound: str | None, precision: str | None,
            nvtx: str | None, top: int | None, all_rows: bool, by: str | None, latency_threshold: float,
            html_path: Path | None, captures: tuple[Path, ...] = (), counters: tuple[Path, ...] = (),
            device_map: tuple[str, ...] = (), strict: bool = False, full_names: bool = False) -> None:
    """Hierarchical roofline of profiles: per kernel and memory level the intensity, attainable and
    achieved FLOP/s, the binding roof, the % of it reached and the time at the roof.

    PATHS are profile files or folders of them. Bad files are reported one line each; the good
    ones are still analysed.
    """
    from roofline.analysis.aggregate import aggregate
    from roofline.analysis.select import select
    from roofline.analysis.views import view
    from roofline.pipeline import Options

    options = Options(peaks=peaks_opt, device=device, device_map=device_map, counters=counters, captures=captures,
                      levels=levels, clock=clock, latency_threshold_pct=latency_threshold, strict=strict)
    from roofline.report.table import DEFAULT_TOP

    # the default table leads with the headline of every kernel, so it reads the whole frame; a --by summary
    # of batch datasets streams from the Parquet scan (roofline.batch.scan), never every row at once
    if html_path is None and out is None and by and by not in ("category", "summary"):
        streamed = summarised(paths, options, by=by, top=top or (None if by else DEFAULT_TOP), name=name_rx,
                              nvtx=nvtx, bound=bound, precision=precision)
        if streamed is not None:
            run, n_rows = streamed
            print_result(run.frame, fmt, run.levels, by, limit=None if (top or all_rows) else DEFAULT_TOP,
                         total=n_rows, latency_threshold=latency_threshold)
            exit_if_failed(run)
            return
    run = analysed(paths, options)
    levels = run.levels
    try:
        # name and NVTX filters pick kernels, before any grouping; bound, precision and top pick rows
        result = select(run.frame, name=name_rx, nvtx=nvtx)
        kernels_view = select(result, bound=bound, precision=precision)
        if by in ("category", "summary"):  # views of the selected kernels, not roofline points
            result = view(kernels_view, by)
        else:
            if by:
                result = aggregate(result, by=by, levels=levels, latency_threshold_pct=latency_threshold)
            result = select(result, bound=bound, precision=precision)
        n_rows = len(result)  # before --top: the table's footer says how many were left out
        every = result  # the table folds rows without a point before it takes the --top longest
        result = result.head(top) if top else result
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if html_path is not None:
        write_html(kernels_view, html_path, levels, clock)
    if out is not None:
        write_frame(result, out)
    if fmt == "table" and not all_rows:
        print_result(every, fmt, levels, by, limit=top or DEFAULT_TOP, latency_threshold=latency_threshold,
                     scope=kernels_view, full_names=full_names)
    else:
        print_result(result, fmt, levels, by, limit=None, total=n_rows, latency_threshold=latency_threshold,
                     scope=kernels_view, fold=False, full_names=full_names)
    exit_if_failed(run)
