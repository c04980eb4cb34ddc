"""Kineto device ids that deviceProperties does not list (ROCm's physical numbering) (issue 31)."""

from __future__ import annotations

import gzip
import json

import roofline
from conftest import shared

RESNET = "traces/torch_rocm6.4_mi300x_8rank_resnet-act-ckpt_train_rank0.pt.trace.json.gz"


def test_rocm_kernels_on_an_unlisted_device_get_the_one_model_every_listed_device_is(tmp_path):
    """A TP4 run on GPUs 4–7: the trace lists devices 0–3 (HIP_VISIBLE_DEVICES renumbers them) and its kernels
    say device 6. Made from the shared MI300X ResNet trace (kernels on device 2, 8 devices listed) by keeping 4
    listed devices and moving every kernel to 6: every row gets the MI300X and its roofs, and a note says why."""
    doc = json.loads(gzip.decompress(shared(RESNET).read_bytes()))
    doc["deviceProperties"] = doc["deviceProperties"][:4]
    for e in doc["traceEvents"]:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "device" in e.get("args", {}):
            e["args"]["device"] = 6
    p = tmp_path / "tp4_rank2.pt.trace.json"
    p.write_text(json.dumps(doc))
    r = roofline.analyze(roofline.read(p))
    assert (r["device_name"] == "AMD Instinct MI300X").all() and (r["sm_count"] == 304).all()
    assert r["peak_dram_bytes_per_s"].eq(5.3e12).all() and r["peak_flop_per_s_fp32"].notna().all()
    note = r.attrs["roofline.provenance"][0]["device_note"]
    assert "device 6" in note and "ids 0, 1, 2, 3" in note and "same model, AMD Instinct MI300X" in note


def test_an_unlisted_device_among_different_models_stays_unknown_and_says_why(tmp_path):
    props = [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0, "numSms": 108},
             {"id": 1, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}]
    ev = [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "pid": 5, "tid": 7, "args": {"device": 5}}]
    p = tmp_path / "t.pt.trace.json"
    p.write_text(json.dumps({"traceEvents": ev, "deviceProperties": props}))
    k = roofline.read(p)
    assert k["device_name"].isna().all()
    assert "the listed devices differ" in k.attrs["roofline.provenance"][0]["device_note"]
