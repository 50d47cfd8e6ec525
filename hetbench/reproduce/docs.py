"""The measured results in ``docs/reproduce.md`` and the README, generated from committed ``claims.json`` files.

Nothing measured is typed by hand: each claim's section of ``docs/reproduce.md`` holds a region

    <!-- claim-result: hsu-label-skew -->
    ...generated...
    <!-- /claim-result -->

and the README's claim table sits between ``<!-- claims-table -->`` and ``<!-- /claims-table -->``.
:func:`render_documents` rewrites those regions from one or more seed sets' ``claims.json`` (the committed
ones are ``docs/claims/quick-a/claims.json`` and ``docs/claims/quick-b/claims.json``, disjoint seeds): a
claim's region shows each set's result, the table one verdict column per set. A test renders them again
and fails when a document and the committed results disagree. After new runs::

    hetbench reproduce --quick --claims all --out docs/claims/quick-a --overwrite
    hetbench reproduce --quick --claims all --seeds 5,6,7,8,9 --out docs/claims/quick-b --overwrite
    python -m hetbench.reproduce.docs docs/claims/quick-a/claims.json docs/claims/quick-b/claims.json \
        docs/reproduce.md README.md
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Sequence

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import SMOKE
from hetbench.reproduce.criteria import UNSETTLED_MARK
from hetbench.reproduce.write import coverage, fmt, numbers_text, settling_text, wall_time

_CLAIM = re.compile(r"(<!-- claim-result: (?P<id>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /claim-result -->)", re.S)
_TABLE = re.compile(r"(<!-- claims-table -->\n)(?P<body>.*?)(<!-- /claims-table -->)", re.S)


def _interval(p: dict[str, Any]) -> str:
    if p.get("n", 1) < 2 or p.get("low") == p.get("high"):
        return fmt(p["mean"])
    return f"{fmt(p['mean'])} [{fmt(p['low'])}, {fmt(p['high'])}]"


def render_claim(claim: dict[str, Any], mode: str, label: str | None = None) -> str:
    """The generated result block of one claim record: its verdict, the seeds, the wall time, each
    check's measurement (mean and 95% interval per point), verdict and reason, and the settling line.

    Examples
    --------
    >>> from hetbench.reproduce.docs import render_claim
    >>> claim = {"id": "x", "verdict": "reproduced", "seeds": [0, 1], "seconds": 12.0, "checks": [
    ...     {"measure": "gain", "verdict": "reproduced", "reason": "5.5 [1, 10] lies entirely above the threshold 0",
    ...      "criterion": {"name": "greater_than"}, "numbers": {},
    ...      "measurement": {"unit": "points", "points": [{"label": "0", "mean": 5.5, "low": 1, "high": 10, "n": 2}]}}]}
    >>> print(render_claim(claim, "quick"))
    *Quick-mode result* (seeds 0, 1; 12 s): **reproduced**.
    <BLANKLINE>
    | check | point | mean [95% interval] | verdict |
    | --- | --- | --- | --- |
    | `gain` | 0 | 5.5 [1, 10] | reproduced |
    <BLANKLINE>
    - `gain` (points): 5.5 [1, 10] lies entirely above the threshold 0.
    """
    which = f", seed set {label}" if label else ""
    head = (f"*{mode.capitalize()}-mode result{which}* (seeds {', '.join(map(str, claim['seeds']))}; "
            f"{wall_time(claim)}): **{claim['verdict']}**{coverage(claim)}.")
    lines = [head, ""]
    if claim.get("error"):
        return "\n".join(lines + [f"Not run: {claim['error']}."])
    rows = []
    for k in claim["checks"]:
        points = k["measurement"].get("points") or []
        for i, p in enumerate(points):  # the check's name and verdict on its first row only
            name, verdict = (f"`{k['measure']}`", k["verdict"]) if i == 0 else ("", "")
            rows.append(f"| {name} | {p['label']} | {_interval(p)} | {verdict} |")
        if not points:
            rows.append(f"| `{k['measure']}` | - | - | {k['verdict']} |")
    lines += ["| check | point | mean [95% interval] | verdict |", "| --- | --- | --- | --- |", *rows, ""]
    for k in claim["checks"]:
        unit = k["measurement"].get("unit")
        extra = f" {numbers_text(k)}" if numbers_text(k) else ""
        n = k.get("numbers", {})
        # resting on unsettled runs: the settling line below says so once; here, what the numbers alone say
        reason = k["reason"]
        if "unsettled_verdict" in n and UNSETTLED_MARK in reason:
            reason = f"the numbers alone: {n['unsettled_verdict']}, {reason.split(UNSETTLED_MARK, 1)[1]}"
        lines.append(f"- `{k['measure']}`{f' ({unit})' if unit else ''}: {reason}.{extra}")
    if settling_text(claim):
        lines += ["", settling_text(claim)]
    return "\n".join(lines)


def render_table(sets: list[tuple[str, dict[str, Any]]]) -> str:
    """The README's claim table: id, paper and where, each seed set's committed verdict, the first set's
    checks and wall time.

    Examples
    --------
    >>> from hetbench.reproduce.docs import render_table
    >>> doc = {"mode": "quick", "claims": [{"id": "x", "paper_short": "Hsu et al. 2019", "where": "Fig. 4",
    ...        "verdict": "inconclusive", "seconds": 90, "checks": [{"measure": "acc", "verdict": "inconclusive"}]}]}
    >>> print(render_table([("quick-a", doc)]))
    | claim | paper, where | quick-a verdict | checks (quick-a) | wall time (quick-a) |
    | --- | --- | --- | --- | --- |
    | `x` | Hsu et al. 2019, Fig. 4 | inconclusive | acc: inconclusive | 1.5 min |
    """
    first, doc = sets[0]
    others = {label: {c["id"]: c for c in d["claims"]} for label, d in sets[1:]}
    heads = " | ".join(f"{label} verdict" for label, _ in sets)
    lines = [f"| claim | paper, where | {heads} | checks ({first}) | wall time ({first}) |",
             "| --- | --- | " + "--- | " * len(sets) + "--- | --- |"]
    for c in doc["claims"]:
        checks = "; ".join(f"{k['measure']}: {k['verdict']}" for k in c["checks"])
        verdicts = [f"{c['verdict']}{coverage(c)}"]
        for label, claims in others.items():
            o = claims.get(c["id"])
            verdicts.append(f"{o['verdict']}{coverage(o)}" if o else "not in this set")
        lines.append(f"| `{c['id']}` | {c['paper_short']}, {c['where']} | {' | '.join(verdicts)} | {checks} | "
                     f"{wall_time(c)} |")
    return "\n".join(lines)


def render_documents(sets: list[tuple[str, dict[str, Any]]], text: str, where: str) -> str:
    """``text`` with every generated region rewritten from ``sets``: (label, claims.json document) per seed
    set, the first one's claims in the table's order.

    Raises
    ------
    HetbenchError
        A region naming a claim the first set's results do not hold (``where`` names the document).
    """
    smoke = [label or "the results" for label, doc in sets if doc["mode"] == SMOKE]
    if smoke:
        raise HetbenchError(f"{where}: {smoke[0]} are of a smoke run, whose numbers decide nothing; document "
                            "quick or full runs")
    claims = [(label, {c["id"]: c for c in doc["claims"]}, doc["mode"]) for label, doc in sets]

    def claim_block(m: re.Match) -> str:
        cid = m.group("id")
        if cid not in claims[0][1]:
            raise HetbenchError(f"{where}: a result region names '{cid}', which the results do not hold")
        label = len(claims) > 1
        blocks = [render_claim(c[cid], mode, name if label else None) for name, c, mode in claims if cid in c]
        return m.group(1) + "\n\n".join(blocks) + "\n" + m.group(4)

    text = _CLAIM.sub(claim_block, text)
    return _TABLE.sub(lambda m: m.group(1) + render_table(sets) + "\n" + m.group(3), text)


def set_label(path: str | Path) -> str:
    """A seed set's label: the name of the folder holding its claims.json (``quick-a``)."""
    return Path(path).resolve().parent.name


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hetbench.reproduce.docs CLAIMS_JSON... DOC...``: rewrite the generated regions of each DOC
    from the seed sets' claims.json files (the arguments named ``claims.json``, in order)."""
    import json

    args = list(sys.argv[1:] if argv is None else argv)
    records = [a for a in args if Path(a).name == "claims.json"]
    docs = [a for a in args if Path(a).name != "claims.json"]
    if not records or not docs:
        print("usage: python -m hetbench.reproduce.docs CLAIMS_JSON... DOC...", file=sys.stderr)
        return 2
    try:
        sets = [(set_label(r), json.loads(Path(r).read_text())) for r in records]
        rendered = {name: render_documents(sets, Path(name).read_text(), name) for name in docs}
    except (OSError, ValueError, KeyError, HetbenchError) as exc:  # every document is rendered before any is written
        print(f"hetbench: error: {exc}", file=sys.stderr)
        return 2
    for name, text in rendered.items():
        Path(name).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
