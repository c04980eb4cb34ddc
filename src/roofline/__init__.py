"""roofline: hierarchical roofline analysis of captured GPU profiles.

    >>> import roofline
    >>> kernels = roofline.read("report.ncu-rep")      # canonical kernels frame
    >>> result = roofline.analyze(kernels)             # kernels + roofline columns
"""

from __future__ import annotations

__version__ = "0.1.0"

from roofline.analysis import analyze, roofline_analysis  # noqa: E402
from roofline.errors import RooflineError  # noqa: E402
from roofline.ingest import read, read_each, read_metrics, sniff  # noqa: E402
from roofline.schema import read_table, write_table  # noqa: E402
from roofline.batch.dataset import open_dataset  # noqa: E402

__all__ = [
    "__version__",
    "read",
    "read_each",
    "read_metrics",
    "sniff",
    "analyze",
    "roofline_analysis",
    "read_table",
    "write_table",
    "open_dataset",
    "RooflineError",
]
