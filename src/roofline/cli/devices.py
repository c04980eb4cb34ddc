"""``roofline devices``: the spec table, the architecture model, and how a device name resolves."""

from __future__ import annotations

import click


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True,
              help="json: the versioned envelope (docs/agents.md), the table's rows in 'rows'.")
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

        if fmt == "json":
            from roofline.report.envelope import device_resolution

            _json(summary=device_resolution(explain, cc, sms), rows=None, explain=explain)
            return
        click.echo(resolve(explain, cc, sms).explain())
        return
    if archs:
        import pandas as pd

        from roofline.hardware.archs import arch_rows

        rows = pd.DataFrame(arch_rows())
        if fmt == "json":
            _json(summary=None, rows=rows, archs=True)
            return
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
    if fmt == "json":
        _json(summary=None, rows=frame)
        return
    from roofline.hardware.links import table as link_table

    links = link_table()
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
        for link in links.get(gpu, {}).values():  # GPU-to-GPU links (hardware/links.toml, docs/collectives.md)
            click.echo(f"  {link.name}: {link.unidirectional_bytes_per_s / 1e9:g} GB/s per direction, "
                       f"{link.bidirectional_bytes_per_s / 1e9:g} GB/s both ({link.source})")


def _json(summary: dict | None, rows: object, **extra: object) -> None:
    """The envelope (docs/agents.md): the spec table's (or the architecture model's) rows, or a name's resolution
    in ``summary``; a row's key is its GPU (architecture) and figure."""
    import pandas as pd

    from roofline.report.envelope import envelope, with_row_keys
    from roofline.report.records import stream_json

    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame()
    by = "archs" if extra.get("archs") else "devices"
    with_row_keys(frame, by)
    stream_json(frame, ndjson=False, header=envelope("devices", summary=summary, headline=[], peaks=[], notes=[],
                                                      by=by, row_count=len(frame), extra_options=extra, inputs=[],
                                                      errors=[]))
