"""Terminal table of the roofline frame: readable units, the longest rows first, and the reasons.

What a person reads in a terminal: the top rows (20 unless asked), a footer that says how many were
left out, numbered notes carrying every reason the frame holds for an unavailable value or an
over-roof point (the same text as the JSON's ``analysis_note``), a legend for the markers, file and
device columns when the rows come from several, and kernel names that tell template
instantiations apart. Only the rows shown are formatted, so a 20,000-row trace prints at once.
"""

from __future__ import annotations

import math
import re
import shutil
import sys
import textwrap
import zlib
from pathlib import PurePath

import pandas as pd

DEFAULT_TOP = 20

_HEAD = [
    ("kernel_id", "id", None),
    ("kernel_short_name", "kernel", None),
    ("source_file", "file", None),  # only when the rows come from several files
    ("device_name", "device", None),  # only when they come from several devices
    ("kernel_count", "n", None),
    ("duration_s", "time", "s"),
    ("flop_total", "FLOP", "FLOP"),
    ("compute_precision", "precision", None),
]
_TAIL = [
    ("achieved_flop_per_s", "achieved", "FLOP/s"),
    ("binding_roof", "roof", None),
    ("bound", "bound", None),
    ("pct_of_roof", "% roof", "%"),
    ("pct_of_roof_boost", "% roof@boost", "%"),
    ("over_roof", "!", "flag"),  # above a roof: the cause is in the notes
    ("analysis_note", "notes", "notes"),
]
_TEXT = ("kernel_short_name", "kernel", "program", "nvtx", "compute_precision", "device_name")
# a note's parts start with one of these (see analysis.hierarchy._Texts.notes); a "; " elsewhere is
# inside a reason and does not start a new part
_PART = re.compile(r"(FLOPs are a lower bound|no FLOPs|no compute roof|zero duration|negative duration|"
                   r"[A-Z0-9]+ level absent|no memory level|above the |under [0-9.]+% of every roof|"
                   r"[0-9]+ kernel\(s\) without|[0-9]+ of [0-9]+ timed kernels|pipe: |ncu: |next step: )")
# said by the bound column already ("latency-limited") and explained by the legend
_LATENCY = re.compile(r"under [0-9.]+% of every roof: latency- or occupancy-limited")


def _columns(levels: tuple[str, ...], by: str | None) -> list[tuple[str, str, str | None]]:
    head = list(_HEAD)
    if by:
        head = [(by, by, None)] + [c for c in head if c[0] not in ("kernel_id", "kernel_short_name", "source_file")]
    mids = [(f"intensity_{lv}_flop_per_byte", f"I {lv.upper()}", "") for lv in levels]
    return head + mids + _TAIL


def summary_columns(levels: tuple[str, ...] = ("dram", "l2", "l1"), by: str | None = None) -> list[str]:
    return [c for c, _, _ in _columns(levels, by) if c not in ("source_file", "device_name", "analysis_note")]


def _si(v: float, unit: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if math.isinf(v):
        return "inf"
    if unit == "%":
        return f"{v:.1f}"
    if unit == "":
        return f"{v:.3g}"
    prefixes = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]
    a = abs(v)
    if a == 0:
        return f"0 {unit}"
    for scale, p in prefixes:
        if a >= scale:
            return f"{v / scale:.3g} {p}{unit}"
    return f"{v:.3g} {unit}"


_INTEGER = re.compile(r"int\d|imma|(?:^|[_:])i8\b", re.IGNORECASE)


def is_integer_work(precision: str) -> bool:
    """An int8/int4 tensor (IMMA) or MFMA i8 path: counted in operations (OP), not floating-point ones."""
    return _INTEGER.search(precision) is not None


def _op_units(rows: pd.DataFrame, unit: str) -> list[str]:
    """Per row: integer work counts operations, not floating-point ones."""
    if unit not in ("FLOP", "FLOP/s") or "compute_precision" not in rows.columns:
        return [unit] * len(rows)
    prec = rows["compute_precision"].astype("string").fillna("")
    return [unit.replace("FLOP", "OP") if is_integer_work(p) else unit for p in prec.tolist()]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _template_args(name: str, short: str) -> str | None:
    """The template arguments after ``short`` in a demangled name, casts dropped: '64,64,8,8'."""
    i = name.find(short + "<")
    if i < 0:
        return None
    depth, start = 0, i + len(short)
    for j in range(start, len(name)):
        depth += {"<": 1, ">": -1}.get(name[j], 0)
        if depth == 0:
            args = name[start + 1: j]
            args = re.sub(r"\((?:unsigned |signed )?(?:int|long|long long|bool|char|short)\)", "", args)
            return re.sub(r"\s*,\s*", ",", args).strip()
    return None


def _suffix(name: str) -> str:
    return f"{zlib.crc32(name.encode()) & 0xFFFF:04x}"


def display_names(frame: pd.DataFrame, max_name: int = 40) -> tuple[list[str], bool]:
    """Short kernel names, told apart where one short name stands for several kernels (template
    instantiations, overloads): with the template arguments when they fit, else a 4-hex suffix of
    the full name. Returns the names and whether a suffix was used."""
    short = frame["kernel_short_name"].astype("string").fillna("n/a")
    if "kernel_name" not in frame:
        return [_cut(s, max_name) for s in short], False
    full = frame["kernel_name"].astype("string").fillna("")
    distinct = pd.DataFrame({"s": short, "f": full}).drop_duplicates().groupby("s")["f"].size()
    shared = set(distinct[distinct > 1].index)
    names, hashed = [], False
    for s, f in zip(short.tolist(), full.tolist()):
        if s not in shared:
            names.append(_cut(s, max_name))
            continue
        args = _template_args(f, s)
        label = f"{s}<{args}>" if args else ""
        if not label or len(label) > max_name:
            label, hashed = f"{_cut(s, max_name - 5)}#{_suffix(f)}", True
        names.append(label)
    return names, hashed


def _short_files(paths: pd.Series) -> pd.Series:
    """File names without folders; with the parent folder where two files share a name."""
    uniq = list(dict.fromkeys(paths.tolist()))
    base = {p: PurePath(str(p).replace("\\", "/")).name for p in uniq}
    clash = {b for b in base.values() if list(base.values()).count(b) > 1}
    label = {p: ("/".join(PurePath(str(p).replace("\\", "/")).parts[-2:]) if base[p] in clash else base[p]) for p in uniq}
    return paths.map(label)


def split_note(note: str) -> list[str]:
    """The parts of an ``analysis_note``: split at '; ' where a new reason starts, not inside one."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(note):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ";" and depth == 0 and note.startswith("; ", i) and _PART.match(note, i + 2):
            parts.append(note[start:i])
            start = i + 2
    parts.append(note[start:])
    return [p.strip() for p in parts if p.strip()]


def format_table(frame: pd.DataFrame, levels: tuple[str, ...] = ("dram", "l2", "l1"), by: str | None = None,
                 max_name: int = 40, limit: int | None = None, total: int | None = None,
                 latency_threshold: float = 20.0, more: str = "--top N or --all") -> str:
    """The table, then a footer (rows left out), numbered notes and a legend. Rows in frame order.

    ``limit`` shows only the first rows (the frame is sorted longest first); ``total`` is the number
    of rows the footer reports (default: the frame's). Unavailable numbers print as ``n/a`` (never
    as 0) and their reasons are in the notes. Under ``by='kernel'`` names are printed in full.
    """
    if frame.empty:
        return "(no kernels)"
    n_total = len(frame) if total is None else total
    rows = frame.head(limit) if limit else frame
    cols = [(c, h, u) for c, h, u in _columns(levels, by) if c in rows.columns]
    several = {c: frame[c].astype("string").nunique(dropna=True) > 1 for c in ("source_file", "device_name")
               if c in frame.columns}
    cols = [x for x in cols if x[0] not in several or several[x[0]]]
    shown = pd.DataFrame(index=rows.index)
    footnotes: dict[str, int] = {}
    hashed = False
    for c, h, u in cols:
        s = rows[c]
        if u == "flag":
            shown[h] = ["!" if v is True else "" for v in s.astype(object)]
        elif u == "notes":
            shown[h] = [_note_refs(v, footnotes) for v in s.astype(object)]
        elif c == "kernel_short_name":
            shown[h], hashed = display_names(rows, max_name)
        elif c == "source_file":
            shown[h] = _short_files(s.astype("string").fillna("n/a")).map(lambda t: _cut(t, max_name)).tolist()
        elif u is None:
            vals = s.astype("string").fillna("n/a")
            if c == "program":
                vals = vals.map(lambda t: t.replace("\\", "/").rsplit("/", 1)[-1])
            if c in _TEXT and not (by == "kernel" and c == "kernel"):  # --by kernel: full names
                vals = vals.map(lambda t: _cut(t, max_name))
            shown[h] = vals
        else:
            units = _op_units(rows, u)
            shown[h] = [_si(float(v) if v is not None and not pd.isna(v) else math.nan, unit)
                        for v, unit in zip(s, units)]
    lines = [shown.to_string(index=False)]
    if len(rows) < n_total:
        lines.append(f"shown: {len(rows):,} of {n_total:,} rows, longest first; {more} for more")
    # wrapped to a terminal; one line per note when piped, so that grep finds a whole reason
    width = max(60, shutil.get_terminal_size((120, 24)).columns) if sys.stdout.isatty() else 1 << 30
    if footnotes:
        lines.append("notes:")
        for text, n in footnotes.items():
            lines.append(textwrap.fill(text, width, initial_indent=f" [{n}] ", subsequent_indent="     ",
                                       break_on_hyphens=False, break_long_words=False))
    lines.append(textwrap.fill(_legend(shown, latency_threshold, hashed), width, subsequent_indent="  ",
                               break_on_hyphens=False))
    return "\n".join(lines)


_ABSENT = re.compile(r"([A-Z0-9]+) level absent: no \1 (bytes|roof) \((.*)\)", re.DOTALL)


def _merged_levels(parts: list[str]) -> list[str]:
    """'L2 level absent: no L2 bytes (R)' and 'L1 level absent: no L1 bytes (R)' as one note: 'L2, L1 ...'."""
    out: list[str] = []
    groups: dict[tuple[str, str], list[str]] = {}
    for part in parts:
        m = _ABSENT.fullmatch(part)
        if m is None:
            out.append(part)
            continue
        key = (m.group(2), m.group(3))
        if key not in groups:
            groups[key] = []
            out.append(f"\0{len(groups) - 1}")  # placeholder: keeps the order of first appearance
        groups[key].append(m.group(1))
    keys = list(groups)
    for i, part in enumerate(out):
        if part.startswith("\0"):
            (kind, reason), lvs = keys[int(part[1:])], groups[keys[int(part[1:])]]
            out[i] = (f"{lvs[0]} level absent: no {lvs[0]} {kind} ({reason})" if len(lvs) == 1
                      else f"{', '.join(lvs)} levels absent: no {kind} ({reason})")
    return out


def _note_refs(note: object, footnotes: dict[str, int]) -> str:
    if not isinstance(note, str) or not note:
        return ""
    refs = []
    for part in _merged_levels(split_note(note)):
        if _LATENCY.fullmatch(part):
            continue
        refs.append(footnotes.setdefault(part, len(footnotes) + 1))
    return ",".join(str(r) for r in refs)


def _legend(shown: pd.DataFrame, latency_threshold: float, hashed: bool) -> str:
    items = []
    if (shown == "n/a").any().any():
        items.append("n/a unavailable (why: the notes)")
    if any(c.startswith("I ") for c in shown.columns):
        items.append("I = FLOP per byte at that memory level")
    if "% roof" in shown:
        items.append("% roof = achieved / the binding roof at this intensity")
    if "!" in shown and (shown["!"] == "!").any():
        items.append("! above a roof (cause in the notes)")
    if "bound" in shown and shown["bound"].eq("latency-limited").any():
        items.append(f"latency-limited = under {latency_threshold:g}% of every roof")
    if hashed:
        items.append("#xxxx tells apart kernels with one short name (--by kernel prints full names)")
    return "legend: " + "; ".join(items)
