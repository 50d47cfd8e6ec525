"""``claims.json``, ``claims.md`` and the self-contained ``claims.html`` of ``hetbench reproduce``.

All three are written from the same claim records (:func:`hetbench.reproduce.run.reproduce` makes them):
the paper, the figure or table, the claim, the protocol and settings, every check's measurement with
its spread, the declared criterion, the verdict and why. Nothing in them depends on the clock, so the
same inputs and seeds give the same files.
"""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path
from typing import Any, Sequence

from hetbench.reproduce.criteria import VERDICTS

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
.v-not-reproduced { background: #c62828; } .v-not-run { background: #777; }
section.claim { border-top: 2px solid #ccc; margin-top: 2rem; padding-top: 0.5rem; }
.meta { color: #555; font-size: 0.9rem; }
.reason { color: #333; }
img { max-width: 100%; border: 1px solid #eee; }
code { background: #f6f6f6; padding: 0 0.2rem; }
""".strip()


def fmt(v: Any) -> str:
    """A number as the reports show it: integers with thousands separators, floats to 4 significant digits.

    Examples
    --------
    >>> from hetbench.reproduce.write import fmt
    >>> fmt(3929234), fmt(0.456789), fmt(93.3333), fmt(None)
    ('3,929,234', '0.4568', '93.33', '-')
    """
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and abs(v) >= 1e4 else f"{v:.4g}"
    return str(v)


def coverage(claim: dict[str, Any]) -> str:
    """`` (1 of 3 checks run)`` when some checks of a claim did not run, else empty.

    Examples
    --------
    >>> from hetbench.reproduce.write import coverage
    >>> coverage({"verdict": "reproduced", "checks": [{"verdict": "reproduced"}, {"verdict": "not run"}]})
    ' (1 of 2 checks run)'
    """
    ran = sum(k["verdict"] != "not run" for k in claim["checks"])
    return "" if ran in (0, len(claim["checks"])) else f" ({ran} of {len(claim['checks'])} checks run)"


def _settings_text(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {json.dumps(v, separators=(', ', ': '))}" for k, v in settings.items())


def _criterion_text(c: dict[str, Any]) -> str:
    return c["name"] + "(" + ", ".join(f"{k}={v:g}" for k, v in c.items() if k != "name") + ")"


def numbers_text(check: dict[str, Any]) -> str:
    """The criterion's intermediate numbers a reader needs to redo the decision (the steps of a monotone
    criterion; the others say theirs in the result sentence).

    Examples
    --------
    >>> from hetbench.reproduce.write import numbers_text
    >>> numbers_text({"numbers": {"steps": [{"from": "a=1", "to": "a=0.1", "change": 1.5, "allowed_wrong_way": 8.1,
    ...                                      "ok": True}]}, "criterion": {"name": "monotone_decreasing"}})
    'Steps: a=1 -> a=0.1: +1.5 (may rise by 8.1; ok).'
    """
    steps = check.get("numbers", {}).get("steps")
    if not steps:
        return ""
    word = "rise" if check["criterion"]["name"] == "monotone_decreasing" else "fall"
    return "Steps: " + "; ".join(f"{s['from']} -> {s['to']}: {s['change']:+.4g} (may {word} by "
                                 f"{s['allowed_wrong_way']:.3g}; {'ok' if s['ok'] else 'too far'})" for s in steps) + "."


def _rows(measurement: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    points = measurement.get("points", [])
    has_pub = any("published" in p for p in points)
    multi = any(p["n"] > 1 for p in points)
    head = ["point", "measured" + (" (mean)" if multi else "")]
    if multi:
        head += ["± s.e.", "n", "per seed"]
    if has_pub:
        head += ["published", "relative error"]
    rows = []
    for p in points:
        r = [p["label"], fmt(p["mean"])]
        if multi:
            r += [fmt(p["stderr"]), str(p["n"]), ", ".join(fmt(v) for v in p["samples"])]
        if has_pub:
            pub = p.get("published")
            r += [fmt(pub), f"{(p['mean'] / pub - 1) * 100:+.2f}%" if pub else "-"]
        rows.append(r)
    return head, rows


def summary_counts(claims: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many claims got each verdict (every verdict listed, zeros included)."""
    return {v: sum(c["verdict"] == v for c in claims) for v in VERDICTS}


def write_json(doc: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False) + "\n")


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return out


def write_markdown(doc: dict[str, Any], path: Path) -> None:
    """``claims.md``: the verdict table, then one section per claim."""
    lines = [f"# hetbench reproduce: {len(doc['claims'])} claim(s), {doc['mode']} mode", "",
             f"hetbench {doc['hetbench_version']}. Each verdict follows from the measurement by the criterion declared in "
             "the claim's definition (`manifests/claims/<id>.yaml`) before any run.", ""]
    lines += _md_table(["claim", "paper, where", "verdict", "checks"],
                       [[c["id"], f"{c['paper_short']}, {c['where']}", f"**{c['verdict']}**{coverage(c)}",
                         "; ".join(f"{k['measure']}: {k['verdict']}" for k in c["checks"])] for c in doc["claims"]])
    for c in doc["claims"]:
        lines += ["", f"## {c['id']}: {c['verdict']}{coverage(c)}", "",
                  f"**Paper.** {c['paper']} **Where:** {c['where']}.", "",
                  f"**Claim.** {c['claim']}", "",
                  f"**Protocol.** {c['protocol']}", "",
                  f"**Settings ({doc['mode']}; seeds {', '.join(map(str, c['seeds']))}).** {_settings_text(c['settings'])}", ""]
        if c.get("error"):
            lines += [f"**Not run:** {c['error']}", ""]
        if c.get("facts"):
            lines += ["**As run.** " + "; ".join(f"{k}: {_fact(v)}" for k, v in c["facts"].items()), ""]
        for k in c["checks"]:
            lines += [f"### {k['measure']}: {k['verdict']}", "", f"*Declared:* {k['statement']} "
                      f"Criterion `{_criterion_text(k['criterion'])}`.", "", f"*Result:* {k['reason']}.", ""]
            if k["measurement"].get("points"):
                head, rows = _rows(k["measurement"])
                lines += [f"Unit: {k['measurement']['unit']}.", ""] + _md_table(head, rows) + [""]
            if numbers_text(k):
                lines += [numbers_text(k), ""]
        if c.get("plot"):
            lines += [f"![{c['id']}]({c['plot']})", ""]
        if c.get("notes"):
            lines += [f"*Notes.* {c['notes']}", ""]
    path.write_text("\n".join(lines).rstrip() + "\n")


def _fact(v: Any, nested: bool = False) -> str:
    """A fact as text; a list or mapping inside another is bracketed so its items stay together.

    Examples
    --------
    >>> from hetbench.reproduce.write import _fact
    >>> _fact({"sizes": {"0": [3, 2], "1": [4, 1]}, "seeds": [0, 1]})
    'sizes={0=[3, 2], 1=[4, 1]}, seeds=[0, 1]'
    >>> _fact([0, 1])
    '0, 1'
    """
    if isinstance(v, dict):
        text = ", ".join(f"{k}={_fact(x, True)}" for k, x in v.items())
        return f"{{{text}}}" if nested else text
    if isinstance(v, list):
        text = ", ".join(_fact(x, True) for x in v)
        return f"[{text}]" if nested else text
    return fmt(v)


def _prose(text: str) -> str:
    """Escaped text with `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _badge(verdict: str) -> str:
    return f'<span class="verdict v-{verdict.replace(" ", "-")}">{html.escape(verdict)}</span>'


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
             f"<p class=meta>hetbench {e(doc['hetbench_version'])}. Each verdict follows from the measurement by the "
             "criterion declared in the claim's definition (<code>manifests/claims/&lt;id&gt;.yaml</code>) before any "
             "run.</p>", "<table><thead><tr><th>claim</th><th>paper, where</th><th>verdict</th><th>checks</th></tr>"
             "</thead><tbody>"]
    for c in doc["claims"]:
        checks = "<br>".join(f"{e(k['measure'])}: {e(k['verdict'])}" for k in c["checks"])
        parts.append(f'<tr><td><a href="#{e(c["id"])}">{e(c["id"])}</a></td><td>{e(c["paper_short"])}, '
                     f"{e(c['where'])}</td><td>{_badge(c['verdict'])}{e(coverage(c))}</td><td>{checks}</td></tr>")
    parts.append("</tbody></table>")
    for c in doc["claims"]:
        parts += [f'<section class=claim id="{e(c["id"])}">', f"<h2>{e(c['id'])} {_badge(c['verdict'])}<small>{e(coverage(c))}</small></h2>",
                  f"<p><b>Paper.</b> {e(c['paper'])} <b>Where:</b> {e(c['where'])}.</p>",
                  f"<p><b>Claim.</b> {_prose(c['claim'])}</p>", f"<p><b>Protocol.</b> {_prose(c['protocol'])}</p>",
                  f"<p class=meta><b>Settings ({e(doc['mode'])}; seeds {e(', '.join(map(str, c['seeds'])))}).</b> "
                  f"{e(_settings_text(c['settings']))}</p>"]
        if c.get("error"):
            parts.append(f"<p><b>Not run:</b> {e(c['error'])}</p>")
        if c.get("facts"):
            parts.append("<p class=meta><b>As run.</b> " + e("; ".join(f"{k}: {_fact(v)}" for k, v in c["facts"].items()))
                         + "</p>")
        for k in c["checks"]:
            parts += [f"<h3>{e(k['measure'])} {_badge(k['verdict'])}</h3>",
                      f"<p><i>Declared:</i> {_prose(k['statement'])} Criterion <code>{e(_criterion_text(k['criterion']))}</code>.</p>",
                      f"<p class=reason><i>Result:</i> {e(k['reason'])}.</p>"]
            if k["measurement"].get("points"):
                head, rows = _rows(k["measurement"])
                parts += [f"<p class=meta>Unit: {e(k['measurement']['unit'])}.</p>", _html_table(head, rows)]
            if numbers_text(k):
                parts.append(f"<p class=meta>{e(numbers_text(k))}</p>")
        if c.get("plot"):
            data = base64.b64encode((root / c["plot"]).read_bytes()).decode("ascii")
            parts.append(f'<p><img alt="{e(c["id"])} plot" src="data:image/png;base64,{data}"></p>')
        if c.get("notes"):
            parts.append(f"<p class=meta><i>Notes.</i> {_prose(c['notes'])}</p>")
        parts.append("</section>")
    parts.append("</body></html>")
    path.write_text("\n".join(parts) + "\n")
