"""Issue 32's acceptance, on every shared fixture: the headline's time shares add up to 100% of GPU time, its
coverage equals the share of GPU time in rows with FLOPs and bytes (computed here from the frame that ``--out``
writes, not by the headline's code), and every share without a point names its reason; ``--by category`` adds
up to 100%; ``roofline demo`` lists no row without a roofline point and writes no empty chart."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import roofline
from conftest import SHARED, fixture_analysis, fixture_params, shared
from conftest import cli as _cli
from roofline.analysis.headline import headlines
from roofline.schema import read_table, write_table

SKIP = {"MANIFEST.md", "reference", "derived", "capture_traces", "vllm_decode_full-graph"}
VLLM = "traces/vllm_decode_full-graph/graph_execution.pt.trace.json.gz"


def _inputs() -> list[str]:
    out = []
    for kind in ("ncu", "traces", "nsys", "rocprof"):
        folder = SHARED / kind
        if folder.is_dir():
            out += [f"{kind}/{p.name}" for p in sorted(folder.iterdir()) if p.name not in SKIP]
    return out + [VLLM] if out else ["(shared fixtures missing)"]


def covered_share(frame: pd.DataFrame) -> float:
    """The share of GPU time in rows with FLOPs and bytes (and some work: 0 FLOP and 0 bytes is idle time),
    from the frame's own columns."""
    dur = pd.to_numeric(frame["duration_s"], errors="coerce").fillna(0.0).clip(lower=0.0)
    flop = pd.to_numeric(frame["flop_total"], errors="coerce")
    byts = frame[[c for c in ("dram_bytes", "l2_bytes", "l1_bytes", "lds_bytes") if c in frame]].apply(
        pd.to_numeric, errors="coerce")
    point = flop.notna() & byts.notna().any(axis=1) & ((flop > 0) | (byts > 0).any(axis=1))
    return float(dur[point].sum() / dur.sum())


@pytest.mark.parametrize("rel", fixture_params(_inputs()))
def test_headline_adds_up_and_its_coverage_is_the_out_frames(rel, tmp_path):
    run = fixture_analysis(rel, csv_device=False)  # roofline.run(path), shared with the other every-fixture tests
    out = tmp_path / "frame.parquet"
    write_table(run.frame, out)  # what --out writes
    frame = read_table(out)
    items = headlines(run.frame)
    if frame.empty:
        assert items == []
        return
    src = frame["source_file"].astype("string").fillna("")
    dev = frame["device_name"].astype("string").fillna("")
    for h in items:
        t = h.gpu_time_s
        assert sum(h.kinds.values()) == pytest.approx(t, rel=1e-9, abs=1e-15)
        if t <= 0:
            assert math.isnan(h.coverage)  # no durations: no shares to give (rocprof-compute MI300X_A1)
            continue
        shares = h.shares
        assert sum(shares.values()) == pytest.approx(1.0, rel=1e-9)
        # every share without a point has its reason; with coverage and idle they make the whole
        assert all(r.reason and r.share > 0 or r.time_s == 0 for r in h.reasons)
        assert h.coverage + shares["idle"] + sum(r.share for r in h.reasons) == pytest.approx(1.0, rel=1e-9)
        if h.step is None and h.profile is not None:  # a (profile, device) scope: its rows in the --out frame
            rows = frame[((src == h.profile) & (dev == (h.device or ""))).to_numpy()]
            assert h.coverage == pytest.approx(covered_share(rows), rel=1e-9, abs=1e-12)
    whole = items[0]
    assert whole.gpu_time_s == pytest.approx(float(frame["duration_s"].clip(lower=0).sum()), rel=1e-9)
    if whole.gpu_time_s > 0:
        assert whole.coverage == pytest.approx(covered_share(frame), rel=1e-9, abs=1e-12)
    if rel.startswith("traces/"):
        cats = roofline.by_category(run)
        assert cats["pct_gpu_time"].sum() == pytest.approx(100.0) and cats["duration_s"].sum() == pytest.approx(
            float(frame["duration_s"].sum()))


def test_the_cli_headline_of_a_trace_without_shapes_names_the_cause_and_its_fix(tmp_path):
    """The 216k-event V100 trace was recorded without shapes: the headline says so (not "the report has no FLOP
    or memory counters"), JSON and --out agree, and --by category adds up to 100%."""
    rel = "traces/torch_v100_2rank-nccl_rank1_large216k.pt.trace.json.gz"
    p = _cli("analyze", shared(rel), "--out", tmp_path / "rows.parquet")
    assert p.returncode == 0, p.stderr
    head = p.stdout.split("\n\n")[0]
    assert "no shapes recorded" in head and "record_shapes=True" in head and "communication" in head
    assert "no FLOP or memory counters" not in p.stdout
    table = p.stdout.split("longest first\n", 1)[1].split("shown:")[0]
    assert "record_param_comms" not in table and "unavailable" not in table  # no row without a point is listed
    j = _cli("analyze", shared(rel), "--by", "summary", "--format", "json")
    assert j.returncode == 0, j.stderr
    items = json.loads(j.stdout)["headline"]
    frame = read_table(tmp_path / "rows.parquet")
    assert items[0]["coverage"] == pytest.approx(covered_share(frame), rel=1e-9)
    assert items[0]["reasons"][0]["reason"] == "no shapes recorded" and items[0]["reasons"][0]["share"] > 0.9
    assert [i["step"] for i in items[1:]] == [f"ProfilerStep#{n}" for n in range(2, 2 + len(items) - 1)]
    c = _cli("analyze", shared(rel), "--by", "category", "--out", tmp_path / "cat.parquet")
    assert c.returncode == 0, c.stderr
    cats = read_table(tmp_path / "cat.parquet")
    assert cats["pct_gpu_time"].sum() == pytest.approx(100.0)
    assert cats.set_index("category").loc["communication", "pct_gpu_time"] == pytest.approx(
        100 * items[0]["shares"]["communication"], rel=1e-9)
    assert "legend: % time = share of the GPU time (adds up to 100)" in c.stdout


def test_demo_lists_no_row_without_a_point_and_writes_no_empty_chart(tmp_path, monkeypatch):
    """Without the xla extra the MI300X sample has times but no FLOPs: its rows are folded into one line with
    their reason and fix, IDLE is in the breakdown, and it gets no chart (the output says why)."""
    from click.testing import CliRunner

    from roofline.cli import cli

    monkeypatch.setitem(sys.modules, "xprof", None)  # as installed without roofline[xla]
    out = tmp_path / "demo"
    r = CliRunner().invoke(cli, ["demo", "-o", str(out)])
    assert r.exit_code == 0, r.output
    table = r.output.split("longest first\n", 1)[1].split("\nshown:")[0].splitlines()[1:]
    assert len(table) == 20 and not [ln for ln in table if "n/a" in ln or "IDLE" in ln or "jit_" in ln]
    folded = r.output.split("rows without a roofline point")[1]
    assert "a GPU xplane holds no FLOPs or bytes" in folded and "install the extra roofline[xla]" in folded
    assert "idle" in r.output.split("time by kind:")[1].splitlines()[0]
    assert "no chart for MI300X: nothing drawable" in r.output and not (out / "roofline-mi300x.png").exists()
    charts = sorted(p.name for p in out.glob("*.png"))
    assert charts == ["roofline-nvidia-a10g.png", "roofline-nvidia-h100-80gb-hbm3.png", "roofline.png"]


def test_category_table_is_documented_data():
    from roofline.analysis.categories import by_category, category_of, table

    t = table()
    assert t.names[:10] == ("communication", "MoE", "attention", "convolution", "GEMM", "normalization",
                            "reduction", "data movement", "elementwise", "other")
    doc = (Path(__file__).resolve().parents[2] / "docs" / "analysis.md").read_text()
    assert all(f"| {c.name} |" in doc for c in t.categories)
    cases = {"aten::mm": "GEMM", "aten::cudnn_convolution": "convolution", "aten::_flash_attention_forward": "attention",
             "aten::native_layer_norm": "normalization", "aten::add": "elementwise", "aten::sum": "reduction",
             "aten::copy_": "data movement", "record_param_comms": "communication", "vllm::moe_forward": "MoE",
             "nodeCalculationsKernel": "other", "ncclDevKernel_Generic": "communication", "IDLE": "idle",
             "[CUDA memcpy Device-to-Device]": "data movement", "aten::clamp_min": "elementwise",
             "unrolled_elementwise_kernel": "elementwise", "assign_pixels_to_centroids": "other"}
    assert {n: category_of(n) for n in cases} == cases
    assert category_of("jit_dot(49)/custom-call.1", hlo="custom-call") == "GEMM"
    assert category_of("jit_f/copy-done.4", hlo="copy-done") == "data movement"
    frame = pd.DataFrame({"kernel_name": ["aten::mm", "aten::mm", "x"], "duration_s": [3.0, 1.0, np.nan],
                          "flop_total": [1.0, np.nan, 1.0], "dram_bytes": [1.0, 1.0, 1.0]})
    c = by_category(frame)
    assert c["category"].tolist() == ["GEMM", "other"] and c["pct_gpu_time"].tolist() == [100.0, 0.0]
    assert c.loc[0, "achieved_flop_per_s"] == 1.0 / 3.0  # over the time of the rows that have FLOPs
