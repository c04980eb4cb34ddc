"""The one pipeline that ``roofline analyze``/``report``/``compare``, the batch worker and the Python API share.

    options → expand the inputs → read each → join (counters onto timelines) → device and roofs → analyse

A reader gives what its profile records (device identity, SMs, clocks, recorded bandwidths, the peaks the
profiler derives from its counters); the spec table's roofs are attached once, after the joins, by the
roofs stage (:func:`roofline.hardware.attach.attach_roofs`), which also applies ``--device``/``--device-map``.

Every stage is a function of frames and options; :func:`run` chains them and returns an :class:`Analysis`
that carries the rows, the per-input failures and the messages, in the order they arose. Nothing here
prints or exits: the CLI renders an ``Analysis``, the batch worker writes one input's, the API returns it.

A bad input is a :class:`Failure` (never raised past the read loop); a bad option is an :class:`OptionError`
or an :class:`~roofline.hardware.specs.UnknownDeviceError`, raised before any input is read.
"""

from __future__ import annotations

import contextlib
import glob
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roofline.errors import CorruptReportError, NoGpuWorkError, RooflineError, SchemaError, path_text
from roofline.hardware.peaks import LEVELS

if TYPE_CHECKING:  # pandas and the analysis stack are imported by the stages that use them
    import pandas as pd

    from roofline.hardware.links import UserLinks
    from roofline.hardware.peaks import Peaks

#: the default latency threshold (% of every roof) of the analysis
LATENCY_THRESHOLD_PCT = 20.0
PEAK_SOURCES = ("counters", "spec")


class OptionError(RooflineError, ValueError):
    """An option the pipeline cannot use (raised before any input is read); ``option`` names it."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


@dataclass(frozen=True)
class Options:
    """What a run is analysed with. Plain values only, so it travels to batch workers as it is."""

    peaks: str | Peaks = "counters"  # 'counters' | 'spec' | a GPU name | a peaks file (.toml, roofline.csv, ...)
    device: str | None = None  # GPU name for profiles that record none
    device_map: tuple[str, ...] = ()  # "NAME=KNOWN": a device the profile names NAME takes KNOWN's roofs
    counters: tuple[Path, ...] = ()  # ncu reports/CSVs whose counters are carried onto the timeline inputs
    captures: tuple[Path, ...] = ()  # traces recorded while CUDA/HIP graphs were captured
    levels: tuple[str, ...] = tuple(LEVELS)
    clock: str = "profiled"
    latency_threshold_pct: float = LATENCY_THRESHOLD_PCT
    strict: bool = False  # a device without roofs counts as a failed input
    links: str | None = None  # --links FILE.toml: link roofs and placement the profile does not record


@dataclass(frozen=True)
class Failure:
    """One input that could not be used, with the line that says why."""

    path: str
    message: str
    error: BaseException | None = None


@dataclass(frozen=True)
class Message:
    """A line for the user: ``"error"`` (an input failed), ``"warning"`` or ``"info"``."""

    level: str
    text: str


@dataclass
class Inputs:
    """Expanded inputs: profile files, batch datasets, folders with no profile, patterns matching nothing."""

    given: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    datasets: list[Path] = field(default_factory=list)
    empty_folders: list[Path] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)  # files in the folders that are not profiles (capture indexes)

    @property
    def count(self) -> int:
        return len(self.files) + len(self.datasets) + len(self.empty_folders)


@dataclass
class Analysis:
    """What a run gives: the roofline frame (one row per kernel/op), the kernels it was computed from, and
    what went wrong, input by input. ``levels`` are the memory levels to show (the given ones, plus LDS
    where an AMD format recorded it and the levels were the default)."""

    frame: pd.DataFrame
    kernels: pd.DataFrame
    failures: list[Failure] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    inputs: int = 0
    levels: tuple[str, ...] = tuple(LEVELS)
    missing_roofs: int = 0  # (input, device) pairs without a compute or DRAM roof

    @property
    def failed(self) -> int:
        return len(self.failures)

    # what a notebook shows and asks of a run: the frame's (roofline.result.RooflineResult)
    def summary(self) -> pd.DataFrame:
        """The headline per profile, device and step (coverage, time by kind, MFU): ``roofline.summary``."""
        from roofline.analysis.views import view

        return view(self.frame, "summary")

    def by_category(self) -> pd.DataFrame:
        """Time per op category, longest first: ``roofline.by_category``."""
        from roofline.analysis.views import view

        return view(self.frame, "category")

    def findings(self) -> pd.DataFrame:
        """Nsight Compute's rule results, one row each, ranked by estimated time saved: ``roofline.findings``."""
        from roofline.analysis.pipes import findings

        return findings(self.frame)

    def compact(self, top: int | None = 20) -> pd.DataFrame:
        from roofline.result import compact

        return compact(self.frame, top)

    def _problems(self) -> str:
        return f"{self.failed} of {self.inputs} input(s) failed; {len(self.messages)} message(s) in .messages"

    def __repr__(self) -> str:
        from roofline.result import as_result

        return repr(as_result(self.frame)) + "\n" + self._problems()

    def _repr_html_(self) -> str:
        import html

        from roofline.result import as_result

        return as_result(self.frame)._repr_html_() + f"<p><small>{html.escape(self._problems())}</small></p>"


Report = Callable[[Message], None]
Progress = Callable[[list[Path]], contextlib.AbstractContextManager[Iterable[Path]]]


# ---- options -------------------------------------------------------------------------------------------

def parse_peaks(value: str | Peaks) -> str | Peaks:
    """``--peaks``: 'counters' / 'spec' / a GPU name (its table name) / a peaks file, validated before any
    profile is read (a :class:`~roofline.hardware.peaks.Peaks` given by the API is used as it is)."""
    if not isinstance(value, str) or value in PEAK_SOURCES:
        return value
    from roofline.ingest.amd import rocprof_peaks

    if rocprof_peaks.is_peaks_file(value):  # AMD: measured roofline.csv, or the sysinfo.csv arch model
        return rocprof_peaks.peaks_from(value)
    from roofline.hardware.peaks import Peaks

    if value.lower().endswith(".toml") or Path(value).exists():
        return Peaks.from_toml(value)
    from roofline.hardware.names import require

    return require(value).name


def portable_peaks(value: str) -> str:
    """The ``--peaks`` value as another process (a batch worker, maybe in another folder) must see it."""
    from roofline.ingest.amd import rocprof_peaks

    if value.lower().endswith(".toml") or (value not in PEAK_SOURCES and rocprof_peaks.is_peaks_file(value)):
        return str(Path(value).absolute())
    return value


def parse_device_map(pairs: Iterable[str]) -> dict[str, str]:
    """``--device-map NAME=KNOWN`` pairs: KNOWN must be a table entry (checked before any file is read)."""
    from roofline.hardware.names import require

    out = {}
    for pair in pairs:
        name, sep, known = pair.partition("=")
        if not sep or not name.strip() or not known.strip():
            raise OptionError(f"expected NAME=KNOWN, got {pair!r}", "--device-map")
        out[name.strip()] = require(known.strip()).name
    return out


@dataclass(frozen=True)
class Resolved:
    """Options checked and parsed: what the stages use."""

    options: Options
    peaks: str | Peaks
    device_map: dict[str, str]
    links: UserLinks | None = None


def resolve(options: Options) -> Resolved:
    """Check every option before any input is read: a bad one fails the run, not each input."""
    from roofline.hardware.names import require

    peaks = parse_peaks(options.peaks)
    if options.device:
        require(options.device)  # unknown names fail before any file is read
    links = None
    if options.links:
        from roofline.hardware.links import load_links

        links = load_links(options.links)  # a bad file fails before any input is read
    return Resolved(options, peaks, parse_device_map(options.device_map), links)


# ---- inputs --------------------------------------------------------------------------------------------

def expand(paths: Iterable[str | Path], globs: bool = False, absolute: bool = False,
           exclude: Path | None = None) -> Inputs:
    """The inputs that ``paths`` name: batch datasets as themselves, folders as the profiles inside them,
    glob patterns (with ``globs``: ``*``/``?``/``[``, ``**`` recursing) as what they match, anything else as
    a file, even one that does not exist (it then fails as an input rather than vanishing).

    ``absolute``: absolute, de-duplicated and sorted (a batch's inputs, named the same from every worker);
    else in the order given. A folder given by name that holds no profile is listed in ``empty_folders``
    when there is anything else to read; a pattern that matched nothing in ``unmatched``."""
    from roofline.batch.dataset import is_dataset
    from roofline.ingest.registry import expand as expand_folders
    from roofline.ingest.registry import glob_files, unique_real

    given = [Path(p) if not isinstance(p, Path) else p for p in paths]
    out = Inputs(given=given)
    if absolute:
        found: set[Path] = set()
        for pattern in map(str, given):
            if Path(pattern).is_dir():
                hits = [Path(p) for p in expand_folders([pattern], out.skipped)]
            elif globs and glob.has_magic(pattern):
                hits = glob_files(pattern)
            else:
                hits = [Path(pattern)]
            if not hits:
                out.unmatched.append(pattern)
            found.update(Path(os.path.abspath(p)) for p in hits)
        if exclude is not None:
            root = Path(os.path.abspath(exclude))
            found = {p for p in found if root not in p.parents}
        # a file reached by two paths (symlinks) is one input, under its shortest path
        out.files = sorted(unique_real(sorted(found, key=lambda p: (len(p.parts), str(p)))))
        return out
    out.datasets = [p for p in given if is_dataset(p)]
    out.files = expand_folders([p for p in given if p not in out.datasets], out.skipped)
    for p in given:  # a folder given by name that holds no profile (e.g. a folder named x.ncu-rep) is said
        if p not in out.datasets and p.is_dir() and not expand_folders([p]) and (out.files or len(given) > 1):
            out.empty_folders.append(p)
    return out


# ---- reading -------------------------------------------------------------------------------------------

def read_one(path: Path) -> pd.DataFrame:
    """One input's kernels frame, as its reader gives it (what the profile records: no spec-table roofs yet);
    raises the input's typed error."""
    from roofline.ingest.registry import reader_for
    from roofline.ingest.validate import DAMAGE_TYPES, checked, damage_error

    try:
        frame = reader_for(path).read(path)  # type: ignore[misc]
    except SchemaError as exc:  # a reader's values that do not fit the schema (text in a count): the file, said
        raise CorruptReportError(path, f"damaged: its values do not fit the schema ({exc})") from None
    except DAMAGE_TYPES as exc:  # a field of a type or size no reader site expected: the file, said
        if debug_enabled():
            raise
        raise damage_error(path, exc) from None
    return checked(frame)  # implausible numbers: unavailable, noted


def read_dataset(path: Path) -> pd.DataFrame:
    """A batch dataset stands for its kernels, as ingested (roofs attached: the stage leaves them as they are).
    Only the canonical columns are read (the selection is pushed into the Parquet scan)."""
    from roofline.batch.dataset import open_dataset
    from roofline.schema import kernel_columns

    return open_dataset(path, "kernels", columns=kernel_columns())[list(kernel_columns())]


@contextlib.contextmanager
def captures_given(captures: Sequence[Path]) -> Iterator[None]:
    """Graph-capture traces for the reads inside the block (else each replay's ``capture_traces/``)."""
    if not captures:
        yield
        return
    from roofline.ingest.torch.graphs import CAPTURES

    token = CAPTURES.set(tuple(captures))
    try:
        yield
    finally:
        CAPTURES.reset(token)


def _no_bar(files: list[Path]) -> contextlib.AbstractContextManager[Iterable[Path]]:
    return contextlib.nullcontext(files)


def read_inputs(inputs: Inputs, report: Report | None = None,
                progress: Progress | None = None) -> tuple[pd.DataFrame, list[Failure]]:
    """Every input's kernels in one frame, and the inputs that failed (each also reported as it fails).

    A CPU-only profile is not a failure: it is reported and its provenance says why it has no rows. With
    ``ROOFLINE_DEBUG`` set, a bug in a reader (an untyped exception) is raised instead of recorded."""
    from roofline.ingest import concat
    from roofline.ingest.validate import warnings_of

    say = report or (lambda m: None)
    frames: list[pd.DataFrame] = [read_dataset(p) for p in inputs.datasets]
    failures: list[Failure] = []
    for p in inputs.empty_folders:
        failures.append(Failure(str(p), f"{path_text(p)}: a folder with no profile files in it"))
        say(Message("error", failures[-1].message))
    for p in inputs.skipped:
        say(Message("info", f"{path_text(p)}: the capture folder's index (capture traces and their batch sizes, "
                            "read with the replay's --capture), not a profile: skipped"))
    no_gpu: list[dict[str, str]] = []
    with (progress or _no_bar)(inputs.files) as bar:
        for path in bar:
            try:
                frames.append(read_one(path))
                for line in warnings_of(frames[-1]):
                    say(Message("warning", line))
            except NoGpuWorkError as exc:  # a valid CPU-only profile: nothing to draw, not a failure (issue 17)
                say(Message("info", f"{exc} (no GPU kernels: not an error)"))
                no_gpu.append({"source_file": exc.path, "no_gpu_work": exc.problem})
            except RooflineError as exc:
                failures.append(Failure(str(path), str(exc), exc))
                say(Message("error", str(exc)))
            except Exception as exc:
                if debug_enabled():
                    raise
                text = f"{path_text(path)}: unexpected {type(exc).__name__} while reading: {exc} (a bug; please report it)"
                failures.append(Failure(str(path), text, exc))
                say(Message("error", text))
    if not inputs.files and not inputs.datasets:
        raise NoInputsError("no profile files found in " + ", ".join(map(path_text, inputs.given)))
    out = concat(frames)
    if no_gpu:  # the empty (or partial) result says which inputs had no GPU work
        from roofline.schema import get_provenance, set_provenance

        set_provenance(out, [*get_provenance(out), *no_gpu])
    return out, failures


class NoInputsError(RooflineError):
    """The paths named no profile at all."""


# ---- joins, device and roofs ---------------------------------------------------------------------------

def join_counters(timeline: pd.DataFrame, counters: pd.DataFrame, report: Report | None = None) -> pd.DataFrame:
    """``--counters``: the reports' per-launch counters carried onto the timeline; a summary line.

    Both frames get their table roofs first (:func:`~roofline.hardware.attach.attach_roofs`; the stage after
    the join then leaves them as they are): a report's L1/L2 roof is carried only where the timeline has
    none, the spec table's included, and it may itself be the table's at the report's profiled clock."""
    from roofline.analysis.join import join_counters as join
    from roofline.analysis.join import unmatched_summary
    from roofline.hardware.attach import attach_roofs

    joined = join(attach_roofs(timeline), attach_roofs(counters))
    s = unmatched_summary(joined)
    if s["launches"] and report is not None:
        names = ", ".join(f"{k['kernel_name'][:60]} ({k['time_s'] * 1e3:.3g} ms)" for k in s["unmatched_kernels"][:5])
        how = ", ".join(f"{n} {m.split(':')[0]}" for m, n in s["by_method"].items() if not m.startswith("unmatched"))
        report(Message("warning", f"counters: {s['launches'] - s['unmatched_launches']} of {s['launches']} kernel "
                                  f"launches matched ({how or 'none'}); "
                                  f"{100 * (s['unmatched_time_share'] or 0):.1f}% of kernel time has no counterpart"
                                  + (f": {names}" + (" ..." if len(s["unmatched_kernels"]) > 5 else "") if names else "")))
    return joined


def missing_roof_messages(result: pd.DataFrame) -> list[Message]:
    """One warning per (input, device) whose kernels lack a compute roof for the precision they use or a
    DRAM roof, with the option that fixes it; the analysis still succeeds (issue 17)."""
    from roofline.hardware.roofs import missing_roofs

    out = []
    for src, dev, what, why in missing_roofs(result):
        if dev:
            fix = (f'pass --device-map "{dev}=<GPU>" (see `roofline devices`), or --peaks \'<GPU>\' / '
                   "--peaks FILE.toml for all devices")
        else:
            fix = "the profile names no GPU: pass --device '<GPU>' (see `roofline devices`) or --peaks FILE.toml"
        out.append(Message("warning", f"warning: {src}: no {what} roof for {dev or 'an unnamed device'} ({why}); {fix}"))
    return out


# ---- the whole run -------------------------------------------------------------------------------------

def analyse(kernels: pd.DataFrame, resolved: Resolved) -> pd.DataFrame:
    """The roofline frame of kernels whose device and roofs are attached."""
    from roofline.analysis import analyze

    o = resolved.options
    return analyze(kernels, peaks=resolved.peaks, levels=o.levels, clock=o.clock,
                   latency_threshold_pct=o.latency_threshold_pct, links=resolved.links)


def run(paths: Iterable[str | Path], options: Options | None = None, report: Report | None = None,
        progress: Progress | None = None) -> Analysis:
    """Every stage over ``paths`` (files, folders, batch datasets). Bad inputs are failures of the result;
    bad options raise :class:`OptionError` / ``UnknownDeviceError`` before anything is read."""
    from roofline.hardware.attach import attach_roofs
    from roofline.hardware.peaks import recorded_levels

    options = options or Options()
    messages: list[Message] = []

    def say(m: Message) -> None:
        messages.append(m)
        if report is not None:
            report(m)

    resolved = resolve(options)
    inputs = expand(paths)
    with captures_given(options.captures):
        kernels, failures = read_inputs(inputs, say, progress)
    n_inputs = inputs.count
    if options.counters:
        counters, bad = read_inputs(expand(options.counters), say)
        failures += bad
        kernels = join_counters(kernels, counters, say)
    kernels = attach_roofs(kernels, options.device, resolved.device_map)
    try:
        frame = analyse(kernels, resolved)
    except ValueError as exc:  # levels or clock the analysis does not know
        raise OptionError(str(exc)) from None
    missing = missing_roof_messages(frame)
    for m in missing:
        say(m)
    if options.strict:
        failures += [Failure("", m.text) for m in missing]
    return Analysis(frame=frame, kernels=kernels, failures=failures, messages=messages, inputs=n_inputs,
                    levels=recorded_levels(frame, options.levels), missing_roofs=len(missing))


def summarise(paths: Iterable[str | Path], options: Options | None = None, *, by: str | None, top: int | None,
              name: str | None = None, nvtx: str | None = None, bound: str | None = None,
              precision: str | None = None, report: Report | None = None) -> tuple[Analysis, int] | None:
    """The summary of batch datasets without loading every row: with ``by``, one row per group; else the ``top``
    longest rows; filtered as ``analysis.select`` does. Streams each dataset's kernels through the roofs stage
    and the analysis one record batch at a time (:mod:`roofline.batch.scan`), so memory does not grow with
    the dataset. Returns the analysis and the number of rows before ``top``, or None when ``paths`` are not all
    datasets (or options join other inputs in): the caller then runs :func:`run`."""
    from roofline.hardware.attach import attach_roofs

    options = options or Options()
    inputs = expand(paths)
    if inputs.files or inputs.empty_folders or not inputs.datasets or options.counters or options.captures:
        return None
    resolved = resolve(options)
    from roofline.batch.scan import summarise as stream

    def rows(kernels: pd.DataFrame) -> pd.DataFrame:
        try:
            return analyse(attach_roofs(kernels, options.device, resolved.device_map), resolved)
        except ValueError as exc:  # levels or clock the analysis does not know
            raise OptionError(str(exc)) from None

    done = stream(inputs.datasets, rows, missing_roof_messages, tuple(options.levels), by=by, top=top, name=name,
                  nvtx=nvtx, bound=bound, precision=precision, latency_threshold_pct=options.latency_threshold_pct)
    for m in done.messages:
        if report is not None:
            report(m)
    failures = [Failure("", m.text) for m in done.messages] if options.strict else []
    from roofline.schema import empty_kernels_frame

    return Analysis(frame=done.frame, kernels=empty_kernels_frame(), failures=failures, messages=done.messages,
                    inputs=inputs.count, levels=done.levels, missing_roofs=len(done.messages)), done.total


def analyse_file(path: Path, options: Options) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One input through every stage (the batch's unit of work): its kernels as attached and its roofline
    frame. Raises the input's typed error."""
    from roofline.hardware.attach import attach_roofs

    resolved = resolve(options)
    with captures_given(options.captures):
        kernels = read_one(path)
    kernels = attach_roofs(kernels, options.device, resolved.device_map)
    return kernels, analyse(kernels, resolved)


def from_frame(kernels: pd.DataFrame, options: Options | None = None) -> Analysis:
    """A kernels frame already read (``roofline.read``) through the device, roofs and analysis stages."""
    from roofline.hardware.attach import attach_roofs
    from roofline.hardware.peaks import recorded_levels

    options = options or Options()
    resolved = resolve(options)
    kernels = attach_roofs(kernels, options.device, resolved.device_map)
    frame = analyse(kernels, resolved)
    return Analysis(frame=frame, kernels=kernels, inputs=1, levels=recorded_levels(frame, options.levels))


def debug_enabled() -> bool:
    """``ROOFLINE_DEBUG`` set: bugs raise with their traceback instead of becoming one line."""
    return bool(os.environ.get("ROOFLINE_DEBUG"))


def option_values(options: Options) -> dict[str, Any]:
    """The options as plain values (provenance, JSON)."""
    from dataclasses import asdict

    return {k: ([str(x) for x in v] if isinstance(v, tuple) else v) for k, v in asdict(options).items()}


__all__ = ["Analysis", "Failure", "Inputs", "Message", "NoInputsError", "OptionError", "Options", "Resolved",
           "analyse", "analyse_file", "captures_given", "expand", "from_frame", "join_counters",
           "missing_roof_messages", "parse_device_map", "parse_peaks", "portable_peaks", "read_inputs", "read_one",
           "resolve", "run", "summarise"]
