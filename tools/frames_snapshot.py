"""Behaviour snapshot: every output frame the CLI, the batch and the Python API give on the shared fixtures,
written by one tree and compared with another's (issue 30: a refactor proven frame by frame).

    python tools/frames_snapshot.py write OUT [--src SRC]     # run each case with SRC (default: this repo's src)
    python tools/frames_snapshot.py compare BASE NEW          # assert_frame_equal on every frame, stdout equal

Each case is a ``roofline`` command (run in a subprocess with ``PYTHONPATH=SRC``) that writes ``--out`` frames,
or an API call (``roofline.read`` / ``roofline.analyze``) in a worker process; its stdout, stderr and exit code
are kept too. A batch dataset of every fixture is written and compared table by table (rows sorted, the
per-run timestamps aside). Provenance is compared with ``ingested_at`` left out (a wall-clock time).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO.parent / "shared" / "fixtures").resolve()  # a worktree sees ../shared through a link: name it as main does
ROOTS = ("ncu", "traces", "nsys", "rocprof")
SKIP_NAMES = ("MANIFEST.md", "reference", "derived", "capture_traces")
#: the ncu CSV exports record no device: the one the tests pass
CSV_DEVICE = {"sm70": "V100 SXM2", "sm75": "T4", "sm80": "A100 SXM4 40GB"}
VLLM = "traces/vllm_decode_full-graph/graph_execution.pt.trace.json.gz"
SGLANG = "traces/torch_rocm7.2_mi300x_sglang-qwen3-8b_decode_hipgraph.pt.trace.json.gz"
SGLANG_CAPTURE = "traces/capture_traces/torch_rocm7.2_mi300x_sglang-qwen3-8b_decode_hipgraph/bs_32_rank0.json.gz"
NSYS_BEFORE = "nsys/nsys2026.2_h100x2_mfu-before.sqlite"
NSYS_AFTER = "nsys/nsys2026.2_h100x2_mfu-after.sqlite"


def inputs() -> list[str]:
    """Every shared fixture input, relative to SHARED (files, and rocprof-compute workload folders)."""
    out = []
    for kind in ROOTS:
        for p in sorted((SHARED / kind).iterdir()):
            if p.name not in SKIP_NAMES and p.name != "vllm_decode_full-graph":
                out.append(f"{kind}/{p.name}")
    return out + [VLLM]


def cases() -> list[tuple[str, list[str]]]:
    """(case name, roofline CLI arguments); ``{out}`` is the case's output folder, ``{s}`` SHARED."""
    out: list[tuple[str, list[str]]] = []
    for rel in inputs():
        name = rel.replace("/", "__")
        dev = ["--device", CSV_DEVICE[Path(rel).name[:4]]] if rel.endswith(".csv") else []
        src = "{s}/" + rel
        out.append((f"analyze__{name}", ["analyze", src, "--out", "{out}/frame.parquet", *dev]))
        out.append((f"by-kernel__{name}", ["analyze", src, "--by", "kernel", "--out", "{out}/frame.parquet", *dev]))
        out.append((f"spec__{name}", ["analyze", src, "--peaks", "spec", "--clock", "both", "--out",
                                      "{out}/frame.parquet", *dev]))
    out += [
        ("whole-ncu-folder", ["analyze", "{s}/ncu", "--out", "{out}/frame.parquet", "--by", "program"]),
        ("counters-join", ["analyze", "{s}/ncu/sm86_a10g_gemm-variants_metrics-all-regex.ncu-rep", "--counters",
                           "{s}/ncu/sm86_a10g_gemm-variants_roofline.ncu-rep", "--out", "{out}/frame.parquet"]),
        ("capture-vllm", ["analyze", "{s}/" + VLLM, "--capture",
                          "{s}/traces/vllm_decode_full-graph/capture_traces/graph_capture_rank_0.pt.trace.json.gz",
                          "--out", "{out}/frame.parquet"]),
        ("capture-sglang", ["analyze", "{s}/" + SGLANG, "--capture", "{s}/" + SGLANG_CAPTURE,
                            "--out", "{out}/frame.parquet"]),
        ("device-map", ["analyze", "{s}/traces/torch_h100_cuda-sync-unittest_uncompressed.pt.trace.json",
                        "--device-map", "NVIDIA H100=H100 SXM", "--out", "{out}/frame.parquet"]),
        ("peaks-named", ["analyze", "{s}/ncu/sm80_a100_mistic-selfjoin-fp64_full.ncu-rep", "--peaks", "H100 SXM",
                         "--out", "{out}/frame.parquet"]),
        ("peaks-roofline-csv", ["analyze", "{s}/rocprof/rocprof-compute_vcopy_MI200", "--peaks",
                                "{s}/rocprof/rocprof-compute_vcopy_MI200/roofline.csv", "--out", "{out}/frame.parquet"]),
        ("by-nvtx", ["analyze", "{s}/ncu/sm90_h800_pytorch-flashattn_full-nvtx.ncu-rep", "--by", "nvtx",
                     "--out", "{out}/frame.parquet"]),
        ("by-step", ["analyze", "{s}/traces/torch_v100_2rank-nccl_rank1_large216k.pt.trace.json.gz", "--by", "step",
                     "--out", "{out}/frame.parquet"]),
        ("by-process", ["analyze", "{s}/" + NSYS_BEFORE, "--by", "process", "--out", "{out}/frame.parquet"]),
        ("filters", ["analyze", "{s}/ncu", "--name", "gemm", "--bound", "memory", "--top", "5",
                     "--out", "{out}/frame.parquet"]),
        ("strict", ["analyze", "{s}/nsys", "--strict", "--out", "{out}/frame.parquet"]),
        ("compare-nsys", ["compare", "{s}/" + NSYS_BEFORE, "{s}/" + NSYS_AFTER, "--out", "{out}/frame.parquet",
                          "--fail-on", "time>5%"]),
        ("compare-ncu", ["compare", "{s}/ncu/sm86_a10g_gemm-variants_roofline.ncu-rep",
                         "{s}/ncu/sm86_a10g_gemm-variants_metrics-all-regex.ncu-rep", "--out", "{out}/frame.parquet"]),
        ("report-ncu", ["report", "{s}/ncu/sm86_a10g_gemm-variants_roofline.ncu-rep", "-o", "{out}/report"]),
        ("json-trace", ["analyze", "{s}/traces/torch2.6_h100_bert-small_infer_flops-flag.pt.trace.json.gz",
                        "--format", "json"]),
        ("batch", ["batch", "{s}/ncu", "{s}/traces", "{s}/nsys", "{s}/rocprof", "-o", "{out}/dataset", "-j", "2"]),
    ]
    return out


def _run(src: Path, out: Path, name: str, args: list[str]) -> None:
    case = out / name
    case.mkdir(parents=True, exist_ok=True)
    argv = [a.replace("{out}", str(case)).replace("{s}", str(SHARED)) for a in args]
    env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "200"}
    env.pop("ROOFLINE_DEBUG", None)
    p = subprocess.run([sys.executable, "-m", "roofline", *argv], capture_output=True, text=True, env=env,
                       cwd=case)
    (case / "result.json").write_text(json.dumps({"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr}))


API_SCRIPT = r"""
import sys
from pathlib import Path
import roofline
from roofline.schema import write_table
from roofline.errors import RooflineError
shared, out = Path(sys.argv[1]), Path(sys.argv[2])
for rel in sys.argv[3:]:
    case = out / ("api__" + rel.replace("/", "__"))
    case.mkdir(parents=True, exist_ok=True)
    try:
        k = roofline.read(shared / rel)
    except RooflineError as exc:
        (case / "error.txt").write_text(type(exc).__name__ + ": " + str(exc))
        continue
    write_table(k, case / "read.parquet")
    write_table(roofline.analyze(k), case / "analyze.parquet")
"""


def write(out: Path, src: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    todo = cases()
    rels = inputs()
    with ThreadPoolExecutor(max_workers=2) as pool:
        futs = [pool.submit(_run, src, out, n, a) for n, a in todo]
        half = len(rels) // 2
        for part in (rels[:half], rels[half:]):
            futs.append(pool.submit(subprocess.run, [sys.executable, "-c", API_SCRIPT, str(SHARED), str(out), *part],
                                    env={**os.environ, "PYTHONPATH": str(src)}, check=True))
        for f in futs:
            f.result()
    print(f"wrote {len(todo)} CLI cases and {len(rels)} API cases to {out}")


def _frames_equal(a: Path, b: Path, sort: bool = False) -> str | None:
    import pandas as pd
    from pandas.testing import assert_frame_equal

    from roofline.schema import get_provenance, read_table

    fa, fb = read_table(a), read_table(b)
    pa_, pb_ = ([{k: v for k, v in r.items() if k != "ingested_at"} for r in get_provenance(f)] for f in (fa, fb))
    if pa_ != pb_:
        return f"{a.name}: provenance differs"
    if sort:
        keys = [c for c in ("run", "file_id", "source_file", "kernel_id") if c in fa.columns]
        fa, fb = (f.sort_values(keys, kind="stable").reset_index(drop=True) for f in (fa, fb))
    try:
        assert_frame_equal(pd.DataFrame(fa), pd.DataFrame(fb), check_exact=True)
    except AssertionError as exc:
        return f"{a.name}: {str(exc)[:400]}"
    return None


def _dataset_equal(a: Path, b: Path) -> list[str]:
    import pyarrow.parquet as pq
    from pandas.testing import assert_frame_equal

    problems = []
    for table in ("kernels", "roofline", "runs", "errors"):
        fa, fb = (_table(d, table) for d in (a, b))
        if fa is None and fb is None:
            continue
        if fa is None or fb is None:
            problems.append(f"dataset {table}: present on one side only")
            continue
        try:
            assert_frame_equal(fa, fb, check_exact=True)
        except AssertionError as exc:
            problems.append(f"dataset {table}: {str(exc)[:400]}")
    del pq
    return problems


def _table(root: Path, table: str):
    from roofline.batch.dataset import open_dataset

    try:
        f = open_dataset(root, table)
    except Exception:  # noqa: BLE001 - a missing table
        return None
    f = f.drop(columns=[c for c in ("ingested_at", "written_at", "provenance_json") if c in f.columns])
    keys = [c for c in ("source_file", "kernel_id", "row_id") if c in f.columns]
    return f.sort_values(keys, kind="stable").reset_index(drop=True) if keys else f


def compare(base: Path, new: Path) -> int:
    problems: list[str] = []
    names = sorted(p.name for p in base.iterdir() if p.is_dir())
    for name in names:
        a, b = base / name, new / name
        if not b.exists():
            problems.append(f"{name}: missing in {new}")
            continue
        ra, rb = (a / "result.json", b / "result.json")
        if ra.exists():
            ja, jb = json.loads(ra.read_text()), json.loads(rb.read_text())
            for key in ("rc", "stdout", "stderr"):
                va, vb = (str(j[key]).replace(str(a), "<out>").replace(str(b), "<out>") for j in (ja, jb))
                if key != "rc":  # a batch's rate and timing line changes from run to run
                    va, vb = ("\n".join(l for l in v.splitlines() if "files/s" not in l) for v in (va, vb))
                # the JSON envelope's provenance says when each input was read (a wall-clock time)
                va, vb = (re.sub(r'"ingested_at":"[^"]*"', '"ingested_at":"-"', v) for v in (va, vb))
                if name == "batch":  # workers finish in any order
                    va, vb = (sorted(v.splitlines()) for v in (va, vb))
                if va != vb:
                    problems.append(f"{name}: {key} differs")
        for fa in sorted(a.rglob("*.parquet")):
            if "dataset" in fa.parts:
                continue
            fb = b / fa.relative_to(a)
            if not fb.exists():
                problems.append(f"{name}: {fa.relative_to(a)} missing")
            elif (msg := _frames_equal(fa, fb)) is not None:
                problems.append(f"{name}: {msg}")
        if (a / "dataset").exists():
            problems += [f"{name}: {m}" for m in _dataset_equal(a / "dataset", b / "dataset")]
        for ea in a.glob("error.txt"):
            if (b / "error.txt").read_text() != ea.read_text() if (b / "error.txt").exists() else True:
                problems.append(f"{name}: error differs")
    for p in problems:
        print(p)
    n_frames = sum(1 for p in base.rglob("*.parquet") if "dataset" not in p.parts)
    print(f"{len(names)} cases, {n_frames} frames + the dataset compared: {len(problems)} difference(s)")
    return 1 if problems else 0


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["write"]:
        src = Path(args[args.index("--src") + 1]) if "--src" in args else REPO / "src"
        write(Path(args[1]), src)
        return 0
    if args[:1] == ["compare"]:
        return compare(Path(args[1]), Path(args[2]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
