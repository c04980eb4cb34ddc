"""The import graph of ``src/roofline``: every ``import``/``from ... import`` of a roofline module, at
module level, inside functions and under ``TYPE_CHECKING`` alike, and every string that names one (the
lazy imports by name: ``importlib.import_module``, tables of lazy commands), and the cycles in it.

    python tools/import_graph.py            # prints the cycles (strongly connected components); exit 1 if any
    python tools/import_graph.py --sizes    # also the modules over 600 lines

``tests/test_house.py`` runs :func:`cycles` and :func:`long_modules` on the tree.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 600


def modules(src: Path = SRC) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the ``roofline`` package."""
    out = {}
    for path in sorted((src / "roofline").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` names or lies in (``a.b.c`` of module ``a.b`` -> ``a.b``)."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def edges(src: Path = SRC) -> dict[str, set[str]]:
    """Module -> the roofline modules it imports (anywhere in its file)."""
    known = modules(src)
    graph: dict[str, set[str]] = {m: set() for m in known}
    for mod, path in known.items():
        is_pkg = path.name == "__init__.py"
        package = mod if is_pkg else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                # `from a import b`: b may be a submodule of a, else a name in a
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value \
                    and node.value in known:  # (the bare root is a common word: a table is called "roofline")
                targets = [node.value]  # a lazy import by name (importlib, a table of lazy commands)
            for t in targets:
                hit = _resolve(t, known)
                if hit and hit != mod:
                    graph[mod].add(hit)
    return graph


def cycles(src: Path = SRC) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    graph = edges(src)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def long_modules(src: Path = SRC, limit: int = MAX_LINES) -> dict[str, int]:
    """Modules longer than ``limit`` lines (generated protobuf code aside)."""
    out = {}
    for mod, path in modules(src).items():
        n = len(path.read_text().splitlines())
        if n > limit and not path.name.endswith("_pb2.py"):
            out[mod] = n
    return out


def main() -> int:
    found = cycles()
    for comp in found:
        print(f"cycle of {len(comp)}: " + " ".join(comp))
    if "--sizes" in sys.argv:
        for mod, n in sorted(long_modules().items()):
            print(f"{n:5d} lines: {mod}")
    print(f"{len(found)} import cycle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
