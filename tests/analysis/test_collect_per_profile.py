"""What to collect next (analysis/collect.py) is planned per profile: a frame of several profiles, rows interleaved,
gets each profile's own plan, as if that profile were planned alone (its longest kernels, its share of time,
its launches counted within it), in the order of the profiles' first rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import roofline
from conftest import shared
from roofline.analysis import collect

PROFILES = ["ncu/sm80_a100_mistic-cub-154launches_basic.ncu-rep", "traces/torch1.9_v100_resnet50_train_shapes.pt.trace.json.gz",
            "nsys/nsys2026.2_h100x2_mfu-before.sqlite", "ncu/sm70_v100_cutlass-cublas-gemm_roofline-metrics.csv",
            "traces/torch_rocm6.2_mi250_minitoy_train.pt.trace.json.gz"]


def _items(items: list[dict[str, object]]) -> list[dict[str, object]]:
    """Items comparable with ``==`` (rows as lists, an unknown share as a marker)."""
    return [dict(it, rows=list(np.asarray(it["rows"])),  # type: ignore[call-overload]
                 share="nan" if math.isnan(float(it["share"])) else it["share"]) for it in items]  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def profiles() -> list[pd.DataFrame]:
    return [roofline.run([shared(rel)]).frame for rel in PROFILES]


def test_each_profile_of_an_interleaved_frame_gets_the_plan_it_gets_alone(profiles):
    whole = pd.concat(profiles, ignore_index=True)
    whole = whole.iloc[np.random.default_rng(7).permutation(len(whole))].reset_index(drop=True)
    files = whole["source_file"].astype(str).to_numpy()
    expected = []
    for f in dict.fromkeys(files):  # (profiles in the order of their first row)
        rows = np.flatnonzero(files == f)
        alone = collect.plan(whole.iloc[rows].reset_index(drop=True))
        expected += [dict(it, rows=rows[it["rows"]]) for it in alone]  # type: ignore[index]
    got = collect.plan(whole)
    assert {it["source_file"] for it in got} == set(files)  # (every profile lacks something: the test has teeth)
    assert _items(got) == _items(expected)


def test_a_frame_without_source_files_is_one_profile_and_its_items_name_none(profiles):
    one = profiles[0].drop(columns="source_file")
    items = collect.plan(one)
    assert items and all("source_file" not in it for it in items)
    assert _items([{k: v for k, v in it.items() if k != "source_file"} for it in collect.plan(profiles[0])]) == _items(items)


def test_launch_skip_counts_the_kernels_launches_in_its_own_profile_only(profiles):
    """Two copies of a profile in one frame: each one's command skips as many launches as the profile alone."""
    base = profiles[0]
    twice = pd.concat([base, base.assign(source_file="copy.ncu-rep")], ignore_index=True)
    alone = [it["commands"] for it in collect.plan(base)]
    got = collect.plan(twice)
    assert [it["commands"] for it in got] == alone + alone
    assert "--launch-skip 0 " not in " ".join(alone[0])  # (the longest launch is not the first: counts matter)
