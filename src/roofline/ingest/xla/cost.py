"""XLA's cost analysis for GPU xplanes (through the ``xprof`` converter) and HLO-text helpers.

A GPU xplane carries no FLOPs or bytes: XProf rebuilds them at conversion time by running XLA's
GPU cost analysis over the ``Hlo Proto`` modules of the ``/host:metadata`` plane. We run the same
converter (the optional extra ``roofline[xla]``) and read its per-op table, the ``OpStats`` it
caches next to the xplane, with xprof's own ``op_stats_pb2``: exact integers, every op (its JSON
tools stop at 1000 ops and give rates, not counts).

The converter is C++ fed with an untrusted file, writes a cache file beside its input and logs
to stderr, so it runs in a child process on a copy in a temporary folder: a crash or a hang
costs the FLOPs (the rows say so), never the reader, and the user's folder is left untouched.
The child is forked from this process (:func:`roofline.ingest.isolate.run`) after xprof was
imported here once, when the first xplane needed it (~25 ms, ~20 MB, no threads started): an
interpreter start and that import per xplane cost ~100 ms CPU and 190-300 ms wall, the fork
~15 ms. This process never calls into the converter, so no lock of it is held at a fork.

Library GEMM custom-calls (cuBLAS/hipBLASLt ``__cublas$gemm``...) get 0 FLOPs and 0 bytes from
that analysis; :func:`library_gemm` gives them 2·B·M·N·K and operand + result bytes from the HLO
text's shapes.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from roofline.ingest import isolate

#: seconds the converter may take on one xplane (the fixtures take 0.01-0.5 s)
TIMEOUT_S = 600.0
_CHILD = (
    "import sys\n"
    "from xprof.convert import raw_to_tool_data as r\n"
    "data, _ = r.xspace_to_tool_data([sys.argv[1]], 'hlo_stats', {})\n"
    "sys.exit(0 if data is not None else 3)\n"
)
HBM = 1  # MemorySpace.MEMORY_SPACE_HBM; every other id is on-chip memory (VMEM, CMEM, SRAM)
READ, WRITE = 1, 2


@dataclass(frozen=True)
class OpCost:
    """XProf's totals for one HLO op over all its occurrences (all devices)."""

    occurrences: int
    time_ps: int
    flops: float
    model_flops: float
    bytes_accessed: float  # every memory space
    breakdown: tuple[tuple[int, int, float], ...]  # (operation_type, memory_space, bytes)
    category: str
    long_name: str


@dataclass
class CostTable:
    """Per (program_id, op name) costs, or why there are none."""

    ops: dict[tuple[int, str], OpCost] = field(default_factory=dict)
    reader: str = ""
    error: str | None = None
    peak_flop_per_s: float | None = None
    peak_hbm_bytes_per_s: float | None = None
    device_type: str = ""


def xprof_version() -> str | None:
    if importlib.util.find_spec("xprof") is None:
        return None
    try:
        from importlib.metadata import version

        return version("xprof")
    except Exception:  # noqa: BLE001 - an odd install still has a module; its version is unknown
        return "unknown"


def cost_table(path: Path) -> CostTable | None:
    """XProf's per-op costs of one xplane; None when the ``xprof`` extra is not installed."""
    ver = xprof_version()
    if ver is None:
        return None
    table = CostTable(reader=f"xprof {ver} (XLA GPU cost analysis)")
    with tempfile.TemporaryDirectory(prefix="roofline-xprof-") as tmp:
        copy = Path(tmp) / "host.xplane.pb"
        shutil.copyfile(path, copy)
        code, stderr = _run_converter(copy, tmp)
        if code is None:
            table.error = f"the xprof converter ran past {TIMEOUT_S:.0f} s"
            return table
        caches = sorted(Path(tmp).glob("*op_stats*.pb"))
        if code != 0 or not caches:
            tail = stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            table.error = f"the xprof converter failed (exit {code}: {tail[0][:200]})"
            return table
        _read_op_stats(caches[0].read_bytes(), table)
    return table


def _run_converter(copy: Path, tmp: str) -> tuple[int | None, bytes]:
    """(exit code, negative for a signal, as ``subprocess`` gives it; None past :data:`TIMEOUT_S`) and the
    stderr of the converter run on ``copy`` in a child, with ``tmp`` its working folder."""
    if not hasattr(os, "fork"):  # (Windows) a fresh interpreter
        try:
            proc = subprocess.run([sys.executable, "-c", _CHILD, str(copy)], cwd=tmp, capture_output=True, check=False,
                                  timeout=TIMEOUT_S, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        except subprocess.TimeoutExpired:
            return None, b""
        return proc.returncode, proc.stderr
    isolate.prepare_once("xprof-converter", _import_converter)
    status, stderr = isolate.run(lambda: _convert(copy), TIMEOUT_S, cwd=tmp)
    if status is None:
        return None, stderr
    return os.waitstatus_to_exitcode(status), stderr  # (negative for a signal, as subprocess gives)


def _import_converter() -> None:
    # a failure is left to the child: it imports again, and its traceback is the rows' reason
    with contextlib.suppress(Exception):
        from xprof.convert import raw_to_tool_data  # noqa: F401 - imported once here, inherited by every fork


def _convert(copy: Path) -> int:
    """The child: what ``_CHILD`` does in a fresh interpreter."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"  # read by the converter's logging at its first message
    from xprof.convert import raw_to_tool_data as r

    data, _ = r.xspace_to_tool_data([str(copy)], "hlo_stats", {})
    return 0 if data is not None else 3


def _read_op_stats(data: bytes, table: CostTable) -> None:
    from google.protobuf.message import DecodeError
    from xprof.protobuf import op_stats_pb2

    stats = op_stats_pb2.OpStats()
    try:
        stats.ParseFromString(data)
    except DecodeError as exc:
        table.error = f"xprof's op_stats cache did not decode ({exc})"
        return
    env = stats.perf_env
    table.peak_flop_per_s = env.peak_tera_flops_per_second * 1e12 or None
    bws = list(env.peak_bws_giga_bytes_per_second)
    table.peak_hbm_bytes_per_s = (bws[0] * 1e9 or None) if bws else None
    table.device_type = stats.run_environment.device_type
    for m in stats.device_op_metrics_db.metrics_db:
        if m.occurrences == 0:  # IDLE
            continue
        flops = m.flops_v2 if m.flops_v2 > 0 else float(m.flops)  # v2: XProf's roofline numerator
        model = m.model_flops_v2 if m.model_flops_v2 > 0 else float(m.model_flops)
        table.ops[(m.hlo_module_id, m.name)] = OpCost(
            m.occurrences, m.time_ps, flops, model, float(m.bytes_accessed),
            tuple((b.operation_type, b.memory_space, float(b.bytes_accessed)) for b in m.memory_accessed_breakdown),
            m.category, m.long_name)


def split_bytes(bytes_accessed: float, breakdown: tuple[tuple[int, int, float], ...],
                fallback: bool) -> dict[str, float]:
    """HBM read/write and on-chip read/write bytes of an op from its memory access breakdown.

    Without a breakdown, XProf counts every byte of ``bytes_accessed`` as HBM for the op, but its
    program row sums breakdowns only, so such an op adds no HBM bytes there when other ops have
    breakdowns. We take the program's side (``fallback`` False: HBM unknown, NaN) and keep the
    per-op figure in ``xla_accessed_bytes``; only when no op of the profile has a breakdown
    (``fallback`` True) are all bytes HBM, as XProf does at both levels.
    """
    nan = math.nan
    out = {"hbm_read_bytes": 0.0, "hbm_write_bytes": 0.0, "onchip_read_bytes": 0.0, "onchip_write_bytes": 0.0}
    for op_type, space, n in breakdown:
        where = "hbm" if space == HBM else "onchip"
        out[f"{where}_{'write' if op_type == WRITE else 'read'}_bytes"] += n
    out["hbm_bytes"] = out["hbm_read_bytes"] + out["hbm_write_bytes"]
    if not breakdown:
        out = dict.fromkeys(out, nan)
        out["hbm_bytes"] = bytes_accessed if fallback else nan
    return out


# --------------------------------------------------------------------------------------------
# HLO text: shapes, library GEMMs, and which roof an op's FLOPs belong to.

_SHAPE = re.compile(r"\b(pred|s4|u4|s8|u8|s16|u16|s32|u32|s64|u64|f16|bf16|f32|f64|c64|c128|f8e\w+|f4e\w+)"
                    r"\[([0-9,]*)\]")
_BYTES = {"pred": 1, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "s32": 4, "u32": 4, "s64": 8,
          "u64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "c64": 8, "c128": 16}
_GEMM_TARGET = re.compile(r'custom_call_target="(__cublas\$(?:gemm|lt\$matmul[^"]*)|__hipblas[^"]*|__rocblas[^"]*)"')
_CONTRACT = re.compile(r'"lhs_contracting_dimensions":\[([^\]]*)\]')
#: op names / HLO text of matrix work (dot, convolution, library GEMM and conv calls, Triton GEMMs)
_MATRIX = re.compile(r"(?:^|[^a-z])(?:dot|convolution|gemm|cublas|cudnn|hipblas|miopen|matmul)(?:[^a-z]|$)")
_TENSOR_PATH = {"bf16": "bf16", "f16": "fp16", "s8": "int8", "u8": "int8", "s4": "int4", "u4": "int4",
                "f64": "fp64"}


def _shapes(text: str) -> list[tuple[str, list[int]]]:
    return [(t, [int(d) for d in dims.split(",") if d]) for t, dims in _SHAPE.findall(text)]


def _nbytes(dtype: str, dims: list[int]) -> float:
    size = _BYTES.get(dtype, 1.0 if dtype.startswith(("f8", "f4")) else math.nan)
    if dtype.startswith("f4"):
        size = 0.5
    return size * math.prod(dims)


def _parts(long_name: str) -> tuple[str, str] | None:
    """(result text, operand text) of ``%x = <result> opcode(<operands>), attrs``."""
    m = re.match(r"\s*%?\S+\s*=\s*(.*?)\s+[\w$.-]+\((.*)$", long_name, re.DOTALL)
    if not m:
        return None
    depth, ops = 0, m.group(2)
    for i, ch in enumerate(ops):  # operands end at the ')' that closes the call
        depth += ch == "("
        if ch == ")":
            if depth == 0:
                return m.group(1), ops[:i]
            depth -= 1
    return m.group(1), ops


def largest_shape_elements(long_name: str) -> int | None:
    """Elements of the largest array among an HLO instruction's result and operands (None: no shapes)."""
    parts = _parts(long_name) if long_name else None
    shapes = _shapes(parts[0] + " " + parts[1]) if parts else []
    return max((math.prod(d) for _, d in shapes), default=None)


@dataclass(frozen=True)
class Gemm:
    flops: float  # one occurrence
    bytes: float  # operands + result, each once (the workspace buffer left out)
    formula: str
    operand_type: str


def library_gemm(long_name: str) -> Gemm | None:
    """FLOPs and bytes of a cuBLAS/hipBLASLt GEMM custom-call from its HLO text, or None."""
    if not _GEMM_TARGET.search(long_name):
        return None
    parts = _parts(long_name)
    if parts is None:
        return None
    result, operands = _shapes(parts[0]), _shapes(parts[1])
    if not result or len(operands) < 2:
        return None
    out_t, out = result[0]  # (result, workspace) tuples: the workspace is the last, u8/s8 buffer
    (lt, lhs), (_, rhs) = operands[0], operands[1]
    if len(out) < 2:
        return None
    contract = _CONTRACT.search(long_name)
    if contract is not None:
        dims = [int(d.strip().strip('"')) for d in contract.group(1).split(",") if d.strip()]
        k = math.prod(lhs[d] for d in dims if d < len(lhs))
        how = "dot_dimension_numbers of the backend config"  # |result| holds the batch: 2·|result|·K
    else:
        b = math.prod(out[:-2])  # XLA's GEMM rewriter puts batch dimensions first
        m_ = out[-2]
        if b * m_ == 0 or math.prod(lhs) % (b * m_):
            return None
        k = math.prod(lhs) // (b * m_)
        if k == 0 or math.prod(rhs) != b * k * out[-1]:
            return None  # the shapes do not form [B,M,K]x[B,K,N]: no guess
        how = "[B,M,K]x[B,K,N] read from the operand and result shapes"
    flops = 2.0 * math.prod(out) * k
    nbytes = sum(_nbytes(t, d) for t, d in operands) + _nbytes(out_t, out)
    shape = "x".join(str(d) for d in out)
    return Gemm(flops, nbytes, f"2·M·N·K with result {shape}, K={k} ({how})", lt)


_TARGET = re.compile(r'custom_call_target="([^"]*)"')


def unknown_custom_call(long_name: str) -> str | None:
    """Why a custom-call's FLOPs are unknown (XLA's cost analysis gives an opaque custom-call 0 FLOPs: a library
    or hand-written kernel, e.g. Transformer Engine's fused attention through composable_kernel), or None when
    the op is no custom-call. 0 FLOPs from it would read as "no arithmetic": it is unavailable instead."""
    m = _TARGET.search(long_name or "")
    if m is None and " custom-call(" not in (long_name or ""):
        return None
    target = m.group(1) if m else "?"
    return (f"XLA's cost analysis does not know the cost of custom-call {target!r} (an opaque library or "
            "hand-written kernel: it reports 0 FLOPs for it); profile the kernel with ncu/rocprof for its FLOPs")


def flop_column(category: str, op: str, long_name: str, tpu: bool) -> tuple[str, str | None]:
    """(flop column, tensor path) for an op's XLA FLOPs.

    TPU: one roof, the matrix unit's (the device plane's only compute peak, as XProf), so every op
    is ``flop_tensor``. GPU: matrix work (dot, convolution, library GEMM/conv calls) is tensor work
    of its first operand's type (an fp32 GEMM stays on the fp32 roof, as the PyTorch reader does);
    everything else is vector work, fp64 for f64 results and fp32 otherwise.
    """
    if tpu:
        return "flop_tensor", "xla"
    parts = _parts(long_name) if long_name else None
    result = _shapes(parts[0]) if parts else []
    operands = _shapes(parts[1]) if parts else []
    matrix = bool(_MATRIX.search(op.lower()) or _MATRIX.search(category.lower())
                  or re.search(r"\s(dot|convolution)\(", long_name)
                  or re.search(r'custom_call_target="[^"]*(gemm|matmul|conv|cublas|cudnn|hipblas|miopen)', long_name, re.IGNORECASE))
    if matrix and operands:
        dtype = operands[0][0]
        path = _TENSOR_PATH.get(dtype) or ("fp8" if dtype.startswith("f8") else None)
        if path:
            return "flop_tensor", path
    # XLA's GPU emitters compute most bf16/f16 elementwise math in f32 (upcast, then round), and not
    # every GPU has a half-precision vector figure (MI300X): the fp32 vector roof is the one that holds
    dtype = result[0][0] if result else (operands[0][0] if operands else "f32")
    return ("flop_fp64" if dtype == "f64" else "flop_fp32"), None
