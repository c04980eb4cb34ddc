"""The live-model API on CPU: measured peaks, and per-module FLOPs from torch's FlopCounterMode.

FLOPs are checked against closed forms (2·rows·in·out for a matmul, 2·N·Cout·∏out·Cin/groups·∏kernel for a
convolution), not only against FlopCounterMode itself. The analyzer's times are only checked positive.
"""

from __future__ import annotations

import math
import os

import pytest

if os.environ.get("CI"):
    import torch  # CI installs it (the test extra): a missing torch must fail there
else:
    torch = pytest.importorskip("torch")
nn = torch.nn

from roofline.live import ModulePoint, RooflineAnalyzer, measure_peaks
from roofline.live.peaks import _CACHE


def test_measure_peaks_cpu_positive_repeatable_and_cached():
    _CACHE.clear()
    a = measure_peaks("cpu", matmul_size=512, copy_bytes=64 << 20, repeat=3)
    assert measure_peaks("cpu", matmul_size=512, copy_bytes=64 << 20) is a  # cached per device and dtype
    b = measure_peaks("cpu", matmul_size=512, copy_bytes=64 << 20, repeat=3, refresh=True)
    for x in (a, b):
        assert x.compute["fp32"].value > 1e8 and x.bandwidth["dram"].value > 1e8
        assert x.compute["fp32"].source == "measured" and x.compute["fp32"].clock_basis == "measured"
    # repeatable on what does not depend on the clock of a shared machine (no timing asserted): a
    # refresh measures again into a new object with the same roofs, units, sources and device
    assert b is not a and measure_peaks("cpu", matmul_size=512, copy_bytes=64 << 20) is b
    assert (a.device, sorted(a.compute), sorted(a.bandwidth)) == (b.device, sorted(b.compute), sorted(b.bandwidth))
    assert all(math.isfinite(x.compute["fp32"].value) and math.isfinite(x.bandwidth["dram"].value) for x in (a, b))
    f64 = measure_peaks("cpu", torch.float64, matmul_size=256, copy_bytes=16 << 20, repeat=2)
    assert "fp64" in f64.compute


def _peaks():
    return measure_peaks("cpu", matmul_size=256, copy_bytes=16 << 20, repeat=2, min_run_time=0.02)


def _conv_flops(n, cout, out_hw, cin_per_group, k):
    return 2 * n * cout * out_hw * cin_per_group * k


class Block(nn.Module):
    """A parent with its own matmul besides a child module, and a shared child called twice."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(64, 48))
        self.proj = nn.Linear(48, 48)
        self.act = nn.GELU()

    def forward(self, x):
        y = x @ self.w  # the block's own op: 2·rows·64·48
        return self.act(self.proj(self.proj(y)))  # proj runs twice


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, padding=2, dilation=2, groups=2))
        self.flat = nn.Flatten()
        self.fc = nn.Linear(32 * 16 * 16, 64)
        self.norm = nn.LayerNorm(64)
        self.block = Block()

    def forward(self, x):
        return self.block(self.norm(self.fc(self.flat(self.features(x)))))


def test_every_module_gets_flop_counter_mode_flops_by_path():
    from torch.utils.flop_counter import FlopCounterMode

    model, x = Net(), torch.randn(2, 3, 32, 32)
    an = RooflineAnalyzer(model, x, peaks=_peaks())
    res = an.profile(device="cpu", warmup=1, steps=2)
    flops = dict(zip(res["kernel_name"], res["flop_fp32"]))
    # closed forms, independent of torch
    expected = {"features.0": _conv_flops(2, 16, 16 * 16, 3, 9), "features.2": _conv_flops(2, 32, 16 * 16, 8, 9),
                "fc": 2 * 2 * (32 * 16 * 16) * 64, "block.proj": 2 * (2 * 2 * 48 * 48), "block (own ops)": 2 * 2 * 64 * 48}
    for path, value in expected.items():
        assert flops[path] == value, path
    # and the same as plain FlopCounterMode's per-module counts
    with FlopCounterMode(display=False) as fc:
        model(x)
    counts = {k: sum(v.values()) for k, v in fc.get_flop_counts().items()}
    for path in ("features.0", "features.2", "fc", "block.proj"):
        assert flops[path] == counts[f"Net.{path}"], path
    assert flops["block (own ops)"] == counts["Net.block"] - counts["Net.block.proj"]
    assert res["flop_fp32"].sum() == counts["Global"]  # every FLOP once
    # modules whose ops have no FLOP formula: unavailable with the reason, never 0
    for path in ("features.1", "flat", "norm", "block.act"):
        row = res[res["kernel_name"] == path].iloc[0]
        assert math.isnan(row["flop_fp32"]) and row["flop_fp32_source"].startswith("unavailable") and "ran none" in \
            row["flop_fp32_source"], path
    # pure containers (features, the model) are not rows; the shared module counts both calls
    assert "features" not in flops and "(model)" not in flops
    proj = res[res["kernel_name"] == "block.proj"].iloc[0]
    assert proj["module_calls"] == 2 and proj["module_type"] == "Linear"
    assert proj["dram_bytes"] == 2 * ((48 * 48 + 48) * 4 + 2 * (2 * 48) * 4)  # per call: weights + input + output
    assert "FlopCounterMode: addmm" in proj["flop_fp32_source"]
    assert (res["duration_s"].dropna() > 0).all() and res["bound"].notna().all()


def test_summary_points_and_both_plot_backends():
    model, x = Net(), torch.randn(2, 3, 32, 32)
    an = RooflineAnalyzer(model, x, peaks=_peaks())
    res = an.profile(device="cpu", warmup=1, steps=1)
    text = an.summary(top=20)
    for path in ("features.0", "block.proj", "block (own ops)", "norm"):
        assert path in text
    assert "FlopCounterMode" in text and "n/a" in text
    pts = an.points
    assert len(pts) == len(res) and all(isinstance(p, ModulePoint) for p in pts)
    fc = next(p for p in pts if p.path == "fc")
    row = res[res["kernel_name"] == "fc"].iloc[0]
    assert (fc.kind, fc.calls, fc.flops, fc.bytes_moved, fc.bound) == ("Linear", 1, row["flop_fp32"], row["dram_bytes"],
                                                                       row["bound"])
    assert fc.intensity_flop_per_byte == pytest.approx(row["flop_fp32"] / row["dram_bytes"])
    relu = next(p for p in pts if p.path == "features.1")
    assert relu.flops is None and relu.flop_source.startswith("unavailable")
    fig = an.plot()
    assert any((c.get_gid() or "") == "level:dram" for c in fig.axes[0].collections)
    import plotly.graph_objects as go

    pf = an.plot(backend="plotly")
    assert isinstance(pf, go.Figure)
    drawn = [t for t in pf.data if t.mode == "markers"]
    assert sum(len(t.x) for t in drawn) == int((res["achieved_flop_per_s"] > 0).sum())
    from roofline.live.plotly_chart import BOUND_COLOURS

    for t in drawn:  # colour = bound, named in the legend
        bound = t.name.split(" (")[0]
        assert t.marker.color == BOUND_COLOURS[bound]
        for name in t.text:
            assert (res.loc[res["kernel_name"] == name, "bound"] == bound).all()
    assert "colour = bound" in pf.layout.legend.title.text
    with pytest.raises(ValueError, match="backend"):
        an.plot(backend="bokeh")


def test_multihead_attention_flops_include_the_cpu_attention_kernel():
    from torch.utils.flop_counter import FlopCounterMode

    mha = nn.MultiheadAttention(32, 4, batch_first=True)

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = mha

        def forward(self, x):
            return self.attn(x, x, x, need_weights=False)[0]

    x = torch.randn(2, 10, 32)
    res = RooflineAnalyzer(Wrap(), x, peaks=_peaks()).profile(steps=1)
    assert list(res["kernel_name"]) == ["attn"]  # one row: its projections run inside it, not as modules
    with FlopCounterMode(display=False) as fc:
        mha(x, x, x, need_weights=False)
    counted = sum(fc.get_flop_counts()["Global"].values())
    b, l_, e = 2, 10, 32
    assert counted == 4 * 2 * b * l_ * e * e  # plain FlopCounterMode sees the four projections ...
    # ... but not the CPU attention kernel (torch has no formula for it); ours adds QKᵀ and PV
    assert res["flop_fp32"].iloc[0] == counted + 2 * 2 * b * l_ * l_ * e
    assert not math.isnan(res["pct_of_roof"].iloc[0])


def test_measure_peaks_times_with_torch_benchmark():
    p = _peaks()
    assert "blocked_autorange" in p.compute["fp32"].detail and "blocked_autorange" in p.bandwidth["dram"].detail
    assert p.compute["fp32"].clock_basis == "measured"


def test_fused_eval_mode_attention_counts_like_its_decomposed_ops():
    from roofline.live import flop_counter

    layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True, dropout=0.0)
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        totals = []
        for train in (True, False):  # train mode runs the separate ops; eval mode one fused kernel
            layer.train(train)
            fc = flop_counter()
            with fc:
                layer(x)
            totals.append(sum(fc.get_flop_counts()["Global"].values()))
    b, l_, e, f = 2, 10, 32, 64
    assert totals[0] == totals[1] == 4 * 2 * b * l_ * e * e + 2 * 2 * b * l_ * l_ * e + 2 * 2 * b * l_ * e * f
    res = RooflineAnalyzer(nn.Sequential(layer), x, peaks=_peaks()).profile(steps=1)  # profile() runs in eval mode
    assert res["flop_fp32"].sum() == totals[1]
