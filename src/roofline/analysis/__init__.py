"""Stage 3: rooflines from the kernels frame (pure functions, frames in, frames out)."""

from roofline.analysis.roofline import ROOFLINE_COLUMNS, analyze, effective_peak, roofline_analysis

__all__ = ["analyze", "roofline_analysis", "effective_peak", "ROOFLINE_COLUMNS"]
