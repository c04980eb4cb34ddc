"""The MCP tools as plain functions: paths checked against the allowed roots, the same pipeline and the same
envelope as the CLI (``roofline.report.envelope``), answers bounded (top N rows and a cursor for the next page).

Nothing here knows MCP: :mod:`roofline.agent.server` registers these functions as tools. Each returns a dict of
plain JSON values; a refused path or a bad argument raises :class:`ToolInputError`, which the server turns into
the tool's error result (one line, naming the path or the argument).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.errors import RooflineError

if TYPE_CHECKING:
    import pandas as pd

    from roofline.pipeline import Analysis, Options

#: rows per page unless asked (an agent's context is small), and the most a page may hold
DEFAULT_TOP = 10
MAX_TOP = 100
#: the columns of a "compact" row (every row keeps its key; "full" gives all ~130 columns, as the CLI's JSON)
COMPACT = ("row_key", "source_file", "kernel_short_name", "kernel_name", "kernel", "nvtx", "program", "process", "rank",
           "step", "category", "kernel_config", "kernel_count", "device_name", "duration_s", "pct_gpu_time",
           "flop_total", "dram_bytes", "compute_precision", "achieved_flop_per_s", "attainable_flop_per_s",
           "intensity_dram_flop_per_byte", "binding_roof", "bound", "pct_of_roof", "time_at_roof_s", "analysis_note",
           # compare rows
           "candidate", "match", "duration_s_base", "duration_s_cand", "duration_s_change_pct",
           "pct_of_roof_base", "pct_of_roof_cand", "pct_of_roof_change_pts", "binding_roof_base",
           "binding_roof_cand", "bound_moved",
           # devices rows
           "gpu", "figure", "dense_tflop_per_s", "dram_tb_per_s", "sm_count", "boost_clock_mhz", "source")
#: the most items of each envelope list an answer carries (a folder of 10,000 profiles, a run of 1,000 steps):
#: what is left out is counted in ``page.left_out``
MAX_ITEMS = {"inputs": 50, "errors": 50, "headline": 30, "peaks": 64, "notes": 50}
#: analyses kept for the next page (a 20,000-row trace is not read again for every page)
_CACHE_SIZE = 4


class ToolInputError(RooflineError, ValueError):
    """A path outside the allowed roots, or an argument the tool cannot use."""


class Roots:
    """The folders a client may name paths under (``roofline mcp --root DIR``, repeatable; default the current
    directory). A relative path is taken relative to the first root; symlinks are followed before the check,
    so a link inside a root that points outside it is refused."""

    def __init__(self, roots: Sequence[str | Path] = ()) -> None:
        given = [Path(r) for r in roots] or [Path.cwd()]
        self.roots = [Path(os.path.realpath(r)) for r in given]

    def check(self, path: str) -> Path:
        if not isinstance(path, str) or not path.strip():
            raise ToolInputError("a path is required")
        p = Path(path).expanduser()
        real = Path(os.path.realpath(p if p.is_absolute() else self.roots[0] / p))
        if not any(real == r or r in real.parents for r in self.roots):
            raise ToolInputError(f"{path}: outside the allowed roots ({', '.join(map(str, self.roots))}); "
                                 "start the server with `roofline mcp --root DIR` to allow another folder")
        return real


def _top(top: int | None) -> int:
    if top is None:
        return DEFAULT_TOP
    if not isinstance(top, int) or top < 1:
        raise ToolInputError(f"top must be a positive integer; got {top!r}")
    return min(top, MAX_TOP)


def _cursor(query: dict[str, Any], offset: int) -> str:
    body = json.dumps({"o": offset, "q": _query_hash(query)}).encode()
    return base64.urlsafe_b64encode(body).decode().rstrip("=")


def _query_hash(query: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(query, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _offset(cursor: str | None, query: dict[str, Any]) -> int:
    """The offset a cursor from an earlier page points at; a cursor of another query is refused."""
    if not cursor:
        return 0
    try:
        body = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset, q = int(body["o"]), str(body["q"])
    except (ValueError, KeyError, TypeError):
        raise ToolInputError(f"cursor {cursor!r} is not one this server gave") from None
    if q != _query_hash(query) or offset < 0:
        raise ToolInputError("the cursor belongs to another query: pass the same arguments as the page it came from")
    return offset


def _page(frame: pd.DataFrame, offset: int, top: int, detail: str, query: dict[str, Any]) -> dict[str, Any]:
    from roofline.report.envelope import records

    if detail not in ("compact", "full"):
        raise ToolInputError(f"detail must be 'compact' or 'full'; got {detail!r}")
    part = frame.iloc[offset:offset + top]
    if detail == "compact":
        part = part[[c for c in COMPACT if c in part.columns]]
    end = offset + len(part)
    return {"rows": records(part),
            "page": {"offset": offset, "limit": top, "returned": len(part), "total": len(frame), "detail": detail,
                     "next_cursor": _cursor(query, end) if end < len(frame) else None}}


# ---- running the pipeline, with a small cache for the next pages ---------------------------------------

class Session:
    """What one server keeps: its roots and the last few analyses."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self._cache: OrderedDict[tuple[Any, ...], Analysis] = OrderedDict()

    def options(self, peaks: str = "counters", device: str | None = None) -> Options:
        from roofline.pipeline import PEAK_SOURCES, Options

        if peaks not in PEAK_SOURCES and (os.sep in peaks or peaks.lower().endswith((".toml", ".csv"))):
            peaks = str(self.roots.check(peaks))  # a peaks file is a path like any other
        return Options(peaks=peaks, device=device)

    def run(self, paths: Sequence[str], options: Options) -> Analysis:
        """The pipeline over the checked paths (cached by path, size, modification time and options)."""
        from roofline.pipeline import run

        if isinstance(paths, str):
            paths = [paths]
        if not paths:
            raise ToolInputError("give at least one path")
        real = [self.roots.check(p) for p in paths]
        key = (tuple(map(str, real)), tuple(_stamp(p) for p in real), options)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        result = run(real, options)
        self._cache[key] = result
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return result


def _stamp(p: Path) -> tuple[int, int]:
    try:
        st = p.stat()
        return st.st_mtime_ns, st.st_size
    except OSError:
        return 0, 0


# ---- the tools -----------------------------------------------------------------------------------------

def analyze(session: Session, paths: list[str], top: int | None = None, cursor: str | None = None,
            by: str | None = None, name: str | None = None, nvtx: str | None = None, bound: str | None = None,
            precision: str | None = None, peaks: str = "counters", device: str | None = None,
            detail: str = "compact") -> dict[str, Any]:
    """``roofline analyze --format json`` of the paths: the envelope (inputs, headline, peaks, notes, errors)
    and one page of its rows, longest first."""
    from roofline.analysis.views import table_rows
    from roofline.report.envelope import envelope, with_row_keys

    n = _top(top)
    options = session.options(peaks, device)
    run = session.run(paths, options)
    query = {"tool": "analyze", "paths": list(paths), "by": by, "name": name, "nvtx": nvtx, "bound": bound,
             "precision": precision, "peaks": peaks, "device": device}
    offset = _offset(cursor, query)
    frame = run.frame
    if by is None and "row_key" not in frame:
        with_row_keys(frame)  # the cached frame keeps them for the next page
    try:
        result, scope = table_rows(frame, by=by, levels=run.levels, latency_threshold_pct=options.latency_threshold_pct,
                                   name=name, nvtx=nvtx, bound=bound, precision=precision)
    except ValueError as exc:
        raise ToolInputError(str(exc)) from None
    from roofline.analysis.collect import with_collect_next

    result = with_collect_next(result, scope, by)  # as the CLI's JSON rows carry it
    if by is not None:
        with_row_keys(result, by)
    page = _page(result, offset, n, detail, query)
    env = envelope("analyze", options=options, analysis=run, scope=scope, by=by, row_count=page["page"]["returned"],
                   rows_total=len(result), extra_options={"by": by, "top": n, "name": name, "nvtx": nvtx,
                                                          "bound": bound, "precision": precision})
    return _bounded({**env, "page": page["page"], "rows": page["rows"]})


def _bounded(answer: dict[str, Any]) -> dict[str, Any]:
    """The envelope's lists cut to :data:`MAX_ITEMS`, each cut counted in ``page.left_out``. The headline keeps
    the whole output's and each profile's before any step's."""
    left: dict[str, int] = {}
    for key, limit in MAX_ITEMS.items():
        items = answer.get(key) or []
        if len(items) <= limit:
            continue
        if key == "headline":
            keep = {i for i, h in enumerate(items) if h.get("step") is None}
            keep = set(sorted(keep)[:limit])
            keep |= set([i for i in range(len(items)) if i not in keep][:limit - len(keep)])
            answer[key] = [h for i, h in enumerate(items) if i in keep]
        else:
            answer[key] = items[:limit]
        left[key] = len(items) - len(answer[key])
    if "page" in answer:
        answer["page"] = {**answer["page"], "left_out": left}
    return answer


def explain_kernel(session: Session, path: str, row_key: str | None = None, name: str | None = None,
                   peaks: str = "counters", device: str | None = None) -> dict[str, Any]:
    """One kernel row (by its ``row_key`` from ``analyze``, or the longest whose name matches ``name``): its point
    per memory level, the roofs with their sources and clock basis, its bound and binding roof, its notes, and
    what to collect for what is unavailable."""
    from roofline.analysis.select import select
    from roofline.report.envelope import SCHEMA_VERSION, clock_basis, records, split_notes, tool, with_row_keys

    if not row_key and not name:
        raise ToolInputError("give row_key (from analyze's rows) or name (a regular expression)")
    run = session.run([path], session.options(peaks, device))
    frame = run.frame
    if "row_key" not in frame:
        with_row_keys(frame)
    if row_key:
        hit = frame[frame["row_key"] == row_key]
    else:
        try:
            hit = select(frame, name=name)
        except ValueError as exc:
            raise ToolInputError(str(exc)) from None
    if hit.empty:
        raise ToolInputError(f"{path}: no kernel row with " + (f"row_key {row_key!r}" if row_key else
                                                                f"a name matching {name!r}"))
    from roofline.analysis.collect import with_collect_next

    row = records(with_collect_next(hit.head(1), frame, None))[0]  # its collect-next command, as the CLI's row
    levels = [lv for lv in run.levels if f"intensity_{lv}_flop_per_byte" in frame]
    points = []
    for lv in levels:
        src = row.get(f"peak_{lv}_bytes_per_s_source") or ""
        points.append({
            "level": lv, "bytes": row.get(f"{lv}_bytes"), "bytes_source": row.get(f"{lv}_bytes_source"),
            "intensity_flop_per_byte": row.get(f"intensity_{lv}_flop_per_byte"),
            "achieved_bytes_per_s": row.get(f"achieved_{lv}_bytes_per_s"),
            "peak_bytes_per_s": row.get(f"peak_{lv}_bytes_per_s"), "peak_source": src or None,
            "clock_basis": clock_basis(src) if row.get(f"peak_{lv}_bytes_per_s") is not None else None,
            "ridge_flop_per_byte": row.get(f"ridge_{lv}_flop_per_byte"),
            "attainable_flop_per_s": row.get(f"attainable_{lv}_flop_per_s"),
            "pct_of_peak_bandwidth": row.get(f"pct_of_peak_{lv}_bandwidth")})
    csrc = row.get("peak_flop_per_s_source") or ""
    compute = {"precision": row.get("compute_precision"), "flop_total": row.get("flop_total"),
               "achieved_flop_per_s": row.get("achieved_flop_per_s"), "peak_flop_per_s": row.get("peak_flop_per_s"),
               "peak_source": csrc or None,
               "clock_basis": clock_basis(csrc) if row.get("peak_flop_per_s") is not None else None,
               "pct_of_peak": row.get("pct_of_peak_flop")}
    unavailable = {k: v for k, v in row.items() if k.endswith("_source") and isinstance(v, str)
                   and v.startswith("unavailable")}
    notes = split_notes(str(row.get("analysis_note") or ""))
    return {"schema_version": SCHEMA_VERSION, "tool": tool(), "path": path, "row_key": row["row_key"],
            "matches": len(hit), "kernel": row.get("kernel_name") or row.get("kernel_short_name"),
            "device": row.get("device_name"), "duration_s": row.get("duration_s"), "compute": compute,
            "points": points, "binding_roof": row.get("binding_roof"), "bound": row.get("bound"),
            "pct_of_roof": row.get("pct_of_roof"), "time_at_roof_s": row.get("time_at_roof_s"), "notes": notes,
            "unavailable": unavailable, "findings": _findings(hit.head(1)), "row": row}


def _findings(row: pd.DataFrame) -> dict[str, Any]:
    """Why the row sits where it does (issue 34, docs/analysis.md): the binding pipe and its ceiling, the latency
    evidence, the next step, and Nsight Compute's own rule results ranked by estimated time saved."""
    from roofline.analysis.pipes import findings

    r = row.iloc[0]

    def get(col: str) -> Any:
        v = r.get(col) if col in row else None
        return None if v is None or (isinstance(v, float) and v != v) or v is pd.NA else v

    rules = findings(row)
    return {
        "binding_pipe": get("binding_pipe"), "binding_pipe_pct": get("binding_pipe_pct"),
        "co_critical_pipes": get("co_critical_pipes"), "pipe_ceiling_flop_per_s": get("pipe_ceiling_flop_per_s"),
        "latency_cause": get("latency_cause"), "next_step": get("next_step"),
        "ncu_findings": json.loads(rules.to_json(orient="records", default_handler=str)) if len(rules) else [],
    }


def compare(session: Session, baseline: str, candidate: str, top: int | None = None, cursor: str | None = None,
            peaks: str = "counters", device: str | None = None, detail: str = "compact") -> dict[str, Any]:
    """``roofline compare BASELINE CANDIDATE --format json``: both profiles' headlines and peaks, the summary
    (program time before/after, the top regressions and improvements by identity, identities on one side only,
    communication apart) and one page of the identity table, as the CLI pairs them (docs/compare.md)."""
    from roofline.analysis.compare_gate import DEFAULT_FLOOR
    from roofline.analysis.compare_runs import Side, compare_sides
    from roofline.analysis.compare_summary import summary
    from roofline.hardware.peaks import recorded_levels
    from roofline.report.envelope import compare_envelope, identity_row_keys

    n = _top(top)
    options = session.options(peaks, device)
    runs = [session.run([p], options) for p in (baseline, candidate)]
    for p, r in zip((baseline, candidate), runs):
        if r.failed or r.frame.empty:
            raise ToolInputError(f"{p}: cannot be compared: " + ("; ".join(f.message for f in r.failures)
                                                                  if r.failed else "no kernels"))
    base, cand = runs[0].frame, runs[1].frame
    levels = tuple(lv for lv in recorded_levels(base, options.levels) if lv in recorded_levels(cand, options.levels))
    comp = compare_sides([Side(baseline, [(baseline, base)]), Side(candidate, [(candidate, cand)])], levels)
    table = comp.table.drop(columns=["key"])
    table.insert(0, "row_key", identity_row_keys(comp.table).to_numpy())
    query = {"tool": "compare", "baseline": baseline, "candidate": candidate, "peaks": peaks, "device": device}
    page = _page(table, _offset(cursor, query), n, detail, query)
    env = compare_envelope(options, runs, summary(comp, n, DEFAULT_FLOOR, None), page["page"]["returned"],
                           {"map": None, "fail_on": None, "top": n})
    return _bounded({**env, "rows_total": len(table), "page": page["page"], "rows": page["rows"]})


def list_devices(match: str | None = None, top: int | None = None, cursor: str | None = None,
                 detail: str = "compact") -> dict[str, Any]:
    """``roofline devices --format json``: the spec table, one row per GPU and figure with its source;
    ``match``: only GPUs whose name contains it (case-insensitive)."""
    from roofline.hardware.specs import specs_frame
    from roofline.report.envelope import envelope, with_row_keys

    frame = with_row_keys(specs_frame(), "devices")
    if match:
        frame = frame[frame["gpu"].str.contains(match, case=False, regex=False)].reset_index(drop=True)
    query = {"tool": "list_devices", "match": match}
    page = _page(frame, _offset(cursor, query), _top(top), detail, query)
    env = envelope("devices", headline=[], peaks=[], notes=[], inputs=[], errors=[], by="devices",
                   row_count=page["page"]["returned"], rows_total=len(frame), extra_options={"match": match})
    return {**env, "page": page["page"], "rows": page["rows"]}


def explain_device(name: str, compute_capability: str | None = None, sm_count: int | None = None) -> dict[str, Any]:
    """``roofline devices --explain NAME --format json``: the table entry a device name resolves to, the
    steps that chose it, and its roofs with their sources."""
    from roofline.report.envelope import device_resolution, envelope

    summary = device_resolution(name, compute_capability, sm_count)
    env = envelope("devices", summary=summary, headline=[], peaks=[], notes=[], inputs=[], errors=[], by="devices",
                   extra_options={"explain": name})
    return {**env, "rows": []}


def collect_next(session: Session, paths: list[str], peaks: str = "counters",
                 device: str | None = None) -> dict[str, Any]:
    """What to collect next, by the share of GPU time it would explain: each reason rows lack a roofline
    point (with its fix), each roof the profile could not give (with how to get it), what an export lacks."""
    from roofline.report.envelope import SCHEMA_VERSION, headline_of, notes_of, peaks_of, tool

    run = session.run(paths, session.options(peaks, device))
    items: dict[str, dict[str, Any]] = {}
    for h in headline_of(run.frame):
        if h.get("step") is not None:  # the profile's own headline covers its steps
            continue
        for r in h.get("reasons") or []:
            key = f"{r['reason']}|{r['fix']}"
            item = items.setdefault(key, {"what": r["reason"], "how": r["fix"], "gpu_time_s": 0.0, "rows": 0,
                                          "profiles": [], "examples": []})
            item["gpu_time_s"] += r.get("time_s") or 0.0
            item["rows"] += r.get("rows") or 0
            item["profiles"].append(h.get("profile"))
            item["examples"] += [o["name"] for o in r.get("ops") or []][:3]
    ranked = sorted(items.values(), key=lambda x: -x["gpu_time_s"])
    roofs = [{"device": p["device"], "roof": p["roof"], "how": p["source"]} for p in peaks_of(run.frame)
             if p["value"] is None]
    exports = [n for n in notes_of(run, run.frame) if n["level"] == "info" and " table in the export" in n["text"]]
    return {"schema_version": SCHEMA_VERSION, "tool": tool(), "paths": list(paths), "time_without_a_point": ranked,
            "missing_quantities": missing_quantities(run.frame), "missing_roofs": roofs, "export_gaps": exports,
            "errors": [{"path": f.path or None, "message": f.message} for f in run.failures]}


#: the measured quantities whose absence collect_next ranks (each has a ``*_source`` that says why and how)
QUANTITIES = ("dram_bytes", "l2_bytes", "l1_bytes", "lds_bytes")


def missing_quantities(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Per quantity and reason, the GPU time of the rows that lack it (a row's ``*_source`` says why and what
    would collect it), longest first. A level the profile never records (a trace's L2/L1) shows here; FLOPs that
    could not be priced are the headline's reasons (``time_without_a_point``)."""
    import pandas as pd

    if frame.empty or "duration_s" not in frame:
        return []
    dur = pd.to_numeric(frame["duration_s"], errors="coerce").fillna(0.0).clip(lower=0.0)
    out = []
    for q in QUANTITIES:
        src = f"{q}_source"
        if q not in frame or src not in frame:
            continue
        missing = pd.to_numeric(frame[q], errors="coerce").isna() & frame[src].astype("string").str.startswith(
            "unavailable").fillna(False)
        if not missing.any():
            continue
        grouped = dur[missing].groupby(frame.loc[missing, src].astype(str)).agg(["sum", "size"])
        for why, r in grouped.iterrows():
            out.append({"quantity": q, "why_and_how": why, "gpu_time_s": float(r["sum"]), "rows": int(r["size"]),
                        "share": float(r["sum"] / dur.sum()) if dur.sum() > 0 else None})
    return sorted(out, key=lambda x: (-x["gpu_time_s"], x["quantity"]))


__all__ = ["COMPACT", "DEFAULT_TOP", "MAX_TOP", "Roots", "Session", "ToolInputError", "analyze", "collect_next",
           "compare", "explain_device", "explain_kernel", "list_devices"]
