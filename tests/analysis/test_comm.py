"""Collectives on the links: a synthetic Kineto trace built from a published nccl-tests run reproduces its busbw
column; placement, link roofs and the --links file; exposed vs overlapped on a timeline built to be known."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import cli
from kineto_synthetic import kineto
from roofline.hardware.links import LinksFileError, load_links
from roofline.pipeline import Options, run

# all_reduce_perf -b 8 -e 8G -f 2 -g 1 on 16 ranks (2 nodes × 8 "NVIDIA H100 80GB HBM3"), float, sum: the
# out-of-place columns (size B, count, time µs, algbw GB/s, busbw GB/s) as published in
# github.com/lessizzmore/create-a3mega-ztan-fork, file "ztan-NCCL-test-result" (commit 02dd8f455c43).
NCCL_TESTS_ALL_REDUCE_16 = [
    (8, 2, 135.8, 0.00, 0.00), (16, 4, 123.2, 0.00, 0.00), (32, 8, 123.3, 0.00, 0.00), (64, 16, 123.4, 0.00, 0.00),
    (128, 32, 123.0, 0.00, 0.00), (256, 64, 123.6, 0.00, 0.00), (512, 128, 126.6, 0.00, 0.01),
    (1024, 256, 147.1, 0.01, 0.01), (2048, 512, 125.8, 0.02, 0.03), (4096, 1024, 126.9, 0.03, 0.06),
    (8192, 2048, 131.6, 0.06, 0.12), (16384, 4096, 138.6, 0.12, 0.22), (32768, 8192, 155.2, 0.21, 0.40),
    (65536, 16384, 159.4, 0.41, 0.77), (131072, 32768, 159.3, 0.82, 1.54), (262144, 65536, 167.1, 1.57, 2.94),
    (524288, 131072, 174.2, 3.01, 5.64), (1048576, 262144, 203.2, 5.16, 9.68), (2097152, 524288, 254.0, 8.26, 15.48),
    (4194304, 1048576, 364.6, 11.50, 21.57), (8388608, 2097152, 571.9, 14.67, 27.50),
    (16777216, 4194304, 977.6, 17.16, 32.18), (33554432, 8388608, 1059.9, 31.66, 59.36),
    (67108864, 16777216, 1261.6, 53.20, 99.74), (134217728, 33554432, 1652.2, 81.24, 152.32),
    (268435456, 67108864, 2360.9, 113.70, 213.19), (536870912, 134217728, 3817.5, 140.63, 263.69),
    (1073741824, 268435456, 6759.0, 158.86, 297.86), (2147483648, 536870912, 12646, 169.81, 318.40),
    (4294967296, 1073741824, 24361, 176.31, 330.58), (8589934592, 2147483648, 47535, 180.71, 338.82),
]


# all_gather_perf -b 16M -e 1024M -i 16777216 -g 2 -d bfloat16 (2 ranks: CUDA_VISIBLE_DEVICES=0,1): out-of-place
# (size B = total output, count = elements each rank sends, time µs, algbw, busbw), as published in NVIDIA/nccl
# issue #1435 ("Bandwidth is different for GPU 0,1 and GPU 6,7", 2024-09-10), its first table.
NCCL_TESTS_ALL_GATHER_2 = [
    (16777216, 4194304, 108.8, 154.20, 77.10), (33554432, 8388608, 183.0, 183.33, 91.66),
    (50331648, 12582912, 237.9, 211.57, 105.78), (67108864, 16777216, 292.3, 229.59, 114.79),
    (83886080, 20971520, 354.2, 236.81, 118.41), (100663296, 25165824, 400.9, 251.11, 125.56),
    (117440512, 29360128, 490.8, 239.27, 119.64),
]


def test_a_published_all_gather_run_as_a_trace_reproduces_its_busbw_with_the_size_n_times_the_input(tmp_path):
    cols, ts = [], 1_000_000.0
    for size, count, t_us, _, _ in NCCL_TESTS_ALL_GATHER_2:
        assert size == 2 * count * 2  # two ranks' bf16 messages: the output all-gather writes
        cols.append({"name": "_allgather_base", "in": count, "out": 2 * count, "n": 2, "dtype": "BFloat16",
                     "ts": ts, "dur": t_us})
        ts += t_us + 1000
    frame = run([kineto(tmp_path / "ag.pt.trace.json", cols, world=2)]).frame
    rows = frame[frame["collective"] == "all_gather"].sort_values("message_bytes")
    assert len(rows) == len(NCCL_TESTS_ALL_GATHER_2)
    for (_, r), (size, _, _, algbw, busbw) in zip(rows.iterrows(), NCCL_TESTS_ALL_GATHER_2):
        assert r["message_bytes"] == size and r["bus_factor"] == 0.5
        assert abs(r["algorithm_bandwidth_bytes_per_s"] / 1e9 - algbw) <= 0.005 + 1e-3 * algbw
        assert abs(r["bus_bandwidth_bytes_per_s"] / 1e9 - busbw) <= 0.005 + 1e-3 * busbw


def published_trace(tmp_path: Path) -> Path:
    cols, ts = [], 1_000_000.0
    for size, count, t_us, _, _ in NCCL_TESTS_ALL_REDUCE_16:
        assert size == count * 4  # float
        cols.append({"name": "allreduce", "in": count, "out": count, "n": 16, "ts": ts, "dur": t_us})
        ts += t_us + 1000
    return kineto(tmp_path / "nccl_tests.pt.trace.json", cols)


def test_synthetic_trace_of_published_nccl_tests_results_reproduces_their_busbw(tmp_path):
    frame = run([published_trace(tmp_path)]).frame
    rows = frame[frame["collective"] == "all_reduce"].sort_values("message_bytes")
    assert len(rows) == len(NCCL_TESTS_ALL_REDUCE_16)
    for (_, r), (size, _, t_us, algbw, busbw) in zip(rows.iterrows(), NCCL_TESTS_ALL_REDUCE_16):
        assert r["message_bytes"] == size
        assert r["bus_factor"] == pytest.approx(2 * 15 / 16)
        # nccl-tests prints GB/s (1e9 B/s) with two decimals and its time to 4-5 digits: within that rounding
        assert abs(r["algorithm_bandwidth_bytes_per_s"] / 1e9 - algbw) <= 0.005 + 1e-3 * algbw
        assert abs(r["bus_bandwidth_bytes_per_s"] / 1e9 - busbw) <= 0.005 + 1e-3 * busbw


def test_placement_is_assumed_unless_the_links_file_gives_the_node_size(tmp_path):
    trace = published_trace(tmp_path)
    big = lambda f: f[f["message_bytes"] == 8589934592].iloc[0]
    r = big(run([trace]).frame)
    assert r["link_placement"].startswith("intra-node (assumed: ")
    assert r["link_roof_bytes_per_s"] == 450e9  # H100 SXM NVLink 4: 900 GB/s bidirectional
    assert r["pct_of_link_roof"] == pytest.approx(100 * r["bus_bandwidth_bytes_per_s"] / 450e9)
    links = tmp_path / "links.toml"
    links.write_text("[placement]\ngpus_per_node = 8\n")
    r = big(run([trace], Options(links=str(links))).frame)
    assert r["link_placement"].startswith("inter-node (2 nodes): recorded process group ranks")
    assert math.isnan(r["link_roof_bytes_per_s"]) and math.isnan(r["pct_of_link_roof"])
    assert "records no NIC" in r["link_roof_bytes_per_s_source"]
    links.write_text('[placement]\ngpus_per_node = 8\n[inter_node]\nname = "8x 400 Gb/s per node"\n'
                     'unidirectional_bytes_per_s = 5.0e10\nsource = "a test figure"\n')
    r = big(run([trace], Options(links=str(links))).frame)
    assert r["link_roof_bytes_per_s"] == 5.0e10
    assert r["link_roof_bytes_per_s_source"].startswith("8x 400 Gb/s per node: 50 GB/s per direction (user: a test figure")
    assert r["pct_of_link_roof"] == pytest.approx(100 * r["bus_bandwidth_bytes_per_s"] / 5.0e10)


@pytest.mark.parametrize(("text", "says"), [
    ("[inter_node]\nunidirectional_bytes_per_s = -1\nsource = 'x'\n", "positive number"),
    ("[inter_node]\nunidirectional_bytes_per_s = 1e10\n", "source must say"),
    ("[placement]\ngpus_per_node = 0\n", "positive integer"),
    ("[nic]\nx = 1\n", "unknown section"),
    ("not toml = = 1", "not TOML"),
])
def test_a_bad_links_file_is_a_typed_error_naming_it(tmp_path, text, says):
    p = tmp_path / "links.toml"
    p.write_text(text)
    with pytest.raises(LinksFileError, match=says) as e:
        load_links(p)
    assert str(p) in str(e.value)


def test_a_bad_links_file_is_one_line_and_a_nonzero_exit(tmp_path):
    p = tmp_path / "links.toml"
    p.write_text("[placement]\ngpus_per_node = 'eight'\n")
    r = cli("analyze", str(published_trace(tmp_path)), "--links", str(p))
    assert r.returncode != 0
    assert len(r.stderr.strip().splitlines()) == 1 and str(p) in r.stderr and "gpus_per_node" in r.stderr


def test_exposed_and_overlapped_time_of_a_known_timeline(tmp_path):
    """Collective kernel [100, 200) µs, compute kernels [50, 120) and [150, 160) and [190, 300): overlapped
    20 + 10 + 10 = 40 µs, exposed 60 µs; a second collective [400, 450) with no compute: all exposed."""
    trace = kineto(tmp_path / "t.pt.trace.json",
                   [{"name": "allreduce", "in": 1000, "out": 1000, "n": 8, "ts": 100.0, "dur": 100.0},
                    {"name": "allreduce", "in": 1000, "out": 1000, "n": 8, "ts": 400.0, "dur": 50.0}],
                   compute=[(50.0, 70.0), (150.0, 10.0), (190.0, 110.0)])
    frame = run([trace]).frame
    rows = frame[frame["collective"] == "all_reduce"].sort_values("duration_s", ascending=False)
    assert rows["comm_overlapped_s"].tolist() == pytest.approx([40e-6, 0.0])
    assert rows["comm_exposed_s"].tolist() == pytest.approx([60e-6, 50e-6])
    from roofline.analysis.headline import headlines

    h = headlines(frame)[0]
    assert (h.comm_exposed_s, h.comm_overlapped_s) == pytest.approx((110e-6, 40e-6))
    assert frame[frame["collective"].isna()]["comm_exposed_s"].isna().all()  # null on other rows


def test_group_size_not_recorded_leaves_bus_bandwidth_unavailable_with_the_reason(tmp_path):
    trace = kineto(tmp_path / "t.pt.trace.json", [{"name": "allreduce", "in": 1000, "out": 1000, "n": 0,
                                                   "ts": 100.0, "dur": 10.0}])
    r = run([trace]).frame.query("collective == 'all_reduce'").iloc[0]
    assert r["algorithm_bandwidth_bytes_per_s"] == pytest.approx(4000 / 10e-6)
    assert math.isnan(r["bus_bandwidth_bytes_per_s"]) and math.isnan(r["bus_factor"])
    assert r["bus_bandwidth_bytes_per_s_source"].startswith("unavailable: ") and "Group size" in \
        r["bus_bandwidth_bytes_per_s_source"]


def test_all_gather_moves_n_times_its_input_and_reduce_scatter_its_whole_input(tmp_path):
    trace = kineto(tmp_path / "t.pt.trace.json",
                   [{"name": "_allgather_base", "in": 100, "out": 800, "n": 8, "ts": 100.0, "dur": 10.0,
                     "dtype": "BFloat16"},
                    {"name": "_reduce_scatter_base", "in": 800, "out": 100, "n": 8, "ts": 200.0, "dur": 20.0,
                     "dtype": "BFloat16"}])
    f = run([trace]).frame.set_index("collective")
    assert f.loc["all_gather", "message_bytes"] == 1600 and f.loc["reduce_scatter", "message_bytes"] == 1600
    assert f.loc["all_gather", "bus_bandwidth_bytes_per_s"] == pytest.approx(1600 / 10e-6 * 7 / 8)
    assert f.loc["reduce_scatter", "bus_bandwidth_bytes_per_s"] == pytest.approx(1600 / 20e-6 * 7 / 8)


def test_a_missing_links_file_fails_before_any_input_is_read(tmp_path):
    with pytest.raises(LinksFileError, match="no such links file"):
        run([tmp_path / "nothing-here.json"], Options(links=str(tmp_path / "missing.toml")))


def test_a_timeline_without_sizes_gets_exposed_and_overlapped_time_from_its_start_times(tmp_path):
    """An nsys export: NCCL all-reduce kernel [1000, 2000) ns, compute kernels [500, 1200) and [1900, 2500) on the
    same device: 300 ns overlapped, 700 exposed; the collective from the kernel's name, its size unavailable."""
    from nsys_synthetic import export_of_launches, run_sql

    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    gemm = "void gemm_kernel<float>(float const*, float*, int)"
    dims = (1, 1, 1, 32, 1, 1)
    path = export_of_launches(tmp_path / "t.sqlite", [(nccl, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", nccl, dims, 1),
                                                      (gemm, "gemm_kernel", gemm, dims, 1),
                                                      (gemm, "gemm_kernel", gemm, dims, 1)], device="NVIDIA H100 80GB HBM3")
    run_sql(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 1000, end = 2000 WHERE correlationId = 1",
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 500, end = 1200 WHERE correlationId = 2",
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 1900, end = 2500 WHERE correlationId = 3")
    frame = run([path]).frame
    r = frame[frame["collective"].notna()].iloc[0]
    assert r["collective"] == "all_reduce" and r["collective_source"].startswith("recorded: the kernel's name")
    assert r["comm_overlapped_s"] == pytest.approx(300e-9) and r["comm_exposed_s"] == pytest.approx(700e-9)
    assert math.isnan(r["message_bytes"]) and r["message_bytes_source"].startswith("unavailable: ")
    assert math.isnan(r["bus_bandwidth_bytes_per_s"]) and r["link_roof_bytes_per_s"] == 450e9


def test_by_category_and_the_summary_say_exposed_and_overlapped(tmp_path):
    trace = kineto(tmp_path / "t.pt.trace.json",
                   [{"name": "allreduce", "in": 1000, "out": 1000, "n": 8, "ts": 100.0, "dur": 100.0}],
                   compute=[(50.0, 70.0)])
    from roofline.analysis.categories import by_category

    table = by_category(run([trace]).frame).set_index("category")
    assert table.loc["communication", "comm_exposed_s"] == pytest.approx(80e-6)
    assert table.loc["communication", "comm_overlapped_s"] == pytest.approx(20e-6)
    assert math.isnan(table.loc["elementwise", "comm_exposed_s"])  # not 0: no collective there
    out = cli("analyze", trace, "--by", "category").stdout
    assert "communication: of its NCCL/RCCL kernels, 80 µs ran exposed (no other kernel running) and 20 µs " \
           "overlapped with compute" in out
    out = cli("analyze", trace, "--by", "summary").stdout
    assert "collectives: 100 µs of NCCL/RCCL kernels, 80 µs exposed" in out and "20 µs overlapped with compute" in out
    rec = json.loads(cli("analyze", trace, "--by", "summary", "--format", "json").stdout)
    first = rec["headline"][0]  # the envelope (docs/agents.md): the headlines, nested as they are
    assert first["comm_exposed_s"] == pytest.approx(80e-6) and first["comm_overlapped_s"] == pytest.approx(20e-6)


def test_the_headline_says_how_many_collectives_have_a_bus_bandwidth_and_their_median_share_of_the_roof(tmp_path):
    """Three collectives: 300 µs and 100 µs with a group size, one without: 2 of 3 have busbw; the time-weighted
    median share of the roof is the 300 µs one's (it holds 3/4 of the weight)."""
    trace = kineto(tmp_path / "t.pt.trace.json",
                   [{"name": "allreduce", "in": 1 << 24, "out": 1 << 24, "n": 8, "ts": 100.0, "dur": 300.0},
                    {"name": "allreduce", "in": 1 << 20, "out": 1 << 20, "n": 8, "ts": 1000.0, "dur": 100.0},
                    {"name": "allreduce", "in": 1 << 20, "out": 1 << 20, "n": 0, "ts": 2000.0, "dur": 100.0}])
    frame = run([trace]).frame
    from roofline.analysis.headline import headlines

    h = headlines(frame)[0]
    assert (h.comm_with_busbw, h.comm_rows) == (2, 3)
    expected = 100 * (4 * (1 << 24) / 300e-6 * 2 * 7 / 8) / 450e9
    assert h.comm_median_pct_of_link_roof == pytest.approx(expected)
    assert h.comm_median_link.startswith("NVLink 4, 18 link(s): 450 GB/s per direction")
    assert "collectives on the links: 2 of 3 with a bus bandwidth" in cli("analyze", trace, "--by", "summary").stdout


def test_by_collective_groups_calls_by_name_size_and_group(tmp_path):
    trace = kineto(tmp_path / "t.pt.trace.json",
                   [{"name": "allreduce", "in": 1 << 20, "out": 1 << 20, "n": 8, "ts": 100.0 + 1000 * i, "dur": d}
                    for i, d in enumerate((100.0, 200.0, 300.0))]
                   + [{"name": "_allgather_base", "in": 1 << 10, "out": 1 << 13, "n": 8, "ts": 9000.0, "dur": 50.0}])
    from roofline.analysis.views import view

    t = view(run([trace]).frame, "collective")
    assert list(t["collective"]) == ["all_reduce", "all_gather"]  # longest total time first
    ar = t.iloc[0]
    assert (ar["calls"], ar["message_bytes"], ar["group_size"]) == (3, 4 << 20, 8)
    assert ar["duration_s"] == pytest.approx(600e-6)
    assert ar["median_bus_bandwidth_bytes_per_s"] == pytest.approx((4 << 20) / 200e-6 * 1.75)
    assert ar["median_pct_of_link_roof"] == pytest.approx(100 * (4 << 20) / 200e-6 * 1.75 / 450e9)
    out = cli("analyze", trace, "--by", "collective").stdout
    assert out.splitlines()[0].split()[:4] == ["collective", "size", "n", "calls"]
    assert "all_reduce" in out.splitlines()[1] and " 3 " in out.splitlines()[1]
    csv = cli("analyze", trace, "--by", "collective", "--format", "csv").stdout
    assert csv.splitlines()[0].startswith("collective,message_bytes,group_size,process_group,calls")
