"""The HTML report: self-contained, escapes untrusted names, and works in a real headless Chromium.

The browser tests drive Debian's /usr/bin/chromium through Playwright (no browser download): one
browser for the whole module, a fresh page per test. They skip locally when Chromium is missing
and fail in CI, which installs it (.ci/run). Screenshots go to test-artifacts/ (git-ignored) and,
when ROOFLINE_SCREENSHOTS names a folder (``ROOFLINE_SCREENSHOTS=docs/img``), there as well: that
is how docs/img/report-demo.png and docs/img/report-multi-device.png are made.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import roofline
from browser import (  # noqa: F401 - browser and open_page are pytest fixtures
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    READY,
    _browser,
    _need_chromium,
    _open,
    _screenshot,
    _watch,
    browser,
    open_page,
)
from conftest import analysed, kernel_row, shared
from roofline.report import compare_html, html

XSS = "<script>alert(1)</script>"
QUOTES = "k\"'><img src=x onerror=alert(2)>&amp;"
#: the profiles `roofline demo` shows (issue 18: one per format, permissive licences)
BOUND_COLOURS = {"compute-bound": "#d62728", "memory-bound": "#1f77b4", "latency-limited": "#8c8c8c"}


def _rows():
    rows = [kernel_row(kernel_id=i, kernel_name=f"gemm_{i}" if i % 2 else f"softmax_{i}", kernel_short_name=f"k{i}",
                       flop_fp32=10 ** (8 + i % 4), duration_s=1e-3 * (i + 1), nvtx_range="fwd" if i < 3 else "bwd")
            for i in range(6)]
    rows.append(kernel_row(kernel_id=6, kernel_name=XSS, kernel_short_name=XSS, duration_s=9e-3, flop_fp32=5e10))
    rows.append(kernel_row(kernel_id=7, kernel_name=QUOTES, kernel_short_name=QUOTES, duration_s=8e-3))
    rows.append(kernel_row(kernel_id=8, kernel_name="memcpy", kernel_short_name="memcpy", flop_fp32=0.0, dram_bytes=1e6))
    return rows


def _data(page_text: str) -> dict:
    return html.read_data(page_text)


def test_page_is_self_contained_and_names_cannot_break_out():
    text = html.render(analysed(_rows()))
    assert XSS not in text and "<img src=x" not in text
    assert "\\u003cscript\\u003ealert(1)" in text
    assert not re.search(r"<(script|link)[^>]+src=", text)  # nothing loaded from outside
    assert "Plotly" in text and "Content-Security-Policy" in text
    data = _data(text)
    assert XSS in data["kernels"]["name"] and QUOTES in data["kernels"]["name"]  # the JSON keeps them exactly
    assert data["kernels"]["time"][0] == pytest.approx(9e-3)  # longest first
    assert len(text.encode()) < 1.2e6  # the partial plotly bundle, not the 4.8 MB full one


def test_vendored_plotly_is_the_partial_bundle_with_its_licences():
    vendor = Path(html.__file__).parent / "vendor"
    js = html.plotly_js()
    assert js.startswith("/* plotly.js v4.1.1 (MIT") and len(js) < 1.2e6
    assert '"node_modules/plotly.js/src/traces/scatter/index.js"' in js
    # traces the pages never draw are not in it (the full bundle has every one of these); core
    # borrows a few helpers from bar and pie, never their trace modules
    for absent in ("traces/bar/index.js", "traces/pie/index.js", "traces/heatmap/", "traces/scatter3d/", "traces/splom/",
                   "traces/scattergl/", "traces/parcoords/", "plots/map/map.js", "node_modules/@plotly/regl"):
        assert absent not in js, absent
    assert "</script" not in js.lower() and "<!--" not in js  # safe to inline in a <script> element
    assert "MIT License" in (vendor / "LICENSE-plotly.js.txt").read_text()
    listed = (vendor / "bundled-packages.txt").read_text().splitlines()
    assert "plotly.js 4.1.1 (MIT)" in listed
    assert all(re.search(r"\((MIT|ISC|BSD-3-Clause|Zlib)\)$", line) for line in listed), listed


def test_large_data_is_compressed_and_reads_back():
    text = html.render(analysed(_rows()), compress=True)
    assert 'data-encoding="gzip+base64"' in text and XSS not in text
    assert XSS in _data(text)["kernels"]["name"]


def test_empty_profile_renders_a_page_that_says_so():
    text = html.render(analysed([kernel_row()]).iloc[0:0])
    assert "Nothing to plot" in text
    assert _data(text)["meta"]["count"] == 0


# ---- in Chromium ---------------------------------------------------------------------------------

def _level_counts(page):
    """Points drawn per memory level: in the chart's traces (SVG) or on its canvas (large charts)."""
    counts = page.evaluate("""() => document.getElementById('kernel-chart').data.concat(window.rooflineReport.canvasLayers())
        .filter(t => (t.meta || '').startsWith('level:')).map(t => [t.meta.slice(6), t.x.length])""")
    out = {lv: 0 for lv in ("dram", "l2", "l1")}
    for lv, n in counts:
        out[lv] += n
    assert out == page.evaluate("window.rooflineReport.state.levelCounts")
    return out


def _legend(page, chart="kernel-chart"):
    return page.evaluate(f"document.getElementById('{chart}').data.filter(t => t.showlegend !== false).map(t => t.name)")


def _column(page, table: str, key: str) -> list[str]:
    """A category of the kernels in a table's rows (device, bound, ...), read from the page's data."""
    return page.evaluate(f"""() => [...document.querySelectorAll('#{table} tbody tr')].map(tr => {{
        const K = window.rooflineReport.kernels, c = K['{key}_code'][+tr.dataset.kernel];
        return c < 0 ? '' : K.categories['{key}'][c]; }})""")


def test_report_in_headless_chromium(tmp_path, open_page):
    res = analysed(_rows())
    path = html.write(res, tmp_path / "report.html")
    page, problems = open_page(path)
    # one point per kernel and level: 8 kernels have FLOPs and bytes; memcpy is listed, not drawn
    assert _level_counts(page) == {"dram": 8, "l2": 8, "l1": 8}
    assert "1 kernel(s) without FLOPs or bytes: not drawn" in _legend(page)
    # few points: SVG markers, no WebGL context to start
    dram = page.evaluate("document.getElementById('kernel-chart').data.filter(t => t.meta === 'level:dram')")
    assert {t["type"] for t in dram} == {"scatter"}
    # the colours mean the bound, and the legend says so, one entry per bound drawn
    K = page.evaluate("window.rooflineReport.kernels")
    drawn_bounds = set()
    for t in dram:
        for i in t["customdata"]:
            bound = K["categories"]["bound"][K["bound_code"][i]]
            assert t["marker"]["color"] == BOUND_COLOURS[bound]
            drawn_bounds.add(bound)
    keys = page.evaluate("document.getElementById('kernel-chart').data.filter(t => t.meta === 'key:colour')"
                         ".map(t => [t.name, t.marker.color, t.legendgrouptitle.text])")
    assert {k[0] for k in keys} == drawn_bounds and len(drawn_bounds) > 1
    assert all(k[2] == "colour = bound" and k[1] == BOUND_COLOURS[k[0]] for k in keys)
    page.select_option("#f-colour", "precision")
    keys = page.evaluate("document.getElementById('kernel-chart').data.filter(t => t.meta === 'key:colour')"
                         ".map(t => [t.name, t.legendgrouptitle.text])")
    assert keys == [["fp32", "colour = precision"]]
    page.select_option("#f-colour", "bound")

    rows, top = page.locator("#stats-table tbody tr"), page.locator("#top-table tbody tr")
    assert rows.count() == 9 and top.count() == 9
    page.fill("#f-name", "gemm")  # a filter reduces both tables and the chart
    assert rows.count() == 3 and top.count() == 3 and _level_counts(page)["dram"] == 3
    assert all("gemm" in t for t in page.locator("#top-table td.name").all_text_contents())
    page.fill("#f-name", "/gemm_[13/")  # an invalid regex says so, and matches nothing
    error = page.locator("#f-name-error")
    assert error.is_visible() and "invalid regular expression" in error.inner_text()
    assert rows.count() == 0 and _level_counts(page)["dram"] == 0
    page.fill("#f-name", "/gemm_[13]/")
    assert not error.is_visible() and rows.count() == 2
    page.fill("#f-name", "")
    page.select_option("#f-bound", "latency-limited")
    assert 0 < rows.count() < 9 and set(_column(page, "top-table", "bound")) == {"latency-limited"}
    page.select_option("#f-bound", "")
    # the XSS names are text: in the table cell exactly as written, nothing injected
    cells = page.locator("#stats-table td.name").all_text_contents()
    assert XSS in cells and QUOTES in cells
    assert page.locator("img[src='x']").count() == 0
    # hover a point: the details panel shows that kernel's figures
    page.locator("#kernel-chart").scroll_into_view_if_needed()
    x, y, k = page.evaluate("""(name) => { const gd = document.getElementById('kernel-chart');
        const k = window.rooflineReport.kernels.name.indexOf(name);
        const t = gd.data.find(t => t.meta === 'level:dram' && t.customdata.includes(k));
        const L = gd._fullLayout, r = gd.getBoundingClientRect();
        const i = t.customdata.indexOf(k);
        return [r.left + L.xaxis._offset + L.xaxis.l2p(Math.log10(t.x[i])),
                r.top + L.yaxis._offset + L.yaxis.l2p(Math.log10(t.y[i])), k]; }""", XSS)
    page.mouse.move(x - 40, y - 40)
    page.mouse.move(x, y, steps=6)
    page.wait_for_function(f"document.getElementById('details').dataset.kernel === '{k}'", timeout=10_000)
    details = page.locator("#details-list").inner_text()
    assert XSS in details and "achieved" in details and "binding roof" in details and "DRAM/HBM intensity" in details
    page.wait_for_function("document.querySelectorAll('.hovertext').length > 0", timeout=10_000)
    hover = page.locator(".hovertext").all_text_contents()
    assert any(XSS in h for h in hover)  # plotly's label shows the name as text
    _screenshot(page, "report-synthetic.png", publish=False)
    assert problems == []


def test_large_chart_draws_on_a_canvas_in_chromium(tmp_path, open_page):
    # over the page's SVG limit of 3,000 points: the points go on a 2D canvas; data gzip-compressed
    rows = [kernel_row(kernel_id=i, kernel_name=f"k{i}", duration_s=1e-6 * (1 + i % 97), flop_fp32=1e6 * (1 + i % 13))
            for i in range(1200)]
    rows[7].update(kernel_name=XSS, kernel_short_name=XSS)
    path = html.write(analysed(rows), tmp_path / "big.html", compress=True)
    page, problems = open_page(path)
    assert _level_counts(page) == {"dram": 1200, "l2": 1200, "l1": 1200}
    assert page.evaluate("window.rooflineReport.state.canvasPoints") == 3600
    # the points are not in plotly's traces (held there, even invisible, they delayed the first frame)
    assert page.evaluate("document.getElementById('kernel-chart').data.filter(t => (t.meta || '').startsWith('level:')).length") == 0
    assert page.locator("#stats-table tbody tr").count() == 50 and page.locator("#top-table tbody tr").count() == 10
    # hover over the XSS kernel's DRAM point: details and the tooltip show its name as text
    page.locator("#kernel-chart").scroll_into_view_if_needed()
    x, y, k = page.evaluate("""(name) => { const gd = document.getElementById('kernel-chart'), K = window.rooflineReport.kernels;
        const k = K.name.indexOf(name);
        const t = window.rooflineReport.canvasLayers().find(t => t.meta === 'level:dram' && t.customdata.includes(k));
        const i = t.customdata.indexOf(k), L = gd._fullLayout, r = document.getElementById('kernel-canvas').getBoundingClientRect();
        return [r.left + L.xaxis.l2p(Math.log10(t.x[i])), r.top + L.yaxis.l2p(Math.log10(t.y[i])), k]; }""", XSS)
    page.mouse.move(x, y)
    page.wait_for_function(f"document.getElementById('details').dataset.kernel === '{k}'", timeout=10_000)
    tip = page.locator(".canvas-tip")
    assert tip.is_visible() and tip.inner_text().startswith(XSS)
    assert page.locator("img[src='x']").count() == 0
    # zooming redraws the canvas with the points inside the new ranges only
    page.evaluate("Plotly.relayout('kernel-chart', {'xaxis.range': [-1, 0.5]})")
    page.wait_for_function("window.rooflineReport.state.canvasPoints < 3600", timeout=10_000)
    assert problems == []


def test_multi_device_report_opens_on_a_drawable_device(tmp_path, open_page):
    # the A100 report (basic set: no FLOP or byte counters) holds 10 s of kernels, the A10G one 1 ms
    res = roofline.analyze(roofline.read([shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"),
                                          shared("ncu/sm80_a100_mistic-cub-154launches_basic.ncu-rep")]))
    path = html.write(res, tmp_path / "multi.html")
    page, problems = open_page(path)
    options = page.locator("#f-device option").all_text_contents()
    assert options[0] == "NVIDIA A10G (4 of 4 kernel(s) drawable)" and options[1].endswith(" (nothing drawable)"), options
    assert _level_counts(page)["dram"] == 4 and not page.locator("#device-note").is_visible()
    # every table follows the device filter
    assert set(_column(page, "top-table", "device")) == {"NVIDIA A10G"}
    assert set(_column(page, "stats-table", "device")) == {"NVIDIA A10G"}
    assert set(page.locator("#peaks-table tbody tr td:first-child").all_text_contents()) == {"NVIDIA A10G"}
    # the programs chart (below the tables) is drawn after the first view, with the device's roofs and its program
    page.wait_for_function("window.rooflineReport.state.programs === true", timeout=10_000)
    metas = page.evaluate("document.getElementById('program-chart').data.map(t => t.meta)")
    assert "roof:dram" in metas and any(m.startswith("program:") for m in metas), metas
    _screenshot(page, "report-multi-device.png")
    a100 = page.locator("#f-device option").nth(1).get_attribute("value")
    page.select_option("#f-device", a100)
    note = page.locator("#device-note")
    assert note.is_visible() and note.inner_text().startswith(f"Nothing drawable on {a100}")
    assert _level_counts(page) == {"dram": 0, "l2": 0, "l1": 0}
    notes = page.evaluate("document.getElementById('kernel-chart').layout.annotations.map(a => a.text)")
    assert notes == [f"nothing drawable on {a100}"]
    assert set(_column(page, "top-table", "device")) == {a100} and page.locator("#top-table tbody tr").count() == 10
    assert set(page.locator("#peaks-table tbody tr td:first-child").all_text_contents()) <= {a100}
    assert problems == []


def test_demo_report_size_and_page(tmp_path, open_page):
    import roofline.samples

    # the samples `roofline demo` runs on: they ship with the package, so this needs no ../shared
    res = roofline.analyze(roofline.read([roofline.samples.path(n) for n in roofline.samples.names()]))
    path = html.write(res, tmp_path / "demo.html", title="roofline demo")
    assert path.stat().st_size <= 2_000_000
    page, problems = open_page(path)
    # the device with the most drawable time, and something drawn on it
    stats = page.evaluate("window.rooflineReport.devices")
    first = page.locator("#f-device").input_value()
    assert stats[first]["drawnTime"] == max(s["drawnTime"] for s in stats.values()) and stats[first]["drawn"] > 0
    assert sum(_level_counts(page).values()) > 0
    page.select_option("#f-device", "NVIDIA H100 80GB HBM3")  # the most kernels: the view the screenshot shows
    assert _level_counts(page)["dram"] == stats["NVIDIA H100 80GB HBM3"]["drawn"]
    page.set_viewport_size({"width": 1400, "height": 1750})
    _screenshot(page, "report-demo.png", full_page=False)
    assert problems == []


def test_diff_page_shows_units(tmp_path, open_page):
    from roofline.analysis.compare import compare

    base = roofline.analyze(roofline.read([shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep")]))
    cand = base.copy()
    cand["duration_s"] = cand["duration_s"] * np.array([1.0, 0.5, 0.8, 1.2])
    cand = roofline.analyze(cand.drop(columns=[c for c in cand.columns if c.startswith(("achieved_", "pct_", "attainable"))]))
    path = compare_html.write(compare(base, cand), base, cand, tmp_path / "diff.html", "a → b", "summary")
    page, problems = open_page(path, ready="window.rooflineDiff && window.rooflineDiff.ready")
    heads = page.locator("#diff-table thead th").all_text_contents()
    assert {"time base (ms)", "time cand (ms)", "Δ time (%)", "Δ % of roof (points)"} <= set(heads)
    times = page.locator(f"#diff-table tbody tr td:nth-child({heads.index('time base (ms)') + 1})").all_text_contents()
    assert all(t.endswith(" ms") for t in times)
    assert sorted(float(t[:-3]) for t in times) == pytest.approx(sorted(base["duration_s"] * 1e3), rel=5e-3)
    changes = page.locator(f"#diff-table tbody tr td:nth-child({heads.index('Δ time (%)') + 1})").all_text_contents()
    assert sorted(changes) == sorted(["0.0 %", "-50.0 %", "-20.0 %", "+20.0 %"])
    assert problems == []


def test_roof_sets_share_one_trace_and_legend_entry_per_roof_kind_and_toggle_together(tmp_path, open_page):
    # 30 kernels of one GPU, each measured against its own DRAM bandwidth (a roof set each): the chart draws each
    # kind of roof (DRAM, L2, L1, fp32) as one trace and one legend entry, not 30 (plotly's cost is per trace),
    # its segments at the values the kernels' % of roof used, and a click on DRAM hides all 30 DRAM roofs
    from roofline.report.chart_data import roofs as chart_roofs

    rows = [kernel_row(kernel_id=i, kernel_name=f"k{i}", kernel_short_name=f"k{i}", duration_s=1e-3 * (i + 1),
                       peak_dram_bytes_per_s=1e12 * (1.2 ** i)) for i in range(30)]
    res = analysed(rows)
    path = html.write(res, tmp_path / "sets.html")
    page, problems = open_page(path)
    roofs = page.evaluate("document.getElementById('kernel-chart').data.filter(t => (t.meta || '').startsWith('roof:'))"
                          ".map(t => [t.meta, t.legendgroup, t.showlegend !== false, t.name, t.x, t.y, t.text])")
    assert sorted(r[0] for r in roofs) == ["roof:dram", "roof:fp32", "roof:l1", "roof:l2"]
    assert all(r[1] == r[0] and r[2] for r in roofs)  # each its own legend entry and group
    meta, _, _, name, x, y, text = next(r for r in roofs if r[0] == "roof:dram")
    assert name.endswith("… 30 roof sets") and "[roof set" not in name
    # 30 segments split by nulls: each set's DRAM roof at the bandwidth its kernels were measured against
    assert len(x) == len(y) == len(text) == 30 * 3 - 1
    segments = [(x[i:i + 2], y[i:i + 2], text[i:i + 2]) for i in range(0, len(x), 3)]
    assert all(i + 2 >= len(x) or x[i + 2] is None for i in range(0, len(x), 3))
    want = sorted(r.value for r in chart_roofs(res) if r.kind == "bandwidth" and r.key.split("#")[0] == "dram")
    assert sorted(ys[0] / xs[0] for xs, ys, _ in segments) == pytest.approx(want, rel=1e-12)
    assert all(t[0] == t[1] and "[roof set" in t[0] for _, _, t in segments)  # each segment's hover names its set
    # the L2 roof is the same line in every set: one segment, whose hover names all 30 sets
    _, _, _, l2_name, x, y, text = next(r for r in roofs if r[0] == "roof:l2")
    assert l2_name.endswith("… 30 roof sets") and len(x) == 2 and None not in x
    assert text[0] == text[1] and text[0].endswith("[roof sets 1–30 of 30: 30 kernel(s)]"), text
    l2 = {r.value for r in chart_roofs(res) if r.key.split("#")[0] == "l2"}
    assert len(l2) == 1 and y[0] / x[0] == pytest.approx(l2.pop(), rel=1e-12)
    page.locator("#kernel-chart .legend .traces", has_text="30 roof sets").first.locator(".legendtoggle").click(force=True)
    # (plotly tells a click from a double click after its delay: wait for the toggle, do not sleep)
    page.wait_for_function("document.getElementById('kernel-chart').data"
                           ".filter(t => t.legendgroup === 'roof:dram').every(t => t.visible === 'legendonly')",
                           timeout=10_000)
    others = page.evaluate("document.getElementById('kernel-chart').data.filter(t => t.legendgroup === 'roof:l2')"
                           ".map(t => t.visible)")
    assert "legendonly" not in others  # the other kinds stay drawn
    assert problems == []


def _demo_page(tmp_path, open_page, width=1280, height=800):
    from roofline import samples

    res = roofline.analyze(roofline.read([samples.path(n) for n in samples.names()]))
    path = html.write(res, tmp_path / "demo.html", title="roofline demo")
    page, problems = open_page(path)
    page.set_viewport_size({"width": width, "height": height})
    page.evaluate("window.scrollTo(0, 0)")
    return res, page, problems


def _box(page, selector):
    return page.locator(selector).first.bounding_box()


def test_first_view_shows_the_headline_the_device_selector_and_the_kernel_chart(tmp_path, open_page):
    """Issue 32: at 1280x800 the first view holds the headline (GPU time, coverage, time by kind, MFU), the device
    selector and the whole kernel chart; screenshot docs/img/report-first-view.png (ROOFLINE_SCREENSHOTS)."""
    from roofline.analysis.headline import by_device

    res, page, problems = _demo_page(tmp_path, open_page)
    for sel in ("#f-device", "#headline", "#kernel-chart"):
        box = _box(page, sel)
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 800, (sel, box)
    assert _box(page, "#headline")["y"] < _box(page, "#kernel-chart")["y"]
    device = page.locator("#f-device").input_value()
    want = by_device(res)[device]
    text = page.locator("#headline").inner_text()
    assert text.startswith("GPU time ") and f"on {device}: " in text and "of it has a roofline point" in text
    assert f"{100 * want.coverage:.1f}% of it has a roofline point" in text
    assert f"{100 * want.mfu:.1f}% of the {want.compute_peak.key} peak" in text and "MFU" in text and "MBU" in text
    # the time-by-kind bar: one segment per kind with time, widths adding up to the whole bar
    shares = page.evaluate("""() => [...document.querySelectorAll('#kinds-bar span')].map(s =>
        [s.dataset.kind, parseFloat(s.style.width)])""")
    assert {k for k, _ in shares} == {k for k, v in want.shares.items() if v > 0}
    assert sum(w for _, w in shares) == pytest.approx(100.0, abs=0.01)
    assert sum(_level_counts(page).values()) > 0  # the chart has points on it
    _screenshot(page, "report-first-view.png", full_page=False)
    assert problems == []


def test_level_boxes_only_for_levels_with_data_and_si_ticks(tmp_path, open_page):
    res, page, problems = _demo_page(tmp_path, open_page)
    page.select_option("#f-device", "NVIDIA H100 80GB HBM3")  # a trace: DRAM bytes only
    assert page.locator("#f-level-box-dram").is_visible()
    assert not page.locator("#f-level-box-l2").is_visible() and not page.locator("#f-level-box-l1").is_visible()
    ticks = page.locator("#kernel-chart .ytick text").all_text_contents() + \
        page.locator("#kernel-chart .xtick text").all_text_contents()
    assert ticks and all(re.fullmatch(r"\d+(?:[numkMGTPE]|µ)?", t) for t in ticks), ticks  # never 10¹⁶ beside 100T
    page.select_option("#f-device", "NVIDIA A10G")  # an ncu report with L2 and L1 bytes
    assert all(page.locator(f"#f-level-box-{lv}").is_visible() for lv in ("dram", "l2", "l1"))
    assert problems == []


def test_notes_are_listed_once_and_rows_carry_their_numbers(tmp_path, open_page):
    res, page, problems = _demo_page(tmp_path, open_page, 1400, 1000)
    page.select_option("#f-device", "NVIDIA H100 80GB HBM3")
    notes = page.locator("#notes-list li").all_text_contents()
    assert notes and len(notes) == len(set(notes)) and any("a PyTorch trace has no cache counters" in n for n in notes)
    cells = page.locator("#stats-table td.notes").all_text_contents()
    assert cells and all(re.fullmatch(r"[\d,]*( \(not drawn\))?", c) for c in cells), cells[:5]
    numbers = {int(x) for c in cells for x in c.split(" ")[0].split(",") if x}
    values = page.evaluate("[...document.querySelectorAll('#notes-list li')].map(li => li.value)")
    assert numbers <= set(values)
    assert problems == []


def test_header_lists_many_devices_compactly_and_a_device_with_nothing_drawable_says_why(tmp_path, open_page):
    """A trace recorded without shapes is not "a report without FLOP or memory counters": the page names the
    cause and its fix."""
    files = [shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"),
             shared("traces/torch_h100_cuda-sync-unittest_uncompressed.pt.trace.json")]
    res = roofline.analyze(roofline.read(files))
    page_text = html.render(res)
    assert "NVIDIA A10G, NVIDIA H100 ·" in page_text  # two devices: both named
    many = [f"GPU {i}" for i in range(16)]
    assert html.devices_text(many) == "16 devices: GPU 0, GPU 1, GPU 2, … (13 more)"
    path = html.write(res, tmp_path / "why.html")
    page, problems = open_page(path)
    assert page.locator("#f-device").input_value() == "NVIDIA A10G"  # the drawable device first
    page.select_option("#f-device", "NVIDIA H100")
    note = page.locator("#device-note").inner_text()
    assert note.startswith("Nothing drawable on NVIDIA H100") and "no shapes recorded" in note
    assert "record_shapes=True" in note and "no FLOP or memory counters" not in note
    assert "no shapes recorded" in page.locator("#headline").inner_text()
    assert problems == []
