"""The op category of a row (analysis/categories.py): a category's patterns joined into one regex match where any
of them does, categorize() of a frame equals category_of() row by row (with a name's match looked up once), and
a pattern that cannot be joined (a back-reference) still matches as written."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from roofline.analysis import categories
from roofline.analysis.categories import Category, Table, categorize, category_of, table

NAMES = ["void gemm_kernel<t1_t2>(float*, int)", "ampere_sgemm_128x64_nn", "flash_fwd_kernel", "fmha_cutlassF",
         "layer_norm_fwd", "normal_kernel", "softmax_warp_forward", "conv2d_fprop", "convert_kernel",
         "nccl:all_reduce", "ncclDevKernel_AllGather_RING_LL", "fused_moe_kernel", "topk_softmax", "reduce_kernel",
         "at::native::sum_kernel", "clamp_min", "clamp_sum", "cub::DeviceRadixSort", "Memcpy HtoD", "cat", "concat",
         "triton_poi_fused_add_0", "triton_red_fused_sum_1", "elementwise_kernel<add>", "rotary_embedding",
         "embedding_bag", "fbgemm::quantize", "bmm", "mm", "addmm", "loop_add_fusion", "x_mha_y", "mha_fwd",
         "unknown_thing", "", "IDLE", "dot.3", "copy_if", "pad", "rope_kernel", "xcorr", "fb_gemm"]


def test_each_categorys_joined_patterns_match_where_any_of_its_patterns_does():
    searches = dict(categories._searches())
    for c in table().categories:
        for text in NAMES + [p.pattern for cat in table().categories for p in cat.patterns]:
            assert bool(searches[c.name](text)) == any(p.search(text) for p in c.patterns), (c.name, text)


def test_categorize_equals_category_of_row_by_row():
    short = [n.split("<")[0] for n in NAMES] * 3  # short names recur with different full names
    frame = pd.DataFrame({"kernel_short_name": short, "kernel_name": [f"{s} #{i}" for i, s in enumerate(short)],
                          "hlo_category": [None, "convolution", "loop fusion"] * len(NAMES),
                          "copy_kind": [None] * (len(short) - 1) + ["HtoD"]})
    got = categorize(frame).tolist()
    def text(v):
        return v if isinstance(v, str) and v else None

    want = [category_of(text(r.kernel_short_name), text(r.kernel_name), None, text(r.hlo_category),
                        copy=text(r.copy_kind) is not None) for r in frame.itertuples()]
    assert got == want
    assert {"GEMM", "attention", "normalization", "communication", "data movement", "other"} <= set(got)


@pytest.fixture
def back_reference_table(monkeypatch):
    t = table()
    odd = Category("doubled", "a letter twice",
                   (re.compile(r"x(y)z", re.IGNORECASE), re.compile(r"([a-w])\1", re.IGNORECASE)))
    monkeypatch.setattr(categories, "table", lambda: Table((odd, *t.categories), t.op_models, t.hlo))
    categories._searches.cache_clear()
    yield
    categories._searches.cache_clear()


def test_a_pattern_with_a_back_reference_keeps_its_meaning(back_reference_table):
    assert category_of("kaak") == "doubled"  # "aa": the second pattern, its \1 its own group
    assert category_of("xyz") == "doubled"
    assert category_of("kabk") != "doubled"
