"""Batch datasets carry the collectives' columns typed, null on the rows that are not collectives, and equal to a
direct analysis (with a --links file that travels to the workers)."""

from __future__ import annotations

import pandas as pd
import pytest

import roofline
from conftest import shared
from roofline.batch import Options, open_dataset, run_batch
from roofline.batch.dataset import table_dtypes

B200 = "traces/torch_cuda12.9_b200_8rank-nccl_eager_rank0.pt.trace.json.gz"
ALEXNET = "traces/torch_a100_alexnet_train_small.pt.trace.json.gz"
KERNEL_COLUMNS = {"collective": "string", "message_bytes": "float64", "group_size": "Int64", "process_group": "string",
                  "comm_exposed_s": "float64", "comm_overlapped_s": "float64"}
ROOFLINE_COLUMNS = {"algorithm_bandwidth_bytes_per_s": "float64", "bus_bandwidth_bytes_per_s": "float64",
                    "bus_factor": "float64", "link_roof_bytes_per_s": "float64", "link_roof_bytes_per_s_source": "string",
                    "link_placement": "string", "pct_of_link_roof": "float64"}


def test_the_dataset_schema_types_the_collective_columns():
    kernels, roof = table_dtypes("kernels"), table_dtypes("roofline")
    assert {c: kernels[c] for c in KERNEL_COLUMNS} == KERNEL_COLUMNS
    assert {c: roof[c] for c in ROOFLINE_COLUMNS} == ROOFLINE_COLUMNS


def test_a_batch_of_a_collective_trace_and_another_equals_a_direct_analysis(tmp_path):
    links = tmp_path / "links.toml"
    links.write_text("[placement]\ngpus_per_node = 4\n[inter_node]\nunidirectional_bytes_per_s = 2.5e10\n"
                     "source = 'a test figure'\n")
    paths = [shared(B200), shared(ALEXNET)]
    summary = run_batch(paths, tmp_path / "ds", workers=1, opts=Options(links=str(links)))
    assert summary.failed == 0
    roof = open_dataset(tmp_path / "ds", "roofline")
    coll = roof[roof["collective"].notna()]
    assert len(coll) == 1 and (coll["source_file"] == str(paths[0])).all()
    other = roof[roof["source_file"] == str(paths[1])]
    assert other["collective"].isna().all() and other["bus_bandwidth_bytes_per_s"].isna().all()
    direct = roofline.run([paths[0]], links=str(links)).frame
    d = direct[direct["collective"].notna()].iloc[0]
    r = coll.iloc[0]
    for c in ("message_bytes", "algorithm_bandwidth_bytes_per_s", "bus_bandwidth_bytes_per_s", "link_roof_bytes_per_s",
              "pct_of_link_roof", "comm_exposed_s"):
        assert r[c] == pytest.approx(d[c])
    assert r["link_placement"].startswith("inter-node (2 nodes)")  # ranks 0-7 over nodes of 4: the --links file
    assert pd.isna(other["link_placement"]).all()
