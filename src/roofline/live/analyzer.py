"""Per-layer roofline of a live model: forward hooks time every leaf module and size its work.

FLOPs (per forward call, like ``torch.utils.flop_counter``: multiply-adds × 2, no bias term):
Linear 2·rows·in·out; Conv 2·N·Cout·∏out·(Cin/groups)·∏kernel; MultiheadAttention its projections
plus 2·B·L·S·E for each of QKᵀ and PV; Bilinear 2·rows·in1·in2·out. Other leaves (activations,
norms, pooling) have no FLOP model and are kept with their time.
Bytes = parameters + inputs + outputs, each once (the least a layer must move).
Times: wall time between the pre- and post-forward hooks, synchronised on GPUs, averaged over the
profiled steps after ``warmup`` steps.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from typing import Any

import pandas as pd

from roofline.hardware.peaks import Peaks
from roofline.schema import UNAVAILABLE, conform_kernels


def _numel_bytes(x: Any) -> int:
    import torch

    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_numel_bytes(v) for v in x)
    if isinstance(x, dict):
        return sum(_numel_bytes(v) for v in x.values())
    return 0


def _first_tensor(x: Any) -> Any:
    import torch

    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (list, tuple)):
        for v in x:
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


def module_flops(module: Any, inputs: tuple, output: Any) -> float | None:
    """FLOPs of one forward call of a leaf module, or None when there is no model for it."""
    import torch.nn as nn

    x, y = _first_tensor(inputs), _first_tensor(output)
    if isinstance(module, nn.Linear) and x is not None:
        rows = x.numel() // module.in_features
        return 2.0 * rows * module.in_features * module.out_features
    if isinstance(module, nn.Bilinear) and x is not None:
        rows = x.numel() // module.in1_features
        return 2.0 * rows * module.in1_features * module.in2_features * module.out_features
    if isinstance(module, nn.modules.conv._ConvNd) and y is not None:
        n, cout = y.shape[0], y.shape[1]
        out = math.prod(y.shape[2:])
        return 2.0 * n * cout * out * (module.in_channels // module.groups) * math.prod(module.kernel_size)
    if isinstance(module, nn.MultiheadAttention) and x is not None:
        q = x if module.batch_first else x.transpose(0, 1)
        k = _first_tensor(inputs[1:]) if len(inputs) > 1 else q
        k = k if module.batch_first else k.transpose(0, 1)
        b, l_, e = q.shape
        s = k.shape[1]
        proj = 2.0 * b * (l_ + 2 * s) * e * e + 2.0 * b * l_ * e * e  # q, k, v in; out
        return proj + 2 * 2.0 * b * l_ * s * e
    return None


def _leaves(model: Any) -> dict[str, Any]:
    """Modules without children, and attention blocks as a whole (their projections are inside)."""
    import torch.nn as nn

    out: dict[str, Any] = {}
    whole: list[str] = []
    for name, m in model.named_modules():
        if any(name.startswith(w + ".") for w in whole):
            continue
        if isinstance(m, nn.MultiheadAttention):
            whole.append(name)
            out[name] = m
        elif not any(True for _ in m.children()):
            out[name] = m
    return out


class RooflineAnalyzer:
    """``RooflineAnalyzer(model, sample).profile(device="cpu")`` then ``.results``, ``.summary()``, ``.plot()``."""

    def __init__(self, model: Any, sample: Any, peaks: Peaks | None = None) -> None:
        self.model, self.sample, self.peaks = model, sample, peaks
        self.results: pd.DataFrame | None = None

    def profile(self, device: Any = "cpu", warmup: int = 2, steps: int = 5) -> pd.DataFrame:
        import torch

        from roofline.analysis import analyze
        from roofline.live.peaks import measure_peaks

        dev = torch.device(device)
        model = self.model.to(dev).eval()
        sample = self.sample.to(dev) if hasattr(self.sample, "to") else self.sample
        sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
        leaves = _leaves(model)
        times: dict[str, list[float]] = defaultdict(list)
        info: dict[str, dict[str, Any]] = {}
        started: dict[str, float] = {}
        recording = {"on": False}

        def pre(name: str):  # noqa: ANN202
            def hook(_m: Any, _inp: Any) -> None:
                sync()
                started[name] = time.perf_counter()
            return hook

        def post(name: str):  # noqa: ANN202
            def hook(m: Any, inp: Any, out: Any) -> None:
                sync()
                if recording["on"]:
                    times[name].append(time.perf_counter() - started[name])
                if name not in info:
                    params = sum(p.numel() * p.element_size() for p in m.parameters(recurse=False))
                    x = _first_tensor(inp)
                    info[name] = {"flops": module_flops(m, inp, out), "bytes": params + _numel_bytes(inp) + _numel_bytes(out),
                                  "dtype": str(x.dtype).removeprefix("torch.") if x is not None else None,
                                  "kind": type(m).__name__}
            return hook

        handles = []
        for name, m in leaves.items():
            handles.append(m.register_forward_pre_hook(pre(name)))
            handles.append(m.register_forward_hook(post(name)))
        try:
            with torch.no_grad():
                for _ in range(warmup):
                    model(sample)
                recording["on"] = True
                for _ in range(steps):
                    model(sample)
        finally:
            for h in handles:
                h.remove()
        peaks = self.peaks or measure_peaks(dev)
        rows = []
        for i, (name, d) in enumerate(info.items()):
            t = times.get(name) or [float("nan")]
            prec = {"float64": "fp64", "float16": "fp16", "bfloat16": "fp16"}.get(d["dtype"], "fp32")
            row: dict[str, Any] = {"kernel_id": i, "kernel_name": name or "(model)", "kernel_short_name": d["kind"],
                                   "format": "live", "source_file": type(self.model).__name__,
                                   "device_name": peaks.device, "duration_s": sum(t) / len(t),
                                   "duration_s_source": f"mean wall time of {len(t)} forward call(s), hooks",
                                   "dram_bytes": float(d["bytes"]), "dram_bytes_source": "parameters + inputs + outputs",
                                   "attribution": "forward hook", "replay_ok": True}
            for p in ("fp64", "fp32", "fp16", "tensor"):
                row[f"flop_{p}"] = 0.0 if d["flops"] is not None else float("nan")
                row[f"flop_{p}_source"] = ("model: shapes of the call" if d["flops"] is not None
                                           else f"{UNAVAILABLE}: no FLOP model for {d['kind']}")
            if d["flops"] is not None:
                row[f"flop_{prec}"] = d["flops"]
            rows.append(row)
        frame = conform_kernels(pd.DataFrame(rows))
        self.results = analyze(frame, peaks=peaks, levels=("dram",))
        return self.results

    def summary(self, top: int = 10) -> str:
        from roofline.analysis.select import select
        from roofline.report.table import format_table

        if self.results is None:
            raise RuntimeError("call .profile() first")
        return format_table(select(self.results, top=top), levels=("dram",))

    def plot(self, path: Any = None) -> Any:
        from roofline.report import png

        if self.results is None:
            raise RuntimeError("call .profile() first")
        if path is not None:
            return png.write(self.results, path, levels=("dram",), title=f"{type(self.model).__name__} layers")
        return png.draw(self.results, levels=("dram",), title=f"{type(self.model).__name__} layers")
