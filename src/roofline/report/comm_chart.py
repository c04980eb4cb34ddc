"""The communication roofline: bus bandwidth against message size, with the link roofs (nccl-tests' curve, each
collective of the profile a point), and the collectives' exposed vs overlapped time per rank and step.

:func:`comm_data` is the data (shared by the PNG, :func:`write`, and the HTML report's section, ``comm.js``);
every artist of the PNG carries a ``gid`` (``comm:<collective>``, ``comm-alg:<collective>`` for collectives
drawn at their algorithm bandwidth because the group size is unrecorded, ``link:<name>``) so tests read the
drawn coordinates back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from roofline.analysis.aggregate import step_ranges
from roofline.frames import row_dicts

#: collectives drawn at most (the longest); the others are counted as not drawn
MAX_POINTS = 20_000
RANK_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
COLLECTIVE_COLOURS = {"all_reduce": "#1f77b4", "all_gather": "#2ca02c", "reduce_scatter": "#d62728",
                      "all_to_all": "#9467bd", "broadcast": "#8c564b", "reduce": "#e377c2", "send_recv": "#7f7f7f",
                      "gather": "#bcbd22", "scatter": "#17becf"}
#: the columns :func:`comm_data` reads of the collectives' rows
_READ = ("collective", "duration_s", "nvtx_range", "message_bytes", "message_bytes_source", "bus_bandwidth_bytes_per_s",
         "algorithm_bandwidth_bytes_per_s", "pct_of_link_roof", "group_size", "rank", "device_name", "process_group",
         "link_placement", "link_roof_bytes_per_s", "link_roof_bytes_per_s_source")


def _f(v: Any) -> float | None:
    return None if v is None or pd.isna(v) else float(v)


def has_collectives(frame: pd.DataFrame) -> bool:
    return "collective" in frame and bool(frame["collective"].notna().any())


def comm_data(frame: pd.DataFrame) -> dict[str, Any]:
    """Points (one per collective row with a size), link roofs (one per distinct roof), exposure per rank and step,
    and the count of collectives not drawn with the reasons."""
    if not has_collectives(frame):
        return {}
    # (only the columns read here: a dataset's frame has ~140, each copied for the rows and made objects per row)
    c = frame.loc[frame["collective"].notna(), [k for k in _READ if k in frame]]
    if len(c) > MAX_POINTS:  # the page's JSON stays bounded: the longest collectives, the rest counted
        c = c.sort_values("duration_s", ascending=False, kind="stable").head(MAX_POINTS)
    step = step_ranges(c["nvtx_range"], flags=0) if "nvtx_range" in c else pd.Series(pd.NA, index=c.index)
    points = []
    for r, st in zip(row_dicts(c), step.to_numpy()):
        size, bus, alg = _f(r.get("message_bytes")), _f(r.get("bus_bandwidth_bytes_per_s")), \
            _f(r.get("algorithm_bandwidth_bytes_per_s"))
        if size is None or (bus is None and alg is None):
            continue
        points.append({"collective": r["collective"], "bytes": size, "busbw": bus, "algbw": alg,
                       "pct": _f(r.get("pct_of_link_roof")), "time_s": _f(r.get("duration_s")),
                       "n": None if pd.isna(r.get("group_size")) else int(r["group_size"]),
                       "rank": None if pd.isna(r.get("rank")) else int(r["rank"]),
                       "step": None if pd.isna(st) else str(st), "device": _text(r.get("device_name")),
                       "group": _text(r.get("process_group")), "placement": _text(r.get("link_placement"))})
    roofs: dict[tuple[float, str], dict[str, Any]] = {}
    if "link_roof_bytes_per_s" in c:
        for v, src, place in zip(c["link_roof_bytes_per_s"], c["link_roof_bytes_per_s_source"],
                                 c["link_placement"]):
            if pd.notna(v):
                where = "inter-node" if str(place).startswith("inter-node") else "intra-node"
                roofs.setdefault((float(v), str(src)), {"value": float(v), "source": str(src), "placement": where})
    unsized = c[c["message_bytes"].isna()] if "message_bytes" in c else c
    why = unsized["message_bytes_source"].fillna("unavailable: no size").value_counts() \
        if "message_bytes_source" in unsized else pd.Series(dtype="int64")
    whole = int(frame["collective"].notna().sum())
    return {"points": points, "roofs": sorted(roofs.values(), key=lambda x: -x["value"]),
            "exposure": exposure(frame), "not_drawn": int(whole - len(points)),
            "not_drawn_reasons": [{"reason": str(k), "rows": int(v)} for k, v in why.items()]}


def _text(v: Any) -> str | None:
    return None if v is None or pd.isna(v) else str(v)


def exposure(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Per (rank, step): the collectives' exposed and overlapped seconds and the step's GPU time (Σ rows)."""
    if "comm_exposed_s" not in frame or not frame["comm_exposed_s"].notna().any():
        return []
    rank = frame["rank"].astype("Int64").astype("string").fillna("") if "rank" in frame else \
        pd.Series("", index=frame.index)
    step = step_ranges(frame["nvtx_range"], flags=0).fillna("(no step)") \
        if "nvtx_range" in frame else pd.Series("(no step)", index=frame.index)
    g = pd.DataFrame({"rank": rank.to_numpy(), "step": step.to_numpy(),
                      "exposed": frame["comm_exposed_s"].to_numpy(dtype="float64", na_value=np.nan),
                      "overlapped": frame["comm_overlapped_s"].to_numpy(dtype="float64", na_value=np.nan),
                      "time": pd.to_numeric(frame["duration_s"], errors="coerce").to_numpy()})
    out = []
    for (rk, st), part in g.groupby(["rank", "step"], sort=False):
        if part["exposed"].notna().any():
            out.append({"rank": rk or None, "step": st, "exposed_s": float(part["exposed"].sum()),
                        "overlapped_s": float(part["overlapped"].sum()), "gpu_time_s": float(part["time"].sum())})
    return out


def draw(frame: pd.DataFrame, title: str | None = None):  # type: ignore[no-untyped-def]
    """The communication roofline as a matplotlib Figure (None when no collective has a size)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    data = comm_data(frame)
    pts = data.get("points", [])
    if not pts:
        return None
    fig = Figure(figsize=(9, 6), dpi=110)
    ax = fig.add_subplot(111)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ranks = sorted({p["rank"] for p in pts if p["rank"] is not None})
    shape = {r: RANK_MARKERS[i % len(RANK_MARKERS)] for i, r in enumerate(ranks)} if len(ranks) > 1 else {}
    for coll in sorted({p["collective"] for p in pts}):
        colour = COLLECTIVE_COLOURS.get(coll, "#333")
        for rank in (ranks if shape else [None]):  # a marker per rank where the profiles are several ranks'
            mine = [p for p in pts if p["collective"] == coll and (rank is None or p["rank"] == rank)]
            bus = [p for p in mine if p["busbw"] is not None]
            alg = [p for p in mine if p["busbw"] is None and p["algbw"] is not None]
            tag, m = (f", rank {rank}", shape[rank]) if rank is not None else ("", "o")
            gid = f"{coll}:rank{rank}" if rank is not None else coll
            if bus:
                ax.scatter([p["bytes"] for p in bus], [p["busbw"] for p in bus], s=22, color=colour, marker=m,
                           label=f"{coll} (busbw{tag})", gid=f"comm:{gid}", zorder=3)
            if alg:
                ax.scatter([p["bytes"] for p in alg], [p["algbw"] for p in alg], s=22, facecolors="none", marker=m,
                           edgecolors=colour, label=f"{coll} (algbw: group size unrecorded{tag})",
                           gid=f"comm-alg:{gid}", zorder=3)
    xs = [p["bytes"] for p in pts]
    lo, hi = min(xs) / 2, max(xs) * 2
    for r in data["roofs"]:
        name = r["source"].removeprefix("spec: ").split(" (")[0]
        ax.plot([lo, hi], [r["value"]] * 2, color="#000", lw=1.2, ls="-" if r["placement"] == "intra-node" else "--",
                gid=f"link:{name}")
        ax.text(lo, r["value"] * 1.06, f"{r['placement']} roof · {name}", fontsize=8, va="bottom")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("message size (bytes, nccl-tests' S)")
    ax.set_ylabel("bus bandwidth, filled; algorithm bandwidth, hollow (B/s, one direction)")
    ax.set_title(title or "Collectives on the links", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    notes = []
    if data["not_drawn"]:
        notes.append(f"{data['not_drawn']} collective(s) not drawn: no message size or GPU time recorded")
    if not data["roofs"]:
        notes.append("no link roof: the device is not in the spec table, or the group spans nodes with no --links NIC")
    notes.append("busbw = S/t × nccl-tests' bus factor; NVLS/tree algorithms can pass the ring's roof")
    fig.text(0.01, 0.005, "\n".join(notes), fontsize=7, va="bottom")
    fig.subplots_adjust(bottom=0.1 + 0.025 * len(notes))
    return fig


def write(frame: pd.DataFrame, path: str | Path, title: str | None = None) -> Path | None:
    """``communication.png`` (or ``.svg`` by the suffix); None when there is nothing to draw."""
    fig = draw(frame, title)
    if fig is None:
        return None
    path = Path(path)
    if path.suffix.lower() == ".png":
        from roofline.report.ticks import for_png

        for_png(fig.axes[0])
    fig.savefig(path)
    return path
