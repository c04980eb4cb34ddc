"""``roofline formats`` and ``roofline samples``: what roofline reads, and the profiles it ships."""

from __future__ import annotations

import click


@click.command()
def formats() -> None:
    """List the input formats roofline recognises."""
    from roofline.ingest.registry import FORMATS

    for f in FORMATS.values():
        status = "read" if f.read is not None else "recognised (no reader yet)"
        click.echo(f"{f.name:15s} {status:27s} {f.description}")


@click.command("samples")
def samples_cmd() -> None:
    """List the sample profiles bundled with roofline (origin and licences: samples/README.md)."""
    from roofline import samples

    for s in samples.SAMPLES.values():
        click.echo(f"{s.name:20s} {s.format:12s} {s.device:24s} {s.what}")
        click.echo(f"{'':20s} {samples.path(s.name)}")
