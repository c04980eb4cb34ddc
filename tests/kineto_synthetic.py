"""Synthetic Kineto traces for the collectives' tests: what PyTorch 2.4+ writes for NCCL collectives
(record_param_comms, its launch, the kernel carrying Collective name / In and Out msg nelems / dtype / Group size /
Process Group Ranks), and compute kernels at known times (the timeline of exposed vs overlapped)."""

from __future__ import annotations

import json
from pathlib import Path


def kineto(path: Path, collectives: list[dict], compute: list[tuple[float, float]] = (), device: str =
           "NVIDIA H100 80GB HBM3", rank: int = 0, world: int = 16) -> Path:
    """A PyTorch 2.4-era trace: per collective a record_param_comms op, its cudaLaunchKernel and its NCCL kernel
    carrying the collective's args (as PyTorch writes them); ``compute``: (ts, dur) µs of other kernels."""
    ev: list[dict] = []
    ext = 1
    for c in collectives:
        args = {"Collective name": c["name"], "In msg nelems": c["in"], "Out msg nelems": c["out"],
                "Group size": c["n"], "dtype": c.get("dtype", "Float"), "Process Group Name": "0",
                "Process Group Description": "default_pg", "Process Group Ranks": str(c.get("ranks", _ranks(c["n"])))}
        ts = c["ts"]
        ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": ts - 5,
                   "dur": 4, "args": {"External id": ext, **args}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts - 4,
                   "dur": 2, "args": {"External id": ext, "correlation": 10_000 + ext}})
        ev.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                   "pid": 0, "tid": 7, "ts": ts, "dur": c["dur"],
                   "args": {"External id": ext, "device": 0, "stream": 7, "correlation": 10_000 + ext, **args}})
        ext += 1
    for ts, dur in compute:
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": ts - 5, "dur": 4,
                   "args": {"External id": ext}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts - 4,
                   "dur": 2, "args": {"External id": ext, "correlation": 10_000 + ext}})
        ev.append({"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>()",
                   "pid": 0, "tid": 8, "ts": ts, "dur": dur,
                   "args": {"External id": ext, "device": 0, "stream": 8, "correlation": 10_000 + ext}})
        ext += 1
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": device, "computeMajor": 9, "computeMinor": 0,
                                                     "numSms": 132}],
           "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world}, "traceEvents": ev}
    path.write_text(json.dumps(doc))
    return path


def _ranks(n: object) -> list[int]:
    return list(range(n)) if isinstance(n, int) and not isinstance(n, bool) and 0 < n < 4096 else []
