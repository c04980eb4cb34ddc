"""The reader's one pass over a Kineto trace's events: what it keeps of each category, one list of events
(a decoded piece of the document) at a time. Split out of ``torch_trace.py``."""

from __future__ import annotations

from typing import Any

# (the categories' kinds live beside the decode that tags events by category)
from roofline.ingest.torch.decode import CATEGORIES, KINDS, Checked, Event

NUMBER = (int, float)
#: KINDS with every other category Kineto writes, and None (an event of another phase than "X"), as 0: the scan
#: indexes it (a dict subscript, not a ``get`` call: ~4 ms less on the V100 trace's 216k events)
SCAN_KINDS = {None: 0, **dict.fromkeys(CATEGORIES, 0), **KINDS}


class Scan:
    """What the reader keeps of the events, gathered one list of them at a time (in document order)."""

    def __init__(self) -> None:
        self.ops: list[Event] = []
        self.by_ext: dict[Any, int] = {}  # External id -> the first op with it
        self.runtimes: dict[Any, Event] = {}  # correlation -> launch
        self.gpu: list[Event] = []
        self.steps: list[tuple[float, float, str]] = []
        self.notes: list[Event] = []
        self.skipped = self.n_events = 0
        self.skipped_gpu = 0  # of the skipped: kernels, copies and memsets (their time is missing)
        self.has_ranges = False

    def add(self, events: list[Event]) -> None:
        """One pass, one dict lookup per event: this loop is most of the reader's own time."""
        ops, by_ext, runtimes, gpu, notes, kinds = self.ops, self.by_ext, self.runtimes, self.gpu, self.notes, SCAN_KINDS
        self.n_events += len(events)
        checked = events.__class__ is Checked  # (a typed decode's: every complete event's ts and dur is a number)
        for e in events:
            try:
                kind = kinds[e.cat]  # (0 for an event of another phase than "X": its cat is None)
                if not kind:
                    continue
                if not checked and (e.ts.__class__ not in NUMBER or e.dur.__class__ not in NUMBER):
                    self.skipped += 1
                    self.skipped_gpu += kind == 2
                    continue
                if kind == 1:
                    a = e.args
                    if a is not None:
                        ext = a.external_id if a.external_id is not None else a.external_id_lc  # (_ext, inlined)
                        if ext is not None and ext not in by_ext:
                            by_ext[ext] = len(ops)
                    ops.append(e)
                elif kind == 2:
                    gpu.append(e)
                elif kind == 3:
                    a = e.args
                    if a is not None and a.correlation is not None:
                        runtimes[a.correlation] = e
                elif kind == 4:
                    self.has_ranges = True
                else:  # user annotations: steps, and vLLM's iteration annotations (paged attention's lengths)
                    notes.append(e)
                    if str(e.name).startswith("ProfilerStep#"):
                        self.steps.append((e.ts, e.ts + e.dur, e.name))
            except (KeyError, TypeError):  # a category the reader does not know (a loosely decoded event's), or an
                continue  # unhashable cat, correlation or External id: not an event we can use
