#!/usr/bin/env python
"""Where the wall time of ``roofline report`` goes: a stamp (seconds since start, process id) at each stage of the
command, in the parent and in the forked chart processes, on stderr.

``report`` reads and analyses its inputs, plans the charts, forks one process per further CPU, and then the chart
jobs (``jobN``) are shared while the parent renders the page and the table. Only CPU cut after the fork (halved on 2
cores) or anything cut before it shortens the wall; the stamps show which side of the fork a stage is on and how
evenly the jobs end. Issue 36's measurements used it.

Usage (from the repo root)::

    PYTHONPATH=src .venv/bin/python bench/report_stages.py report DATASET -o OUT 2>&1 >/dev/null | grep '^\\['
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

T0 = time.perf_counter()


def stamp(msg: str) -> None:
    os.write(2, f"[{time.perf_counter() - T0:6.3f} pid{os.getpid()}] {msg}\n".encode())


def timed(module: ModuleType, name: str) -> None:
    """``module.name`` stamped on entry and exit (with its duration)."""
    f = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        stamp(f"> {name}")
        try:
            return f(*args, **kwargs)
        finally:
            stamp(f"< {name} {time.perf_counter() - t:.3f} s")

    setattr(module, name, wrapper)


def main() -> None:
    import roofline.cli.report as cli_report
    from roofline import report
    from roofline.analysis import headline, select
    from roofline.report import forked, html

    stamp("imports")
    timed(cli_report, "analysed")
    timed(cli_report, "table_lines")
    for name in ("_chart_jobs", "_comm_charts", "undrawable_reasons"):
        timed(report, name)
    timed(html, "write")
    timed(select, "select")
    timed(headline, "row_facts")
    take = forked._take

    def stamped_take(jobs: list[Callable[[], object]], *rest: Any) -> None:
        def job(i: int, f: Callable[[], object]) -> Callable[[], None]:
            def run() -> None:
                stamp(f"job{i} >")
                f()
                stamp(f"job{i} <")
            return run

        take([job(i, f) for i, f in enumerate(jobs)], *rest)

    forked._take = stamped_take
    from roofline.cli import main as cli_main

    try:
        cli_main()
    finally:
        stamp("end (the interpreter's exit follows)")


if __name__ == "__main__":
    main()
