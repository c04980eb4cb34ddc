"""Per-module roofline of a live PyTorch model: FLOPs from ``FlopCounterMode``, times from hooks.

FLOPs: one forward pass under ``torch.utils.flop_counter.FlopCounterMode``, which counts every op
that has a FLOP formula (matmuls, convolutions, attention, ...) and files it under every module on
the call stack, by module path. A module's own FLOPs are its count minus its children's, so each
FLOP is counted once. torch has no formula for the CPU flash-attention kernel, so one is added
(``sdpa_flop_count``, the formula torch uses for the CUDA kernels). A module whose ops have no
formula (ReLU, LayerNorm, a view) gets FLOPs "unavailable", never 0.

Rows: every module that ran and called no child module (a leaf as run: ``nn.MultiheadAttention``
is one, its projections run inside it), plus every parent whose own ops do FLOPs (a custom block
that multiplies tensors itself), as "path (own ops)". Paths are the model's own module paths.

Bytes = parameters + inputs + outputs of each call, each once (the least a module must move).
Times: wall time between the pre- and post-forward hooks, synchronised on GPUs, per model forward
(a module called twice per forward counts both calls), averaged over ``steps`` after ``warmup``.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from roofline.hardware.peaks import Peaks
from roofline.live.torch_import import torch_module as _torch
from roofline.schema import UNAVAILABLE, conform_kernels

#: dtype of a module's first input → the compute roof it runs under (measure_peaks names the same)
_PRECISION = {"float64": "fp64", "float16": "fp16", "bfloat16": "fp16"}


@dataclass(frozen=True)
class ModulePoint:
    """One module on the roofline, as a typed record (``RooflineAnalyzer.points``)."""

    path: str  # module path in the model ("encoder.0.linear1"; "(model)" for the model itself)
    kind: str  # the module's class name
    calls: int  # forward calls per model forward
    time_s: float  # wall time per model forward
    flops: float | None  # FLOPs per model forward; None when unavailable (reason in flop_source)
    flop_source: str
    bytes_moved: float  # parameters + inputs + outputs per model forward
    precision: str  # the compute roof it is measured against
    intensity_flop_per_byte: float | None
    achieved_flop_per_s: float | None
    bound: str  # compute-bound, memory-bound, latency-limited or unavailable
    pct_of_roof: float | None


def _numel_bytes(x: Any) -> int:
    torch = _torch()
    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if isinstance(x, (list, tuple)):
        return sum(_numel_bytes(v) for v in x)
    if isinstance(x, dict):
        return sum(_numel_bytes(v) for v in x.values())
    return 0


def _first_tensor(x: Any) -> Any:
    torch = _torch()
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (list, tuple)):
        for v in x:
            t = _first_tensor(v)
            if t is not None:
                return t
    if isinstance(x, dict):
        return _first_tensor(list(x.values()))
    return None


def _attention_flops(b: int, l_: int, s: int, e: int) -> int:
    """Q, K, V and output projections, plus QKᵀ and PV: what the decomposed ops count."""
    return 2 * b * l_ * e * e + 2 * 2 * b * s * e * e + 2 * b * l_ * e * e + 2 * 2 * b * l_ * s * e


def flop_counter() -> Any:
    """``FlopCounterMode`` plus formulas for three fused kernels torch has none for.

    The CPU flash-attention kernel (``sdpa_flop_count``, torch's own formula for the CUDA ones), and
    the fast paths that ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` take in eval
    mode without grad (the sum of the formulas of the ops they fuse: projections, QKᵀ, PV, the
    feed-forward matmuls); without these a model in eval mode would count no attention FLOPs.
    FlopCounterMode hands the formulas shapes, not tensors.
    """
    torch = _torch()
    from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

    def cpu_sdpa(query: Any, key: Any, value: Any, *args: Any, out_val: Any = None, **kwargs: Any) -> int:
        return sdpa_flop_count(query, key, value)

    def native_mha(query: Any, key: Any, value: Any, *args: Any, out_val: Any = None, **kwargs: Any) -> int:
        if len(query) == 3:  # (batch, length, embed): the fast path runs for batch_first modules only
            return _attention_flops(query[0], query[1], key[1], query[2])
        return _attention_flops(1, query[0], key[0], query[1])  # unbatched

    def encoder_layer(src: Any, embed_dim: int, num_heads: int, qkv_weight: Any, qkv_bias: Any, proj_weight: Any,
                      proj_bias: Any, use_gelu: bool, norm_first: bool, eps: float, nw1: Any, nb1: Any, nw2: Any,
                      nb2: Any, ffn_weight_1: Any, *args: Any, out_val: Any = None, **kwargs: Any) -> int:
        b, l_ = (src[0], src[1]) if len(src) == 3 else (1, src[0])
        return _attention_flops(b, l_, l_, embed_dim) + 2 * 2 * b * l_ * embed_dim * ffn_weight_1[0]

    extra = {}
    for name, fn in (("_scaled_dot_product_flash_attention_for_cpu", cpu_sdpa), ("_native_multi_head_attention", native_mha),
                     ("_transformer_encoder_layer_fwd", encoder_layer)):
        op = getattr(torch.ops.aten, name, None)
        if op is not None:
            extra[op] = fn
    return FlopCounterMode(display=False, custom_mapping=extra)


class _Recorder:
    """Forward hooks on every module: call counts, bytes, which modules called children, times."""

    def __init__(self, model: Any, sync: Any) -> None:
        self.sync = sync
        self.paths = {m: name for name, m in model.named_modules()}  # by identity (Module hashes so), no id()
        self.modules = dict(model.named_modules())
        self.calls: dict[str, int] = defaultdict(int)
        self.bytes: dict[str, float] = defaultdict(float)
        self.dtype: dict[str, str | None] = {}
        self.parents: set[str] = set()  # modules that called a child module
        self.order: list[str] = []  # first-call order
        self.time: dict[str, float] = defaultdict(float)
        self.counting = True
        self._stack: list[tuple[str, float]] = []
        self._handles: list[Any] = []

    def __enter__(self) -> _Recorder:
        for m in self.modules.values():
            self._handles.append(m.register_forward_pre_hook(self._pre))
            self._handles.append(m.register_forward_hook(self._post))
        return self

    def __exit__(self, *exc: object) -> None:
        for h in self._handles:
            h.remove()

    def _pre(self, module: Any, inputs: Any) -> None:
        name = self.paths.get(module)
        if name is None:
            return
        if self._stack:
            self.parents.add(self._stack[-1][0])
        self.sync()
        self._stack.append((name, time.perf_counter()))

    def _post(self, module: Any, inputs: Any, output: Any) -> None:
        name = self.paths.get(module)
        if name is None or not self._stack or self._stack[-1][0] != name:
            return
        self.sync()
        _, t0 = self._stack.pop()
        if not self.counting:
            self.time[name] += time.perf_counter() - t0
            return
        if name not in self.calls:
            self.order.append(name)
            x = _first_tensor(inputs)
            self.dtype[name] = str(x.dtype).removeprefix("torch.") if x is not None else None
        self.calls[name] += 1
        recurse = name not in self.parents  # a leaf as run uses all its parameters (MHA's out_proj)
        params = sum(p.numel() * p.element_size() for p in module.parameters(recurse=recurse))
        self.bytes[name] += params + _numel_bytes(inputs) + _numel_bytes(output)


def _children_ran(rec: _Recorder, name: str) -> Iterator[str]:
    prefix = f"{name}." if name else ""
    for child, _ in rec.modules[name].named_children():
        if prefix + child in rec.calls:
            yield prefix + child


def _flop_key(root: str, name: str) -> str:
    return root if not name else f"{root}.{name}"


def _ops_text(counts: dict[Any, int]) -> str:
    return ", ".join(f"{str(op).removeprefix('aten.')} {n:,}" for op, n in sorted(counts.items(), key=lambda kv: -kv[1]))


class RooflineAnalyzer:
    """``RooflineAnalyzer(model, sample).profile(device="cpu")`` then ``.results``, ``.points``, ``.summary()``, ``.plot()``."""

    def __init__(self, model: Any, sample: Any, peaks: Peaks | None = None) -> None:
        self.model, self.sample, self.peaks = model, sample, peaks
        self.results: pd.DataFrame | None = None

    def profile(self, device: Any = "cpu", warmup: int = 2, steps: int = 5) -> pd.DataFrame:
        torch = _torch()
        from roofline.analysis import analyze
        from roofline.live.peaks import measure_peaks

        dev = torch.device(device)
        model = self.model.to(dev).eval()
        sample = self.sample.to(dev) if hasattr(self.sample, "to") else self.sample
        sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
        root = type(model).__name__
        with _Recorder(model, sync) as rec, torch.no_grad():
            counter = flop_counter()
            with counter:  # one forward with FLOPs counted (slower: not timed)
                model(sample)
            rec.counting = False
            for _ in range(warmup):
                model(sample)
            rec.time.clear()
            for _ in range(steps):
                model(sample)
        counts = counter.get_flop_counts()
        total = {name: float(sum(counts.get(_flop_key(root, name), {}).values())) for name in rec.calls}
        peaks = self.peaks or measure_peaks(dev)
        rows = []
        for name in rec.order:
            children = list(_children_ran(rec, name))
            own_flops = total[name] - sum(total[c] for c in children)
            own_time = (rec.time[name] - sum(rec.time[c] for c in children)) / max(steps, 1)
            kind = type(rec.modules[name]).__name__
            if name in rec.parents and own_flops <= 0:
                continue  # a container: its children carry its work
            path = (name or "(model)") + (" (own ops)" if name in rec.parents else "")
            ops = counts.get(_flop_key(root, name), {})
            row: dict[str, Any] = {
                "kernel_id": len(rows), "kernel_name": path, "kernel_short_name": f"{path} ({kind})",
                "module_path": path, "module_type": kind, "module_calls": rec.calls[name],
                "format": "live", "source_file": root, "device_name": peaks.device,
                "duration_s": own_time if own_time > 0 else float("nan"),
                "duration_s_source": (f"wall time per model forward ({rec.calls[name]} call(s)), forward hooks, "
                                      f"mean of {steps} forward(s)" + (", less its children" if children else "")),
                "dram_bytes": rec.bytes[name], "dram_bytes_source": "parameters + inputs + outputs of each call",
                "attribution": "forward hook", "replay_ok": True,
            }
            prec = _PRECISION.get(rec.dtype.get(name) or "", "fp32")
            for p in ("fp64", "fp32", "fp16", "tensor"):
                row[f"flop_{p}"] = 0.0 if own_flops > 0 else float("nan")
                row[f"flop_{p}_source"] = (
                    f"FlopCounterMode: {_ops_text(ops)}" + (" (less its children's)" if children else "") if own_flops > 0
                    else f"{UNAVAILABLE}: FlopCounterMode counts ops with a FLOP formula (matmul, convolution, "
                         f"attention); {kind} ran none")
            if own_flops > 0:
                row[f"flop_{prec}"] = own_flops
            rows.append(row)
        frame = conform_kernels(pd.DataFrame(rows))
        self.results = analyze(frame, peaks=peaks, levels=("dram",))
        return self.results

    def _need_results(self) -> pd.DataFrame:
        if self.results is None:
            raise RuntimeError("call .profile() first")
        return self.results

    @property
    def points(self) -> list[ModulePoint]:
        """The modules as typed records, in the frame's order (first call first)."""
        res = self._need_results()

        def num(v: Any) -> float | None:
            f = float(v) if v is not None and v is not pd.NA else math.nan
            return f if math.isfinite(f) else None

        out = []
        for r in res.itertuples(index=False):
            prec = str(r.compute_precision)
            out.append(ModulePoint(
                path=str(r.module_path), kind=str(r.module_type), calls=int(r.module_calls), time_s=float(r.duration_s),
                flops=num(r.flop_total), flop_source=str(getattr(r, f"flop_{prec}_source", r.flop_fp32_source)),
                bytes_moved=float(r.dram_bytes), precision=prec,
                intensity_flop_per_byte=num(r.intensity_dram_flop_per_byte), achieved_flop_per_s=num(r.achieved_flop_per_s),
                bound=str(r.bound), pct_of_roof=num(r.pct_of_roof)))
        return out

    def summary(self, top: int = 10) -> str:
        """The ``top`` modules by time, with their paths, as a text table."""
        res = self._need_results().sort_values("duration_s", ascending=False, na_position="last", kind="stable")

        def fmt(v: Any, scale: float, digits: str = ".3g") -> str:
            f = float(v) if v is not None and v is not pd.NA else math.nan
            return "n/a" if not math.isfinite(f) else format(f / scale, digits)

        table = pd.DataFrame({
            "module": res["module_path"], "type": res["module_type"], "calls": res["module_calls"],
            "time_ms": [fmt(v, 1e-3) for v in res["duration_s"]],
            "GFLOP": [fmt(v, 1e9) for v in res["flop_total"]],
            "MB": [fmt(v, 1e6) for v in res["dram_bytes"]],
            "FLOP/B": [fmt(v, 1) for v in res["intensity_dram_flop_per_byte"]],
            "GFLOP/s": [fmt(v, 1e9) for v in res["achieved_flop_per_s"]],
            "bound": res["bound"], "%_roof": [fmt(v, 1, ".1f") for v in res["pct_of_roof"]],
        }).head(top)
        no_flops = int(res["flop_total"].isna().sum())
        foot = (f"{len(table)} of {len(res)} modules by time; FLOPs from torch.utils.flop_counter.FlopCounterMode"
                + (f"; n/a: {no_flops} module(s) ran no op with a FLOP formula" if no_flops else ""))
        return table.to_string(index=False) + "\n" + foot

    def plot(self, path: Any = None, backend: str = "matplotlib") -> Any:
        """The roofline chart: a matplotlib Figure, or with ``backend="plotly"`` a plotly Figure."""
        res = self._need_results()
        title = f"{type(self.model).__name__} modules"
        if backend == "plotly":
            from roofline.live.plotly_chart import figure

            fig = figure(res, title)
            if path is not None:
                fig.write_html(str(path), include_plotlyjs=True)
            return fig
        if backend != "matplotlib":
            raise ValueError(f"backend must be 'matplotlib' or 'plotly', not {backend!r}")
        from roofline.report import png

        if path is not None:
            return png.write(res, path, levels=("dram",), title=title)
        return png.draw(res, levels=("dram",), title=title)
