"""Pieces of a streamed Kineto read, and whole documents, that are mostly Python frames (``python_function``) are
decoded by category (``decode.ByCategory``): the frames cost an empty struct each. The read must be the one the
decode by phase gives, and any text the category decode cannot take must be decoded by phase, as before."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from roofline.ingest.torch import decode as torch_decode
from roofline.ingest.torch import stream
from roofline.ingest.torch import trace as torch_trace
from roofline.ingest.torch.decode import CATEGORIES, Checked, decode
from roofline.ingest.torch.scan import KINDS
from roofline.schema import get_provenance

PROPS = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}]


def _group(i: int) -> list[dict]:
    """An op with a launch and its kernel, six Python frames around them, a flow arrow and an instant event."""
    t, ext, corr = 1000 * i, 10 * i + 7, 10 * i + 9
    frames = [{"ph": "X", "cat": "python_function", "name": f"model.py({k}): forward", "pid": 1, "tid": 1,
               "ts": t + k, "dur": 90 - k, "args": {"Python parent id": k, "Python id": k + 1, "Python thread": 0}}
              for k in range(6)]
    return [*frames,
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 10, "dur": 50,
             "args": {"External id": ext, "Input Dims": [[64, 32], [32, 16]], "Input type": ["float", "float"]}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 20, "dur": 5,
             "args": {"correlation": corr, "External id": ext, "cbid": 211}},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": corr, "pid": 1, "tid": 1, "ts": t + 20},
            {"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "pid": 0, "tid": 7, "ts": t + 30, "dur": 8,
             "args": {"correlation": corr, "External id": ext, "device": 0, "grid": [4, 2, 1], "block": [128, 1, 1]}},
            {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": t + 12, "s": "t"}]


def _path(tmp_path, events: list[dict], name: str = "t"):
    body = ",\n".join("  " + json.dumps(e) for e in events)
    text = '{"schemaVersion": 1, "deviceProperties": ' + json.dumps(PROPS) + ', "traceEvents": [\n' + body + "\n]}"
    p = tmp_path / f"{name}.pt.trace.json.gz"
    p.write_bytes(gzip.compress(text.encode()))
    return p


@pytest.fixture
def spy(monkeypatch):
    """Small pieces; [pieces decoded by category (successfully or not), pieces decoded by phase]."""
    monkeypatch.setattr(stream, "PIECE_BYTES", 4096)
    counts = [0, 0]
    for i, name in enumerate(("_BY_CATEGORY", "_EVENTS")):
        real = getattr(stream, name)
        monkeypatch.setattr(stream, name, type("Spy", (), {"decode": staticmethod(
            lambda text, real=real, i=i: counts.__setitem__(i, counts[i] + 1) or real.decode(text))}))
    return counts


def _by_phase(p, monkeypatch):
    """The read with decoding by category switched off (every piece decoded by phase)."""
    with monkeypatch.context() as m:
        m.setattr(torch_decode, "SAMPLE_BYTES", 0)
        return torch_trace.read(p)


def _equal(got, want):
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert [{k: v for k, v in r.items() if k != "ingested_at"} for r in get_provenance(got)] == \
        [{k: v for k, v in r.items() if k != "ingested_at"} for r in get_provenance(want)]


def test_pieces_of_python_frames_are_decoded_by_category_and_read_as_by_phase(tmp_path, spy, monkeypatch):
    events = [e for i in range(60) for e in _group(i)]
    p = _path(tmp_path, events)
    got = torch_trace.read(p)
    by_category, by_phase = spy
    assert by_category >= 10 and by_phase <= 1  # (the last piece, in the outline, is decoded by phase)
    _equal(got, _by_phase(p, monkeypatch))
    assert len(got) == 60 and get_provenance(got)[0]["trace_events"] == len(events)
    parts = list(stream.events(p, {}))
    kept = [e for part in parts for e in part if e.cat in KINDS]
    assert len(kept) == 180 and all(e.ph == "X" and e.cat is CATEGORIES[CATEGORIES.index(e.cat)] for e in kept)


def test_pieces_with_few_python_frames_are_decoded_by_phase(tmp_path, spy, monkeypatch):
    events = [e for i in range(60) for e in _group(i) if e["cat"] != "python_function"]
    torch_trace.read(_path(tmp_path, events))
    assert spy[0] == 0 and spy[1] >= 5


ODD = {"a kept category in another phase": {"ph": "i", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                                            "ts": 5},
       "no category": {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
       "a category Kineto does not write": {"ph": "X", "cat": "mine", "name": "x", "pid": 1, "tid": 1, "ts": 1,
                                            "dur": 1},
       "a flow of another category": {"ph": "f", "cat": "other_flow", "id": 3, "pid": 1, "tid": 1, "ts": 2},
       "a kernel whose ts is a string": {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "30",
                                         "dur": 8, "args": {"device": 0}},
       "a launch without dur": {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                                "ts": 3, "args": {"correlation": 5}}}


@pytest.mark.parametrize("odd", ODD.values(), ids=ODD.keys())
def test_a_piece_the_category_decode_cannot_take_is_decoded_by_phase_and_so_are_the_later_ones(
        tmp_path, spy, monkeypatch, odd):
    groups = [_group(i) for i in range(60)]
    events = [e for g in groups[:20] for e in g] + [odd] + [e for g in groups[20:] for e in g]
    p = _path(tmp_path, events)
    got = torch_trace.read(p)
    by_category, by_phase = spy
    # the pieces before the odd event by category, the one holding it tried by category then by phase, every
    # later piece by phase (decoding by category is not tried again in this document)
    assert by_category >= 2 and by_phase >= 5
    _equal(got, _by_phase(p, monkeypatch))
    without = _path(tmp_path, [e for e in events if e is not odd], "without")
    pd.testing.assert_frame_equal(got.drop(columns="source_file"), _by_phase(without, monkeypatch)
                                  .drop(columns="source_file"))


def test_a_python_frame_is_not_looked_inside_when_its_piece_is_decoded_by_category(tmp_path, spy, monkeypatch):
    # as a flow or instant event never was: an invalid UTF-8 byte in a frame's name is not seen (decoded by phase,
    # the same document is damaged: a typed error)
    from roofline.errors import CorruptReportError

    events = [e for i in range(30) for e in _group(i)]
    body = ",\n".join("  " + json.dumps(e) for e in events).encode().replace(b"model.py(3)", b"model.py(\xff)", 1)
    p = tmp_path / "t.pt.trace.json.gz"
    p.write_bytes(gzip.compress(b'{"deviceProperties": ' + json.dumps(PROPS).encode() + b', "traceEvents": [\n'
                                + body + b"\n]}"))
    assert len(torch_trace.read(p)) == 30
    with pytest.raises(CorruptReportError, match="invalid UTF-8"):
        _by_phase(p, monkeypatch)


def _one_line(tmp_path, events: list[dict], name: str = "t"):
    """A document without a newline between events: no cut, its events all in the outline, decoded at once."""
    p = tmp_path / f"{name}.pt.trace.json"
    p.write_bytes(json.dumps({"schemaVersion": 1, "deviceProperties": PROPS, "traceEvents": events}).encode())
    return p


def test_a_document_without_cuts_of_python_frames_is_decoded_by_category_and_read_as_by_phase(tmp_path, spy,
                                                                                              monkeypatch):
    p = _one_line(tmp_path, [e for i in range(40) for e in _group(i)])
    got = torch_trace.read(p)
    assert spy == [1, 0]
    _equal(got, _by_phase(p, monkeypatch))


def test_a_document_without_cuts_ending_in_metadata_events_is_decoded_by_phase(tmp_path, spy, monkeypatch):
    # (decoded by category, it would fail at its end, at the first event without a category, and be decoded twice)
    meta = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": k, "args": {"name": f"t{k}"}} for k in range(3)]
    p = _one_line(tmp_path, [e for i in range(40) for e in _group(i)] + meta)
    got = torch_trace.read(p)
    assert spy == [0, 1]
    _equal(got, _by_phase(p, monkeypatch))


@pytest.mark.parametrize("odd", ODD.values(), ids=ODD.keys())
def test_a_document_without_cuts_the_category_decode_cannot_take_is_decoded_by_phase(tmp_path, spy, monkeypatch,
                                                                                     odd):
    p = _one_line(tmp_path, [e for i in range(40) for e in _group(i)] + [odd])
    got = torch_trace.read(p)
    assert spy == [0 if odd["ph"] == "M" else 1, 1]  # (a metadata event at the end: not tried by category)
    _equal(got, _by_phase(p, monkeypatch))


def test_a_whole_decode_is_by_phase(tmp_path):
    # (a document that cannot be streamed, or a capture trace: decoded by category it would fail at the metadata
    # events at its end, which have no category, and be decoded twice)
    p = _one_line(tmp_path, [e for i in range(40) for e in _group(i)])
    events, top = decode(p, p.read_bytes())
    assert events.__class__ is Checked and top["schemaVersion"] == 1
    assert not any(e.__class__.__name__.startswith("Category_") for e in events)


def test_a_bare_array_of_python_frames_is_decoded_by_phase(tmp_path):
    p = tmp_path / "t.json"
    p.write_bytes(json.dumps([e for i in range(40) for e in _group(i) if e["cat"] == "python_function"]).encode())
    events, _ = decode(p, p.read_bytes())
    assert len(events) == 240 and all(e.cat == "python_function" and e.ph == "X" for e in events)


@pytest.mark.parametrize("capture", ["traces/vllm_decode_full-graph/capture_traces/graph_capture_rank_0.pt.trace.json.gz",
                                     ("traces/capture_traces/torch_rocm7.2_mi300x_sglang-qwen3-8b_decode_hipgraph/"
                                     "bs_32_rank0.json.gz")])
def test_a_capture_trace_streamed_gives_the_graphs_and_ops_of_its_whole_decode(capture, monkeypatch):
    # (graphs.Captured reads a capture trace as read() does, by pieces: 91% of vLLM's events are Python frames)
    from conftest import shared
    from roofline.ingest.common import json_bytes
    from roofline.ingest.torch import graphs

    def summary(c):
        def f(e):
            return None if e is None else (e.cat, e.name, e.pid, e.tid, e.ts, e.dur, e.args)
        return c.batch_size, [(k, [f(o) for o in ops]) for k, ops in c.graphs], [f(o) for o in c.threads.ops]

    path = shared(capture)
    streamed = summary(graphs.Captured(path))
    monkeypatch.setattr(graphs, "all_events", lambda p: decode(p, json_bytes(p))[0])
    whole = summary(graphs.Captured(path))
    assert streamed == whole and streamed[1] and streamed[2]
