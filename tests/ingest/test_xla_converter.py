"""The xprof converter runs in a child forked from the reader: a crash or a hang costs the FLOPs of a GPU
xplane (its rows say why), never the read; its stdout and the cache it writes stay out of the user's way;
xprof is imported only once an xplane needs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import shared
from roofline.ingest import isolate
from roofline.ingest.xla import cost, xplane

GEMM = "traces/jax0.8_rocm_mi300x_gemm.xplane.pb"

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="the converter is forked where fork exists"),
    pytest.mark.skipif(cost.xprof_version() is None, reason="needs the xprof extra"),
]


def _ops(frame):
    return frame[frame["hlo_op"] != "IDLE"]


def _aborts(copy: Path) -> int:
    os.write(2, b"F0000 converter.cc:12] Check failed: planes > 0 (0 vs. 0)\n")
    os.abort()


def test_converter_that_aborts_costs_only_the_flops_and_the_rows_say_why(monkeypatch):
    good = xplane.read(shared(GEMM))
    monkeypatch.setattr(cost, "_convert", _aborts)
    bad = xplane.read(shared(GEMM))
    assert list(bad["duration_s"]) == list(good["duration_s"])
    ops = _ops(bad)
    assert ops["flop_fp32"].isna().all() and not _ops(good)["flop_fp32"].isna().all()
    reason = "the xprof converter failed (exit -6: F0000 converter.cc:12] Check failed: planes > 0 (0 vs. 0))"
    assert ops["flop_fp32_source"].str.contains(reason, regex=False).all()


def test_converter_that_hangs_is_killed_at_the_timeout(monkeypatch, tmp_path):
    pid_file = tmp_path / "pid"

    def hangs(copy: Path) -> int:
        pid_file.write_text(str(os.getpid()))
        os.read(os.pipe()[0], 1)  # a read that no one will ever answer
        return 0

    monkeypatch.setattr(cost, "_convert", hangs)
    monkeypatch.setattr(cost, "TIMEOUT_S", 1.0)
    table = cost.cost_table(shared(GEMM))
    assert table is not None and table.error == "the xprof converter ran past 1 s" and not table.ops
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running
        os.kill(int(pid_file.read_text()), 0)


def test_converter_exception_reads_as_a_python_child_would(monkeypatch):
    def raises(copy: Path) -> int:
        raise RuntimeError("no XSpace in " + copy.name)

    monkeypatch.setattr(cost, "_convert", raises)
    table = cost.cost_table(shared(GEMM))
    assert table is not None
    assert table.error == "the xprof converter failed (exit 1: RuntimeError: no XSpace in host.xplane.pb)"


def test_converter_output_and_cache_stay_out_of_stdout_and_the_input_folder(monkeypatch, tmp_path, capfd):
    real = cost._convert

    def chatty(copy: Path) -> int:
        os.write(1, b"converter chatter\n")
        return real(copy)

    src = tmp_path / "run.xplane.pb"
    shutil.copyfile(shared(GEMM), src)
    monkeypatch.setattr(cost, "_convert", chatty)
    table = cost.cost_table(src)
    assert table is not None and table.error is None and len(table.ops) == 16
    assert capfd.readouterr().out == ""
    assert [p.name for p in tmp_path.iterdir()] == ["run.xplane.pb"]


def test_run_gives_the_exit_status_and_stderr_of_the_child(tmp_path):
    def child() -> int:
        Path("here").write_text("x")  # in the folder it was given
        os.write(2, b"said on stderr\n")
        return 3

    status, err = isolate.run(child, 60.0, cwd=str(tmp_path))
    assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3
    assert err == b"said on stderr\n" and (tmp_path / "here").read_text() == "x"


def test_xprof_is_imported_only_once_an_xplane_needs_its_costs():
    tpu = shared("traces/jax_tpuv6e-4chip_host-offload-allreduce.xplane.pb")  # its costs are in the plane
    code = ("import sys, roofline\n"
            "from roofline.ingest.xla import cost\n"
            f"roofline.read({str(tpu)!r})\n"
            "assert 'xprof.convert.raw_to_tool_data' not in sys.modules, 'imported early'\n"
            f"assert not cost.cost_table(cost.Path({str(shared(GEMM))!r})).error\n"
            "assert 'xprof.convert.raw_to_tool_data' in sys.modules, 'not inherited'\n")
    res = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert res.returncode == 0, res.stderr[-2000:]
