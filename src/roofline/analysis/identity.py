"""Kernel identities across captures: what ``roofline compare`` pairs, and one capture summed per identity.

An identity is (name, GPU, shapes or launch configuration):

- the **name** is the whole demangled name without its parameter list and a leading ``void`` (template
  arguments stay: ``gemm<128, 64>`` and ``gemm<256, 128>`` are different kernels in one program; so do numeric
  suffixes: ``triton_poi_fused_add_0`` and ``_1`` are two kernels), ``#3`` and ROCm's ``.kd`` dropped; names in brackets (``[CUDA memcpy Device-to-Device]``,
  ``[CUDA memset]``) are kept whole. A ``--map`` file renames candidate kernels first;
- the **GPU**: the rank where one is recorded, else the device id (process ids change between captures);
- the **shapes** of a trace op as recorded, else the launch configuration (``analysis/aggregate.kernel_config``).

One capture becomes one row per identity (:func:`per_run`): launch count, total and median launch time,
FLOPs, bytes per level and the roofline point of the identity as a group (``aggregate.finish``: its % of roof
and bound), its op category (``analysis/categories.py``: communication kernels are told apart by it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from roofline.analysis.aggregate import finish, kernel_config, partial
from roofline.analysis.categories import categorize
from roofline.analysis.headline import steps
from roofline.hardware.peaks import LEVELS
from roofline.schema import FLOP_COLUMNS, PRECISIONS

#: a column the collectives work adds to communication rows (bus bandwidth, NCCL-tests' busBw); shown when present
BUS_BANDWIDTH = "bus_bandwidth_bytes_per_s"
_SUFFIX = re.compile(r"(\.kd|#\d+)+$")  # not _N: triton_poi_fused_add_0 and _1, XLA fusion_1 and _2 are other kernels
_SEP = "\x1f"  # joins an identity's parts into one key (never in a name)


def identity_name(name: object) -> str:
    """A kernel's name as an identity: whole, without its parameter list, a leading ``void`` or a launch suffix."""
    s = " ".join(str(name if name is not None and name is not pd.NA else "").split())
    if not s or s.startswith("["):  # [CUDA memcpy Device-to-Device], [CUDA memset]: names of their own
        return s
    if s.endswith(")"):  # drop the trailing parameter list "(float*, int)", nesting included
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                head = s[:i].rstrip()
                if head and not head.endswith(("::", "operator")):
                    s = head
                break
    s = s.removeprefix("void ").strip()
    return _SUFFIX.sub("", s) or s


def gpu_of(frame: pd.DataFrame) -> pd.Series:
    """Each row's GPU as an identity part: ``rank N`` where recorded, else ``device N``, else empty."""
    out = pd.Series("", index=frame.index, dtype="string")
    for col, word in (("device_id", "device"), ("rank", "rank")):  # rank last: it wins where both exist
        if col in frame:
            v = pd.to_numeric(frame[col], errors="coerce")
            text = (word + " " + v.astype("Int64").astype("string"))
            out = text.where(v.notna(), out)
    return out


def identify(frame: pd.DataFrame, mapping: Mapping[str, str] | None = None, config: bool = True) -> pd.DataFrame:
    """The frame with ``identity_name``, ``gpu``, ``config`` and ``identity`` (their joined key) added."""
    f = frame.copy()
    raw = f["kernel_name"].astype("string").fillna("") if "kernel_name" in f else pd.Series("", index=f.index)
    codes, uniq = pd.factorize(raw)
    names = [identity_name(u) for u in uniq]
    if mapping:
        names = [mapping.get(u, mapping.get(n, n)) for u, n in zip(uniq, names)]
        names = [identity_name(n) for n in names]
    f["identity_name"] = pd.Series(np.asarray(names + [""], dtype=object)[codes], index=f.index, dtype="string")
    f["gpu"] = gpu_of(f)
    f["config"] = kernel_config(f) if config else pd.Series("", index=f.index, dtype="string")
    f["identity"] = f["identity_name"] + _SEP + f["gpu"] + _SEP + f["config"].astype("string")
    return f


def display(name: str, gpu: str, config: str, show_gpu: bool, show_config: bool) -> str:
    """An identity as one readable line: the name, then ``[gpu]`` and ``{config}`` where they tell it apart."""
    out = name
    if show_gpu and gpu:
        out += f" [{gpu}]"
    if show_config and config and config != "(none)":
        out += f" {{{config}}}"
    return out


@dataclass(frozen=True)
class RunTotals:
    """One capture as a whole: its kernel time, launches and training steps."""

    label: str
    time_s: float  # NaN when a launch has no duration: a sum that skipped it would read as a speed-up
    launches: int
    steps: int  # distinct ProfilerStep#N / NVTX step ranges (0: none recorded)


def totals(frame: pd.DataFrame, label: str) -> RunTotals:
    dur = pd.to_numeric(frame["duration_s"], errors="coerce")
    t = float("nan") if dur.isna().any() else float(dur.sum())
    return RunTotals(label, t, len(frame), int(steps(frame).dropna().nunique()))


#: the columns of :func:`per_run`, after the identity's parts
RUN_COLUMNS = ("count", "total_s", "median_s", "flop_total", "pct_of_roof", "bound", "binding_roof",
               "achieved_flop_per_s", "intensity_dram_flop_per_byte", "category")


def per_run(frame: pd.DataFrame, levels: Sequence[str] = LEVELS, mapping: Mapping[str, str] | None = None,
            config: bool = True) -> pd.DataFrame:
    """One row per identity of one capture (indexed by the identity key), longest total time first."""
    f = identify(frame, mapping, config)
    if f.empty:
        return pd.DataFrame(columns=["identity_name", "gpu", "config", *RUN_COLUMNS]).rename_axis("identity")
    dur = pd.to_numeric(f["duration_s"], errors="coerce")
    g = dur.groupby(f["identity"], sort=False)
    out = pd.DataFrame({"count": g.size(), "total_s": g.sum(min_count=1), "median_s": g.median()})
    # a launch without a duration makes its identity's total unknown, not smaller
    out.loc[dur.isna().groupby(f["identity"], sort=False).any(), "total_s"] = np.nan
    first = f.drop_duplicates("identity").set_index("identity")
    out[["identity_name", "gpu", "config"]] = first[["identity_name", "gpu", "config"]]
    cats = categorize(f.loc[f["identity"].drop_duplicates().index])
    out["category"] = pd.Series(cats.to_numpy(), index=first.index)
    # the identity's roofline point as a group: aggregate's sums and roofs, keyed by the identity alone
    # (grouped "by nvtx" with the identity in that column: no second key but the device, made one per identity)
    # (only the columns the sums and roofs need: a tensor path per group would cost a Python call per group)
    need = ["duration_s", *FLOP_COLUMNS, *(f"{lv}_bytes" for lv in levels), *(f"peak_flop_per_s_{p}" for p in PRECISIONS),
            *(f"peak_{lv}_bytes_per_s" for lv in levels)]
    work = f[[c for c in need if c in f]].assign(
        nvtx_range=f["identity"], device_name=f.groupby("identity")["device_name"].transform("first")
        if "device_name" in f else pd.NA)
    groups = finish(partial(work, "nvtx", levels), "nvtx", levels).set_index("nvtx")
    for c in ("flop_total", *(f"{lv}_bytes" for lv in levels), "pct_of_roof", "bound", "binding_roof",
              "achieved_flop_per_s", *(f"intensity_{lv}_flop_per_byte" for lv in levels)):
        out[c] = groups[c].reindex(out.index) if c in groups else np.nan
    if BUS_BANDWIDTH in f and pd.to_numeric(f[BUS_BANDWIDTH], errors="coerce").notna().any():  # (all NaN: none known)
        out[BUS_BANDWIDTH] = pd.to_numeric(f[BUS_BANDWIDTH], errors="coerce").groupby(f["identity"], sort=False).median()
    out.index.name = "identity"
    return out.sort_values("total_s", ascending=False, na_position="last", kind="stable")


def split_runs(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """A frame of several captures as one frame per capture: by its ``run`` label where recorded, else by file."""
    key = "run" if "run" in frame and frame["run"].notna().any() else "source_file"
    if key not in frame:
        return [("run 1", frame)]
    labels = frame[key].astype("string").fillna("(none)")
    return [(str(k), frame[(labels == k).to_numpy()]) for k in pd.unique(labels)]
