"""Shared test helpers. Real fixtures live in ../shared/fixtures (never copied into the repo).

A test that needs a shared fixture fails, rather than skips, when it is missing and CI is set.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "fixtures"
NCU = SHARED / "ncu"
OWN = Path(__file__).resolve().parent / "fixtures"


def shared(rel: str) -> Path:
    """Path of a shared fixture; skip locally, fail in CI, when it is missing."""
    p = SHARED / rel
    if not p.exists():
        msg = f"shared fixture missing: {p}"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return p


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
