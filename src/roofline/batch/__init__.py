"""Stage 5: many profiles into one Parquet dataset, on local processes or a Dask cluster.

``run_batch`` drives the work, ``worker.process_chunk`` is the unit of work (a chunk of inputs),
``pool`` and ``cluster`` run it (local processes, Dask), ``parts`` writes a chunk's rows, ``dataset`` owns the
layout on disk and ``open_dataset`` reads it back, ``compact`` rewrites it as one file per table.
"""

from __future__ import annotations

from roofline.batch.dataset import DatasetError, is_dataset, iter_live, open_dataset
from roofline.batch.pool import Limits
from roofline.batch.runner import BatchSummary, DaskSettings, find_inputs, run_batch
from roofline.batch.worker import Options

__all__ = ["BatchSummary", "DaskSettings", "DatasetError", "Limits", "Options", "find_inputs", "is_dataset",
           "iter_live", "open_dataset", "run_batch"]
