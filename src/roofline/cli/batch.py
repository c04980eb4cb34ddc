"""``roofline batch``: many profiles into one Parquet dataset, on local processes or a Dask cluster."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from roofline.cli.common import EXIT_INPUT_ERRORS, err, usage_errors
from roofline.errors import path_text


@click.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("--out", "-o", type=click.Path(path_type=Path), required=True,
              help="Dataset folder (created; a re-run into it skips inputs already done).")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=None,
              help="Local worker processes (default: all cores).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on an existing Dask distributed cluster, e.g. tcp://host:8786 (needs roofline[dask]).")
@click.option("--peaks", "peaks_opt", default="counters", show_default=True, metavar="SOURCE",
              help="'counters', 'spec', a GPU name, or a peaks file (.toml).")
@click.option("--device", default=None, metavar="NAME", help="GPU name for profiles that do not record one.")
@click.option("--run", "run_label", default=None, metavar="LABEL",
              help="Run label for every input (default: the name of each input's folder).")
@click.option("--retry-errors", is_flag=True, help="Read again the inputs that failed last time (failures of the "
              "environment, such as a full disk, are read again without it).")
@click.option("--input-timeout", type=click.FloatRange(min=0), default=600.0, show_default=True, metavar="SECONDS",
              help="Local pool: an input that takes longer fails (error_kind time-limit); 0: no limit.")
@click.option("--input-memory", type=click.FloatRange(min=0), default=None, metavar="MB",
              help="Local pool: a worker whose memory passes this fails its input (memory-limit); default 80% of "
                   "the machine's memory shared by the workers; 0: no limit.")
@click.option("--no-compact", is_flag=True, help="Do not compact the dataset at the end (see `roofline dataset`).")
@click.option("--connect-timeout", type=click.FloatRange(min=1), default=30.0, show_default=True, metavar="SECONDS",
              help="Dask: how long to wait for the scheduler to answer.")
@click.option("--stall-timeout", type=click.FloatRange(min=1), default=300.0, show_default=True, metavar="SECONDS",
              help="Dask: stop when the cluster has no worker, or finishes nothing while none of its tasks runs, "
                   "for this long (a re-run resumes).")
@click.option("--verbose", "-v", is_flag=True, help="One line per input (status, path) on stderr.")
def batch(inputs: tuple[str, ...], out: Path, workers: int | None, scheduler: str | None, peaks_opt: str,
          device: str | None, run_label: str | None, retry_errors: bool, verbose: bool,
          input_timeout: float = 600.0, input_memory: float | None = None, no_compact: bool = False,
          connect_timeout: float = 30.0, stall_timeout: float = 300.0) -> None:
    """Ingest and analyse many profiles into one Parquet dataset (kernels, roofline, runs, errors).

    INPUTS are files, folders, or quoted glob patterns ('runs/**/*.ncu-rep'). Every input ends in
    the runs table or the errors table; read the dataset with roofline.open_dataset(OUT) or give OUT
    to `roofline report` / `roofline compare`. Exit 1 when some inputs failed.
    """
    from roofline.batch import DaskSettings, Limits, Options, run_batch
    from roofline.cli.safe import raw
    from roofline.pipeline import portable_peaks, resolve

    # workers may run in another folder: a peaks file travels as an absolute path
    opts = Options(peaks=portable_peaks(peaks_opt), device=device, retry_errors=retry_errors)
    with usage_errors():
        resolve(opts)  # a bad name or file fails before any input is read
    bar = click.progressbar(length=1, label="batch", file=raw(sys.stderr), hidden=not sys.stderr.isatty(),
                            show_pos=True, show_eta=False, item_show_func=lambda s: s)  # our text has the ETA

    def progress(res: dict, summary) -> None:  # type: ignore[no-untyped-def]
        if verbose or res["status"] == "failed":
            text = res["error"] if res["status"] == "failed" else res["path"]
            click.echo(f"{res['status']}: {text}", err=True)
        bar.length = summary.inputs
        bar.update(1, summary.progress_text())  # counts, files/s and the ETA

    with bar:
        limits = Limits(time_s=input_timeout or None, memory_mb=None if input_memory is None else input_memory or 0)
        summary = run_batch(inputs, out, workers=workers, scheduler=scheduler, opts=opts, run=run_label,
                            progress=progress, limits=limits, compact=not no_compact,
                            dask=DaskSettings(connect_s=connect_timeout, stall_s=stall_timeout))
    for note in summary.notes:
        err(note)
    for pattern in summary.unmatched_patterns:
        err(f"{path_text(pattern)}: matched no files")
    click.echo(summary.line())
    if summary.failed or summary.skipped_failed:  # failures of an earlier batch still count: the dataset has them
        earlier = f" ({summary.skipped_failed} in an earlier batch; --retry-errors reads them again)" \
            if summary.skipped_failed else ""
        err(f"{summary.failed + summary.skipped_failed} input(s) failed{earlier}: see "
             f"roofline.open_dataset({path_text(out)!r}, 'errors')")
        sys.exit(EXIT_INPUT_ERRORS)
    if summary.unmatched_patterns:  # a typo in a pattern must not pass as an empty, successful batch
        err(f"{len(summary.unmatched_patterns)} input pattern(s) matched no files"
             + ("; nothing to do" if summary.inputs == 0 else ""))
        sys.exit(EXIT_INPUT_ERRORS)
