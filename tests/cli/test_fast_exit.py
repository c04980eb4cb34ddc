"""The ``roofline`` script and ``python -m roofline`` end without the interpreter's teardown (``cli.run``): what
they print, their exit status and the exit handlers must be those of a normal exit. Real subprocesses: the
in-process ``cli()`` of the other tests calls ``main``, which returns."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import OWN
from conftest import cli as in_process

TINY = OWN / "tiny_metrics.csv"


#: the child's streams buffered, as a user's are (an unbuffered run would hide output left in a buffer)
BUFFERED = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _python(code: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
                          env=BUFFERED, **kwargs)


def test_the_script_prints_what_main_prints_and_exits_zero():
    res = subprocess.run([sys.executable, "-m", "roofline", "analyze", str(TINY), "--format", "csv"],
                         capture_output=True, text=True, timeout=120, check=False, env=BUFFERED)
    assert res.returncode == 0, res.stderr
    assert res.stdout == in_process("analyze", TINY, "--format", "csv").stdout
    assert res.stdout.count("\n") >= 2  # the header and a row: the buffered output was flushed


def test_a_failing_command_keeps_its_exit_status_and_message(tmp_path):
    missing = tmp_path / "missing.ncu-rep"
    res = subprocess.run([sys.executable, "-m", "roofline", "analyze", str(missing)],
                         capture_output=True, text=True, timeout=120, check=False)
    expected = in_process("analyze", missing)
    assert res.returncode == expected.returncode != 0
    assert "missing.ncu-rep" in res.stderr and "Traceback" not in res.stderr


def test_exit_handlers_run_and_a_text_exit_is_printed_with_status_1():
    ran = _python("import atexit, sys\n"
                  "atexit.register(lambda: print('handler ran'))\n"  # (to stdout, buffered: flushed after it)
                  "sys.argv = ['roofline', '--version']\n"
                  "from roofline.cli import run\n"
                  "run()\n")
    assert ran.returncode == 0 and ran.stdout.splitlines()[-1] == "handler ran" and len(ran.stdout.splitlines()) == 2
    text = _python("import roofline.cli as c\n"
                   "def boom():\n"
                   "    raise SystemExit('stopped: a reason')\n"
                   "c.main = boom\n"
                   "c.run()\n")
    assert text.returncode == 1 and "stopped: a reason" in text.stderr


def test_a_thread_still_running_is_waited_for_as_at_a_normal_exit():
    # (the thread outlives run(): it waits for the main thread, which a normal exit marks done before it joins
    # the other threads; a process ended at once would never print)
    res = _python("import sys, threading\n"
                  "def late():\n"
                  "    threading.main_thread().join()\n"
                  "    print('thread finished', flush=True)\n"
                  "threading.Thread(target=late).start()\n"
                  "sys.argv = ['roofline', '--version']\n"
                  "from roofline.cli import run\n"
                  "run()\n")
    assert res.returncode == 0 and "thread finished" in res.stdout


def test_a_stream_closed_from_the_start_ends_as_a_normal_exit_does():
    # (`roofline --version >&-`: a descriptor closed when Python starts makes sys.stdout / sys.stderr None)
    for closed in (1, 2):
        res = subprocess.run([sys.executable, "-m", "roofline", "--version"], capture_output=True, text=True,
                             timeout=120, check=False, env=BUFFERED, preexec_fn=lambda fd=closed: os.close(fd))
        assert res.returncode == 0, res.stderr
        assert "Traceback" not in res.stderr
