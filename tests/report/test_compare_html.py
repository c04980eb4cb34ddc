"""The HTML diff by identity in real headless Chromium: the summary on top, the table sorts on a click (and
back on a second), pages of 50 rows, error bars for the spread across captures, and a reason where the
roofline chart has nothing to draw (the shared nsys pair: times only)."""

from __future__ import annotations

import math

import pytest

from browser import browser, open_page  # noqa: F401 - pytest fixtures
from conftest import analysed, kernel_row, shared
from conftest import cli as _cli
from roofline.analysis.compare_runs import Side, compare_sides
from roofline.analysis.compare_summary import summary
from roofline.report import compare_html

READY = "window.rooflineDiff && window.rooflineDiff.ready"


def _capture(scale: float, n: int = 30):
    return analysed([kernel_row(kernel_id=i, kernel_name=f"kernel_{chr(97 + i % 26)}{i // 26}x", duration_s=1e-4 * (1 + i)
                                * (scale if i % 3 == 0 else 1.0)) for i in range(n)])


@pytest.fixture(scope="module")
def page_path(tmp_path_factory):
    # a baseline and two candidates (N-way), two captures each: 30 identities x 2 candidates = 60 rows, 2 pages
    sides = [Side(label, [(f"{label}{j}", _capture(s * (1 + 0.02 * j))) for j in range(2)])
             for label, s in (("base", 1.0), ("faster", 0.8), ("slower", 1.3))]
    comp = compare_sides(sides)
    path = tmp_path_factory.mktemp("html") / "diff.html"
    frames = [side.runs[0][1] for side in sides]
    return compare_html.write_identities(comp, summary(comp, None), path, frames), comp


def _column(page, header: str) -> list[str]:
    heads = page.locator("#diff-table thead th").all_text_contents()
    return page.locator(f"#diff-table tbody tr td:nth-child({heads.index(header) + 1})").all_text_contents()


def _num(t: str) -> float:
    return math.nan if t == "n/a" else float(t)


def test_the_table_sorts_on_a_click_and_back_on_the_second(page_path, open_page):  # noqa: F811
    path, comp = page_path
    page, problems = open_page(path, ready=READY)
    assert page.locator("#summary").inner_text().startswith("base → faster (2 vs 2 capture(s))")
    assert page.locator("#diff-table tbody tr").count() == 50 and "page 1 of 2 (60 rows)" in page.inner_text("#page")
    header = page.locator("#diff-table thead th", has_text="Δ per launch (%)")
    header.click()  # numbers: largest first
    first = [_num(t) for t in _column(page, "Δ per launch (%)")]
    top = sorted(comp.table["median_s_change_pct"], reverse=True)[:50]
    assert first == pytest.approx([round(v, 1) for v in top], abs=0.051)
    assert first[0] == pytest.approx(30.0, abs=0.1) and "sorted-desc" in header.get_attribute("class")
    header.click()  # again: smallest first
    again = [_num(t) for t in _column(page, "Δ per launch (%)")]
    assert again == sorted(again) and again[0] == pytest.approx(-20.0, abs=0.1)
    page.locator("#diff-table thead th", has_text="identity").first.click()  # text: A to Z
    names = _column(page, "identity")
    assert names == sorted(names)
    page.click("#next")
    assert page.locator("#diff-table tbody tr").count() == 10 and "page 2 of 2" in page.inner_text("#page")
    page.fill("#filter", "kernel_a0x")
    assert page.locator("#diff-table tbody tr").count() == 2  # one identity, two candidates
    assert problems == []


def test_the_roofline_has_each_side_with_error_bars_across_captures(page_path, open_page):  # noqa: F811
    path, _ = page_path
    page, problems = open_page(path, ready=READY)
    assert page.evaluate("window.rooflineDiff.points") == [30, 30, 30]
    bars = page.evaluate("document.getElementById('diff-chart').data.filter(t => t.mode === 'markers')"
                         ".map(t => t.error_y.array.filter(v => v > 0).length)")
    assert bars == [10, 10, 10]  # the identities the captures scale (every third): two captures 2% apart
    assert page.evaluate("window.rooflineDiff.arrows") == 0  # arrows only between two sides
    lines = page.evaluate("document.getElementById('spread-chart').data.length")
    assert lines == 20  # the top 20 identities across the three sides
    # one identity: its line across the sides and each capture's median as a dot (2 captures x 3 sides)
    page.select_option("#spread-pick", index=1)
    data = page.evaluate("document.getElementById('spread-chart').data.map(t => [t.name, t.y.length])")
    assert [n for n, _ in data] == ["kernel_d1x", "each capture"] and data[1][1] == 6
    assert problems == []


def test_the_shared_nsys_pair_says_why_its_roofline_is_empty(tmp_path, open_page):  # noqa: F811
    out = tmp_path / "pair.html"
    res = _cli("compare", shared("nsys/nsys2026.2_h100x2_mfu-before.sqlite"),
               shared("nsys/nsys2026.2_h100x2_mfu-after.sqlite"), "--html", out, "--fail-on", "time>5%")
    assert res.returncode == 0, res.stderr
    page, problems = open_page(out, ready=READY)
    reason = page.locator("#diff-chart .chart-empty").inner_text()
    assert reason.startswith("No roofline points: no identity has FLOP counts on any side")
    assert "--counters" in reason
    assert page.evaluate("document.getElementById('spread-chart').data.length") == 20
    assert "page 1 of 3 (102 rows)" in page.inner_text("#page")
    assert "gate --fail-on 'time>5%': passed (exit 0)" in page.inner_text("#summary")
    assert problems == []
