"""Stage 5: many profiles into one Parquet dataset, on local processes or a Dask cluster.

``run_batch`` drives the work, ``worker.process_file`` is the unit of work (one input file),
``dataset`` owns the layout on disk and ``open_dataset`` reads it back.
"""

from __future__ import annotations

from roofline.batch.dataset import DatasetError, is_dataset, open_dataset
from roofline.batch.runner import BatchSummary, find_inputs, run_batch
from roofline.batch.worker import Options

__all__ = ["run_batch", "open_dataset", "is_dataset", "find_inputs", "Options", "BatchSummary", "DatasetError"]
