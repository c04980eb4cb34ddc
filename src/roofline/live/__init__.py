"""Rooflines of a live PyTorch model rather than a captured trace (needs ``torch``: ``pip install 'roofline[torch]'``).

``measure_peaks(device, dtype)`` measures the roofs; ``RooflineAnalyzer(model, sample)`` counts every
module's FLOPs with ``torch.utils.flop_counter.FlopCounterMode``, times it with forward hooks and
places it under them (``.results`` frame, ``.points`` typed records, ``.summary()``, ``.plot()``).
"""

import importlib.util

from roofline.errors import MissingDependencyError

# torch is an optional extra: without it, importing roofline.live raises one typed error that
# says what to install, rather than a bare ModuleNotFoundError from deep inside a submodule.


class TorchMissingError(MissingDependencyError, ImportError):
    """torch is not installed; also an ImportError, so ``except ImportError`` guards keep working."""


if importlib.util.find_spec("torch") is None:
    raise TorchMissingError("roofline.live needs PyTorch: pip install 'roofline[torch]'")

from roofline.live.analyzer import ModulePoint, RooflineAnalyzer, flop_counter
from roofline.live.peaks import measure_peaks

__all__ = ["ModulePoint", "RooflineAnalyzer", "flop_counter", "measure_peaks"]
