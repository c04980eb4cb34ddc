"""The nsys reader's shortcuts give what the general path gives (issue 20's read speed): each shortcut is
checked against the general computation on inputs made to hit both its fast and its fallback branches."""

from __future__ import annotations

import numpy as np
import pytest

from roofline.ingest.nsys import nvtx as nsys_nvtx


@pytest.mark.parametrize("seed", range(20))
def test_range_order_is_the_full_sort(seed):
    """Sorted starts take one stable sort by the packed key; equal starts in a group (ties broken by the longer
    range first) and unsorted starts take the full sort: all three give the full sort's order."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    start = np.sort(rng.integers(0, 50 if seed % 2 else 10_000, n))  # odd seeds: many equal starts
    if seed % 5 == 0:
        start = rng.permutation(start)  # not listed by start
    end = start + rng.integers(0, 100, n)
    thread, dom, kind = rng.integers(0, 3, n), rng.integers(0, 2, n), rng.choice([59, 60], n)
    packs = (thread << 40) | (dom << 8) | kind
    r = np.column_stack([thread, dom, kind, start, end]).astype(np.int64)
    want = np.lexsort((-end, start, packs))
    got = nsys_nvtx._range_order(r, packs)
    # equal (key, start, end) rows may come in either order: compare the rows, not the indices
    assert np.array_equal(r[got], r[want])
    assert np.array_equal(r[nsys_nvtx._range_order(r, None)], r[np.lexsort((-end, start, kind, dom, thread))])


def test_read_restores_the_garbage_collector(tmp_path):
    """The read runs with the cyclic GC paused (its rows hold no cycles) and leaves it as it found it, also
    when the export is damaged."""
    import gc

    from nsys_synthetic import make_export
    from roofline.errors import RooflineError
    from roofline.ingest.nsys import export as nsys

    good = make_export(tmp_path / "good.sqlite")
    bad = make_export(tmp_path / "bad.sqlite")
    con = __import__("sqlite3").connect(bad)
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'x'")  # text where a time belongs
    con.commit()
    con.close()
    was = gc.isenabled()
    try:
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            assert len(nsys.read(good))
            assert gc.isenabled() is state
            with pytest.raises(RooflineError):
                nsys.read(bad)
            assert gc.isenabled() is state
    finally:
        (gc.enable if was else gc.disable)()
