"""What to collect next: for the longest kernels that lack counters or shapes, a ready command.

A row lacks what its analysis needed and the profile did not record:

* Nsight Compute sections (reports and CSV exports, traces, timelines): FLOPs or DRAM bytes →
  ``SpeedOfLight_RooflineChart``; L2/L1 bytes → ``SpeedOfLight_HierarchicalSingleRooflineChart``; pipe
  utilisation → ``ComputeWorkloadAnalysis``; waves → ``LaunchStats``; occupancy → ``Occupancy``; warp
  stalls → ``WarpStateStats``. A PyTorch trace, an nsys timeline or an XLA GPU profile records none of them.
* shapes (PyTorch traces): ops whose FLOPs are unavailable for want of ``Input Dims`` →
  ``torch.profiler.profile(..., record_shapes=True)``.

The kernels lacking something are grouped by the name ncu's ``--kernel-name`` matches (the function name),
ranked by their total time, and the ``TOP`` longest that take at least ``MIN_SHARE`` of the profile's time
get a command: ``ncu --kernel-name K --launch-skip S --launch-count 1 --section …`` (S: the launches of K
before its longest one, counted within this profile), for the GPU generation's Nsight Compute: current
releases dropped Pascal (2020.1) and Volta (with CUDA 13.0); ``docs/analysis.md`` cites both. An nsys
timeline also gets ``nsys profile --gpu-metrics-devices=all`` (whole-run DRAM and SM activity, Turing and
later); an AMD kernel gets ``rocprof-compute profile``. Copies and fills get nothing (no kernel to profile),
a collective's kernel no ncu command (``plan``).
"""

from __future__ import annotations

import math
import re
import shlex
from typing import Any

import numpy as np
import pandas as pd

from roofline.analysis.pipes import null_count
from roofline.analysis.render import Factor
from roofline.frames import group_ids

TOP = 3
MIN_SHARE = 0.01
APP = "./your_app"  # the profile's own command line may hold the profiling host's paths: never echoed
SECTION_ORDER = ("SpeedOfLight", "SpeedOfLight_RooflineChart", "SpeedOfLight_HierarchicalSingleRooflineChart",
                 "ComputeWorkloadAnalysis", "LaunchStats", "Occupancy", "WarpStateStats")
RECORD_SHAPES = ("torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], "
                 "record_shapes=True)")
#: the last Nsight Compute that profiles a generation current releases dropped (docs/analysis.md cites them)
LAST_NCU = {"pascal": "Nsight Compute 2019.5 (the last with Pascal; 2020.1 removed it) or nvprof",
            "volta": "Nsight Compute 2025.2 (CUDA 12.9; the last release before CUDA 13.0 dropped Volta)"}
_PASCAL_NAME = re.compile(r"\b(P100|P40|P4|P6|GTX 10\d0|TITAN Xp?|Quadro P\d+|GP10\d)\b", re.IGNORECASE)
_VOLTA_NAME = re.compile(r"\b(V100|TITAN V|Quadro GV100|GV10\d|Xavier)\b", re.IGNORECASE)
#: an AMD GPU by its name (a ROCm PyTorch trace gives its gfx9 parts compute capability "9.0", as Hopper's)
_AMD_NAME = re.compile(r"\bAMD\b|Radeon|Instinct|\bMI\d{2,3}[A-Z]?\b", re.IGNORECASE)
#: a copy or fill, not a kernel: no ncu command profiles it (Kineto's "Memcpy HtoD (Pageable -> Device)",
#: "Memset (Device)", nsys's "[CUDA memcpy Host-to-Device]", ROCm's CopyHostToDevice/FillBuffer)
#: a collective's kernel (NCCL/RCCL): ncu gets no command for it (see ``plan``)
_COLLECTIVE_NAME = re.compile(r"(^|[^a-z])(nccl|rccl)", re.IGNORECASE)
_COPY_NAME = re.compile(r"^(memcpy|memset|\[cuda mem|copy(host|device)to|fillbuffer)", re.IGNORECASE)


def is_amd(cc: str, device: str) -> bool:
    """An AMD GPU: a ``gfx`` target, or an AMD device name (a ROCm PyTorch trace reports gfx90a as CC "9.0")."""
    return cc.startswith("gfx") or bool(_AMD_NAME.search(device))


def _generation(cc: str, device: str) -> str:
    """``amd``, ``pascal``, ``volta``, ``current`` (Turing and later) or ``unknown``."""
    if is_amd(cc, device):
        return "amd"
    m = re.match(r"(\d+)\.(\d+)", cc)
    if m:
        major, minor = int(m.group(1)), int(m.group(2))
        return "pascal" if major < 7 else "volta" if (major, minor) < (7, 5) else "current"
    if _PASCAL_NAME.search(device):
        return "pascal"
    if _VOLTA_NAME.search(device):
        return "volta"
    return "unknown"


def _short(name: str) -> str:
    from roofline.ingest.ncu.csv_export import short_name

    # ("(anonymous namespace)" is no argument list: ROCm traces name at::native's kernels with it)
    return short_name(name.replace("(anonymous namespace)", "{anonymous}")) if name else name


#: what each missing section would have recorded (a row lacks the section when the column is missing)
SECTION_NEEDS = (("SpeedOfLight_RooflineChart", ("flop_total", "dram_bytes")),
                 ("SpeedOfLight_HierarchicalSingleRooflineChart", ("l2_bytes", "l1_bytes")),
                 ("ComputeWorkloadAnalysis", ("pipe_pct_json",)), ("LaunchStats", ("waves_per_sm",)),
                 ("Occupancy", ("achieved_occupancy_pct",)), ("WarpStateStats", ("warp_stalls_json",)))


def _missing_bits(frame: pd.DataFrame) -> np.ndarray:
    """Per row, bit j set when ``SECTION_NEEDS[j]``'s data is missing (one integer per row); a column with no
    value at all (or none missing) costs no pass over the rows."""
    n = len(frame)
    bits = np.zeros(n, np.int64)
    for j, (_, cols) in enumerate(SECTION_NEEDS):
        counts = [null_count(frame, c) for c in cols]
        if max(counts) == n:
            bits |= 1 << j
            continue
        for c, k in zip(cols, counts):
            if k:
                bits |= frame[c].isna().to_numpy().astype(np.int64) << j
    return bits


def _sections(bits: int) -> list[str]:
    return [s for j, (s, _) in enumerate(SECTION_NEEDS) if bits >> j & 1]


def _factor(frame: pd.DataFrame, column: str, rows: np.ndarray | None = None) -> Factor:
    """``render.Factor``, with no hashing at all for a column that holds no value."""
    if null_count(frame, column) == len(frame):
        return Factor(frame, "\0 absent")  # (no such column: every key 0)
    return Factor(frame, column, rows=rows)


def _lookup(f: Factor, fn: Any, dtype: Any = bool) -> np.ndarray:
    """``fn(value)`` of each row's value of a Factor, computed once per distinct value (missing: ``fn(None)``)."""
    table = np.array([fn(None), *(fn(v) for v in f.values)], dtype=dtype)
    if len(table) == 1 or (table == table[0]).all():  # one answer for every row: no gather
        return np.full(len(f.key()), table[0], dtype=dtype)
    return table[f.key()]


def _first_names(f: Factor, rows: np.ndarray, n: int) -> list[str]:
    """The first ``n`` distinct non-empty texts of ``f`` at ``rows``, in their order (one row per key read: a
    kernel's ops are mostly one op's launches)."""
    keys = f.key_at(rows)
    _, first = np.unique(keys, return_index=True)
    out: list[str] = []
    for r in rows[np.sort(first)]:
        t = f.text(int(r))
        if t and t not in out:
            out.append(t)
            if len(out) == n:
                break
    return out


def ncu_command(kernel: str, skip: int, sections: list[str], generation: str) -> str:
    """The ncu command that profiles one launch of ``kernel`` with ``sections`` on this GPU generation."""
    if generation == "amd":
        return f"rocprof-compute profile -n roofline-next -k {shlex.quote(kernel)} -- {APP}"
    wanted = ["SpeedOfLight", *sections] if "SpeedOfLight" not in sections else list(sections)
    order = [s for s in SECTION_ORDER if s in wanted]
    if generation == "pascal":
        return (f"nvprof --kernels {shlex.quote(kernel)} --metrics flop_count_sp,flop_count_dp,flop_count_hp,"
                f"dram_read_bytes,dram_write_bytes,achieved_occupancy {APP}  # {LAST_NCU['pascal']}: current "
                "Nsight Compute does not profile Pascal; roofline does not read nvprof output")
    cmd = (f"ncu --kernel-name {shlex.quote(kernel)} --launch-skip {skip} --launch-count 1 "
           + " ".join(f"--section {s}" for s in order) + f" -o {shlex.quote('roofline-' + kernel[:40])} {APP}")
    if generation == "volta":
        cmd += f"  # with {LAST_NCU['volta']}"
    return cmd


def plan(frame: pd.DataFrame) -> list[dict[str, object]]:
    """The kernels to collect next, per profile (``source_file``: each profile's own longest, its share of that
    profile's time, its launches counted in it; a batch dataset, which analyses each input alone, holds the same),
    longest first: per kernel its name, share, what it lacks, the rows it stands for (positions in ``frame``) and
    the command(s)."""
    frame = _narrow(frame)
    if not len(frame) or "duration_s" not in frame:
        return []
    rows = _Rows(frame)
    if "source_file" not in frame:
        return rows.plan(np.arange(len(frame)))
    files = _factor(frame, "source_file")
    keys = files.key()
    # each profile's rows in frame order, the profiles in the order of their first row: every row-wise fact is
    # computed once over the whole frame (a dataset's 500 profiles factorised one by one cost ~5 ms each)
    order = np.argsort(keys, kind="stable")
    bounds = np.flatnonzero(np.diff(keys[order])) + 1
    starts, ends = np.r_[0, bounds], np.r_[bounds, len(keys)]
    out: list[dict[str, object]] = []
    for i in np.argsort(order[starts], kind="stable"):
        profile = order[starts[i]:ends[i]]
        out += [dict(it, source_file=files.text(int(profile[0]))) for it in rows.plan(profile)]
    return out


#: the columns a plan reads (a frame narrowed to them: no ``attrs`` deep-copied per column read)
_PLAN_COLUMNS = ("source_file", "format", "device_name", "compute_capability", "duration_s", "kernel_id", "kernel_name",
                 "kernel_short_name", "mangled_name", "copy_kind", "flop_fp32_source",
                 *dict.fromkeys(c for _, cols in SECTION_NEEDS for c in cols))


def _narrow(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns :func:`plan` reads, without ``attrs`` (the provenance, deep-copied by pandas per slice)."""
    out = frame[[c for c in _PLAN_COLUMNS if c in frame.columns]]
    out.attrs = {}
    return out


class _Rows:
    """What :func:`plan` knows of each row of a frame, one array per fact over every row (a row's facts are its
    own: none depends on the rest of its profile); :meth:`plan` then ranks one profile's kernels. String columns
    are read through Arrow (``render.Factor``), each distinct value once."""

    def __init__(self, frame: pd.DataFrame) -> None:
        n = len(frame)
        self.dur = pd.to_numeric(frame["duration_s"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        self.dur0 = np.nan_to_num(self.dur)  # (missing as 0: the order of a kernel's ops, longest first)
        # missing as 0 and nothing else changed: what np.nansum adds up, taken once (not per kernel)
        self.dur_nan0 = np.where(np.isnan(self.dur), 0.0, self.dur)
        bits = _missing_bits(frame)
        self.cc, self.fmt, self.device = (_factor(frame, c) for c in ("compute_capability", "format", "device_name"))
        amd = (_lookup(self.cc, lambda v: bool(v and v.startswith("gfx")))
               | _lookup(self.device, lambda v: bool(v and _AMD_NAME.search(v))))
        bits[amd] &= 1  # AMD: FLOPs/bytes only (rocprof-compute profile records the rest in one go)
        self.bits = bits
        self.trace = trace = _lookup(self.fmt, lambda v: v == "torch-trace")
        src = _factor(frame, "flop_fp32_source")
        self.shapes = trace & _lookup(src, lambda v: bool(v and "record_shapes" in v))
        # copies and fills are no kernels: ncu profiles none of them (their time is in the headline)
        copies = _lookup(src, lambda v: bool(v and v.startswith("memcpy/memset")))
        if null_count(frame, "copy_kind") < n:
            copies |= frame["copy_kind"].notna().to_numpy()
        self.lacking = ((bits != 0) | self.shapes) & ~copies & ~_lookup(self.fmt, lambda v: v in ("xplane", "xprof-trace"))
        # the name ncu's --kernel-name matches: a trace op's GPU kernel's function name, else the row's own; as
        # integer ids into ``label`` (0: none), each distinct name shortened once
        # (over every row: --launch-skip counts every launch of the kernel, not only the ones lacking something)
        gpu, own, self.full = (_factor(frame, c) for c in ("mangled_name", "kernel_short_name", "kernel_name"))
        labels: dict[str, int] = {"": 0}

        def label_ids(f: Factor, short: bool) -> np.ndarray:
            return _lookup(f, lambda v: labels.setdefault(_short(v) if short else v, len(labels)) if v else 0, np.int64)

        g, o, k = label_ids(gpu, True), label_ids(own, False), label_ids(self.full, True)
        names = np.where(o > 0, o, k)
        self.names = np.where(trace, g, names) if trace.any() else names
        self.label = list(labels)
        copy_name = np.array([False, *(bool(_COPY_NAME.match(t)) for t in self.label[1:])])
        self.candidate = self.lacking & (self.names > 0) & ~copy_name[self.names]
        # launch order within a profile; without kernel_id, the frame's order
        self.launch = (frame["kernel_id"].to_numpy(dtype=float, na_value=np.nan) if "kernel_id" in frame
                       else np.arange(n, dtype=float))

    def plan(self, profile: np.ndarray) -> list[dict[str, object]]:
        """The items of one profile, its rows ``profile`` (positions in the frame, ascending)."""
        dur = self.dur[profile]
        total = float(np.where(dur > 0, dur, 0.0).sum())  # (no NaN left: what np.nansum gave)
        if not self.lacking[profile].any() or total <= 0:
            return []
        rows = profile[self.candidate[profile]]
        if not len(rows):
            return []
        dur, names, cc = self.dur, self.names, self.cc
        ids, first = group_ids([names[rows], cc.key()[rows].astype(np.int64)], len(rows))
        d = np.where(np.isfinite(dur[rows]), dur[rows], 0.0)
        time = np.bincount(ids, weights=d, minlength=len(first))
        timed = np.bincount(ids, weights=np.isfinite(dur[rows]).astype(float), minlength=len(first)) > 0
        # longest first; kernels with no duration at all (a replay that did not complete) after them: time unknown
        by_time = np.argsort(-time, kind="stable")  # (as arrays: a profile holds up to hundreds of kernels)
        order = by_time[timed[by_time] & (time[by_time] / total >= MIN_SHARE)].tolist()
        order += np.flatnonzero(~timed).tolist()
        out: list[dict[str, object]] = []
        record_shapes = timeline = False
        for grp in order:
            if len(out) == TOP:
                break
            members = rows[ids == grp]
            name, kcc = self.label[names[members[0]]], cc.text(int(members[0]))
            share = float(self.dur_nan0[members].sum()) / total if timed[grp] else math.nan
            longest = int(members[np.argmax(np.where(np.isfinite(dur[members]), dur[members], -1.0))])
            # its launches before the longest one, in launch order (kernel_id) within its profile: frames come
            # sorted by time, not by launch
            same = profile[names[profile] == names[longest]]
            before = int(np.count_nonzero(self.launch[same] < self.launch[longest]))
            # a collective's kernel waits on its peers, and ncu serialises launches (a multi-rank job can hang
            # under it): no ncu command; its bytes come from the message sizes (record_shapes) and a link roof
            need = [] if _COLLECTIVE_NAME.search(name) else _sections(int(np.bitwise_or.reduce(self.bits[members])))
            gen = _generation(kcc, self.device.text(longest))
            commands = []
            no_shapes = bool(self.shapes[members].any())
            if no_shapes and not record_shapes:
                commands.append(RECORD_SHAPES)
                record_shapes = True
            if need:
                commands.append(ncu_command(name, before, need, gen))
                if self.fmt.text(longest) == "nsys-sqlite" and gen in ("current", "unknown") and not timeline:
                    timeline = True  # (once: it records the whole run)
                    commands.append(f"nsys profile --gpu-metrics-devices=all --trace=cuda,nvtx -o roofline-timeline {APP}")
            if not commands:
                continue
            traced = members[self.trace[members]]  # a trace's ops that launched it, the longest first
            if len(traced) > 50:
                traced = traced[np.argpartition(-self.dur0[traced], 50)[:50]]
            traced = traced[np.argsort(-self.dur0[traced])]
            ops = _first_names(self.full, traced, 2)
            missing = ["FLOP and byte counters"] if gen == "amd" and need else need  # (ncu's section names are NVIDIA's)
            out.append({"kernel": name, "ops": ops, "share": share, "missing": missing, "no_shapes": no_shapes,
                        "rows": members, "commands": commands, "generation": gen})
        return out


def collect_next_column(frame: pd.DataFrame, items: list[dict[str, object]] | None = None) -> pd.Categorical:
    """Per row, the command(s) that would collect what its kernel lacks ("; "-joined); missing elsewhere.
    ``items``: ``plan(frame)`` where the caller has it already."""
    code = np.full(len(frame), -1, np.int64)
    texts: list[str] = []
    for item in plan(frame) if items is None else items:
        text = "; ".join(item["commands"])  # type: ignore[arg-type]
        if text:
            if text not in texts:
                texts.append(text)
            code[item["rows"]] = texts.index(text)  # type: ignore[index]
    return pd.Categorical.from_codes(code, categories=texts)


#: profiles whose collect-next items the printed block lists (the column holds every profile's)
MAX_PROFILES = 5


def summary(frame: pd.DataFrame, items: list[dict[str, object]] | None = None) -> list[str]:
    """The collect-next block, printed once under a table: one line per kernel, then its command(s); with several
    profiles, each profile's (up to ``MAX_PROFILES``) under its file name, ``record_shapes`` said once.
    ``items``: ``plan(frame)`` where the caller has it already."""
    items = plan(frame) if items is None else items
    if not items:
        return []
    profiles = list(dict.fromkeys(str(it.get("source_file") or "") for it in items))
    lines = ["collect next (the longest kernels lacking counters or shapes):"]
    said: set[str] = set()
    for profile in profiles[:MAX_PROFILES]:
        if len(profiles) > 1:
            lines.append(f" {profile or 'a profile naming no file'}:")
        for it in (it for it in items if str(it.get("source_file") or "") == profile):
            lack = ", ".join(it["missing"]) if it["missing"] else ""  # type: ignore[arg-type]
            what = "; ".join(x for x in (("no shapes (Input Dims)" if it["no_shapes"] else ""),
                                          (f"missing: {lack}" if lack else "")) if x)
            share = float(it["share"])  # type: ignore[arg-type]
            when = f"{100 * share:.1f}% of the time" if not math.isnan(share) else "time unknown"
            ops = f"op {', '.join(it['ops'])}; " if it["ops"] else ""  # type: ignore[arg-type]
            commands = [c for c in it["commands"] if not (c in said and c == RECORD_SHAPES)]  # type: ignore[attr-defined]
            said.update(commands)
            lines.append(f"  {it['kernel']} ({ops}{when}; {what}):")
            lines += [f"    {c}" for c in commands]
    if len(profiles) > MAX_PROFILES:
        lines.append(f" … and {len(profiles) - MAX_PROFILES} more profile(s): the collect_next column "
                     "(--format json, --out) holds each one's")
    return lines

__all__ = ["LAST_NCU", "RECORD_SHAPES", "collect_next_column", "is_amd", "ncu_command", "plan", "summary",
           "with_collect_next"]


def with_collect_next(result: pd.DataFrame, scope: pd.DataFrame | None, by: str | None) -> pd.DataFrame:
    """Kernel rows with their ``collect_next`` command, planned over the whole profiles of ``scope`` (the CLI's
    JSON/CSV records and the MCP tools' rows alike): not a column of the analysis, which a dataset's scan runs on
    record batches. Grouped rows (``by``) are returned as they are."""
    if by is not None or scope is None or scope.empty or result.empty or not scope.index.is_unique:
        return result
    column = pd.Series(collect_next_column(scope), index=scope.index)
    return result.assign(collect_next=column.reindex(result.index))
