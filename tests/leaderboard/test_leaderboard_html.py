"""The self-contained leaderboard.html: escaped, no external resources, rows in rank order in a real browser."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from hetbench import leaderboard as lb
from leaderboard_results import FP_B, result, write, tables_of


def test_html_is_self_contained_and_escaped(tmp_path):
    write(tmp_path, "a.json", result(algorithm="<script>alert(1)</script>", split="a&b"))
    write(tmp_path, "b.json", result(algorithm="fedavg", split="a&b"))
    page = lb.render_html(tables_of(tmp_path))
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert 'data-split="a&amp;b"' in page
    assert page.count("<script>") == 1  # the inline sorter only
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(", page)
    assert re.findall(r"https?://[^\"' ]+", page) == ["http://www.w3.org/2000/svg"] * page.count("<svg ")
    assert page.count("<svg ") == 2 and page.count("<polyline") == 4  # accuracy and worst group, two rows each


class _DomRows(HTMLParser):
    """table data-split -> [tr data-algorithm, ...] in document order."""

    def __init__(self):
        super().__init__()
        self.tables: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "leaderboard" in (a.get("class") or "").split():
            self.tables.append((a.get("data-split"), []))
        elif tag == "tr" and "data-algorithm" in a and self.tables:
            self.tables[-1][1].append(a["data-algorithm"])


def test_html_rows_in_rank_order_in_headless_chromium(tmp_path, run_lb):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium not installed (make test installs it)")
    res = tmp_path / "results"
    for seed in (0, 1):
        write(res, f"a{seed}.json", result(algorithm="fedavg", seed=seed, final={"worst_group_accuracy": 70.0 + seed}))
        write(res, f"b{seed}.json", result(algorithm="fedprox", params={"mu": 0.1}, seed=seed, final={"worst_group_accuracy": 80.0}))
        write(res, f"c{seed}.json", result(algorithm="fedprox", params={"mu": 0.01}, seed=seed, final={"worst_group_accuracy": 75.0}))
        write(res, f"d{seed}.json", result(algorithm="central", seed=seed, final={"worst_group_accuracy": 90.0}))
        write(res, f"e{seed}.json", result(split="digits", fingerprint=FP_B, algorithm="scaffold", seed=seed,
                                          final={"worst_group_accuracy": 60.0}))
        write(res, f"f{seed}.json", result(split="digits", fingerprint=FP_B, algorithm="fedavg", seed=seed,
                                          final={"worst_group_accuracy": 65.0}))
    out = tmp_path / "lb"
    assert run_lb(res, "--out", out, "--quiet")[0] == 0
    expected = {t.title: [r.label for r in t.rows] for t in tables_of(res)}
    assert expected["iso-isp-wb-tone"] == ["central", "fedprox (mu=0.1)", "fedprox (mu=0.01)", "fedavg"]
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", "--dump-dom", (out / "leaderboard.html").resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    parser = _DomRows()
    parser.feed(proc.stdout)
    assert len(parser.tables) == len(expected) == 2
    assert dict(parser.tables) == expected
    assert proc.stdout.count("<svg") == 4  # the inline curves were parsed as SVG elements
