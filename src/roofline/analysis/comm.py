"""Collectives on the roofline: each NCCL/RCCL collective's algorithm and bus bandwidth against the link it runs on.

For a row with a collective (``collective``, ``message_bytes``, ``group_size`` from the reader; see
``docs/collectives.md``), nccl-tests' definitions (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):

* ``algorithm_bandwidth_bytes_per_s`` = S / t: ``message_bytes`` (the message as the collective moves it) over the
  row's GPU time (its NCCL kernels' durations);
* ``bus_bandwidth_bytes_per_s`` = algbw × ``bus_factor``: 2(n−1)/n for all-reduce, (n−1)/n for all-gather,
  reduce-scatter and all-to-all, 1 for broadcast, reduce and send/recv, n the group size;
* ``link_roof_bytes_per_s``: the link the collective's group runs on, one direction: inside a node the GPU's
  NVLink/xGMI (``hardware/links.toml``), between nodes the NIC of ``--links FILE.toml``; ``link_placement`` says
  which and whether the profile recorded it or it is assumed (a Kineto trace records no host per rank);
* ``pct_of_link_roof`` = busbw / roof. Algorithms that reduce in the switch (NVLS) or use trees between nodes can
  pass 100%: nccl-tests' bus factor models a ring.

A value the profile does not hold is missing and its ``*_source`` says why and how to record it.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from roofline.hardware.links import Link, UserLinks, intra_node
from roofline.metrics.ops.collectives import bus_factor, kernel_collective
from roofline.schema import UNAVAILABLE

#: the columns this stage adds, with their dtypes (null on rows without a collective)
COMM_COLUMNS: dict[str, str] = {
    "bus_factor": "float64",
    "bus_factor_source": "string",
    "algorithm_bandwidth_bytes_per_s": "float64",
    "bus_bandwidth_bytes_per_s": "float64",
    "bus_bandwidth_bytes_per_s_source": "string",
    "link_placement": "string",
    "link_roof_bytes_per_s": "float64",
    "link_roof_bytes_per_s_source": "string",
    "pct_of_link_roof": "float64",
}
#: the kernels-frame columns this stage fills where the reader left them empty (NCCL kernels named by a timeline,
#: their exposed/overlapped time from its start times)
FILLED = ("collective", "collective_source", "message_bytes_source", "comm_exposed_s", "comm_overlapped_s",
          "comm_overlap_source")
NO_SIZE_TIMELINE = (f"{UNAVAILABLE}: this profile records NCCL/RCCL kernels but not their message sizes: profile with "
                    "the PyTorch profiler (2.1+: record_param_comms records In/Out msg nelems), or read the sizes "
                    "from NCCL_DEBUG=INFO logs")
_RANKS = re.compile(r"ranks \[([\d,\s]*)\]")


def communication(frame: pd.DataFrame, links: UserLinks | None = None) -> pd.DataFrame:
    """The communication columns (COMM_COLUMNS, plus FILLED where filled) for every row of ``frame``."""
    n = len(frame)
    out: dict[str, Any] = {c: (np.full(n, np.nan) if d == "float64" else [None] * n) for c, d in COMM_COLUMNS.items()}
    coll = frame["collective"] if "collective" in frame else pd.Series([None] * n, index=frame.index, dtype="string")
    filled = _from_kernel_names(frame, coll)
    if filled is not None:
        coll = filled[0]  # (filled[3]: the rows with an NCCL/RCCL kernel the reader left unnamed)
    rows = np.flatnonzero(coll.notna().to_numpy())
    if len(rows):
        get = {c: frame[c].to_numpy() if c in frame else np.full(n, None, dtype=object)
               for c in ("message_bytes", "duration_s", "group_size", "group_size_source", "process_group",
                         "device_name", "message_bytes_source")}
        coll_v = coll.to_numpy()
        roofs: dict[Any, tuple[Link | None, str]] = {}
        for i in rows:
            values = _row(coll_v[i], {k: v[i] for k, v in get.items()}, links, roofs)
            for c, v in values.items():
                out[c][i] = v
    result = pd.DataFrame({c: (out[c] if d == "float64" else _strings(out[c], n, bool(len(rows))))
                           for c, d in COMM_COLUMNS.items()}, index=frame.index)
    if filled is not None:
        result["collective"], result["collective_source"], result["message_bytes_source"] = filled[:3]
        timed = _timeline_overlap(frame, filled[3])
        if timed is not None:
            result["comm_exposed_s"], result["comm_overlapped_s"], result["comm_overlap_source"] = timed
    return result


def _strings(values: list[Any], n: int, any_set: bool) -> Any:
    """A string column; all missing without a Python list's conversion where no row is a collective (a million-row
    frame of kernels pays 10 ms, not 0.7 s)."""
    import pyarrow as pa

    if not any_set:
        return pd.array(pa.nulls(n, pa.large_string()), dtype="string")
    return pd.array(values, dtype="string")


def _row(coll: str, r: dict[str, Any], links: UserLinks | None,
         roofs: dict[Any, tuple[Link | None, str]]) -> dict[str, Any]:
    size, t, n = r["message_bytes"], r["duration_s"], r["group_size"]
    ok_size = size is not None and not pd.isna(size) and t is not None and not pd.isna(t) and t > 0
    n = None if n is None or pd.isna(n) else int(n)
    out: dict[str, Any] = {}
    if ok_size:
        out["algorithm_bandwidth_bytes_per_s"] = float(size) / float(t)
    factor = bus_factor(coll, n) if n is not None else None
    if factor is None:
        why = r["group_size_source"] if n is None and isinstance(r["group_size_source"], str) else \
            f"{UNAVAILABLE}: nccl-tests defines no bus factor for {coll}"
        out["bus_factor_source"] = why
        out["bus_bandwidth_bytes_per_s_source"] = why
    else:
        out["bus_factor"], out["bus_factor_source"] = factor
        if ok_size:
            out["bus_bandwidth_bytes_per_s"] = out["algorithm_bandwidth_bytes_per_s"] * factor[0]
            out["bus_bandwidth_bytes_per_s_source"] = f"message_bytes / duration_s × {factor[1]}"
        else:
            out["bus_bandwidth_bytes_per_s_source"] = r["message_bytes_source"] if isinstance(
                r["message_bytes_source"], str) and r["message_bytes_source"].startswith(UNAVAILABLE) else \
                f"{UNAVAILABLE}: no message size or no GPU time for this row"
    placement, inter = _placement(r["process_group"], n, links)
    out["link_placement"] = placement
    if inter:
        if links is not None and links.inter is not None:
            roof: Link | None = links.inter
            out["link_roof_bytes_per_s_source"] = roof.describe()
        else:
            roof = None
            out["link_roof_bytes_per_s_source"] = (f"{UNAVAILABLE}: the group spans nodes and the profile records no "
                                                   "NIC: give it with --links FILE.toml ([inter_node])")
    else:
        if links is not None and links.intra is not None:
            roof = links.intra
            out["link_roof_bytes_per_s_source"] = roof.describe()
        else:
            dev = r["device_name"]
            key = dev if isinstance(dev, str) else None
            if key not in roofs:
                roofs[key] = intra_node(key)
            roof, why = roofs[key]
            out["link_roof_bytes_per_s_source"] = (f"spec: {roof.describe()}; {why}" if roof is not None
                                                   else f"{UNAVAILABLE}: {why}")
    if roof is not None:
        out["link_roof_bytes_per_s"] = roof.unidirectional_bytes_per_s
        if "bus_bandwidth_bytes_per_s" in out:
            out["pct_of_link_roof"] = 100.0 * out["bus_bandwidth_bytes_per_s"] / roof.unidirectional_bytes_per_s
    return out


def _placement(group: Any, n: int | None, links: UserLinks | None) -> tuple[str, bool]:
    """(where the group runs, said with its evidence; whether it spans nodes)."""
    gpn = links.gpus_per_node if links is not None else None
    m = _RANKS.search(group) if isinstance(group, str) else None
    ranks = [int(x) for x in m.group(1).split(",") if x.strip()] if m else []
    if gpn is not None and ranks:
        nodes = sorted({r // gpn for r in ranks})
        where = "intra-node" if len(nodes) == 1 else f"inter-node ({len(nodes)} nodes)"
        return (f"{where}: recorded process group ranks {ranks[:8]}{'…' if len(ranks) > 8 else ''} with "
                f"gpus_per_node = {gpn} (--links)"), len(nodes) > 1
    if gpn is not None and n is not None and n > gpn:
        return f"inter-node: derived, a group of {n} ranks is larger than gpus_per_node = {gpn} (--links)", True
    why = ("the profile records no host per rank" if not ranks else
           "the profile records the group's ranks but not which node each runs on")
    return (f"intra-node (assumed: {why}; give [placement] gpus_per_node and [inter_node] in --links FILE.toml)",
            False)


TIMELINE_OVERLAP = ("Σ of the kernel's time while another (non-collective) kernel ran on the same device "
                    "(the timeline's start_ns and duration_s)")


def _timeline_overlap(frame: pd.DataFrame, comm: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any] | None:
    """(exposed s, overlapped s, source) of the NCCL/RCCL kernel rows ``comm`` of a timeline that records when each
    kernel ran (``start_ns``: Nsight Systems), where the reader left them empty; None when it records no times."""
    if "start_ns" not in frame or "duration_s" not in frame:
        return None
    start = pd.to_numeric(frame["start_ns"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    dur = pd.to_numeric(frame["duration_s"], errors="coerce").to_numpy(dtype="float64", na_value=np.nan) * 1e9
    known = frame["comm_exposed_s"].notna().to_numpy() if "comm_exposed_s" in frame else np.zeros(len(frame), bool)
    todo = comm & ~known & np.isfinite(start) & np.isfinite(dur)
    if not todo.any():
        return None
    copy = frame["copy_kind"].notna().to_numpy() if "copy_kind" in frame else np.zeros(len(frame), bool)
    other = ~comm & ~copy & np.isfinite(start) & np.isfinite(dur)
    src = frame["source_file"].astype("string").fillna("") if "source_file" in frame else pd.Series("", index=frame.index)
    dev = frame["device_id"].astype("string").fillna("") if "device_id" in frame else pd.Series("", index=frame.index)
    key = (src + "\x00" + dev).to_numpy()
    exposed = np.full(len(frame), np.nan)
    overlapped = np.full(len(frame), np.nan)
    for k in np.unique(key[todo]):
        mine = np.flatnonzero(todo & (key == k))
        o = np.flatnonzero(other & (key == k))
        a, b = start[mine], start[mine] + dur[mine]
        over = np.zeros(len(mine))
        if len(o):
            order = np.argsort(start[o], kind="stable")
            s0, e0 = start[o][order], (start[o] + dur[o])[order]
            run_end = np.maximum.accumulate(e0)
            new = np.ones(len(s0), bool)
            new[1:] = s0[1:] > run_end[:-1]  # a merged interval starts where the last one has ended
            S = s0[new]
            E = np.maximum.reduceat(e0, np.flatnonzero(new))
            cum = np.concatenate([[0.0], np.cumsum(E - S)])
            i = np.searchsorted(E, a, side="right")
            j = np.searchsorted(S, b, side="left")
            has = j > i
            ii, jj = np.minimum(i, len(S) - 1), np.maximum(j - 1, 0)
            over = np.where(has, cum[j] - cum[i] - np.maximum(0.0, a - S[ii]) - np.maximum(0.0, E[jj] - b), 0.0)
        overlapped[mine] = np.maximum(over, 0.0) * 1e-9
        exposed[mine] = dur[mine] * 1e-9 - overlapped[mine]
    source = np.where(np.isfinite(exposed), TIMELINE_OVERLAP, None)
    old = frame["comm_overlap_source"].to_numpy(dtype=object) if "comm_overlap_source" in frame else None
    if old is not None:
        exposed = np.where(known, frame["comm_exposed_s"].to_numpy(dtype="float64", na_value=np.nan), exposed)
        overlapped = np.where(known, frame["comm_overlapped_s"].to_numpy(dtype="float64", na_value=np.nan), overlapped)
        source = np.where(known, old, source)
    return exposed, overlapped, pd.array(source, dtype="string")


def _from_kernel_names(frame: pd.DataFrame, coll: pd.Series) -> tuple[pd.Series, pd.Series, pd.Series, np.ndarray] | None:
    """Rows of a timeline (Nsight Systems, rocprof) whose NCCL/RCCL kernel names a collective the reader did not
    record: the collective from the name, its size unavailable (a timeline records none)."""
    names = frame.get("kernel_name")
    if names is None or not len(frame):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    empty = coll.isna().to_numpy()
    try:  # (in C++ over the whole column: a million-row frame costs milliseconds)
        hit = pc.match_substring_regex(pa.array(names.fillna(""), pa.large_string()), r"^\s*(?:void\s+)?[nr]ccl",
                                       ignore_case=True).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        hit = names.astype(str).str.contains(r"^\s*(?:void\s+)?[nr]ccl", case=False, regex=True).to_numpy()
    cand = empty & hit
    if not cand.any():
        return None
    names_c = names.to_numpy(dtype=object)[cand]
    found = {n: kernel_collective(n) for n in set(names_c)}  # (per distinct name: a timeline repeats a few)
    colls = np.array([found[n] for n in names_c], dtype=object)
    named = np.flatnonzero(cand)[np.array([c is not None for c in colls], dtype=bool)]
    colls = colls[[c is not None for c in colls]]
    coll = coll.astype("string").to_numpy(dtype=object, na_value=None).copy()
    src = (frame["collective_source"].astype("string").to_numpy(dtype=object, na_value=None).copy()
           if "collective_source" in frame else np.full(len(frame), None, dtype=object))
    size_src = (frame["message_bytes_source"].astype("string").to_numpy(dtype=object, na_value=None).copy()
                if "message_bytes_source" in frame else np.full(len(frame), None, dtype=object))
    coll[named] = colls
    src[named] = [f"recorded: the kernel's name ({str(n).split('(')[0]})" for n in names.to_numpy(dtype=object)[named]]
    size_src[named] = NO_SIZE_TIMELINE
    idx = frame.index
    coll, src, size_src = (pd.Series(pd.array(v, dtype="string"), index=idx) for v in (coll, src, size_src))
    return coll, src, size_src, cand


#: one row per collective identity (``--by collective``): what compare matches on, then the numbers
BY_COLLECTIVE_KEYS = ("collective", "message_bytes", "group_size", "process_group")


def by_collective(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (collective, message size, group size, process group), longest total time first: calls, time,
    median algorithm and bus bandwidth, the link roof and the median % of it, exposed and overlapped time."""
    cols = ["collective", "message_bytes", "group_size", "process_group", "calls", "duration_s", "pct_gpu_time",
            "median_algorithm_bandwidth_bytes_per_s", "median_bus_bandwidth_bytes_per_s", "link_roof_bytes_per_s",
            "median_pct_of_link_roof", "comm_exposed_s", "comm_overlapped_s", "link_placement"]
    if "collective" not in frame or not frame["collective"].notna().any():
        return pd.DataFrame({c: pd.Series(dtype="string" if c in ("collective", "process_group", "link_placement")
                                          else "float64") for c in cols})
    total = float(pd.to_numeric(frame["duration_s"], errors="coerce").clip(lower=0).sum())
    c = frame[frame["collective"].notna()]
    work = pd.DataFrame({k: c[k].astype("string").fillna("") if k in ("collective", "process_group")
                         else pd.to_numeric(c[k], errors="coerce") if k in c else np.nan for k in BY_COLLECTIVE_KEYS})
    for k in ("duration_s", "algorithm_bandwidth_bytes_per_s", "bus_bandwidth_bytes_per_s", "link_roof_bytes_per_s",
              "pct_of_link_roof", "comm_exposed_s", "comm_overlapped_s"):
        work[k] = pd.to_numeric(c[k], errors="coerce") if k in c else np.nan
    work["link_placement"] = c["link_placement"].astype("string") if "link_placement" in c else pd.NA
    g = work.groupby(list(BY_COLLECTIVE_KEYS), dropna=False, sort=False)
    out = pd.DataFrame({
        "calls": g.size(), "duration_s": g["duration_s"].sum(),
        "median_algorithm_bandwidth_bytes_per_s": g["algorithm_bandwidth_bytes_per_s"].median(),
        "median_bus_bandwidth_bytes_per_s": g["bus_bandwidth_bytes_per_s"].median(),
        "link_roof_bytes_per_s": g["link_roof_bytes_per_s"].first(),
        "median_pct_of_link_roof": g["pct_of_link_roof"].median(),
        "comm_exposed_s": g["comm_exposed_s"].sum(min_count=1), "comm_overlapped_s": g["comm_overlapped_s"].sum(min_count=1),
        "link_placement": g["link_placement"].first(),
    }).reset_index()
    out["pct_gpu_time"] = 100.0 * out["duration_s"] / total if total > 0 else np.nan
    out["process_group"] = out["process_group"].replace("", pd.NA).astype("string")
    out["collective"] = out["collective"].astype("string")
    out = out.sort_values(["duration_s", "collective"], ascending=[False, True], kind="stable").reset_index(drop=True)
    return out[cols]
