"""rocpd SQLite (``rocprofv3 --output-format rocpd``, its default since ROCm 7.0): one row per dispatch.

A rocpd database holds one set of tables per profiled process, each name suffixed with the run's
UUID (``rocpd_kernel_dispatch_<uuid>``, ``rocpd_info_agent_<uuid>``, ``rocpd_info_kernel_symbol_<uuid>``,
``rocpd_pmc_event_<uuid>``, ``rocpd_info_pmc_<uuid>``, ``rocpd_memory_copy_<uuid>``, ...), and views
without the suffix (``rocpd_kernel_dispatch``, ``kernels``, ``counters_collection``, ...). The
schema is rocprofiler-sdk's ``source/share/rocprofiler-sdk-rocpd/*.sql`` (ROCm/rocm-systems @
1b1610f). The suffixed tables are read, each UUID as one process (a merged database has several;
the views show only one), never the views: they are INNER JOINs that drop a dispatch whose event,
thread or region row is missing.

- dispatches: ``rocpd_kernel_dispatch`` (``start``/``end`` ns, agent, queue, grid and workgroup
  sizes in work-items); names from ``rocpd_info_kernel_symbol.display_name`` (the formatted name);
  agents from ``rocpd_info_agent`` (``name`` = gfx arch, ``product_name``; CUs, wave size and max
  engine clock from its ``extdata``, the agent struct rocprofiler-sdk stores as JSON);
- counters: ``rocpd_pmc_event`` (one row per hardware instance) joined to its dispatch through
  ``event_id`` and named by ``rocpd_info_pmc``; summed per dispatch and counter, as the
  ``counters_collection`` view does, then the same rocprof-compute definitions as the JSON and CSV
  readers (rows are built by :func:`roofline.ingest.amd.rocprofv3.dispatch_rows`).

The file is untrusted: opened read-only (``mode=ro``, ``query_only``, ``trusted_schema = OFF``);
table names come from ``sqlite_master`` and are matched against a fixed pattern before use.
"""

from __future__ import annotations

import itertools
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from roofline.errors import CorruptReportError, FormatMismatchError, NoKernelsError
from roofline.ingest.amd import rocprofv3 as v3
from roofline.ingest.common import open_sqlite, provenance_record, sqlite_error, sqlite_tables
from roofline.ingest.validate import as_int, int_or_none, row_error
from roofline.schema import conform_kernels, kernel_dtypes, set_provenance

FORMAT = "rocpd"
SUFFIXES = (".db", ".rocpd")
_DISPATCH = re.compile(r"rocpd_kernel_dispatch((?:_[0-9A-Fa-f]+)*)")


def connect(path: Path) -> sqlite3.Connection:
    """Open read-only; a file that is not a readable SQLite database is a typed error naming it."""
    return open_sqlite(path)  # type: ignore[no-any-return]


def _names(con: sqlite3.Connection, kind: str = "table") -> set[str]:
    if kind == "table":  # what is read: ordinary tables only, never a view (the file author's query)
        return sqlite_tables(con)
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = ?", (kind,))}


def is_rocpd(path: str | Path) -> bool:
    """An SQLite file with rocpd tables (``rocpd_kernel_dispatch*`` or ``rocpd_metadata*``); nsys exports have none."""
    try:
        con = connect(Path(path))
    except Exception:  # noqa: BLE001 - a sniff never raises: the reader names the problem
        return False
    try:
        return any(n.startswith(("rocpd_kernel_dispatch", "rocpd_metadata", "rocpd_info_agent"))
                   for n in _names(con) | _names(con, "view"))
    finally:
        con.close()


def _suffixes(con: sqlite3.Connection) -> list[str]:
    """The UUID suffix of every process's table set (``""`` for an unsuffixed table)."""
    return sorted(m.group(1) for n in _names(con) if (m := _DISPATCH.fullmatch(n)))


def _require(path: Path, tables: set[str], name: str) -> str:
    if name not in tables:
        raise FormatMismatchError(path, f"is a rocpd database without the {name} table "
                                        "(was rocprofv3 run with --kernel-trace or --pmc?)")
    return name


def read(path: str | Path, definitions: str = "3.6") -> pd.DataFrame:
    path = Path(path)
    con = connect(path)
    try:
        tables = _names(con)
        suffixes = _suffixes(con)
        if not suffixes:
            what = "rocpd" if any(t.startswith("rocpd_") for t in tables) else "SQLite"
            raise FormatMismatchError(path, f"is an {what} database without a rocpd_kernel_dispatch_<uuid> table"
                                            " (no kernel dispatch was traced)")
        frames, copies, commands, meta_tags = [], 0, [], {}
        for s in suffixes:
            frame, n_copies, command, tags = _process(con, path, tables, s, definitions)
            if not frame.empty:
                frames.append(frame)
            copies += n_copies
            commands += [command] if command else []
            meta_tags = meta_tags or tags
    except sqlite3.DatabaseError as exc:
        raise sqlite_error(path, con, exc, "rocpd query failed") from None
    finally:
        con.close()
    if not frames:
        raise NoKernelsError(path, "no row in rocpd_kernel_dispatch (was rocprofv3 run with --kernel-trace?)")
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    n = len(frame)
    frame["kernel_id"] = pd.arrays.IntegerArray(np.arange(n, dtype=np.int64), np.zeros(n, dtype=bool))
    if not _canonical(frame):  # (one process's rows are: built by the schema's kernels_from_columns, no copy needed)
        frame = conform_kernels(frame)
    meta = provenance_record(path, FORMAT, tool="rocprofv3 (rocprofiler-sdk, rocpd)", reader=f"sqlite3 {sqlite3.sqlite_version}",
                             command_line=commands[0] if commands else None, processes=len(suffixes),
                             dispatches=len(frame), definitions=definitions, memory_copies=copies,
                             rocpd_schema_version=meta_tags.get("schema_version"), rocpd_guid=meta_tags.get("guid"))
    return set_provenance(frame, [meta])


def _canonical(frame: pd.DataFrame) -> bool:
    """Whether ``frame`` starts with the canonical columns, in order, of their canonical types (what
    :func:`conform_kernels` would make of it)."""
    dtypes = kernel_dtypes()
    return list(frame.columns[:len(dtypes)]) == list(dtypes) and \
        [str(t) for t in frame.dtypes.iloc[:len(dtypes)]] == list(dtypes.values())


def _json(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, (str, bytes)) and text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


_AGENT_COLUMNS = ("id", "type", "absolute_index", "logical_index", "name", "product_name", "extdata")


def _agents(path: Path, con: sqlite3.Connection, table: str) -> dict[int, v3.Agent]:
    out: dict[int, v3.Agent] = {}
    for aid, kind, absolute, logical, name, product, ext in con.execute(
            f'SELECT {", ".join(_AGENT_COLUMNS)} FROM "{table}"'):
        e = _json(ext)
        aid = as_int(path, f"{table}.id", aid)

        def count(key: str, value: Any, default: int = 0) -> int:  # extdata is JSON: any type may be there
            return as_int(path, f"{table}.extdata.{key}", value) if value not in (None, "") else default

        out[aid] = v3.Agent(
            id=v3.Handle(aid), type=2 if kind == "GPU" else 1, name=str(e.get("name") or name or ""),
            product_name=str(product or e.get("product_name") or ""), cu_count=count("cu_count", e.get("cu_count")),
            num_xcc=count("num_xcc", e.get("num_xcc")),
            wave_front_size=count("wave_front_size", e.get("wave_front_size")),
            max_engine_clk_fcompute=count("max_engine_clk_fcompute", e.get("max_engine_clk_fcompute")),
            node_id=as_int(path, f"{table}.absolute_index", absolute) if absolute is not None else aid,
            logical_node_id=(as_int(path, f"{table}.logical_index", logical) if logical is not None
                             else count("logical_node_id", e.get("logical_node_id"), aid)))
    return out


def _counter_rows(path: Path, con: sqlite3.Connection,
                  pmc_event: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The counter events as three arrays (event id, counter id, value), straight from ``fetchall`` into one float64 array (no
    ``pandas.read_sql`` conversion: at 50k dispatches, 1.4M rows, that conversion was 1.2 s of 3.9 s);
    a NULL value is NaN; a text or blob where a number belongs is a typed error naming the table."""
    raw = con.execute(f'SELECT event_id, pmc_id, value FROM "{pmc_event}"').fetchall()
    cols = ("event_id", "pmc_id", "value")
    try:  # (one pass over the tuples in C: 0.24 s for 1.4M rows, np.array of the tuples 0.58 s)
        arr = np.fromiter(itertools.chain.from_iterable(raw), dtype=np.float64, count=3 * len(raw)).reshape(-1, 3)
    except (TypeError, ValueError):  # NULLs (None), or damage: column by column, NULL as NaN
        obj = np.array(raw, dtype=object).reshape(-1, 3)
        out = {}
        for j, col in enumerate(cols):
            try:
                out[col] = np.array([np.nan if v is None else float(v) for v in obj[:, j]], dtype=np.float64)
            except (TypeError, ValueError):
                bad = next(v for v in obj[:, j] if v is not None and not isinstance(v, (int, float)))
                raise CorruptReportError(path, f"{pmc_event}.{col}: {bad!r} is not a number") from None
        arr = np.column_stack([out[c] for c in cols]) if len(obj) else np.empty((0, 3))
    if not np.isfinite(arr[:, :2]).all():
        raise CorruptReportError(path, f"{pmc_event}: an event_id or pmc_id that is not a finite number")
    return arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 2]  # (arrays: no frame to build)


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values, sort=True)`` of int64 ids without a hash table where it can: values in non-decreasing
    order (rocprofiler-sdk writes a dispatch's counter rows together, events in order) by adjacent comparison,
    small non-negative ones (counter ids) through a table of them."""
    if len(values) > 1 and (values[1:] >= values[:-1]).all():
        new = np.empty(len(values), dtype=bool)
        new[0], new[1:] = True, values[1:] != values[:-1]
        return np.cumsum(new) - 1, values[new]
    if len(values) and values.min() >= 0 and values.max() < 2 * len(values):
        present = np.bincount(values) > 0
        return (np.cumsum(present) - 1)[values], np.flatnonzero(present)
    return pd.factorize(values, sort=True)  # type: ignore[no-any-return]


def _distinct_runs(key: np.ndarray, distinct: int) -> bool:
    """Whether each key's rows are consecutive (what decides pandas' summing kernel, with NaN)."""
    return len(key) < 2 or int(np.count_nonzero(key[1:] != key[:-1])) + 1 == distinct


def _sums(key: np.ndarray, value: np.ndarray, groups: int) -> np.ndarray:
    """Σ of ``value`` per ``key`` (0 ≤ key < groups) into a grid of ``groups``, NaN where a key has no number:
    pandas' groupby sum (its compensated sum of each group's values in row order, or ``np.add.reduceat`` where
    each group's rows are consecutive and no value is NaN). A key that occurs once sums to its value, so only
    the others go through pandas: with the NaN and −0.0 values (a lone −0.0 sums to +0.0 in the compensated
    kernel), so that the rows given to pandas choose its kernel as all the rows would (else all go)."""
    grid = np.full(groups, np.nan)
    grid[key] = value  # (a key's last value; the keys summed below are then overwritten)
    zero = value == 0
    negative_zero = np.signbit(value[zero])
    if not negative_zero.any() and (len(key) < 2 or bool((key[1:] > key[:-1]).all())):
        return grid  # every key once, in order (one row per counter, as rocprofiler-sdk writes them)
    if groups > 2 * len(key):  # few of the event × counter cells filled: no count table that size, all to pandas
        rest = np.ones(len(key), dtype=bool)
    else:
        counts = np.bincount(key, minlength=groups)
        rest = np.isnan(value)
        rest[zero] = negative_zero
        rest |= counts[key] > 1
        if not rest.any():
            return grid
        if _distinct_runs(key[rest], np.count_nonzero(np.bincount(key[rest]))) != \
                _distinct_runs(key, np.count_nonzero(counts)):
            rest[:] = True
    if rest.all():
        sums = pd.Series(value).groupby(key, sort=False).sum(min_count=1)
    else:
        sums = pd.Series(value[rest]).groupby(key[rest], sort=False).sum(min_count=1)
    grid[sums.index.to_numpy()] = sums.to_numpy()
    return grid


def _counter_table(path: Path, con: sqlite3.Connection, pmc_event: str, pmc_info: str,
                   event_dispatch: dict[int, int]) -> pd.DataFrame | None:
    """Dispatch id × counter name: Σ over the instance rows (what the ``counters_collection`` view does),
    grouped in numpy/pandas rather than by the view's join, which SQLite runs row by row without an index."""
    names = {as_int(path, f"{pmc_info}.id", i): str(n) for i, n in con.execute(f'SELECT id, name FROM "{pmc_info}"')}
    event, pmc, value = _counter_rows(path, con, pmc_event)
    known = np.fromiter(event_dispatch, dtype=np.int64, count=len(event_dispatch))
    ecode, events = _codes(event)
    dispatched = np.isin(events, known)  # (per event, not per row)
    if not dispatched.all():  # counters of a dispatch this table has
        keep = dispatched[ecode]
        event, pmc, value = event[keep], pmc[keep], value[keep]
        ecode, events = _codes(event)
    if len(event) == 0:
        return None
    # Σ per (event, counter) on a single integer key (the same compensated sum over each group's values in row
    # order as a two-key groupby and unstack, at a fraction of their cost)
    pcode, pmcs = _codes(pmc)
    grid = _sums(ecode * len(pmcs) + pcode, value, len(events) * len(pmcs))
    order = np.argsort(known)  # each event's dispatch id, looked up in numpy (every event is known: kept above)
    dispatches = np.fromiter(event_dispatch.values(), dtype=np.int64, count=len(known))[order][
        np.searchsorted(known[order], events)]
    wide = pd.DataFrame(grid.reshape(len(events), len(pmcs)), index=pd.Index(dispatches),
                        columns=[names.get(int(c), f"pmc_id {c}") for c in pmcs])
    return wide.T.groupby(level=0).sum(min_count=1).T if wide.columns.duplicated().any() else wide


def _full_names(con: sqlite3.Connection, tables: set[str], s: str, kd: str, names: dict[int, str]) -> dict[int, str]:
    """Kernel id -> the full name of kernels whose symbol's display name is cut to a bare identifier
    (rocprofiler-sdk formats ``ck_tile::kentry<…>(…)`` as ``kentry``): the dispatch's region name in the string
    table, the full demangled name, where it holds the display name."""
    cut = {k for k, n in names.items() if re.fullmatch(r"[\w$.]+", n)}
    if not cut or f"rocpd_string{s}" not in tables:
        return {}
    try:
        rows = con.execute(f'SELECT DISTINCT K.kernel_id, S.string FROM "{kd}" K JOIN "rocpd_string{s}" S '
                           "ON S.id = K.region_name_id").fetchall()
    except sqlite3.DatabaseError:  # (an older schema without region names)
        return {}
    out: dict[int, str] = {}
    for k, full in rows:
        if k is not None and int(k) in cut and isinstance(full, str) and names[int(k)] in full and full != names[int(k)]:
            out.setdefault(int(k), full)
    return out


#: the dispatch table's columns read: the rows' fields (named as the table names them) and the counters' event
_DISPATCH_COLUMNS = (*v3.DISPATCH_FIELDS, "event_id")


def _quoted(name: str) -> str:
    return f'"{name}"'


def _int64(v: Any) -> int:
    """An SQLite integer as stored, else a number that is exactly an int64 (SQLite columns hold any type)."""
    if v.__class__ is int and -(2**63) <= v < 2**63:
        return v  # type: ignore[no-any-return]
    out = int_or_none(v)
    if out is None:
        raise ValueError(f"{v!r} is not an integer")
    return out


def _dispatch_columns(raw: list[tuple[Any, ...]]) -> tuple[dict[str, np.ndarray], dict[int, int]] | None:
    """The dispatch rows as int64 columns in one pass in C, when every value is an SQLite integer within 64 bits
    (what rocprofiler-sdk writes; a Python object per dispatch was most of the read at 50k dispatches); None
    otherwise (a NULL, a text, an overflow): :func:`_checked_columns` then says which, or fills the defaults."""
    flat = itertools.chain.from_iterable(raw)
    if not all(t is int for t in set(map(type, itertools.chain.from_iterable(raw)))):
        return None
    try:
        arr = np.fromiter(flat, dtype=np.int64, count=len(raw) * len(_DISPATCH_COLUMNS))
    except OverflowError:
        return None
    arr = arr.reshape(-1, len(_DISPATCH_COLUMNS))
    columns = {f: arr[:, j] for j, f in enumerate(v3.DISPATCH_FIELDS)}
    events = arr[:, len(v3.DISPATCH_FIELDS)]
    return columns, dict(zip(events.tolist(), columns["dispatch_id"].tolist()))


def _checked_columns(path: Path, kd: str, raw: list[tuple[Any, ...]]) -> tuple[dict[str, np.ndarray], dict[int, int]]:
    """The dispatch rows value by value: a NULL queue is 0, a NULL size 1, a value that is not an int64 a typed
    error naming its column."""
    disp, event_dispatch = [], {}
    for row in raw:
        try:
            r = [_int64(v) if v is not None else None for v in row]  # ints, or a typed error naming the column
            disp.append(v3.Dispatch(start_timestamp=r[0], end_timestamp=r[1], dispatch_info=v3.DispatchInfo(
                agent_id=v3.Handle(r[2]), queue_id=v3.Handle(r[3] or 0), kernel_id=r[4],
                dispatch_id=r[5], workgroup_size=v3.Dim3(*(x if x is not None else 1 for x in r[6:9])),
                grid_size=v3.Dim3(*(x if x is not None else 1 for x in r[9:12])))))
        except (TypeError, ValueError, OverflowError) as exc:
            raise row_error(path, kd, _DISPATCH_COLUMNS, row, exc) from None
        if r[12] is not None:
            event_dispatch[r[12]] = r[5]
    try:
        return v3.dispatch_columns(disp), event_dispatch
    except (TypeError, ValueError, OverflowError) as exc:  # a NULL start, end, agent, kernel or dispatch id
        raise CorruptReportError(path, f"{kd}: {v3.bad_field(disp, {}) or exc}") from None


def _process(con: sqlite3.Connection, path: Path, tables: set[str], s: str,
             definitions: str) -> tuple[pd.DataFrame, int, str | None, dict[str, str]]:
    kd = _require(path, tables, f"rocpd_kernel_dispatch{s}")
    agents = _agents(path, con, _require(path, tables, f"rocpd_info_agent{s}"))
    sym = _require(path, tables, f"rocpd_info_kernel_symbol{s}")
    names = {as_int(path, f"{sym}.id", k): str(d or m or f"kernel_id {k}")
             for k, d, m in con.execute(f'SELECT id, display_name, kernel_name FROM "{sym}"')}
    names.update(_full_names(con, tables, s, kd, names))
    raw = con.execute(f'SELECT {", ".join(map(_quoted, _DISPATCH_COLUMNS))} FROM "{kd}"').fetchall()
    columns, event_dispatch = _dispatch_columns(raw) or _checked_columns(path, kd, raw)
    per_dispatch = None
    pmc_event, pmc_info = f"rocpd_pmc_event{s}", f"rocpd_info_pmc{s}"
    if pmc_event in tables and pmc_info in tables:
        per_dispatch = _counter_table(path, con, pmc_event, pmc_info, event_dispatch)
    rows = v3.column_rows(path, FORMAT, columns, names, agents, per_dispatch, definitions, kd, f"{pmc_event} (rocpd)")
    copies = (con.execute(f'SELECT count(*) FROM "rocpd_memory_copy{s}"').fetchone()[0]
              if f"rocpd_memory_copy{s}" in tables else 0)
    command = None
    if f"rocpd_info_process{s}" in tables:
        got = con.execute(f'SELECT command FROM "rocpd_info_process{s}" LIMIT 1').fetchone()
        command = str(got[0]) if got and got[0] else None
    tags: dict[str, str] = {}
    if f"rocpd_metadata{s}" in tables:
        tags = {str(t): str(v) for t, v in con.execute(f'SELECT tag, value FROM "rocpd_metadata{s}"')}
    return rows, int(copies), command, tags
