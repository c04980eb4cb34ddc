"""Issue 37: ``roofline mcp`` started as a subprocess and driven by the official MCP SDK's stdio client. It lists
its tools; each, called on shared fixtures, answers what the CLI's ``--format json`` says for the same inputs;
a path outside ``--root`` is refused with a line naming it; the 216k-event trace comes back a page at a time."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, shared
from conftest import cli as _cli

if not os.environ.get("CI"):  # the SDK is in the test extra: CI has it (a missing one fails there)
    pytest.importorskip("mcp", reason="the MCP SDK: pip install -e '.[test]'")
import anyio  # the SDK's own dependency
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

A10G = "ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"
A10G_ALL = "ncu/sm86_a10g_gemm-variants_metrics-all-regex.ncu-rep"
HUGE = "traces/torch_v100_2rank-nccl_rank1_large216k.pt.trace.json.gz"
TOOLS = {"analyze", "explain_kernel", "compare", "list_devices", "explain_device", "collect_next"}


class Server:
    """The calls made on one ``roofline mcp`` process, and what it answered (structured content, or the error
    text)."""

    def __init__(self, roots: list[Path], cwd: Path | None = None) -> None:
        self.roots, self.cwd = roots, cwd

    def session(self, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[tuple[bool, Any]]]:
        async def go() -> tuple[set[str], list[tuple[bool, Any]]]:
            args = ["-m", "roofline", "mcp", *(a for r in self.roots for a in ("--root", str(r)))]
            env = {"PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
            params = StdioServerParameters(command=sys.executable, args=args, env=env,
                                           cwd=str(self.cwd) if self.cwd else None)
            out = []
            async with stdio_client(params) as streams, ClientSession(*streams) as s:
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                for name, arguments in calls:
                    r = await s.call_tool(name, arguments)
                    out.append((r.is_error, " ".join(getattr(c, "text", "") for c in r.content) if r.is_error
                                else r.structured_content))
            return names, out

        return anyio.run(go)


def _cli_json(*args: object) -> dict:
    p = _cli(*args, "--format", "json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _same_header(mcp: dict, cli: dict) -> None:
    """Everything but the rows, the row options (a page is not --top) and the time each input was read."""
    for key in ("schema", "schema_version", "tool", "command", "errors", "headline", "summary", "peaks", "notes",
                "row_key", "rows_total"):
        assert mcp[key] == cli[key], key
    strip = [{**i, "provenance": {k: v for k, v in (i["provenance"] or {}).items() if k != "ingested_at"}}
             for i in mcp["inputs"]]
    assert strip == [{**i, "provenance": {k: v for k, v in (i["provenance"] or {}).items() if k != "ingested_at"}}
                     for i in cli["inputs"]]


@pytest.fixture(scope="module")
def fixtures_root() -> Path:
    return Path(os.path.realpath(shared(A10G).parent.parent))


def test_every_tool_answers_what_the_cli_says(fixtures_root):
    a10g, a10g_all = str(fixtures_root / A10G), str(fixtures_root / A10G_ALL)
    nsys = str(fixtures_root / "nsys/nsys2026.2_h100x2_mfu-after.sqlite")
    cli = _cli_json("analyze", a10g)
    key = cli["rows"][1]["row_key"]
    calls = [
        ("analyze", {"paths": [A10G], "top": 3, "detail": "full"}),  # relative to the first root
        ("analyze", {"paths": [a10g], "top": 2}),
        ("explain_kernel", {"path": a10g, "row_key": key}),
        ("compare", {"baseline": a10g, "candidate": a10g_all, "top": 5, "detail": "full"}),
        ("list_devices", {"match": "H100", "top": 100, "detail": "full"}),
        ("explain_device", {"name": "NVIDIA H100 80GB HBM3"}),
        ("collect_next", {"paths": [nsys]}),
    ]
    names, answers = Server([fixtures_root]).session(calls)
    assert names == TOOLS
    assert not [a for err, a in answers if err], answers
    full, compact, explained, compared, devices, device, collect = (a for _, a in answers)
    from importlib import resources

    import jsonschema  # the test extra's, beside the SDK

    schema = json.loads(resources.files("roofline").joinpath("schemas/output.schema.json").read_text())
    for env in (full, compact, compared, devices, device):  # the tools' envelopes are the shipped schema's
        assert not [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(env)]

    _same_header(full, cli)  # analyze: the CLI's envelope, its rows a page at a time
    assert full["rows"] == cli["rows"][:3] and full["page"]["next_cursor"] and full["page"]["total"] == 4
    assert [r["row_key"] for r in compact["rows"]] == [r["row_key"] for r in cli["rows"][:2]]
    assert all(v == cli["rows"][i][k] for i, r in enumerate(compact["rows"]) for k, v in r.items())
    assert len(compact["rows"][0]) < len(cli["rows"][0]) / 3  # compact rows: the key figures only

    row = cli["rows"][1]  # explain_kernel: the CLI's row, its point per level and its roofs with sources
    assert explained["row"] == row and explained["row_key"] == key and explained["bound"] == row["bound"]
    for p in explained["points"]:
        lv = p["level"]
        assert p["intensity_flop_per_byte"] == row[f"intensity_{lv}_flop_per_byte"]
        assert p["peak_bytes_per_s"] == row[f"peak_{lv}_bytes_per_s"] and p["clock_basis"] == "profiled clock"
        assert p["peak_source"] == row[f"peak_{lv}_bytes_per_s_source"]
    assert [p["level"] for p in explained["points"]] == ["dram", "l2", "l1"]
    assert explained["compute"]["peak_flop_per_s"] == row["peak_flop_per_s"]
    # the why-findings (issue 34): the row's own evidence columns, and ncu's rule results for that launch
    why = explained["findings"]
    assert why["next_step"] == row.get("next_step") and why["latency_cause"] == row.get("latency_cause")
    assert why["binding_pipe"] == row.get("binding_pipe")
    assert all(f["kernel_id"] == row["kernel_id"] for f in why["ncu_findings"])

    cmp_cli = _cli_json("compare", a10g, a10g_all, "--top", "5")  # compare: the CLI's summary and identity rows
    _same_header(compared, cmp_cli)
    assert compared["rows"] == cmp_cli["rows"][:5]
    (cand,) = compared["summary"]["candidates"]
    assert sum(cand["identities"].values()) == compared["rows_total"] == len(cmp_cli["rows"])

    dev_cli = _cli_json("devices")
    assert devices["rows"] == [r for r in dev_cli["rows"] if "h100" in r["gpu"].lower()]
    assert device["summary"] == _cli_json("devices", "--explain", "NVIDIA H100 80GB HBM3")["summary"]

    # collect_next: the headline's reasons, ranked by time, each with its fix; the roofs the export lacks
    env = _cli_json("analyze", nsys)
    reasons = {r["reason"]: r for h in env["headline"] if h["step"] is None for r in h["reasons"]}
    assert [c["what"] for c in collect["time_without_a_point"]] == sorted(reasons, key=lambda r: -reasons[r]["time_s"])
    for c in collect["time_without_a_point"]:
        assert c["gpu_time_s"] == pytest.approx(reasons[c["what"]]["time_s"]) and c["how"] == reasons[c["what"]]["fix"]
    assert {(m["roof"], m["how"]) for m in collect["missing_roofs"]} == {
        (p["roof"], p["source"]) for p in env["peaks"] if p["value"] is None}


def test_paths_outside_the_roots_are_refused(tmp_path, fixtures_root):
    root = tmp_path / "allowed"
    root.mkdir()
    inside = root / "a10g.ncu-rep"
    inside.write_bytes(shared(A10G).read_bytes())
    (root / "escape.ncu-rep").symlink_to(fixtures_root / A10G)  # a link inside that points outside
    calls = [("analyze", {"paths": [str(fixtures_root / A10G)]}),
             ("analyze", {"paths": ["../../etc/passwd"]}),
             ("analyze", {"paths": ["escape.ncu-rep"]}),
             ("explain_kernel", {"path": str(fixtures_root / A10G), "name": "."}),
             ("compare", {"baseline": "a10g.ncu-rep", "candidate": str(fixtures_root / A10G_ALL)}),
             ("analyze", {"paths": ["a10g.ncu-rep"], "peaks": "/etc/peaks.toml"}),
             ("analyze", {"paths": ["a10g.ncu-rep"], "top": 1})]
    _, answers = Server([root]).session(calls)
    for (err, text), (tool, args) in zip(answers[:-1], calls):
        assert err, (tool, args)
        assert "outside the allowed roots" in text and str(root.resolve()) in text, text
    refused = [text.split(": outside")[0].split()[-1] for _, text in answers[:-1]]
    assert refused == [str(fixtures_root / A10G), "../../etc/passwd", "escape.ncu-rep", str(fixtures_root / A10G),
                       str(fixtures_root / A10G_ALL), "/etc/peaks.toml"]  # each error names the path refused
    err, page = answers[-1]
    assert not err and page["page"]["returned"] == 1 and page["inputs"][0]["path"] == str(inside.resolve())


def test_a_huge_input_comes_back_bounded_a_page_at_a_time(fixtures_root):
    huge = str(fixtures_root / HUGE)
    cli = _cli_json("analyze", huge, "--top", "100")  # (its whole JSON is 104 MB: the first 100 rows suffice)
    n = cli["rows_total"]
    assert n > 20_000 and len(cli["rows"]) == 100
    _, answers = Server([fixtures_root]).session([("analyze", {"paths": [huge]}),
                                                  ("analyze", {"paths": [huge], "top": 100_000, "detail": "full"})])
    (e1, first), (e2, biggest) = answers
    assert not e1 and not e2
    assert first["page"]["returned"] == 10 and first["rows_total"] == n and first["page"]["next_cursor"]
    assert len(json.dumps(first)) < 64_000  # the CLI's JSON of this trace is tens of megabytes
    assert biggest["page"]["returned"] == 100 and biggest["page"]["limit"] == 100  # top is capped
    assert biggest["rows"] == cli["rows"][:100]
    _, (nxt,) = Server([fixtures_root]).session([("analyze", {"paths": [huge], "cursor": first["page"]["next_cursor"],
                                                              "detail": "full"})])
    # a cursor is tied to its query: with detail changed it is the same query (detail does not change the rows)
    assert not nxt[0] and nxt[1]["rows"] == cli["rows"][10:20]
