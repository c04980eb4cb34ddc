"""The bundled samples: present, byte-identical to their documented origin, shipped as package data,
readable, and `roofline samples` / `roofline demo` work with nothing beside the repository."""

from __future__ import annotations

import fnmatch
import hashlib
import re
import tomllib
from pathlib import Path

import pytest

import roofline
from conftest import REPO
from conftest import cli as _cli
from roofline import samples
from roofline.errors import RooflineError

HERE = Path(samples.__file__).parent  # the installed package's folder (src/ in a checkout)


def _origin_table() -> dict[str, str]:
    """{file: sha256} from samples/README.md's origin table (what the notice promises)."""
    text = (HERE / "README.md").read_text(encoding="utf-8")
    return dict(re.findall(r"^\| `([^`]+)` \| \[[^]]+\]\([^)]+\) \| `[0-9a-f]{40}` \| `[^`]+` \| `([0-9a-f]{64})` \|$",
                           text, re.MULTILINE))


def test_every_sample_is_documented_byte_identical_and_small():
    origin = _origin_table()
    assert sorted(origin) == sorted(s.file for s in samples.SAMPLES.values())
    total = 0
    for name in samples.names():
        p = samples.path(name)
        data = p.read_bytes()
        total += len(data)
        assert hashlib.sha256(data).hexdigest() == origin[p.name], name
    assert total < 5 << 20  # the wheel stays small
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    assert readme.count("Permission is hereby granted") == 3  # one MIT notice per source repository
    on_disk = {p.name for p in HERE.iterdir() if p.is_file()} - {"__init__.py", "README.md"}
    assert on_disk == set(origin)  # nothing shipped without its origin


def test_package_data_ships_every_sample_and_the_licence():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    globs = meta["tool"]["setuptools"]["package-data"]["roofline"]
    for f in [*(s.file for s in samples.SAMPLES.values()), "README.md"]:
        assert any(fnmatch.fnmatch(f"samples/{f}", g) for g in globs), f
    assert meta["project"]["license-files"] == ["LICENSE"]
    assert "Apache License" in (REPO / "LICENSE").read_text(encoding="utf-8")[:200]


def test_each_sample_reads_as_its_format_and_device():
    for s in samples.SAMPLES.values():
        k = roofline.read(samples.path(s.name))
        assert len(k) > 0 and set(k["format"]) == {s.format}, s.name
        assert k["duration_s"].notna().all()
    # values from the source's MANIFEST, independent of roofline: 1024³ FFMA = 2·1024³ FLOP per SGEMM
    a10g = roofline.read(samples.path("a10g-sgemm"))
    assert list(a10g["device_name"].unique()) == ["NVIDIA A10G"]
    assert a10g["flop_fp32"].tolist() == pytest.approx([2 * 1024**3] * 4, rel=1e-3)
    selfjoin = roofline.read(samples.path("a100-selfjoin-fp64"))
    assert selfjoin["duration_s"].item() == pytest.approx(0.707, rel=0.01)  # "707 ms"
    assert selfjoin["flop_fp64"].item() == pytest.approx(440e9, rel=0.01)  # "≈440 GFLOP FP64"


def test_unknown_sample_is_a_typed_error_listing_the_known():
    with pytest.raises(samples.UnknownSampleError) as info:
        samples.path("t4-gemm")
    assert isinstance(info.value, RooflineError) and isinstance(info.value, KeyError)
    assert "t4-gemm" in str(info.value) and "a10g-sgemm" in str(info.value)


def test_samples_and_demo_commands(tmp_path):
    listed = _cli("samples")
    assert listed.returncode == 0, listed.stderr
    for name in samples.names():
        assert name in listed.stdout and str(samples.path(name)) in listed.stdout
    out = tmp_path / "demo"
    demo = _cli("demo", "-o", out)
    assert demo.returncode == 0, demo.stderr
    assert "warptiling" in demo.stdout and "nodeCalculationsKernel" in demo.stdout  # the table
    assert (out / "report.html").stat().st_size > 0 and (out / "roofline.png").stat().st_size > 0
    assert f"wrote {out / 'report.html'}" in demo.stdout
