"""GPU hardware facts: the vetted spec table of datasheet peaks, and typed peak values."""

from roofline.hardware.attach import attach_roofs, fill_spec_peaks
from roofline.hardware.names import lookup, require
from roofline.hardware.specs import GpuSpec, UnknownDeviceError, known_devices, load_specs

__all__ = ["GpuSpec", "UnknownDeviceError", "attach_roofs", "fill_spec_peaks", "known_devices", "load_specs", "lookup",
           "require"]
