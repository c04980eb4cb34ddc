"""Rooflines of a live PyTorch model rather than a captured trace (needs ``torch``: ``pip install 'roofline[torch]'``).

``measure_peaks(device, dtype)`` measures the roofs; ``RooflineAnalyzer(model, sample)`` counts every
module's FLOPs with ``torch.utils.flop_counter.FlopCounterMode``, times it with forward hooks and
places it under them (``.results`` frame, ``.points`` typed records, ``.summary()``, ``.plot()``).
"""

from roofline.live.analyzer import ModulePoint, RooflineAnalyzer, flop_counter
from roofline.live.peaks import measure_peaks

__all__ = ["ModulePoint", "RooflineAnalyzer", "flop_counter", "measure_peaks"]
