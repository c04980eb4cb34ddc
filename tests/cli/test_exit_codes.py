"""One rule for exit codes and messages across commands (on the bundled samples: no ../shared needed).

0 done; 1 an input failed or there was no input; 2 a usage error (bad choice, unknown GPU name in an
option); 4 the compare gate failed, including a rule it could not evaluate.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from conftest import analysed, kernel_row
from conftest import cli as _cli
from roofline import samples
from roofline.analysis.compare import compare, parse_rules, unevaluated

A10G = samples.path("a10g-sgemm")


def test_usage_errors_exit_2_with_one_message():
    for args in (("--precision", "foo"), ("--bound", "foo"), ("--peaks", "H900"), ("--device", "H900"),
                 ("--levels", "dram,l3")):
        p = _cli("analyze", A10G, *args)
        assert p.returncode == 2, (args, p.stderr)
        assert "Traceback" not in p.stderr and p.stderr.strip()
    p = _cli("analyze", A10G, "--precision", "tensor:bf16", "--format", "csv")
    assert p.returncode == 0, p.stderr  # a tensor path is a valid precision (here it keeps no kernel)
    p = _cli("llm", "--model", "llama-3-8b", "--gpu", "H900")
    assert p.returncode == 2 and "unknown GPU 'H900'" in p.stderr


def test_no_input_exits_1_with_a_message(tmp_path):
    (tmp_path / "empty").mkdir()
    for cmd in (("analyze", tmp_path / "empty"), ("analyze", str(tmp_path / "none" / "*.ncu-rep")),
                ("batch", str(tmp_path / "none" / "*.ncu-rep"), "-o", tmp_path / "ds"),
                ("batch", tmp_path / "empty", "-o", tmp_path / "ds2")):
        p = _cli(*cmd)
        assert p.returncode == 1, (cmd, p.stdout, p.stderr)
        assert str(cmd[1]) in p.stderr and "Traceback" not in p.stderr, cmd  # the message names the input


def test_help_texts_and_python_m_roofline():
    top = _cli("--help")
    assert top.returncode == 0 and "PyTorch" in top.stdout and "xplane" in top.stdout and "demo" in top.stdout
    for cmd in ("analyze", "report", "compare", "batch", "demo", "samples"):
        h = _cli(cmd, "--help")
        assert h.returncode == 0 and "%%" not in h.stdout, cmd
    assert "Under this % of every roof" in _cli("analyze", "--help").stdout.replace("\n", " ").replace("  ", " ")
    v = subprocess.run([sys.executable, "-m", "roofline", "--version"], capture_output=True, text=True, timeout=120)
    assert v.returncode == 0 and v.stdout.startswith("roofline, version ")


def test_a_gate_rule_that_cannot_be_evaluated_fails_it():
    base = analysed([kernel_row(), kernel_row(kernel_id=1, kernel_name="q", l2_bytes=np.nan)])
    cand = analysed([kernel_row(), kernel_row(kernel_id=1, kernel_name="q")])
    d = compare(base, cand)
    assert unevaluated(d, parse_rules("time>5%,bound,new")) == []
    lost = unevaluated(d, parse_rules("l2_bytes>5%"))
    assert len(lost) == 1 and "one profile only for 1 kernel(s): q" in lost[0]
    other = analysed([kernel_row(kernel_name="renamed")])
    assert "no kernel matched" in unevaluated(compare(base, other), parse_rules("time>5%"))[0]
    nowhere = analysed([kernel_row(l1_bytes=np.nan)])
    assert "unavailable for every matched kernel" in unevaluated(compare(nowhere, nowhere), parse_rules("l1_bytes>1%"))[0]
    # the CLI: a trace has no L2 bytes, so an L2 rule cannot be checked: exit 4, said so
    trace = samples.path("h100-bert-small")
    p = _cli("compare", trace, trace, "--fail-on", "time>5%,l2_bytes>5%")
    assert p.returncode == 4 and "cannot evaluate: l2_bytes>5%" in p.stderr
    assert _cli("compare", trace, trace, "--fail-on", "time>5%").returncode == 0


def test_live_without_torch_is_one_typed_error_naming_the_extra():
    code = ("import importlib.util as u; f = u.find_spec; "
            "u.find_spec = lambda n, *a: None if n == 'torch' else f(n, *a)\n"  # as if torch were not installed
            "from roofline.errors import MissingDependencyError\n"
            "try:\n import roofline.live\nexcept MissingDependencyError as e:\n"
            " assert isinstance(e, ImportError); print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "roofline.live needs PyTorch: pip install 'roofline[torch]'"
