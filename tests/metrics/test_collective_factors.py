"""nccl-tests' bus factors and sizes (doc/PERFORMANCE.md, src/*.cu GetBw), written out by hand for n = 8 and 2,
and the collective names of every spelling the profilers write."""

from __future__ import annotations

import pytest

from roofline.metrics.ops.collectives import bus_factor, canonical, collective_bytes, kernel_collective, message_bytes


@pytest.mark.parametrize(("coll", "n", "factor"), [
    ("all_reduce", 8, 1.75), ("all_reduce", 2, 1.0), ("all_reduce", 16, 1.875),
    ("all_gather", 8, 0.875), ("reduce_scatter", 8, 0.875), ("all_to_all", 8, 0.875), ("all_gather", 2, 0.5),
    ("broadcast", 8, 1.0), ("reduce", 8, 1.0), ("send_recv", 2, 1.0), ("gather", 4, 0.75), ("scatter", 4, 0.75),
])
def test_bus_factor_is_nccl_tests(coll, n, factor):
    f, text = bus_factor(coll, n)
    assert f == factor and f"n={n}" in text


@pytest.mark.parametrize(("coll", "n"), [("barrier", 8), ("all_reduce", 0), ("all_reduce", None), (None, 8)])
def test_no_bus_factor_where_nccl_tests_defines_none(coll, n):
    assert bus_factor(coll, n) is None


def test_the_size_is_the_message_as_the_collective_moves_it():
    assert message_bytes("all_gather", 100.0, 800.0)[0] == 800.0  # n × each rank's input
    assert message_bytes("reduce_scatter", 800.0, 100.0)[0] == 800.0  # n × each rank's output
    assert message_bytes("all_reduce", 400.0, 400.0)[0] == 400.0
    assert message_bytes("all_gather", 100.0, None) is None  # the output is what an all-gather moves
    assert collective_bytes(25136, "BFloat16") == 50272 and collective_bytes(20, "Long") == 160
    assert collective_bytes(7, "NoSuchType") is None


@pytest.mark.parametrize(("name", "coll"), [
    ("allreduce", "all_reduce"), ("_allgather_base", "all_gather"), ("allgather_into_tensor_coalesced", "all_gather"),
    ("_reduce_scatter_base", "reduce_scatter"), ("reduce_scatter_tensor_coalesced", "reduce_scatter"),
    ("all_to_allv", "all_to_all"), ("alltoall_base", "all_to_all"), ("c10d::allreduce_", "all_reduce"),
    ("nccl:_all_gather_base", "all_gather"), ("broadcast", "broadcast"), ("send", "send_recv"), ("recv", "send_recv"),
    ("wait", None), ("", None), (3, None),
])
def test_every_spelling_names_its_collective(name, coll):
    assert canonical(name.rstrip("_") if isinstance(name, str) and name.startswith("c10d") else name) == coll


def test_a_name_looked_up_again_names_the_same_collective():
    # canonical remembers plain str names (a trace's collective rows repeat a few): later and interleaved lookups
    # answer as the first did, and a str subclass (not remembered) as its plain text does
    names = ["allreduce", "_allgather_base", "wait", "", "nccl:_reduce_scatter_base", "AllReduce", "send"]
    first = [canonical(n) for n in names]
    assert first == ["all_reduce", "all_gather", None, None, "reduce_scatter", "all_reduce", "send_recv"]
    assert [canonical(n) for n in reversed(names)] == first[::-1]

    class Name(str):
        pass

    assert [canonical(Name(n)) for n in names] == first


@pytest.mark.parametrize(("kernel", "coll"), [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "all_reduce"),  # the V100 trace
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_gather"),  # the B200 trace
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "send_recv"),  # A100
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "reduce_scatter"),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", None),  # the MI300X trace: names none
    ("void at::native::vectorized_elementwise_kernel<4>()", None),
])
def test_kernel_names_spell_their_collective(kernel, coll):
    assert kernel_collective(kernel) == coll
