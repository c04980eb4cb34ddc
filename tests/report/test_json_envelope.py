"""Issue 37: the versioned JSON envelope of ``analyze``/``compare``/``devices --format json``. Every shared
fixture's output validates against the schema shipped in the package (the same file as docs/'s); rows carry
stable keys that survive a re-capture (file name, process, timestamps and order change; the key does not) and
are unique within a profile; the headline comes before the rows in the stream."""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import roofline
from conftest import REPO, fixture_names, shared
from conftest import cli as _cli
from roofline.report.envelope import SCHEMA_VERSION, clock_basis, row_keys

A10G = "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"
A10G_ALL = "ncu/sm86_a10g_gemm-variants_metrics-all-regex.ncu-rep"


@pytest.fixture(scope="module")
def validator():
    if not os.environ.get("CI"):  # jsonschema is in the test extra: CI has it (a missing one fails there)
        pytest.importorskip("jsonschema", reason="pip install -e '.[test]'")
    import jsonschema

    text = resources.files("roofline").joinpath("schemas/output.schema.json").read_text()
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator, env: dict) -> list[str]:
    """The schema's complaints about ``env``: the envelope and one row of each shape (the keys and the types of
    their values) validated in full — a 44,000-row output has a handful of shapes, and jsonschema takes
    minutes over every row — and every row's key checked against the key's pattern."""
    rows = env.get("rows") or []
    shapes: dict[tuple, dict] = {}
    for r in rows:
        shapes.setdefault(tuple((k, type(v).__name__) for k, v in r.items()), r)
    pattern = re.compile(validator.schema["properties"]["rows"]["items"]["properties"]["row_key"]["pattern"])
    bad_keys = [r.get("row_key") for r in rows if not pattern.match(str(r.get("row_key")))]
    found = validator.iter_errors({**env, "rows": list(shapes.values())})
    return [f"{e.message} at {list(e.path)}" for e in found] + [f"bad row_key {k!r}" for k in bad_keys[:3]]


def _envelope(*args: object) -> dict:
    p = _cli(*args, "--format", "json")
    assert p.returncode in (0, 1), p.stderr  # 1: some input failed (its error is in the envelope)
    return json.loads(p.stdout)


def test_the_schema_in_the_package_is_the_one_in_docs():
    shipped = resources.files("roofline").joinpath("schemas/output.schema.json").read_text()
    assert shipped == (REPO / "docs" / "output.schema.json").read_text()
    assert json.loads(shipped)["properties"]["schema_version"]["pattern"].startswith("^" + SCHEMA_VERSION.split(".")[0])


@pytest.mark.parametrize("rel", fixture_names() or ["(shared fixtures missing)"])
def test_every_fixture_json_validates_and_its_rows_have_unique_keys(rel, validator):
    # the 300 longest rows (--top): the envelope is whole and the rows' shapes the same; writing all 44,000 rows of
    # 117 columns (309 MB of JSON) took a minute. The row-sum checks below run on the outputs that are whole.
    env = _envelope("analyze", shared(rel), "--top", "300")
    errors = _errors(validator, env)
    assert not errors, f"{rel}: {errors[:3]}"
    assert env["schema_version"] == SCHEMA_VERSION and env["row_count"] == len(env["rows"])
    if env["rows_total"] > 300:  # keys are taken over the whole profile before --top: unique among these too
        assert len(env["rows"]) == 300 and len({r["row_key"] for r in env["rows"]}) == 300
        return
    assert env["row_count"] == env["rows_total"]
    rows = env["rows"]
    keys = pd.DataFrame({"file": [r["source_file"] for r in rows], "key": [r["row_key"] for r in rows]})
    assert not keys.duplicated().any(), keys[keys.duplicated(keep=False)].head()
    analysed = [i for i in env["inputs"] if i["status"] == "analysed"]
    assert sum(i["rows"] for i in analysed) == len(rows)  # every row belongs to an input that says so
    for p in env["peaks"]:  # a roof has a source and its clock basis, or says why it is unavailable
        assert p["source"] and (p["value"] is None) == p["source"].startswith("unavailable")
        assert p["value"] is None or p["min"] <= p["value"] <= p["max"]
    if rows and env["headline"]:  # the headline's GPU time is the rows' (durations summed here, not by it)
        total = sum(max(r["duration_s"], 0) for r in rows if isinstance(r["duration_s"], float))
        assert env["headline"][0]["gpu_time_s"] == pytest.approx(total, rel=1e-9, abs=1e-15)


def test_headline_peaks_and_notes_come_before_the_rows_in_the_stream():
    text = _cli("analyze", shared(A10G), "--format", "json").stdout
    env = json.loads(text)
    assert list(env) == ["schema", "schema_version", "tool", "command", "options", "inputs", "errors", "headline",
                         "summary", "peaks", "notes", "row_key", "row_count", "rows_total", "rows"]
    assert text.index('"headline":') < text.index('"rows":[')
    assert [p["clock_basis"] for p in env["peaks"] if p["value"] is not None] == ["profiled clock"] * 6
    # the roof a peak entry gives is the headline's (taken there by its own code), the rows' range around it
    peaks = {p["roof"]: p for p in env["peaks"]}
    head = env["headline"][0]
    assert peaks["fp32"]["value"] == head["compute_peak"]["value"] and peaks["dram"]["value"] == head["dram_peak"]["value"]
    for roof, col in (("fp32", "peak_flop_per_s_fp32"), ("l2", "peak_l2_bytes_per_s")):
        values = [r[col] for r in env["rows"]]
        assert (peaks[roof]["min"], peaks[roof]["max"], peaks[roof]["rows"]) == (min(values), max(values), 4)
    # the notes of the one latency-limited kernel, once each, with their row count
    assert env["notes"] == [  # with its evidence (issue 34) and the next step it points to, each once
        {"level": "row", "text": "under 20% of every roof: tail effect: 1.60 waves, the partial last wave up to 50% of "
                                 "the time at lower occupancy", "rows": 1},
        {"level": "row", "text": "next step: size the grid to whole waves (1.60 now)", "rows": 1}]


def _recaptured(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The same program captured again: another file name, process id and clock origin, correlation ids, and
    the rows in another order."""
    out = frame.copy()
    out["source_file"] = "recaptured/other-name.ncu-rep"
    if "process" in out:
        out["process"] = out["process"].astype("string").str.replace(r"pid \d+", "pid 99999", regex=True)
    if "start_ns" in out:
        out["start_ns"] = out["start_ns"] + 123_456_789
    if "correlation_id" in out:
        out["correlation_id"] = out["correlation_id"] + 7
    return out.sample(frac=1.0, random_state=seed)


@pytest.mark.parametrize("rel", [A10G, "nsys/nsys2026.2_h100x2_mfu-after.sqlite",
                                 "traces/torch2.6_h100_bert-small_infer_flops-flag.pt.trace.json.gz"])
def test_row_keys_survive_a_recapture_and_tell_repeated_launches_apart(rel):
    frame = roofline.run(shared(rel)).frame
    keys = row_keys(frame)
    again = row_keys(_recaptured(frame, 3))
    assert keys.nunique() == len(frame)
    assert (again.reindex(frame.index) == keys).all()  # each row keeps its key
    # a kernel launched twice with the same configuration: two keys (its occurrence is part of the key)
    twice = pd.concat([frame.head(1), frame.head(1)], ignore_index=True)
    assert row_keys(twice).nunique() == 2


def test_row_keys_change_with_what_identifies_a_kernel():
    frame = roofline.run(shared(A10G)).frame.head(1)
    base = row_keys(frame).iloc[0]
    for col, value in (("device_name", "NVIDIA A100"), ("kernel_name", "other_kernel"), ("grid_x", 999)):
        changed = frame.copy()
        changed[col] = value
        assert row_keys(changed).iloc[0] != base, col


def test_grouped_rows_are_keyed_by_their_group(validator):
    env = _envelope("analyze", shared("ncu/sm80_a100_cutlass-b2b-int8-gemm_full-nvtx.ncu-rep"), "--by", "nvtx")
    assert not _errors(validator, env)
    assert env["row_key"]["fields"][:2] == ["grouping", "nvtx"]
    first = {r["nvtx"]: r["row_key"] for r in env["rows"]}
    again = _envelope("analyze", shared("ncu/sm80_a100_cutlass-b2b-int8-gemm_full-nvtx.ncu-rep"), "--by", "nvtx",
                      "--top", "1")
    assert {r["nvtx"]: r["row_key"] for r in again["rows"]}.items() <= first.items()
    assert again["row_count"] == 1 and again["rows_total"] == len(first)


def test_summary_view_puts_the_headlines_in_the_envelope(validator):
    env = _envelope("analyze", shared("traces/torch2.6_h100_bert-small_infer_flops-flag.pt.trace.json.gz"),
                    "--by", "summary")
    assert not _errors(validator, env)
    assert len(env["rows"]) == len(env["headline"])
    assert [r["coverage_pct"] for r in env["rows"]] == pytest.approx([100 * h["coverage"] for h in env["headline"]])


def test_failed_input_is_an_error_of_the_envelope(tmp_path, validator):
    bad = tmp_path / "broken.ncu-rep"
    bad.write_bytes(b"not a report")
    p = _cli("analyze", shared(A10G), bad, "--format", "json")
    assert p.returncode == 1
    env = json.loads(p.stdout)
    assert not _errors(validator, env)
    assert [e["path"] for e in env["errors"]] == [str(bad)] and "broken.ncu-rep" in env["errors"][0]["message"]
    assert {i["status"] for i in env["inputs"]} == {"analysed", "failed"} and len(env["rows"]) == 4


def test_compare_envelope_has_the_summary_and_every_identity(validator):
    env = _envelope("compare", shared(A10G), shared(A10G_ALL))
    assert not _errors(validator, env)
    (cand,) = env["summary"]["candidates"]
    rows = env["rows"]
    assert cand["identities"] == {p: sum(r["presence"] == p for r in rows)
                                  for p in ("both", "baseline only", "candidate only")}
    base_time = sum(r["total_s_base"] for r in rows if r["total_s_base"] is not None)
    assert cand["program"]["time_base_s"] == pytest.approx(base_time, rel=1e-12)
    assert len({r["row_key"] for r in rows}) == len(rows) and len(env["headline"]) == 2
    assert env["row_key"]["fields"][0] == "candidate"


def test_compare_launches_envelope_has_each_pair_summary(validator):
    env = _envelope("compare", shared(A10G), shared(A10G_ALL), "--launches")
    assert not _errors(validator, env)
    (pair,) = env["summary"]["pairs"]
    rows = env["rows"]
    assert pair["matched"] == sum(r["match"] in ("name+nvtx+order", "name+order") for r in rows)
    assert pair["new"] == sum(r["match"] == "new" for r in rows) and pair["vanished"] == 0
    base_time = sum(r["duration_s_base"] for r in rows if r["duration_s_base"] is not None)
    assert pair["time_base_s"] == pytest.approx(base_time, rel=1e-12)
    assert len({r["row_key"] for r in rows}) == len(rows) and len(env["headline"]) == 2


def test_devices_envelope_and_a_name_explained(validator):
    env = _envelope("devices")
    assert not _errors(validator, env)
    h100 = [r for r in env["rows"] if r["gpu"] == "H100 SXM" and r["figure"] == "fp64"]
    assert len(h100) == 1 and h100[0]["dense_tflop_per_s"] == pytest.approx(33.5) and h100[0]["source"]
    ex = _envelope("devices", "--explain", "NVIDIA H100 80GB HBM3")
    assert not _errors(validator, ex)
    assert ex["summary"]["resolved"] == "H100 SXM" and ex["summary"]["text"] == _cli(
        "devices", "--explain", "NVIDIA H100 80GB HBM3").stdout.rstrip("\n")
    fp64 = next(r for r in ex["summary"]["roofs"] if r["roof"] == "fp64")
    implied_mhz = 33.5e12 / (132 * 128) / 1e6  # the published figure over SMs × FP64 FLOP per clock per SM
    assert fp64["value"] == pytest.approx(33.5e12) and f"implies {implied_mhz:.0f} MHz" in fp64["clock_basis"]
    assert not _errors(validator, _envelope("devices", "--archs"))


@pytest.mark.parametrize("source, basis", [
    ("counters: 2 × sm__inst × sm__cycles_elapsed.avg.per_second (1.315 GHz, profiled clock)", "profiled clock"),
    ("tensor — spec: H100 SXM tensor_bf16 989.4 T/s: datasheet; dense, as published (boost); no profiled clock known",
     "boost clock"),
    (("spec: RTX 4060 fp16 15.1 T/s: arch model sm_89: 256 FLOP/clk/SM x 24 SMs x boost clock 2460 MHz (whitepaper); "
     "dense, 256 FLOP/cycle/SM × 24 SMs × the profiled SM clock 1235 MHz"), "profiled clock"),
    (("spec: 128 B/cycle/SM × 80 SMs (A10G, ncu's L1 roof) × the boost clock 1710 MHz; no profiled clock known; "
     "counters gave unavailable: no L1 byte counters"), "boost clock"),
    ("model: 128 B/clk/CU vL1D × 304 CUs × max_sclk 2100 MHz (sysinfo.csv)", "max engine clock (sysinfo.csv)"),
    ("measured: roofline.csv device 0 HBMBw 1388.93 GB/s (rocprof-compute empirical microbenchmark)", "as measured"),
    ("spec: H100 SXM 3.35 TB/s (NVIDIA H100 datasheet: 3.35 TB/s HBM3 (SXM)), as published", "as published"),
    ("xprof: device plane peak_hbm_bw_gigabytes_per_second 1637.99", "unstated: the source names no clock"),
])
def test_clock_basis_is_read_from_the_source_never_guessed(source, basis):
    assert clock_basis(source) == basis


def test_ndjson_stays_one_record_per_line_with_its_key():
    p = _cli("analyze", shared(A10G), "--format", "ndjson")
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    env = _envelope("analyze", shared(A10G))
    assert [x["row_key"] for x in lines] == [r["row_key"] for r in env["rows"]]
    assert np.isclose(lines[0]["duration_s"], env["rows"][0]["duration_s"])


def test_package_data_lists_the_schema():
    text = (REPO / "pyproject.toml").read_text()
    assert '"schemas/*.json"' in text and Path(REPO / "src" / "roofline" / "schemas" / "output.schema.json").is_file()


def test_row_notes_split_outside_parentheses():
    from roofline.report.envelope import split_notes

    note = ("L2 level absent: no L2 bytes (unavailable: a trace has no cache counters; profile with ncu); "
            "under 20% of every roof: latency- or occupancy-limited")
    assert split_notes(note) == [("L2 level absent: no L2 bytes (unavailable: a trace has no cache counters; profile "
                                 "with ncu)"), "under 20% of every roof: latency- or occupancy-limited"]


def test_filters_do_not_change_a_rows_key_and_out_is_written_without_it(tmp_path):
    from roofline.schema import read_table

    whole = {r["kernel_short_name"]: r["row_key"] for r in _envelope("analyze", shared(A10G))["rows"]}
    some = _envelope("analyze", shared(A10G), "--name", "two|warp", "--top", "1", "--out", tmp_path / "f.parquet")
    assert some["rows_total"] == 2 and len(some["rows"]) == 1
    assert {r["kernel_short_name"]: r["row_key"] for r in some["rows"]}.items() <= whole.items()
    assert "row_key" not in read_table(tmp_path / "f.parquet").columns


def test_row_keys_of_a_frame_with_repeated_labels_are_those_of_its_rows():
    frame = roofline.run(shared(A10G)).frame
    doubled = pd.concat([frame, frame.assign(source_file="second.ncu-rep")])  # labels 0..3 twice
    keys = row_keys(doubled)
    assert list(keys.iloc[:4]) == list(row_keys(frame)) == list(keys.iloc[4:])  # unique within each profile


def test_compare_out_is_written_without_the_printed_key(tmp_path):
    from roofline.schema import read_table

    env = _envelope("compare", shared(A10G), shared(A10G_ALL), "--out", tmp_path / "d.parquet")
    frame = read_table(tmp_path / "d.parquet")
    assert "row_key" not in frame.columns and len(frame) == len(env["rows"])


def test_a_streamed_dataset_summary_says_it_has_no_headline(validator):
    from conftest import OWN

    env = _envelope("analyze", OWN / "dataset_v1", "--by", "program")
    assert not _errors(validator, env)
    assert env["headline"] == [] and env["peaks"] == [] and "not computed" in env["notes"][0]["text"]
    assert env["row_count"] == len(env["rows"]) > 0 and env["row_key"]["fields"][0] == "grouping"
