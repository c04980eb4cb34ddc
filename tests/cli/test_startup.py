"""CLI start-up stays light (issue 23 item 3): `roofline --version`/`--help` import neither pandas nor
numpy nor any command module; every subcommand's own `--help` still works. No timing here: the
figures are in docs/benchmarks.md (bench/bench_cli.py); these tests check the imports that set them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from roofline.cli import _Group, cli

HEAVY = ("pandas", "numpy", "pyarrow", "matplotlib", "roofline.analysis", "roofline.ingest", "roofline.pipeline",
         "roofline.inference", *(module for module, _ in _Group.LAZY.values()))
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _modules_after(*argv: str) -> list[str]:
    """The modules loaded by `roofline ARGV` in a fresh interpreter (it exits 0)."""
    code = ("import sys, json\nfrom roofline.cli import main\nsys.argv = ['roofline', *json.loads(sys.argv[1])]\n"
            "try:\n    main()\nfinally:\n    print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n")
    env = os.environ | {"PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code, json.dumps(argv)], check=False, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [("--version",), ("--help",)])
def test_version_and_help_import_nothing_heavy(argv: tuple[str, ...]) -> None:
    loaded = _modules_after(*argv)
    assert [m for m in loaded if m.split(".")[0] in HEAVY or any(m == h or m.startswith(h + ".") for h in HEAVY)] == []


def test_import_roofline_is_light_and_api_still_there() -> None:
    code = ("import sys, roofline\nassert 'pandas' not in sys.modules, 'pandas'\n"
            "assert callable(roofline.read) and callable(roofline.analyze) and callable(roofline.open_dataset)\n"
            "assert 'pandas' in sys.modules\nprint(sorted(set(roofline.__all__) - set(dir(roofline))))")
    env = os.environ | {"PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_lazy_commands_short_help_matches_their_own() -> None:
    ctx = click.Context(cli)
    for name in _Group.LAZY:
        real = cli.get_command(ctx, name)
        assert real is not None
        stub = click.Command(name, help=_Group.LAZY_HELP[name])
        for limit in (45, 60, 120):
            assert stub.get_short_help_str(limit) == real.get_short_help_str(limit), name


def test_every_subcommand_help_works() -> None:
    runner = CliRunner()
    names = cli.list_commands(click.Context(cli))
    assert {"analyze", "batch", "compare", "llm", "report"} <= set(names)
    top = runner.invoke(cli, ["--help"])
    assert top.exit_code == 0
    for name in names:
        assert f"  {name} " in top.output
        res = runner.invoke(cli, [name, "--help"])
        assert res.exit_code == 0, (name, res.output)
        assert "Usage:" in res.output
