"""The ``roofline`` command line. Errors become one line on stderr and a non-zero exit.

Exit codes: 0 all inputs analysed; 1 some or all inputs failed (the good ones are still
analysed and written); 2 usage error (click); 3 internal error (a bug: please report it; set
``ROOFLINE_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from roofline._version import __version__
from roofline.errors import NoGpuWorkError, RooflineError, path_text

if TYPE_CHECKING:  # pandas is imported by the commands that use it: `--help`/`--version` stay instant
    import pandas as pd

EXIT_INPUT_ERRORS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


def _err(msg: str) -> None:
    click.echo(f"roofline: {msg}", err=True)


class _Group(click.Group):
    """A group whose commands kept in modules of their own are imported when named: they import this
    module's helpers, so importing them here would be circular (and `--help`/`--version` stay light)."""

    LAZY = {"compare": ("roofline.cli_compare", "compare_cmd"), "llm": ("roofline.inference.command", "llm")}
    #: the first line of each lazy command's help, for the group's `--help` without importing it
    #: (tests/test_cli_startup.py checks that it matches the command's own help)
    LAZY_HELP = {"compare": "Roofline diff: BASELINE against each CANDIDATE (ncu reports, CSVs, traces, or folders of them).",
                 "llm": "Analytical roofline of LLM inference: prefill and decode per layer op, per batch size and "
                        "prompt length."}

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # as click's, but a lazy command not yet imported shows its LAZY_HELP: `roofline --help`
        # then imports neither pandas nor the command modules
        names = self.list_commands(ctx)
        commands = [(n, click.Command(n, help=self.LAZY_HELP[n]) if n in self.LAZY and n not in self.commands
                     else self.get_command(ctx, n)) for n in names]
        shown = [(n, c) for n, c in commands if c is not None and not c.hidden]
        if shown:
            limit = formatter.width - 6 - max(len(n) for n, _ in shown)
            with formatter.section("Commands"):
                formatter.write_dl([(n, c.get_short_help_str(limit)) for n, c in shown])

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.LAZY and cmd_name not in self.commands:
            import importlib

            module, attr = self.LAZY[cmd_name]
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="roofline")
def cli() -> None:
    """Hierarchical roofline analysis of GPU profiles: Nsight Compute reports and CSV exports, PyTorch
    profiler traces, XLA xplane.pb and XProf trace-viewer JSON, Nsight Systems exports, rocprof-compute
    workloads and rocprofv3 output (`roofline formats`).

    New here? `roofline demo` runs it on the bundled sample profiles.
    """


def _levels(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[str, ...]:
    from roofline.hardware.peaks import ALL_LEVELS

    levels = tuple(v.strip().lower() for v in value.split(",") if v.strip())
    bad = [lv for lv in levels if lv not in ALL_LEVELS]
    if bad or not levels:
        raise click.BadParameter(f"choose from {','.join(ALL_LEVELS)} (comma-separated); got {value!r}")
    return levels


PRECISIONS = ("fp64", "fp32", "fp16", "tensor", "mixed", "none")


def _precision_option(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A misspelt precision is a usage error (exit 2), not a filter that silently keeps nothing."""
    if value is None:
        return None
    v = value.strip().lower()
    if v in PRECISIONS or (v.startswith("tensor:") and len(v) > len("tensor:")):
        return v
    raise click.BadParameter(f"choose from {', '.join(PRECISIONS)} or tensor:<path> (e.g. tensor:bf16); got {value!r}")


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, readable=False))
@click.option("--out", "-o", type=click.Path(path_type=Path), help="Write the full table to .parquet or .csv.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "ndjson", "csv"]), default="table", show_default=True,
    help="What to print on stdout: a table for people; JSON (an array), NDJSON or CSV records for scripts.",
)
@click.option("--levels", default="dram,l2,l1", show_default=True, callback=_levels,
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
@click.option("--precision", default=None, metavar="P", callback=_precision_option,
              help="Only kernels whose work is P: fp64, fp32, fp16, tensor, mixed, none, or a tensor path (tensor:bf16).")
@click.option("--nvtx", default=None, metavar="REGEX", help="Only kernels in NVTX ranges that match.")
@click.option("--top", type=click.IntRange(min=1), default=None,
              help="Only the N longest (default: all in --out/json/csv; the table shows the 20 longest).")
@click.option("--all", "all_rows", is_flag=True, help="Print every row in the table (default: the 20 longest).")
@click.option("--by", type=click.Choice(["kernel", "nvtx", "program", "process", "rank", "step"]), default=None,
              help="Aggregate to one roofline point per kernel name, NVTX range, program (input file), process "
              "(nsys), rank (Kineto) or training step (ProfilerStep#N or an NVTX 'step N' range).")
@click.option("--latency-threshold", type=click.FloatRange(0, 100), default=20.0, show_default=True,
              help="Under this % of every roof a kernel is called latency-limited.")
@click.option("--counters", "counters", multiple=True, type=click.Path(path_type=Path), metavar="REPORT",
              help="ncu reports or CSV exports whose per-launch counters are carried onto every launch of the "
              "timeline PATHS (nsys export, Kineto trace, sparse ncu report); repeatable. See docs/nsys.md.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), default=None,
              help="Also write the interactive HTML report (and the PNG chart beside it).")
@click.option("--capture", "captures", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="PyTorch trace recorded while CUDA/HIP graphs were captured: replayed graph kernels get the "
              "captured ops' shapes (default: capture_traces/ beside the replay).")
@click.option("--device-map", "device_map", multiple=True, metavar="NAME=KNOWN",
              help="Take the roofs of a device the profile names NAME from the table entry KNOWN (repeatable).")
@click.option("--strict", is_flag=True, help="Exit 1 when some device has no roofs (default: a warning).")
def analyze(paths: tuple[Path, ...], out: Path | None, fmt: str, levels: tuple[str, ...], peaks_opt: str,
            clock: str, device: str | None, name_rx: str | None, bound: str | None, precision: str | None,
            nvtx: str | None, top: int | None, all_rows: bool, by: str | None, latency_threshold: float,
            html_path: Path | None, captures: tuple[Path, ...] = (), counters: tuple[Path, ...] = (),
            device_map: tuple[str, ...] = (), strict: bool = False) -> None:
    """Hierarchical roofline of profiles: per kernel and memory level the intensity, attainable and
    achieved FLOP/s, the binding roof, the % of it reached and the time at the roof.

    PATHS are profile files or folders of them. Bad files are reported one line each; the good
    ones are still analysed.
    """
    from roofline.analysis.aggregate import aggregate
    from roofline.analysis.select import select

    if captures:
        from roofline.ingest.torch.graphs import CAPTURES

        CAPTURES.set(tuple(captures))
    result, failures, n_files, levels = _analysed(paths, peaks_opt, device, levels, clock, latency_threshold,
                                                  device_map, strict, counters)
    try:
        # name and NVTX filters pick kernels, before any grouping; bound, precision and top pick rows
        result = select(result, name=name_rx, nvtx=nvtx)
        kernels_view = select(result, bound=bound, precision=precision)
        if by:
            result = aggregate(result, by=by, levels=levels, latency_threshold_pct=latency_threshold)
        result = select(result, bound=bound, precision=precision)
        n_rows = len(result)  # before --top: the table's footer says how many were left out
        result = result.head(top) if top else result
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if html_path is not None:
        _write_html(kernels_view, html_path, levels, clock)
    if out is not None:
        from roofline.schema import write_table

        try:
            write_table(result, out)
        except (RooflineError, OSError) as exc:
            _err(f"cannot write {out}: {exc}")
            sys.exit(EXIT_INPUT_ERRORS)
    from roofline.report.table import DEFAULT_TOP

    _print(result, fmt, levels, by, limit=None if (top or all_rows) else DEFAULT_TOP, total=n_rows,
           latency_threshold=latency_threshold)
    if failures:
        _err(f"{failures} of {n_files} input(s) failed")
        sys.exit(EXIT_INPUT_ERRORS)


def _analysed(paths: tuple[Path, ...], peaks_opt: str, device: str | None, levels: tuple[str, ...], clock: str,
              latency_threshold: float, device_map: tuple[str, ...] = (),
              strict: bool = False, counters: tuple[Path, ...] = ()) -> tuple[pd.DataFrame, int, int, tuple[str, ...]]:
    """Read every input and analyse it: (kernel-level result, failed inputs, inputs, the levels to show: the
    given ones, + LDS where an AMD format recorded it and the levels were the default)."""
    from roofline.analysis import analyze as analyze_frame
    from roofline.hardware.names import require

    peaks = _peaks_option(peaks_opt)
    if device:
        require(device)  # unknown names fail before any file is read
    dmap = _device_map(device_map)
    kernels, failures, n_files = _ingest(paths)
    if counters:
        kernels, bad = _joined(kernels, counters)
        failures += bad
    if device or dmap:
        from roofline.hardware.attach import fill_spec_peaks

        if device:
            missing = kernels["device_name"].isna()
            kernels.loc[missing, "device_name"] = device
        kernels = fill_spec_peaks(kernels, device_map=dmap)
    try:
        result = analyze_frame(kernels, peaks=peaks, levels=levels, clock=clock, latency_threshold_pct=latency_threshold)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    missing_roofs = _warn_missing_roofs(result)
    if strict:
        failures += missing_roofs
    from roofline.hardware.peaks import recorded_levels

    return result, failures, n_files, recorded_levels(result, levels)


def _joined(timeline: pd.DataFrame, reports: tuple[Path, ...]) -> tuple[pd.DataFrame, int]:
    """--counters: carry the reports' per-launch counters onto the timeline; a summary line on stderr."""
    from roofline.analysis.join import join_counters, unmatched_summary

    counters, bad, _ = _ingest(reports)
    joined = join_counters(timeline, counters)
    s = unmatched_summary(joined)
    if s["launches"]:
        names = ", ".join(f"{k['kernel_name'][:60]} ({k['time_s'] * 1e3:.3g} ms)" for k in s["unmatched_kernels"][:5])
        how = ", ".join(f"{n} {m.split(':')[0]}" for m, n in s["by_method"].items() if not m.startswith("unmatched"))
        _err(f"counters: {s['launches'] - s['unmatched_launches']} of {s['launches']} kernel launches matched "
             f"({how or 'none'}); {100 * (s['unmatched_time_share'] or 0):.1f}% of kernel time has no counterpart"
             + (f": {names}" + (" ..." if len(s["unmatched_kernels"]) > 5 else "") if names else ""))
    return joined, bad


def _device_map(pairs: tuple[str, ...]) -> dict[str, str]:
    """--device-map "NAME=KNOWN": KNOWN must be a table entry (checked before any file is read)."""
    from roofline.hardware.names import require

    out = {}
    for pair in pairs:
        name, sep, known = pair.partition("=")
        if not sep or not name.strip() or not known.strip():
            raise click.BadParameter(f"expected NAME=KNOWN, got {pair!r}", param_hint="--device-map")
        out[name.strip()] = require(known.strip()).name
    return out


def _warn_missing_roofs(result: pd.DataFrame) -> int:
    """One warning line per (input, device) whose kernels lack a compute roof for the precision they use
    or a DRAM roof; the analysis still succeeds (issue 17). Returns how many devices lack roofs."""
    from roofline.hardware.roofs import missing_roofs

    n = 0
    for src, dev, what, why in missing_roofs(result):
        n += 1
        if dev:
            fix = (f'pass --device-map "{dev}=<GPU>" (see `roofline devices`), or --peaks \'<GPU>\' / '
                   "--peaks FILE.toml for all devices")
        else:
            fix = "the profile names no GPU: pass --device '<GPU>' (see `roofline devices`) or --peaks FILE.toml"
        _err(f"warning: {src}: no {what} roof for {dev or 'an unnamed device'} ({why}); {fix}")
    return n


def _write_html(result: pd.DataFrame, path: Path, levels: tuple[str, ...], clock: str, top: int = 10) -> None:
    from roofline.report import html, write_charts

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        html.write(result, path, levels, clock=clock, top=top)
        write_charts(result, path.parent, levels, clock)
    except OSError as exc:
        _err(f"cannot write {path}: {exc}")
        sys.exit(EXIT_INPUT_ERRORS)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, readable=False))
@click.option("--out", "-o", "out_dir", type=click.Path(path_type=Path), default=Path("roofline-report"),
              show_default=True, help="Folder for roofline.png and report.html.")
@click.option("--svg", is_flag=True, help="Also write the chart as SVG.")
@click.option("--levels", default="dram,l2,l1", show_default=True, callback=_levels,
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
def report(paths: tuple[Path, ...], out_dir: Path, svg: bool, levels: tuple[str, ...], peaks_opt: str, clock: str,
           device: str | None, top: int, latency_threshold: float, device_map: tuple[str, ...] = (),
           strict: bool = False) -> None:
    """Write the roofline chart (PNG, SVG on request) and the interactive HTML report of profiles,
    and print the slowest kernels with their roofline figures."""
    from roofline.analysis.select import select
    from roofline.report import write_report

    result, failures, n_files, levels = _analysed(paths, peaks_opt, device, levels, clock, latency_threshold,
                                                  device_map, strict)
    try:
        written = write_report(result, out_dir, levels, clock=clock, svg=svg, top=top)
    except OSError as exc:
        _err(f"cannot write the report to {out_dir}: {exc}")
        sys.exit(EXIT_INPUT_ERRORS)
    _print(select(result, top=top), "table", levels, None, total=len(result), latency_threshold=latency_threshold,
           more="--top N")
    for path in written:
        click.echo(f"wrote {path}")
    if failures:
        _err(f"{failures} of {n_files} input(s) failed")
        sys.exit(EXIT_INPUT_ERRORS)


def _peaks_option(value: str) -> object:
    """'counters' / 'spec' / a GPU name / a .toml file, validated before any profile is read."""
    from roofline.hardware.peaks import Peaks
    from roofline.hardware.names import require

    if value in ("counters", "spec"):
        return value
    from roofline.ingest.amd import rocprof_compute

    if rocprof_compute.is_peaks_file(value):  # AMD: measured roofline.csv, or the sysinfo.csv arch model
        return rocprof_compute.peaks_from(value)
    if value.lower().endswith(".toml") or Path(value).exists():
        return Peaks.from_toml(value)
    return require(value).name


def _ingest(paths: tuple[Path, ...]) -> tuple[pd.DataFrame, int, int]:
    from roofline.batch.dataset import is_dataset, open_dataset
    from roofline.ingest import concat
    from roofline.ingest.registry import expand, reader_for
    from roofline.schema import kernel_columns

    frames: list[pd.DataFrame] = []
    failures = 0
    datasets = [p for p in paths if is_dataset(p)]
    for p in datasets:  # a batch dataset stands for its kernels, as ingested
        frames.append(open_dataset(p, "kernels")[list(kernel_columns())])
    files = expand([p for p in paths if p not in datasets])
    empty_folders = 0
    for p in paths:  # a folder given by name that holds no profile (e.g. a folder named x.ncu-rep) is said
        if p not in datasets and p.is_dir() and not expand([p]) and (files or len(paths) > 1):
            failures += 1
            empty_folders += 1
            _err(f"{path_text(p)}: a folder with no profile files in it")
    no_gpu: list[dict[str, str]] = []
    show_bar = len(files) > 1 and sys.stderr.isatty()
    with click.progressbar(files, label="ingesting", file=sys.stderr, show_pos=True,
                           hidden=not show_bar) as bar:
        for path in bar:
            try:
                frames.append(reader_for(path).read(path))  # type: ignore[misc]
            except NoGpuWorkError as exc:  # a valid CPU-only profile: nothing to draw, not a failure (issue 17)
                _err(f"{exc} (no GPU kernels: not an error)")
                no_gpu.append({"source_file": exc.path, "no_gpu_work": exc.problem})
            except RooflineError as exc:
                failures += 1
                _err(str(exc))
            except Exception as exc:  # noqa: BLE001 - one odd file must not stop the others
                if os.environ.get("ROOFLINE_DEBUG"):
                    raise
                failures += 1
                _err(f"{path_text(path)}: unexpected {type(exc).__name__} while reading: {exc} (a bug; please report it)")
    if not files and not datasets:
        _err("no profile files found in " + ", ".join(map(path_text, paths)))
        sys.exit(EXIT_INPUT_ERRORS)
    out = concat(frames)
    if no_gpu:  # the empty (or partial) result says which inputs had no GPU work
        out.attrs["roofline.provenance"] = [*out.attrs.get("roofline.provenance", []), *no_gpu]
    return out, failures, len(files) + len(datasets) + empty_folders


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["table", "csv"]), default="table", show_default=True)
@click.option("--explain", "explain", default=None, metavar="NAME",
              help="Show how a device name (as a profile spells it) resolves to a table entry.")
@click.option("--cc", default=None, metavar="CC", help="With --explain: the compute capability or gfx target.")
@click.option("--sms", type=click.IntRange(min=1), default=None, help="With --explain: the SM (CU) count.")
@click.option("--archs", is_flag=True, help="List the architecture model (per-SM rates per clock and sources).")
def devices(fmt: str, explain: str | None = None, cc: str | None = None, sms: int | None = None,
            archs: bool = False) -> None:
    """List the GPUs of the spec table with their dense peaks and the source of every figure."""
    from roofline.hardware.specs import specs_frame

    if explain is not None:
        from roofline.hardware.names import resolve

        click.echo(resolve(explain, cc, sms).explain())
        return
    if archs:
        import pandas as pd

        from roofline.hardware.archs import arch_rows

        rows = pd.DataFrame(arch_rows())
        if fmt == "csv":
            click.echo(rows.to_csv(index=False), nl=False)
            return
        for arch, grp in rows.groupby("arch", sort=False):
            click.echo(f"{arch} ({grp['targets'].iloc[0]}): " + ", ".join(
                f"{r.figure}{' sparse' if r.kind == 'sparse' else ''} {r.per_clk:g}"
                + (" (whole chip)" if r.figure == "l2_bytes_per_clk" else "") for r in grp.itertuples())
                + " per SM (CU) per clock")
        return
    frame = specs_frame()
    if fmt == "csv":
        click.echo(frame.to_csv(index=False), nl=False)
        return
    for gpu, rows in frame.groupby("gpu", sort=False):
        figs = rows[rows["figure"] != "dram_bytes_per_s"]
        dram = rows[rows["figure"] == "dram_bytes_per_s"].iloc[0]
        click.echo(f"{gpu} ({dram['arch']}, CC {dram['compute_capability']}): {int(dram['sm_count'])} SMs, "
                   f"boost {dram['boost_clock_mhz']:.0f} MHz, {dram['memory_gb']} GB, DRAM {dram['dram_tb_per_s']:g} TB/s, "
                   f"host {dram['host_link']}")
        model = " (from the architecture model)" if figs["source"].str.startswith("arch model").all() else ""
        click.echo("  " + ", ".join(f"{r.figure} {r.dense_tflop_per_s:.4g}" for r in figs.itertuples())
                   + f" (dense T/s){model}")


def _print(result: pd.DataFrame, fmt: str, levels: tuple[str, ...], by: str | None, limit: int | None = None,
           total: int | None = None, latency_threshold: float = 20.0, more: str = "--top N or --all") -> None:
    """``limit``: rows of the table shown (the rest counted in its footer); JSON and CSV get every row."""
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
    elif fmt in ("json", "ndjson"):
        from roofline.report.records import stream_json

        stream_json(result, ndjson=fmt == "ndjson")
    else:
        click.echo(result.to_csv(index=False), nl=False)


@cli.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("--out", "-o", type=click.Path(path_type=Path), required=True,
              help="Dataset folder (created; a re-run into it skips inputs already done).")
@click.option("--workers", "-j", type=click.IntRange(min=1), default=None,
              help="Local worker processes (default: all cores; 1 runs in this process).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on an existing Dask distributed cluster, e.g. tcp://host:8786 (needs roofline[dask]).")
@click.option("--peaks", "peaks_opt", default="counters", show_default=True, metavar="SOURCE",
              help="'counters', 'spec', a GPU name, or a peaks file (.toml).")
@click.option("--device", default=None, metavar="NAME", help="GPU name for profiles that do not record one.")
@click.option("--run", "run_label", default=None, metavar="LABEL",
              help="Run label for every input (default: the name of each input's folder).")
@click.option("--retry-errors", is_flag=True, help="Read again the inputs that failed last time.")
@click.option("--verbose", "-v", is_flag=True, help="One line per input (status, path) on stderr.")
def batch(inputs: tuple[str, ...], out: Path, workers: int | None, scheduler: str | None, peaks_opt: str,
          device: str | None, run_label: str | None, retry_errors: bool, verbose: bool) -> None:
    """Ingest and analyse many profiles into one Parquet dataset (kernels, roofline, runs, errors).

    INPUTS are files, folders, or quoted glob patterns ('runs/**/*.ncu-rep'). Every input ends in
    the runs table or the errors table; read the dataset with roofline.open_dataset(OUT) or give OUT
    to `roofline report` / `roofline compare`. Exit 1 when some inputs failed.
    """
    from roofline.batch import Options, run_batch
    from roofline.hardware.names import require

    _peaks_option(peaks_opt)  # a bad name or file fails before any input is read
    # workers may run in another folder: a peaks file travels as an absolute path
    peaks_arg = str(Path(peaks_opt).absolute()) if peaks_opt.lower().endswith(".toml") else peaks_opt
    if device:
        require(device)
    opts = Options(peaks=peaks_arg, device=device, retry_errors=retry_errors)
    bar = click.progressbar(length=1, label="batch", file=sys.stderr, hidden=not sys.stderr.isatty(),
                            show_pos=True, show_eta=False, item_show_func=lambda s: s)  # our text has the ETA

    def progress(res: dict, summary) -> None:  # type: ignore[no-untyped-def]
        if verbose or res["status"] == "failed":
            text = res["error"] if res["status"] == "failed" else res["path"]
            click.echo(f"{res['status']}: {text}", err=True)
        bar.length = summary.inputs
        bar.update(1, summary.progress_text())  # counts, files/s and the ETA

    with bar:
        summary = run_batch(inputs, out, workers=workers, scheduler=scheduler, opts=opts, run=run_label,
                            progress=progress)
    for pattern in summary.unmatched_patterns:
        _err(f"{path_text(pattern)}: matched no files")
    click.echo(summary.line())
    if summary.failed or summary.skipped_failed:  # failures of an earlier batch still count: the dataset has them
        earlier = f" ({summary.skipped_failed} in an earlier batch; --retry-errors reads them again)" \
            if summary.skipped_failed else ""
        _err(f"{summary.failed + summary.skipped_failed} input(s) failed{earlier}: see "
             f"roofline.open_dataset({path_text(out)!r}, 'errors')")
        sys.exit(EXIT_INPUT_ERRORS)
    if summary.unmatched_patterns:  # a typo in a pattern must not pass as an empty, successful batch
        _err(f"{len(summary.unmatched_patterns)} input pattern(s) matched no files"
             + ("; nothing to do" if summary.inputs == 0 else ""))
        sys.exit(EXIT_INPUT_ERRORS)


@cli.command()
def formats() -> None:
    """List the input formats roofline recognises."""
    from roofline.ingest.registry import FORMATS

    for f in FORMATS.values():
        status = "read" if f.read is not None else "recognised (no reader yet)"
        click.echo(f"{f.name:15s} {status:27s} {f.description}")


@cli.command("samples")
def samples_cmd() -> None:
    """List the sample profiles bundled with roofline (origin and licences: samples/README.md)."""
    from roofline import samples

    for s in samples.SAMPLES.values():
        click.echo(f"{s.name:20s} {s.format:12s} {s.device:24s} {s.what}")
        click.echo(f"{'':20s} {samples.path(s.name)}")


@cli.command()
@click.option("--out", "-o", "out_dir", type=click.Path(path_type=Path), default=Path("roofline-demo"),
              show_default=True, help="Folder for roofline*.png and report.html.")
@click.pass_context
def demo(ctx: click.Context, out_dir: Path) -> None:
    """Run `roofline report` on the bundled samples: a table here, the charts and the HTML report in OUT."""
    from roofline import samples
    from roofline.hardware.peaks import LEVELS

    ctx.invoke(report, paths=tuple(samples.paths()), out_dir=out_dir, svg=False, levels=tuple(LEVELS),
               peaks_opt="counters", clock="profiled", device=None, top=20, latency_threshold=20.0)


def main() -> None:
    """Entry point: no traceback reaches the user unless ROOFLINE_DEBUG is set."""
    try:
        rc = cli.main(standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except click.exceptions.Abort:
        _err("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except RooflineError as exc:
        from roofline.hardware.specs import UnknownDeviceError

        _err(str(exc))
        # a GPU name comes from an option (--peaks, --device, --gpu): a usage error, like a bad choice
        sys.exit(EXIT_USAGE if isinstance(exc, UnknownDeviceError) else EXIT_INPUT_ERRORS)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - the last line of defence for users
        if os.environ.get("ROOFLINE_DEBUG"):
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (set ROOFLINE_DEBUG=1 for the traceback)")
        sys.exit(EXIT_INTERNAL)


if __name__ == "__main__":
    main()
