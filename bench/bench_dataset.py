"""Dataset scale (issue 36): the batch on a mix of inputs, reading the dataset back, and `report`/`analyze` of
it, for this tree and a base tree in the same run (A/B), each command in a fresh process.

The mix: every shared fixture under 1 MB that is a file (ncu reports and CSVs, Kineto/XProf traces,
xplanes; ``--mix ncu``: the ncu reports and CSVs only), copied round-robin to ``--inputs`` files in 10 run
folders. Per tree:

1. ``roofline batch MIX -o DS -j WORKERS``: files/s from the batch's own log (``_batches/*.json``);
2. ``open_dataset(DS)`` (the roofline table) in a fresh process, the call alone;
3. ``roofline report DS`` and ``roofline analyze DS --format csv``: wall time and the process's user+sys CPU.

``--scale N``: this tree only (the base's report is quadratic in inputs), a synthetic dataset of N inputs made
of copies of the mix's dataset (new file ids and paths, rows as they are), then ``report``/``analyze`` of it and
``analyze --by program`` (the summary, streamed) with its peak resident memory.

    PYTHONPATH=src .venv/bin/python bench/bench_dataset.py [--inputs 500] [--mix all|ncu] [--workers 2]
        [--base /tmp/base/src] [--scale 5000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures"
PY = sys.executable

OPEN = r"""
import sys, time
from roofline.batch import open_dataset
t = time.perf_counter(); f = open_dataset(sys.argv[1]); dt = time.perf_counter() - t
print(f"{dt:.4f} {len(f)}")
"""


def mix(folder: Path, n: int, kind: str = "all") -> list[Path]:
    """``all``: every shared fixture file under 1 MB (ncu reports and CSVs, traces, xplanes); ``ncu``: the ncu
    reports and CSV exports among them (tens of ms each)."""
    skip = {"reference", "capture_traces", "rocprof"}  # other tools' outputs, companions, folder inputs
    sources = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.stat().st_size < 1 << 20
                     and not any(part in skip or part.startswith("reference") for part in p.parts)
                     and p.name != "MANIFEST.md" and (kind == "all" or "ncu" in p.parts))
    out = []
    for i in range(n):
        src = sources[i % len(sources)]
        run = folder / f"run{i % 10}"
        run.mkdir(parents=True, exist_ok=True)
        out.append(Path(shutil.copyfile(src, run / f"c{i:05d}_{src.name}")))
    return out


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, user+sys CPU seconds of the process (and its children), stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def peak_rss(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak resident MB (GNU time's maximum RSS) of one command."""
    t = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return wall, int(done.stderr.strip().splitlines()[-1]) / 1024


def tree(label: str, src: Path, inputs: Path, work: Path, workers: int) -> dict[str, float]:
    env = os.environ | {"PYTHONPATH": str(src)}
    ds = work / f"ds-{label}"
    wall, _, _ = timed([PY, "-m", "roofline", "batch", str(inputs), "-o", str(ds), "-j", str(workers)], env)
    log = json.loads(next((ds / "_batches").glob("*.json")).read_text())
    opened = subprocess.run([PY, "-c", OPEN, str(ds)], env=env, capture_output=True, text=True, check=True)
    open_s, rows = opened.stdout.split()
    rep = timed([PY, "-m", "roofline", "report", str(ds), "-o", str(work / f"rep-{label}")], env)
    ana = timed([PY, "-m", "roofline", "analyze", str(ds), "--format", "csv"], env)
    files = sum(1 for _ in ds.rglob("*.parquet"))
    return {"files_per_s": log["files_per_s"], "batch_s": log["elapsed_s"], "batch_wall_s": wall,
            "parquet_files": files, "open_s": float(open_s), "rows": int(rows), "report_wall_s": rep[0],
            "report_cpu_s": rep[1], "analyze_wall_s": ana[0], "analyze_cpu_s": ana[1]}


def synthetic(ds: Path, out: Path, copies: int) -> int:
    """A compacted dataset of ``copies`` copies of ``ds``'s live rows, each copy under new file ids and paths."""
    sys.path.insert(0, str(REPO / "src"))
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from roofline.batch import dataset as dset

    shutil.copytree(ds, out, ignore=shutil.ignore_patterns("*.parquet", "_batches"))
    inputs = 0
    for table in dset.TABLES:
        src = pq.read_table(ds / table / f"{dset.COMPACT}.parquet")
        schema = dset.table_schemas()[table]
        (out / table).mkdir(exist_ok=True)
        with pq.ParquetWriter(out / table / f"{dset.COMPACT}.parquet", schema) as writer:
            for k in range(copies):
                t = src
                for col in ("file_id", "source_file"):
                    if col in t.column_names:
                        i = t.column_names.index(col)
                        t = t.set_column(i, col, pc.binary_join_element_wise(pa.scalar(f"{k:05d}"), t.column(col), ""))
                writer.write_table(t)
        inputs += src.num_rows * copies if table in ("runs", "errors") else 0
    return inputs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", type=int, default=500)
    ap.add_argument("--mix", choices=["all", "ncu"], default="all", help="which fixtures are copied (see mix())")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--base", type=Path, default=None, help="src folder of the base tree (git archive BASE src)")
    ap.add_argument("--scale", type=int, default=0, help="also a synthetic dataset of this many inputs (this tree)")
    ap.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    a = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    work = a.keep or Path(tempfile.mkdtemp(prefix="bench-dataset-"))
    work.mkdir(parents=True, exist_ok=True)
    inputs = work / "in"
    if not inputs.exists():
        mix(inputs, a.inputs, a.mix)
    kinds = sorted({p.name.split("_", 1)[1] for p in inputs.rglob("*") if p.is_file()})
    print(f"{a.inputs} inputs: copies of {len(kinds)} fixtures, {sum(p.stat().st_size for p in inputs.rglob('*') if p.is_file()) / 1e6:.0f} MB")
    trees = [("this", REPO / "src")] + ([("base", a.base)] if a.base else [])
    results = {}
    for label, src in trees:
        for done in (work / f"ds-{label}", work / f"rep-{label}"):
            shutil.rmtree(done, ignore_errors=True)
        results[label] = tree(label, src, inputs, work, a.workers)
        print(label, json.dumps(results[label]))
    print("\n| measure | " + " | ".join(label for label, _ in trees) + (" | base / this |" if a.base else " |"))
    print("|---|" + "---|" * len(trees) + ("---|" if a.base else ""))
    for key in results["this"]:
        row = [f"{results[label][key]:.3f}" if isinstance(results[label][key], float) else str(results[label][key])
               for label, _ in trees]
        ratio = ""
        if a.base and isinstance(results["this"][key], float) and results["this"][key]:
            ratio = f" | {results['base'][key] / results['this'][key]:.2f}"
        print(f"| {key} | " + " | ".join(row) + ratio + " |")
    if a.scale:
        copies = max(1, a.scale // a.inputs)
        big = work / f"ds-x{copies}"
        shutil.rmtree(big, ignore_errors=True)
        n = synthetic(work / "ds-this", big, copies)
        env = os.environ | {"PYTHONPATH": str(REPO / "src")}
        rep = timed([PY, "-m", "roofline", "report", str(big), "-o", str(work / "rep-big")], env)
        ana = timed([PY, "-m", "roofline", "analyze", str(big), "--format", "csv"], env)
        summ = peak_rss([PY, "-m", "roofline", "analyze", str(big), "--by", "program", "--format", "csv"], env)
        print(f"\nsynthetic {n} inputs ({copies} copies): report wall {rep[0]:.1f} s cpu {rep[1]:.1f} s; "
              f"analyze wall {ana[0]:.1f} s cpu {ana[1]:.1f} s; analyze --by program wall {summ[0]:.1f} s, "
              f"peak RSS {summ[1]:.0f} MB")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if a.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
