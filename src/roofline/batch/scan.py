"""The summary of datasets larger than memory: ``roofline analyze DATASET --by KEY`` and the default table (the
N longest kernels), computed batch by batch from a Parquet scan instead of from every row at once.

The scan reads the canonical kernel columns only, and the ``--name``/``--nvtx`` patterns go into it as Arrow
(RE2) regular expressions where RE2 reads them as Python does (ASCII patterns without ``\\d \\w \\s \\b``,
look-arounds or back-references); Python's ``re`` then applies them again, so the rows kept are exactly those
of the whole-frame path. Each record batch goes through the same stages as a whole frame (the roofs stage and
the analysis are row by row); what is kept between batches is small:

- ``--by KEY``: the groups' sums (:func:`roofline.analysis.aggregate.partial`), combined as batches come;
- the default table: the N longest rows so far and the count of rows that matched.

Memory is one record batch plus that, whatever the dataset's size. Sums over a group are added batch by
batch, so a group's totals may differ from the whole-frame path's in the last bits of a float64.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from roofline.batch import dataset as dset

#: rows per record batch of the scan (a row group larger than this is decoded a batch at a time)
BATCH_ROWS = 1 << 17
#: partial sums are combined once this many have piled up
COMBINE_EVERY = 16
_NOT_LIKE_PYTHON = re.compile(r"\\[dwsbDWSB0-9]|\(\?[=!<]|\(\?P[=>]")


@dataclass
class Summary:
    """What a streamed summary gives the command: its rows, how many rows matched before ``top``, the levels
    recorded, one message per (input, device) without roofs, and the inputs' provenance."""

    frame: pd.DataFrame
    total: int = 0
    levels: tuple[str, ...] = ()
    messages: list[Any] = field(default_factory=list)


def regex_filter(column: str, pattern: str | None) -> Any:
    """An Arrow expression for a case-insensitive search of ``pattern`` in ``column``, or None when RE2 may not
    read it as Python's ``re`` does (the rows are then filtered after the scan only)."""
    if not pattern or not pattern.isascii() or _NOT_LIKE_PYTHON.search(pattern):
        return None
    try:
        pc.match_substring_regex(pa.array([], pa.string()), pattern, ignore_case=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return pc.match_substring_regex(ds.field(column), pattern, ignore_case=True)


def summarise(roots: Sequence[Path], analyse: Callable[[pd.DataFrame], pd.DataFrame],
              missing: Callable[[pd.DataFrame], list[Any]], levels: tuple[str, ...], *, by: str | None,
              top: int | None,
              name: str | None = None, nvtx: str | None = None, bound: str | None = None,
              precision: str | None = None, latency_threshold_pct: float = 20.0) -> Summary:
    """The summary rows of the datasets at ``roots``: ``analyse`` turns a kernels batch into roofline rows (the
    pipeline's roofs stage and analysis), ``missing`` gives its missing-roof messages."""
    from roofline.analysis.aggregate import combine, finish, partial
    from roofline.analysis.select import select
    from roofline.hardware.peaks import recorded_levels
    from roofline.schema import kernel_columns, kernel_dtypes, set_provenance

    # --name searches the short, full and mangled names (as select does): any of them may match
    names = [regex_filter(c, name) for c in ("kernel_name", "kernel_short_name", "mangled_name")]
    by_name = names[0] | names[1] | names[2] if all(e is not None for e in names) else None
    pushed = [e for e in (by_name, regex_filter("nvtx_range", nvtx)) if e is not None]
    where = pushed[0] & pushed[1] if len(pushed) == 2 else (pushed[0] if pushed else None)
    out = Summary(frame=pd.DataFrame(), levels=tuple(levels))
    partials: list[pd.DataFrame] = []
    firsts: pd.DataFrame | None = None  # --by: each group's longest kernel, which orders the groups
    categorical: set[str] = set()  # the analysis's categorical columns (joined batches lose the dtype)
    best: pd.DataFrame | None = None
    seen: set[str] = set()
    provenance: list[dict[str, Any]] = []
    for root in roots:
        live = dset.live_state(root)
        provenance += dset.provenance(root, live)
        for batch in live_batches(root, live, kernel_columns(), where):
            kernels = dset._pandas(batch, kernel_dtypes())
            del batch  # (one batch in memory at a time: what the loop holds goes before the next is read)
            order = kernels[["run", "row"]].reset_index(drop=True)
            rows = analyse(kernels[list(kernel_columns())].reset_index(drop=True))
            for m in missing(rows):
                if m.text not in seen:
                    seen.add(m.text)
                    out.messages.append(m)
            out.levels = tuple(dict.fromkeys(out.levels + recorded_levels(rows, levels)))
            rows = select(rows, name=name, nvtx=nvtx)
            if by:
                partials.append(partial(rows, by, out.levels))
                firsts = _firsts(rows, order, by, firsts)
                if len(partials) >= COMBINE_EVERY:
                    partials = [combine(partials)]
                del kernels, order, rows
                continue
            rows = select(rows, bound=bound, precision=precision)
            categorical.update(c for c in rows.columns if isinstance(rows[c].dtype, pd.CategoricalDtype))
            out.total += len(rows)
            keyed = rows.assign(_run=order.loc[rows.index, "run"].to_numpy(), _row=order.loc[rows.index, "row"].to_numpy())
            best = _longest(keyed if best is None else pd.concat([best, keyed], ignore_index=True), top or 20)
            del kernels, order, rows, keyed
    if by:
        if partials:
            sums = combine(partials)
            index = firsts[[k for k in ("_g", "_d", "_c") if k in firsts]] if firsts is not None else None
            sums = sums.loc[pd.MultiIndex.from_frame(index)] if index is not None else sums
            frame = finish(sums, by, out.levels, latency_threshold_pct)
        else:
            frame = pd.DataFrame(columns=[by, "device_name", "kernel_count", "duration_s"])
        frame = select(frame, bound=bound, precision=precision)
        out.total = len(frame)
        out.frame = (frame if top is None else frame.head(top)).reset_index(drop=True)
    else:
        frame = best if best is not None else analyse(pd.DataFrame(columns=list(kernel_columns())))
        frame = frame.drop(columns=[c for c in ("_run", "_row") if c in frame]).reset_index(drop=True)
        out.frame = frame.astype({c: "category" for c in categorical if c in frame})
    set_provenance(out.frame, provenance)
    return out


def live_batches(root: Path, live: dset.Live, columns: Sequence[str], where: Any = None) -> Iterator[pa.Table]:
    """The live kernel rows of a dataset in record batches of :data:`BATCH_ROWS`, in file order, one row group at
    a time (:func:`dataset.iter_live`)."""
    return dset.iter_live(root, "kernels", columns=columns, filter=where, batch_rows=BATCH_ROWS, live=live)


def _firsts(rows: pd.DataFrame, order: pd.DataFrame, by: str, before: pd.DataFrame | None) -> pd.DataFrame:
    """Each group's longest kernel (ties: the first in dataset order), groups in that order: the order in which
    the whole-frame path (its rows sorted longest first) meets the groups, which sets the order of groups
    of equal time and of the categories in the result."""
    from roofline.analysis.aggregate import group_keys

    keys = ["_g", "_d", "_c"][:len(found := group_keys(rows, by))]
    here = pd.DataFrame({**dict(zip(keys, found)), "_s": rows["duration_s"].to_numpy(dtype="float64"),
                         "_run": order.loc[rows.index, "run"].to_numpy(), "_src": rows["source_file"].to_numpy(),
                         "_row": order.loc[rows.index, "row"].to_numpy()})
    both = here if before is None else pd.concat([before, here], ignore_index=True)
    both = both.sort_values(["_run", "_src", "_row"], kind="stable").sort_values(
        "_s", ascending=False, na_position="last", kind="stable")
    return both.drop_duplicates([k for k in ("_g", "_d", "_c") if k in both]).reset_index(drop=True)


def _longest(rows: pd.DataFrame, top: int) -> pd.DataFrame:
    """The ``top`` longest rows, ties in dataset order (run, input, row): what sorting every row would keep."""
    rows = rows.sort_values(["_run", "source_file", "_row"], kind="stable", na_position="last")
    return rows.sort_values("duration_s", ascending=False, na_position="last", kind="stable").head(top)
