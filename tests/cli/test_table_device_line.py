"""The table view's device line (``ingest.amd.arch.device_labels``) labels the devices from one row per distinct (device,
format, CC, SM count): the labels every row gives, whatever the mix of AMD and NVIDIA rows, missing names and
SM counts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from roofline.ingest.amd.arch import _label_rows, device_labels


def _mixed(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    kind = rng.integers(0, 6, n)
    return pd.DataFrame({
        "device_name": pd.array(np.array(["A100-SXM4-40GB", "MI210", "AMD Instinct MI300X", None, "MI300X", "T4"],
                                         dtype=object)[kind], dtype="string"),
        "format": pd.array(np.array(["ncu-rep", "rocprof-compute", "torch-trace", "ncu-csv", "xplane", "ncu-csv"],
                                    dtype=object)[kind], dtype="string"),
        "compute_capability": pd.array(np.array(["8.0", "gfx90a", "9.0", None, None, "7.5"], dtype=object)[kind],
                                       dtype="string"),
        "sm_count": np.array([108.0, 104.0, 304.0, np.nan, np.nan, 40.0])[kind],
        "duration_s": rng.random(n),
    }, index=rng.permutation(n) + 1000)


def test_the_distinct_rows_give_the_labels_every_row_gives():
    frame = _mixed()
    frame.loc[frame.index[:5], "sm_count"] = np.nan  # the same device with and without its SM count
    rows = _label_rows(frame)
    assert len(rows) < len(frame) // 10
    assert device_labels(rows) == device_labels(frame)
    assert "MI210 (104 CUs)" in device_labels(rows) and "A100-SXM4-40GB (108 SMs)" in device_labels(rows)


def test_a_frame_with_repeated_index_labels_is_read_whole():
    frame = _mixed(20)
    frame.index = [0] * len(frame)
    assert _label_rows(frame) is frame
