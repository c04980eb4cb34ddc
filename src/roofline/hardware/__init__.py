"""GPU hardware facts: the vetted spec table of datasheet peaks, and typed peak values."""

from roofline.hardware.specs import GpuSpec, UnknownDeviceError, fill_spec_peaks, known_devices, load_specs, lookup, require

__all__ = ["GpuSpec", "UnknownDeviceError", "fill_spec_peaks", "known_devices", "load_specs", "lookup", "require"]
