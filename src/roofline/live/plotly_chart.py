"""The roofline of a live model's modules as a plotly Figure (``RooflineAnalyzer.plot(backend="plotly")``).

The HTML report's kernel chart (``report/figure.py``) with the module paths as the hover text: same roofs and
points (``report.chart_data``), points coloured by bound with the legend saying so, one marker shape per level.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from roofline.report.figure import BOUND_COLOURS
from roofline.report.figure import figure as report_figure


def figure(result: pd.DataFrame, title: str, levels: Sequence[str] = ("dram",)) -> Any:
    names = result["module_path"] if "module_path" in result else result["kernel_name"]
    return report_figure(result, title, levels=levels, names=names)


__all__ = ["BOUND_COLOURS", "figure"]
