"""Row labels: the algorithm's name, plus what tells a configuration from its namesakes.

A label is the algorithm name; rows that share it get the params/config values that differ between
them (``fedprox (mu=0.01)``). The group protocol's ``train_groups`` / ``test_groups`` are shown whenever
a row sets them (``fedavg (train_groups=base)``), even when no namesake differs: a run trained on some
groups only is never mistaken for one trained on all.
"""

from __future__ import annotations

from typing import Any

from hetbench.leaderboard.load import json_text

#: config keys shown in a label whenever a row of the name sets them
ALWAYS_SHOWN = ("train_groups", "test_groups")


def format_value(v: Any) -> str:
    """A params/config value as shown in labels and table headers.

    Parameters
    ----------
    v : Any
        A JSON value.

    Returns
    -------
    str
        ``null``/``true``/``false``, ``%g`` for floats, the text of ints and strings, else JSON.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import format_value
    >>> format_value(0.010), format_value(None), format_value(True), format_value([1, "a"])
    ('0.01', 'null', 'true', '[1,"a"]')
    """
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (int, str)):
        return str(v)
    return json_text(v)


_MISSING = object()


def _shown(key: str, v: Any) -> str:
    """``key=value``; for the group options a list of groups as ``a+b`` and null as ``all``."""
    if key in ALWAYS_SHOWN and v in (None, _MISSING):
        return f"{key}=all"
    if v is _MISSING:
        return f"{key}=-"
    if key in ALWAYS_SHOWN and isinstance(v, list) and all(isinstance(x, str) for x in v):
        return f"{key}={'+'.join(v)}"
    return f"{key}={format_value(v)}"


def set_labels(rows: list[Any]) -> None:
    """Set every row's ``label``: its algorithm name, plus what tells it from rows of the same name.

    Parameters
    ----------
    rows : list
        Objects with ``algorithm`` (str), ``params`` and ``config`` (dicts) and a ``label`` to set
        (:class:`hetbench.leaderboard.aggregate.Row`).

    Returns
    -------
    None
        Labels are set in place; identical texts for different values (``0.1`` vs ``"0.1"``) are numbered.

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> from hetbench.leaderboard.labels import set_labels
    >>> rows = [R(algorithm="fedprox", params={"mu": m}, config={}, label="") for m in (0.01, 0.1)]
    >>> rows.append(R(algorithm="fedavg", params={}, config={"train_groups": ["base"]}, label=""))
    >>> set_labels(rows)
    >>> [r.label for r in rows]
    ['fedprox (mu=0.01)', 'fedprox (mu=0.1)', 'fedavg (train_groups=base)']
    """
    by_name: dict[str, list[Any]] = {}
    for r in rows:
        by_name.setdefault(r.algorithm, []).append(r)
    for name, group in by_name.items():
        parts: list[list[str]] = [[] for _ in group]
        for attr in ("params", "config"):
            keys = sorted({k for r in group for k in getattr(r, attr)})
            for k in keys:
                vals = [getattr(r, attr).get(k, _MISSING) for r in group]
                differ = len({json_text(v) if v is not _MISSING else "\0missing" for v in vals}) > 1
                always = attr == "config" and k in ALWAYS_SHOWN and any(v not in (None, _MISSING) for v in vals)
                if differ or always:
                    for i, v in enumerate(vals):
                        parts[i].append(_shown(k, v))
        labels = [f"{name} ({', '.join(p)})" if p else name for p in parts]
        counts: dict[str, int] = {}
        for r, lab in zip(group, labels):  # identical text for different values (0.1 vs "0.1"): number them
            counts[lab] = counts.get(lab, 0) + 1
            r.label = lab if labels.count(lab) == 1 else f"{lab} #{counts[lab]}"
