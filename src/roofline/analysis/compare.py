"""Roofline-level diff of two profiles: match kernels, compare their points, gate regressions.

Matching (each pair says which rule matched it, in ``match``):

1. a user mapping renames candidate kernels first (``old name = new name``);
2. normalised name + NVTX range + order of occurrence (the n-th launch of a kernel in a range);
3. normalised name + order of occurrence;
4. anything left is ``new`` (candidate only) or ``vanished`` (baseline only).

Names are normalised by dropping template arguments, parameter lists, a leading ``void`` and
launch-specific numeric suffixes (names in brackets, ``[CUDA memset]``, stay whole), so ``void gemm<128, 64>(float*, int)`` and ``gemm<256,128>(...)``
are one kernel. Repeated launches are also compared as groups (sums of time and work, counts).

Changes: relative (%) for time, FLOPs, bytes, achieved FLOP/s; absolute (points) for % of roof;
``bound_moved`` when the binding roof differs. Each profile keeps its own device's roofs.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from roofline.errors import RooflineError
from roofline.hardware.peaks import LEVELS

QUANTITIES = ("duration_s", "flop_total", "achieved_flop_per_s")


def normalise_name(name: object) -> str:
    """A kernel's identity across builds: no template arguments, parameters or numeric suffixes."""
    s = str(name or "")
    if s.lstrip().startswith("["):  # [CUDA memcpy Device-to-Device], [CUDA memset]: whole names of their own
        return " ".join(s.split())
    out, depth = [], 0
    for ch in s:  # drop <...> and (...) with nesting
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    s = " ".join("".join(out).split())
    s = s.removeprefix("void ")  # the return type (kernels return void); the rest of the name stays whole
    s = re.sub(r"(\.kd|_\d+|#\d+)+$", "", s)  # .kd (ROCm), _123 / #3 launch suffixes
    return s or str(name or "")


class CompareError(RooflineError):
    """Profiles that cannot be compared, or a bad mapping or gate rule."""


def ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows in launch order (file, then kernel id): "the n-th launch" is counted in this order."""
    f = frame.reset_index(drop=True)
    keys = [k for k in ("source_file", "kernel_id") if k in f]
    return f.sort_values(keys, kind="stable").reset_index(drop=True) if keys else f


def _prepare(frame: pd.DataFrame, mapping: Mapping[str, str] | None) -> pd.DataFrame:
    f = frame.copy()
    name = f["kernel_name"].astype("string").fillna("")
    if mapping:
        name = name.map(lambda n: mapping.get(n, mapping.get(normalise_name(n), n)))
    f["_key"] = [normalise_name(n) for n in name]
    f["_nvtx"] = f["nvtx_range"].astype("string").fillna("") if "nvtx_range" in f else ""
    f["_n_range"] = f.groupby(["_key", "_nvtx"]).cumcount()
    f["_n"] = f.groupby("_key").cumcount()
    return f


def match(base: pd.DataFrame, cand: pd.DataFrame, mapping: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Rows of (base_row, cand_row, key, match) over frames in :func:`ordered` order; -1: no partner."""
    b, c = _prepare(base, None), _prepare(cand, mapping)
    pairs, used_b, used_c = [], set(), set()
    for rule, cols in (("name+nvtx+order", ["_key", "_nvtx", "_n_range"]), ("name+order", ["_key", "_n"])):
        bb = b[~b.index.isin(used_b)].reset_index().rename(columns={"index": "_bi"})
        cc = c[~c.index.isin(used_c)].reset_index().rename(columns={"index": "_ci"})
        m = bb[["_bi", *cols]].merge(cc[["_ci", *cols]], on=cols, how="inner")
        for _, r in m.iterrows():
            pairs.append((int(r["_bi"]), int(r["_ci"]), b.at[int(r["_bi"]), "_key"], rule))
            used_b.add(int(r["_bi"]))
            used_c.add(int(r["_ci"]))
    for i in b.index.difference(list(used_b)):
        pairs.append((int(i), -1, b.at[i, "_key"], "vanished"))
    for i in c.index.difference(list(used_c)):
        pairs.append((-1, int(i), c.at[i, "_key"], "new"))
    return pd.DataFrame(pairs, columns=["base_row", "cand_row", "kernel", "match"])


def _pct(new: pd.Series, old: pd.Series) -> pd.Series:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (new - old) / old * 100.0
    return out.where(~((new == old) & old.notna()), 0.0)


def compare(base: pd.DataFrame, cand: pd.DataFrame, levels: Sequence[str] = LEVELS,
            mapping: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per matched pair, new or vanished kernel, with both points and the changes."""
    b, c = ordered(base), ordered(cand)
    pairs = match(b, c, mapping)
    cols = [*QUANTITIES, "pct_of_roof", "binding_roof", "bound", "kernel_name", "kernel_id", "device_name"]
    cols += [f"{lv}_bytes" for lv in levels] + [f"intensity_{lv}_flop_per_byte" for lv in levels]

    def side(frame: pd.DataFrame, rows: pd.Series, tag: str) -> pd.DataFrame:
        present = [x for x in cols if x in frame]
        picked = frame.reindex(rows.where(rows >= 0, -1).to_numpy())[present].reset_index(drop=True)
        picked.loc[(rows < 0).to_numpy(), :] = np.nan
        return picked.add_suffix(f"_{tag}")

    out = pd.concat([pairs.reset_index(drop=True), side(b, pairs["base_row"], "base"), side(c, pairs["cand_row"], "cand")],
                    axis=1)
    for q in (*QUANTITIES, *(f"{lv}_bytes" for lv in levels)):
        if f"{q}_base" in out and f"{q}_cand" in out:
            out[f"{q}_change_pct"] = _pct(pd.to_numeric(out[f"{q}_cand"], errors="coerce"),
                                          pd.to_numeric(out[f"{q}_base"], errors="coerce"))
    for lv in levels:
        col = f"intensity_{lv}_flop_per_byte"
        if f"{col}_base" in out:
            out[f"{col}_change_pct"] = _pct(pd.to_numeric(out[f"{col}_cand"], errors="coerce"),
                                            pd.to_numeric(out[f"{col}_base"], errors="coerce"))
    out["pct_of_roof_change_pts"] = (pd.to_numeric(out["pct_of_roof_cand"], errors="coerce")
                                     - pd.to_numeric(out["pct_of_roof_base"], errors="coerce"))
    matched = out["match"].isin(["name+nvtx+order", "name+order"])
    rb, rc = out["binding_roof_base"].astype("string"), out["binding_roof_cand"].astype("string")
    known = rb.notna() & rc.notna() & (rb != "unavailable") & (rc != "unavailable")
    out["bound_moved"] = (matched & known.fillna(False) & (rb != rc).fillna(False)).astype(bool)
    return out


def group_changes(diff: pd.DataFrame) -> pd.DataFrame:
    """Repeated launches of one kernel as a group: counts, summed time and work, their changes."""
    agg = {}
    for q in ("duration_s", "flop_total"):
        for tag in ("base", "cand"):
            agg[f"{q}_{tag}"] = pd.to_numeric(diff[f"{q}_{tag}"], errors="coerce")
    frame = pd.DataFrame(agg)
    frame["kernel"] = diff["kernel"]
    frame["launches_base"] = (diff["base_row"] >= 0).astype(int)
    frame["launches_cand"] = (diff["cand_row"] >= 0).astype(int)
    g = frame.groupby("kernel", sort=False).sum(min_count=1).reset_index()
    for q in ("duration_s", "flop_total"):
        g[f"{q}_change_pct"] = _pct(g[f"{q}_cand"], g[f"{q}_base"])
    return g.sort_values("duration_s_base", ascending=False, na_position="last").reset_index(drop=True)


def _program_time(diff: pd.DataFrame, side: str, absent: str) -> float:
    """Whole-program time of one side; unavailable (NaN) when a kernel of that side has no duration
    (e.g. rocprof timestamps rounded to zero): a sum that skipped it would read as a speed-up."""
    t = pd.to_numeric(diff[f"duration_s_{side}"], errors="coerce")[(diff["match"] != absent).to_numpy()]
    return float("nan") if t.isna().any() else float(t.sum())


def program_change(diff: pd.DataFrame) -> dict[str, float]:
    tb = _program_time(diff, "base", "new")
    tc = _program_time(diff, "cand", "vanished")
    return {"time_base_s": float(tb), "time_cand_s": float(tc),
            "time_change_pct": float((tc - tb) / tb * 100.0) if tb else float("nan"),
            "matched": int(diff["match"].isin(["name+nvtx+order", "name+order"]).sum()),
            "new": int((diff["match"] == "new").sum()), "vanished": int((diff["match"] == "vanished").sum())}


# -- the regression gate -----------------------------------------------------------------------

RULE_HELP = _RULE_HELP = (
    "rules: METRIC>N% or METRIC<-N% on time, flop, achieved, dram_bytes, l2_bytes, l1_bytes (relative "
    "change of a matched kernel); roof<-N (change of % of roof, in points); total_time>N% (whole "
    "program); bound (any matched kernel whose binding roof moved); vanished; new. Separate rules with commas."
)
_METRICS = {"time": "duration_s_change_pct", "flop": "flop_total_change_pct", "achieved": "achieved_flop_per_s_change_pct",
            "dram_bytes": "dram_bytes_change_pct", "l2_bytes": "l2_bytes_change_pct", "l1_bytes": "l1_bytes_change_pct",
            "roof": "pct_of_roof_change_pts"}


@dataclass(frozen=True)
class Rule:
    text: str
    metric: str
    op: str | None = None
    threshold: float | None = None


def parse_rules(text: str, metrics: Collection[str] | None = None, help_text: str | None = None) -> list[Rule]:
    """The --fail-on rules; ``metrics``/``help_text``: another gate's (the identity gate's) names and help."""
    metrics = _METRICS if metrics is None else metrics
    RULE_HELP = help_text or _RULE_HELP  # noqa: N806 - the help the messages below quote
    rules = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        if part in ("bound", "vanished", "new"):
            rules.append(Rule(part, part))
            continue
        m = re.fullmatch(r"([a-z_0-9]+)\s*([<>])\s*([-+]?\d+(?:\.\d+)?)\s*(%|pts?)?", part)
        if not m:
            raise CompareError(f"bad --fail-on rule {part!r}; {RULE_HELP}")
        metric, op, value, unit = m.groups()
        if metric not in metrics and metric != "total_time":
            raise CompareError(f"unknown metric {metric!r} in --fail-on rule {part!r}; {RULE_HELP}")
        if metric == "roof" and unit == "%":
            raise CompareError(f"--fail-on {part!r}: % of roof changes are in points (roof<-10), not %")
        if metric != "roof" and unit not in ("%", None):
            raise CompareError(f"--fail-on {part!r}: use % for relative changes")
        rules.append(Rule(part, metric, op, float(value)))
    if not rules:
        raise CompareError(f"empty --fail-on; {RULE_HELP}")
    return rules


def gate(diff: pd.DataFrame, rules: Sequence[Rule]) -> list[str]:
    """The violations, one line each (empty: the gate passes)."""
    out = []
    matched = diff[diff["match"].isin(["name+nvtx+order", "name+order"])]
    for r in rules:
        if r.metric == "bound":
            hits = matched[matched["bound_moved"]]
            out += [f"{r.text}: {k} moved from {a} to {b}" for k, a, b in
                    zip(hits["kernel"], hits["binding_roof_base"], hits["binding_roof_cand"])]
        elif r.metric in ("vanished", "new"):
            out += [f"{r.text}: {k}" for k in diff.loc[diff["match"] == r.metric, "kernel"]]
        elif r.metric == "total_time":
            change = program_change(diff)["time_change_pct"]
            if _crosses(change, r):
                out.append(f"{r.text}: whole program time changed {change:+.2f}%")
        else:
            col = _METRICS[r.metric]
            vals = pd.to_numeric(matched.get(col), errors="coerce") if col in matched else pd.Series(dtype=float)
            for k, v in zip(matched["kernel"], vals):
                if _crosses(v, r):
                    out.append(f"{r.text}: {k} changed {v:+.2f}{'' if r.metric == 'roof' else '%'}")
    return out


def unevaluated(diff: pd.DataFrame, rules: Sequence[Rule]) -> list[str]:
    """Rules the gate could not check, one line each: a CI gate must not pass on numbers it never saw.

    A numeric rule cannot be evaluated when no matched kernel has its change (nothing matched, or the
    quantity is unavailable everywhere), or when a kernel has the quantity on one side only (the
    candidate lost a counter the baseline had, or the reverse). Kernels without it on both sides are
    left out of the rule, as they are of the table.
    """
    out = []
    matched = diff[diff["match"].isin(["name+nvtx+order", "name+order"])]
    for r in rules:
        if r.metric in ("bound", "vanished", "new"):
            continue
        if r.metric == "total_time":
            if np.isnan(program_change(diff)["time_change_pct"]):
                out.append(f"{r.text}: the baseline has no kernel time, so no whole-program change")
            continue
        col = _METRICS[r.metric]
        if matched.empty:
            out.append(f"{r.text}: no kernel matched between the profiles (pair renamed kernels with --map FILE)")
            continue
        change = pd.to_numeric(matched[col], errors="coerce") if col in matched else pd.Series(np.nan, index=matched.index)
        if change.notna().sum() == 0:
            out.append(f"{r.text}: {col} is unavailable for every matched kernel")
            continue
        q = col.removesuffix("_change_pct").removesuffix("_change_pts")
        if f"{q}_base" in matched and f"{q}_cand" in matched:
            b = pd.to_numeric(matched[f"{q}_base"], errors="coerce").notna()
            c = pd.to_numeric(matched[f"{q}_cand"], errors="coerce").notna()
            lost = matched.loc[(b != c).to_numpy(), "kernel"].astype(str).tolist()
            if lost:
                shown = ", ".join(lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
                out.append(f"{r.text}: {q} known in one profile only for {len(lost)} kernel(s): {shown}")
    return out


def _crosses(v: float, r: Rule) -> bool:
    if v is None or np.isnan(v) or r.threshold is None:
        return False
    return v > r.threshold if r.op == ">" else v < r.threshold


def read_mapping(path: str) -> dict[str, str]:
    """``old name = new name`` per line (# comments); names as demangled or normalised."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if "=" not in line:
                raise CompareError(f"{path}: line {n}: expected 'baseline name = candidate name'")
            old, new = (x.strip() for x in line.split("=", 1))
            out[new] = old  # candidate names are renamed to their baseline names
    return out
