"""``claims.html`` of ``hetbench reproduce``: one self-contained page (CSS inline, plots as data URIs) from the
claim records ``claims.json`` holds, with the same texts as ``claims.md`` (:mod:`hetbench.reproduce.write`)."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any

from hetbench.reproduce.write import (
    SMOKE_NOTE, badge_colour_class, coverage, criterion_text, fact_text, measurement_rows, numbers_text, paper_text,
    settings_text, settling_text,
)


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem auto; max-width: 68rem;
       color: #222; line-height: 1.45; padding: 0 1rem; }
table { border-collapse: collapse; margin: 0.4rem 0 1rem; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25rem 0.6rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td:first-child a { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.verdict { font-weight: 600; padding: 0.05rem 0.45rem; border-radius: 0.3rem; color: white; white-space: nowrap; }
.v-reproduced { background: #1a7f37; } .v-partially-reproduced { background: #b35900; }
.v-not-reproduced { background: #c62828; } .v-not-run { background: #777; } .v-inconclusive { background: #7a5c00; }
.v-no-verdict-smoke-run { background: #3d5a80; }
section.claim { border-top: 2px solid #ccc; margin-top: 2rem; padding-top: 0.5rem; }
.meta { color: #555; font-size: 0.9rem; }
.reason { color: #333; }
img { max-width: 100%; border: 1px solid #eee; }
code { background: #f6f6f6; padding: 0 0.2rem; }
""".strip()


def _prose(text: str) -> str:
    """Escaped text with `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _badge(verdict: str, colour: str | None = None) -> str:
    return f'<span class="verdict {colour or "v-" + verdict.replace(" ", "-")}">{html.escape(verdict)}</span>'


def _html_table(head: list[str], rows: list[list[str]], numeric_from: int = 1) -> str:
    e = html.escape
    out = ["<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f'<td{" class=num" if i >= numeric_from else ""}>{e(str(c))}</td>'
                                    for i, c in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def write_html(doc: dict[str, Any], path: Path, root: Path) -> None:
    """``claims.html``: one self-contained page (plots inlined as base64 PNG); ``root`` is the folder the
    records' plot paths are relative to."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>hetbench reproduce: {len(doc['claims'])} claim(s), {e(doc['mode'])} mode</title>",
             f"<style>{_CSS}</style></head><body>",
             f"<h1>hetbench reproduce: {len(doc['claims'])} claim(s), {e(doc['mode'])} mode</h1>",
             f"<p class=meta>hetbench {e(doc['hetbench_version'])}. " + (
                 f"<b>{e(SMOKE_NOTE)}</b></p>" if doc["mode"] == "smoke" else "Each verdict follows from the measurement "
                 "by the criterion declared in the claim's definition (<code>manifests/claims/&lt;id&gt;.yaml</code>) "
                 "before any run.</p>"),
             "<table><thead><tr><th>claim</th><th>paper, where</th><th>verdict</th><th>checks</th></tr>"
             "</thead><tbody>"]
    for c in doc["claims"]:
        checks = "<br>".join(f"{e(k['measure'])}: {e(k['verdict'])}" for k in c["checks"])
        parts.append(f'<tr><td><a href="#{e(c["id"])}">{e(c["id"])}</a></td><td>{e(c["paper_short"])}, '
                     f"{e(c['where'])}</td><td>{_badge(c['verdict'] + coverage(c), badge_colour_class(c))}</td><td>{checks}</td></tr>")
    parts.append("</tbody></table>")
    for c in doc["claims"]:
        parts += [f'<section class=claim id="{e(c["id"])}">', f"<h2>{e(c['id'])} {_badge(c['verdict'] + coverage(c), badge_colour_class(c))}</h2>",
                  f"<p><b>Paper.</b> {e(c['paper'])} <b>Where:</b> {e(c['where'])}.</p>",
                  f"<p><b>Claim.</b> {_prose(c['claim'])}</p>", f"<p><b>Protocol.</b> {_prose(c['protocol'])}</p>",
                  f"<p class=meta><b>Settings ({e(doc['mode'])}; seeds {e(', '.join(map(str, c['seeds'])))}).</b> "
                  f"{e(settings_text(c['settings']))}</p>"]
        if c.get("error"):
            parts.append(f"<p><b>Not run:</b> {e(c['error'])}</p>")
        if c.get("facts"):
            parts.append("<p class=meta><b>As run.</b> " + e("; ".join(f"{k}: {fact_text(v)}" for k, v in c["facts"].items()))
                         + "</p>")
        if settling_text(c):
            parts.append(f"<p class=meta>{e(settling_text(c))}</p>")
        for k in c["checks"]:
            parts += [f"<h3>{e(k['measure'])} {_badge(k['verdict'])}</h3>",
                      f"<p><i>Declared:</i> {_prose(k['statement'])} Criterion <code>{e(criterion_text(k['criterion']))}</code>.</p>",
                      f"<p class=reason><i>Result:</i> {e(k['reason'])}.</p>"]
            if k["measurement"].get("points"):
                head, rows = measurement_rows(k["measurement"])
                parts += [f"<p class=meta>Unit: {e(k['measurement']['unit'])}.</p>", _html_table(head, rows)]
            if numbers_text(k):
                parts.append(f"<p class=meta>{e(numbers_text(k))}</p>")
            if paper_text(k):
                parts.append(f"<p class=meta><i>{e(paper_text(k))}</i></p>")
        if c.get("plot"):
            data = base64.b64encode((root / c["plot"]).read_bytes()).decode("ascii")
            parts.append(f'<p><img alt="{e(c["id"])} plot" src="data:image/png;base64,{data}"></p>')
        if c.get("notes"):
            parts.append(f"<p class=meta><i>Notes.</i> {_prose(c['notes'])}</p>")
        parts.append("</section>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts) + "\n")
