"""A dataset's texts read packed: Parquet's dictionaries kept as Arrow dictionary columns, decoded once at the end.

A kernel row holds ~40 texts (names, a device, a format, the source of each figure and roof), ~3 KB a row
decoded, whose values repeat across rows: decoding them in the Parquet scan was most of a dataset read's memory
and time, and the sort and the live-row filter that follow copied them again. Read as dictionaries, those
steps move int32 indices; :func:`decoded` then writes each column's texts once, as the large strings pandas'
Arrow-backed ``string`` dtype holds, so the frames are those of a read of plain strings.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from roofline.schema import COLUMN_POOL

#: columns that stay plain strings: the live-row bookkeeping compares and joins them
PLAIN_TEXT = ("file_id", "run", "part")
_TEXT = pa.dictionary(pa.int32(), pa.string())


def packed_format(schema: pa.Schema) -> tuple[pa.Schema, ds.ParquetFileFormat]:
    """``schema`` with its text columns but :data:`PLAIN_TEXT` as dictionaries, and the Parquet format that
    reads them so."""
    packed = pa.schema([pa.field(f.name, _TEXT, f.nullable) if f.type == pa.string() and f.name not in PLAIN_TEXT
                        else f for f in schema], metadata=schema.metadata)
    texts = [f.name for f in packed if pa.types.is_dictionary(f.type)]
    return packed, ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns=texts))


def unpacked(t: pa.Table) -> pa.Table:
    """``t`` with its dictionary columns decoded to plain strings, as the table's schema has them."""
    return _decoded_as(t, pa.string(), pa.default_memory_pool())


def decoded(t: pa.Table) -> pa.Table:
    """``t`` with its dictionary columns as large strings (no cast left for pandas), in the C allocator's memory
    as the readers' frames (:data:`roofline.schema.COLUMN_POOL`): freed columns go back to the system, where
    Arrow's own pool kept their pages for itself."""
    return _decoded_as(t, pa.large_string(), COLUMN_POOL)


def _decoded_as(t: pa.Table, text: pa.DataType, pool: pa.MemoryPool) -> pa.Table:
    """``t`` with its dictionary columns cast to ``text`` in ``pool``'s memory; the fields' names and nullability
    and the schema's metadata are kept."""
    if not any(pa.types.is_dictionary(f.type) for f in t.schema):
        return t
    return pa.table([pc.cast(c, text, memory_pool=pool) if pa.types.is_dictionary(c.type) else c for c in t.columns],
                    schema=pa.schema([pa.field(f.name, text, f.nullable) if pa.types.is_dictionary(f.type) else f
                                      for f in t.schema], metadata=t.schema.metadata))
