"""The versioned JSON envelope of ``analyze``, ``compare`` and ``devices`` (``--format json``) and of the MCP tools.

One object, its keys in this order, so that a reader that streams it meets the answers before any row::

    schema, schema_version, tool, command, options, inputs, errors, headline, summary, peaks, notes,
    row_key, row_count, rows_total, rows

``rows`` come last and are written a chunk at a time (:func:`roofline.report.records.stream_json`), as before the
envelope. The JSON Schema is ``roofline/schemas/output.schema.json`` (a copy in ``docs/``); a change that breaks a
reader bumps the major version of :data:`SCHEMA_VERSION`, an added key the minor one.

Stable row keys (:func:`row_keys`): every row carries ``row_key``, a hash of what identifies the row across
re-captures of the same program — not the file name, the process id or the timestamps, which change with every
capture. Two outputs are diffed by joining their rows on it (with ``source_file`` too where one output holds
several profiles: the key is unique within one profile).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from roofline.report.records import jsonable, record_chunks

if TYPE_CHECKING:
    from roofline.pipeline import Analysis, Options

#: major.minor: a reader checks the major version
SCHEMA_VERSION = "1.1"  # 1.1: the headline's collective keys (comm_*, issue 35)
SCHEMA_NAME = "roofline.output"

#: what a kernel row's key hashes, in this order (docs/agents.md)
KERNEL_KEY_FIELDS = ("device_name", "device_id", "rank", "kernel name (normalised)", "shapes or launch configuration",
                     "occurrence")
#: columns that identify a row of each grouping (``--by``) or view
_GROUP_KEY = {"kernel": ("kernel", "device_name", "kernel_config"), "nvtx": ("nvtx", "device_name"),
              "program": ("device_name",), "process": ("process", "device_name"), "rank": ("rank", "device_name"),
              "step": ("step", "device_name"), "category": ("category",), "summary": ("device", "step"),
              "devices": ("gpu", "figure"), "archs": ("arch", "figure", "kind")}
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_SPACE = re.compile(r"\s+")


# ---- stable row keys -----------------------------------------------------------------------------------

def normalised_name(name: object) -> str:
    """A kernel name as re-captures spell it alike: whitespace collapsed, addresses (``0x7f...``) masked."""
    if not isinstance(name, str):
        return ""
    return _ADDRESS.sub("0x?", _SPACE.sub(" ", name.strip()))


def _hash(parts: Sequence[object]) -> str:
    return _digest("\x1f".join("" if p is None or (isinstance(p, float) and math.isnan(p)) else str(p) for p in parts))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _text(frame: pd.DataFrame, col: str) -> pd.Series:
    if col not in frame:
        return pd.Series("", index=frame.index, dtype=object)
    return frame[col].astype("string").fillna("").astype(object)


def row_keys(frame: pd.DataFrame, by: str | None = None) -> pd.Series:
    """Each row's stable key (16 hex digits).

    A kernel (or op) row: the hash of its device name, device index and rank (where recorded), its kernel name
    normalised (:func:`normalised_name`; the short name where the full one is missing), its input shapes or
    launch configuration (as ``--by kernel`` tells launches apart) and its occurrence: the how-many-th launch of
    that same (device, name, shapes/launch) in its profile, in launch order (start time, then the profiler's
    launch id, then the order read). A grouped row (``--by``) or a view's row: the hash of the grouping and
    the columns that identify the group (its value, the device, for ``kernel`` the shapes/launch)."""
    if frame.empty:
        return pd.Series([], index=frame.index, dtype=object, name="row_key")
    if by is not None:
        cols = _GROUP_KEY.get(by, (by,))
        parts = [_text(frame, c) for c in cols]
        keys = [_hash((by, *vals)) for vals in zip(*(p.to_numpy() for p in parts))]
        return pd.Series(keys, index=frame.index, dtype=object, name="row_key")
    from roofline.analysis.aggregate import kernel_config

    name = _text(frame, "kernel_name")
    short = _text(frame, "kernel_short_name")
    name = name.where(name != "", short)
    codes, distinct = pd.factorize(name.to_numpy())  # a kernel name repeats over its launches: normalised once
    name = pd.Series(np.array([normalised_name(n) for n in distinct], dtype=object)[codes], index=frame.index,
                     dtype=object)
    ident = pd.DataFrame({"device": _text(frame, "device_name"), "device_id": _text(frame, "device_id"),
                          "rank": _text(frame, "rank"), "name": name,
                          "config": kernel_config(frame).astype("string").fillna("").astype(object)},
                         index=frame.index)
    order = pd.DataFrame({"file": _text(frame, "source_file"),
                          "start": pd.to_numeric(frame["start_ns"], errors="coerce") if "start_ns" in frame else np.nan,
                          "id": pd.to_numeric(frame["kernel_id"], errors="coerce") if "kernel_id" in frame else np.nan,
                          "pos": np.arange(len(frame))}, index=frame.index)
    # by position, not label: a frame concatenated without ignore_index may repeat labels
    ranked = order.reset_index(drop=True).sort_values(["file", "start", "id", "pos"], kind="stable",
                                                      na_position="last").index
    grouped = pd.concat([order["file"], ident], axis=1).reset_index(drop=True).iloc[ranked]
    occurrence = grouped.groupby(list(grouped.columns), sort=False).cumcount().sort_index()
    # every part is text already ("" where missing): joined and hashed as _hash does, without its per-part checks
    keys = [_digest("\x1f".join(vals)) for vals in zip(*(ident[c].to_numpy() for c in ident.columns),
                                                       occurrence.astype(str).to_numpy())]
    return pd.Series(keys, index=frame.index, dtype=object, name="row_key")


def with_row_keys(frame: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """``frame`` with its :func:`row_keys` as the first column, inserted in place (a 216k-row trace is not
    copied: the caller owns the frame); returned for chaining."""
    if "row_key" in frame:
        frame["row_key"] = row_keys(frame, by).to_numpy()
    else:
        frame.insert(0, "row_key", row_keys(frame, by).to_numpy())
    return frame


def compare_row_keys(diff: pd.DataFrame, pair: int) -> pd.Series:
    """The stable key of each row of one baseline → candidate diff: the hash of the pair's position among the
    candidates (1 for the first), the kernel as compare matched it (its normalised name), how it matched
    (or "new"/"vanished") and its occurrence among that kernel's rows of the diff."""
    if diff.empty:
        return pd.Series([], index=diff.index, dtype=object, name="row_key")
    kernel, how = _text(diff, "kernel"), _text(diff, "match")
    n = pd.DataFrame({"k": kernel, "m": how}).groupby(["k", "m"], sort=False).cumcount()
    keys = [_hash(("compare", pair, k, m, i)) for k, m, i in zip(kernel, how, n)]
    return pd.Series(keys, index=diff.index, dtype=object, name="row_key")


def identity_row_keys(table: pd.DataFrame) -> pd.Series:
    """The stable key of each row of an identity comparison (``roofline compare``): the hash of the candidate's
    label and the identity (name, GPU, shapes or launch configuration: ``analysis/identity.py``)."""
    keys = [_hash(("compare", c, k)) for c, k in zip(_text(table, "candidate"), _text(table, "key"))]
    return pd.Series(keys, index=table.index, dtype=object, name="row_key")


def compare_summary(diff: pd.DataFrame) -> dict[str, Any]:
    """What ``roofline.analysis.compare`` says of one pair as a whole (matched, new, vanished, program time):
    the one place the envelope takes it from."""
    from roofline.analysis.compare import program_change

    return dict(program_change(diff))


def row_key_doc(by: str | None) -> dict[str, Any]:
    if by == "compare":
        return {"fields": ["candidate", "identity (normalised name, GPU, shapes or launch configuration)"],
                "unique_within": "one output"}
    if by == "compare-launches":
        return {"fields": ["candidate position", "kernel (normalised name)", "match", "occurrence"],
                "unique_within": "one output"}
    if by is None:
        return {"fields": list(KERNEL_KEY_FIELDS), "unique_within": "one profile (source_file)"}
    return {"fields": ["grouping", *_GROUP_KEY.get(by, (by,))], "unique_within": "one output"}


# ---- the parts of the envelope -------------------------------------------------------------------------

def tool() -> dict[str, str]:
    from roofline._version import __version__

    return {"name": "roofline", "version": __version__}


def options_of(options: Options | None) -> dict[str, Any]:
    if options is None:
        return {}
    from roofline.pipeline import option_values

    return {k: (v if isinstance(v, (str, int, float, bool, list, type(None))) else str(v))
            for k, v in option_values(options).items()}


def _provenance(frame: pd.DataFrame) -> list[dict[str, Any]]:
    from roofline.schema import get_provenance

    return [p for p in get_provenance(frame) if isinstance(p, dict)]


def inputs_of(analysis: Analysis, frame: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """One entry per input: its path, status ("analysed", "no GPU work", "failed"), format, row count, the
    profile's provenance as its reader recorded it, and the error of a failed one."""
    frame = analysis.frame if frame is None else frame
    counts = frame["source_file"].astype("string").value_counts() if "source_file" in frame and not frame.empty \
        else pd.Series(dtype="int64")
    out = []
    for prov in _provenance(frame):
        path = str(prov.get("source_file", ""))
        status = "no GPU work" if prov.get("no_gpu_work") else "analysed"
        out.append({"path": path, "status": status, "format": prov.get("format"),
                    "rows": int(counts.get(path, 0)), "provenance": _plain(prov), "error": None})
    for f in analysis.failures:
        if f.path:
            out.append({"path": f.path, "status": "failed", "format": None, "rows": 0, "provenance": None,
                        "error": f.message})
    return out


def errors_of(analysis: Analysis) -> list[dict[str, Any]]:
    """Every failure: the input (None for a run-wide one, e.g. ``--strict``'s missing roofs) and its line."""
    return [{"path": f.path or None, "message": f.message} for f in analysis.failures]


def notes_of(analysis: Analysis | None, frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Each note once: the run's messages, what the inputs lack (tables, device), and every distinct row note
    (``analysis_note``) with how many rows carry it."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(level: str, text: str, rows: int | None = None) -> None:
        if text and text not in seen:
            seen.add(text)
            out.append({"level": level, "text": text, "rows": rows})

    for m in analysis.messages if analysis is not None else ():
        if m.level != "error":  # errors are in "errors"
            add(m.level, m.text)
    for prov in _provenance(frame):
        src = prov.get("source_file", "")
        for table, lost in (prov.get("missing_tables") or {}).items():
            add("info", f"{src}: no {table} table in the export; lost: {lost}")
        if prov.get("device_note"):
            add("info", f"{src}: {prov['device_note']}")
        if prov.get("no_gpu_work"):
            add("info", f"{src}: no GPU kernels: {prov['no_gpu_work']}")
    if "analysis_note" in frame and not frame.empty:
        for note, n in frame["analysis_note"].astype("string").dropna().value_counts(sort=True).items():
            for part in split_notes(str(note)):
                add("row", part, int(n))
    return out


def split_notes(text: str) -> list[str]:
    """A row's ``analysis_note`` as its notes: split at "; " outside parentheses (a note's own reason may hold
    one: "no L2 bytes (unavailable: a trace has no cache counters; profile with ncu ...)")."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c == "(") - (c == ")")
        if depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    out.append(text[start:])
    return [x.strip() for x in out if x.strip()]


#: roofs per row: (key, column) — compute per precision, then bandwidth per memory level
_ROOFS = (*((p, f"peak_flop_per_s_{p}") for p in ("fp64", "fp32", "fp16", "tensor")),
          *((lv, f"peak_{lv}_bytes_per_s") for lv in ("dram", "l2", "l1", "lds")))
#: how sources state their clock; the last statement is the one the figure was scaled to at the end ("arch model
#: ... x boost clock 2460 MHz ...; dense, ... × the profiled SM clock 1235 MHz" is at the profiled clock)
_CLOCK = re.compile(r"(?P<profiled>profiled (?:SM )?clock|as profiled)|(?P<boost>boost clock|as published \(boost\))"
                    r"|(?P<engine>max_sclk)", re.IGNORECASE)


def clock_basis(source: str) -> str:
    """The clock a roof was taken at, as its source states it: "profiled clock", "boost clock", "max engine
    clock (sysinfo.csv)", "as measured" (a microbenchmark), "as published" (a bandwidth from the spec table).
    Never guessed: a source that names no clock is said to."""
    text = (source or "").split("; counters gave")[0].replace("no profiled clock known", "")
    found = [m.lastgroup for m in _CLOCK.finditer(text)]
    if found:
        return {"profiled": "profiled clock", "boost": "boost clock",
                "engine": "max engine clock (sysinfo.csv)"}[found[-1] or "profiled"]
    body = text.split(" — ", 1)[-1]
    if body.startswith("measured"):
        return "as measured"
    if "as published" in body:
        return "as published"
    return "unstated: the source names no clock"


def peaks_of(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The roofs of each device: per roof, the value of the longest-running half of its rows (time-weighted
    median, as the headline takes it), its source and clock basis, and the range over rows (ncu measures
    the clock per kernel, so a roof can vary)."""
    if frame.empty:
        return []
    dev, devices = pd.factorize(_text(frame, "device_name").to_numpy())  # (first seen first, as pd.unique)
    dur = pd.to_numeric(frame["duration_s"], errors="coerce").fillna(0.0).clip(lower=0.0).to_numpy() \
        if "duration_s" in frame else np.zeros(len(frame))
    # each roof's values, and its sources as codes into their few distinct texts, converted once (not a whole
    # column per device, nor a Python string per row)
    roofs = [(key, col, pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan),
              *_coded(frame, f"{col}_source")) for key, col in _ROOFS if col in frame]
    out = []
    for i, d in enumerate(devices):
        rows = dev == i
        for key, col, values, codes, texts in roofs:
            v = values[rows]
            ok = np.isfinite(v) & (v > 0)
            src_codes = codes[rows]
            if not ok.any():
                unavailable = np.array([t.startswith("unavailable") for t in texts], dtype=bool)[src_codes]
                if unavailable.any():
                    why = texts[src_codes[np.argmax(unavailable)]]
                    out.append({"device": d or None, "roof": key, "column": col, "value": None, "unit": _unit(key),
                                "source": why, "clock_basis": None, "min": None, "max": None, "rows": 0})
                continue
            w = dur[rows][ok]
            w = w if w.sum() > 0 else np.ones(ok.sum())
            order = np.argsort(v[ok], kind="stable")
            cum = np.cumsum(w[order])
            pick = order[np.searchsorted(cum, cum[-1] / 2)]
            src = str(texts[src_codes[ok][pick]])
            out.append({"device": d or None, "roof": key, "column": col, "value": float(v[ok][pick]),
                        "unit": _unit(key), "source": src, "clock_basis": clock_basis(src),
                        "min": float(v[ok].min()), "max": float(v[ok].max()), "rows": int(ok.sum())})
    return out


def _coded(frame: pd.DataFrame, col: str) -> tuple[np.ndarray, list[str]]:
    """A text column (missing as "") as a code per row into its distinct texts; a column not there: all ""."""
    if col not in frame:
        return np.zeros(len(frame), dtype=np.intp), [""]
    codes, texts = pd.factorize(frame[col].astype("string").fillna(""))
    return codes, [str(t) for t in texts]


def _unit(key: str) -> str:
    return "bytes/s" if key in ("dram", "l2", "l1", "lds") else "FLOP/s"


def headline_of(frame: pd.DataFrame) -> list[dict[str, Any]]:
    from roofline.analysis.headline import headlines

    return [h.to_dict() for h in headlines(frame)]


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_plain(x) for x in v]
    if isinstance(v, Path):
        return str(v)
    out = jsonable(v)
    if isinstance(out, float) and not math.isfinite(out):
        return None
    return out if isinstance(out, (str, int, float, bool, type(None))) else str(out)


# ---- the envelope --------------------------------------------------------------------------------------

def envelope(command: str, *, options: Options | None = None, analysis: Analysis | None = None,
             scope: pd.DataFrame | None = None, by: str | None = None, inputs: list[dict[str, Any]] | None = None,
             errors: list[dict[str, Any]] | None = None, headline: list[dict[str, Any]] | None = None,
             summary: Any = None, peaks: list[dict[str, Any]] | None = None,
             notes: list[dict[str, Any]] | None = None, row_count: int = 0, rows_total: int | None = None,
             extra_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything but the rows. ``scope``: the rows the headline, peaks and row notes are taken from (the
    kernels the output's rows come from, before grouping and ``--top``); what is not given is derived from
    ``analysis`` and ``scope`` where they are given, else empty."""
    frame = scope if scope is not None else (analysis.frame if analysis is not None else pd.DataFrame())
    head = {
        "schema": SCHEMA_NAME, "schema_version": SCHEMA_VERSION, "tool": tool(), "command": command,
        "options": {**options_of(options), **(extra_options or {})},
        "inputs": inputs if inputs is not None else (inputs_of(analysis, frame) if analysis is not None else []),
        "errors": errors if errors is not None else (errors_of(analysis) if analysis is not None else []),
        "headline": headline if headline is not None else headline_of(frame),
        "summary": summary,
        "peaks": peaks if peaks is not None else peaks_of(frame),
        "notes": notes if notes is not None else notes_of(analysis, frame),
        "row_key": row_key_doc(by),
        "row_count": int(row_count),
        "rows_total": int(rows_total if rows_total is not None else row_count),
    }
    return _plain(head)


def compare_envelope(options: Options, runs: Sequence[Analysis], summary: dict[str, Any], row_count: int,
                     extra_options: dict[str, Any] | None = None, by: str = "compare") -> dict[str, Any]:
    """``compare``'s envelope: every profile's inputs, headline, peaks and notes (the baseline first), the
    comparison's summary (``analysis/compare_summary.summary``: program times, top regressions and improvements,
    one-sided identities, communication, the gate; ``--launches``: each pair's :func:`compare_summary`), and the
    rows (identities, or pairs of launches)."""
    return envelope(
        "compare", options=options, by=by, row_count=row_count, extra_options=extra_options,
        inputs=[i for r in runs for i in inputs_of(r)], errors=[e for r in runs for e in errors_of(r)],
        headline=[h for r in runs for h in headline_of(r.frame)], summary=summary,
        peaks=[p for r in runs for p in peaks_of(r.frame)], notes=[n for r in runs for n in notes_of(r, r.frame)])


def device_resolution(name: str, cc: str | None = None, sms: int | None = None) -> dict[str, Any]:
    """How a device name (as a profile spells it) resolves to the spec table: the entry (or none), the steps
    that chose it, and its roofs with their sources (``roofline devices --explain``)."""
    from roofline.hardware.names import resolve

    res = resolve(name, cc, sms)
    spec = res.spec
    roofs: list[dict[str, Any]] = []
    if spec is not None:
        roofs = [{"roof": key, "value": f.flop_per_s, "unit": "FLOP/s", "per_clock_per_sm": f.flop_per_cycle_per_sm,
                  "source": f.derived or spec.source, "clock_basis": _implied(spec, key)}
                 for key, f in spec.figures.items()]
        roofs.append({"roof": "dram", "value": spec.dram_bytes_per_s, "unit": "bytes/s", "per_clock_per_sm": None,
                      "source": spec.dram_source, "clock_basis": "as published (spec table)"})
    return _plain({"query": name, "compute_capability": cc, "sm_count": sms,
                   "resolved": spec.name if spec is not None else None,
                   "vendor": spec.vendor if spec is not None else None,
                   "architecture": spec.architecture if spec is not None else None,
                   "sms": spec.sm_count if spec is not None else None,
                   "boost_clock_hz": spec.boost_clock_hz if spec is not None else None,
                   "note": spec.note if spec is not None else None,
                   "steps": list(res.steps), "reason": res.reason, "roofs": roofs, "text": res.explain()})


def _implied(spec: Any, key: str) -> str:
    try:
        hz = float(spec.implied_clock_hz(key))
    except (ArithmeticError, KeyError, TypeError, ValueError):
        hz = math.nan
    return f"as published (spec table; implies {hz / 1e6:.0f} MHz)" if math.isfinite(hz) and hz > 0 \
        else "as published (spec table)"


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as the envelope writes them (NaN as null, infinities as "inf"/"-inf"): for bounded answers (MCP)."""
    return [rec for part in record_chunks(frame) for rec in part]


__all__ = [
    "KERNEL_KEY_FIELDS",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "clock_basis",
    "envelope",
    "headline_of",
    "inputs_of",
    "normalised_name",
    "notes_of",
    "peaks_of",
    "records",
    "row_key_doc",
    "row_keys",
    "split_notes",
    "with_row_keys",
]
