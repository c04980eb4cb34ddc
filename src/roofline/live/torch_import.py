"""PyTorch, imported when a live measurement needs it (``roofline.live`` is optional: ``roofline[torch]``)."""

from __future__ import annotations

from typing import Any

from roofline.errors import MissingDependencyError


def torch_module() -> Any:
    """``torch``, or a typed error saying how to install it."""
    try:
        import torch
    except ModuleNotFoundError:
        raise MissingDependencyError("roofline.live needs PyTorch: pip install 'roofline[torch]'") from None
    return torch
