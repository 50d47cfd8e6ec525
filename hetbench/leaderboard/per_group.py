"""The per-group table of a split: every configuration's accuracy on each group's test images, and how
many images each number rests on.

A device, domain or place split evaluates every run on each group's own test rows (the result's
``groups``: accuracy and ``num_test`` per group). Worst group and group variance summarise them; this
table shows them, for the runs that trained on every group (``--train-groups`` runs have their own
tables, :mod:`hetbench.leaderboard.groups`). A group's accuracy moves in steps of 100 / n points for n
test images, and one run's binomial 95% interval at 50% accuracy is +/- 196 sqrt(0.25 / n) points (the
widest it can be; normal approximation): with 42 test images a group's accuracy moves in 2.4-point
steps and one run's interval is +/- 15 points, so two groups closer than that may differ by chance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hetbench.leaderboard.aggregate import SplitTable
from hetbench.leaderboard.statistics import Stat, summarize


@dataclass
class PerGroupTable:
    """Groups (rows) x configurations (columns) of one split.

    Parameters
    ----------
    groups : list[str]
        The split's test groups, by name.
    num_test : dict[str, int or None]
        Test images per group (None where the results do not say).
    labels : list[str]
        The configurations' labels, in the split table's row order.
    cells : dict[tuple[str, str], Stat]
        (label, group) -> the group's accuracy over the configuration's seeds.
    """

    groups: list[str]
    num_test: dict[str, int | None]
    labels: list[str] = field(default_factory=list)
    cells: dict[tuple[str, str], Stat] = field(default_factory=dict)


def binomial_half_width(num_test: int | None) -> float | None:
    """One run's 95% binomial half-width at 50% accuracy, in points: ``196 sqrt(0.25 / n)``.

    Examples
    --------
    >>> from hetbench.leaderboard.per_group import binomial_half_width
    >>> round(binomial_half_width(42), 1), binomial_half_width(0)
    (15.1, None)
    """
    if not num_test or num_test <= 0:
        return None
    return 196.0 * math.sqrt(0.25 / num_test)


def per_group_table(table: SplitTable) -> PerGroupTable | None:
    """The per-group table of a split's rows that trained on every group (None with fewer than two groups).

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> from hetbench.leaderboard.per_group import per_group_table
    >>> def run(algorithm, seed, dark):
    ...     doc = example_result(algorithm=algorithm, seed=seed, accuracy=80.0)
    ...     doc["split"]["groups"] = ["base", "dark"]
    ...     doc["groups"] = {"base": {"accuracy": 90.0, "num_test": 40}, "dark": {"accuracy": dark, "num_test": 42}}
    ...     return parse_result(doc)
    >>> (t,) = aggregate([run("fedavg", 0, 60.0), run("fedavg", 1, 70.0), run("fedprox", 0, 75.0)], statistic="final")
    >>> pg = per_group_table(t)
    >>> pg.groups, pg.num_test, pg.cells[("fedavg", "dark")].mean, pg.cells[("fedprox", "dark")].n
    (['base', 'dark'], {'base': 40, 'dark': 42}, 65.0, 1)
    """
    rows = [r for r in table.rows if r.results[0].train_groups is None]
    stat = table.statistic
    groups = sorted({g for r in rows for res in r.results for g in res.group_values.get(stat, {})})
    if len(groups) < 2:
        return None
    num_test: dict[str, int | None] = {}
    for g in groups:
        counts = {res.data.get("groups", {}).get(g, {}).get("num_test") for r in rows for res in r.results}
        counts.discard(None)
        num_test[g] = int(next(iter(counts))) if len(counts) == 1 else None
    out = PerGroupTable(groups, num_test, [r.label for r in rows])
    for r in rows:
        for g in groups:
            out.cells[(r.label, g)] = summarize(res.group_values.get(stat, {}).get(g, {}).get("accuracy")
                                                for res in r.results)
    return out


def per_group_heading(statistic: str) -> tuple[str, str]:
    """The table's heading and the sentence under it (Markdown and HTML).

    Examples
    --------
    >>> from hetbench.leaderboard.per_group import per_group_heading
    >>> per_group_heading("mean of the last 3 evaluations")[0]
    'Accuracy per group'
    """
    return ("Accuracy per group",
            f"Each configuration's accuracy on every group's test images (each seed's {statistic}, mean ± std over "
            "seeds). A group's accuracy moves in steps of 100 / n points for its n test images; '± one run' is "
            "a single run's 95% binomial half-width at 50% accuracy (196 √(0.25 / n) points, the widest it can "
            "be): groups or methods closer than that may differ by chance.")


def per_group_cells(pg: PerGroupTable, cell_text) -> tuple[list[str], list[list[str]]]:
    """The table's header and one list of cell texts per group; ``cell_text(stat)`` formats a cell.

    Examples
    --------
    >>> from hetbench.leaderboard.statistics import Stat
    >>> from hetbench.leaderboard.per_group import PerGroupTable, per_group_cells
    >>> pg = PerGroupTable(["dark"], {"dark": 42}, ["fedavg"], {("fedavg", "dark"): Stat(65.0, 7.07, 2)})
    >>> per_group_cells(pg, lambda s: f"{s.mean:.2f}")
    (['group', 'test images', 'step', '± one run', 'fedavg'], [['dark', '42', '2.38', '15.1', '65.00']])
    """
    head = ["group", "test images", "step", "± one run"] + list(pg.labels)
    rows = []
    for g in pg.groups:
        n = pg.num_test.get(g)
        width = binomial_half_width(n)
        rows.append([g, str(n) if n else "–", f"{100.0 / n:.2f}" if n else "–", f"{width:.1f}" if width else "–"]
                    + [cell_text(pg.cells[(label, g)]) for label in pg.labels])
    return head, rows
