"""Stage 3: rooflines from the kernels frame (pure functions, frames in, frames out)."""

from roofline.analysis.analyze import analyze, apply_peaks, at_boost_clock, choose_peaks
from roofline.analysis.hierarchy import hierarchical, roofline_columns
from roofline.analysis.roofline import effective_peak, roofline_analysis

__all__ = [
    "analyze",
    "apply_peaks",
    "at_boost_clock",
    "choose_peaks",
    "effective_peak",
    "hierarchical",
    "roofline_analysis",
    "roofline_columns",
]
