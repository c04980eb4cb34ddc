"""``roofline mcp``: serve the analysis to agents over the Model Context Protocol (stdio)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from roofline.cli.common import fail


@click.command("mcp")
@click.option("--root", "roots", multiple=True, type=click.Path(exists=True, file_okay=False, path_type=Path),
              metavar="DIR", help="A folder whose profiles the tools may read (repeatable; default: the current "
              "directory). Paths outside every root are refused.")
def mcp_cmd(roots: tuple[Path, ...]) -> None:
    """Serve roofline to agents: a Model Context Protocol server over stdio (analyze, explain_kernel, compare,
    list_devices, explain_device, collect_next; docs/agents.md)."""
    try:
        import mcp  # noqa: F401  (the SDK: an optional dependency)

        from roofline.agent.server import serve
    except ImportError:  # one line, exit 1: what to install
        fail("mcp: needs the MCP SDK (version 2): pip install 'roofline[mcp]'")
    from roofline.cli.safe import raw

    # the protocol owns stdout: JSON-RPC as the SDK writes it (the CLI's terminal escaping is for people)
    sys.stdout, sys.stderr = raw(sys.stdout), raw(sys.stderr)
    serve(roots)
