"""Kineto device ids that ``deviceProperties`` does not list (ROCm's physical numbering): what the trace's own
evidence says of the device its kernels ran on."""

from __future__ import annotations

from typing import Any


def unlisted_devices(used: list[Any], devices: dict[Any, Any]) -> tuple[dict[str, Any], str | None]:
    """(the properties, the note) for kernels on device ids ``deviceProperties`` does not list, where more
    than one device is listed: ROCm's Kineto numbers a kernel's device physically (``device: 6``) while
    ``deviceProperties`` lists the devices HIP_VISIBLE_DEVICES made visible (ids 0–3), and the trace records
    nothing that maps one to the other. When every listed device is the same model, the kernels ran on that
    model whichever it was: its properties are used, and the note says so; else none ({}) and the note says why."""
    missing = sorted({d for d in used if d not in devices}, key=str)
    if not missing or len(devices) < 2:
        return {}, None
    ids = ", ".join(str(i) for i in devices)
    models = {repr((p.get("name"), p.get("numSms"), p.get("computeMajor"), p.get("computeMinor")))  # (damaged: lists)
              for p in devices.values()}
    head = (f"kernels on device {', '.join(map(str, missing))}, which deviceProperties does not list (ids {ids}; "
            "ROCm numbers devices physically, HIP_VISIBLE_DEVICES renumbers them)")
    if len(models) == 1:
        prop = next(iter(devices.values()))
        return prop, f"{head}: every listed device is the same model, {prop.get('name')}: its roofs are used"
    return {}, f"{head}: the listed devices differ, so their device is unknown (pass --device)"
