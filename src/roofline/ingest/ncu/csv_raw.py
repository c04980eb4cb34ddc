"""The wide Nsight Compute CSV (``ncu --csv --page raw``): one row per launch, one column per metric.

Its header has the launch's identity columns (``"ID","Process ID",…,"Device","CC"``) then every metric the
report holds by name (ncu 2025.2 writes ~600); the next row holds each metric's unit (empty under the
identity columns); then one row per profiled launch. It carries the same metrics as the report, so it is
read as the long export is: each wide row is turned into the long records (``Metric Name``, ``Metric
Unit``, ``Metric Value``) that :mod:`roofline.ingest.ncu.csv_export` reads, units converted the same way.
"""

from __future__ import annotations

from pathlib import Path

from roofline.errors import CorruptReportError

#: the identity columns ncu writes before the metrics (ncu 2021–2025)
IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
            "Grid Size", "Device", "CC")
SECTION = "raw page"


def is_wide(header: list[str]) -> bool:
    """A raw-page header: the identity columns, then metric names (no ``Metric Name`` column)."""
    return "Metric Name" not in header and "Kernel Name" in header and len(header) > header.index("Kernel Name") + 1


def long_records(path: Path, header: list[str], rows: list[list[str]], numbers: list[int]) -> list[dict[str, str]]:
    """The long records of a raw-page export: one per (launch, metric), identity columns repeated. The first
    row after the header is the units row (its identity cells are empty, as ncu writes it)."""
    ident = [c for c in header if c in IDENTITY]
    first = max(header.index(c) for c in ident) + 1 if ident else 0
    metrics = header[first:]
    if not rows:
        return []
    units, data = rows[0], rows[1:]
    if any(units[i].strip() for i in range(min(first, len(units)))):
        raise CorruptReportError(path, f"wide CSV (--page raw) without its units row: line {numbers[1]} holds "
                                       "values under the launch columns")
    unit_of = [units[first + j] if first + j < len(units) else "" for j in range(len(metrics))]
    out: list[dict[str, str]] = []
    for r, line in zip(data, numbers[2:]):
        if len(r) != len(header):
            raise CorruptReportError(path, f"CSV row at line {line} has {len(r)} of the header's {len(header)} "
                                           "columns: cut short or damaged")
        base = dict(zip(header[:first], r[:first]))
        base["Section Name"] = SECTION
        for name, unit, value in zip(metrics, unit_of, r[first:]):
            out.append({**base, "Metric Name": name, "Metric Unit": unit, "Metric Value": value})
    return out
