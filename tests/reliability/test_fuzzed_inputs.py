"""Fuzzing of every reader: a damaged input reads (and analyses) or raises a RooflineError.

Deterministic (seeded) mutations of real fixtures, a few dozen per reader, so CI time stays bounded.
Byte level: random bytes overwritten, a cut, bytes inserted, a chunk repeated. Structured (the values the
2026 campaign found untyped errors with): a JSON leaf, CSV cell, SQLite cell or XSpace stat replaced by a
huge, infinite, NaN or negative number, an integer past 64 bits, text, a list or a dict, an ESC sequence;
and UTF-8 bit flips. Every read runs with ROOFLINE_DEBUG set, so the pipeline's last net (an unexpected
ValueError/TypeError becomes a typed error) is off and an unchecked reader site fails here. NVIDIA's
ncu_report is a C++ library that can abort the interpreter, so `.ncu-rep` files are fuzzed in a
child process (the reader itself now reads in a forked child: tests/reliability/test_native_aborts_isolated.py).
The hostile SQLite views and the aborting report: tests/reliability/test_hostile_sqlite.py, _native.py.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import random
import shutil
import sqlite3
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
        except Exception as exc:
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


#: what a campaign mutation put where a number (or a string) belonged
HOSTILE = [1e308, -1e308, -1, 0, 10**12, 2**70, -(2**63) - 1, 1.5, "abc", "", None, True, [], {}, [1, 2],
           {"a": 1}, "nan", "inf", "-inf", "1e999", "\u2028x", "\x1b]52;c;SGVsbG8=\x07", 9.5e18]


def _leaves(obj: object, rng: random.Random) -> list[tuple[object, object]]:
    out: list[tuple[object, object]] = []

    def walk(o: object) -> None:
        items = list(o.items()) if isinstance(o, dict) else list(enumerate(o)) if isinstance(o, list) else []
        for k, v in (rng.sample(items, 100) if len(items) > 100 else items):
            out.append((o, k))
            walk(v)

    walk(obj)
    return out


def _json_mutants(raw: bytes, n: int, seed: int):
    rng = random.Random(seed)
    for i in range(n):
        if i % 5 == 4:  # a UTF-8 bit flip
            b = bytearray(raw)
            for _ in range(3):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            yield bytes(b)
            continue
        obj = json.loads(raw)
        spots = _leaves(obj, rng)
        for _ in range(rng.randint(1, 4)):
            parent, key = rng.choice(spots)
            parent[key] = rng.choice(HOSTILE)  # type: ignore[index]
        yield json.dumps(obj).replace('"1e999"', "1e999").encode()


def _csv_mutant(text: str, rng: random.Random) -> str:
    rows = list(csv.reader(io.StringIO(text)))
    for _ in range(rng.randint(1, 4)):
        r = rng.randrange(len(rows))
        if rows[r]:
            v = rng.choice(HOSTILE)
            rows[r][rng.randrange(len(rows[r]))] = v if isinstance(v, str) else json.dumps(v)
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL).writerows(rows)
    return out.getvalue()


def _check(p: Path, what: str) -> None:
    try:
        read_or_typed_error(p)
    except Exception as exc:
        raise AssertionError(f"{what}: untyped {type(exc).__name__}: {exc}") from exc


@pytest.mark.parametrize(("rel", "name", "n"), [
    ("traces/torch_a100_alexnet_train_small.pt.trace.json.gz", "m.pt.trace.json", 15),
    ("traces/derived/jax0.8_rocm_mi300x_gemm.xprof-trace_viewer.json.gz", "m.trace.json", 10),
    ("OWN/rocprof/counters_gfx942.rocprofv3.json", "m.json", 15)])
def test_structured_fuzz_of_the_json_readers(tmp_path, rel, name, n):
    src = OWN / rel[4:] if rel.startswith("OWN/") else shared(rel)
    raw = src.read_bytes()
    raw = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    for i, data in enumerate(_json_mutants(raw, n, seed=11)):
        (tmp_path / name).write_bytes(data)
        _check(tmp_path / name, f"mutation {i} of {rel}")


def test_structured_fuzz_of_the_csv_readers(tmp_path):
    rng = random.Random(12)
    for i in range(12):
        (tmp_path / "m.csv").write_text(_csv_mutant((OWN / "tiny_metrics.csv").read_text(), rng))
        _check(tmp_path / "m.csv", f"ncu CSV mutation {i}")
    for i in range(12):
        run = tmp_path / f"v3_{i}"
        shutil.copytree(OWN / "rocprof" / "v3csv", run)
        victim = rng.choice(sorted(run.iterdir()))
        victim.write_text(_csv_mutant(victim.read_text(), rng))
        _check(run / "4242_kernel_trace.csv", f"rocprofv3 CSV mutation {i} ({victim.name})")


def _sqlite_mutant(src: Path, dst: Path, rng: random.Random, tables: tuple[str, ...]) -> None:
    shutil.copyfile(src, dst)
    dst.chmod(0o644)
    with sqlite3.connect(dst) as con:
        present = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        tables = tuple(t for t in tables if t in present)
        for _ in range(rng.randint(1, 3)):
            t = rng.choice(tables)
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
            v = rng.choice([*HOSTILE, float("inf"), float("nan"), b"\xff\xfe"])
            v = json.dumps(v) if isinstance(v, (list, dict)) else str(v) if isinstance(v, int) and abs(v) >= 2**63 else v
            rows = con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
            if not rows:
                continue
            try:  # (seeded: rows by offset, not SQLite's random())
                con.execute(f'UPDATE "{t}" SET "{rng.choice(cols)}" = ? WHERE rowid IN (SELECT rowid FROM "{t}" '
                            f'LIMIT {rng.choice([1, 1000])} OFFSET {rng.randrange(rows)})', (v,))
            except sqlite3.IntegrityError:  # an INTEGER PRIMARY KEY takes integers only
                continue
    con.close()


def test_structured_fuzz_of_the_sqlite_readers(tmp_path):
    rng = random.Random(13)
    nsys = shared("nsys/nsys2024.5_a100x2_cloverleaf-mpi-cuda.sqlite")
    for i in range(8):
        _sqlite_mutant(nsys, tmp_path / "m.sqlite", rng, ("CUPTI_ACTIVITY_KIND_KERNEL", "TARGET_INFO_GPU",
                                                         "NVTX_EVENTS", "StringIds", "CUPTI_ACTIVITY_KIND_RUNTIME"))
        _check(tmp_path / "m.sqlite", f"nsys mutation {i}")
    rocpd = OWN / "rocprof" / "rocpd_mi210.db"
    with sqlite3.connect(f"file:{rocpd}?mode=ro&immutable=1", uri=True) as con:
        tables = tuple(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    for i in range(15):
        _sqlite_mutant(rocpd, tmp_path / "m.db", rng, tables)
        _check(tmp_path / "m.db", f"rocpd mutation {i}")


def test_structured_fuzz_of_xspace_stats(tmp_path):
    from roofline.ingest.xla.protos import xplane_pb2

    rng = random.Random(14)
    raw = shared("traces/jax0.8_rocm_mi300x_gemm.xplane.pb").read_bytes()
    for i in range(8):
        xs = xplane_pb2.XSpace()
        xs.ParseFromString(raw)
        stats = [s for p in xs.planes for s in p.stats]
        stats += [s for p in xs.planes for ln in p.lines[:4] for e in ln.events[:40] for s in e.stats]
        for _ in range(rng.randint(1, 4)):
            s = rng.choice(stats)
            kind = rng.randrange(4)
            if kind == 0:
                s.double_value = rng.choice([float("inf"), float("nan"), -1.0, 1e308])
            elif kind == 1:
                s.int64_value = rng.choice([-1, 2**63 - 1, -(2**63)])
            elif kind == 2:
                s.uint64_value = 2**64 - 1
            else:
                s.str_value = rng.choice(["", "abc", "1e999"])
        (tmp_path / "m.xplane.pb").write_bytes(xs.SerializeToString())
        _check(tmp_path / "m.xplane.pb", f"xplane mutation {i}")
