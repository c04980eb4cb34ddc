"""Shared test helpers. Real fixtures live in ../shared/fixtures (never copied into the repo).

A test that needs a shared fixture fails, rather than skips, when it is missing and CI is set.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "fixtures"
NCU = SHARED / "ncu"
OWN = Path(__file__).resolve().parent / "fixtures"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist ≤ 3.8 groups tests (xdist_group, --dist loadgroup) by rewriting their node ids, which pytest
    9.2 no longer reads (xdist issue #1386): every group would run spread over the workers, module fixtures
    built once per worker and a fixture's shared analysis lost. Refuse that pair rather than run slowly."""
    if config.getoption("dist", None) != "loadgroup":
        return
    import xdist

    if _version(pytest.__version__) >= (9, 2) and _version(xdist.__version__) <= (3, 8, 0):
        raise pytest.UsageError(f"pytest {pytest.__version__} with pytest-xdist {xdist.__version__} ignores "
                                "xdist_group: install the pytest the test extra pins (pip install -e '.[test]')")


def shared(rel: str) -> Path:
    """Path of a shared fixture; skip locally, fail in CI, when it is missing."""
    p = SHARED / rel
    if not p.exists():
        msg = f"shared fixture missing: {p}"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return p


def fixture_names() -> list[str]:
    """Every shared fixture input, relative to SHARED (the tests that cover every fixture use this list)."""
    out = []
    for kind in ("ncu", "traces", "nsys", "rocprof"):
        folder = SHARED / kind
        if folder.exists():
            out += [f"{kind}/{p.name}" for p in sorted(folder.iterdir())
                    if p.name not in ("MANIFEST.md", "reference", "derived", "vllm_decode_full-graph", "capture_traces")]
    # the capture traces of graph-mode replays are Kineto traces too (one folder per replay, an index beside them)
    captures = sorted(p.relative_to(SHARED).as_posix() for p in (SHARED / "traces" / "capture_traces").glob("*/*.json.gz"))
    return out + ["traces/vllm_decode_full-graph/graph_execution.pt.trace.json.gz", *captures]


#: CSV exports record no device: the --device the CLI asks for
CSV_DEVICE = {"sm70": "V100 SXM2", "sm75": "T4", "sm80": "A100 SXM4 40GB"}


def fixture_params(names: list[str]) -> list:
    """``names`` as parameters grouped by fixture: pytest-xdist (--dist loadgroup) runs every test of one
    fixture on one worker, one after the other, so they share :func:`fixture_analysis`'s one analysis."""
    return [pytest.param(rel, marks=pytest.mark.xdist_group(f"fixture {rel}")) for rel in names]


@functools.lru_cache(maxsize=2)
def _fixture_run(rel: str, device: str | None):
    import roofline

    return roofline.run(SHARED / rel, device=device)


def fixture_analysis(rel: str, csv_device: bool = True):
    """``roofline.run`` of one shared fixture (a CSV export with its --device unless ``csv_device`` is False),
    computed once for the every-fixture tests (five of them read each fixture); the frame is a copy."""
    path = shared(rel)
    device = CSV_DEVICE[path.name[:4]] if csv_device and path.suffix == ".csv" else None
    analysis = _fixture_run(rel, device)
    return dataclasses.replace(analysis, frame=analysis.frame.copy())


def ncu_fixtures(*suffixes: str) -> list[str]:
    """Names of the ncu fixtures (collected at import time; an empty list fails in CI)."""
    if not NCU.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"shared fixtures missing: {NCU}")
        return []
    return sorted(p.name for p in NCU.iterdir() if p.name.endswith(suffixes))


REPORTS = ncu_fixtures(".ncu-rep", ".nsight-cuprof-report")
CSVS = ncu_fixtures(".csv")


def ncu_actions(path: Path):
    """Every profiled launch of a report, straight from NVIDIA's ncu_report (independent of roofline)."""
    import ncu_report

    ctx = ncu_report.load_report(str(path))
    for i in range(ctx.num_ranges()):
        r = ctx.range_by_idx(i)
        for j in range(r.num_actions()):
            yield r.action_by_idx(j)


def kernel_row(**kw) -> dict:
    """One synthetic kernel of the canonical schema with every roof known (values by hand)."""
    row = {
        "kernel_id": 0, "kernel_name": "k", "kernel_short_name": "k", "device_name": "GPU", "duration_s": 1e-3,
        "source_file": "synthetic.ncu-rep",
        "flop_fp64": 0.0, "flop_fp32": 1e9, "flop_fp16": 0.0, "flop_tensor": 0.0,
        "dram_bytes": 1e8, "l2_bytes": 2e8, "l1_bytes": 4e8,
        "peak_flop_per_s_fp64": 1e13, "peak_flop_per_s_fp32": 2e13, "peak_flop_per_s_fp16": 4e13,
        "peak_flop_per_s_tensor": 3e14,
        "peak_dram_bytes_per_s": 2e12, "peak_l2_bytes_per_s": 6e12, "peak_l1_bytes_per_s": 2e13,
        "peak_flop_per_s_fp32_source": "counters: test",
        "peak_dram_bytes_per_s_source": "counters: test",
    }
    row.update(kw)
    return row


def analysed(rows: list[dict]):
    import pandas as pd

    import roofline
    from roofline.schema import conform_kernels

    return roofline.analyze(conform_kernels(pd.DataFrame(rows)))


def read_or_typed_error(path: Path) -> None:
    """What a damaged input must do: read and analyse, or raise a RooflineError (nothing else).

    Run with ``ROOFLINE_DEBUG`` set: the pipeline's last net (an unexpected ValueError/TypeError/... of a
    reader becomes a typed error naming the file) is off, so a reader site that does not check its values
    fails here instead of passing as typed."""
    import roofline
    from roofline import errors

    saved = os.environ.get("ROOFLINE_DEBUG")
    os.environ["ROOFLINE_DEBUG"] = "1"
    try:
        try:
            k = roofline.read(path)
        except errors.RooflineError:
            return
        roofline.analyze(k)
    finally:
        if saved is None:
            del os.environ["ROOFLINE_DEBUG"]
        else:
            os.environ["ROOFLINE_DEBUG"] = saved


def cli(*args, env_extra=None):
    """The real entry point (``roofline.cli.main``: parsing, exit codes, one-line errors) run in this
    process with its own stdout/stderr, as a CompletedProcess. A Python start-up per call (pandas,
    pyarrow, ...) cost more than most of these tests; `python -m roofline` and the batch's SIGKILL
    test still run real subprocesses."""
    import subprocess
    import sys

    from click.testing import CliRunner

    from roofline.cli import main

    argv = ["roofline", *map(str, args)]
    rc = 0
    saved = sys.argv
    with CliRunner().isolation(env={"ROOFLINE_DEBUG": None, **(env_extra or {})}) as (out, err, _):
        sys.argv = argv
        try:
            main()
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = saved
        stdout, stderr = out.getvalue().decode("utf-8", "replace"), err.getvalue().decode("utf-8", "replace")
    return subprocess.CompletedProcess(argv, rc, stdout, stderr)
