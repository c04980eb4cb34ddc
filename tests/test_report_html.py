"""The HTML report: self-contained, escapes untrusted names, and works in a real headless Chromium.

The browser test drives Debian's /usr/bin/chromium through Playwright (no browser download). It
skips locally when Chromium is missing and fails in CI, which installs it (.ci/run). The
screenshot is kept in test-artifacts/ (git-ignored).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

import roofline
from roofline.report import html

from conftest import REPO, analysed, kernel_row, shared

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts"
XSS = "<script>alert(1)</script>"
QUOTES = "k\"'><img src=x onerror=alert(2)>&amp;"


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


def test_large_data_is_compressed_and_reads_back():
    text = html.render(analysed(_rows()), compress=True)
    assert 'data-encoding="gzip+base64"' in text and XSS not in text
    assert XSS in _data(text)["kernels"]["name"]


def test_empty_profile_renders_a_page_that_says_so():
    text = html.render(analysed([kernel_row()]).iloc[0:0])
    assert "Nothing to plot" in text
    assert _data(text)["meta"]["count"] == 0


def _browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} missing: .ci/run installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} not installed")
    from playwright.sync_api import sync_playwright

    return sync_playwright()


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"]


def _open(p, path: Path, ready: str = "window.rooflineReport && window.rooflineReport.ready"):
    browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.goto(path.as_uri())
    page.wait_for_function(ready, timeout=60_000)
    return browser, page, problems


def _level_counts(page):
    return page.evaluate("""() => Object.fromEntries(document.getElementById('kernel-chart').data
        .filter(t => (t.meta || '').startsWith('level:')).map(t => [t.meta.slice(6), t.x.length]))""")


@pytest.mark.parametrize("compress", [False, True], ids=["plain-json", "gzip-base64"])
def test_report_in_headless_chromium(tmp_path, compress):
    res = analysed(_rows())
    path = html.write(res, tmp_path / "report.html", compress=compress)
    with _browser() as p:
        browser, page, problems = _open(p, path)
        try:
            # one point per kernel and level: 8 kernels have FLOPs and bytes; memcpy is listed, not drawn
            assert _level_counts(page) == {"dram": 8, "l2": 8, "l1": 8}
            legend = page.evaluate("document.getElementById('kernel-chart').data.map(t => t.name)")
            assert "1 kernel(s) without FLOPs or bytes: not drawn" in legend
            rows = page.locator("#stats-table tbody tr")
            assert rows.count() == 9
            page.fill("#f-name", "gemm")  # a filter reduces the table and the chart
            assert rows.count() == 3 and _level_counts(page)["dram"] == 3
            page.fill("#f-name", "")
            page.select_option("#f-bound", "latency-limited")
            assert 0 < rows.count() < 9
            page.select_option("#f-bound", "")
            # the XSS names are text: in the table cell exactly as written, nothing injected
            cells = page.locator("#stats-table td.name").all_text_contents()
            assert XSS in cells and QUOTES in cells
            assert page.locator("img[src='x']").count() == 0
            # hover a point: the details panel shows that kernel's figures
            page.locator("#kernel-chart").scroll_into_view_if_needed()
            x, y, k = page.evaluate("""(name) => { const gd = document.getElementById('kernel-chart');
                const k = window.rooflineReport.kernels.name.indexOf(name);
                const t = gd.data.find(t => t.meta === 'level:dram'); const L = gd._fullLayout, r = gd.getBoundingClientRect();
                const i = t.customdata.indexOf(k);
                return [r.left + L.xaxis._offset + L.xaxis.l2p(Math.log10(t.x[i])),
                        r.top + L.yaxis._offset + L.yaxis.l2p(Math.log10(t.y[i])), k]; }""", XSS)
            page.mouse.move(x - 40, y - 40)
            page.mouse.move(x, y, steps=6)
            page.wait_for_timeout(500)  # plotly throttles hover events: let the last one land
            page.wait_for_function(f"document.getElementById('details').dataset.kernel === '{k}'", timeout=10_000)
            details = page.locator("#details-list").inner_text()
            assert XSS in details and "achieved" in details and "binding roof" in details and "DRAM/HBM intensity" in details
            hover = page.locator(".hovertext").all_text_contents()
            assert any(XSS in h for h in hover)  # plotly's label shows the name as text
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"report-{'gzip' if compress else 'json'}.png"), full_page=True)
            assert problems == []
        finally:
            browser.close()


def test_fixture_reports_render_in_chromium(tmp_path):
    res = roofline.analyze(roofline.read([shared("ncu/sm86_a10g_gemm-variants_roofline.ncu-rep"),
                                          shared("ncu/sm80_a100_cutlass-b2b-int8-gemm_full-nvtx.ncu-rep")]))
    path = html.write(res, tmp_path / "fixtures.html")
    with _browser() as p:
        browser, page, problems = _open(p, path)
        try:
            devices = page.locator("#f-device option").all_text_contents()
            assert set(devices) == {"NVIDIA A10G", "NVIDIA A100 80GB PCIe"}
            first = _level_counts(page)
            page.select_option("#f-device", devices[1])
            assert _level_counts(page) != first or devices[1] == devices[0]
            assert page.locator("#peaks-table tbody tr").count() >= 4
            assert problems == []
        finally:
            browser.close()
