"""``roofline mcp``: a Model Context Protocol server over stdio (the official ``mcp`` SDK, version 2).

The tools are :mod:`roofline.agent.tools`' functions; each runs the CLI's pipeline and returns the CLI's
envelope (``docs/agents.md``), bounded: ``top`` rows a page (10 unless asked, 100 at most) and a ``cursor``
for the next. A path outside the allowed roots, a bad argument or an input error is the tool's error result:
one line that names the path or the argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from roofline.agent import tools as t
from roofline.errors import RooflineError

INSTRUCTIONS = (
    "roofline: hierarchical roofline analysis of GPU profiles (Nsight Compute reports and CSVs, Nsight Systems "
    "SQLite exports, PyTorch/Kineto traces, XLA xplane.pb, rocprof). Start with `analyze` on a profile path: its "
    "headline says where the GPU time goes, how close to the roof, and why; its rows are the longest kernels, "
    "each with a row_key to pass to `explain_kernel`. `collect_next` says what to profile next. Paths must lie "
    "under the server's --root folders. Rows come a page at a time: pass `cursor` (page.next_cursor) for more."
)


def build(roots: Sequence[str | Path] = ()) -> Any:
    """The server with every tool registered (not yet running)."""
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from roofline._version import __version__

    session = t.Session(t.Roots(roots))
    server = MCPServer("roofline", instructions=INSTRUCTIONS, version=__version__)

    def guarded(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            try:
                return fn(*args, **kwargs)
            except RooflineError as exc:  # refused paths, bad arguments, inputs that cannot be read
                raise ToolError(str(exc)) from None
        return call

    @server.tool()
    def analyze(paths: list[str], top: int = t.DEFAULT_TOP, cursor: str | None = None, by: str | None = None,
                name: str | None = None, nvtx: str | None = None, bound: str | None = None,
                precision: str | None = None, peaks: str = "counters", device: str | None = None,
                detail: str = "compact") -> dict[str, Any]:
        """Analyse profiles (files, folders or batch datasets): the headline (GPU time by kind, coverage, MFU/MBU
        with the peaks' sources), the roofs per device, notes, errors per input, and the `top` longest rows
        (kernels; or groups with `by`: kernel, nvtx, program, process, rank, step, category, summary). Filters:
        `name`/`nvtx` (regular expressions), `bound` (compute, memory, latency), `precision`. `detail`:
        'compact' rows (key figures) or 'full' (every column, as `roofline analyze --format json`). More rows:
        pass page.next_cursor as `cursor` with the same arguments."""
        return guarded(t.analyze)(session, paths, top, cursor, by, name, nvtx, bound, precision, peaks, device,
                                  detail)

    @server.tool()
    def explain_kernel(path: str, row_key: str | None = None, name: str | None = None, peaks: str = "counters",
                       device: str | None = None) -> dict[str, Any]:
        """One kernel of a profile, by the `row_key` of an `analyze` row without `by` (or the longest kernel whose name matches
        the regular expression `name`): its roofline point per memory level (bytes, intensity, achieved and peak
        bandwidth with the roof's source and clock basis), its compute roof, bound, binding roof, % of roof,
        notes, and the reason for each value that is unavailable."""
        return guarded(t.explain_kernel)(session, path, row_key, name, peaks, device)

    @server.tool()
    def compare(baseline: str, candidate: str, top: int = t.DEFAULT_TOP, cursor: str | None = None,
                peaks: str = "counters", device: str | None = None, detail: str = "compact") -> dict[str, Any]:
        """Roofline diff of two profiles (as `roofline compare --format json`): the pair's summary (matched, new,
        vanished kernels, whole-program time change), both headlines and peaks, and the `top` diff rows."""
        return guarded(t.compare)(session, baseline, candidate, top, cursor, peaks, device, detail)

    @server.tool()
    def list_devices(match: str | None = None, top: int = t.DEFAULT_TOP, cursor: str | None = None,
                     detail: str = "compact") -> dict[str, Any]:
        """The GPU spec table (as `roofline devices --format json`): one row per GPU and figure (dense peak, SMs,
        clock) with its source; `match` keeps GPUs whose name contains it."""
        return guarded(t.list_devices)(match, top, cursor, detail)

    @server.tool()
    def explain_device(name: str, compute_capability: str | None = None,
                       sm_count: int | None = None) -> dict[str, Any]:
        """How a device name, as a profile spells it, resolves to the spec table (as `roofline devices --explain
        NAME --format json`): the entry, the steps that chose it, its roofs with sources."""
        return guarded(t.explain_device)(name, compute_capability, sm_count)

    @server.tool()
    def collect_next(paths: list[str], peaks: str = "counters", device: str | None = None) -> dict[str, Any]:
        """What to collect next, ranked by the GPU time it would explain: why rows have no roofline point (with
        the profiler option that fixes it), which roofs the profile could not give and how to get them, what an
        export lacks."""
        return guarded(t.collect_next)(session, paths, peaks, device)

    return server


def serve(roots: Sequence[str | Path] = ()) -> None:
    """Serve over stdin/stdout until the client closes them."""
    build(roots).run("stdio")


__all__ = ["INSTRUCTIONS", "build", "serve"]
