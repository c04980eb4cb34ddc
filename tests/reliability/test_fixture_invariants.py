"""Promises over every shared fixture (issue 31): no 0 FLOP for work whose cost is unknown, no ``inf`` in any
table, no "FLOPs are a lower bound" note without a precision whose counters are missing; (issue 34) no "wrong
peak" unless the peak's source is a fallback or the row's own counters measured past a spec roof."""

from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import SHARED, fixture_analysis, fixture_names, fixture_params, shared
from roofline.schema import FLOP_COLUMNS, UNAVAILABLE, source_column


def _analysed(rel: str):
    """The fixture's analysed frame, None when it has no GPU work (the pipeline says so)."""
    analysis = fixture_analysis(rel)  # one analysis per fixture, shared with the other every-fixture tests
    assert not analysis.failed, [f.message for f in analysis.failures]
    return None if analysis.frame.empty else analysis.frame


@pytest.mark.parametrize("rel", fixture_params(fixture_names()))
def test_every_fixture_keeps_the_three_promises(rel):
    r = _analysed(rel)
    if r is None:
        assert "cpu-only" in rel
        return
    # 1. a FLOP count of 0 is a measured or modelled 0: its source never says the cost is unknown
    for c in FLOP_COLUMNS:
        zero = (r[c] == 0).fillna(False).to_numpy()
        src = r[source_column(c)].astype("string").fillna("")
        assert not (zero & src.str.startswith(UNAVAILABLE).to_numpy()).any(), (rel, c)
    if "hlo_expression" in r:  # XLA's cost analysis gives an opaque custom-call 0: it must read unavailable
        flop = r[list(FLOP_COLUMNS)].sum(axis=1, min_count=1)
        opaque = r["hlo_expression"].astype("string").str.contains(" custom-call(", regex=False, na=False) \
            & ~r["hlo_expression"].astype("string").str.contains(r"gemm|matmul|conv|cublas|cudnn|hipblas|miopen",
                                                                  case=False, na=False)
        assert not (opaque & (flop == 0)).any(), rel
    # 2. no inf in the table (the rows holding an infinite value, and the longest ones)
    from roofline.report.table import format_table

    numeric = r.select_dtypes("number").to_numpy(dtype=float, na_value=np.nan)
    odd = np.isinf(numeric).any(axis=1)
    shown = r[odd | (np.arange(len(r)) < 40)]
    text = format_table(shown)
    assert not re.search(r"(?<![A-Za-z])inf(?![A-Za-z])", text), (rel, [ln for ln in text.splitlines() if "inf" in ln][:3])
    # 3. "a lower bound: fp16 unavailable" only where that precision's FLOPs are unavailable, and, where the
    # report has per-opcode instruction counts, only where they show an instruction of that precision
    notes = r["analysis_note"].astype("string").fillna("")
    opcodes = _opcodes(shared(rel)) if rel.endswith(".ncu-rep") else {}
    for i in np.flatnonzero(notes.str.contains("FLOPs are a lower bound", regex=False).to_numpy()):
        missing = re.search(r"FLOPs are a lower bound: ([a-z0-9, ]+) unavailable", notes.iloc[i]).group(1)
        for p in [p.strip() for p in missing.replace(" and ", ",").split(",") if p.strip()]:
            assert np.isnan(r[f"flop_{p}"].iloc[i]), (rel, i, p)
            assert str(r[source_column(f"flop_{p}")].iloc[i]).startswith(UNAVAILABLE), (rel, i, p)
            ops = opcodes.get(int(r["kernel_id"].iloc[i]))
            if ops is not None and p in _PREFIXES:
                assert any(o.startswith(_PREFIXES[p]) for o in ops), (rel, i, p, sorted(ops)[:20])
    # 4. "wrong peak" only where the binding roof's source is a fallback (architecture model, the higher of
    # ambiguous candidates, MIG, a hand-given or measured figure) or the row's counters beat a spec roof
    for i in np.flatnonzero(notes.str.contains("wrong peak", regex=False).to_numpy()):
        roof = str(r["binding_roof"].iloc[i])
        peak = str(r["peak_flop_per_s_source" if roof == "compute" else f"peak_{roof}_bytes_per_s_source"].iloc[i])
        measured = r[[c for c in r.columns if c.endswith("_source") and (c.startswith("flop_") if roof == "compute"
                                                                          else c == f"{roof}_bytes_source")]]
        fallback = re.search(r"arch model|upper bound|higher of|\bMIG\b|(^|\W)(user|measured):", peak)
        contradicted = peak.startswith("spec") and measured.iloc[i].astype(str).str.startswith("counters").any()
        assert fallback or contradicted, (rel, i, roof, peak, notes.iloc[i])


_PREFIXES = {"fp64": ("DADD", "DMUL", "DFMA"), "fp32": ("FADD", "FMUL", "FFMA"), "fp16": ("HADD", "HMUL", "HFMA")}


def _opcodes(path) -> dict[int, set[str]]:
    """Per launch (in report order), the opcodes its per-opcode counts show executed, read with ncu_report."""
    import ncu_report

    ctx = ncu_report.load_report(str(path))
    out, k = {}, 0
    for i in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(i)
        for j in range(rng.num_actions()):
            m = rng.action_by_idx(j).metric_by_name("sass__inst_executed_per_opcode_with_modifier_all")
            if m is not None and m.has_correlation_ids():
                keys = m.correlation_ids()
                out[k] = {str(keys.value(n)).split(".")[0] for n in range(m.num_instances()) if m.value(n)}
            k += 1
    return out


def test_the_fixture_list_knows_the_capture_traces_folder():
    shared("traces/capture_traces")  # skips without ../shared (fails in CI)
    names = fixture_names()
    assert not any(n.endswith("execution_details.json") for n in names)
    caps = sorted(p.relative_to(SHARED).as_posix() for p in (SHARED / "traces" / "capture_traces").rglob("*.json.gz"))
    assert caps and set(caps) <= set(names)
