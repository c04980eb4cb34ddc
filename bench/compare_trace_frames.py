"""Every shared PyTorch trace read by a base tree and by this one, in one process: frames equal
(``pd.testing.assert_frame_equal``, dtypes checked) and provenance equal but for the ingestion clock.

Both trees are imported in turn under the name ``roofline`` (the first tree's modules are dropped from
``sys.modules`` before the second is imported), so each frame comes from its own tree's code. Both
``roofline.read`` and the torch reader's ``read`` are compared; a read that raises must raise the same
error type and message on both sides.

    python bench/compare_trace_frames.py --base /tmp/base/src [--this src] [trace ...]
"""

from __future__ import annotations

import argparse
import glob
import importlib
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
TRACES = HERE.parent / "shared" / "fixtures" / "traces"


def _traces() -> list[str]:
    return sorted(p for p in glob.glob(str(TRACES / "**" / "*.json*"), recursive=True)
                  if "execution_details" not in p)


def _reads(src: str, paths: list[str]) -> dict[tuple[str, str], Any]:
    """(path, reader) -> frame, or (error type, message), from the tree at ``src``."""
    for name in [m for m in sys.modules if m == "roofline" or m.startswith("roofline.")]:
        del sys.modules[name]
    sys.path.insert(0, src)
    importlib.invalidate_caches()
    try:
        roofline = importlib.import_module("roofline")
        torch_trace = importlib.import_module("roofline.ingest.torch.trace")
        assert Path(roofline.__file__).is_relative_to(Path(src).resolve()), roofline.__file__
        out: dict[tuple[str, str], Any] = {}
        for p in paths:
            for kind, fn in (("api", roofline.read), ("torch", torch_trace.read)):
                try:
                    out[p, kind] = fn(p)
                except Exception as exc:  # noqa: BLE001 - the error itself is compared
                    out[p, kind] = (type(exc).__name__, str(exc))
        return out
    finally:
        sys.path.remove(src)


def _attrs(frame: Any) -> Any:
    """The frame's attrs with every provenance record's ``ingested_at`` left out (repr: exact, any type)."""
    def clean(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items() if k != "ingested_at"}
        if isinstance(v, (list, tuple)):
            return type(v)(clean(x) for x in v)
        return v
    return repr(clean(dict(frame.attrs)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the base tree's src directory")
    ap.add_argument("--this", default=str(HERE / "src"), help="this tree's src directory")
    ap.add_argument("traces", nargs="*", help="trace files (default: every shared trace fixture)")
    args = ap.parse_args()
    import pandas as pd

    paths = args.traces or _traces()
    base = _reads(str(Path(args.base).resolve()), paths)
    this = _reads(str(Path(args.this).resolve()), paths)
    bad = frames = 0
    for key, b in base.items():
        t = this[key]
        try:
            if isinstance(b, tuple) or isinstance(t, tuple):
                assert b == t, f"{b!r} != {t!r}"
                continue
            pd.testing.assert_frame_equal(b, t, check_dtype=True, check_exact=True)
            assert _attrs(b) == _attrs(t), "attrs differ"
            frames += 1
        except AssertionError as exc:
            bad += 1
            print("DIFF", *key, [line[:160] for line in str(exc).splitlines()[:6]])
    print(f"{len(paths)} traces x 2 readers: {frames} frames equal, "
          f"{len(base) - frames - bad} same errors, {bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
