"""Why a kernel sits where it does: the cause of a point above its roof, the evidence behind "latency-limited",
the pipe that binds, Nsight Compute's own findings, and one next step, each from what the profile records.

``analyze`` calls :func:`diagnose` on the roofline frame. It adds ``binding_pipe``, ``binding_pipe_pct``,
``co_critical_pipes``, ``pipe_ceiling_flop_per_s`` (``pipes.py``), ``latency_cause`` and ``next_step``, and rewrites
``analysis_note`` parts (every one from its own row: a batch dataset's scan analyses record batches alone; what to
collect next reads whole profiles and is ``collect.py``'s, outside this stage):

* above a roof: the hierarchy's "no recorded evidence explains it" is replaced by the cause the evidence
  supports (the reader's flags, an algorithm named by the kernels, a tensor-core kernel whose FLOPs are filed
  under a CUDA-core precision, 2:4 sparsity, a clock above the peak's basis, a fallback peak source, counters
  measuring past a spec roof). "Wrong peak" is said only for the last two;
* latency-limited: the evidence (under one wave, a tail wave, achieved vs theoretical occupancy, the top warp
  stalls), or, with none recorded, what would tell;
* ``pipe:`` where the binding pipe limits the kernel below its FLOP roof, ``ncu:`` the launch's top one or two
  rule results by estimated speedup, ``next step:`` the step the evidence points to.

Every rule is in ``docs/analysis.md``; kernel-name patterns and fallback peak sources are data
(``evidence.toml``). Rows are grouped by what each text depends on, so a 200,000-row trace renders each
distinct text once.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from roofline.analysis import collect
from roofline.analysis.hierarchy import LATENCY_NOTE, UNEXPLAINED
from roofline.analysis.pipes import (
    binding,
    finding_title,
    focus_text,
    null_count,
    nulls,
    pipe_bound,
    pipe_columns,
    pipe_label,
    pipe_utilisation,
    present,
    top_findings,
)
from roofline.analysis.remedies import PIPE_STEPS, STALLS
from roofline.analysis.render import Factor, Source, by_position, categorical
from roofline.frames import group_ids

#: achieved occupancy under this fraction of the theoretical is "low" (ncu's AchievedOccupancy rule fires on
#: such gaps; 0.8 leaves room for the warps a kernel's ramp-up and tail never fill)
LOW_OCCUPANCY_RATIO = 0.8
#: a grid of at most this many waves (with a partial last one) shows a tail effect worth naming: the partial
#: wave is then at least 1/4 of the waves
TAIL_MAX_WAVES = 4
#: stall reasons under this many warps per issued instruction are not named
STALL_FLOOR = 1.0
#: frames this small render every row's texts without grouping (the keys cost more than the texts)
FEW_ROWS = 64
#: a memory roof used at least this much (% of roof) is "at the roof"; ncu's SpeedOfLight rule calls 60 % high
HIGH_PCT = 60.0

_MATMUL_NAME = re.compile(r"gemm|conv|matmul|wmma|mma|cutlass|cublas|attention|flash", re.IGNORECASE)
_CLOCK = re.compile(r"(\d+(?:\.\d+)?) ?(MHz|GHz)")


@lru_cache(maxsize=1)
def evidence_data() -> dict[str, list[dict[str, Any]]]:
    """``evidence.toml`` with each entry's pattern compiled (``rx``)."""
    text = resources.files(__package__).joinpath("evidence.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    return {k: [dict(e, rx=re.compile(e["pattern"], re.IGNORECASE)) for e in v] for k, v in data.items()}


def match(kind: str, texts: Sequence[str]) -> tuple[dict[str, Any], str] | None:
    """The first entry of ``kind`` whose pattern one of ``texts`` matches, and that text."""
    for e in evidence_data().get(kind, ()):
        for t in texts:
            if t and e["rx"].search(t):
                return e, t
    return None


class _Rows:
    """Column values of a frame at one row position: read only for the rows a text is rendered from."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self._cols: dict[str, Any] = {}

    def _value(self, name: str, r: int) -> Any:
        col = self._cols.get(name, False)
        if col is False:
            s = self.frame.get(name)
            col = self._cols[name] = None if s is None else by_position(s, whole=len(self.frame) <= FEW_ROWS)
        return None if col is None else col[r]

    def text(self, name: str, r: int) -> str:
        v = self._value(name, r)
        return "" if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else str(v)

    def num(self, name: str, r: int) -> float:
        v = self._value(name, r)
        try:
            return float(v) if v is not None and v is not pd.NA else math.nan
        except (TypeError, ValueError):
            return math.nan

    def kernels(self, r: int) -> list[str]:
        """The kernel names a row stands for: its own, its GPU kernel's, and a trace op's kernels."""
        names = [self.text("kernel_name", r), self.text("mangled_name", r)]
        names += self.text("op_kernels", r).split("\n")
        return [n for n in names if n]


def _cut(text: str, n: int = 70) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# ---- above a roof --------------------------------------------------------------------------------------


def _clock_basis(source: str) -> float | None:
    """The clock a peak is taken at, where its source names one ("… 1410 MHz", "1.41 GHz")."""
    m = _CLOCK.findall(source)
    if not m:
        return None
    value, unit = m[-1]
    return float(value) * (1e9 if unit == "GHz" else 1e6)


def over_cause(v: _Rows, r: int, levels: Sequence[str]) -> str | None:
    """The cause the row's evidence supports for its point above its binding roof (None: nothing tells)."""
    found = match("flag", [v.text("flags", r)])
    if found:
        return str(found[0]["why"])
    roof = v.text("binding_roof", r)
    if roof == "compute":
        return _over_compute(v, r)
    if roof in levels:
        bw_src = v.text(f"peak_{roof}_bytes_per_s_source", r)
        fb = match("fallback", [bw_src])
        if fb:
            return f"likely a wrong peak: the {roof.upper()} roof is {fb[0]['why']}"
        if v.text(f"{roof}_bytes_source", r).startswith("counters") and bw_src.startswith("spec"):
            return (f"a wrong peak for this device or memory clock: the profile's own counters measured more bytes/s "
                    f"than this spec {roof.upper()} roof (--peaks counters uses the report's own)")
    return None


def _slot(precision: str) -> str:
    """The FLOP column a precision's count is in (``mixed``, ``none``: fp32's, the roof drawn for them)."""
    base = precision.split(":")[0]
    return base if base in ("fp64", "fp32", "fp16", "tensor") else "fp32"


def _over_compute(v: _Rows, r: int) -> str | None:
    precision = v.text("compute_precision", r)
    slot = _slot(precision)
    flop_src = v.text(f"flop_{slot}_source", r)
    measured = flop_src.startswith(("counters", "measured"))
    names = v.kernels(r)
    peak_src = v.text("peak_flop_per_s_source", r)
    if not measured:
        alg = match("algorithm", names)
        if alg:
            e, k = alg
            return (f"{e['name']}: {e['library'].split(' (')[0]} kernel {_cut(k)} {e['why']}; the FLOPs are the direct "
                    "count from the shapes, so the point sits above a right peak")
    if precision in ("fp32", "fp16", "fp64"):
        tc = match("tensor_cores", names)
        if tc:
            return (f"the kernel {_cut(tc[1])} runs on tensor cores, but its FLOPs are filed under {precision} (from the "
                    f"dtype): the count misses the pipe that did the work, and the {precision} roof is not the one it ran "
                    "against")
        util = pipe_utilisation(v.text("pipe_pct_json", r)) if v.text("pipe_pct_json", r) else {}
        tensor_busy = max((u for p, u in util.items() if p.startswith(("tensor", "mfma"))), default=0.0)
        if tensor_busy > 1.0 and not v.num("flop_tensor", r) > 0:
            return (f"the tensor pipe was {tensor_busy:.1f}% busy but the FLOP counters hold no tensor FLOPs: the count "
                    f"misses a pipe, and the {precision} roof is not the only one it ran against")
    if "sparsity_on" in v.text("tensor_path", r) and "sparse" not in peak_src:
        return "2:4 sparse tensor work (sparsity_on) against a dense peak: the sparse roof is 2× higher"
    if measured:
        alg = match("algorithm", names)
        if alg and alg[0]["name"].startswith("2:4"):
            return f"{alg[0]['name']}: the kernel ({_cut(alg[1])}) {alg[0]['why']}"
    basis, clock = _clock_basis(peak_src), v.num("sm_clock_hz", r)
    if basis and clock > basis * 1.01:
        return (f"the kernel ran at {clock / 1e6:.0f} MHz, above the {basis / 1e6:.0f} MHz its peak is taken at: at its "
                f"own clock the roof is {clock / basis:.3f}× higher")
    fb = match("fallback", [peak_src])
    if fb:
        return f"likely a wrong peak: the compute peak is {fb[0]['why']}"
    if measured and "spec" in peak_src:
        return ("a wrong peak for this device or clock: the profile's own FLOP counters measured more than this spec "
                "roof (--peaks counters uses the report's own)")
    return None


# ---- latency-limited -------------------------------------------------------------------------------------


def _stalls(text: str, most: int = 2) -> list[tuple[str, float]]:
    try:
        raw = json.loads(text) if text else {}
    except ValueError:
        return []
    items = [(str(k), float(x)) for k, x in raw.items() if isinstance(x, (int, float)) and k != "selected"] \
        if isinstance(raw, dict) else []
    return [kv for kv in sorted(items, key=lambda kv: -kv[1]) if kv[1] >= STALL_FLOOR][:most]


def _blocks(v: _Rows, r: int) -> float:
    dims = [v.num(f"grid_{a}", r) for a in "xyz"]
    return math.prod(1.0 if math.isnan(d) else d for d in dims) if not math.isnan(dims[0]) else math.nan


def latency_evidence(v: _Rows, r: int) -> list[str]:
    """What the profile records about a latency-limited row: waves, occupancy, stalls (empty: nothing)."""
    parts = []
    waves, sms, blocks = v.num("waves_per_sm", r), v.num("sm_count", r), _blocks(v, r)
    if waves < 1:  # (NaN compares false: nothing recorded)
        parts.append(f"under one wave (launch__waves_per_multiprocessor {waves:.2f}: the grid fills "
                     f"{100 * waves:.0f}% of the GPU's resident-block slots)")
    elif math.isnan(waves) and blocks < sms:
        parts.append(f"under one wave: {blocks:.0f} blocks for {sms:.0f} SMs")
    elif waves >= 1 and waves % 1 > 0.01 and math.ceil(waves) <= TAIL_MAX_WAVES:
        parts.append(f"tail effect: {waves:.2f} waves, the partial last wave up to {100 / math.ceil(waves):.0f}% of "
                     "the time at lower occupancy")
    ach, theo = v.num("achieved_occupancy_pct", r), v.num("theoretical_occupancy_pct", r)
    if theo > 0 and ach < LOW_OCCUPANCY_RATIO * theo:  # (NaN compares false)
        parts.append(f"achieved occupancy {ach:.1f}% of a theoretical {theo:.1f}%")
    top = _stalls(v.text("warp_stalls_json", r))
    if top:
        parts.append("top warp stalls: " + ", ".join(f"{k} {x:.1f}" for k, x in top)
                     + " warps per issued instruction (" + STALLS.get(top[0][0], ("", ""))[0] + ")")
    return parts


def latency_cause(v: _Rows, r: int) -> str:
    """A latency-limited row's evidence as a short tidy value ("under one wave; low achieved occupancy; stall:
    long_scoreboard"), or "unavailable: …" with what would tell, where nothing is recorded."""
    kinds = []
    for part in latency_evidence(v, r):
        if part.startswith("under one wave"):
            kinds.append("under one wave")
        elif part.startswith("tail effect"):
            kinds.append("tail effect")
        elif part.startswith("achieved occupancy"):
            kinds.append("low achieved occupancy")
        elif part.startswith("top warp stalls"):
            kinds += [f"stall: {k}" for k, _ in _stalls(v.text("warp_stalls_json", r))]
    if kinds:
        return "; ".join(kinds)
    return f"unavailable: nothing recorded tells which (collect with {_what_would_tell(v, r).removesuffix(' would')})"


def _what_would_tell(v: _Rows, r: int) -> str:
    if collect.is_amd(v.text("compute_capability", r), v.text("device_name", r)):
        return "rocprof-compute profile (its occupancy and wavefront panels) would"
    return "ncu --section LaunchStats --section Occupancy --section WarpStateStats would"


# ---- next step -----------------------------------------------------------------------------------------


def _tensor_eligible(v: _Rows, r: int) -> str | None:
    """How to move an fp32/fp16 matmul/conv on CUDA cores to tensor cores on this GPU (None: not eligible)."""
    precision = v.text("compute_precision", r)
    if precision not in ("fp32", "fp16") or v.num("flop_tensor", r) > 0:
        return None
    if not (v.text("op_kernels", r) or _MATMUL_NAME.search(v.text("kernel_name", r) + " " + v.text("mangled_name", r))):
        return None
    cc = v.text("compute_capability", r)
    if collect.is_amd(cc, v.text("device_name", r)):
        if re.match(r"gfx9(0[8a]|4\d|5\d)", cc):
            return "use the matrix cores: bf16/fp16 autocast (MFMA)"
        # (a ROCm trace gives no gfx target: MI100 and later have matrix cores, consumer Radeons other ones)
        return "use the matrix cores if this GPU has them (MFMA: MI100/gfx908 and later): bf16/fp16 autocast"
    m = re.match(r"(\d+)\.(\d+)", cc)
    if m and int(m.group(1)) >= 8:
        return "use tensor cores: TF32 (torch.backends.cuda.matmul.allow_tf32, cudnn.allow_tf32) or bf16/fp16 autocast"
    if m and int(m.group(1)) == 7:
        return "use tensor cores: fp16 autocast (Volta/Turing tensor cores take fp16, not fp32)"
    return None


def next_step(v: _Rows, r: int, over: str | None, lat: list[str], bound_pipe: bool, is_over: bool = False) -> str | None:
    """One step the row's evidence points to (None: no evidence for any). ``over``: the cause of a point above
    its roof (None where nothing recorded tells: then no step, the note says what to check)."""
    if over is not None and over.startswith(("likely a wrong peak", "a wrong peak")):
        return "fix the roof: --peaks with the right GPU, or a peaks file with measured figures"
    if over is not None and any(over.startswith(e["name"]) for e in evidence_data().get("algorithm", ())):
        return "compare it by time, not FLOP/s: the algorithm does fewer multiplies than the FLOPs count"
    if is_over:
        return _tensor_eligible(v, r) if over is not None and v.text("binding_roof", r) == "compute" else None
    if bound_pipe:
        pipe = v.text("binding_pipe", r)
        if pipe.startswith("fma"):
            return _tensor_eligible(v, r) or "the FMA pipe is saturated: fewer FP32 instructions, or tensor cores"
        return PIPE_STEPS.get(pipe.split("_")[0], f"the {pipe_label(pipe)} pipe limits it: fewer of its instructions")
    bound, roof = v.text("bound", r), v.text("binding_roof", r)
    if (bound == "compute-bound" or (over is not None and roof == "compute")) and (step := _tensor_eligible(v, r)):
        return step
    if bound == "latency-limited" and lat:
        first = lat[0]
        if first.startswith("under one wave"):
            return "more parallelism per launch (more blocks: split the work, smaller tiles), or fewer, larger launches"
        if first.startswith("tail effect"):
            return f"size the grid to whole waves ({v.num('waves_per_sm', r):.2f} now)"
        if first.startswith("achieved occupancy"):
            return "balance the work across warps and blocks: the GPU could hold more warps than it kept busy"
        top = _stalls(v.text("warp_stalls_json", r), 1)
        if top and STALLS.get(top[0][0], ("", ""))[1]:
            return STALLS[top[0][0]][1]
    if bound == "memory-bound":
        pct = v.num("pct_of_roof", r)
        finding = next((f for f in top_findings(v.text("ncu_rules_json", r), 5)
                        if f.get("section", "").startswith("MemoryWorkloadAnalysis")
                        or f.get("rule") in ("UncoalescedGlobalAccess", "UncoalescedSharedAccess", "SharedMemoryConflicts")),
                       None)
        if finding:
            return f"fix the access pattern: {finding_title(finding)} ({focus_text(finding)})"
        if pct < HIGH_PCT:  # (NaN: unknown, compares false)
            where = ("rocprof-compute analyze: its vL1D and L2 panels"
                     if collect.is_amd(v.text("compute_capability", r), v.text("device_name", r))
                     else "ncu --section MemoryWorkloadAnalysis_Tables --section SourceCounters")
            return (f"memory-bound well under the {roof.upper()} roof: look at the access pattern (coalescing, sectors per "
                    f"request: {where})")
        return "at the memory roof: move fewer bytes (fuse with neighbouring ops, narrower types, reuse through caches)"
    tops = top_findings(v.text("ncu_rules_json", r), 1)
    if tops:
        return f"ncu's top estimate: {finding_title(tops[0])}"
    return None


# ---- the frame ------------------------------------------------------------------------------------------


def _keys(frame: pd.DataFrame, rows: np.ndarray, columns: Sequence[str]) -> list[np.ndarray]:
    """Small integer keys (0: missing) of ``columns`` at ``rows`` (positions), without converting a column to
    Python objects: Categorical codes, Arrow hashing of strings (only the rows asked for where they are few:
    ``render.Factor``), numpy factorizing of numbers."""
    every = len(rows) == len(frame)  # (rows are all the rows, in order: no gather)
    mask = None
    if not every:
        mask = np.zeros(len(frame), bool)
        mask[rows] = True
    out = []
    for c in columns:
        if c not in frame:
            continue
        s = frame[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            codes = np.asarray(s.cat.codes).astype(np.int64)
            out.append((codes if every else codes[rows]) + 1)
        elif nulls(s) == len(frame):  # (a column no row of this format has: no key)
            continue
        elif pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
            values = s.to_numpy(dtype=float, na_value=np.nan)
            out.append(pd.factorize(values if every else values[rows], use_na_sentinel=True)[0].astype(np.int64) + 1)
        else:
            keys = Factor(frame, c, rows=mask).key().astype(np.int64)
            out.append(keys if every else keys[rows])
    return out


class _Groups:
    """``fn(first row)`` per group of ``rows`` that agree on ``parts``: ``code`` over all rows (0: not in
    ``rows``; g + 1: group g) and ``texts[g]``."""

    def __init__(self, n: int, rows: np.ndarray, parts: list[np.ndarray] | None, fn: Callable[[int], Any]) -> None:
        self.code = np.zeros(n, np.int64)
        self.texts: list[Any] = []
        if parts is None:  # (a few rows: each its own group, no keys computed)
            parts = [np.arange(len(rows), dtype=np.int64)]
        if len(rows):
            ids, first = group_ids(parts or [np.zeros(len(rows), np.int64)], len(rows))
            self.code[rows] = ids + 1
            self.texts = [fn(int(rows[f])) for f in first]

    def at(self, r: int) -> Any:
        c = self.code[r]
        return self.texts[c - 1] if c else None


#: what the cause of a point above a compute roof reads (as keys; the FLOP sources only as "measured or not")
_OVER_COMPUTE = ("flags", "compute_precision", "kernel_name", "mangled_name", "op_kernels", "peak_flop_per_s_source",
                 "tensor_path", "pipe_pct_json")


def _over_keys(frame: pd.DataFrame, rows: np.ndarray, levels: Sequence[str]) -> list[np.ndarray]:
    """Keys of what :func:`over_cause` reads, per row above a roof: a compute row's names, peak and FLOP sources
    ("measured" by prefix, no string hashed), a memory row's own level's bytes and roof sources."""
    roof = _keys(frame, rows, ["binding_roof"])
    parts = list(roof)
    names = list(frame["binding_roof"].cat.categories) if "binding_roof" in frame and \
        isinstance(frame["binding_roof"].dtype, pd.CategoricalDtype) else []
    at_roof = roof[0] - 1 if roof else np.full(len(rows), -1)  # (a Categorical's codes: no string compared per row)

    def binds(name: str) -> np.ndarray:
        return at_roof == names.index(name) if name in names else np.zeros(len(rows), bool)

    compute = binds("compute")
    for part in _keys(frame, rows[compute], _OVER_COMPUTE):
        full = np.zeros(len(rows), np.int64)
        full[compute] = part
        parts.append(full)
    # only a compute roof's cause reads how its FLOPs were counted: the source of its precision's slot, by prefix
    prec = _keys(frame, rows, ["compute_precision"])
    codes = prec[0] - 1 if prec else np.full(len(rows), -1)
    labels = list(frame["compute_precision"].cat.categories) if prec and \
        isinstance(frame["compute_precision"].dtype, pd.CategoricalDtype) else []
    slot_of = np.array([["fp64", "fp32", "fp16", "tensor"].index(_slot(p)) for p in labels] + [1], np.int64)[codes]
    measured = np.zeros(len(rows), np.int64)
    for j, slot in enumerate(("fp64", "fp32", "fp16", "tensor")):
        pick = compute & (slot_of == j)
        if pick.any() and null_count(frame, f"flop_{slot}_source") < len(frame):
            src = Source(frame, f"flop_{slot}_source")
            measured[pick] = src.starts_with(rows[pick], "counters") | src.starts_with(rows[pick], "measured")
    parts.append(measured)
    for c, scale in (("flop_tensor", None), ("sm_clock_hz", 1e6)):  # what the causes read of them: > 0, and MHz
        x = frame[c].to_numpy(dtype=float, na_value=np.nan)[rows] if c in frame else np.zeros(len(rows))
        parts.append((x > 0).astype(np.int64) if scale is None
                     else pd.factorize(np.round(x / scale), use_na_sentinel=True)[0].astype(np.int64) + 1)
    for lv in levels:
        at = binds(lv)
        if not at.any():
            continue
        counters = Source(frame, f"{lv}_bytes_source").starts_with(rows[at], "counters")
        for part in [counters.astype(np.int64), *_keys(frame, rows[at], [f"peak_{lv}_bytes_per_s_source"])]:
            full = np.zeros(len(rows), np.int64)
            full[at] = part
            parts.append(full)
    return parts


_LATENCY_COLUMNS = ("waves_per_sm", "sm_count", "grid_x", "grid_y", "grid_z", "achieved_occupancy_pct",
                    "theoretical_occupancy_pct", "warp_stalls_json")


def diagnose(result: pd.DataFrame, levels: Sequence[str], latency_threshold_pct: float) -> pd.DataFrame:
    """The roofline frame with the pipe, latency-cause and next-step columns and the notes the evidence supports."""
    pipes = pipe_columns(result)
    # appended in one concat where none is there yet (assign copies the frame, then inserts column by column)
    out = result.assign(**dict(pipes.items())) if any(c in result for c in pipes) else pd.concat([result, pipes], axis=1)
    return complete(out, levels, latency_threshold_pct)


def complete(out: pd.DataFrame, levels: Sequence[str], latency_threshold_pct: float) -> pd.DataFrame:
    """:func:`diagnose` of a roofline frame holding the pipe columns already (``analyze`` concatenates them with the
    rest: each pass over ~130 blocks is ~1 ms an input): ``out``, its next step, latency cause and notes set."""
    n = len(out)
    v = _Rows(out)
    over_mask = out["over_roof"].fillna(False).to_numpy(dtype=bool) if "over_roof" in out else np.zeros(n, bool)
    latency_mask = (out["bound"] == "latency-limited").fillna(False).to_numpy(dtype=bool) if "bound" in out \
        else np.zeros(n, bool)
    over_rows = np.flatnonzero(over_mask)
    few = n <= FEW_ROWS
    over = _Groups(n, over_rows, None if few else _over_keys(out, over_rows, levels), lambda r: over_cause(v, r, levels))

    # latency: rows with something recorded are grouped by it; the others by what would tell (AMD or not)
    plain = LATENCY_NOTE.format(threshold=latency_threshold_pct)
    lat_rows = np.flatnonzero(latency_mask)
    recorded = np.zeros(len(lat_rows), bool)
    for c in _LATENCY_COLUMNS:
        if len(lat_rows) and c in out and nulls(col := out[c]) < n:
            recorded |= present(col)[lat_rows]

    def latency_note(r: int) -> str:
        parts = latency_evidence(v, r)
        if parts:
            return plain.split(":")[0] + ": " + ", ".join(parts)
        return f"{plain}; nothing recorded tells which: {_what_would_tell(v, r)}"

    lat_keys = None
    if not few:
        lat_parts = _keys(out, lat_rows, list(_LATENCY_COLUMNS))
        lat_parts = [np.where(recorded, p, 0) for p in lat_parts] + _keys(out, lat_rows, ["compute_capability",
                                                                                         "device_name"])
        lat_keys = [recorded.astype(np.int64), *lat_parts]
    lat = _Groups(n, lat_rows, lat_keys, latency_note)
    lat_cause = _Groups(n, lat_rows, lat_keys, lambda r: latency_cause(v, r))

    bound_pipe = pipe_bound(out)
    pipe_rows = np.flatnonzero(bound_pipe)
    pipe = _Groups(n, pipe_rows, [np.arange(len(pipe_rows))], lambda r: _pipe_note(v, r))
    rule_rows = np.flatnonzero(present(out["ncu_rules_json"])) if "ncu_rules_json" in out else np.zeros(0, int)
    ncu = _Groups(n, rule_rows, None if few else _keys(out, rule_rows, ["ncu_rules_json"]), lambda r: _ncu_note(v, r))

    step = _next_steps(out, v, over, lat, bound_pipe, over_mask, latency_mask)
    out["next_step"] = _categorical(step.code, step.texts)
    out["latency_cause"] = _categorical(lat_cause.code, lat_cause.texts)
    out["analysis_note"] = _notes(out["analysis_note"], over, lat, pipe, ncu, step, plain)
    return out


def _si(x: float) -> str:
    """``1.70 T`` (three significant digits and an SI prefix, as the tables print rates)."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}"
    return f"{x:.3g} "


def _pipe_note(v: _Rows, r: int) -> str:
    top, pct, co = binding(v.text("pipe_pct_json", r))
    util = pipe_utilisation(v.text("pipe_pct_json", r))
    peak, ceiling = v.num("peak_flop_per_s", r), v.num("pipe_ceiling_flop_per_s", r)
    others = ", ".join(f"{pipe_label(p).split(' (')[0]} {util[p]:.1f}%" for p in co)
    return (f"pipe: {pipe_label(top or '')} at {pct:.1f}% of its peak binds first: saturated, it caps the kernel at "
            f"{_si(ceiling)}FLOP/s, {100 * ceiling / peak:.0f}% of the compute roof"
            + (f" (co-critical: {others})" if others else ""))


def _ncu_note(v: _Rows, r: int) -> str | None:
    tops = top_findings(v.text("ncu_rules_json", r))
    return "; ".join(
        f"ncu: {finding_title(f)} (est. {f.get('speedup_type') or ''} speedup {float(f['speedup_pct']):.0f}%"
        + (f", {focus_text(f, 2)}" if focus_text(f, 2) else "") + ")" for f in tops) or None


def _next_steps(out: pd.DataFrame, v: _Rows, over: _Groups, lat: _Groups, bound_pipe: np.ndarray,
                over_mask: np.ndarray, latency_mask: np.ndarray) -> _Groups:
    """``next_step`` grouped by what it reads; the columns only some rows hold are keyed on those rows alone."""
    n = len(out)
    rows = np.arange(n)

    def step(r: int) -> str | None:
        return next_step(v, r, over.at(r), latency_evidence(v, r) if latency_mask[r] else [], bool(bound_pipe[r]),
                         bool(over_mask[r]))

    if n <= FEW_ROWS:
        return _Groups(n, rows, None, step)
    parts = _keys(out, rows, ["bound", "binding_roof", "compute_precision", "compute_capability", "device_name"])
    pct = out["pct_of_roof"].to_numpy(dtype=float, na_value=np.nan) if "pct_of_roof" in out else np.full(n, np.nan)
    tensor = out["flop_tensor"].to_numpy(dtype=float, na_value=np.nan) > 0 if "flop_tensor" in out else np.zeros(n, bool)
    parts += [(pct >= HIGH_PCT).astype(np.int64), tensor.astype(np.int64), over.code + over_mask, lat.code,
              bound_pipe.astype(np.int64)]
    # the rich rows (ncu evidence, a trace op's kernels, a name that may be a matmul): keyed by those columns too
    rich = np.zeros(n, bool)
    for c in ("ncu_rules_json", "binding_pipe", "op_kernels"):
        if c in out:
            rich |= present(out[c])
    candidates = np.flatnonzero(~rich & ~tensor & ~latency_mask)  # a name can only matter for tensor-core advice
    if len(candidates):
        matmul = np.zeros(n, np.int64)
        for c in ("kernel_name", "mangled_name"):
            if c in out:
                mask = np.zeros(n, bool)
                mask[candidates] = True
                f = Factor(out, c, rows=mask)
                hit = np.array([0] + [1 if _MATMUL_NAME.search(t) else 0 for t in f.values], np.int64)
                matmul |= hit[f.key()]
        parts.append(matmul)
    rich_rows = np.flatnonzero(rich)
    if len(rich_rows):
        for p in _keys(out, rich_rows, ["ncu_rules_json", "binding_pipe", "op_kernels", "kernel_name", "mangled_name"]):
            full = np.zeros(n, np.int64)
            full[rich_rows] = p
            parts.append(full)
    return _Groups(n, rows, parts, step)


def _categorical(code: np.ndarray, texts: list[Any]) -> pd.Categorical:
    """Group codes (0: none, g + 1: ``texts[g]``) as a Categorical of the distinct texts."""
    uniq = list(dict.fromkeys(t for t in texts if t is not None))
    index = {t: i for i, t in enumerate(uniq)}
    remap = np.array([-1] + [index[t] if t is not None else -1 for t in texts], dtype=np.int64)
    return categorical(remap[code], uniq)


def _notes(notes: pd.Series, over: _Groups, lat: _Groups, pipe: _Groups, ncu: _Groups, step: _Groups,
           plain: str) -> pd.Categorical:
    """The notes with the evidence put in: one text per distinct combination (a Categorical, as before)."""
    cat = notes.array if isinstance(notes.dtype, pd.CategoricalDtype) else notes.astype("category").array
    codes = np.asarray(cat.codes, dtype=np.int64) + 1
    ids, first = group_ids([codes, over.code, lat.code, pipe.code, ncu.code, step.code], len(codes))
    texts: list[str | None] = []
    for f in first:
        text = str(cat[f]) if codes[f] else ""
        cause, latency = over.at(f), lat.at(f)
        if cause:
            text = text.replace(UNEXPLAINED, str(cause), 1)
        if latency:
            text = text.replace(plain, latency, 1) if plain in text else "; ".join(p for p in (text, latency) if p)
        s = step.at(f)
        extra = [p for p in (pipe.at(f), ncu.at(f), f"next step: {s}" if s else None) if p]
        text = "; ".join([text, *extra] if text else extra)
        texts.append(text or None)
    return _categorical(np.asarray(ids, np.int64) + 1, texts)


__all__ = ["complete", "diagnose", "evidence_data", "latency_cause", "latency_evidence", "match", "next_step", "over_cause"]
