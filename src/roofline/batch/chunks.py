"""Cutting a batch's inputs into chunks: one chunk is one local job or one Dask task, written as one part
per table."""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import islice
from typing import Any

from roofline.batch.worker import Chunk, Item, Options

#: a Dask task carries inputs for about this long: the scheduler round trip (milliseconds) becomes
#: noise, and the last tasks are still short enough to spread over every worker
CHUNK_TARGET_S = 0.5
#: at most this many inputs per chunk (skipped inputs take microseconds: this bounds a task's size)
MAX_CHUNK = 256


def make_chunk(items: list[Item], root: str, gen: int, opts: Options, token: str = "") -> Chunk | None:
    return Chunk(root, gen, opts, tuple(items), token) if items else None


class ChunkSizer:
    """How many inputs the next chunk carries: about ``target_s`` of work at the seconds per input measured
    so far (one input per chunk until there is a measurement), at most ``max_size``, and at most a fair share
    of what is left, so the end of the batch still spreads over every worker."""

    def __init__(self, total: int, slots: int, target_s: float = CHUNK_TARGET_S, max_size: int = MAX_CHUNK) -> None:
        self.left, self.slots, self.target_s, self.max_size = total, max(1, slots), target_s, max_size
        self.per_input_s: float | None = None

    def observe(self, inputs: int, seconds: float) -> None:
        if inputs > 0:
            now = max(seconds, 0.0) / inputs
            # a moving average: a worker's first (cold) task or one slow file does not set the size alone
            self.per_input_s = now if self.per_input_s is None else 0.7 * self.per_input_s + 0.3 * now

    def size(self) -> int:
        want = 1 if self.per_input_s is None else int(self.target_s / max(self.per_input_s, 1e-6))
        fair = math.ceil(self.left / (2 * self.slots))
        return max(1, min(want, self.max_size, fair))

    def take(self, tasks: Iterator[Any]) -> list[Any]:
        chunk = list(islice(tasks, self.size()))
        self.left -= len(chunk)
        return chunk
