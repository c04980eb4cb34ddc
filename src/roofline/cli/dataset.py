"""``roofline dataset``: maintenance of a batch dataset (``compact``: one file per table)."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import fail


@click.group()
def dataset() -> None:
    """Maintain a batch dataset: `roofline dataset compact DIR` rewrites it as one file per table."""


@dataset.command()
@click.argument("path", type=click.Path(path_type=Path, file_okay=False))
def compact(path: Path) -> None:
    """Rewrite the dataset's live rows as one Parquet file per table and remove the parts they replace (a
    dataset of an older roofline is upgraded). Readers see the same rows before, during and after."""
    from roofline.batch import compact as cmp
    from roofline.batch import dataset as dset
    from roofline.errors import RooflineError

    root = path.absolute()
    try:
        dset.check_manifest(root)
        with dset.DatasetLock(root):
            done = cmp.compact(root)
    except RooflineError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot compact {root}: {exc.strerror or exc}")
    click.echo(done.line(root))
