"""roofline: hierarchical roofline analysis of captured GPU profiles.

    >>> import roofline
    >>> kernels = roofline.read("report.ncu-rep")      # canonical kernels frame
    >>> result = roofline.analyze(kernels)             # kernels + roofline columns
    >>> result = roofline.analyze("run.sqlite", counters=["top.ncu-rep"])   # paths: the CLI's pipeline
    >>> run = roofline.run(["a.ncu-rep", "traces/"])   # frame, failures and warnings (keeps going)
    >>> result.summary(); roofline.by_category(result)  # the headline; time per op category
    >>> roofline.plot(result)                          # the report's kernel chart as a plotly Figure
    >>> roofline.findings(result)                      # Nsight Compute's rule results, by estimated time saved
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roofline._version import __version__
from roofline.errors import RooflineError

# The public functions are imported on first use (PEP 562): `import roofline` (and so the
# `roofline --version`/`--help` start-up) does not pay for pandas and the analysis stack.
_LAZY = {"analyze": "roofline.api", "run": "roofline.api", "roofline_analysis": "roofline.analysis",
         "summary": "roofline.api", "by_category": "roofline.api", "plot": "roofline.api", "compare": "roofline.api",
         "findings": "roofline.api",
         "read": "roofline.api", "read_each": "roofline.api", "read_metrics": "roofline.ingest", "sniff": "roofline.ingest",
         "read_table": "roofline.schema", "write_table": "roofline.schema",
         "open_dataset": "roofline.batch.dataset"}

if TYPE_CHECKING:
    from roofline.analysis import roofline_analysis
    from roofline.api import analyze, by_category, compare, findings, plot, read, read_each, run, summary
    from roofline.batch.dataset import open_dataset
    from roofline.ingest import read_metrics, sniff
    from roofline.schema import read_table, write_table


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # once imported, a plain attribute
        return value
    raise AttributeError(f"module 'roofline' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)  # the public names only (not the module's imports and helpers)

__all__ = [
    "RooflineError",
    "__version__",
    "analyze",
    "by_category",
    "compare",
    "findings",
    "open_dataset",
    "plot",
    "read",
    "read_each",
    "read_metrics",
    "read_table",
    "roofline_analysis",
    "run",
    "sniff",
    "summary",
    "write_table",
]
