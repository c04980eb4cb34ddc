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
#: an intensity cell whose level moved 0 bytes (FLOP / 0 B is unbounded, not a number to print)
NO_BYTES = "0 B"

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
    if by == "kernel":  # the shapes or launch configuration that split a name into several rows
        head.insert(1, ("kernel_config", "shapes / launch", None))
    mids = [(f"intensity_{lv}_flop_per_byte", f"I {lv.upper()}", "") for lv in levels]
    return head + mids + _TAIL


def summary_columns(levels: tuple[str, ...] = ("dram", "l2", "l1"), by: str | None = None) -> list[str]:
    return [c for c, _, _ in _columns(levels, by) if c not in ("source_file", "device_name", "analysis_note")]


def _si(v: float, unit: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if math.isinf(v):  # an intensity over 0 bytes (no traffic at that level); a rate over no time: unavailable
        return NO_BYTES if unit == "" else "n/a"
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


_QUALIFIER = re.compile(r"(?:\(anonymous namespace\)::|[A-Za-z_]\w*::)+")
_CAST = re.compile(r"\((?:unsigned |signed )?(?:int|long|long long|bool|char|short)\)")


def _without_params(name: str) -> str:
    """``name`` without its trailing parameter list: 'f<int>(float *, int)' -> 'f<int>'."""
    s = name.rstrip()
    if not s.endswith(")"):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(s[i], 0)
        if depth == 0:
            head = s[:i].rstrip()
            # '(anonymous namespace)' or a cast is not a parameter list; a name must precede it
            return head if head and (head[-1].isalnum() or head[-1] in "_>") else s
    return s


def _nest(text: str, keep: int) -> str:
    """Template arguments nested deeper than ``keep`` levels replaced by '…'."""
    out, depth = [], 0
    for ch in text:
        if ch == "<":
            depth += 1
            if depth <= keep:
                out.append("<")
            elif depth == keep + 1:
                out.append("<…")
            continue
        if ch == ">":
            if depth <= keep + 1:
                out.append(">")
            depth -= 1
            continue
        if depth <= keep:
            out.append(ch)
    return "".join(out)


def abbreviate(name: str, width: int = 60) -> str:
    """A demangled kernel name shortened for a table: no return type, parameter list or namespaces, casts
    dropped, and template arguments abbreviated with '…' from the innermost out until it fits ``width``:
    'void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, …>, …>(int, …)' ->
    'vectorized_elementwise_kernel<4, BinaryFunctor<…>, array<…>>'."""
    s = (name or "").strip()
    if len(s) <= width and "<" not in s and "(" not in s:
        return s  # a framework op ('aten::addmm') or a plain kernel name: as it is
    s = re.sub(r"^\s*(?:void|static|__global__|inline)\s+", "", s)
    s = _without_params(s)
    s = _CAST.sub("", _QUALIFIER.sub("", s))
    s = re.sub(r"\s*,\s*", ", ", re.sub(r"\s+", " ", s)).strip()
    s = re.sub(r"\s+>", ">", re.sub(r"<\s+", "<", s))  # "MulFunctor<float> >": C++03 spacing, no information
    for keep in (3, 2, 1):
        if len(s) <= width:
            break
        s = _nest(s, keep)
    if len(s) > width and "<" in s:
        s = s[: s.index("<")] + "<…>"
    return _cut(s, width)


def unique_labels(labels: list[str], keys: list[str]) -> list[str]:
    """``labels`` made unique: a label that stands for several distinct ``keys`` gets a 4-hex suffix of its key."""
    seen: dict[str, set[str]] = {}
    for lab, key in zip(labels, keys):
        seen.setdefault(lab, set()).add(key)
    return [f"{lab}#{_suffix(key)}" if len(seen[lab]) > 1 else lab for lab, key in zip(labels, keys)]


def _left_headers(shown: pd.DataFrame) -> pd.DataFrame:
    """Headers of the text columns padded like their values (``_left``), so they sit over the text's start."""
    out = {}
    for h in shown.columns:
        if "\0" not in h:
            out[h] = shown[h]
            continue
        col = shown[h].astype(str)
        text = h.split("\0")[0]
        width = max(len(text), int(col.str.len().max()) if len(col) else 0)
        out[text.ljust(width)] = col.str.ljust(width)
    return pd.DataFrame(out, index=shown.index)


def _left(values: list[str]) -> list[str]:
    """Text padded on the right, so that a right-aligning table prints it left-aligned."""
    width = max((len(v) for v in values), default=0)
    return [v.ljust(width) for v in values]


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
                 latency_threshold: float = 20.0, more: str = "--top N or --all", full_names: bool = False,
                 whole: pd.DataFrame | None = None) -> str:
    """The table, then a footer (rows left out), numbered notes and a legend. Rows in frame order.

    ``limit`` shows only the first rows (the frame is sorted longest first); ``total`` is the number
    of rows the footer reports (default: the frame's). Unavailable numbers print as ``n/a`` (never
    as 0) and their reasons are in the notes. Under ``by='kernel'`` names are abbreviated (:func:`abbreviate`,
    told apart where two would read the same) unless ``full_names``. Text columns are left-aligned; ids carry
    their file's number ("2:16") when the rows come from several files, so that each is unique. ``whole``:
    the files and devices (``source_file``, ``device_name``) of all the rows, where ``frame`` holds only the first
    ``limit`` of them.
    """
    if frame.empty:
        return "(no kernels)"
    n_total = len(frame) if total is None else total
    rows = frame.head(limit) if limit else frame
    cols = [(c, h, u) for c, h, u in _columns(levels, by) if c in rows.columns]
    every = frame if whole is None else whole
    several = {c: every[c].astype("string").nunique(dropna=True) > 1 for c in ("source_file", "device_name")
               if c in frame.columns}
    cols = [x for x in cols if x[0] not in several or several[x[0]]]
    shown = pd.DataFrame(index=rows.index)
    footnotes: dict[str, int] = {}
    hashed = False
    files = rows["source_file"].astype("string").fillna("") if several.get("source_file") else None
    for c, h, u in cols:
        s = rows[c]
        if c == "kernel_id" and files is not None:  # kernel ids restart in every file: number the files
            # (the distinct files in order of first appearance, without iterating every row of a dataset)
            number = {f: i + 1 for i, f in enumerate(every["source_file"].astype("string").fillna("").unique())}
            shown[h] = [f"{number[f]}:{'n/a' if pd.isna(k) else int(k)}" for f, k in zip(files, s)]
        elif u == "flag":
            shown[h] = ["!" if v is True else "" for v in s.astype(object)]
        elif u == "notes":
            shown[h] = [_note_refs(v, footnotes) for v in s.astype(object)]
        elif c == "kernel_short_name":
            names, hashed = display_names(rows, max_name)
            shown[h + "\0"] = _left(names)
        elif c == "source_file":
            shown[h + "\0"] = _left(_short_files(s.astype("string").fillna("n/a")).map(lambda t: _cut(t, max_name)).tolist())
        elif u is None:
            vals = s.astype("string").fillna("n/a")
            if c == "program":
                vals = vals.map(lambda t: t.replace("\\", "/").rsplit("/", 1)[-1])
            if by == "kernel" and c == "kernel":  # abbreviated, told apart, or in full on demand
                full = vals.tolist()
                short = [abbreviate(t, max(max_name, 60)) for t in full]
                vals = full if full_names else unique_labels(short, full)
                hashed = hashed or vals != short and not full_names
            elif c in _TEXT or c == "kernel_config":
                vals = vals.map(lambda t: _cut(t, max_name)).tolist()
            if c in _TEXT or c == "kernel_config":
                shown[h + "\0"] = _left(list(vals))
            else:
                shown[h] = vals
        else:
            units = _op_units(rows, u)
            shown[h] = [_si(float(v) if v is not None and not pd.isna(v) else math.nan, unit)
                        for v, unit in zip(s, units)]
            lv = c[len("intensity_"):-len("_flop_per_byte")] if c.startswith("intensity_") else None
            if lv and f"{lv}_bytes" in rows:  # a level the row has no bytes at: absent, not an unknown number
                absent = pd.to_numeric(rows[f"{lv}_bytes"], errors="coerce").isna().to_numpy()
                shown[h] = ["-" if a else t for a, t in zip(absent, shown[h])]
    lines = [_left_headers(shown).to_string(index=False)]
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
    cells = shown.astype(str).apply(lambda col: col.str.strip())
    if (cells == "n/a").any().any():
        items.append("n/a unavailable (why: the notes)")
    if any(c.startswith("I ") for c in shown.columns):
        items.append("I = FLOP per byte at that memory level")
        if any((shown[c] == NO_BYTES).any() for c in shown.columns if c.startswith("I ")):
            items.append(f"I {NO_BYTES}: no bytes moved at that level (intensity unbounded: it binds nothing)")
        if (cells[[c for c in shown.columns if c.startswith("I ")]] == "-").any().any():
            items.append("- no bytes at that level (the notes say why)")
    if "% roof" in shown:
        items.append("% roof = achieved / the binding roof at this intensity")
    if "!" in shown and (shown["!"] == "!").any():
        items.append("! above a roof (cause in the notes)")
    if "bound" in shown and shown["bound"].eq("latency-limited").any():
        items.append(f"latency-limited = under {latency_threshold:g}% of every roof")
    if hashed:
        items.append("#xxxx tells apart kernels with one short name (--full-names prints them in full)")
    return "legend: " + "; ".join(items)
