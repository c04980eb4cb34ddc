"""Small public profiles shipped with the package, one per input format, for `roofline demo` and tests.

Each is a real profile copied unchanged from a public repository under the MIT licence; origin,
commit and licence notice are in ``samples/README.md`` (installed beside them). They stand in until
the project has captures of its own.

    >>> import roofline, roofline.samples
    >>> roofline.analyze(roofline.read(roofline.samples.path("a10g-sgemm")))
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from roofline.errors import RooflineError


@dataclass(frozen=True)
class Sample:
    name: str
    file: str  # file name inside this package
    format: str
    device: str
    what: str


SAMPLES: dict[str, Sample] = {s.name: s for s in (
    Sample("a10g-sgemm", "a10g_sgemm-variants.ncu-rep", "ncu-rep", "NVIDIA A10G",
           "four hand-written FP32 SGEMM variants, 1024³ (Nsight Compute --set roofline)"),
    Sample("a100-selfjoin-fp64", "a100_selfjoin-fp64.ncu-rep", "ncu-rep", "NVIDIA A100-PCIE-40GB",
           "an FP64 similarity self-join kernel, 707 ms (Nsight Compute --set full)"),
    Sample("h100-bert-small", "h100_bert-small.pt.trace.json.gz", "torch-trace", "NVIDIA H100 80GB HBM3",
           "BERT-small inference, bf16, batch 1, seq 512 (PyTorch 2.6 profiler trace)"),
    Sample("mi300x-jax-gemm", "mi300x_jax-gemm.xplane.pb", "xplane", "AMD Instinct MI300X",
           "bf16 GEMMs of several sizes from JAX 0.8 on ROCm (XLA xplane.pb)"),
)}


class UnknownSampleError(RooflineError, KeyError):
    """A sample name that is not shipped; the message lists the known ones."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


def names() -> list[str]:
    """The names of the bundled samples, in a stable order."""
    return list(SAMPLES)


def path(name: str) -> Path:
    """The file of one bundled sample (installed as a plain file inside the package)."""
    try:
        sample = SAMPLES[name]
    except KeyError:
        raise UnknownSampleError(f"unknown sample {name!r}; bundled samples: {', '.join(SAMPLES)}") from None
    # the package is installed as files (setuptools package data), so the traversable is a real path
    return Path(str(resources.files(__name__).joinpath(sample.file)))


def paths() -> list[Path]:
    """Every bundled sample's file."""
    return [path(n) for n in SAMPLES]


__all__ = ["SAMPLES", "Sample", "UnknownSampleError", "names", "path", "paths"]
