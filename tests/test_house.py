"""The house rules of the source tree (issue 30): no import cycles, no module over ~600 lines, readers that only
observe, and one copy of the pipeline's stages. Each is checked on the tree as it is, so a change that breaks
one fails here with the offending module named."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "roofline"


def _tool():
    spec = importlib.util.spec_from_file_location("import_graph", REPO / "tools" / "import_graph.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_import_cycles_among_roofline_modules():
    """Imports at module level, inside functions, under TYPE_CHECKING and lazy imports by name all count."""
    assert _tool().cycles() == []


def test_import_graph_sees_a_cycle_when_there_is_one(tmp_path):
    """The checker itself: two modules importing each other (one lazily, inside a function) are a cycle."""
    pkg = tmp_path / "roofline"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from roofline.b import x\n")
    (pkg / "b.py").write_text("x = 1\ndef f():\n    from roofline import a\n")
    (pkg / "c.py").write_text("LAZY = {'b': 'roofline.b'}\n")
    assert _tool().cycles(tmp_path) == [["roofline.a", "roofline.b"]]


def test_no_module_over_600_lines():
    assert _tool().long_modules() == {}


def _sources(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(SRC)): p.read_text() for p in sorted(folder.rglob("*.py"))}


def _calls(text: str, names: set[str]) -> list[str]:
    """Names in ``names`` that the module imports or calls (not mentions in docstrings or comments)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            found += [a.name for a in node.names if a.name in names]
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in names:
                found.append(name)
    return found


def test_readers_attach_no_roofs_from_the_spec_table():
    """A reader says what the profile records; the spec table is applied once, by the pipeline's roofs stage."""
    spec_fill = {"fill_spec_peaks", "load_specs", "lookup", "require", "attach_roofs"}
    offenders = {mod: used for mod, text in _sources(SRC / "ingest").items() if (used := _calls(text, spec_fill))}
    assert offenders == {}


@pytest.mark.parametrize("folder", ["cli", "batch"])
def test_commands_and_batch_hold_no_second_copy_of_the_pipeline(folder):
    """Input expansion, peak-option parsing and roof filling live in roofline/pipeline.py (and the stages it
    calls): the commands and the batch only call it."""
    stage_internals = {"fill_spec_peaks", "attach_roofs", "from_toml", "peaks_from", "is_peaks_file", "require",
                       "reader_for", "glob_files", "unique_real", "walk_files", "join_counters", "missing_roofs"}
    offenders = {mod: used for mod, text in _sources(SRC / folder).items() if (used := _calls(text, stage_internals))}
    assert offenders == {}


def test_every_command_module_is_reached_through_the_pipeline():
    """analyze, report, compare and batch run the pipeline: each names it."""
    for mod in ("cli/analyze.py", "cli/report.py", "cli/compare.py"):
        assert re.search(r"\banalysed\(", (SRC / mod).read_text()), mod
    assert "pipeline.analyse_file(" in (SRC / "batch" / "worker.py").read_text()
    assert "from roofline.pipeline import expand" in (SRC / "batch" / "runner.py").read_text()
