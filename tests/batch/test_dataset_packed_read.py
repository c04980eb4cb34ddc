"""A dataset's kernel rows read as pandas frames keep their texts as Arrow dictionaries until each column is
decoded once (issue 36: the Parquet decode of ~40 texts a row was most of a dataset read's memory). The
frames are those of a read of plain strings: checked against a read that takes the plain path (a filter that
keeps every row), on a dataset with parts, an input read again and a failed input, before and after
compaction."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from conftest import OWN, shared
from roofline.batch import compact as cmp
from roofline.batch import dataset as dset
from roofline.batch import open_dataset, run_batch
from roofline.batch.packed import decoded, unpacked

#: the shared ones through ``shared()``: skipped without ../shared, failed under CI
_SHARED_INPUTS = ("ncu/sm70_v100_cutlass-cublas-gemm_roofline-metrics.csv",
                  "traces/torch_a100_alexnet_train_small.pt.trace.json.gz")
_N_INPUTS = 1 + len(_SHARED_INPUTS)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two batches into one folder, not compacted: several parts, the first input read again (stale rows in
    the first batch's part) and an input that fails."""
    folder = tmp_path_factory.mktemp("packed")
    inputs = folder / "in"
    inputs.mkdir()
    sources = [OWN / "tiny_metrics.csv", *(shared(rel) for rel in _SHARED_INPUTS)]
    files = [Path(shutil.copyfile(p, inputs / p.name)) for p in sources]
    (inputs / "bad.csv").write_text("not a profile\n")
    root = folder / "ds"
    run_batch([*files, inputs / "bad.csv"], root, workers=1, compact=False)
    shutil.copyfile(sources[1], files[0])  # new content at the same path: read again by the next batch
    run_batch([files[0]], root, workers=1, compact=False)
    return root


def _every_row() -> ds.Expression:
    return ds.field("row") >= 0  # a filter keeps the texts plain: the read packs nothing


@pytest.mark.parametrize("table", ["roofline", "kernels"])
def test_a_packed_read_gives_the_frame_a_plain_read_gives(dataset, table):
    packed = open_dataset(dataset, table)
    plain = open_dataset(dataset, table, filter=_every_row())
    assert len(packed) > 0 and packed["source_file"].nunique() == _N_INPUTS
    pd.testing.assert_frame_equal(packed, plain, check_exact=True)
    assert packed.attrs == plain.attrs
    assert str(packed["kernel_name"].dtype) == "string" and packed["kernel_name"].array._pa_array.type == pa.large_string()


def test_a_packed_read_of_a_compacted_dataset_gives_the_same_frames(dataset, tmp_path):
    before = {t: open_dataset(dataset, t) for t in ("roofline", "kernels")}
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    cmp.compact(copy)
    for t, frame in before.items():
        pd.testing.assert_frame_equal(open_dataset(copy, t), frame, check_exact=True, obj=t)


def test_packed_tables_hold_texts_as_dictionaries_but_the_keys_and_decode_to_the_plain_table(dataset):
    live = dset.live_state(dataset)
    packed = dset.live_table(dataset, "roofline", live, packed=True)
    plain = dset.live_table(dataset, "roofline", live)
    texts = [f.name for f in packed.schema if pa.types.is_dictionary(f.type)]
    assert "kernel_name" in texts and "device_name" in texts
    assert not {"file_id", "run", "part"} & set(texts)
    assert unpacked(packed).equals(plain)


def test_a_packed_table_decoded_is_the_plain_table_with_its_texts_as_large_strings(dataset):
    """What a frame is built from: each dictionary column's texts as the large strings pandas holds, every other
    column as read."""
    live = dset.live_state(dataset)
    packed = dset.live_table(dataset, "roofline", live, packed=True)
    plain = dset.live_table(dataset, "roofline", live)
    out = decoded(packed)
    texts = {f.name for f in packed.schema if pa.types.is_dictionary(f.type)}
    assert [f.type for f in out.schema] == [pa.large_string() if f.name in texts else f.type for f in plain.schema]
    assert out.cast(plain.schema).equals(plain)


def test_rows_of_packed_tables_that_do_not_line_up_are_joined_as_plain_ones(dataset):
    """The kernels and roofline rows of a part are placed side by side when their keys agree row by row;
    otherwise joined, which Arrow does not do on dictionary columns: the packed rows are decoded for it."""
    live = dset.live_state(dataset)
    keys = ["file_id", "row", "part"]
    kernels = dset.row_table(dataset, "kernels", live, None, None, packed=True)
    roof = dset.row_table(dataset, "roofline", live, None, None, packed=True)
    roof = roof.drop_columns([c for c in roof.column_names if c in kernels.column_names and c not in keys])
    shuffled = roof.take(pa.array(range(roof.num_rows - 1, -1, -1)))
    joined = dset._side_by_side(kernels, shuffled, keys)
    aligned = unpacked(dset._side_by_side(kernels, roof, keys)).select(joined.column_names)
    order = [(k, "ascending") for k in keys]
    assert joined.num_rows == kernels.num_rows
    assert joined.sort_by(order).cast(aligned.schema).equals(aligned.sort_by(order))


def test_a_filter_with_a_string_function_reads_plain_texts(dataset):
    """Arrow has no dictionary kernel for ``starts_with``: a filtered read keeps plain strings."""
    got = open_dataset(dataset, filter=pc.starts_with(ds.field("format"), "ncu"))
    every = open_dataset(dataset)
    assert 0 < len(got) < len(every)
    assert set(got["format"]) == {f for f in every["format"].unique() if f.startswith("ncu")}
