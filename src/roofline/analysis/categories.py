"""Op categories (GEMM, attention, convolution, …): what kind of work each row does, and the time per category.

The table is data, ``categories.toml`` beside this module (its header says how a row's category is decided);
:func:`categorize` applies it to a roofline or kernels frame and :func:`by_category` sums a frame into one row
per category, the shares of GPU time adding up to 100%. The terminal (``--by category``), the headline, the
HTML report and the API (``roofline.by_category``) all use these two functions.

Names repeat: a 216k-event trace has a few hundred distinct (name, kernel, XLA category) tuples, so the rules
run once per distinct tuple, not per row.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from importlib import resources

import numpy as np
import pandas as pd

from roofline.analysis.coverage import has_point, number, row_codes

#: the categories in the table's order, then the two that no pattern gives
OTHER = "other"
IDLE = "idle"
#: rows that XLA records as time with nothing running (its IDLE op)
IDLE_NAMES = frozenset({"IDLE"})


@dataclass(frozen=True)
class Category:
    name: str
    what: str
    patterns: tuple[re.Pattern[str], ...]


@dataclass(frozen=True)
class Table:
    """The parsed ``categories.toml``."""

    categories: tuple[Category, ...]
    op_models: dict[str, str]  # "family" or "family.function" -> category
    hlo: dict[str, str]  # XLA hlo_category -> category

    @property
    def names(self) -> tuple[str, ...]:
        return (*(c.name for c in self.categories), OTHER, IDLE)


@cache
def table() -> Table:
    """The category table (read once)."""
    raw = tomllib.loads(resources.files(__package__).joinpath("categories.toml").read_text(encoding="utf-8"))
    cats = tuple(Category(c["name"], c["what"], tuple(re.compile(p, re.IGNORECASE) for p in c["patterns"]))
                 for c in raw["category"])
    known = {c.name for c in cats} | {OTHER, IDLE}
    for section in ("op_models", "hlo"):
        bad = {v for v in raw[section].values() if v not in known}
        if bad:
            raise ValueError(f"categories.toml [{section}]: unknown categories {sorted(bad)}")
    return Table(cats, dict(raw["op_models"]), dict(raw["hlo"]))


@cache
def _op_model_categories() -> dict[str, str]:
    """Framework op name -> category, from the op model that prices it (``metrics/ops`` families)."""
    from roofline.metrics.ops import MODELS

    t = table()
    out = {}
    for op, f in MODELS.items():
        family = f.__module__.rsplit(".", 1)[-1]
        cat = t.op_models.get(f"{family}.{f.__name__}") or t.op_models.get(family)
        if cat:
            out[op] = cat
    return out


#: a back-reference counts groups: joined into one alternation, a pattern's groups would be renumbered
_BACKREF = re.compile(r"\\[1-9]|\(\?P=")


@cache
def _searches() -> tuple[tuple[str, Callable[[str], object]], ...]:
    """Per category in the table's order, its name and one ``search`` that matches where any of its patterns
    does: the patterns joined into one alternation, one regex run per name instead of one per pattern (the
    names of a 100k-kernel page are all distinct). A category whose patterns cannot be joined (a
    back-reference, a flag that must come first) keeps them one by one."""
    out = []
    for c in table().categories:
        search: Callable[[str], object] | None = None
        if not any(_BACKREF.search(p.pattern) for p in c.patterns):
            try:
                search = re.compile("|".join(f"(?:{p.pattern})" for p in c.patterns), re.IGNORECASE).search
            except re.error:
                search = None
        if search is None:
            search = partial(_any_search, c.patterns)
        out.append((c.name, search))
    return tuple(out)


def _any_search(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    return any(p.search(text) for p in patterns)


def _first_match(text: str) -> str | None:
    """The first category (table order) with a pattern found in ``text``."""
    for category, search in _searches():
        if search(text):
            return category
    return None


def category_of(name: str | None, full: str | None = None, mangled: str | None = None, hlo: str | None = None,
                copy: bool = False) -> str:
    """The category of one row from its names (see ``categories.toml`` for the order of the rules)."""
    return _category_of(name, full, mangled, hlo, copy, _first_match)


def _category_of(name: str | None, full: str | None, mangled: str | None, hlo: str | None, copy: bool,
                 match: Callable[[str], str | None]) -> str:
    t = table()
    if name in IDLE_NAMES or hlo in IDLE_NAMES:
        return IDLE
    if copy:
        return "data movement"
    models = _op_model_categories()
    for n in (name, full):
        if n and n in models:
            return models[n]
    if hlo and hlo in t.hlo:
        return t.hlo[hlo]
    for text in (name, full, mangled, hlo):
        if text and (category := match(text)) is not None:
            return category
    return OTHER


def _text(frame: pd.DataFrame, col: str) -> pd.Series:
    if col not in frame:
        return pd.Series(pd.NA, index=frame.index, dtype="string")
    return frame[col].astype("string")


def categorize(frame: pd.DataFrame) -> pd.Series:
    """The category of every row (a string Series on the frame's index), from its names and op model."""
    if frame.empty:
        return pd.Series([], index=frame.index, dtype="string", name="op_category")
    copy = frame["copy_kind"].notna() if "copy_kind" in frame else pd.Series(False, index=frame.index)
    keys = [_text(frame, "kernel_short_name"), _text(frame, "kernel_name"), _text(frame, "mangled_name"),
            _text(frame, "hlo_category"), copy.astype(bool)]
    codes, first = row_codes(keys)
    values = [k.iloc[first].to_numpy(dtype=object, na_value=None) for k in keys]  # (each tuple's first row only)
    matched: dict[str, str | None] = {}  # a name's first category, once: a short name recurs in many tuples

    def match(text: str) -> str | None:
        if text not in matched:
            matched[text] = _first_match(text)
        return matched[text]

    cats = np.array([_category_of(*(v or None for v in u[:4]), bool(u[4]), match) for u in zip(*values)] or [OTHER],
                    dtype=object)
    return pd.Series(cats[codes], index=frame.index, dtype="string", name="op_category")


#: the columns of :func:`by_category`, in order
COLUMNS = ("category", "kernel_count", "duration_s", "pct_gpu_time", "cumulative_pct", "flop_total", "dram_bytes",
           "achieved_flop_per_s", "achieved_dram_bytes_per_s", "median_pct_of_roof", "pct_time_with_point",
           "comm_exposed_s", "comm_overlapped_s")


def by_category(frame: pd.DataFrame, categories: pd.Series | None = None) -> pd.DataFrame:
    """One row per category, longest first: launches, time, % of GPU time (the frame's total: the shares add
    up to 100), cumulative %, FLOPs and DRAM bytes, achieved FLOP/s and DRAM bytes/s (over the time of the
    rows that have FLOPs, resp. DRAM bytes: rows without them are not counted as zero), the median % of roof
    of its rows, the % of its time in rows that have a roofline point, and (communication) its collectives' time
    that ran alone (exposed) and while other kernels ran (overlapped), NaN where the profile does not give them.

    ``categories``: the rows' categories when already computed (:func:`categorize`)."""
    if frame.empty:
        return pd.DataFrame({c: pd.Series(dtype="string" if c == "category" else float) for c in COLUMNS})
    cat = categorize(frame) if categories is None else categories
    dur = number(frame, "duration_s").fillna(0.0)
    count = number(frame, "kernel_count").fillna(1.0) if "kernel_count" in frame else pd.Series(1.0, index=frame.index)
    flop, dram = number(frame, "flop_total"), number(frame, "dram_bytes")
    point = has_point(frame)
    work = pd.DataFrame({
        "category": cat.to_numpy(), "kernel_count": count.to_numpy(), "duration_s": dur.to_numpy(),
        "flop_total": flop.to_numpy(), "dram_bytes": dram.to_numpy(),
        "t_flop": dur.where(flop.notna(), 0.0).to_numpy(), "t_dram": dur.where(dram.notna(), 0.0).to_numpy(),
        "t_point": dur.where(point, 0.0).to_numpy(), "pct": number(frame, "pct_of_roof").to_numpy(),
        "comm_exposed_s": number(frame, "comm_exposed_s").to_numpy(),
        "comm_overlapped_s": number(frame, "comm_overlapped_s").to_numpy(),
    })
    g = work.groupby("category", sort=False)
    out = g[["kernel_count", "duration_s", "t_flop", "t_dram", "t_point"]].sum()
    out["flop_total"] = g["flop_total"].sum(min_count=1)
    out["dram_bytes"] = g["dram_bytes"].sum(min_count=1)
    out["median_pct_of_roof"] = g["pct"].median()
    out["comm_exposed_s"] = g["comm_exposed_s"].sum(min_count=1)
    out["comm_overlapped_s"] = g["comm_overlapped_s"].sum(min_count=1)
    total = float(dur.sum())
    out["pct_gpu_time"] = 100.0 * out["duration_s"] / total if total > 0 else np.nan
    out["achieved_flop_per_s"] = (out["flop_total"] / out["t_flop"]).where(out["t_flop"] > 0)
    out["achieved_dram_bytes_per_s"] = (out["dram_bytes"] / out["t_dram"]).where(out["t_dram"] > 0)
    out["pct_time_with_point"] = (100.0 * out["t_point"] / out["duration_s"]).where(out["duration_s"] > 0)
    out = out.reset_index().sort_values(["duration_s", "category"], ascending=[False, True], kind="stable")
    out["cumulative_pct"] = out["pct_gpu_time"].cumsum()
    out["category"] = out["category"].astype("string")
    out["kernel_count"] = out["kernel_count"].astype("int64")
    return out[list(COLUMNS)].reset_index(drop=True)


__all__ = ["COLUMNS", "IDLE", "OTHER", "by_category", "categorize", "category_of", "table"]
