"""A self-contained interactive HTML report: one file, plotly.js and the data inside, opens offline.

Page (``templates/report.html.j2``, behaviour in ``templates/report.js``): the device and its peaks
with their sources; a program-level chart (each profile and each NVTX range as one point); a
kernel-level hierarchical chart (one point per kernel and level, coloured by bound or precision with
a legend saying which; SVG markers for small reports, a 2D canvas above 3,000 points) with hover details;
filters by device, name (substring or /regex/, an invalid one says so), bound, precision and memory
level, which the charts and every table follow; a sortable, paged statistics table; the top kernels
by time. A multi-device report opens on the device with the most drawable time, and a device with
nothing drawable says so. plotly.js is a vendored partial bundle (``vendor/README.md``).

Kernel names come from untrusted files. They travel only inside a JSON block whose ``<``, ``>``
and ``&`` are escaped as ``\\u003c``/``\\u003e``/``\\u0026``, so nothing in them can close the
script element; the page's script writes them with ``textContent`` (never ``innerHTML``) and
entity-escapes them for plotly's hover labels.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from jinja2 import Environment, select_autoescape
from markupsafe import Markup

from roofline._version import __version__
from roofline.analysis.aggregate import aggregate_each
from roofline.analysis.collect import collect_next_column
from roofline.analysis.collect import plan as collect_plan
from roofline.analysis.collect import summary as collect_summary
from roofline.analysis.pipes import findings, findings_summary, pipe_bound, pipe_summary
from roofline.frames import row_dicts
from roofline.hardware.peaks import LEVELS
from roofline.report.chart_data import LEVEL_LABELS, Roof, roof_view, roofs, short_source
from roofline.report.comm_chart import comm_data
from roofline.report.timeseries import step_points
from roofline.schema import PRECISIONS, get_provenance, source_column

if TYPE_CHECKING:
    from roofline.analysis.headline import RowFacts

#: longest kernel name kept in the page (cutlass names run to 5 kB; the table shows the start)
MAX_NAME = 400
#: data larger than this travels gzip-compressed and base64-encoded (the browser's own
#: DecompressionStream unpacks it): a 100,000-kernel report shrinks from ~30 MB to ~10 MB
COMPRESS_ABOVE = 1_000_000


def read_data(page: str) -> dict:
    """The data block of a rendered page, decoded (for tests and for tools reading reports back)."""
    import re

    m = re.search(r'<script id="roofline-data" type="application/json" data-encoding="([^"]+)">(.*?)</script>', page, re.DOTALL)
    if not m:
        raise ValueError("no roofline data block in this page")
    text = m.group(2)
    if m.group(1) == "gzip+base64":
        text = gzip.decompress(base64.b64decode(text)).decode("utf-8")
    return json.loads(text)


def _escape_json(text: str) -> str:
    """JSON that is safe inside <script>: nothing in it can end the element or start a comment."""
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _numbers(values: object, digits: int = 5) -> str:
    """A JSON array of numbers with ``digits`` significant digits; NaN and ±inf become null."""
    arr = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if arr.size == 0:
        return "[]"
    # each distinct value (by its bits: -0.0 is not 0.0) formatted once: kernels of many profiles repeat values
    # (a hash table's codes: a fifth of the time of np.unique's sort)
    inverse, bits = pd.factorize(np.ascontiguousarray(arr, dtype=np.float64).view(np.int64))
    uniq = bits.view(np.float64)
    text = list(map(f"%.{digits}g".__mod__, uniq.tolist()))  # (twice np.char.mod's speed, the same text)
    for i in np.flatnonzero(~np.isfinite(uniq)).tolist():
        text[i] = "null"
    # (numpy's take of the texts: a third of a list comprehension's time over 63k rows)
    return "[" + ",".join(np.array(text, dtype=object)[inverse.reshape(-1)].tolist()) + "]"


def _codes(values: pd.Series) -> tuple[str, list[str]]:
    """A string column as integer codes plus its distinct values (-1 for missing)."""
    if isinstance(values.dtype, pd.CategoricalDtype) and values.cat.categories.inferred_type == "string":
        # the categories are the distinct texts already: their codes, renumbered by first appearance
        codes, uniques = pd.factorize(values.array, use_na_sentinel=True)
    else:
        codes, uniques = pd.factorize(values.astype("string"), use_na_sentinel=True)
    return _ints(codes), [str(u) for u in uniques]


def _ints(codes: np.ndarray) -> str:
    """A JSON array of codes (-1 and up), each distinct one written once: an eighth of str() per row."""
    if not len(codes):
        return "[]"
    text = np.array([str(i) for i in range(-1, int(codes.max()) + 1)], dtype=object)
    return "[" + ",".join(text[codes + 1].tolist()) + "]"


def _strings(values: pd.Series, limit: int = MAX_NAME) -> str:
    """A JSON array of the texts (missing as ""), each cut to ``limit`` characters: each distinct text cut and
    encoded once (a dataset's 60,000 kernels have a few hundred names)."""
    codes, uniq = pd.factorize(values.astype("string").fillna(""))
    text = np.array([json.dumps(t if len(t) <= limit else t[: limit - 1] + "…") for t in uniq], dtype=object)
    return "[" + ", ".join(text[codes].tolist()) + "]"  # (json.dumps' separator: the bytes stay the same)


def _column_block(frame: pd.DataFrame, levels: Sequence[str], collect: list[dict[str, object]] | None = None,
                  facts: RowFacts | None = None) -> list[str]:
    """The kernels as columns, a JSON object in pieces: numbers compact, names as strings, categories as codes
    (``collect``: the collect-next plan of ``frame``, and ``facts`` its rows' facts, where the caller has them)."""
    parts = {
        "id": _numbers(frame.get("kernel_id", pd.Series(range(len(frame)))), 12),
        "time": _numbers(frame["duration_s"]),
        "flop": _numbers(frame["flop_total"]),
        "achieved": _numbers(frame["achieved_flop_per_s"]),
        "pct": _numbers(frame["pct_of_roof"], 4),
    }
    for lv in levels:
        parts[f"int_{lv}"] = _numbers(frame[f"intensity_{lv}_flop_per_byte"])
        parts[f"bytes_{lv}"] = _numbers(frame[f"{lv}_bytes"])
    # why it sits there (analysis/diagnose.py): the pipe roof where a pipe binds below the FLOP roof, and texts
    parts["pipe_roof"] = _numbers(frame["pipe_ceiling_flop_per_s"].where(pipe_bound(frame))
                                  if "pipe_ceiling_flop_per_s" in frame else pd.Series(np.nan, index=frame.index))
    why = {"pipe": pipe_summary(frame), "findings": findings_summary(frame),
           "collect_next": pd.Series(collect_next_column(frame, collect), index=frame.index)}  # (whole profiles: collect.py)
    from roofline.analysis.categories import categorize

    cats = {}
    # the op category table the terminal's --by category uses
    category = categorize(frame) if facts is None else facts.of(frame)
    for key, col in (("bound", "bound"), ("binding", "binding_roof"), ("precision", "compute_precision"),
                     ("nvtx", "nvtx_range"), ("device", "device_name"), ("note", "analysis_note"),
                     ("pipe", "pipe"), ("findings", "findings"), ("step", "next_step"), ("collect", "collect_next"),
                     ("latency", "latency_cause"), ("category", None)):
        values = (category if col is None else why[col] if col in why else frame[col] if col in frame
                  else pd.Series(pd.NA, index=frame.index))
        codes, uniques = _codes(values)
        parts[f"{key}_code"] = codes
        cats[key] = uniques
    short = _strings(frame.get("kernel_short_name", pd.Series(pd.NA, index=frame.index)).astype("string")
                     .fillna(frame.get("kernel_name", pd.Series("", index=frame.index)).astype("string")), 120)
    name = _strings(frame.get("kernel_name", pd.Series("", index=frame.index)))
    refs, note_parts = _note_parts(cats["note"])
    # the pieces, joined by the caller with the rest of the data: each '+' of the ~15 MB a dataset's report
    # carries here copied all of it (and faulted in the pages of each new string)
    return ["{", *(x for k, v in parts.items() for x in (f'"{k}":', v, ",")), '"short": ', short, ', "name": ', name,
            ',"categories":', json.dumps(cats), ',"note_refs":', json.dumps(refs), ',"note_parts":', json.dumps(note_parts),
            "}"]


def _note_parts(notes: list[str]) -> tuple[list[list[int]], list[str]]:
    """Each distinct note as the numbers of its parts (split and merged as the terminal does), and the parts:
    the page lists every part once, in a legend, and a table row carries only its numbers."""
    from roofline.report.table import _merged_levels, split_note

    parts: dict[str, int] = {}
    refs = [[parts.setdefault(p, len(parts)) for p in _merged_levels(split_note(n))] for n in notes]
    return refs, list(parts)


def _headlines(frame: pd.DataFrame, facts: RowFacts | None = None) -> dict[str, object]:
    """The headline of each device (over every profile), by device name ('' for rows that name none), with
    the peaks' short sources for the page."""
    from roofline.analysis.headline import by_device

    out: dict[str, object] = {}
    for device, h in by_device(frame, facts).items():
        d = h.to_dict()
        for key in ("compute_peak", "dram_peak"):
            if d.get(key):
                d[key]["basis"] = short_source(d[key]["source"])
        out[device or ""] = d
    return out


def devices_text(devices: Sequence[str], limit: int = 4, noun: str = "devices") -> str:
    """'A, B' or, for many, '16 devices: A, B, C, … (13 more)'."""
    from roofline.report.summary import compact_list

    return compact_list(list(devices), limit, noun) or ("unknown device" if noun == "devices" else "")


class _DeviceRoofs:
    """``chart_data.roofs`` of a device's rows, computed once per set of rows: the peak table and the chart's roof
    lines group the rows by device the same way (unless a device is named "" or "unknown device")."""

    def __init__(self, levels: Sequence[str]) -> None:
        self.levels = levels
        self._done: dict[bytes, list[Roof]] = {}

    def __call__(self, sub: pd.DataFrame) -> list[Roof]:
        key = sub.index.to_numpy().tobytes()
        if key not in self._done:
            self._done[key] = roofs(sub, self.levels)
        return self._done[key]


def _peak_table(frame: pd.DataFrame, levels: Sequence[str], roofs_of: _DeviceRoofs | None = None,
                view: pd.DataFrame | None = None) -> list[dict[str, object]]:
    """Every device's roofs (``view``: the frame's :func:`roof_view`, where the caller has it)."""
    roofs_of = roofs_of or _DeviceRoofs(levels)
    view = roof_view(frame, levels) if view is None else view
    rows: list[dict[str, object]] = []
    for device, sub in view.groupby(frame["device_name"].astype("string").fillna("unknown device"), sort=False):
        for r in roofs_of(sub):
            rows.append({"device": str(device), "roof": r.key, "kind": r.kind, "value": r.value,
                         "label": r.label, "basis": short_source(r.source), "source": r.source})
    return rows


def _roof_lines(frame: pd.DataFrame, levels: Sequence[str], roofs_of: _DeviceRoofs | None = None,
                view: pd.DataFrame | None = None) -> dict[str, list[dict[str, object]]]:
    """Roofs per device: kernels of different GPUs are never drawn under each other's roofs."""
    roofs_of = roofs_of or _DeviceRoofs(levels)
    view = roof_view(frame, levels) if view is None else view
    out = {}
    for device, sub in view.groupby(frame["device_name"].astype("string").fillna(""), sort=False):
        out[str(device)] = [{"kind": r.kind, "key": r.key, "value": r.value, "label": r.label} for r in roofs_of(sub)]
    return out


def _groups(frame: pd.DataFrame, levels: Sequence[str]) -> list[dict[str, object]]:
    out = []
    bys = ["program"] + (["nvtx"] if "nvtx_range" in frame and frame["nvtx_range"].notna().any() else [])
    read = ["device_name", "duration_s", "achieved_flop_per_s", "pct_of_roof", "bound", "kernel_count",
            *(f"intensity_{lv}_flop_per_byte" for lv in levels)]
    for by, agg in aggregate_each(frame, bys, levels=levels).items():
        for g in row_dicts(agg[[by, *read]]):  # (the columns read: every one made objects per row cost more)
            label = Path(str(g[by])).name if by == "program" else str(g[by])
            item = {"by": by, "label": label, "device": "" if pd.isna(g["device_name"]) or g["device_name"] == "(unknown device)"
                    else str(g["device_name"]), "time": _f(g["duration_s"]), "achieved": _f(g["achieved_flop_per_s"]),
                    "pct": _f(g["pct_of_roof"]), "bound": str(g["bound"]), "kernels": int(g["kernel_count"])}
            for lv in levels:
                item[f"int_{lv}"] = _f(g[f"intensity_{lv}_flop_per_byte"])
            out.append(item)
    return out


def devices_named(frame: pd.DataFrame, name: str) -> bool:
    """Whether a device is really called ``name`` (else ``name`` stands for rows that name no device)."""
    return "device_name" in frame and bool((frame["device_name"].astype("string") == name).any())


def finite_only(obj: object) -> tuple[object, int]:
    """``obj`` (dicts, lists, scalars) with every non-finite float replaced by None, and how many were."""
    count = 0

    def clean(v: object) -> object:
        nonlocal count
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        if isinstance(v, (float, np.floating)) and not np.isfinite(v):
            count += 1
            return None
        return v

    return clean(obj), count


def _f(v: object) -> float | None:
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


def _environment() -> Environment:
    return Environment(autoescape=select_autoescape(default=True, default_for_string=True))


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


def plotly_js() -> str:
    """The vendored plotly.js bundle: core only (the scatter trace, annotations, legend, hover).

    1.1 MB instead of the plotly package's full 4.8 MB bundle, which is most of the page's size and
    of its start-up time (the browser parses all of it); origin and licences in ``vendor/README.md``.
    """
    return resources.files(__package__).joinpath("vendor", "plotly-roofline.min.js").read_text(encoding="utf-8")


def _top_findings(frame: pd.DataFrame, top: int = 10) -> list[dict[str, object]]:
    """ncu's findings with the largest estimated time saved across the report (``analysis.pipes.findings``)."""
    if "ncu_rules_json" not in frame or not frame["ncu_rules_json"].notna().any():
        return []
    table = findings(frame)
    ranked = table[table["est_time_saved_s"] > 0].head(top)
    return [{"rank": int(f.rank), "title": str(f.title), "id": int(f.kernel_id) if pd.notna(f.kernel_id) else None,
             "kernel": str(f.kernel_short_name if pd.notna(f.kernel_short_name) else f.kernel_name),
             "speedup": float(f.est_speedup_pct), "type": str(f.speedup_type), "time": float(f.duration_s),
             "saved": float(f.est_time_saved_s), "focus": str(f.focus_metrics) if pd.notna(f.focus_metrics) else ""}
            for f in ranked.itertuples()]


def longest_first(duration: pd.Series) -> bool:
    """Whether float durations are in the order a stable sort, longest first and missing last, gives them
    already (``roofline report`` passes its table's sorted rows: sorting them again copied the whole frame)."""
    if duration.dtype != np.float64:
        return False
    d = duration.to_numpy()
    known = len(d) - int(np.isnan(d).sum())
    return not np.isnan(d[:known]).any() and bool((np.diff(d[:known]) <= 0).all())


def render(result: pd.DataFrame, levels: Sequence[str] = LEVELS, title: str | None = None,
           clock: str = "profiled", top: int = 10, compress: bool | None = None, facts: RowFacts | None = None) -> str:
    """The report page as a string (``facts``: the :func:`~roofline.analysis.headline.row_facts` of ``result``,
    where the caller has them)."""
    levels = tuple(lv for lv in levels if f"intensity_{lv}_flop_per_byte" in result)
    frame = result.sort_values("duration_s", ascending=False, na_position="last", kind="stable") \
        if "duration_s" in result and not longest_first(result["duration_s"]) else result
    facts = facts if frame is result else None  # (sorted here: the facts are of another row order)
    frame = frame.reset_index(drop=True)
    devices = sorted(set(map(str, frame["device_name"].dropna().unique()))) if "device_name" in frame else []
    files = sorted({Path(str(p)).name for p in frame["source_file"].dropna().unique()}) if "source_file" in frame else []
    from roofline.report.chart_data import device_order

    order = [("" if d == "unknown device" and not devices_named(frame, d) else d) for d in device_order(frame).index] \
        if len(frame) else []
    collect = collect_plan(frame) if len(frame) else []  # the collect-next block and column, planned once
    meta = {
        "title": title or "Hierarchical roofline",
        "devices": devices, "device_order": order, "files": files, "clock": clock, "levels": list(levels),
        "level_labels": {lv: LEVEL_LABELS[lv] for lv in levels}, "precisions": list(PRECISIONS),
        "count": len(frame), "top": top, "version": __version__,
        "provenance": get_provenance(result),
        "collect": collect_summary(frame, collect) if len(frame) else [],  # printed once (analysis/collect.py)
        "findings": _top_findings(frame),
    }
    roofs_of = _DeviceRoofs(levels)
    view = roof_view(frame, levels)  # (the roofs read ~20 columns: each device's rows taken from those)
    data = {
        "meta": meta,
        "roofs": _roof_lines(frame, levels, roofs_of, view) if len(frame) else {},
        "peaks": _peak_table(frame, levels, roofs_of, view) if len(frame) else [],
        "groups": _groups(frame, levels) if len(frame) else [],
        "steps": step_points(frame, levels),  # the step chart (report/timeseries.py)
        "headline": _headlines(frame, facts) if len(frame) else {},  # per device: coverage, time by kind, MFU
        "communication": comm_data(frame) if len(frame) else {},  # collectives on the links (report/comm_chart.py)
    }
    data, dropped = finite_only(data)  # JSON has no inf/NaN: nulls, and their count as the flag
    data["meta"]["non_finite_values"] = dropped
    kernels = _column_block(frame, levels, collect, facts) if len(frame) else ["{}"]
    payload = "".join([json.dumps(data, default=str, allow_nan=False)[:-1], ',"kernels":', *kernels, "}"])
    if compress is None:
        compress = len(payload) > COMPRESS_ABOVE
    if compress:
        encoded = base64.b64encode(gzip.compress(payload.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")
        data_json, encoding = encoded, "gzip+base64"
    else:
        data_json, encoding = _escape_json(payload), "json"
    template = _environment().from_string(_asset("report.html.j2"))
    return template.render(
        title=meta["title"], devices=devices_text(devices), files=devices_text(files, 3, "profiles"),
        clock=clock,
        count=len(frame), version=__version__,
        data_json=Markup(data_json),
        data_encoding=encoding,
        plotly_js=Markup(plotly_js()),
        report_js=Markup(_asset("report.js")),
        timeseries_js=Markup(_asset("timeseries.js")),
        comm_js=Markup(_asset("comm.js")),
        css=Markup(_asset("report.css")),
    )


def write(result: pd.DataFrame, path: str | Path, levels: Sequence[str] = LEVELS, title: str | None = None,
          clock: str = "profiled", top: int = 10, compress: bool | None = None, facts: RowFacts | None = None) -> Path:
    path = Path(path)
    path.write_text(render(result, levels, title=title, clock=clock, top=top, compress=compress, facts=facts),
                    encoding="utf-8")
    return path


__all__ = ["render", "source_column", "write"]
