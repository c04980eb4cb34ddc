"""Per-row text (notes, sources) for a million rows without a Python loop per row.

Text in a roofline frame depends on a few flags and on source strings that repeat across kernels.
Rows are grouped by everything a text depends on (small integer keys), each group's text is
rendered once from a representative row, and the column is a Categorical of the results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from roofline.frames import column_array, group_ids


def float_column(frame: pd.DataFrame, name: str) -> np.ndarray | None:
    """A float64 column's values as a read-only view, taken without a Series (a column read is ~20-40 µs on a
    kernels frame, a fixed cost per input); None where the column is absent, of another dtype or not unique."""
    values = column_array(frame, name)
    if not (isinstance(values, np.ndarray) and values.dtype == np.float64):
        return None
    view = values.view()
    view.flags.writeable = False  # (read only, as Series.to_numpy hands it out)
    return view


class Factor:
    """A string column as integer keys (0 for missing) and its distinct values (key k: ``values[k - 1]``).

    ``rows``: a boolean mask of the rows whose text can be asked for; the others get key 0 without
    their strings being hashed (hashing a million strings is most of the cost of a text column, and
    most sources are only quoted by the rare rows a note is about). Keys only group rows: any
    numbering of the distinct values gives the same rendered texts. int32: half the memory to fill."""

    def __init__(self, frame: pd.DataFrame, column: str, rows: np.ndarray | None = None) -> None:
        n = len(frame)
        self.values: list[str] = []
        self._codes: np.ndarray | None = None
        if column not in frame:
            self._keys = np.zeros(n, dtype=np.int32)
            return
        col = frame[column]
        if rows is not None and np.count_nonzero(rows) * 4 < n:  # a few rows: copying them out costs less than hashing all
            self._keys = np.zeros(n, dtype=np.int32)
            picked = np.flatnonzero(rows)
            if len(picked):
                self._keys[picked], self.values = _factorize_at(col, picked)
        else:
            self._keys, self.values = _factorize(col)

    @property
    def codes(self) -> np.ndarray:
        """Codes into ``values``, -1 for missing (or not read)."""
        if self._codes is None:
            self._codes = self._keys.astype(np.int64) - 1
        return self._codes

    def key_at(self, rows: np.ndarray) -> np.ndarray:
        return self._keys[rows]

    def key(self) -> np.ndarray:
        """Non-negative keys (0 = missing), usable as a group key."""
        return self._keys

    def text(self, row: int, missing: str = "") -> str:
        k = int(self._keys[row])
        return self.values[k - 1] if k > 0 else missing


class Source:
    """A string column read only where asked: group keys for some rows, the text of one row."""

    def __init__(self, frame: pd.DataFrame, column: str) -> None:
        self.col = frame.get(column)
        self._arrow: tuple[pa.Array | None] | None = None  # the column as one Arrow array, once asked for

    @property
    def _whole(self) -> pa.Array | None:
        if self._arrow is None:
            self._arrow = (_arrow(self.col) if self.col is not None else None,)
        return self._arrow[0]

    def key_at(self, rows: np.ndarray) -> np.ndarray:
        """Keys (0 = missing) of the strings at ``rows`` (positions), numbered for these rows only."""
        if self.col is None or not len(rows):
            return np.zeros(len(rows), dtype=np.int32)
        return _factorize_at(self.col, rows, self._whole)[0]

    def starts_with(self, rows: np.ndarray, prefix: str) -> np.ndarray:
        """Whether the string at each of ``rows`` starts with ``prefix`` (missing: False). On Arrow
        strings, the prefix bytes are compared in the column's buffers: no string is copied out."""
        if self.col is None or not len(rows):
            return np.zeros(len(rows), bool)
        whole = self._whole
        if whole is None or not (pa.types.is_string(whole.type) or pa.types.is_large_string(whole.type)):
            return self.col.iloc[rows].astype(object).map(lambda x: isinstance(x, str) and x.startswith(prefix)).to_numpy(bool)
        _, off_buf, data_buf = whole.buffers()
        offsets = np.frombuffer(off_buf, np.int64 if pa.types.is_large_string(whole.type) else np.int32)
        offsets = offsets[whole.offset:whole.offset + len(whole) + 1]
        data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
        want = np.frombuffer(prefix.encode(), np.uint8)
        start = offsets[rows]
        ok = offsets[rows + 1] - start >= len(want)
        if not len(data):
            return ok & (len(want) == 0)
        if 0 < len(want) <= 8 <= len(data):
            ok &= _prefix_word(data, start, len(want)) == int.from_bytes(want.tobytes(), "little")
            if whole.null_count:
                ok &= whole.is_valid().to_numpy(zero_copy_only=False)[rows]
            return ok
        for k, byte in enumerate(want):
            ok &= data[np.minimum(start + k, len(data) - 1)] == byte  # a shorter string is already False
        if whole.null_count:
            ok &= whole.is_valid().to_numpy(zero_copy_only=False)[rows]
        return ok

    def text(self, row: int, missing: str = "") -> str:
        if self.col is None:
            return missing
        v = self.col.iloc[row]
        return missing if pd.isna(v) else str(v)


def _prefix_word(data: np.ndarray, start: np.ndarray, size: int) -> np.ndarray:
    """The ``size`` (1-8) bytes of ``data`` from each of ``start``, as little-endian integers: one gather
    of 8-byte words (an unaligned view), not one per byte. A start in the last 7 bytes reads the last
    word, shifted; bytes past the data's end read as 0 (a shorter string is ruled out by its length)."""
    words = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    at = np.minimum(start, len(data) - 8)
    word = words[at] >> ((start - at).astype(np.uint64) * np.uint64(8))
    return word & np.uint64((1 << (8 * size)) - 1) if size < 8 else word


def _arrow(col: pd.Series) -> pa.Array | None:
    """An Arrow-backed string column as one Arrow array (None for any other column)."""
    if not (isinstance(col.dtype, pd.StringDtype) and col.dtype.storage == "pyarrow"):
        return None
    chunked = pa.chunked_array(col.array.__arrow_array__())
    return chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)


def _factorize(col: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Keys (int32, 0 for missing, k for ``values[k - 1]``) and distinct values by first appearance,
    as ``pd.factorize``."""
    whole = _arrow(col)
    if whole is not None:
        return _factorize_arrow(whole)
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    keys = np.asarray(codes).astype(np.int32)
    keys += 1
    return keys, [str(u) for u in uniques]


def _factorize_at(col: pd.Series, rows: np.ndarray, whole: pa.Array | None = None) -> tuple[np.ndarray, list[str]]:
    """:func:`_factorize` of the strings at ``rows`` (positions); ``whole``: the column as Arrow, if known.
    Arrow-backed strings are taken by Arrow (no pandas indexing round trip)."""
    whole = whole if whole is not None else _arrow(col)
    return _factorize_arrow(whole.take(rows)) if whole is not None else _factorize(col.iloc[rows])


def _factorize_arrow(whole: pa.Array) -> tuple[np.ndarray, list[str]]:
    """:func:`_factorize` of Arrow strings: Arrow's own hash on the column's buffers, no pandas round trip."""
    if whole.null_count < len(whole):
        # no nulls (the common case): no validity bitmap to unpack
        valid = whole.is_valid().to_numpy(zero_copy_only=False) if whole.null_count else None
        first = whole[int(np.argmax(valid)) if valid is not None else 0]
        if pc.all(pc.equal(whole, first)).as_py():  # nulls skipped
            # one distinct value (a source every kernel quotes): a comparison, 4x cheaper than hashing
            keys = valid.astype(np.int32) if valid is not None else np.ones(len(whole), np.int32)
            return keys, [first.as_py()]
    enc = whole.dictionary_encode()
    keys = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)
    keys += 1
    return keys, [str(v) for v in enc.dictionary.to_pylist()]


def flag_word(flags: Sequence[np.ndarray]) -> np.ndarray:
    """Boolean columns packed into one integer key per row (bit j = column j): one group-key part
    instead of one per flag (each part costs passes in :func:`group_ids`). Eight flags are packed
    per byte on one-byte arrays, then the bytes are read as one word."""
    if len(flags) > 62:  # 62 bits: a non-negative int64
        raise ValueError(f"{len(flags)} flags do not fit one key word")
    n = len(flags[0]) if flags else 0
    width = 4 if len(flags) <= 32 else 8
    packed = np.zeros((n, width), np.uint8)
    for g in range(0, len(flags), 8):
        byte = np.zeros(n, np.uint8)
        for j, f in enumerate(flags[g:g + 8]):
            byte |= np.asarray(f, dtype=bool).view(np.uint8) << np.uint8(j)
        packed[:, g // 8] = byte
    return packed.view(np.uint32 if width == 4 else np.int64)[:, 0]


def render(parts: Sequence[np.ndarray], n: int, fn: Callable[[int], str | None]) -> pd.Categorical:
    """A Categorical whose value for each row is ``fn(first row of its group)`` (None = missing)."""
    return render_each(parts, n, [fn])[0]


def render_each(parts: Sequence[np.ndarray], n: int, fns: Sequence[Callable[[int], str | None]]) -> list[pd.Categorical]:
    """:func:`render` for several texts that depend on (at most) the same parts: one grouping for all."""
    if n == 0:
        return [categorical(np.zeros(0, np.int8), []) for _ in fns]
    ids, first = group_ids(parts, n)
    return [_categorical(ids, first, fn) for fn in fns]


def render_rare(common: Sequence[np.ndarray], rare: np.ndarray, rare_parts: Callable[[np.ndarray], Sequence[np.ndarray]],
                n: int, fn: Callable[[int], str | None]) -> pd.Categorical:
    """:func:`render` for text that depends on the ``common`` parts alone except on the ``rare`` rows (a
    boolean mask), whose keys ``rare_parts(rows)`` are built for those rows only (arrays over ``rows``).

    The same Categorical as ``render`` over all the keys (most parts of a note are about the few rows
    with an absent level or a bad duration): packing twenty keys over a million rows was most of its cost."""
    if n == 0:
        return categorical(np.zeros(0, np.int8), [])
    ids, first = group_ids([rare, *common], n)
    rows = np.flatnonzero(rare)
    if len(rows):
        keep = ~rare[first]  # groups of rare rows are regrouped below by their own keys
        ids = (np.cumsum(keep) - 1)[ids]
        sub_ids, sub_first = group_ids(rare_parts(rows), len(rows))
        ids[rows] = int(keep.sum()) + sub_ids
        first = np.concatenate([first[keep], rows[sub_first]])
    return _categorical(ids, first, fn)


def _categorical(ids: np.ndarray, first: np.ndarray, fn: Callable[[int], str | None]) -> pd.Categorical:
    """Group ``g`` (rows ``ids == g``) gets ``fn(first[g])``; categories by first appearance in the rows."""
    categories: list[str] = []
    index: dict[str, int] = {}
    order = np.argsort(first, kind="stable")
    texts = [fn(int(first[g])) for g in order]
    # codes in the dtype the Categorical keeps (int8 up to 127 categories): no conversion of a million codes
    dtype = np.int8 if len(texts) < 2**7 else np.int16 if len(texts) < 2**15 else np.int32
    remap = np.empty(len(first), dtype=dtype)
    for g, t in zip(order, texts):
        if t is None:
            remap[g] = -1
            continue
        if t not in index:
            index[t] = len(categories)
            categories.append(t)
        remap[g] = index[t]
    return categorical(remap[ids], categories)


def by_position(s: pd.Series, whole: bool) -> Any:
    """The column indexable by row position, each value the very one ``s.iat[r]`` gives (a numpy scalar, a str, NA):
    ``iat`` costs ~20-40 us a call, and a small frame's texts read every row of a dozen columns. ``whole``: all rows
    will be read (a few): the values are taken out in one pass; else each is read from the array when asked."""
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "fiubO":
        return s.to_numpy()
    return list(s.array) if whole else s.array


def fixed(codes: np.ndarray, categories: Sequence[str]) -> pd.Categorical:
    """A Categorical from codes into a fixed, known list of values."""
    codes = np.asarray(codes)
    return categorical(codes if codes.dtype.kind == "i" else codes.astype(np.int64), categories)


#: category lists this long or shorter have their dtype cached (longer ones, a trace's many notes, are rarely repeated)
_CACHED_CATEGORIES = 64


@lru_cache(maxsize=1024)
def _dtype(categories: tuple[str, ...]) -> pd.CategoricalDtype:
    return pd.CategoricalDtype(list(categories))


def categorical(codes: np.ndarray, categories: Sequence[str]) -> pd.Categorical:
    """``pd.Categorical.from_codes(codes, categories=categories)``, its dtype shared by every call with the same few
    categories: building one (an Index of the strings, checked for uniqueness) costs ~0.1-0.3 ms, a dozen per
    analysed input, which is most of a one-kernel input's text columns."""
    key = tuple(categories)
    dtype = _dtype(key) if len(key) <= _CACHED_CATEGORIES else pd.CategoricalDtype(list(key))
    return pd.Categorical.from_codes(codes, dtype=dtype)


def as_string(cat: pd.Categorical, index: pd.Index) -> pd.Series:
    """A Categorical as a ``string`` Series, decoded by Arrow (pandas' own astype goes through Python objects)."""
    # pandas' default string dtype is Arrow large_string
    return pd.Series(pd.arrays.ArrowStringArray(pa.array(cat).cast(pa.large_string())), index=index)
