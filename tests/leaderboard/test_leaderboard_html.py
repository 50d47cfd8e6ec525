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
    """(table data-split, data-role) -> [tr data-algorithm, ...] in document order."""

    def __init__(self):
        super().__init__()
        self.tables: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "leaderboard" in (a.get("class") or "").split():
            self.tables.append(((a.get("data-split"), a.get("data-role")), []))
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
    expected = {(t.title, role): [r.label for r in t.rows if r.role == role]
                for t in tables_of(res) for role in ("ranked", "reference") if any(r.role == role for r in t.rows)}
    assert expected[("iso-isp-wb-tone", "ranked")] == ["fedprox (mu=0.1)", "fedprox (mu=0.01)", "fedavg"]
    assert expected[("iso-isp-wb-tone", "reference")] == ["central"]  # shown apart, never ranked
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", "--dump-dom", (out / "leaderboard.html").resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    parser = _DomRows()
    parser.feed(proc.stdout)
    assert len(parser.tables) == len(expected) == 3
    assert dict(parser.tables) == expected
    assert proc.stdout.count("<svg") == 4  # the inline curves were parsed as SVG elements


ALGOS = ("central", "fedavg", "fedavgm", "fedprox", "scaffold", "qfedavg", "fedir", "fedvc", "heteroswitch", "dapperfl")


def _typical_results(folder):
    """10 algorithms x 2 seeds with full-precision numbers, as a real sweep gives them (every default column)."""
    for i, algo in enumerate(ALGOS):
        for seed in (0, 1):
            acc = 91.2345 - 3.1 * i + 1.7 * seed
            final = {"accuracy": acc, "client_accuracy": acc - 0.61, "worst_group_accuracy": acc - 12.345,
                     "group_accuracy_variance": 236.789 + 11.1 * i, "client_accuracy_p10": acc - 20.5,
                     "client_accuracy_p90": min(acc + 6.25, 100.0), "relative_accuracy": acc / 93.1,
                     "rounds_to_target": 12.0 + i + seed}
            curves = {"round": [1, 2, 3, 4, 5],  # risen by round 2, settled from there on
                      "accuracy": [acc - 30.0 + seed, acc - 1.0 - seed, acc + 0.5, acc - 0.3, acc],
                      "client_accuracy": [acc - 31.0, acc - 1.6, acc - 0.1, acc - 0.9, acc - 0.61],
                      "worst_group_accuracy": [acc - 40.0, acc - 13.0 + seed, acc - 12.0, acc - 12.6, acc - 12.345],
                      "group_accuracy_variance": [236.789 + 11.1 * i] * 5}
            write(folder, f"{algo}-s{seed}.json",
                  result(algorithm=algo, params={"mu": 0.01} if algo == "fedprox" else None, seed=seed, final=final,
                         curves=curves, wall_time_s=123.456 + 7 * i, parameters=151234, macs=1334567))


def test_html_compact_cells_sticky_columns_and_seed_bands(tmp_path):
    _typical_results(tmp_path)
    page = lb.render_html(tables_of(tmp_path))
    css = page.split("<style>")[1].split("</style>")[0]
    assert re.search(r"\.rank, table\.leaderboard \.label \{[^}]*position: sticky", css)
    assert re.search(r"\.rank \{ left: 0;", css) and re.search(r"\.label \{ left: 2\.9rem;", css)  # label right after rank
    assert "white-space: normal" in css.split("table.leaderboard th {")[1].split("}")[0]  # headers wrap
    assert '<td class="rank" data-value="1">1</td><td class="label" data-value="fedavg">' in page  # central: a reference
    # compact: one decimal for percentages, the std in a smaller span; the full digits in the tooltip and sort value
    best = page.split('<tr data-algorithm="fedavg" data-role="ranked">')[1].split("</tr>")[0]
    assert '<td data-value="89.05116699999999" title="89.05 ± 1.20"><b>89.1</b><span class="sd"> ± 1.2</span></td>' in best
    assert 'title="247.89 ± 0.00"><b>248</b><span class="sd"> ± 0</span>' in best  # a variance from 100 %^2: whole
    assert 'title="0.966 ± 0.000"><b>0.97</b><span class="sd"> ± 0.00</span>' in best  # a ratio: two decimals
    assert 'title="130.5 ± 0.0"><b>130</b><span class="sd"> ± 0</span>' in best  # seconds from 10 s: whole
    assert '>151K<span class="sd"> ± 0</span>' in best and "<b>151K</b>" not in page  # every row ties: no best
    central = page.split('<tr data-algorithm="central" data-role="reference">')[1].split("</tr>")[0]
    assert "<b>" not in central and ">ref.</td>" in central  # faster and more accurate, but never bold or ranked
    shown = re.sub(r'title="[^"]*"|data-value="[^"]*"', "", page.split("<tbody>")[1].split("</tbody>")[0])
    assert not re.search(r"\b\d{2}\.\d{2}\b", shown)  # no percentage with two decimals on screen
    assert 'title="test accuracy (%); each seed' in page and "accuracy&nbsp;↑" in page and "params/<wbr>client" in page
    # the inline curves: a min-max band per algorithm (two seeds each), under the mean lines, in both figures
    for svg in page.split("<svg ")[1:]:
        assert svg.count('<polygon class="band"') == len(ALGOS) and svg.count("<polyline") == len(ALGOS)
        assert "band: min–max over seeds" in svg


def _layout(chromium, page, tmp_path, width):
    """(scrollWidth, clientWidth) of every table's scroll box in headless Chromium at ``width`` px."""
    probe = ('<script>document.querySelectorAll(".scroll").forEach(function (d) {'
             'd.setAttribute("data-sw", d.scrollWidth); d.setAttribute("data-cw", d.clientWidth); });</script>')
    html_path = tmp_path / f"probe-{width}.html"
    html_path.write_text(page.read_text().replace("</body>", probe + "</body>"))
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         f"--window-size={width},900", f"--user-data-dir={tmp_path / 'chromium-profile'}", "--dump-dom",
         html_path.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    boxes = re.findall(r'class="scroll" data-sw="(\d+)" data-cw="(\d+)"', proc.stdout)
    assert boxes, proc.stdout[:2000]
    return [(int(sw), int(cw)) for sw, cw in boxes]


def test_html_table_fits_1400_px_in_headless_chromium(tmp_path, run_lb):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium not installed (make test installs it)")
    res = tmp_path / "results"
    _typical_results(res)
    out = tmp_path / "lb"
    assert run_lb(res, "--out", out, "--quiet")[0] == 0
    page = out / "leaderboard.html"
    (sw, cw), (ref_sw, ref_cw) = _layout(chromium, page, tmp_path, 1400)  # the ranked table, the references
    assert sw <= cw and ref_sw <= ref_cw, f"the tables need {sw}, {ref_sw} px, the page gives {cw} px at 1400 px"
    (sw, cw), _ = _layout(chromium, page, tmp_path, 800)  # a narrow window scrolls (the probe measures)
    assert sw > cw
