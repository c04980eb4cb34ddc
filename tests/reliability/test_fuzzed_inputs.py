"""Byte-level fuzzing of every reader: a damaged input reads (and analyses) or raises a RooflineError.

Deterministic (seeded) mutations of real fixtures, a few dozen per reader, so CI time stays bounded:
random bytes overwritten, a cut, bytes inserted, a chunk repeated. The structured fuzzers (cells of a
CSV, fields of trace events) live beside each reader's tests; these go under the structure. NVIDIA's
ncu_report is a C++ library that can abort the interpreter, so `.ncu-rep` files are fuzzed in a
child process: a crash fails the test instead of killing the test run.
"""

from __future__ import annotations

import gzip
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import OWN, read_or_typed_error, shared


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    kind = rng.randrange(4)
    if kind == 0:  # overwrite 1-16 bytes
        for _ in range(rng.randint(1, 16)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == 1:  # cut
        del b[rng.randrange(1, len(b)):]
    elif kind == 2:  # insert
        at = rng.randrange(len(b))
        b[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    else:  # repeat a chunk
        at = rng.randrange(len(b))
        b[at:at] = b[at:at + rng.randint(1, 4096)]
    return bytes(b)


def _fuzz(data: bytes, name: str, folder: Path, n: int, seed: int, gz: bool = False) -> None:
    rng = random.Random(seed)
    for i in range(n):
        damaged = mutate(data, rng)
        p = folder / name
        p.write_bytes(gzip.compress(damaged, mtime=0) if gz and i % 2 else damaged)
        try:
            read_or_typed_error(p)
        except Exception as exc:  # noqa: BLE001 - the point of the test: say which mutation broke it
            raise AssertionError(f"mutation {i} (seed {seed}) of {name}: untyped {type(exc).__name__}: {exc}") from exc


def test_fuzz_ncu_csv(tmp_path):
    for seed, src in enumerate([OWN / "tiny_metrics.csv", shared("ncu/sm80_a100_gemm-variants_roofline-metrics-printfp.csv")]):
        _fuzz(src.read_bytes(), "fuzz.csv", tmp_path, 15, seed)


def test_fuzz_kineto_trace(tmp_path):
    raw = gzip.decompress(shared("traces/torch_rocm_mi300x_inductor-triton-kernels.pt.trace.json.gz").read_bytes())
    _fuzz(raw, "fuzz.pt.trace.json", tmp_path, 30, 1)
    _fuzz(raw, "fuzz.pt.trace.json.gz", tmp_path, 10, 2, gz=True)
    # the gzip stream itself damaged
    _fuzz(shared("traces/torch_rocm_mi300x_inductor-triton-kernels.pt.trace.json.gz").read_bytes(),
          "fuzz.pt.trace.json.gz", tmp_path, 20, 3)


def test_fuzz_xprof_trace(tmp_path):
    raw = gzip.decompress(shared("traces/derived/jax0.8_rocm_mi300x_gemm.xprof-trace_viewer.json.gz").read_bytes())
    _fuzz(raw, "fuzz.trace.json.gz", tmp_path, 16, 4, gz=True)


def test_fuzz_xplane(tmp_path):
    _fuzz(shared("traces/jax0.8_rocm_mi300x_gemm.xplane.pb").read_bytes(), "fuzz.xplane.pb", tmp_path, 16, 5)


_NCU_CHILD = textwrap.dedent("""
    import random, sys
    from pathlib import Path
    sys.path[:0] = [sys.argv[3], str(Path(sys.argv[3]).parent)]  # this module and conftest
    from test_fuzzed_inputs import mutate
    from conftest import read_or_typed_error
    data = Path(sys.argv[1]).read_bytes()
    rng = random.Random(int(sys.argv[2]))
    for i in range(int(sys.argv[4])):
        p = Path(sys.argv[5]) / "fuzz.ncu-rep"
        p.write_bytes(mutate(data, rng))
        print(i, flush=True)
        read_or_typed_error(p)  # an untyped exception exits 1 with its traceback; an abort, -6
    print("done")
""")


@pytest.mark.parametrize(("name", "seed"), [("sm120_rtx5060ti_transpose_custom-metrics.ncu-rep", 6),
                                            ("sm86_a10g_gemm-variants_roofline.ncu-rep", 7)])
def test_fuzz_ncu_rep(tmp_path, name, seed):
    src = shared(f"ncu/{name}")
    res = subprocess.run([sys.executable, "-c", _NCU_CHILD, str(src), str(seed), str(Path(__file__).parent), "12",
                          str(tmp_path)], capture_output=True, text=True, timeout=240)
    last = res.stdout.strip().splitlines()[-1:] or ["nothing"]
    assert res.returncode == 0 and last == ["done"], f"after mutation {last}: rc {res.returncode}\n{res.stderr[-2000:]}"
