"""Analytical LLM inference roofline (no profile needed): prefill and decode per layer op.

    >>> from roofline.inference import estimate
    >>> est = estimate("llama-3-8b", "h100-sxm", batch=[1, 8, 32], prompt=512, generate=128)
    >>> est.phases, est.scaling, est.crossover_batch
    >>> ests = sweep("llama-3-8b", "h100-sxm", batch=[1, 8, 32], prompt=[512, 4096])   # sequence length too
"""

from __future__ import annotations

from roofline.inference.configs import ModelConfig, ModelConfigError, load_model, parse_config
from roofline.inference.model import Estimate, InferenceModelError, estimate, hardware, sweep

__all__ = [
           "Estimate",
           "InferenceModelError",
           "ModelConfig",
           "ModelConfigError",
           "estimate",
           "hardware",
           "load_model",
           "parse_config",
           "sweep",
]
