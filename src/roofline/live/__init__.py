"""Rooflines of a live PyTorch model rather than a captured trace (needs ``torch``).

``measure_peaks(device, dtype)`` measures the roofs; ``RooflineAnalyzer(model, sample)`` times
every leaf module and places it under them.
"""

import importlib.util

from roofline.errors import MissingDependencyError

# torch is an optional extra: without it, importing roofline.live raises one typed error that
# says what to install, rather than a bare ModuleNotFoundError from deep inside a submodule.


class TorchMissingError(MissingDependencyError, ImportError):
    """torch is not installed; also an ImportError, so ``except ImportError`` guards keep working."""


if importlib.util.find_spec("torch") is None:
    raise TorchMissingError("roofline.live needs PyTorch: pip install 'roofline[torch]'")

from roofline.live.analyzer import RooflineAnalyzer  # noqa: E402
from roofline.live.peaks import measure_peaks  # noqa: E402

__all__ = ["RooflineAnalyzer", "measure_peaks"]
