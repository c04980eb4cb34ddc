"""Damaged inputs: truncation is detected, every failure is a typed error, memory stays bounded.

Truncated files are cut from real fixtures at many points; the gzip bomb is built in a temporary
folder and read in a child process whose peak RSS is measured by the kernel (getrusage).
"""

from __future__ import annotations

import gzip
import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import roofline
from conftest import OWN, shared
from conftest import cli as _cli
from roofline import errors
from roofline.ingest.ncu.report import check_structure

TINY = OWN / "tiny_metrics.csv"


def _blocks(data: bytes) -> list[int]:
    """End offsets of a report's length-prefixed blocks (independent of the reader's walk)."""
    pos, ends = 4, []
    while pos < len(data):
        pos += 4 + struct.unpack_from("<I", data, pos)[0]
        ends.append(pos)
    return ends


@pytest.mark.parametrize("name", ["sm80_a100_mistic-cub-154launches_basic.ncu-rep",
                                  "sm86_a10g_gemm-variants_roofline.ncu-rep",
                                  "sm61_gtx1070ti_twisty-curand_basic-legacy.nsight-cuprof-report"])
def test_a_report_cut_anywhere_inside_a_record_is_corrupt(tmp_path, name):
    data = shared(f"ncu/{name}").read_bytes()
    assert _blocks(data)[-1] == len(data)  # the structure the check relies on
    cut_file = tmp_path / name
    for i in range(1, 60):  # 59 cut points, 50% among them: before the fix a half report read 68 of 154 kernels
        cut_file.write_bytes(data[: len(data) * i // 60])
        with pytest.raises(errors.CorruptReportError, match="truncated"):
            roofline.read(cut_file)


def _ncu_count(path: Path) -> int:
    import ncu_report

    ctx = ncu_report.load_report(str(path))
    return sum(ctx.range_by_idx(i).num_actions() for i in range(ctx.num_ranges()))


def test_a_report_cut_between_records_is_caught_or_counts_what_ncu_report_reads(tmp_path):
    """At block boundaries: after a record header that announces a payload, the cut is caught; after a
    whole record, the file is a shorter valid report whose kernel count ncu_report confirms."""
    data = shared("ncu/sm75_rtx2060s_strategy-kernel-10launches_basic.ncu-rep").read_bytes()
    cut_file = tmp_path / "cut.ncu-rep"
    caught, whole = 0, []
    for end in _blocks(data)[:-1]:
        cut_file.write_bytes(data[:end])
        try:
            whole.append((check_structure(cut_file), _ncu_count(cut_file)))
        except errors.CorruptReportError:
            caught += 1
    assert caught >= 10  # at least each kernel's header without its payload
    assert all(mine == ncu for mine, ncu in whole) and whole[-1][0] == 9


_READ_CHILD = textwrap.dedent("""
    import sys
    import roofline
    from roofline.errors import RooflineError
    try:
        print(len(roofline.read(sys.argv[1])))
    except RooflineError as exc:
        print(type(exc).__name__, exc)
""")


def test_a_damaged_record_header_is_corrupt_before_ncu_report_aborts_the_process(tmp_path):
    """One flipped byte in a record header made ncu_report abort the interpreter (an abseil CHECK
    failure, SIGABRT): the header is checked first. Read in a child process, so a crash is seen."""
    src = shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep")
    data = bytearray(src.read_bytes())
    assert check_structure(src) == 4 == _ncu_count(src)
    start = _blocks(bytes(data))[1] + 4  # the third block: the header of a record with a payload
    data[start + 4] ^= 0xFF
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(bytes(data))
    res = subprocess.run([sys.executable, "-c", _READ_CHILD, str(bad)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr[-500:]
    assert res.stdout.startswith("CorruptReportError") and "is not a record header" in res.stdout


def test_a_csv_cut_inside_a_row_is_corrupt_and_at_a_row_boundary_flagged(tmp_path):
    data = shared("ncu/sm70_v100_cutlass-cublas-gemm_roofline-metrics.csv").read_bytes()
    full = roofline.read(shared("ncu/sm70_v100_cutlass-cublas-gemm_roofline-metrics.csv"))
    cut_file = tmp_path / "cut.csv"
    header_end = data.index(b"\n", data.index(b'"ID","Process ID"')) + 1
    lines = [i + 1 for i, b in enumerate(data) if b == 10 and i + 1 > header_end]
    for i in range(1, 60):
        cut = header_end + (len(data) - header_end) * i // 60
        if cut in lines:
            continue
        cut_file.write_bytes(data[:cut])
        with pytest.raises(errors.CorruptReportError, match="cut short"):
            roofline.read(cut_file)
    cut_file.write_bytes(data[: lines[-3]])  # the last kernel lost its last two metric rows
    k = roofline.read(cut_file)
    assert len(k) == len(full)
    assert k["flags"].iloc[-1].startswith("possibly truncated") and k["flags"].iloc[:-1].isna().all()


def test_a_csv_row_missing_the_headers_columns_is_corrupt(tmp_path):
    lines = TINY.read_text().splitlines()
    last = lines[-1].split('","')
    p = tmp_path / "short.csv"
    p.write_text("\n".join(lines[:-1] + ['","'.join(last[:8]) + '"']) + "\n")
    with pytest.raises(errors.CorruptReportError, match="has 8 of the header's 15 columns"):
        roofline.read(p)


def _trace(tmp_path: Path) -> tuple[bytes, dict]:
    raw = gzip.decompress(shared("traces/torch_a100_alexnet_train_small.pt.trace.json.gz").read_bytes())
    return raw, json.loads(raw)


def test_damaged_traces_are_typed_errors(tmp_path):
    raw, doc = _trace(tmp_path)
    gz = bytearray(gzip.compress(raw, mtime=0))
    gz[12] ^= 0xFF  # inside the first deflate block header: zlib.error, not a CRC mismatch
    cases = {
        "flipped.pt.trace.json.gz": bytes(gz),
        "utf8.pt.trace.json": raw.replace(b'"name": "', b'"name": "\xff\xfe', 1),
        "deep.pt.trace.json": raw.replace(b'"args": {', b'"args": {"deep": ' + b"[" * 10**6 + b"]" * 10**6 + b", ", 1),
        "cut.pt.trace.json.gz": gzip.compress(raw)[:5000],
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(errors.CorruptReportError) as info:
            roofline.read(tmp_path / name)
        assert name in str(info.value)


def test_device_properties_without_compute_minor_read_with_capability_unknown(tmp_path):
    _, doc = _trace(tmp_path)
    for prop in doc["deviceProperties"]:
        del prop["computeMinor"]
    p = tmp_path / "nominor.pt.trace.json"
    p.write_text(json.dumps(doc))
    k = roofline.read(p)
    assert len(k) > 0 and k["compute_capability"].isna().all()


def test_a_csv_field_over_128_kib_and_a_kernel_id_of_superscript_two(tmp_path):
    lines = TINY.read_text().splitlines()
    big = tmp_path / "big.csv"
    big.write_text("\n".join(lines[:-1] + [lines[-1].replace('"void ', '"' + "x" * 140_000, 1)]) + "\n")
    with pytest.raises(errors.CorruptReportError, match="field larger than field limit"):
        roofline.read(big)
    sup = tmp_path / "sup.csv"
    sup.write_text("\n".join(ln.replace('"0","1","a.out"', '"²","1","a.out"') for ln in lines) + "\n")
    k = roofline.read(sup)
    assert len(k) == 1 and k["kernel_id"].iloc[0] == 0  # not an ASCII number: numbered in file order


_BOMB_CHILD = textwrap.dedent("""
    import resource, sys
    from pathlib import Path
    import roofline
    from roofline.errors import InputTooLargeError
    try:
        roofline.read(Path(sys.argv[1]))
        outcome = "read"
    except InputTooLargeError as exc:
        outcome = "refused: " + str(exc)
    print(outcome)
    # VmHWM: this process image's own peak RSS (KiB). ru_maxrss is not used: across fork/vfork + exec
    # Linux carries the parent's high-water mark into it (a big pytest worker would be measured)
    hwm = [line.split()[1] for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:")]
    print(hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
""")


def _bomb(path: Path, gib: int = 2) -> Path:
    """A gzip file of `gib` GiB of zeros in ~2 MB: 16 MiB members, each compressed once and repeated."""
    member = gzip.compress(b"\0" * (16 << 20), compresslevel=9, mtime=0)
    with path.open("wb") as fh:
        fh.write(gzip.compress(b'{"traceEvents": [', mtime=0))
        for _ in range(gib * 64):
            fh.write(member)
    return path


def test_a_2_gib_gzip_bomb_is_refused_under_1_5_gb_of_memory(tmp_path):
    bomb = _bomb(tmp_path / "bomb.pt.trace.json.gz")
    assert bomb.stat().st_size < 3_000_000
    res = subprocess.run([sys.executable, "-c", _BOMB_CHILD, str(bomb)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    outcome, rss_kib = res.stdout.splitlines()
    assert outcome.startswith("refused: ") and "likely decompression bomb" in outcome
    assert int(rss_kib) * 1024 < 1.5e9


def test_the_decompressed_size_cap_is_configurable(tmp_path):
    raw, _ = _trace(tmp_path)
    p = tmp_path / "t.pt.trace.json.gz"
    p.write_bytes(gzip.compress(raw))
    res = _cli("analyze", p, env_extra={"ROOFLINE_MAX_DECOMPRESSED_BYTES": "100000"})
    assert res.returncode == 1 and "expands past 100,000 bytes" in res.stderr
    assert "ROOFLINE_MAX_DECOMPRESSED_BYTES" in res.stderr
    from roofline.ingest.common import gunzip_capped

    assert gunzip_capped(p) == raw  # the default cap reads it; multi-member and padded streams too
    p.write_bytes(gzip.compress(raw[:1000]) + gzip.compress(raw[1000:]) + b"\0" * 64)
    assert gunzip_capped(p) == raw


def test_symlink_loops_neither_multiply_nor_hang_globs_and_folders(tmp_path):
    from roofline.batch.runner import find_inputs
    from roofline.ingest.registry import expand

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.csv").write_bytes(TINY.read_bytes())
    os.symlink("..", tmp_path / "a" / "up")  # two loops: Python's glob never ends on these
    os.symlink(".", tmp_path / "a" / "self")
    found, unmatched = find_inputs([f"{tmp_path}/**/*.csv", tmp_path, tmp_path / "a" / "up" / "a" / "x.csv"])
    assert found == [tmp_path / "a" / "x.csv"] and not unmatched
    assert expand([tmp_path]) == [tmp_path / "a" / "x.csv"]


def test_unreadable_inputs_are_one_error_line_each_and_the_good_files_are_analysed(tmp_path):
    good = tmp_path / "good.csv"
    good.write_bytes(TINY.read_bytes())
    (tmp_path / "folder.ncu-rep").mkdir()  # a folder named like a report
    os.mkfifo(tmp_path / "fifo.csv")  # reading it would block forever
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling.ncu-rep")
    unreadable = Path("/proc/sys/vm/compact_memory")  # write-only, even for root
    bad = [tmp_path / "folder.ncu-rep", tmp_path / "fifo.csv", tmp_path / "dangling.ncu-rep"]
    if unreadable.exists() and not os.access(unreadable, os.R_OK):
        os.symlink(unreadable, tmp_path / "noperm.ncu-rep")
        bad.append(tmp_path / "noperm.ncu-rep")
    res = _cli("analyze", *bad, good, "--format", "csv")
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == len(bad) + 1 and lines[-1] == f"roofline: {len(bad)} of {len(bad) + 1} input(s) failed"
    for path, line in zip(bad, lines):
        assert line.startswith(f"roofline: {path}: ") and "bug" not in line
    assert "good.csv" in res.stdout


@pytest.mark.parametrize("inflate", ["isal", "zlib"])
def test_gunzip_gives_the_same_bytes_and_errors_with_isal_and_with_zlib(tmp_path, monkeypatch, inflate):
    """ISA-L's inflate is used where installed, the standard library's otherwise: same content, same
    typed errors (damaged, truncated, CRC mismatch, over the cap), multi-member and padded streams."""
    import zlib

    from roofline.errors import InputTooLargeError
    from roofline.ingest import common

    if inflate == "isal":
        assert common._zlib().__name__ == "isal.isal_zlib"  # (a dependency: CI must have it)
    else:
        monkeypatch.setattr(common, "_zlib", lambda: zlib)
    raw = b'{"traceEvents": [' + b", ".join(b'{"ph": "X", "name": "k%d"}' % i for i in range(20000)) + b"]}"
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(raw[:7000]) + gzip.compress(raw[7000:]) + b"\0" * 16)
    assert common.gunzip_capped(p) == raw
    gz = gzip.compress(raw, mtime=0)
    bad_crc = bytearray(gz)
    bad_crc[-8] ^= 0xFF
    for data, what in ((gz[:len(gz) // 2], "truncated"), (bytes(bad_crc), "damaged")):
        p.write_bytes(data)
        with pytest.raises(errors.CorruptReportError, match=what):
            common.gunzip_capped(p)
    p.write_bytes(gz)
    with pytest.raises(InputTooLargeError, match="expands past 100,000 bytes"):
        common.gunzip_capped(p, limit=100_000)
    assert common.gunzip_capped(p, limit=len(raw)) == raw  # exactly at the cap: read
