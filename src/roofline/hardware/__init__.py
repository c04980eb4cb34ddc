"""GPU hardware facts: the vetted spec table of datasheet peaks."""

from roofline.hardware.specs import SPECS, GpuSpec, fill_spec_peaks, lookup

__all__ = ["SPECS", "GpuSpec", "fill_spec_peaks", "lookup"]
