"""Typed, immutable peaks: every roof carries its value, source, clock basis and dense/sparse.

Three sources (issue 3): the report's own counters (per kernel, in the kernels frame, at the
clock the kernel ran at), the vetted spec table (:meth:`Peaks.from_spec`) and a user file or a
measurement (:meth:`Peaks.from_toml`, or ``Peaks(...)`` built by a benchmark). A :class:`Peaks`
given to :func:`roofline.analyze` replaces the frame's peaks for every kernel.

User file (TOML)::

    device = "H100 SXM (our cluster)"
    base = "H100 SXM"              # optional: start from the spec table entry
    source = "measured"            # "user" (default) or "measured"
    clock_basis = "as profiled"    # default for every figure below
    clock_mhz = 1755               # optional, informational
    detail = "ERT run 2026-11-02"  # optional
    [compute]                      # FLOP/s
    fp32 = 5.9e13
    tensor_bf16 = { value = 7.1e14, detail = "cuBLAS 8192^3 bf16 GEMM" }
    [bandwidth]                    # bytes/s
    dram = 3.0e12
    l2 = 9.5e12
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pandas as pd

from roofline.errors import InputError
from roofline.hardware.names import require
from roofline.hardware.specs import COMPUTE_KEYS, GpuSpec

LEVELS: tuple[str, ...] = ("dram", "l2", "l1")
#: levels only some formats record (AMD LDS: rocprof-compute, rocprofv3 counters); analysed when the frame has them
OPTIONAL_LEVELS: tuple[str, ...] = ("lds",)
ALL_LEVELS: tuple[str, ...] = LEVELS + OPTIONAL_LEVELS


def recorded_levels(frame: pd.DataFrame, levels: tuple[str, ...] = LEVELS) -> tuple[str, ...]:
    """``levels`` plus each optional level the frame records (a finite ``<level>_bytes`` on some row, or
    the analysis columns of it), when ``levels`` is the default: an AMD workload's LDS joins DRAM, L2, L1."""
    if tuple(levels) != LEVELS:
        return tuple(levels)
    extra = tuple(lv for lv in OPTIONAL_LEVELS
                  if f"intensity_{lv}_flop_per_byte" in frame
                  or (f"{lv}_bytes" in frame and pd.to_numeric(frame[f"{lv}_bytes"], errors="coerce").notna().any()))
    return tuple(levels) + extra
SOURCES = ("counters", "spec", "user", "measured")
CLOCK_BASES = ("as profiled", "boost", "base-locked", "measured", "as published")


class PeaksFileError(InputError):
    """A user peaks file that cannot be used: names the line and the field."""

    kind = "bad-peaks-file"

    def __init__(self, path: str | Path, problem: str, line: int | None = None, field_name: str | None = None):
        where = f"line {line}: " if line else ""
        what = f"{field_name}: " if field_name else ""
        self.line, self.field = line, field_name
        super().__init__(path, f"{where}{what}{problem}")


@dataclass(frozen=True)
class Peak:
    value: float  # FLOP/s or bytes/s
    source: str  # one of SOURCES
    detail: str  # metric names, datasheet, file, benchmark
    clock_basis: str  # one of CLOCK_BASES
    clock_hz: float | None = None
    sparse: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.value, (int, float)) and math.isfinite(self.value) and self.value > 0):
            raise ValueError(f"a peak must be a positive finite number, got {self.value!r}")
        if self.source not in SOURCES:
            raise ValueError(f"peak source must be one of {SOURCES}, got {self.source!r}")
        if self.clock_basis not in CLOCK_BASES:
            raise ValueError(f"clock basis must be one of {CLOCK_BASES}, got {self.clock_basis!r}")

    def describe(self) -> str:
        clock = f" {self.clock_hz / 1e6:.0f} MHz" if self.clock_hz else ""
        return f"{self.source}: {self.detail} ({self.clock_basis}{clock}, {'sparse' if self.sparse else 'dense'})"


@dataclass(frozen=True)
class Peaks:
    """Compute roofs by precision key (``fp32``, ``tensor_bf16``, ...) and bandwidth roofs by level."""

    device: str
    compute: Mapping[str, Peak] = field(default_factory=dict)
    bandwidth: Mapping[str, Peak] = field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = set(self.compute) - set(COMPUTE_KEYS)
        if bad:
            raise ValueError(f"unknown compute key(s) {sorted(bad)}; known: {', '.join(COMPUTE_KEYS)}")
        bad = set(self.bandwidth) - set(ALL_LEVELS)
        if bad:
            raise ValueError(f"unknown level(s) {sorted(bad)}; known: {', '.join(ALL_LEVELS)}")
        object.__setattr__(self, "compute", MappingProxyType(dict(self.compute)))
        object.__setattr__(self, "bandwidth", MappingProxyType(dict(self.bandwidth)))

    def ridge(self, precision: str, level: str) -> float:
        """Ridge point in FLOP/byte: compute peak ÷ level bandwidth."""
        return self.compute[precision].value / self.bandwidth[level].value

    def ridges(self) -> pd.DataFrame:
        return pd.DataFrame(
            {lv: {p: self.ridge(p, lv) for p in self.compute} for lv in self.bandwidth}
        ).rename_axis("precision")

    def to_frame(self) -> pd.DataFrame:
        rows = [
            {"kind": kind, "key": k, "value": p.value, "source": p.source, "detail": p.detail,
             "clock_basis": p.clock_basis, "clock_hz": p.clock_hz, "sparse": p.sparse}
            for kind, group in (("compute", self.compute), ("bandwidth", self.bandwidth))
            for k, p in group.items()
        ]
        return pd.DataFrame(rows)

    @classmethod
    def from_spec(cls, name: str, clock_hz: float | None = None) -> Peaks:
        """Peaks of a GPU in the spec table; compute rescaled to ``clock_hz`` when given.

        An unknown name raises :class:`~roofline.hardware.specs.UnknownDeviceError`.
        """
        spec = require(name)
        return cls(spec.name, _spec_compute(spec, clock_hz), _spec_bandwidth(spec, clock_hz))

    @classmethod
    def from_toml(cls, path: str | Path) -> Peaks:
        return _load_toml(Path(path))


def _spec_compute(spec: GpuSpec, clock_hz: float | None) -> dict[str, Peak]:
    out = {}
    for key, f in spec.figures.items():
        if clock_hz:
            out[key] = Peak(spec.flop_per_s_at(key, clock_hz), "spec",
                            f"{spec.figure_source(key)}; {f.flop_per_cycle_per_sm:g} FLOP/cycle/SM × {spec.sm_count} SMs",
                            "as profiled", clock_hz)
        else:
            out[key] = Peak(f.flop_per_s, "spec", spec.figure_source(key), "as published",
                            spec.implied_clock_hz(key))
    return out


def _spec_bandwidth(spec: GpuSpec, clock_hz: float | None) -> dict[str, Peak]:
    out = {"dram": Peak(spec.dram_bytes_per_s, "spec", f"{spec.name}: {spec.dram_source}", "as published")}
    l1_clock = clock_hz or spec.boost_clock_hz
    l1 = spec.l1_bytes_per_s_at(l1_clock)
    if l1:
        out["l1"] = Peak(l1, "spec", f"128 B/cycle/SM × {spec.sm_count} SMs (ncu's L1 roof)",
                         "as profiled" if clock_hz else "boost", l1_clock)
    return out  # L2 bandwidth is not published by any vendor: no spec L2 roof


# -- user file ---------------------------------------------------------------------------------

_TOP_KEYS = {"device", "base", "source", "clock_basis", "clock_mhz", "detail", "compute", "bandwidth"}
_ENTRY_KEYS = {"value", "detail", "clock_basis", "clock_mhz", "sparse"}


def _line_of(text: str, key: str, section: str | None = None) -> int | None:
    """1-based line of ``key = ...`` (inside ``[section]`` when given), else of a table header
    ``[section.key]`` / ``[key]`` / ``[[key]]`` or a dotted ``key.x = ...``; tomllib gives no positions."""
    in_section = section is None
    pat = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*[=.]")
    full = f"{section}.{key}" if section else key
    header = re.compile(rf"^\s*\[\[?\s*({re.escape(full)}|{re.escape(key)})\s*(\.|\]|$)")
    for n, line in enumerate(text.splitlines(), 1):
        if header.match(line):
            return n
        head = re.match(r"^\s*\[\[?([^\]]+)\]", line)
        if head:
            in_section = section is not None and head.group(1).strip() == section
            continue
        if in_section and pat.match(line):
            return n
    return None


def _load_toml(path: Path) -> Peaks:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PeaksFileError(path, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PeaksFileError(path, f"cannot read: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise PeaksFileError(path, f"not valid TOML ({exc})", int(m.group(1)) if m else None) from None

    def fail(problem: str, key: str, section: str | None = None) -> PeaksFileError:
        name = f"{section}.{key}" if section else key
        return PeaksFileError(path, problem, _line_of(text, key, section), name)

    for k in data:
        if k not in _TOP_KEYS:
            raise fail(f"unknown field; expected one of {', '.join(sorted(_TOP_KEYS))}", k)
    source = data.get("source", "user")
    if source not in ("user", "measured"):
        raise fail("must be 'user' or 'measured'", "source")
    basis = data.get("clock_basis", "measured" if source == "measured" else "as published")
    if basis not in CLOCK_BASES:
        raise fail(f"must be one of {', '.join(CLOCK_BASES)}", "clock_basis")
    clock = _number(data.get("clock_mhz"), lambda p: fail(p, "clock_mhz"))
    for field_name in ("device", "detail", "base"):
        if field_name in data and not isinstance(data[field_name], str):
            raise fail("must be a string", field_name)
    base = None
    if "base" in data:
        from roofline.hardware.specs import UnknownDeviceError

        try:
            base = Peaks.from_spec(data["base"])
        except UnknownDeviceError as exc:
            raise fail(str(exc), "base") from None
    device = str(data.get("device") or (base.device if base else path.stem))
    detail = str(data.get("detail", f"peaks file {path.name}"))
    groups: dict[str, dict[str, Peak]] = {"compute": dict(base.compute) if base else {},
                                          "bandwidth": dict(base.bandwidth) if base else {}}
    allowed = {"compute": COMPUTE_KEYS, "bandwidth": ALL_LEVELS}
    for section, keys in allowed.items():
        table = data.get(section, {})
        if not isinstance(table, dict):
            raise fail("must be a table", section)
        for key, entry in table.items():
            if key not in keys:
                raise fail(f"unknown key; expected one of {', '.join(keys)}", key, section)
            groups[section][key] = _entry(entry, source, basis, clock, detail,
                                          lambda p, key=key, section=section: fail(p, key, section))
    if not groups["compute"] and not groups["bandwidth"]:
        raise PeaksFileError(path, "no peaks: give a [compute] or [bandwidth] table, or base = '<GPU>'")
    return Peaks(device, groups["compute"], groups["bandwidth"])


def _number(v: Any, fail: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise fail(f"must be a positive number, got {v!r}")
    return float(v)


def _entry(entry: Any, source: str, basis: str, clock_mhz: float | None, detail: str, fail: Any) -> Peak:
    if isinstance(entry, dict):
        extra = set(entry) - _ENTRY_KEYS
        if extra:
            raise fail(f"unknown field(s) {sorted(extra)}; expected {', '.join(sorted(_ENTRY_KEYS))}")
        if "value" not in entry:
            raise fail("missing 'value'")
        basis = entry.get("clock_basis", basis)
        if basis not in CLOCK_BASES:
            raise fail(f"clock_basis must be one of {', '.join(CLOCK_BASES)}")
        clock_mhz = _number(entry.get("clock_mhz"), fail) or clock_mhz
        detail = str(entry.get("detail", detail))
        sparse = entry.get("sparse", False)
        if not isinstance(sparse, bool):
            raise fail("sparse must be true or false")
        value = _number(entry["value"], fail)
    else:
        sparse = False
        value = _number(entry, fail)
    assert value is not None
    return Peak(value, source, detail, basis, clock_mhz * 1e6 if clock_mhz else None, sparse)
