"""The ``roofline`` command line. Errors become one line on stderr and a non-zero exit.

Exit codes: 0 all inputs analysed; 1 some or all inputs failed (the good ones are still
analysed and written); 2 usage error (click); 3 internal error (a bug: please report it; set
``ROOFLINE_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import click
import pandas as pd

from roofline import __version__
from roofline.errors import RooflineError

EXIT_INPUT_ERRORS = 1
EXIT_INTERNAL = 3


def _err(msg: str) -> None:
    click.echo(f"roofline: {msg}", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="roofline")
def cli() -> None:
    """Hierarchical roofline analysis of GPU profiles (Nsight Compute reports and CSV exports)."""


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "-o", type=click.Path(path_type=Path), help="Write the full table to .parquet or .csv.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True,
    help="What to print on stdout: a table for people, JSON or CSV records for scripts.",
)
@click.option(
    "--device", default=None, metavar="NAME",
    help="GPU name for profiles that do not record one (ncu CSV exports), e.g. 'A100-PCIE-40GB'; "
    "it selects the spec-table peaks.",
)
def analyze(paths: tuple[Path, ...], out: Path | None, fmt: str, device: str | None) -> None:
    """Analyse profiles: per kernel time, FLOPs per precision, DRAM bytes, intensity, bound, % of roof.

    PATHS are profile files or folders of them. Bad files are reported one line each; the good
    ones are still analysed.
    """
    from roofline.analysis import analyze as analyze_frame
    from roofline.ingest import concat
    from roofline.ingest.registry import expand, reader_for

    files = expand(paths)
    frames: list[pd.DataFrame] = []
    failures = 0
    show_bar = len(files) > 1 and sys.stderr.isatty()
    with click.progressbar(files, label="ingesting", file=sys.stderr, show_pos=True,
                           hidden=not show_bar) as bar:
        for path in bar:
            try:
                frames.append(reader_for(path).read(path))  # type: ignore[misc]
            except RooflineError as exc:
                failures += 1
                _err(str(exc))
            except Exception as exc:  # noqa: BLE001 - one odd file must not stop the others
                if os.environ.get("ROOFLINE_DEBUG"):
                    raise
                failures += 1
                _err(f"{path}: unexpected {type(exc).__name__} while reading: {exc} (a bug; please report it)")
    if not files:
        _err("no profile files found in " + ", ".join(map(str, paths)))
        sys.exit(EXIT_INPUT_ERRORS)
    kernels = concat(frames)
    if device:
        from roofline.hardware.specs import fill_spec_peaks

        missing = kernels["device_name"].isna()
        kernels.loc[missing, "device_name"] = device
        kernels = fill_spec_peaks(kernels)
    result = analyze_frame(kernels)
    if out is not None:
        from roofline.schema import write_table

        try:
            write_table(result, out)
        except (RooflineError, OSError) as exc:
            _err(f"cannot write {out}: {exc}")
            sys.exit(EXIT_INPUT_ERRORS)
    _print(result, fmt)
    if failures:
        _err(f"{failures} of {len(files)} input(s) failed")
        sys.exit(EXIT_INPUT_ERRORS)


def _print(result: pd.DataFrame, fmt: str) -> None:
    if fmt == "table":
        from roofline.report.table import format_table

        if not result.empty:
            devices = ", ".join(sorted(set(result["device_name"].dropna().astype(str)))) or "unknown device"
            click.echo(f"{len(result)} kernel(s) on {devices}; roofline against DRAM")
        click.echo(format_table(result))
    elif fmt == "json":
        records = [
            {k: _jsonable(v) for k, v in rec.items()} for rec in result.to_dict("records")
        ]
        click.echo(json.dumps(records, indent=1))
    else:
        click.echo(result.to_csv(index=False), nl=False)


def _jsonable(v: object) -> object:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return None
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    if hasattr(v, "item"):
        return v.item()  # numpy scalars
    return v


@cli.command()
def formats() -> None:
    """List the input formats roofline recognises."""
    from roofline.ingest.registry import FORMATS

    for f in FORMATS.values():
        status = "read" if f.read is not None else "recognised (no reader yet)"
        click.echo(f"{f.name:12s} {status:27s} {f.description}")


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
        _err(str(exc))
        sys.exit(EXIT_INPUT_ERRORS)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - the last line of defence for users
        if os.environ.get("ROOFLINE_DEBUG"):
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (set ROOFLINE_DEBUG=1 for the traceback)")
        sys.exit(EXIT_INTERNAL)


if __name__ == "__main__":
    main()
