"""The ``roofline`` command line: one module per command, the pipeline (``roofline.pipeline``) behind them.
Errors become one line on stderr and a non-zero exit.

Exit codes: 0 all inputs analysed; 1 some or all inputs failed (the good ones are still
analysed and written); 2 usage error (click); 3 internal error (a bug: please report it; set
``ROOFLINE_DEBUG=1`` for the traceback); 4 a ``compare --fail-on`` rule was broken.
"""

from __future__ import annotations

import os
import sys

import click

from roofline._version import __version__
from roofline.cli.common import EXIT_INTERNAL, EXIT_USAGE, err
from roofline.errors import RooflineError


class _Group(click.Group):
    """A group whose commands are imported when named: ``--help``/``--version`` import none of them (nor
    pandas), and a command pays only for its own imports."""

    #: command name -> (module, attribute)
    LAZY = {"analyze": ("roofline.cli.analyze", "analyze"), "report": ("roofline.cli.report", "report"),
            "demo": ("roofline.cli.report", "demo"), "compare": ("roofline.cli.compare", "compare_cmd"),
            "batch": ("roofline.cli.batch", "batch"), "dataset": ("roofline.cli.dataset", "dataset"),
            "devices": ("roofline.cli.devices", "devices"),
            "formats": ("roofline.cli.catalog", "formats"), "samples": ("roofline.cli.catalog", "samples_cmd"),
            "llm": ("roofline.cli.llm", "llm"), "mcp": ("roofline.cli.mcp", "mcp_cmd")}
    #: the first line of each command's help, for the group's `--help` without importing it
    #: (tests/cli/test_startup.py checks that it matches the command's own help)
    LAZY_HELP = {
        "analyze": "Hierarchical roofline of profiles: per kernel and memory level the intensity, attainable and "
                   "achieved FLOP/s, the binding roof, the % of it reached and the time at the roof.",
        "batch": "Ingest and analyse many profiles into one Parquet dataset (kernels, roofline, runs, errors).",
        "compare": "Roofline diff: BASELINE against each CANDIDATE, kernel identity by identity.",
        "dataset": "Maintain a batch dataset: `roofline dataset compact DIR` rewrites it as one file per table.",
        "demo": "Run `roofline report` on the bundled samples: a table here, the charts and the HTML report in OUT.",
        "devices": "List the GPUs of the spec table with their dense peaks and the source of every figure.",
        "formats": "List the input formats roofline recognises.",
        "llm": "Analytical roofline of LLM inference: prefill and decode per layer op, per batch size and "
               "prompt length.",
        "mcp": "Serve roofline to agents: a Model Context Protocol server over stdio (analyze, explain_kernel, "
               "compare, list_devices, explain_device, collect_next; docs/agents.md).",
        "report": "Write the roofline chart (PNG, SVG on request) and the interactive HTML report of profiles, "
                  "and print the slowest kernels with their roofline figures.",
        "samples": "List the sample profiles bundled with roofline (origin and licences: samples/README.md).",
    }

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # as click's, but a command not yet imported shows its LAZY_HELP: `roofline --help` imports none
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


def main() -> None:
    """Entry point: no traceback reaches the user unless ROOFLINE_DEBUG is set; what it prints has control
    characters escaped (names come from untrusted profiles: ``roofline.cli.safe``)."""
    from roofline.cli.safe import safe_streams

    with safe_streams():
        _main()


def run() -> None:
    """The ``roofline`` script and ``python -m roofline``: :func:`main`, then the process ends without the
    interpreter's teardown. Once the output is written, freeing every object one by one (a dataset report's
    ~1 GB of frames, pandas', pyarrow's and matplotlib's modules) took ~0.25 s of a 5 s report. The exit handlers
    run and the streams are flushed after them, as at a normal exit; where a thread is still running, or a stream
    cannot be flushed (a closed pipe), the normal exit does what it always did."""
    import atexit
    import threading

    try:
        main()
        code: object = None
    except SystemExit as exc:
        code = exc.code
    if threading.active_count() > 1 or not _flushed():
        sys.exit(code)
    if code is None or isinstance(code, int):
        rc = code or 0
    else:  # (what sys.exit does with any other object: prints it, status 1)
        if sys.stderr is not None:
            print(code, file=sys.stderr)
        rc = 1
    atexit._run_exitfuncs()  # (the multiprocessing, logging and weakref.finalize handlers, as at a normal exit)
    _flushed()  # (what a handler printed)
    os._exit(rc & 0xFF)


def _flushed() -> bool:
    """Whether stdout and stderr were flushed (a stream closed when the process started is None: nothing to do)."""
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True


def _main() -> None:
    try:
        rc = cli.main(standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except click.exceptions.Abort:
        err("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except RooflineError as exc:
        from roofline.hardware.specs import UnknownDeviceError

        err(str(exc))
        # a GPU name comes from an option (--peaks, --device, --gpu): a usage error, like a bad choice
        sys.exit(EXIT_USAGE if isinstance(exc, UnknownDeviceError) else 1)
    except SystemExit:
        raise
    except Exception as exc:
        if os.environ.get("ROOFLINE_DEBUG"):
            raise
        err(f"internal error: {type(exc).__name__}: {exc} (set ROOFLINE_DEBUG=1 for the traceback)")
        sys.exit(EXIT_INTERNAL)
