"""Rooflines of a live PyTorch model rather than a captured trace (needs ``torch``).

``measure_peaks(device, dtype)`` measures the roofs; ``RooflineAnalyzer(model, sample)`` times
every leaf module and places it under them.
"""

from roofline.live.analyzer import RooflineAnalyzer
from roofline.live.peaks import measure_peaks

__all__ = ["RooflineAnalyzer", "measure_peaks"]
