"""The hand-kept column lists of the report's faster paths hold every column their code reads: a column read but not
listed would be missing from the narrowed frame, and the output would change without an error."""

from __future__ import annotations

import inspect
import re

from roofline.analysis.coverage import has_point
from roofline.analysis.headline import REASON_COLUMNS, narrow, reasons, row_facts
from roofline.report import comm_chart


def _bundled_frame():
    from roofline import samples
    from roofline.pipeline import Options, run

    return run([str(p) for p in samples.paths()], Options()).frame


def test_reasons_given_their_causes_read_only_the_reason_columns():
    frame = _bundled_frame()
    facts = row_facts(frame)
    missing = ~has_point(frame).to_numpy() & (facts.kinds != "idle")
    assert missing.any()  # (the bundled trace's unmodelled ops)
    why = (facts.reason[missing], facts.fix[missing])
    rows = narrow(frame)[missing]
    gpu = float(frame["duration_s"].sum())
    whole = reasons(rows, gpu, why)
    assert whole and reasons(rows[[c for c in REASON_COLUMNS if c in rows]], gpu, why) == whole


def test_the_communication_data_lists_every_column_it_reads():
    source = inspect.getsource(comm_chart.comm_data)
    # the rows are read as r.get("x") / r["x"], the frame of collectives as c["x"] / "x" in c
    read = set(re.findall(r'\br(?:\.get\(|\[)"([a-z_]+)"', source))
    read |= set(re.findall(r'\bc\["([a-z_]+)"\]', source)) | set(re.findall(r'"([a-z_]+)" in c\b', source))
    assert {"collective", "message_bytes", "rank"} <= read  # (the patterns still find the reads)
    assert read <= set(comm_chart._READ), sorted(read - set(comm_chart._READ))
