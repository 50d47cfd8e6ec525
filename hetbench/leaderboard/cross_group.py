"""The group x group accuracy matrix of ``hetbench train --protocol cross-group``.

Each run of that protocol trains on the clients of one group (a device, a domain) and is tested on every
group, so one configuration's runs, gathered over the trained-on groups, fill a matrix: row = the group
trained on, column = the group tested, cell = the mean over seeds of the table's statistic (``last-k``,
``best`` or ``final``) of that group's accuracy. This is cross-site evaluation (NVFlare's
``cross_site_eval``: every site's model on every site's data); its diagonal is in-group accuracy and the
rest of a row is how far a model trained on one device or domain carries to the others.

Rows of a configuration are gathered like leave-one-group-out families (same algorithm, parameters and
configuration but ``train_groups``); a family needs runs on two groups or more to make a matrix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from hetbench.leaderboard.aggregate import SplitTable
from hetbench.leaderboard.statistics import Stat, summarize
from hetbench.leaderboard.labels import set_labels
from hetbench.leaderboard.load import json_text


@dataclass
class CrossTable:
    """One configuration's group x group matrix.

    Parameters
    ----------
    label : str
        The configuration's label (without ``train_groups``).
    trained : list[str]
        The groups trained on (the matrix's rows), in the split's group order.
    tested : list[str]
        The groups tested (its columns), in the split's group order.
    cells : list[list[Stat]]
        ``cells[i][j]``: accuracy of the model trained on ``trained[i]`` on ``tested[j]``'s test rows.
    seeds : list[int]
        Seeds behind each row.
    num_test : dict[str, int]
        Test images of each tested group (the cells' resolution: one image is 100 / n points).

    Examples
    --------
    >>> from hetbench.leaderboard.cross_group import CrossTable
    >>> CrossTable("fedavg", ["a"], ["a", "b"]).cells
    []
    """

    label: str
    trained: list[str]
    tested: list[str]
    cells: list[list[Stat]] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    num_test: dict[str, int] = field(default_factory=dict)


def _order(result) -> list[str]:
    groups = result.data.get("split", {}).get("groups")
    return list(groups) if isinstance(groups, list) else []


def _families(table: SplitTable) -> list[SimpleNamespace]:
    """The configurations with runs trained on one group each, on two groups or more."""
    families: dict[tuple[str, str, str], list] = {}
    for row in table.rows:
        tg = row.results[0].train_groups
        if tg is not None and len(tg) == 1:
            config = {k: v for k, v in row.config.items() if k != "train_groups"}
            families.setdefault((row.algorithm, json_text(row.params), json_text(config)), []).append(row)
    return [SimpleNamespace(algorithm=a, params=rows[0].params,
                            config={k: v for k, v in rows[0].config.items() if k != "train_groups"}, label="", rows=rows)
            for (a, _, _), rows in sorted(families.items()) if len({r.results[0].train_groups[0] for r in rows}) >= 2]


def crossed_rows(table: SplitTable) -> set[int]:
    """``id`` of every row a matrix shows (the per-run group tables leave them out)."""
    return {id(r) for fam in _families(table) for r in fam.rows}


def cross_group_tables(table: SplitTable) -> list[CrossTable]:
    """The matrices of a split's rows trained on one group each (none when no family covers two groups).

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.cross_group import cross_group_tables
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> from hetbench.train.result_stats import curve_statistics, group_protocol
    >>> def run(trained):
    ...     accs = {g: (90.0 if g == trained else 50.0) for g in "abc"}
    ...     doc = example_result(algorithm="fedavg", accuracy=70.0)
    ...     doc["split"]["groups"] = ["a", "b", "c"]
    ...     doc["config"]["train_groups"] = [trained]
    ...     groups, protocol = group_protocol({g: {"accuracy": v, "num_test": 10} for g, v in accs.items()}, [trained])
    ...     doc["groups"] = groups
    ...     doc["final"].update(protocol)
    ...     doc["curves"]["group_accuracy"] = {g: [v] for g, v in accs.items()}
    ...     doc["final"].update(curve_statistics(doc["curves"], groups, doc["config"]["train_groups"], 3))
    ...     return parse_result(doc)
    >>> (t,) = aggregate([run(g) for g in "abc"])
    >>> (m,) = cross_group_tables(t)
    >>> m.trained, [[c.mean for c in row] for row in m.cells]
    (['a', 'b', 'c'], [[90.0, 50.0, 50.0], [50.0, 90.0, 50.0], [50.0, 50.0, 90.0]])
    """
    found = _families(table)
    set_labels(found)
    out = []
    for fam in sorted(found, key=lambda f: f.label):
        order = next((_order(r.results[0]) for r in fam.rows if _order(r.results[0])), [])
        by_group = {r.results[0].train_groups[0]: r for r in fam.rows}
        tested = sorted({g for r in fam.rows for res in r.results for g in res.group_values.get(table.statistic, {})},
                        key=lambda g: (order.index(g) if g in order else len(order), g))
        trained = sorted(by_group, key=lambda g: (order.index(g) if g in order else len(order), g))
        cells = [[summarize(res.group_values.get(table.statistic, {}).get(g, {}).get("accuracy")
                            for res in by_group[t].results) for g in tested] for t in trained]
        groups_doc = fam.rows[0].results[0].data.get("groups") or {}
        num_test = {g: int(groups_doc[g]["num_test"]) for g in tested
                    if isinstance(groups_doc.get(g), dict) and isinstance(groups_doc[g].get("num_test"), int)}
        out.append(CrossTable(fam.label, trained, tested, cells, [len(by_group[t].results) for t in trained], num_test))
    return out


def cross_group_cells(ct: CrossTable, fmt) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the matrix as text (``fmt(Stat) -> str`` formats a cell)."""
    head = ["trained on \\ tested on"] + [f"{g} ({ct.num_test[g]:,})" if g in ct.num_test else g for g in ct.tested]
    rows = [[f"{t} ({s} seed{'s' if s != 1 else ''})"] + [fmt(c) for c in row]
            for t, s, row in zip(ct.trained, ct.seeds, ct.cells)]
    return head, rows


def cross_group_heading(ct: CrossTable, statistic: str) -> tuple[str, str]:
    """Heading and note of one matrix."""
    return (f"Cross-group accuracy: {ct.label}",
            f"Each row trains on one group's clients only (--protocol cross-group) and is tested on every group's "
            f"test rows (column: the group and its test images); {statistic}, mean +/- std over seeds. The diagonal "
            "is in-group accuracy; the rest of a row is how far that group's model carries.")


def plot_cross_group(ct: CrossTable, path: Path, statistic: str = "") -> None:
    """The matrix as a heatmap on a fixed 0-100% scale, every cell labelled; ``statistic`` names the cells'
    statistic in the title."""
    import numpy as np

    from hetbench.plotting import pyplot

    plt = pyplot()
    m = np.array([[np.nan if c.mean is None else c.mean for c in row] for row in ct.cells], float)
    fig, ax = plt.subplots(figsize=(2.2 + 0.9 * len(ct.tested), 1.6 + 0.55 * len(ct.trained)), dpi=110)
    im = ax.imshow(m, cmap="viridis", vmin=0.0, vmax=100.0)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if np.isfinite(m[i, j]):
                ax.text(j, i, f"{m[i, j]:.1f}", ha="center", va="center", fontsize=8,
                        color="black" if m[i, j] > 60 else "white", fontweight="bold" if i == j else "normal")
    ax.set_xticks(range(len(ct.tested)))
    ax.set_xticklabels(ct.tested, rotation=45 if len(ct.tested) > 4 else 0, ha="right" if len(ct.tested) > 4 else "center", fontsize=8)
    ax.set_yticks(range(len(ct.trained)))
    ax.set_yticklabels(ct.trained, fontsize=8)
    ax.set_xlabel("tested on")
    ax.set_ylabel("trained on")
    fig.colorbar(im, ax=ax, label="accuracy (%)")
    tests = sorted(set(ct.num_test.values()))
    images = f"; {tests[0]:,} test images per group" if len(tests) == 1 else ""
    seeds = sorted(set(ct.seeds))
    ax.set_title(f"Cross-group accuracy: {ct.label}\n{statistic}, mean over {'/'.join(map(str, seeds))} seed(s){images}",
                 fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


__all__ = ["CrossTable", "cross_group_tables", "crossed_rows", "cross_group_cells", "cross_group_heading", "plot_cross_group"]
