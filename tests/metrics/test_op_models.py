"""Operator models against every shared TraceLens reference table, argument binding by schema name, and
the conventions that differ from TraceLens (each held to its arithmetic, as docs/traces.md states it)."""

from __future__ import annotations

import ast
import csv
import json
import math

import pytest

from conftest import SHARED, shared
from roofline.metrics.ops import cost
from roofline.metrics.ops.args import bind

TABLES = sorted(p for p in (SHARED / "traces/reference/tracelens").glob("*.csv")
                if not p.name.endswith(("unified_perf_summary.csv", "kernel_summary.csv"))) \
    if (SHARED / "traces/reference/tracelens").exists() else []
GRAPH_TABLES = sorted(p for p in (SHARED / "traces/vllm_decode_full-graph/reference-tracelens").glob("*.csv")
                      if p.name != "unified_perf_summary.csv") \
    if (SHARED / "traces/vllm_decode_full-graph/reference-tracelens").exists() else []


def _parse(text):
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)


def _rows():
    for p in TABLES + GRAPH_TABLES:
        for r in csv.DictReader(open(p, encoding="utf-8")):
            yield p, r


def _numel(s):
    return math.prod(s)


def _convention(name, r, c, ref_flops, ref_bytes):
    """The documented convention that explains a row's difference (docs/traces.md, "Differences from
    TraceLens"), checked with its arithmetic; None when none does."""
    dims, types, conc = (_parse(r[k]) for k in ("Input Dims_first", "Input type_first", "Concrete Inputs_first"))
    close = lambda a, b: abs(a - b) <= 5e-3 * max(abs(b), 1)
    if name == "aten::copy_":  # 1. a copy does no arithmetic: TraceLens counts 1 FLOP per element
        return "copy: 0 FLOP" if c.flops == 0 and close(ref_flops, _numel(dims[0])) and (
            close(c.bytes, ref_bytes) or math.isnan(ref_bytes)) else None
    if name == "aten::add" and types[1] == "Scalar":  # 2. a Python scalar is a kernel argument, not memory
        return "scalar operand" if close(c.bytes + 4, ref_bytes) else None
    if name in ("aten::sum", "aten::mean"):  # 3. TraceLens writes one output element, we the reduced shape
        size = 4 if types[0] == "float" else 2
        return "reduction output" if close(c.bytes, ref_bytes - size + c.bytes - _numel(dims[0]) * size) else None
    if name == "aten::convolution_backward":  # 4. TraceLens ignores output_mask: both gradients always
        mask = conc[-1]
        return "output_mask" if "False, True" in mask and close(2 * c.flops, ref_flops) and \
            close(2 * c.bytes, ref_bytes) else None
    if name in ("aten::layer_norm", "aten::native_layer_norm"):  # 5. layer norm: 5 FLOP/element, tensors once
        n = _numel(dims[0])
        return "layer norm" if c.flops == 5 * n and ref_flops == pytest.approx(5.75 * n, rel=1e-3) else None
    if name == "aten::native_layer_norm_backward":  # 6. no weight passed: no dgamma written
        return "layer norm backward" if close(c.flops, ref_flops) and close(c.bytes + _numel(dims[0][1:]) * 4,
                                                                            ref_bytes) else None
    if name == "aten::miopen_batch_norm_backward":  # 7. TraceLens's miopen backward: 4 FLOP, 2 tensors/element
        n = _numel(dims[0])
        return "miopen bn backward" if c.flops == 9 * n and close(ref_flops, 4 * n) else None
    if name == "sgl_kernel::rotary_embedding":  # 8. positions and their cos/sin rows are read too
        extra = _numel(dims[0]) * 8 + _numel(dims[0]) * dims[4][-1] * 2
        return "rope tables" if close(c.bytes - extra, ref_bytes) and close(c.flops, ref_flops) else None
    if name == "vllm::unified_attention_with_output":  # 9. context lengths are not in the op's arguments
        return "paged attention lengths" if math.isnan(c.flops) and "context lengths" in c.why else None
    return None


def test_every_tracelens_reference_row_matches_or_is_a_documented_convention():
    """Each reference row (GEMM, CONV fwd/bwd, SDPA, inference attention, RMSNorm, RoPE, norms, elementwise,
    reductions) modelled from the same Input Dims/type/Concrete Inputs: FLOPs and bytes within 0.5%, or the
    difference is one of the conventions of docs/traces.md, held to its arithmetic."""
    if not TABLES:
        shared("traces/reference/tracelens")
    exact, conventions, missing = 0, {}, []
    for p, r in _rows():
        name = r["name"]
        if name.startswith("pseudo_op::"):  # TraceLens' own synthesised MoE ops: no op of the trace has the name
            conventions["pseudo op"] = conventions.get("pseudo op", 0) + 1
            continue
        dims, types, conc = (_parse(r[k]) for k in ("Input Dims_first", "Input type_first", "Concrete Inputs_first"))
        ref_flops = float(r["GFLOPS_first"] or "nan") * 1e9
        ref_bytes = float(r["Data Moved (MB)_first"] or "nan") * 2**20
        c = cost(name, dims, types, conc)
        assert c is not None, (p.name, name, dims)
        if abs(c.flops - ref_flops) <= 5e-3 * max(ref_flops, 1) and abs(c.bytes - ref_bytes) <= 5e-3 * max(ref_bytes, 1):
            exact += 1
            continue
        why = _convention(name, r, c, ref_flops, ref_bytes)
        if why is None:
            missing.append((p.name, name, dims, c.flops, ref_flops, c.bytes, ref_bytes))
        else:
            conventions[why] = conventions.get(why, 0) + 1
    assert not missing, missing[:5]
    assert exact >= 170 and sum(conventions.values()) == 50, (exact, conventions)


def test_every_miopen_and_cudnn_convolution_of_the_fixtures_is_exact():
    """2·N·Cout·∏out·(Cin/groups)·∏kernel with out from the op's own stride/padding/dilation, computed here
    from the raw event args (no roofline code), for every miopen/cudnn convolution row of the traces that
    record them; miopen's padding comes before its stride (the old positional table swapped them)."""
    import gzip

    import roofline

    checked = 0
    for name in ("torch_rocm6.4_mi300x_8rank_resnet-act-ckpt_train_rank0", "torch2.6_h100_owlv2-large_infer_flops-flag_132k"):
        path = shared(f"traces/{name}.pt.trace.json.gz")
        events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
        expected = {}
        for e in events:
            if e.get("name") in ("aten::miopen_convolution", "aten::cudnn_convolution") and e.get("cat") == "cpu_op":
                a = e["args"]
                x, w = a["Input Dims"][0], a["Input Dims"][1]
                pad, stride, dil = (json.loads(a["Concrete Inputs"][i]) for i in (3, 4, 5)) \
                    if e["name"] == "aten::miopen_convolution" else (json.loads(a["Concrete Inputs"][i]) for i in (2, 3, 4))
                out = [(x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(len(x) - 2)]
                expected[a["External id"]] = 2 * x[0] * w[0] * math.prod(out) * w[1] * math.prod(w[2:])
        k = roofline.read(path)
        rows = k[k["kernel_name"].isin(["aten::miopen_convolution", "aten::cudnn_convolution"])]
        assert len(rows) > 0
        got = sorted(rows[["flop_fp32", "flop_tensor"]].sum(axis=1).tolist())
        assert set(got) <= set(float(v) for v in expected.values())
        checked += len(rows)
    assert checked > 100


def test_a_convolution_without_stride_or_padding_takes_its_output_from_its_consumer_or_nothing():
    """torch 1.9's ResNet-50: conv1 (3→64, 7×7, stride 2, pad 3 — none recorded) is 7.55 GFLOP per step,
    from batch_norm's input [32, 64, 112, 112]; assuming stride 1 / pad 0 gave 28.6. No conv row is left
    with numbers from assumed arguments: each either names its consumer or is unavailable."""
    import roofline

    k = roofline.read(shared("traces/torch1.9_v100_resnet50_train_shapes.pt.trace.json.gz"))
    conv = k[k["kernel_name"] == "aten::cudnn_convolution"]
    assert (conv["flop_fp32_source"].str.contains("output shape from the op that consumes it")
            | conv["flop_fp32_source"].str.startswith("unavailable")).all()
    assert (conv["flop_fp32"] == 2 * 32 * 64 * 112 * 112 * 3 * 49).sum() == 6  # conv1, once per step
    assert conv["flop_fp32"].max() == 2 * 32 * 64 * 112 * 112 * 3 * 49
    # torch 1.9's cuDNN backward ops: their caller's shapes, one gradient each; wgrad per step = forward
    wgrad = k[k["kernel_name"] == "aten::cudnn_convolution_backward_weight"]
    assert wgrad["flop_fp32"].notna().all() and wgrad["dram_bytes"].notna().all()
    assert wgrad["flop_fp32"].sum() == pytest.approx(conv["flop_fp32"].sum())
    dgrad = k[k["kernel_name"] == "aten::cudnn_convolution_backward_input"]
    assert dgrad["flop_fp32"].sum() == conv["flop_fp32"].sum() - 6 * 2 * 32 * 64 * 112 * 112 * 3 * 49  # no conv1 dgrad
    # ambiguous or absent consumer: unavailable with the reason, never stride 1 / pad 0
    c = cost("aten::cudnn_convolution", [[32, 3, 224, 224], [64, 3, 7, 7]] + [[]] * 7,
             ["float", "float"] + ["GenericList"] * 3 + ["Int", "Bool", "Bool", "Bool"])
    assert math.isnan(c.flops) and math.isnan(c.bytes) and "record_shapes=True records them" in c.why
    from roofline.metrics.ops import conv_out_from_consumer

    dims = [[32, 3, 224, 224], [64, 3, 7, 7]]
    assert conv_out_from_consumer(dims, [[[], []], [[32, 64, 112, 112], [64]]]) == [32, 64, 112, 112]
    assert conv_out_from_consumer(dims, [[[32, 64, 112, 112], [32, 64, 56, 56]]]) is None  # two candidates
    assert conv_out_from_consumer(dims, [[[32, 128, 112, 112]]]) is None  # not its channels
    assert conv_out_from_consumer(dims, [[[32, 64, 900, 900]]]) is None  # no stride/padding reaches it


def test_torch18_traces_without_input_type_get_flops_but_no_bytes():
    c = cost("aten::mm", [[32, 2048], [2048, 1000]], [], None)
    assert c.flops == 2 * 32 * 2048 * 1000 and math.isnan(c.bytes) and "Input type not recorded" in c.why
    c = cost("aten::cudnn_convolution", [[32, 3, 224, 224], [64, 3, 7, 7]] + [[]] * 7, [], None, [32, 64, 112, 112])
    assert c.flops == 2 * 32 * 64 * 112 * 112 * 3 * 49 and math.isnan(c.bytes)


def test_fp32_gemms_on_tf32_kernels_are_on_the_tf32_path_and_under_their_roof():
    import roofline

    a = roofline.analyze(roofline.read(shared("traces/torch_a100-80gb_16rank-nccl_rank0_shapes.pt.trace.json.gz")))
    tf32 = a[a["mangled_name"].str.contains("tensorop_s1688|tf32", regex=True, na=False)
             & a["kernel_name"].isin(["aten::addmm", "aten::mm", "aten::bmm", "aten::linear"])]
    assert len(tf32) >= 10
    assert (tf32["tensor_path"] == "tf32").all() and (tf32["flop_tensor"] > 0).all() and (tf32["flop_fp32"] == 0).all()
    assert tf32["flop_tensor_source"].str.contains("kernel name").all()
    assert not tf32["over_roof"].fillna(False).astype(bool).any()
    sgemm = a[a["mangled_name"].str.startswith("ampere_sgemm", na=False) & (a["attribution"] == "op")]
    assert len(sgemm) > 0 and (sgemm["flop_fp32"] > 0).all() and sgemm["tensor_path"].isna().all()  # CUDA-core SGEMM stays fp32


def test_arguments_bind_by_name_across_overloads_and_torch_versions():
    add = bind("aten::add", [[4], [4], []], ["float", "float", "Scalar"], None)
    assert add.overload == "Tensor" and add.tensor("other") == ([4], 4)
    assert bind("aten::add", [[1], [], []], ["long int", "Scalar", "Scalar"], None).overload == "Scalar"
    assert bind("aten::add", [[4], [4], [], [4]], ["float", "float", "Scalar", "float"], None).overload == "out"
    # torch 1.9's cudnn_convolution (no bias) and 1.8's deprecated overload with one: told apart by the types
    assert bind("aten::cudnn_convolution", [[1, 3, 8, 8], [4, 3, 3, 3]] + [[]] * 7,
                ["float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool", "Bool", "Bool"],
                None).overload == ""
    assert bind("aten::cudnn_convolution", [[1, 3, 8, 8], [4, 3, 3, 3], [4]] + [[]] * 6,
                ["float", "float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool", "Bool"],
                None).overload == "deprecated"
    # miopen: padding before stride
    c = bind("aten::miopen_convolution", [[10, 256, 14, 14], [512, 256, 3, 3]] + [[]] * 7,
             ["c10::BFloat16"] * 2 + ["", "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar"],
             ["", "", "", "[1, 1]", "[2, 2]", "[1, 1]", "1", "False", "False"])
    assert c.ints("padding") == [1, 1] and c.ints("stride") == [2, 2]
    # torch 2.6 recorded _flash_attention_forward with 15 arguments, torch 2.13 has 17: the leading ones bind
    f = bind("aten::_flash_attention_forward", [[1, 128, 8, 64]] * 3 + [[]] * 12,
             ["c10::BFloat16"] * 3 + [""] * 2 + ["Scalar"] * 5 + ["Scalar"] * 3 + [""] * 2, None)
    assert f is not None and "first 15 of 17" in f.overload
    # an Int scalar is not an int32 tensor: Kineto's type names are case-sensitive
    assert bind("aten::copy_", [[15], [15], []], ["int", "int", "Scalar"], None).tensor("src") == ([15], 4)


def test_in_place_out_and_copies_move_bytes_as_the_hardware_does():
    n = 1024
    assert cost("aten::add_", [[n], [n], []], ["float", "float", "Scalar"]).bytes == 3 * n * 4  # self read + written
    assert cost("aten::mul", [[n], [n], [n]], ["float", "float", "float"]).bytes == 3 * n * 4  # out= written once
    assert cost("aten::copy_", [[n], [n], []], ["c10::BFloat16", "float", "Scalar"]).bytes == n * (4 + 2)
    assert cost("aten::relu_", [[n]], ["float"]).bytes == 2 * n * 4


def test_inference_fused_ops():
    """SGLang/aiter/vLLM ops of the shared traces, by hand."""
    t, h = 15360, 4096
    c = cost("aiter::rmsnorm", [[t, h], [t, h], [h], []], ["c10::BFloat16"] * 3 + ["Scalar"], ["", "", "", "1e-06"])
    assert c.flops == 4 * t * h and c.bytes == (2 * t * h + h) * 2
    c = cost("aiter::add_rmsnorm", [[t, h]] * 4 + [[h], []], ["c10::BFloat16"] * 5 + ["Scalar"], None)
    assert c.flops == 5 * t * h and c.bytes == (4 * t * h + h) * 2
    c = cost("sgl_kernel::silu_and_mul", [[t, 12288], [t, 24576]], ["c10::BFloat16"] * 2, None)
    assert c.flops == 5 * t * 12288 and c.bytes == 3 * t * 12288 * 2
    c = cost("aiter::mha_batch_prefill", [[15360, 32, 128], [835874, 8, 128], [835874, 8, 128], [16], [16], [15616]]
             + [[]] * 24, ["c10::BFloat16"] * 3 + ["int"] * 3 + ["Scalar"] * 12 + [""] * 12,
             ["", "", "", "", "", "", "1024", "1024", "0.", "0.088", "0.", "False", "True", "-1", "-1", "0", "False",
              "False"] + [""] * 12)
    assert c.flops == 15 * 2 * 32 * 1024 * 1024 * 256 // 2 and c.tensor_path == "bf16"
    # the bounds do not fix the lengths: unavailable, not guessed
    c = cost("aiter::mha_batch_prefill", [[15000, 32, 128], [835874, 8, 128], [835874, 8, 128], [16], [16], [15616]]
             + [[]] * 24, ["c10::BFloat16"] * 3 + ["int"] * 3 + ["Scalar"] * 12 + [""] * 12,
             ["", "", "", "", "", "", "1024", "1024", "0.", "0.088", "0.", "False", "True", "-1", "-1", "0", "False",
              "False"] + [""] * 12)
    assert math.isnan(c.flops) and "do not fix them" in c.why


@pytest.mark.parametrize("op,dims,types,concrete,flops,nbytes", [
    ("aten::upsample_nearest2d", [[1, 3, 8, 8], [], []], ["float", "ScalarList", ""], ["", "[16, 16]", ""],
     0, (3 * 64 + 3 * 256) * 4),
    ("aten::native_dropout", [[4, 8], [], []], ["float", "Double", ""], ["", "0.1", ""], 64, 2 * 128 + 32),
    ("aten::index_select", [[100, 16], [], [10]], ["float", "Scalar", "long int"], ["", "0", ""], 0,
     10 * 8 + 2 * 10 * 16 * 4),
    ("aten::scatter_add_", [[100, 16], [], [10, 16], [10, 16]], ["float", "Scalar", "long int", "float"],
     ["", "0", "", ""], 160, 160 * 4 + 160 * 8 + 2 * 160 * 4),
    ("aten::_softmax_backward_data", [[4, 8], [4, 8], [], []], ["float", "float", "Scalar", "Scalar"],
     ["", "", "-1", "6"], 4 * 32, 3 * 32 * 4),
    ("aten::native_group_norm", [[2, 8, 4, 4], [8], [8], [], [], [], [], []],
     ["float"] * 3 + ["Scalar"] * 5, None, 5 * 256, (2 * 256 + 16) * 4),
])
def test_modern_workload_ops(op, dims, types, concrete, flops, nbytes):
    c = cost(op, dims, types, concrete)
    assert c is not None and c.flops == flops and c.bytes == nbytes, c


def test_every_op_of_a_real_torch_213_trace_binds_to_a_schema():
    """tests/fixtures/torch2.13_cpu_ops.pt.trace.json.gz (a real torch.profiler trace of the modelled ops,
    see tests/fixtures/README.md): every recorded call of a modelled op binds to one of its schemas, and
    the models read what they need by name (conv2d's stride/padding, sdpa's is_causal...)."""
    import gzip

    from conftest import OWN
    from roofline.metrics.ops import MODELS

    doc = json.loads(gzip.decompress((OWN / "torch2.13_cpu_ops.pt.trace.json.gz").read_bytes()))
    seen = set()
    for e in doc["traceEvents"]:
        a = e.get("args", {})
        if e["name"] not in MODELS or "Input Dims" not in a:
            continue
        c = cost(e["name"], a["Input Dims"], a["Input type"], a.get("Concrete Inputs"))
        assert c is None or "match no schema" not in c.why, (e["name"], a["Input Dims"], a["Input type"])
        seen.add(e["name"])
        if e["name"] == "aten::conv2d":  # 2x3x16x16, 8x3x3x3, stride 2, pad 1 -> 8x8
            assert c.flops == 2 * 2 * 8 * 64 * 3 * 9 and "stride=[2, 2] pad=[1, 1]" in c.formula
        if e["name"] == "aten::upsample_nearest2d" and c.bytes == c.bytes:
            assert c.bytes == (2 * 8 * 64 + 2 * 8 * 256) * 4
        if e["name"] == "aten::cat":
            assert math.isnan(c.bytes) and "TensorList" in c.why
    assert {"aten::conv2d", "aten::convolution_backward", "aten::native_group_norm", "aten::add_", "aten::mul",
            "aten::embedding_bag", "aten::index_put_", "aten::scatter_add_", "aten::dropout",
            "aten::_scaled_dot_product_flash_attention_for_cpu", "aten::upsample_bilinear2d"} <= seen


def test_the_shipped_schemas_are_what_the_generator_writes(tmp_path, monkeypatch):
    """tools/gen_aten_schemas.py run against the installed torch rewrites the shipped file unchanged (only
    when that torch is the recorded version)."""
    torch = pytest.importorskip("torch")
    import importlib.util

    from roofline.metrics.ops.args import schemas

    if schemas()["torch"] != torch.__version__:
        pytest.skip(f"schemas were generated with torch {schemas()['torch']}, {torch.__version__} is installed")
    from conftest import REPO

    spec = importlib.util.spec_from_file_location("gen", REPO / "tools/gen_aten_schemas.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    monkeypatch.setattr(gen, "OUT", tmp_path / "s.json")
    from roofline.metrics.ops import modelled_ops

    gen.main(modelled_ops())
    assert json.loads((tmp_path / "s.json").read_text()) == schemas()


def test_op_rows_show_their_inputs_and_the_summary_lists_unmodelled_ops():
    import roofline

    k = roofline.read(shared("traces/torch_rocm6.4_mi300x_8rank_resnet-act-ckpt_train_rank0.pt.trace.json.gz"))
    r = k[k["kernel_name"] == "aten::miopen_convolution"].iloc[0]
    assert json.loads(r["op_input_dims"])[:2] == [[10, 3, 224, 224], [64, 3, 7, 7]]
    assert json.loads(r["op_input_types"])[0] == "c10::BFloat16"
    assert r["op_args"] == "aten::miopen_convolution(self, weight, stride=[2, 2], padding=[3, 3], dilation=[1, 1])"
    assert r["precision_evidence"].startswith("the dtype (bf16")
    missing = k.attrs["roofline.provenance"][0]["unmodelled_ops"]
    assert missing and missing == sorted(missing, key=lambda m: -m["gpu_time_share"])
    assert all(0 < m["gpu_time_share"] <= 1 and m["reason"] for m in missing)


@pytest.mark.parametrize("case", ["conv", "grouped", "transposed", "strided3d", "mm", "bmm", "addmm"])
def test_flops_equal_torch_flop_counter_on_recorded_calls(case):
    """The independent count: torch.utils.flop_counter.FlopCounterMode on the same call, profiled on CPU
    with record_shapes=True; our model reads the profiler's own record of that call."""
    torch = pytest.importorskip("torch")
    import tempfile
    from pathlib import Path

    from torch.profiler import ProfilerActivity, profile
    from torch.utils.flop_counter import FlopCounterMode

    F = torch.nn.functional
    calls = {
        "conv": ("aten::convolution", lambda: F.conv2d(torch.randn(2, 8, 15, 15), torch.randn(16, 8, 3, 3), stride=2,
                                                      padding=1, dilation=1)),
        "grouped": ("aten::convolution", lambda: F.conv2d(torch.randn(2, 8, 9, 9), torch.randn(16, 2, 3, 3), groups=4)),
        "transposed": ("aten::convolution", lambda: F.conv_transpose2d(torch.randn(1, 8, 5, 5), torch.randn(8, 4, 3, 3),
                                                                      stride=2, padding=1)),
        "strided3d": ("aten::convolution", lambda: F.conv3d(torch.randn(1, 2, 6, 7, 8), torch.randn(3, 2, 2, 3, 2),
                                                           stride=(1, 2, 3), padding=(1, 0, 1))),
        "mm": ("aten::mm", lambda: torch.randn(7, 5) @ torch.randn(5, 3)),
        "bmm": ("aten::bmm", lambda: torch.bmm(torch.randn(4, 7, 5), torch.randn(4, 5, 3))),
        "addmm": ("aten::addmm", lambda: torch.addmm(torch.randn(3), torch.randn(7, 5), torch.randn(5, 3))),
    }
    op, fn = calls[case]
    with FlopCounterMode(display=False) as counter:
        fn()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    with tempfile.TemporaryDirectory() as d:
        prof.export_chrome_trace(str(Path(d) / "t.json"))
        events = json.loads((Path(d) / "t.json").read_text())["traceEvents"]
    e = next(e for e in events if e.get("name") == op)
    c = cost(op, e["args"]["Input Dims"], e["args"]["Input type"], e["args"]["Concrete Inputs"])
    bias = 7 * 3 if case == "addmm" else 0  # TraceLens' bias term, which flop_counter leaves out
    assert c.flops - bias == counter.get_total_flops(), (c, counter.get_total_flops())


def test_flash_varlen_grouped_mm_and_half_on_cuda_cores():
    # flash-attn varlen: 4 sequences of 256 tokens (Σq = 4·max_q, max_k = max_q), 8 heads of 64, causal
    c = cost("aten::_flash_attention_forward", [[1024, 8, 64]] * 3 + [[5], [5]] + [[]] * 10,
             ["c10::BFloat16"] * 3 + ["int", "int"] + ["Scalar"] * 5 + [""] * 5,
             ["", "", "", "", "", "256", "256", "0.", "True", "False", "", "", "", "", ""])
    assert c.flops == 4 * 2 * 8 * 256 * 256 * 128 // 2 and c.bytes == 4 * 1024 * 8 * 64 * 2
    g = cost("aten::_grouped_mm", [[512, 2048], [8, 2048, 1024], [8], [], []],
             ["c10::BFloat16"] * 2 + ["int", "", "Scalar"], None)
    assert g.flops == 2 * 512 * 2048 * 1024 and math.isnan(g.bytes) and "offs" in g.why
    from roofline.metrics.kernel_precision import decide

    assert decide("tensor", "fp16", ("volta_hgemm_128x64_nn",))[:2] == ("fp16", None)
    assert decide("tensor", "fp16", ("volta_h884gemm_128x64_nn",)) is None  # a tensor-core kernel: the dtype stands
    assert decide("fp32", None, ("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n",))[:2] == ("tensor", "tf32")
    assert decide("fp32", None, ("ampere_sgemm_128x64_nn",)) is None


def _ref(table, name=None):
    p = shared(f"traces/vllm_decode_full-graph/reference-tracelens/{table}")  # skips without ../shared
    return [r for r in csv.DictReader(open(p, encoding="utf-8")) if name is None or r["name"] == name]


def test_the_graph_case_paged_attention_rows_equal_tracelens():
    """vLLM unified_attention_with_output in the graph case: its context lengths come from the iteration
    annotation the graph launch ran under (execute_32_context_0(...)_generation_32(sq32sk55086sqsq32sqsk55086));
    TraceLens reads the same (g_sk = 55086): FLOPs 64·2·55086·(64+64) and bytes (q, o, own k/v of 32 tokens,
    cached k/v of 55086 − 32) agree within 0.5% on every one of the 24 layers."""
    import roofline

    k = roofline.read(shared("traces/vllm_decode_full-graph/graph_execution.pt.trace.json.gz"))
    rows = k[k["kernel_name"] == "vllm::unified_attention_with_output"]
    refs = _ref("InferenceAttention_fwd.csv")
    assert len(rows) == 24 and len(refs) == 2
    for r in refs:
        assert (r["param: g_sk"], r["param: g_sq"], r["param: N_KV"]) == ("55086", "32", "32")
        ref_flops, ref_bytes = float(r["GFLOPS_first"]) * 1e9, float(r["Data Moved (MB)_first"]) * 2**20
        assert ref_flops == pytest.approx(64 * 2 * 55086 * (64 + 64), rel=1e-9)
        assert ref_bytes == pytest.approx((32 * 64 * 128 + 32 * 8 * 128 + (55086 - 32) * 8 * 128) * 2, rel=1e-9)
        assert rows["flop_tensor"].tolist() == pytest.approx([ref_flops] * 24, rel=5e-3)
        assert rows["dram_bytes"].tolist() == pytest.approx([ref_bytes] * 24, rel=5e-3)
    assert rows["dram_bytes_source"].str.contains("upper bound for a sliding-window layer").all()


def test_the_graph_case_moe_rows_differ_from_tracelens_by_the_documented_conventions():
    """docs/traces.md, "Differences from TraceLens" 10–11: TraceLens's pseudo_op::moe_triton_unfused_up/down
    take I = H = 3072 (not in its trace), E_active = E·(1 − (1 − k/E)^T) = 31.55 experts (uniform routing)
    and 0.5 B per fp4 weight (no scales); ours: I = 2944 from the buffers, min(E, T·k) = 32 experts (an upper
    bound) and 4.25 bit per weight (e8m0 scales). Their arithmetic reproduces their CSV within 0.5%, and
    ours converts into theirs by exactly those three factors."""
    import roofline

    up, down = _ref("MoE_unfused_fwd.csv", "pseudo_op::moe_triton_unfused_up")[0], \
        _ref("MoE_unfused_fwd.csv", "pseudo_op::moe_triton_unfused_down")[0]
    t, h, e, kk = 32, 3072, 32, 4
    i_tl = h
    e_active = e * (1 - ((e - kk) / e) ** t)
    tl_up = t * h * 2 + e_active * 2 * h * i_tl * 0.5 + t * i_tl * kk * 2
    tl_down = t * i_tl * kk * 2 + e_active * i_tl * h * 0.5 + t * h * 2
    assert tl_up == pytest.approx(float(up["Data Moved (MB)_first"]) * 2**20, rel=5e-3)
    assert tl_down == pytest.approx(float(down["Data Moved (MB)_first"]) * 2**20, rel=5e-3)
    tl_flops = (float(up["GFLOPS_first"]) + float(down["GFLOPS_first"])) * 1e9
    assert tl_flops == pytest.approx(2 * t * kk * h * 2 * i_tl + 2 * t * kk * i_tl * h, rel=5e-3)

    k = roofline.read(shared("traces/vllm_decode_full-graph/graph_execution.pt.trace.json.gz"))
    moe = k[k["kernel_name"] == "vllm::moe_forward"].iloc[0]
    i = 2944
    activations = (2 * t * h + 2 * t * kk * i + 2 * t * kk * h) * 2
    weights = moe["dram_bytes"] - activations
    assert weights == 32 * 3 * h * i * (0.5 + 1 / 32)  # all 32 experts, 4.25 bit per weight
    tl_weights = tl_up + tl_down - (t * h * 2 + t * i_tl * kk * 2) * 2
    assert weights * (e_active / 32) * (0.5 / (0.5 + 1 / 32)) * (i_tl / i) == pytest.approx(tl_weights, rel=5e-3)
    assert moe["flop_tensor"] * i_tl / i == pytest.approx(tl_flops, rel=5e-3)


def test_the_graph_case_inductor_rows_differ_from_tracelens_by_the_documented_convention():
    """docs/traces.md, "Differences from TraceLens" 12: both give Inductor copies/pads 0 FLOP; TraceLens's
    trace-args Triton model sizes only ``c10::``-spelled dtypes (the fp32 buffer, recorded as "float", counts
    0) and adds the first buffer × xnumel to every pointwise kernel (an in-out write it assumes)."""
    import roofline

    refs = {r["name"]: r for r in _ref("unified_perf_summary.csv")}
    k = roofline.read(shared("traces/vllm_decode_full-graph/graph_execution.pt.trace.json.gz"))
    for name, ours, theirs in (
            ("triton_poi_fused__to_copy_1", 131072 * 64 * (4 + 2), 131072 * 64 * 2 + 0 * 8388608),
            ("triton_poi_fused_constant_pad_nd_moe_forward_0", 32 * 2880 * 2 + 32 * 3072 * 2,
             32 * 2880 * 2 + 32 * 3072 * 2 + 2 * 98304)):
        rows = k[k["kernel_name"] == name]
        assert len(rows) > 0 and (rows["dram_bytes"] == ours).all()
        assert (rows[["flop_fp64", "flop_fp32", "flop_fp16", "flop_tensor"]].sum(axis=1) == 0).all()
        assert float(refs[name]["GFLOPS"]) == 0
        assert float(refs[name]["Data Moved (MB)"]) * 2**20 == pytest.approx(theirs, rel=5e-3)
