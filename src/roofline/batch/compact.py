"""Compaction: a dataset's live rows rewritten as one file per table, and the repair of damaged parts.

``roofline dataset compact DIR`` and the end of every batch (when what it added is worth it) call
:func:`compact`. It writes ``<table>/compact.parquet`` for every table (the live rows only, sorted by run,
source file, input and row, so two batches of the same inputs give byte-identical files however their work
was split; the kernels and roofline files in one order, ``open_dataset``'s, so they are read side by side and
not sorted again),
then removes the parts it replaced. Every step leaves a readable dataset with the same live rows:

1. the row tables' compact files replace the old ones (a live ``runs`` row still points at data that is
   there: the old compact rows are in the new file, newer parts are untouched; the new file's rows of inputs
   still live in parts are not read, their key is not the live one: ``dataset.Live``);
2. then the input tables' (``runs``, ``errors``): compacted rows are generation 0, below every part;
3. then the parts are removed, ``runs``/``errors`` first, so no live row ever points at a removed part.

A dataset of layout 1 (one part per input under ``run=<run>/``, ``_state/`` markers) is upgraded the same
way; layout 1 readers only read ``run=*/`` folders and layout 2 readers only the table folder itself, so the
manifest's version switches between two complete datasets.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from roofline.batch import dataset as dset
from roofline.batch.files import DamagedPartError, check_part, fsync_dir, write_durably
from roofline.errors import path_text

#: rows per row group of a compact file (fixed: the bytes of a compacted dataset depend on its rows only)
ROW_GROUP = 1 << 17
#: runs are compacted together up to this many kernel rows (memory: one group of runs at a time; a kernel row
#: of a trace holds ~3 KB of strings once read)
GROUP_ROWS = 1 << 17
#: a batch compacts at its end when its parts hold at least this share of the compacted bytes (or there
#: is no compact file yet): adding a few inputs to a large dataset does not rewrite all of it
AUTO_SHARE = 1 / 16
#: ... or when there are this many parts, or the compacted files are smaller than this (rewriting is cheap)
AUTO_PARTS = 256
AUTO_SMALL_BYTES = 64 << 20


@dataclass
class Compacted:
    inputs: int = 0
    kernels: int = 0
    files_before: int = 0
    files_after: int = 0
    seconds: float = 0.0
    upgraded: bool = False
    notes: list[str] = field(default_factory=list)

    def line(self, root: Path) -> str:
        up = " (upgraded from layout 1)" if self.upgraded else ""
        return (f"compacted {path_text(root)}{up}: {self.inputs} inputs, {self.kernels} kernel rows; "
                f"{self.files_before} -> {self.files_after} files in {self.seconds:.1f} s")


def _all_parts(root: Path, table: str, version: str) -> list[Path]:
    """A table's part files as the layout has them, unchecked (the repair checks them)."""
    folder = root / table
    if not folder.is_dir():
        return []
    if version == "1":
        return sorted(folder.glob("run=*/*.parquet"))
    return sorted(p for p in folder.glob("*.parquet"))


def repair(root: Path) -> list[str]:
    """Move damaged parts aside to ``_damaged/`` with the parts of the same name in the other tables (layout 1:
    of the same input, and its ``_state`` marker), so the inputs they held are read again by this batch.
    Returns one line per part moved."""
    version = dset.layout_version(root)
    notes = []
    for table in dset.TABLES:
        for part in _all_parts(root, table, version):
            try:
                check_part(part)
                pq.read_metadata(part)  # the footer too: a cut inside it passes the magic-bytes check
            except DamagedPartError as exc:
                notes.append(_aside(root, part, version, str(exc)))
            except (pa.ArrowInvalid, OSError) as exc:
                notes.append(_aside(root, part, version, f"{path_text(part)}: damaged dataset part ({exc})"))
    return notes


def _aside(root: Path, part: Path, version: str, why: str) -> str:
    name = part.name
    for table in dset.TABLES:
        sibling = (root / table / part.parent.name / name) if version == "1" else (root / table / name)
        if sibling.exists():
            dest = root / "_damaged" / table / (part.parent.name if version == "1" else "") / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            sibling.replace(dest)
    if version == "1":
        (root / "_state" / name[:2] / name.removesuffix(".parquet")).unlink(missing_ok=True)
    return f"{why.split(' (', 1)[0]}: moved aside to {path_text(root / '_damaged')}; its inputs are read again"


def worth_compacting(root: Path) -> bool:
    """Whether the end of a batch compacts its parts: the compacted files are small (or none yet), or the parts
    are many, or large next to them."""
    if dset.layout_version(root) == "1":
        return True
    parts = [p for t in dset.TABLES for p in _all_parts(root, t, "2") if p.stem != dset.COMPACT]
    if not parts:
        return False
    compact = [root / t / f"{dset.COMPACT}.parquet" for t in dset.TABLES]
    compact_bytes = sum(p.stat().st_size for p in compact if p.exists())
    part_bytes = sum(p.stat().st_size for p in parts)
    return (compact_bytes < AUTO_SMALL_BYTES or len(parts) >= AUTO_PARTS
            or part_bytes >= AUTO_SHARE * compact_bytes)


def compact(root: Path) -> Compacted:
    """Rewrite the live rows as ``<table>/compact.parquet`` and remove what they replace (call it holding
    the dataset's lock). A damaged part stops it (:class:`~roofline.batch.files.DamagedPartError`): a batch run
    again moves it aside and reads its inputs again."""
    start = time.perf_counter()
    version = dset.layout_version(root)
    before = [p for t in dset.TABLES for p in _all_parts(root, t, version)]
    for p in before:
        check_part(p)
    live = dset.live_state(root, version=version)
    out = Compacted(inputs=live.inputs.num_rows, files_before=len(before), upgraded=version == "1")
    groups = _run_groups(root, live, version)
    out.kernels = _write_row_tables(root, live, groups)  # row tables first (see the module's docstring)
    for table in dset.INPUT_TABLES:
        _write_compact(root, table, live, groups)
    if version == "1":
        dset.atomic_write_bytes(root / dset.MANIFEST, dset.manifest_body(), make_parents=False)
        for table in dset.TABLES:
            for folder in (root / table).glob("run=*"):
                shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(root / "_state", ignore_errors=True)
    else:
        for table in ("runs", "errors", "kernels", "roofline"):
            for p in _all_parts(root, table, "2"):
                if p.stem != dset.COMPACT:
                    p.unlink(missing_ok=True)
            fsync_dir(root / table) if (root / table).is_dir() else None
    out.files_after = sum(len(_all_parts(root, t, "2")) for t in dset.TABLES)
    out.seconds = time.perf_counter() - start
    return out


def _run_groups(root: Path, live: dset.Live, version: str) -> list[list[str]]:
    """The run labels in sorted order, grouped up to :data:`GROUP_ROWS` kernel rows (from the runs rows)."""
    if live.inputs.num_rows == 0:
        return []
    counts = dset.live_table(root, "runs", live, columns=["kernels"]) if live.ok.num_rows else None
    rows: dict[str, int] = {}
    if counts is not None:
        for run, n in zip(counts.column("run").to_pylist(), counts.column("kernels").to_pylist()):
            rows[run] = rows.get(run, 0) + int(n or 0)
    groups: list[list[str]] = [[]]
    size = 0
    for run in sorted(set(live.inputs.column("run").to_pylist())):
        if groups[-1] and size + rows.get(run, 0) > GROUP_ROWS:
            groups.append([])
            size = 0
        groups[-1].append(run)
        size += rows.get(run, 0)
    return groups


def _write_compact(root: Path, table: str, live: dset.Live, groups: list[list[str]]) -> None:
    """Write an input table's compact file from its live rows, group of runs by group, by (run, input)."""
    schema = dset.table_schemas()[table]
    if not (root / table).is_dir() and not groups:
        return  # nothing was ever written to it: no file either
    (root / table).mkdir(exist_ok=True)

    def fill(fh: object) -> None:
        with pq.ParquetWriter(fh, schema) as writer:
            for runs in groups:
                t = dset.live_table(root, table, live, runs)
                if t.num_rows:
                    t = _as_compact(t, schema).sort_by([(k, "ascending") for k in ("run", "source_file", "file_id")])
                    writer.write_table(t, row_group_size=ROW_GROUP)

    write_durably(dset.part_path(root, table, dset.COMPACT), fill)


#: the row tables' compact order: what ``open_dataset`` sorts by, so reading a compacted dataset back needs no
#: sort (the roofline table has no source_file: its rows take the order of their kernel rows)
READ_ORDER = ["run", "source_file", "file_id", "row"]


def _write_row_tables(root: Path, live: dset.Live, groups: list[list[str]]) -> int:
    """Write the kernels and roofline compact files from their live rows, group of runs by group, both in one
    order (they are read side by side, see ``dataset._side_by_side``); returns the kernel rows written."""
    wanted = [t for t in ("kernels", "roofline") if (root / t).is_dir() or groups]
    if not wanted:
        return 0  # nothing was ever written to them: no files either
    schemas = dset.table_schemas()
    for t in wanted:
        (root / t).mkdir(exist_ok=True)
    rows = 0

    def fill(handles: dict[str, object]) -> None:
        nonlocal rows
        writers = {t: pq.ParquetWriter(fh, schemas[t]) for t, fh in handles.items()}
        try:
            for runs in groups:
                got = {t: dset.row_table(root, t, live, None, dset.isin("run", runs)) for t in writers}
                for t, table in _in_read_order(got.get("kernels"), got.get("roofline")).items():
                    if table.num_rows:
                        writers[t].write_table(_as_compact(table, schemas[t]), row_group_size=ROW_GROUP)
                rows += got["kernels"].num_rows if "kernels" in got else 0
        finally:
            for w in writers.values():
                w.close()

    def nested(todo: list[str], handles: dict[str, object]) -> None:
        if not todo:
            fill(handles)
            return
        write_durably(dset.part_path(root, todo[0], dset.COMPACT),
                      lambda fh: nested(todo[1:], handles | {todo[0]: fh}))

    nested(wanted, {})
    return rows


def _in_read_order(kernels: pa.Table | None, roof: pa.Table | None) -> dict[str, pa.Table]:
    """A group's kernel rows in :data:`READ_ORDER` and its roofline rows in the same order where the two hold
    the same rows (as written: checked), else each by (run, file_id, row)."""
    out: dict[str, pa.Table] = {}
    if kernels is not None:
        keys = [k for k in ("file_id", "part", "row") if k in kernels.column_names]  # (layout 1 has no part)
        order = pc.sort_indices(kernels, sort_keys=[(k, "ascending") for k in READ_ORDER])
        if roof is not None and roof.num_rows == kernels.num_rows and all(
                roof.column(k).equals(kernels.column(k)) for k in keys):
            out["roofline"] = roof.take(order)
        out["kernels"] = kernels.take(order)
    if roof is not None and "roofline" not in out:
        out["roofline"] = roof.sort_by([(k, "ascending") for k in ("run", "file_id", "row")])
    return out


def _as_compact(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rows of either layout as layout 2's compacted rows: part ``compact``, generation 0."""
    n = t.num_rows
    cols = []
    for f in schema:
        if f.name == "part":
            cols.append(pa.repeat(pa.scalar(dset.COMPACT, f.type), n))
        elif f.name == "gen":
            cols.append(pa.repeat(pa.scalar(0, f.type), n))
        elif f.name in t.column_names:
            c = t.column(f.name)
            cols.append(c if c.type == f.type else c.cast(f.type))
        else:
            cols.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(cols, schema=schema)
