"""Dataset scale (issue 36): the batch on a mix of inputs, reading the dataset back, and `report`/`analyze` of
it, for this tree and a base tree in the same run (A/B), each command in a fresh process.

The mix: every shared fixture under 1 MB that is a file (ncu reports and CSVs, Kineto/XProf traces,
xplanes; ``--mix ncu``: the ncu reports and CSVs only), copied round-robin to ``--inputs`` files in 10 run
folders. Per tree:

1. ``roofline batch MIX -o DS -j WORKERS`` (``run_batch`` with the CLI's defaults): files/s from the batch's own
   log (``_batches/*.json``), the workers' CPU per input and the driver's CPU (load-proof, unlike files/s);
2. ``open_dataset(DS)`` (the roofline table) in a fresh process, the call alone;
3. ``roofline report DS`` and ``roofline analyze DS --format csv``: wall time and the process's user+sys CPU,
   the median of ``--rounds`` runs (default 1), the trees alternating, after one untimed run of each command
   per tree: the bytecode of the tree and its imports is then cached (under the work folder:
   ``PYTHONPYCACHEPREFIX``, with ``PYTHONDONTWRITEBYTECODE`` dropped; an installed package has its ``.pyc``, a
   tree run with ``PYTHONDONTWRITEBYTECODE`` compiles ~100 modules per command) and the dataset's pages read.

``--scale N [N ...]``: this tree only (the base's report is quadratic in inputs), for each N a synthetic dataset
of N inputs made of copies of the mix's dataset (new file ids and paths, rows as they are), then ``report``/
``analyze`` of it (only for N up to ``--full-upto``, default every N) and ``analyze --by program`` (the summary,
streamed) with its peak resident memory. ``--reuse`` (with ``--keep``): the kept dataset of an earlier run is
the mix's dataset, the batch and its measures are not run again (with ``--base``, both trees' ``report``/
``analyze`` then read this tree's kept dataset: an A/B on the same files). ``--open N``: ``open_dataset`` of this tree's
dataset in N fresh processes, the call alone, CPU and wall seconds.

    PYTHONPATH=src .venv/bin/python bench/bench_dataset.py [--inputs 500] [--mix all|ncu] [--workers 2]
        [--base /tmp/base/src] [--no-report] [--rounds N] [--open N] [--scale 5000 ...] [--full-upto N]
        [--keep DIR [--reuse]]
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
t, c = time.perf_counter(), time.process_time(); f = open_dataset(sys.argv[1])
print(f"{time.perf_counter() - t:.4f} {len(f)} {time.process_time() - c:.4f}")
"""


#: ``roofline batch INPUTS -o DS -j N`` as the CLI runs it (its options' defaults), then the CPU seconds of
#: the driver and of its workers: the workers are children of the forkserver, which reaps them (a worker's
#: ``join`` returns once it has), so their CPU and their own children's is the forkserver's ``cutime + cstime``
BATCH = r"""
import json, os, resource, sys
from multiprocessing import forkserver
from roofline.batch import run_batch
s = run_batch([sys.argv[1]], sys.argv[2], workers=int(sys.argv[3]))
fields = open(f"/proc/{forkserver._forkserver._forkserver_pid}/stat").read().rpartition(")")[2].split()
tick = os.sysconf("SC_CLK_TCK")
me = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"workers_cpu_s": (int(fields[13]) + int(fields[14])) / tick, "driver_cpu_s": me.ru_utime + me.ru_stime,
                  "inputs": s.ok + s.failed}))
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
    wall, _, out = timed([PY, "-c", BATCH, str(inputs), str(ds), str(workers)], env)
    cpu = json.loads(out.strip().splitlines()[-1])
    log = json.loads(next((ds / "_batches").glob("*.json")).read_text())
    opened = subprocess.run([PY, "-c", OPEN, str(ds)], env=env, capture_output=True, text=True, check=True)
    open_s, rows, _ = opened.stdout.split()
    files = sum(1 for _ in ds.rglob("*.parquet"))
    return {"files_per_s": log["files_per_s"], "batch_s": log["elapsed_s"], "batch_wall_s": wall,
            "workers_cpu_ms_per_input": 1000 * cpu["workers_cpu_s"] / max(1, cpu["inputs"]),
            "driver_cpu_s": cpu["driver_cpu_s"], "parquet_files": files, "open_s": float(open_s), "rows": int(rows)}


def cached_env(src: Path, work: Path) -> dict[str, str]:
    """The environment of a timed command: ``src`` first, bytecode cached under ``work`` (see the module's note)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPATH": str(src), "PYTHONPYCACHEPREFIX": str(work / "pycache")}


def commands(trees: list[tuple[str, Path]], datasets: dict[str, Path], work: Path,
             rounds: int) -> dict[str, dict[str, float]]:
    """``report`` and ``analyze --format csv`` of each tree's dataset: one untimed run of each, then ``rounds``
    timed ones, the trees alternating; the median of each measure (each run printed with the load average)."""
    def argv(label: str) -> dict[str, list[str]]:
        ds = str(datasets[label])
        return {"report": [PY, "-m", "roofline", "report", ds, "-o", str(work / f"rep-{label}")],
                "analyze": [PY, "-m", "roofline", "analyze", ds, "--format", "csv"]}

    envs = {label: cached_env(src, work) for label, src in trees}
    for label, _ in trees:
        for cmd in argv(label).values():
            timed(cmd, envs[label])
    got: dict[str, dict[str, list[float]]] = {label: {} for label, _ in trees}
    for r in range(rounds):
        for label, _ in trees:
            for name, cmd in argv(label).items():
                load = os.getloadavg()[0]
                wall, cpu, _ = timed(cmd, envs[label])
                got[label].setdefault(f"{name}_wall_s", []).append(wall)
                got[label].setdefault(f"{name}_cpu_s", []).append(cpu)
                print(f"round {r + 1} {label} {name}: cpu {cpu:.2f} s, wall {wall:.2f} s (load {load:.2f})", flush=True)
    return {label: {k: sorted(v)[len(v) // 2] for k, v in m.items()} for label, m in got.items()}


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
                writer.write_table(t.cast(schema))  # (the joined ids come back nullable; the schema's are not)
        inputs += src.num_rows * copies if table in ("runs", "errors") else 0
    return inputs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", type=int, default=500)
    ap.add_argument("--mix", choices=["all", "ncu"], default="all", help="which fixtures are copied (see mix())")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--base", type=Path, default=None, help="src folder of the base tree (git archive BASE src)")
    ap.add_argument("--scale", type=int, nargs="*", default=[],
                    help="also synthetic datasets of these many inputs (this tree)")
    ap.add_argument("--full-upto", type=int, default=None, help="report/analyze of the synthetic ones up to N inputs")
    ap.add_argument("--no-report", action="store_true", help="the batch and open_dataset only (an A/B of the batch)")
    ap.add_argument("--rounds", type=int, default=1, help="timed runs of report/analyze per tree, alternating")
    ap.add_argument("--open", type=int, default=0, metavar="N", help="open_dataset in N fresh processes, CPU and wall")
    ap.add_argument("--reuse", action="store_true", help="with --keep: the kept dataset, no batch run again")
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
    results: dict[str, dict[str, float]] = {}
    for label, src in trees if not (a.reuse and a.keep) else ():
        for done in (work / f"ds-{label}", work / f"rep-{label}"):
            shutil.rmtree(done, ignore_errors=True)
        results[label] = tree(label, src, inputs, work, a.workers)
        print(label, json.dumps(results[label]))
    if not a.no_report and (results or (a.reuse and a.keep)):
        reused = not results  # (--reuse: every tree reads this tree's kept dataset)
        datasets = {label: work / ("ds-this" if reused else f"ds-{label}") for label, _ in trees}
        for label, timings in commands(trees, datasets, work, a.rounds).items():
            results.setdefault(label, {}).update(timings)
    if results:
        table(results, trees, a.base is not None)
    if a.open:
        opens(work / "ds-this", a.open)
    for n_in in a.scale:
        scaled(work, a.inputs, n_in, a.full_upto is None or n_in <= a.full_upto)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if a.keep is None:
        shutil.rmtree(work, ignore_errors=True)


def opens(ds: Path, n: int) -> None:
    """``open_dataset(ds)`` in ``n`` fresh processes: the call alone, wall and CPU seconds."""
    env = os.environ | {"PYTHONPATH": str(REPO / "src")}
    runs = [subprocess.run([PY, "-c", OPEN, str(ds)], env=env, capture_output=True, text=True, check=True)
            .stdout.split() for _ in range(n)]
    wall, cpu = sorted(float(r[0]) for r in runs), sorted(float(r[2]) for r in runs)
    print(f"\nopen_dataset ({runs[0][1]} rows), {n} fresh processes: CPU best {cpu[0]:.3f} s (median "
          f"{cpu[n // 2]:.3f}), wall best {wall[0]:.3f} s (median {wall[n // 2]:.3f})")


def table(results: dict, trees: list, base: bool) -> None:
    print("\n| measure | " + " | ".join(label for label, _ in trees) + (" | base / this |" if base else " |"))
    print("|---|" + "---|" * len(trees) + ("---|" if base else ""))
    for key in results["this"]:
        row = [f"{results[label][key]:.3f}" if isinstance(results[label][key], float) else str(results[label][key])
               for label, _ in trees]
        ratio = ""
        if base and isinstance(results["this"][key], float) and results["this"][key]:
            ratio = f" | {results['base'][key] / results['this'][key]:.2f}"
        print(f"| {key} | " + " | ".join(row) + ratio + " |")


def scaled(work: Path, inputs: int, n_in: int, full: bool) -> None:
    """A synthetic dataset of about ``n_in`` inputs (copies of the mix's): report/analyze (when ``full``) and the
    streamed summary with its peak resident memory."""
    copies = max(1, n_in // inputs)
    big = work / f"ds-x{copies}"
    shutil.rmtree(big, ignore_errors=True)
    n = synthetic(work / "ds-this", big, copies)
    size = sum(p.stat().st_size for p in big.rglob("*.parquet")) / 1e6
    env = os.environ | {"PYTHONPATH": str(REPO / "src")}
    line = f"\nsynthetic {n} inputs ({copies} copies, {size:.0f} MB of Parquet):"
    if full:
        rep = timed([PY, "-m", "roofline", "report", str(big), "-o", str(work / "rep-big")], env)
        ana = timed([PY, "-m", "roofline", "analyze", str(big), "--format", "csv"], env)
        line += f" report wall {rep[0]:.1f} s cpu {rep[1]:.1f} s; analyze wall {ana[0]:.1f} s cpu {ana[1]:.1f} s;"
    summ = peak_rss([PY, "-m", "roofline", "analyze", str(big), "--by", "program", "--format", "csv"], env)
    print(line + f" analyze --by program wall {summ[0]:.1f} s, peak RSS {summ[1]:.0f} MB", flush=True)
    shutil.rmtree(big, ignore_errors=True)
    shutil.rmtree(work / "rep-big", ignore_errors=True)


if __name__ == "__main__":
    main()
