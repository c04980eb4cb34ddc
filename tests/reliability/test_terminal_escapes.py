"""Terminal escape injection: names from a profile never reach the terminal as control sequences.

A trace whose op and kernel names carry an OSC 52 clipboard write, a screen clear, a window title and a
bidirectional override is analysed, reported, compared and batched through the real CLI entry point; no ESC
byte (nor C1 CSI, BEL, CR) reaches stdout or stderr, and the escaped name is still readable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from conftest import cli as _cli
from roofline.cli.safe import terminal_safe

EVIL = "\x1b]52;c;SGVsbG8=\x07clip\x1b[2J\x1b]0;title\x07\u202egemm\x9b31m\r"
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\r", "\u202e")


def evil_trace(path: Path) -> Path:
    """One op launching one kernel, both named with ESC sequences (a Kineto trace, by hand)."""
    rt = {"ph": "X", "cat": "cuda_runtime", "pid": 1, "tid": 1}
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::" + EVIL, "pid": 1, "tid": 1, "ts": 1, "dur": 20,
         "args": {"External id": 1}},
        {**rt, "name": "cudaLaunchKernel", "ts": 2, "dur": 1, "args": {"External id": 1, "correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "kernel_" + EVIL, "pid": 0, "tid": 7, "ts": 5, "dur": 10,
         "args": {"correlation": 1, "device": 0}},
    ]
    props = [{"id": 0, "name": "NVIDIA H100 80GB HBM3" + EVIL, "computeMajor": 9, "computeMinor": 0, "numSms": 132}]
    path.write_text(json.dumps({"traceEvents": events, "deviceProperties": props}))
    return path


def _clean(text: str) -> None:
    assert not any(c in text for c in FORBIDDEN), repr(text[:300])


def test_names_are_escaped_in_the_table_json_compare_and_error_lines(tmp_path):
    trace = evil_trace(tmp_path / "t.pt.trace.json")
    bad = tmp_path / ("bad" + "\x1b]0;t\x07" + ".csv")  # (click itself strips CSI sequences off a pipe)
    bad.write_text("not a profile\n")
    res = _cli("analyze", trace, bad, "--all")
    assert res.returncode == 1
    _clean(res.stdout + res.stderr)
    assert "\\x1b]52;c;SGVsbG8=\\x07" in res.stdout  # escaped, so still visible for what it is
    assert "bad\\x1b]0;t\\x07.csv" in res.stderr
    res = _cli("analyze", trace, "--format", "json")
    _clean(res.stdout)
    assert json.loads(res.stdout)[0]["kernel_name"].startswith("aten::\x1b]52")  # valid JSON, the name intact
    res = _cli("compare", trace, trace)
    assert res.returncode == 0, res.stderr
    _clean(res.stdout + res.stderr)
    res = _cli("report", trace, "-o", tmp_path / "out")
    _clean(res.stdout + res.stderr)


def test_batch_progress_lines_escape_the_names_of_failed_inputs(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / ("x\x1b]0;pwned\x07.csv")).write_text("not a profile\n")
    evil_trace(folder / "t.pt.trace.json")
    res = _cli("batch", folder, "-o", tmp_path / "ds", "--workers", "1", "-v")
    assert res.returncode == 1
    _clean(res.stdout + res.stderr)
    assert "x\\x1b]0;pwned\\x07.csv" in res.stderr


def test_a_real_process_writes_no_esc_byte_to_a_pipe(tmp_path):
    """Through ``python -m roofline`` (the real streams), stdout and stderr as bytes."""
    trace = evil_trace(tmp_path / "t.pt.trace.json")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    res = subprocess.run([sys.executable, "-m", "roofline", "analyze", str(trace)], capture_output=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-1000:]
    assert b"\x1b" not in res.stdout + res.stderr and b"\xc2\x9b" not in res.stdout + res.stderr
    assert b"kernel_" in res.stdout or b"aten::" in res.stdout


def test_terminal_safe_keeps_newlines_tabs_and_text():
    assert terminal_safe("a\tb\nc\x1b[0m\x85\u2028é漢") == "a\tb\nc\\x1b[0m\\x85\\u2028é漢"
