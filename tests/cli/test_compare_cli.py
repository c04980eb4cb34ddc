"""`roofline compare` as CI uses it, through the real CLI: the shared nsys before/after pair (one screen, names
intact, the gate passes), a synthetic 20% regression of one identity written with sqlite3 (the gate names it),
three captures a side with jitter (intervals contain 0) and with a +10% shift (exit 4), and every format against
itself (every change 0, exit 0)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import numpy as np
import pytest

from conftest import OWN, shared
from conftest import cli as _cli

BEFORE = "nsys/nsys2026.2_h100x2_mfu-before.sqlite"
AFTER = "nsys/nsys2026.2_h100x2_mfu-after.sqlite"
GEMM = "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN"  # 3.5% of the step on each GPU


def _copy(tmp, name: str, src: str = BEFORE, factor: float = 1.0, seed: int = 0, slow: float = 1.0,
          jitter: float = 0.0):
    """A copy of a shared export with its kernels' durations scaled: all by ``factor`` × (1 ± ``jitter``, one
    draw per launch), the GEMM identity's by ``slow`` on top."""
    dst = tmp / name
    shutil.copyfile(shared(src), dst)
    os.chmod(dst, 0o644)
    con = sqlite3.connect(dst)
    rows = con.execute("SELECT k.rowid, k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                       "JOIN StringIds s ON s.id = k.demangledName").fetchall()
    j = np.random.default_rng(seed).uniform(-jitter, jitter, len(rows))
    con.executemany("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = ? WHERE rowid = ?",
                    [(int(s + (e - s) * factor * (1 + x) * (slow if n == GEMM else 1.0)), rid)
                     for (rid, s, e, n), x in zip(rows, j)])
    con.commit()
    con.close()
    return dst


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    table = tmp_path_factory.mktemp("pair") / "table.csv"
    return _cli("compare", shared(BEFORE), shared(AFTER), "--fail-on", "time>5%", "--out", table), table


def test_the_shared_pair_fits_one_screen_and_the_gate_passes(pair):
    pair, _ = pair
    assert pair.returncode == 0, pair.stderr
    lines = pair.stdout.splitlines()
    assert len(lines) <= 60, len(lines)
    assert "program time: 541 ms → 494 ms (-8.7%)" in lines[1]
    assert "per launch" in lines[2] and "5,299 vs 4,733 launches" in lines[2]
    assert lines[3].startswith("  identities: 102 in both, 0 baseline only, 0 candidate only")
    assert "slower (top 10 of" in pair.stdout and "faster (top 10 of" in pair.stdout
    assert "gate --fail-on 'time>5%': passed (exit 0)" in pair.stdout
    # communication apart, names whole (not 'Device-to-Device]' nor cut at 40 characters)
    comm = lines.index(next(ln for ln in lines if ln.startswith("communication (2 identities")))
    assert all("ncclDevKernel_SendRecv [device" in ln for ln in lines[comm + 2:comm + 4])
    assert "flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4," in pair.stdout
    assert "regression" not in pair.stderr


def test_the_pairs_full_table_holds_every_identity_with_whole_names(pair):
    import pandas as pd

    t = pd.read_csv(pair[1])
    assert len(t) == 102 and (t["presence"] == "both").all()
    assert {"[CUDA memcpy Device-to-Device]", "[CUDA memset]"} <= set(t["identity_name"])
    assert set(t.loc[t["communication"], "identity_name"]) == {"ncclDevKernel_SendRecv"}


def test_a_20pct_slower_identity_fails_the_gate_naming_it(tmp_path):
    slow = _copy(tmp_path, "after-slow.sqlite", src=AFTER, slow=1.2)
    res = _cli("compare", shared(BEFORE), slow, "--fail-on", "time>5%")
    assert res.returncode == 4, res.stderr
    hits = [ln for ln in res.stderr.splitlines() if ln.startswith("roofline: regression: time>5%:")]
    assert len(hits) == 2 and all(f"{GEMM} [device" in ln for ln in hits)  # both GPUs' launches of it
    assert all("per-launch median +2" in ln for ln in hits)  # +20% on the ~+1-2% the pair already had


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("captures")
    for i, f in enumerate((0.98, 1.00, 1.02)):
        _copy(tmp, f"base-{i}.sqlite", factor=f, seed=i, jitter=0.01)
    for i, f in enumerate((0.99, 1.01, 1.03)):
        _copy(tmp, f"cand-{i}.sqlite", factor=f, seed=10 + i, jitter=0.01)
        _copy(tmp, f"shift-{i}.sqlite", factor=f, seed=10 + i, jitter=0.01, slow=1.10)
    return tmp


def test_three_jittered_captures_a_side_give_intervals_around_0_and_pass(captures):
    res = _cli("compare", captures / "base-*.sqlite", captures / "cand-*.sqlite", "--fail-on", "time>5%",
               "--format", "json")
    assert res.returncode == 0, res.stderr
    s = json.loads(res.stdout)
    assert [len(x["runs"]) for x in s["summary"]["sides"]] == [3, 3]
    assert s["summary"]["interval"].startswith("percentile bootstrap over captures, 95%")
    both = [r for r in s["rows"] if r["presence"] == "both"]  # every identity of both sides, communication too
    kernels = [r for r in both if (r["share_base_pct"] or 0) >= 1.0]
    assert kernels and all(r["median_s_change_pct_lo"] <= 0 <= r["median_s_change_pct_hi"] for r in kernels)


def test_a_consistent_10pct_shift_in_all_three_candidates_exits_4(captures):
    res = _cli("compare", captures / "base-*.sqlite", captures / "shift-*.sqlite", "--fail-on", "time>5%")
    assert res.returncode == 4, res.stderr
    hits = [ln for ln in res.stderr.splitlines() if ln.startswith("roofline: regression:")]
    assert len(hits) == 2 and all(GEMM in ln and "3 vs 3 captures" in ln for ln in hits)


SELF = {  # one fixture per format
    "ncu-rep": "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep",
    "ncu-csv": "ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv",
    "torch-trace": "traces/torch2.6_h100_bert-small_infer_flops-flag.pt.trace.json.gz",
    "xplane": "traces/jax0.8_rocm_mi300x_gemm.xplane.pb",
    "xprof-trace": "traces/derived/jax0.8_rocm_mi300x_gemm.xprof-trace_viewer.json.gz",
    "nsys-sqlite": "nsys/nsys2024.5_a100x2_cloverleaf-mpi-cuda.sqlite",
    "rocprof-compute": "rocprof/rocprof-compute_vcopy_MI200",
    "rocprofv3": "rocprof/rocprofv3_mi350x_908_results.json.gz",
    "rocpd": None,  # tests' own fixture
}


@pytest.mark.parametrize("fmt", sorted(SELF))
def test_every_format_against_itself_changes_nothing(fmt):
    path = shared(SELF[fmt]) if SELF[fmt] else OWN / "rocprof" / "rocpd_mi210.db"
    res = _cli("compare", path, path, "--fail-on", "time>0%,total_time>0%,roof<0,bound,new,vanished",
               "--format", "json")
    s = json.loads(res.stdout)
    cand = s["summary"]["candidates"][0]
    assert cand["program"]["time_change_pct"] in (0, None) and cand["identities"]["both"] > 0
    assert cand["identities"]["baseline only"] == cand["identities"]["candidate only"] == 0
    for r in [r for r in s["rows"] if r["presence"] == "both"]:
        assert r["median_s_change_pct"] in (0, None) and r["total_norm_change_s"] == 0, r["identity"]
    assert cand["regressions_total"] == cand["improvements_total"] == 0
    # exit 0, or 4 only for a rule the format cannot feed (no roof anywhere: roof<0 unevaluable), said so
    unevaluable = s["summary"]["gate"]["unevaluated"]
    assert s["summary"]["gate"]["violations"] == []
    assert res.returncode == (4 if unevaluable else 0), res.stderr
    assert all(u.startswith("roof<0: pct_of_roof is unavailable") for u in unevaluable), unevaluable


def test_analyze_runs_shows_each_identitys_spread_across_captures(tmp_path):
    for i in range(2):
        shutil.copyfile(shared(SELF["ncu-rep"]), tmp_path / f"capture{i}.ncu-rep")
    res = _cli("analyze", tmp_path / "capture0.ncu-rep", tmp_path / "capture1.ncu-rep", "--runs", "--format", "json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert len(rows) == 4 and all(r["captures"] == 2 and r["spread_pct"] == 0 for r in rows)
    text = _cli("analyze", tmp_path / "capture0.ncu-rep", tmp_path / "capture1.ncu-rep", "--runs")
    assert text.stdout.startswith("2 capture(s) of one program") and "±0.0%  2/2  " in text.stdout
    # the folder as one side of two captures (--runs) against one of them
    cmp = _cli("compare", tmp_path, tmp_path / "capture0.ncu-rep", "--runs", "--format", "json", "--fail-on", "time>0%")
    assert cmp.returncode == 0, cmp.stderr
    s = json.loads(cmp.stdout)["summary"]
    assert [len(x["runs"]) for x in s["sides"]] == [2, 1] and s["candidates"][0]["identities"]["both"] == 4
