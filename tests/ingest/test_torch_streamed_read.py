"""read() frees the JSON and the unused events before building rows: same frame as building from kept copies;
large documents are decoded and scanned in pieces, with the same frame as a whole decode."""

from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest

from roofline.errors import CorruptReportError
from roofline.ingest import common
from roofline.ingest.common import json_bytes
from roofline.ingest.torch import stream as torch_trace_stream
from roofline.ingest.torch import trace as torch_trace
from roofline.ingest.torch.decode import CATEGORIES, RANGE_COUNTERS, UNKNOWN_PHASE, Checked, decode
from roofline.ingest.torch.scan import KINDS, Scan
from roofline.ingest.torch.stream import Uncut
from roofline.schema import get_provenance

OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10, "dur": 50, "pid": 1, "tid": 1,
      "args": {"External id": 7, "Input Dims": [[64, 32], [32, 16]], "Input type": ["float", "float"]}}
INNER = {"ph": "X", "cat": "cpu_op", "name": "aten::add_", "ts": 100, "dur": 20, "pid": 1, "tid": 1,
         "args": {"External id": 8}}
LAUNCH = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 20, "dur": 5, "pid": 1, "tid": 1,
          "args": {"correlation": 99, "External id": 7}}
# a launch whose External id names no op: linked to the innermost op holding it on its thread (INNER)
LAUNCH2 = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 105, "dur": 5, "pid": 1, "tid": 1,
           "args": {"correlation": 100, "External id": 12345}}
KERNEL = {"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "ts": 30, "dur": 8, "pid": 0, "tid": 7,
          "args": {"correlation": 99, "External id": 7, "device": 0, "grid": [4, 2, 1], "block": [128, 1, 1]}}
KERNEL2 = {"ph": "X", "cat": "kernel", "name": "add_kernel", "ts": 110, "dur": 3, "pid": 0, "tid": 7,
           "args": {"correlation": 100, "device": 0, "grid": [1, 1, 1], "block": [64, 1, 1]}}
UNUSED = [{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 99, "ts": 20, "pid": 1, "tid": 1},
          {"ph": "X", "cat": "python_function", "name": "torch/nn/modules/linear.py(114): forward", "ts": 5,
           "dur": 60, "pid": 1, "tid": 1, "args": {"Python id": 3}},
          {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 12, "pid": 1, "tid": 1, "s": "t"}]
RANGE = {"ph": "X", "cat": "cuda_profiler_range", "name": "range_0", "ts": 200, "dur": 10, "pid": 0, "tid": 0,
         "args": {c: 10 * (i + 1) for i, c in enumerate(RANGE_COUNTERS)}}
PROPS = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}]


def _both(tmp_path, events):
    p = tmp_path / "t.pt.trace.json"
    p.write_bytes(json.dumps({"traceEvents": events, "deviceProperties": PROPS}).encode())
    got = torch_trace.read(p)  # the holder path: JSON and unused events dropped after the scan
    raw = json_bytes(p)
    decoded, top = decode(p, raw)
    kept = torch_trace._build(p, raw, [decoded], top)  # the bytes path: nothing dropped
    assert len(decoded) == len(events)  # (the bytes path leaves the caller's events alone)
    return got, kept


def _same(got, kept):
    pd.testing.assert_frame_equal(got, kept)
    meta, want = get_provenance(got)[0], get_provenance(kept)[0]
    assert {k: v for k, v in meta.items() if k != "ingested_at"} == \
        {k: v for k, v in want.items() if k != "ingested_at"}


def test_read_drops_nothing_it_needs(tmp_path):
    events = [OP, INNER, LAUNCH, LAUNCH2, KERNEL, KERNEL2, *UNUSED]
    got, kept = _both(tmp_path, events)
    _same(got, kept)
    assert get_provenance(got)[0]["trace_events"] == len(events)
    assert list(got["kernel_name"]) == ["aten::mm", "aten::add_"]
    assert list(got["mangled_name"]) == ["sgemm_kernel", "add_kernel"]
    assert got["flop_fp32"].iloc[0] == 2 * 64 * 32 * 16


def test_read_keeps_the_json_for_range_events(tmp_path):
    got, kept = _both(tmp_path, [OP, LAUNCH, KERNEL, RANGE, *UNUSED])
    _same(got, kept)
    r = got[got["attribution"] == "measured: CUPTI range profiler"]
    assert len(r) == 1
    # FLOPs = add + mul + 2·fma per precision: counters 10..90 in RANGE_COUNTERS order (d, f, h); a half
    # instruction is counted as packed half2, 2 lanes (metrics/flops.py WEIGHTS, as ncu's roofline does)
    assert r["flop_fp64"].iloc[0] == 10 + 20 + 2 * 30
    assert r["flop_fp32"].iloc[0] == 40 + 50 + 2 * 60
    assert r["flop_fp16"].iloc[0] == 2 * (70 + 80 + 2 * 90)


def _kineto(events, top=None):
    """JSON laid out as Kineto writes it: each event a block of lines, events separated by ``},\n  {``."""
    body = ",\n".join("  " + json.dumps(e) for e in events)
    head = json.dumps(top or {"schemaVersion": 1, "deviceProperties": PROPS})[:-1]
    return (head + ', "traceEvents": [\n' + body + '\n], "traceName": "t"}').encode()


def _many(n):
    """n copies of the linked op/launch/kernel group (distinct ids and times) with unused events between."""
    out = []
    for i in range(n):
        t = 1000 * i
        out += [{**OP, "ts": t + 10, "args": {**OP["args"], "External id": 10 * i + 7}},
                {**LAUNCH, "ts": t + 20, "args": {"correlation": 10 * i + 9, "External id": 10 * i + 7}},
                {**KERNEL, "ts": t + 30, "args": {**KERNEL["args"], "correlation": 10 * i + 9}},
                *UNUSED]
    return out


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(torch_trace_stream, "PIECE_BYTES", 4096)  # a few dozen events per piece


def _whole(p):
    raw = json_bytes(p)
    events, top = decode(p, raw)
    return torch_trace._build(p, raw, [events], top), len(events)


def _streamed(p):
    top = {}
    return list(torch_trace_stream.events(p, top)), top


def _write(tmp_path, text, gz):
    p = tmp_path / ("t.pt.trace.json.gz" if gz else "t.pt.trace.json")
    p.write_bytes(gzip.compress(text) if gz else text)
    return p


@pytest.fixture
def gunzips(monkeypatch):
    """[opened, closed, pieces] counts of the gunzip's generators: every one a read starts must be closed (its file
    with it) by the time the read ends, however it ends."""
    from roofline.ingest import common

    counts = [0, 0, 0]  # opened, closed, pieces inflated
    real = common.gunzip_pieces

    def watched(*args, **kwargs):
        counts[0] += 1
        try:
            for piece in real(*args, **kwargs):
                counts[2] += 1
                yield piece
        finally:
            counts[1] += 1

    monkeypatch.setattr(common, "gunzip_pieces", watched)
    return counts


def _all_closed(counts, gz):
    return counts[0] == counts[1] and (counts[0] > 0) == gz


def _read_whole_after_uncut(p, gunzips, rows):
    """The streamed read of ``p`` stops with Uncut, its gunzip closed; read() then gives the whole decode's frame."""
    with pytest.raises(Uncut):
        _streamed(p)
    assert _all_closed(gunzips, True)
    got = torch_trace.read(p)
    _same(got, _whole(p)[0])
    assert len(got) == rows


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("layout", ["kineto", "indent"])
def test_pieces_read_as_the_whole_document(tmp_path, small_pieces, layout, gz, gunzips):
    events = _many(300)
    doc = {"schemaVersion": 1, "deviceProperties": PROPS, "traceEvents": events, "distributedInfo": {"rank": 3}}
    p = _write(tmp_path, _kineto(events, {k: v for k, v in doc.items() if k != "traceEvents"}) if layout == "kineto"
               else json.dumps(doc, indent=2).encode(), gz)  # (indent: every brace on its own line)
    parts, top = _streamed(p)
    assert len(parts) > 5 and sum(map(len, parts)) == len(events)
    # events of other phases than "X" (flow arrows, instants) decode to empty structs: their phase only
    assert [(e.ph, e.ts) for part in parts for e in part] == \
        [(e["ph"], e.get("ts") if e["ph"] == "X" else None) for e in events]
    assert top["distributedInfo"] == {"rank": 3} and top["deviceProperties"] == PROPS
    got = torch_trace.read(p)
    want, n = _whole(p)
    _same(got, want)
    assert len(got) == 300 and set(got["rank"]) == {3}
    assert get_provenance(got)[0]["trace_events"] == n == len(events)
    assert _all_closed(gunzips, gz)


def test_a_cut_inside_an_event_falls_back_to_the_whole_decode(tmp_path, monkeypatch, gunzips):
    # an event whose args hold objects laid out one per line: a `},\n {` inside it, where a piece cannot end
    odd = {**UNUSED[1], "args": {"frames": [{"a": 1}, {"b": 2}]}}
    events = _many(300)
    events.insert(len(events) // 2, odd)
    text = _kineto(events).replace(b'{"a": 1}, {"b": 2}', b'{"a": 1},\n      {"b": 2}')
    end = text.index(b'{"b": 2}') + 1  # the second piece of text ends just after that separator
    if end % 2:
        text, end = b" " + text, end + 1
    monkeypatch.setattr(torch_trace_stream, "PIECE_BYTES", end // 2)
    _read_whole_after_uncut(_write(tmp_path, text, gz=True), gunzips, 300)


def test_a_nested_traceevents_array_is_not_cut(tmp_path, small_pieces):
    # the first "traceEvents": [ { in the text is a field of another object: the outline's top-level array
    # is then not the one the pieces came from, and the document is decoded whole
    decoy = [{"ph": "X", "cat": "kernel", "name": f"decoy{i}"} for i in range(300)]
    body = ",\n".join("  " + json.dumps(e) for e in _many(50))
    inner = ",\n".join("    " + json.dumps(e) for e in decoy)
    text = ('{"metadata": {"traceEvents": [\n' + inner + '\n]}, "deviceProperties": ' + json.dumps(PROPS)
            + ', "traceEvents": [\n' + body + "\n]}").encode()
    p = _write(tmp_path, text, gz=False)
    with pytest.raises(Uncut):
        _streamed(p)
    got = torch_trace.read(p)
    assert not got["kernel_name"].str.startswith("decoy").any() and len(got) == 50


@pytest.mark.parametrize("gz", [False, True])
def test_a_damaged_piece_is_a_typed_error(tmp_path, small_pieces, gz, gunzips):
    text = _kineto(_many(300))
    middle = len(text) // 2
    p = _write(tmp_path, text[:middle] + b"\x00garbage" + text[middle:], gz)
    with pytest.raises(CorruptReportError, match="not valid JSON"):
        torch_trace.read(p)
    assert _all_closed(gunzips, gz)


def test_a_truncated_gzip_is_a_typed_error_after_some_pieces(tmp_path, small_pieces, gunzips):
    p = _write(tmp_path, _kineto(_many(300)), gz=True)
    p.write_bytes(p.read_bytes()[:-2000])
    with pytest.raises(CorruptReportError, match="truncated"):
        torch_trace.read(p)
    assert _all_closed(gunzips, True)


def test_an_error_while_scanning_closes_the_gunzip(tmp_path, small_pieces, monkeypatch, gunzips):
    p = _write(tmp_path, _kineto(_many(2000)), gz=True)
    calls = []
    scan_add = torch_trace.Scan.add

    def failing(self, events):  # (a fault injected into the second piece's scan)
        calls.append(len(events))
        if len(calls) == 2:
            raise RuntimeError("injected")
        scan_add(self, events)

    monkeypatch.setattr(torch_trace.Scan, "add", failing)
    with pytest.raises(RuntimeError, match="injected") as raised:
        torch_trace.read(p)
    # (the traceback, still held here, holds read()'s frame: the gunzip is closed without waiting for it to go)
    assert len(calls) == 2 and _all_closed(gunzips, True) and raised.tb is not None


@pytest.mark.parametrize("gz", [False, True])
def test_a_long_head_before_the_events_is_read_across_pieces(tmp_path, small_pieces, gz):
    events = _many(100)
    top = {"metadata": {"note": "x" * 20000}, "deviceProperties": PROPS}  # five pieces before traceEvents
    p = _write(tmp_path, _kineto(events, top), gz)
    parts, got_top = _streamed(p)
    assert sum(map(len, parts)) == len(events) and got_top["deviceProperties"] == PROPS
    _same(torch_trace.read(p), _whole(p)[0])


def test_no_events_key_within_the_head_limit_reads_whole(tmp_path, small_pieces, monkeypatch, gunzips):
    monkeypatch.setattr(torch_trace_stream, "HEAD_LIMIT", 10000)
    events = _many(100)
    p = _write(tmp_path, _kineto(events, {"metadata": {"note": "x" * 20000}, "deviceProperties": PROPS}), gz=True)
    _read_whole_after_uncut(p, gunzips, 100)


def test_a_bare_array_is_decoded_whole_from_its_first_piece(tmp_path, small_pieces, gunzips):
    events = _many(200)
    p = _write(tmp_path, ("[\n" + ",\n".join("  " + json.dumps(e) for e in events) + "\n]").encode(), gz=True)
    stream = torch_trace_stream.events(p, {})
    with pytest.raises(Uncut):
        next(stream)  # known from the first bytes: the rest is not inflated before the whole read
    assert gunzips[:3] == [1, 1, 1] and len(json_bytes(p)) > 20 * 4096
    got = torch_trace.read(p)
    _same(got, _whole(p)[0])
    assert len(got) == 200 and _all_closed(gunzips, True)


def test_a_duplicate_traceevents_key_is_decoded_whole(tmp_path, small_pieces):
    # the whole decode has its own rules for a repeated key (a typed decode fails on the first value and the
    # generic one keeps the last): the streamed read leaves such a document to it
    events = _many(100)
    p = _write(tmp_path, _kineto(events).replace(b'{"schemaVersion"', b'{"traceEvents": null, "schemaVersion"', 1),
               gz=True)
    with pytest.raises(Uncut):
        _streamed(p)
    _same(torch_trace.read(p), _whole(p)[0])


def test_a_gzip_of_many_small_members_is_read_in_full_pieces(tmp_path, small_pieces, monkeypatch):
    # 300-byte members (like `cat a.gz b.gz ...`) inflate in 300-byte outputs: the head is searched once per
    # piece's worth of text, and pieces are decoded once a piece's worth is waiting, not per output
    text = _kineto(_many(200), {"metadata": {"note": "x" * 20000}, "deviceProperties": PROPS})
    p = tmp_path / "t.pt.trace.json.gz"
    p.write_bytes(b"".join(gzip.compress(text[i:i + 300]) for i in range(0, len(text), 300)))
    searches = []
    real_start = torch_trace_stream._start
    monkeypatch.setattr(torch_trace_stream, "_start", lambda parts: searches.append(1) or real_start(parts))
    parts, _ = _streamed(p)
    assert sum(map(len, parts)) == 200 * 6 and len(parts) <= len(text) // 4096 + 1
    assert len(searches) <= 20000 // 4096 + 2
    _same(torch_trace.read(p), _whole(p)[0])


def test_a_head_of_many_pieces_is_searched_a_logarithmic_number_of_times(tmp_path, small_pieces, monkeypatch):
    # searched each time the head has doubled: 64 pieces' worth of head, ~7 searches (one per piece: 64)
    text = _kineto(_many(50), {"metadata": {"note": "x" * (64 * 4096)}, "deviceProperties": PROPS})
    p = _write(tmp_path, text, gz=True)
    searches = []
    real_start = torch_trace_stream._start
    monkeypatch.setattr(torch_trace_stream, "_start", lambda parts: searches.append(1) or real_start(parts))
    parts, top = _streamed(p)
    assert sum(map(len, parts)) == 50 * 6 and top["deviceProperties"] == PROPS
    assert len(searches) <= 8


ODD_PHASES = [{"ph": "Z", "cat": "kernel", "name": "k", "ts": 1, "dur": 1},  # not a phase
              {"cat": "kernel", "name": "k", "ts": 1, "dur": 1},  # no phase
              {"ph": 5, "cat": "cpu_op", "name": "o", "ts": 1, "dur": 1},  # not a string
              {"ph": ["X"], "cat": "cpu_op", "name": "o", "ts": 1, "dur": 1},  # unhashable
              {"ph": "X ", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]  # almost


def _one_odd_event(tmp_path, monkeypatch, odd):
    """A document of ``_many(100)`` with ``odd`` put at event 300, streamed and read: its frame is the one without
    it (compared here, and to the whole decode's). (the lengths of the texts the streamed read decoded loosely,
    its pieces, the path)"""
    events = _many(100)
    p = _write(tmp_path, _kineto(events[:300] + [odd] + events[300:]), gz=True)
    (tmp_path / "plain").mkdir()
    plain = _write(tmp_path / "plain", _kineto(events), gz=True)
    loose = []
    real = torch_trace_stream.LOOSE_EVENTS
    monkeypatch.setattr(torch_trace_stream, "LOOSE_EVENTS", type("Spy", (), {
        "decode": staticmethod(lambda text: loose.append(len(text)) or real.decode(text))}))
    parts, _ = _streamed(p)  # (no Uncut)
    assert sum(map(len, parts)) == len(events) + 1
    streamed_loose = loose[:]  # (the reads below decode the piece loosely again)
    got, want = torch_trace.read(p), torch_trace.read(plain)
    pd.testing.assert_frame_equal(got.drop(columns="source_file"), want.drop(columns="source_file"))
    assert get_provenance(got)[0]["trace_events"] == len(events) + 1
    _same(got, _whole(p)[0])  # the whole decode (loose the same way) agrees
    return streamed_loose, parts, p


@pytest.mark.parametrize("odd", ODD_PHASES)
def test_an_event_of_no_known_phase_is_never_kept_and_the_read_still_streams(tmp_path, small_pieces, odd,
                                                                               monkeypatch):
    # the tagged decode knows the Chrome trace phases only: the piece holding the odd event is decoded again
    # with ph as any value (not the whole document, not the generic parse); the odd event is kept by nothing,
    # as an event whose ph is not "X" always was, the rest as before
    loose, _, p = _one_odd_event(tmp_path, monkeypatch, odd)
    assert len(loose) == 1 and loose[0] <= 2 * 4096
    decoded, _ = decode(p, json_bytes(p))
    assert decoded[300] is UNKNOWN_PHASE and decoded[300].cat is None
    assert [e.ph == "X" for e in decoded[:6]] == [e["ph"] == "X" for e in _many(1)[:6]]


ODD_CATEGORIES = ["KERNEL", "my_category", "", 5, None, ["kernel"], {"cat": "kernel"}]
#: each category's one str object, as the typed decode gives it
SHARED = {c: c for c in CATEGORIES}


def _shared_categories(events):
    """Whether every complete event of a category the reader keeps holds that category's one str object."""
    kept = [e for e in events if e.cat.__class__ is str and e.cat in KINDS]
    return bool(kept) and all(e.cat is SHARED[e.cat] for e in kept)


@pytest.mark.parametrize("odd", ODD_CATEGORIES)
def test_a_category_kineto_does_not_write_costs_its_piece_a_loose_decode_and_reads_the_same(tmp_path, small_pieces,
                                                                                            odd, monkeypatch):
    # the typed decode knows Kineto's categories only: the piece holding another one is decoded again with cat
    # as any value (not the whole document); that event is kept by nothing, as before, the rest as without it,
    # each kept event with its category's one str object whichever decode read it
    loose, parts, p = _one_odd_event(tmp_path, monkeypatch, {**KERNEL, "cat": odd})
    assert len(loose) == (0 if odd is None else 1) and all(map(_shared_categories, parts))
    decoded, _ = decode(p, json_bytes(p))
    assert decoded[300].cat == odd and _shared_categories(decoded)


def test_every_category_the_reader_keeps_decodes_typed(tmp_path, monkeypatch):
    # (a kept category missing from CATEGORIES would read the same, but every piece holding one twice)
    assert set(KINDS) <= set(CATEGORIES)
    events = [{**KERNEL, "cat": c, "ts": 30 + i} for i, c in enumerate(sorted(KINDS))]
    p = _write(tmp_path, _kineto(events), gz=False)
    monkeypatch.setattr(torch_trace_stream, "LOOSE_EVENTS", None)  # (used: an AttributeError)
    parts, _ = _streamed(p)
    assert [e.cat for part in parts for e in part] == sorted(KINDS) and all(map(_shared_categories, parts))


ODD_TIMES = [{"ts": "30"}, {"ts": None}, {"dur": True}, {"dur": [8]}, {"ts": {"t": 1}}, {"dur": None, "ts": "x"}]


@pytest.mark.parametrize("odd", [*ODD_TIMES, "no ts", "no dur"])
def test_a_complete_event_whose_ts_or_dur_is_not_a_number_costs_its_piece_a_loose_decode_and_is_skipped(
        tmp_path, small_pieces, odd, monkeypatch):
    # the typed decode requires a complete event's ts and dur to be numbers, so that the scan need not check them
    # (a Checked list): a piece with one that is not (or lacks one) is decoded loosely, and the scan skips and
    # counts that event as it always did
    event = {k: v for k, v in KERNEL.items() if k != odd.split()[-1]} if isinstance(odd, str) else {**KERNEL, **odd}
    loose, parts, p = _one_odd_event(tmp_path, monkeypatch, event)
    assert len(loose) == 1
    assert sum(part.__class__ is Checked for part in parts) == len(parts) - 1  # (the loose piece: a plain list)
    meta = get_provenance(torch_trace.read(p))[0]
    assert meta["events_without_ts_or_dur"] == 1 and "1 GPU kernel/copy events" in str(meta)
    decoded, _ = decode(p, json_bytes(p))
    assert decoded.__class__ is list and any(e.ts == event.get("ts") and e.dur == event.get("dur") for e in decoded)


def test_a_checked_piece_scans_as_the_same_events_checked_one_by_one(tmp_path):
    p = _write(tmp_path, _kineto(_many(40)), gz=False)
    decoded, _ = decode(p, json_bytes(p))
    assert decoded.__class__ is Checked
    trusted, checked = Scan(), Scan()
    trusted.add(decoded)
    checked.add(list(decoded))
    for field in ("ops", "gpu", "notes", "steps", "skipped", "skipped_gpu", "n_events", "has_ranges"):
        assert getattr(trusted, field) == getattr(checked, field), field
    assert trusted.by_ext == checked.by_ext and trusted.runtimes == checked.runtimes and trusted.ops


def test_an_event_of_no_known_phase_beside_one_not_an_object_reads_generically(tmp_path):
    events = _many(20)
    doc = {"traceEvents": events[:30] + [ODD_PHASES[0], 7, {**ODD_PHASES[1], "args": [1]}] + events[30:],
           "deviceProperties": PROPS}
    p = tmp_path / "t.pt.trace.json"
    p.write_bytes(json.dumps(doc).encode())
    decoded, _ = decode(p, json_bytes(p))
    assert len(decoded) == len(events) + 2 and decoded[30] is decoded[31] is UNKNOWN_PHASE
    assert len(torch_trace.read(p)) == 20


def test_a_bare_array_without_phases_is_not_a_trace(tmp_path):
    from roofline.errors import FormatMismatchError, NoKernelsError

    p = tmp_path / "t.json"
    p.write_bytes(json.dumps([{"cat": "kernel", "name": "k"}, {"ph": None, "name": "x"}]).encode())
    with pytest.raises(FormatMismatchError, match="no object with a 'ph'"):
        torch_trace.read(p)
    # objects with a phase, none of them known: trace events, none of them GPU work (as before phases were)
    p.write_bytes(json.dumps([{"ph": "x", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]).encode())
    with pytest.raises(NoKernelsError):
        torch_trace.read(p)


def test_a_head_past_the_limit_is_searched_once_more_then_read_whole(tmp_path, small_pieces, monkeypatch,
                                                                      gunzips):
    monkeypatch.setattr(torch_trace_stream, "HEAD_LIMIT", 64 * 1024)
    text = _kineto(_many(20), {"metadata": {"note": "x" * 100_000}, "deviceProperties": PROPS})
    p = _write(tmp_path, text, gz=True)
    searched = []
    real_start = torch_trace_stream._start
    monkeypatch.setattr(torch_trace_stream, "_start", lambda parts: searched.append(len(parts[0]) if len(parts) == 1
                                                                                   else sum(map(len, parts)))
                        or real_start(parts))
    _read_whole_after_uncut(p, gunzips, 20)
    assert searched[-1] <= 64 * 1024 + 2 * 4096  # not held on to the next doubling (128 KB)


@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
def test_gunzip_pieces_are_the_whole_content_in_order(tmp_path, piece):
    text = _kineto(_many(300))
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(text[:5000]) + gzip.compress(text[5000:]) + b"\0" * 16)  # two members, padding
    pieces = list(common.gunzip_pieces(p, piece=piece))
    assert b"".join(pieces) == text == common.gunzip_capped(p)
    assert all(len(x) <= piece for x in pieces)
