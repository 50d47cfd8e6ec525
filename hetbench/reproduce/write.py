"""``claims.json``, ``claims.md`` and the self-contained ``claims.html`` of ``hetbench reproduce``.

All three are written from the same claim records (:func:`hetbench.reproduce.run.reproduce` makes them):
the paper, the figure or table, the claim, the protocol and settings, every check's measurement with
its interval, the declared criterion, the verdict and why, and each claim's wall time. Nothing else in
them depends on the clock, so the same inputs and seeds give the same files but for the wall times.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from hetbench.reproduce.criteria import NOT_RUN, VERDICTS

#: what heads the report of a smoke run (``hetbench reproduce --smoke``)
SMOKE_NOTE = ("Smoke run: every claim with toy settings, to check that the code runs on this machine. Its numbers "
              "decide nothing: every verdict is 'no verdict'; run --quick or --full for verdicts.")


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
    """What a claim's verdict rests on when some of its checks did not run, else empty: the data of the
    checks that ran (their ``data``), `` on generated data only (1 of 3 checks run)``, or `` where run
    (1 of 2 checks run)`` when a check that ran names none. Every verdict the reports, the README and
    the plots show is followed by it, so a claim checked on part of its data never reads as fully checked.

    Examples
    --------
    >>> from hetbench.reproduce.write import coverage
    >>> coverage({"verdict": "reproduced", "checks": [{"verdict": "reproduced"}, {"verdict": "not run"}]})
    ' where run (1 of 2 checks run)'
    >>> coverage({"verdict": "reproduced", "checks": [{"verdict": "reproduced", "data": "generated data"},
    ...           {"verdict": "not run", "data": "iNaturalist 2017"}, {"verdict": "not run"}]})
    ' on generated data only (1 of 3 checks run)'
    >>> coverage({"verdict": "not run", "checks": [{"verdict": "not run"}], "runs": {"done": 3, "needed": 10}})
    ' (3 of 10 runs)'
    """
    runs = claim.get("runs")
    if claim["verdict"] == "not run" and isinstance(runs, dict) and runs.get("done", 0) < runs.get("needed", 0):
        return f" ({runs['done']} of {runs['needed']} runs)"
    ran = [k for k in claim["checks"] if k["verdict"] != "not run"]
    if len(ran) in (0, len(claim["checks"])):
        return ""
    count = f"({len(ran)} of {len(claim['checks'])} checks run)"
    data = list(dict.fromkeys(k.get("data") for k in ran))
    if None in data:
        return f" where run {count}"
    return f" on {' and '.join(data)} only {count}"


def badge_colour_class(claim: dict[str, Any]) -> str:
    """The CSS class of a claim's badge: its verdict's, except that a claim some of whose checks did not
    run takes the colour of ``not run`` (a badge is never greener than its weakest check).

    Examples
    --------
    >>> badge_colour_class({"verdict": "reproduced", "checks": [{"verdict": "reproduced"}, {"verdict": "not run"}]})
    'v-not-run'
    >>> badge_colour_class({"verdict": "reproduced", "checks": [{"verdict": "reproduced"}]})
    'v-reproduced'
    """
    verdict = NOT_RUN if coverage(claim) else claim["verdict"]
    return "v-" + re.sub(r"[^a-z]+", "-", verdict).strip("-")


def settings_text(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {json.dumps(v, separators=(', ', ': '))}" for k, v in settings.items())


def criterion_text(c: dict[str, Any]) -> str:
    return c["name"] + "(" + ", ".join(f"{k}={v:g}" for k, v in c.items() if k != "name") + ")"


def numbers_text(check: dict[str, Any]) -> str:
    """The criterion's intermediate numbers a reader needs to redo the decision (for a monotone criterion:
    each step's paired change with its interval, the first-to-last effect and the trend; the others say
    theirs in the result sentence).

    Examples
    --------
    >>> from hetbench.reproduce.write import numbers_text
    >>> step = {"from": "a=1", "to": "a=0.1", "change": {"mean": -1.5, "low": -2.5, "high": -0.5, "n": 5},
    ...         "verdict": "reproduced"}
    >>> numbers_text({"numbers": {"steps": [step], "tolerance": 1, "level": 0.95,
    ...                           "effect": {"mean": 12, "low": 10.5, "high": 13.5, "n": 5}, "min_effect": 10,
    ...                           "trend": {"mean": 0.9, "low": 0.8, "high": 1.0, "n": 5}},
    ...               "criterion": {"name": "monotone_decreasing"}})
    'Steps (paired change, 95% interval; each may rise by at most 1): a=1 -> a=0.1: -1.5 [-2.5, -0.5] right. Fall from first to last: 12 [10.5, 13.5] (at least 10). Trend (rank correlation): 0.9 [0.8, 1].'
    """
    n = check.get("numbers", {})
    steps = n.get("steps")
    if not steps:
        return ""
    falls = check["criterion"]["name"] == "monotone_decreasing"
    word = "rise" if falls else "fall"
    said = {"reproduced": "right", "not reproduced": "wrong way", "inconclusive": "undecided"}

    def ci(c: dict[str, Any]) -> str:
        return f"{c['mean']:.4g}" if c["low"] == c["high"] else f"{c['mean']:.4g} [{c['low']:.4g}, {c['high']:.4g}]"

    text = (f"Steps (paired change, {n['level'] * 100:g}% interval; each may {word} by at most {n['tolerance']:g}): "
            + "; ".join(f"{s['from']} -> {s['to']}: {ci(s['change'])} {said.get(s['verdict'], s['verdict'])}"
                        for s in steps) + ".")
    text += f" {'Fall' if falls else 'Rise'} from first to last: {ci(n['effect'])} (at least {n['min_effect']:g})."
    return text + f" Trend (rank correlation): {ci(n['trend'])}."


def machine_record(device: str | None) -> dict[str, Any]:
    """Where the claims ran, for ``claims.json``: the training device (type and name: the GPU's model, or
    the device type), torch's version, the CPU cores hetbench uses and the platform. Like the wall times,
    it describes the run and decides nothing.

    Examples
    --------
    >>> from hetbench.reproduce.write import machine_record
    >>> m = machine_record("cpu")
    >>> m["device"], sorted(m)
    ({'type': 'cpu', 'name': 'cpu'}, ['cpu_cores', 'device', 'platform', 'python', 'torch'])
    """
    import platform

    import torch

    from hetbench.cores import available_cores
    from hetbench.train.device import device_info, resolve_device

    info = device_info(resolve_device(device))
    return {"device": {"type": info["type"], "name": info["name"]}, "torch": torch.__version__,
            "cpu_cores": available_cores(), "platform": platform.platform(), "python": platform.python_version()}


def machine_line(doc: dict[str, Any]) -> str:
    """The machine of a ``claims.json`` in one sentence (empty for one written before it was recorded).

    Examples
    --------
    >>> machine_line({"machine": {"device": {"type": "cuda", "name": "NVIDIA H200"}, "torch": "2.11.0",
    ...                           "cpu_cores": 16, "platform": "Linux", "python": "3.12.3"}})
    'Ran on NVIDIA H200 (cuda), torch 2.11.0, 16 CPU cores, Linux.'
    >>> machine_line({})
    ''
    """
    m = doc.get("machine")
    if not m:
        return ""
    return (f"Ran on {m['device']['name']} ({m['device']['type']}), torch {m['torch']}, {m['cpu_cores']} CPU cores, "
            f"{m['platform']}.")


def wall_time(claim: dict[str, Any]) -> str:
    """A claim's wall time as the tables show it.

    Examples
    --------
    >>> from hetbench.reproduce.write import wall_time
    >>> wall_time({"seconds": 42.04}), wall_time({"seconds": 312.0}), wall_time({})
    ('42 s', '5.2 min', '-')
    >>> wall_time({"seconds": 30.0, "runs": {"train_seconds": 600.0}})  # its runs came from the run store
    '30 s (its runs trained in 10.0 min)'
    """
    if "seconds" not in claim:
        return "-"
    s = float(claim["seconds"])
    text = f"{s:.0f} s" if s < 60 else f"{s / 60:.1f} min"
    trained = float((claim.get("runs") or {}).get("train_seconds", 0.0))
    if trained > s:  # runs taken from the store: this invocation's time is not the claim's cost
        text += f" (its runs trained in {trained:.0f} s)" if trained < 60 else f" (its runs trained in {trained / 60:.1f} min)"
    return text


def settling_text(claim: dict[str, Any]) -> str:
    """One sentence on whether a claim's training had settled, condition by condition (the runs that
    differ only by seed, judged on their seed-mean curve; :mod:`hetbench.reproduce.settling`); empty when
    it trained nothing.

    Examples
    --------
    >>> from hetbench.reproduce.write import settling_text
    >>> settling = {"evaluations": 4, "max_change": 3.0, "unsettled": ["a/fedavg-s0.json", "a/fedavg-s1.json"],
    ...             "conditions": {"a/fedavg": {"runs": 2, "change": 7.5, "settled": False},
    ...                            "a/fedvc": {"runs": 2, "change": 1.2, "settled": True},
    ...                            "a/central": {"runs": 1, "change": None, "settled": False}},
    ...             "runs": {}}
    >>> settling_text({"settling": settling})
    'Settling: 2 of 3 conditions (3 of 5 training runs) had not settled: 1 moved by more than 3 points over the last 4 evaluations of their seed-mean curve (the most, a/fedavg, +7.5), 1 had fewer than 4 evaluations; so every check is inconclusive.'
    >>> settling["conditions"]["a/fedvc"].update(settled=False, diverged=1)
    >>> settling["diverged"] = {"a/fedvc-s1.json": "at chance (10.0% for 10 classes)"}
    >>> settling_text({"settling": settling})[:160]
    'Settling: 3 of 3 conditions (5 of 5 training runs) had not settled: 1 diverged (1 run at chance or with a non-finite loss; e.g. a/fedvc-s1.json: at chance (10.0'
    """
    st = claim.get("settling")
    if not st or not st.get("conditions"):
        return ""
    conds, e, c = st["conditions"], st["evaluations"], st["max_change"]
    runs = sum(v["runs"] for v in conds.values())
    bad = [k for k, v in conds.items() if not v["settled"]]
    if not bad:
        worst = max(abs(v["change"]) for v in conds.values())
        return (f"Settling: all {len(conds)} conditions ({runs} training runs) had settled (the line through the "
                f"seed-mean of each one's last {e} evaluations moves by at most {c:g} points; the most, {worst:.3g}).")
    gone = [k for k in bad if conds[k].get("diverged")]
    moving = [k for k in bad if conds[k]["change"] is not None and k not in gone]
    short = len(bad) - len(moving) - len(gone)
    parts = []
    if gone:
        runs_gone = sum(conds[k]["diverged"] for k in gone)
        first = next(iter(st.get("diverged", {}).items()), ("", ""))
        parts.append(f"{len(gone)} diverged ({runs_gone} run{'s' if runs_gone != 1 else ''} at chance or with a "
                     f"non-finite loss; e.g. {first[0]}: {first[1]})")
    if moving:
        top = max(moving, key=lambda k: abs(conds[k]["change"]))
        parts.append(f"{len(moving)} moved by more than {c:g} points over the last {e} evaluations of their seed-mean "
                     f"curve (the most, {top}, {conds[top]['change']:+.3g})")
    if short:
        parts.append(f"{short} had fewer than {e} evaluations")
    return (f"Settling: {len(bad)} of {len(conds)} conditions ({sum(conds[k]['runs'] for k in bad)} of {runs} training "
            f"runs) had not settled: {', '.join(parts)}; so every check is inconclusive.")


def measurement_rows(measurement: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    points = measurement.get("points", [])
    has_pub = any("published" in p for p in points)
    multi = any(p["n"] > 1 for p in points)
    head = ["point", "measured" + (" (mean)" if multi else "")]
    if multi:
        head += ["95% t interval", "n", "per seed"]
    if has_pub:
        head += ["published", "relative error"]
    rows = []
    for p in points:
        r = [p["label"], fmt(p["mean"])]
        if multi:
            interval = f"[{fmt(p['low'])}, {fmt(p['high'])}]" if "low" in p else "-"
            r += [interval, str(p["n"]), ", ".join(fmt(v) for v in p["samples"])]
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
    intro = (f"**{SMOKE_NOTE}**" if doc["mode"] == "smoke" else "Each verdict follows from the measurement by the "
             "criterion declared in the claim's definition (`manifests/claims/<id>.yaml`) before any run.")
    lines = [f"# hetbench reproduce: {len(doc['claims'])} claim(s), {doc['mode']} mode", "",
             f"hetbench {doc['hetbench_version']}. {intro}" + (" " + machine_line(doc) if machine_line(doc) else ""), ""]
    lines += _md_table(["claim", "paper, where", "verdict", "checks", "wall time"],
                       [[c["id"], f"{c['paper_short']}, {c['where']}", f"**{c['verdict']}**{coverage(c)}",
                         "; ".join(f"{k['measure']}: {k['verdict']}" for k in c["checks"]), wall_time(c)]
                        for c in doc["claims"]])
    total = sum(c.get("seconds", 0.0) for c in doc["claims"])
    lines += ["", f"Wall time in all: {total / 60:.1f} min."]
    for c in doc["claims"]:
        lines += ["", f"## {c['id']}: {c['verdict']}{coverage(c)}", "",
                  f"**Paper.** {c['paper']} **Where:** {c['where']}.", "",
                  f"**Claim.** {c['claim']}", "",
                  f"**Protocol.** {c['protocol']}", "",
                  f"**Settings ({doc['mode']}; seeds {', '.join(map(str, c['seeds']))}).** {settings_text(c['settings'])}", ""]
        if c.get("error"):
            lines += [f"**Not run:** {c['error']}", ""]
        if c.get("facts"):
            lines += ["**As run.** " + "; ".join(f"{k}: {fact_text(v)}" for k, v in c["facts"].items()), ""]
        if settling_text(c):
            lines += [f"**{settling_text(c)}**" if c["settling"]["unsettled"] else settling_text(c), ""]
        for k in c["checks"]:
            lines += [f"### {k['measure']}: {k['verdict']}", "", f"*Declared:* {k['statement']} "
                      f"Criterion `{criterion_text(k['criterion'])}`.", "", f"*Result:* {k['reason']}.", ""]
            if k["measurement"].get("points"):
                head, rows = measurement_rows(k["measurement"])
                lines += [f"Unit: {k['measurement']['unit']}.", ""] + _md_table(head, rows) + [""]
            if numbers_text(k):
                lines += [numbers_text(k), ""]
            if paper_text(k):
                lines += [f"*{paper_text(k)}*", ""]
        if c.get("plot"):
            lines += [f"![{c['id']}]({c['plot']})", ""]
        if c.get("notes"):
            lines += [f"*Notes.* {c['notes']}", ""]
    path.write_text("\n".join(lines).rstrip() + "\n")


def paper_text(check: Mapping[str, Any]) -> str:
    """What the paper reports for a check's measure (its ``paper`` key), as one sentence; "" when the
    check declares none (``{"where": "Fig. 4, figure only"}`` gives "The paper: Fig. 4, figure only.").

    Examples
    --------
    >>> from hetbench.reproduce.write import paper_text
    >>> paper_text({"paper": {"where": "Table 1: 75.57 - 73.69", "values": [1.88]}})
    'The paper: 1.88 (Table 1: 75.57 - 73.69).'
    """
    paper = check.get("paper")
    if not paper:
        return ""
    if "values" not in paper:
        return f"The paper: {paper['where']}."
    values = ", ".join("-" if v is None else fmt(v) for v in paper["values"])
    return f"The paper: {values} ({paper['where']})."


def fact_text(v: Any, nested: bool = False) -> str:
    """A fact as text; a list or mapping inside another is bracketed so its items stay together.

    Examples
    --------
    >>> from hetbench.reproduce.write import fact_text
    >>> fact_text({"sizes": {"0": [3, 2], "1": [4, 1]}, "seeds": [0, 1]})
    'sizes={0=[3, 2], 1=[4, 1]}, seeds=[0, 1]'
    >>> fact_text([0, 1])
    '0, 1'
    """
    if isinstance(v, dict):
        text = ", ".join(f"{k}={fact_text(x, True)}" for k, x in v.items())
        return f"{{{text}}}" if nested else text
    if isinstance(v, list):
        text = ", ".join(fact_text(x, True) for x in v)
        return f"[{text}]" if nested else text
    return fmt(v)
