"""Group-protocol tables: per-group accuracy and drop of the runs trained on some groups only.

A run with ``--train-groups`` trains on the clients of those groups and is tested on every test group;
its document gives each group's accuracy and *drop* (the accuracy on the trained-on groups' pooled test
rows minus the group's, in points). Two kinds of table come out of a split's rows:

- **leave-one-group-out**: rows whose ``train_groups`` leave exactly one of the split's groups out
  (``--protocol leave-one-group-out`` writes one per group), gathered per configuration (algorithm,
  params, config without ``train_groups``): one line per held-out group, its accuracy and drop, and a
  last line with their mean over the held-out groups (DapperFL's domain generalisation);
- **trained on some groups**: any other row with ``train_groups``: one line per test group, trained on
  or not (HeteroSwitch Fig. 3: train on the baseline ISP, test on each variant); rows of a configuration
  trained on one group each, on two groups or more, are one matrix instead
  (:mod:`hetbench.leaderboard.cross_group`).

Every cell is the mean ± std over seeds of the table's statistic (``last-k``, ``best`` or ``final``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from hetbench.leaderboard.aggregate import Row, SplitTable, Stat, summarize
from hetbench.leaderboard.labels import set_labels
from hetbench.leaderboard.load import json_text

LOGO = "leave-one-group-out"
TRAIN_GROUPS = "train-groups"


@dataclass
class GroupLine:
    """One group of a group table.

    Parameters
    ----------
    group : str
        The group's name (``"mean"`` for a leave-one-group-out table's last line).
    trained_on : bool or None
        Whether the run trained on the group's clients (None on a mean line).
    seeds : int
        How many seeds the line averages.
    accuracy : Stat
        The group's accuracy over the seeds.
    drop : Stat
        The group's drop (trained-on accuracy minus the group's, points) over the seeds.
    trained_on_accuracy : Stat or None
        Leave-one-group-out lines: the run's accuracy on the groups it trained on.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import Stat
    >>> from hetbench.leaderboard.groups import GroupLine
    >>> GroupLine("dark", False, 1, Stat(70.0, None, 1), Stat(20.0, None, 1)).drop.mean
    20.0
    """

    group: str
    trained_on: bool | None
    seeds: int
    accuracy: Stat
    drop: Stat
    trained_on_accuracy: Stat | None = None


@dataclass
class GroupTable:
    """The group lines of one configuration (or one leave-one-group-out family).

    Parameters
    ----------
    kind : str
        :data:`LOGO` or :data:`TRAIN_GROUPS`.
    label : str
        The configuration's label (for :data:`LOGO`, without ``train_groups``).
    train_groups : list[str]
        :data:`TRAIN_GROUPS`: the groups trained on; :data:`LOGO`: empty (each line has its own).
    lines : list[GroupLine]
        One per group, by name; a :data:`LOGO` table ends with the mean over held-out groups.

    Examples
    --------
    >>> from hetbench.leaderboard.groups import LOGO, GroupTable
    >>> GroupTable(LOGO, "fedavg").lines
    []
    """

    kind: str
    label: str
    train_groups: list[str] = field(default_factory=list)
    lines: list[GroupLine] = field(default_factory=list)


def _line(row_results: list, group: str, statistic: str, trained_on: bool | None, logo: bool) -> GroupLine:
    per = [r.group_values.get(statistic, {}).get(group, {}) for r in row_results]
    return GroupLine(
        group=group, trained_on=trained_on, seeds=len(row_results),
        accuracy=summarize(p.get("accuracy") for p in per), drop=summarize(p.get("drop") for p in per),
        trained_on_accuracy=summarize(r.values_for(statistic)["trained_on_accuracy"] for r in row_results)
        if logo else None,
    )


def _mean_line(lines: list[GroupLine]) -> GroupLine:
    """The mean over held-out groups of the lines' means (std over the groups)."""
    def over(get) -> Stat:
        return summarize(s.mean for s in (get(line) for line in lines) if s is not None)

    return GroupLine("mean", None, min((line.seeds for line in lines), default=0), over(lambda x: x.accuracy),
                     over(lambda x: x.drop), over(lambda x: x.trained_on_accuracy))


def group_tables(table: SplitTable) -> list[GroupTable]:
    """The group tables of a split's rows that set ``train_groups`` (none when no row does).

    Parameters
    ----------
    table : SplitTable
        An aggregated table (its ``statistic`` picks the values).

    Returns
    -------
    list[GroupTable]
        Leave-one-group-out tables first (by label), then one table per other row with ``train_groups``,
        in the table's row order.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.groups import group_tables
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> from hetbench.train.result_stats import curve_statistics, group_protocol
    >>> def run(held_out):
    ...     accs = {"a": 90.0, "b": 80.0, "c": 60.0}
    ...     accs[held_out] -= 30.0
    ...     doc = example_result(algorithm="fedavg", accuracy=70.0)
    ...     doc["split"]["groups"] = ["a", "b", "c"]
    ...     doc["config"]["train_groups"] = [g for g in accs if g != held_out]
    ...     groups, protocol = group_protocol({g: {"accuracy": v, "num_test": 10} for g, v in accs.items()},
    ...                                       doc["config"]["train_groups"])
    ...     doc["groups"] = groups
    ...     doc["final"].update(protocol)
    ...     doc["curves"]["group_accuracy"] = {g: [v] for g, v in accs.items()}
    ...     doc["final"].update(curve_statistics(doc["curves"], groups, doc["config"]["train_groups"], 3))
    ...     return parse_result(doc)
    >>> (t,) = aggregate([run(g) for g in "abc"])
    >>> (logo,) = group_tables(t)
    >>> logo.kind, logo.label, [(x.group, x.accuracy.mean, x.drop.mean) for x in logo.lines]
    ('leave-one-group-out', 'fedavg', [('a', 60.0, 10.0), ('b', 50.0, 25.0), ('c', 30.0, 55.0), ('mean', 46.666666666666664, 30.0)])
    """
    from hetbench.leaderboard.cross_group import crossed_rows

    logo: dict[tuple[str, str, str], list[Row]] = {}
    others: list[GroupTable] = []
    crossed = crossed_rows(table)  # shown as one matrix per configuration (hetbench.leaderboard.cross_group)
    for row in table.rows:
        first = row.results[0]
        tg = first.train_groups
        if tg is None:
            continue
        held_out = first.held_out
        if len(held_out) == 1:
            config = {k: v for k, v in row.config.items() if k != "train_groups"}
            logo.setdefault((row.algorithm, json_text(row.params), json_text(config)), []).append(row)
            continue
        if id(row) in crossed:
            continue
        groups = sorted({g for r in row.results for g in r.group_values.get(table.statistic, {})})
        lines = [_line(row.results, g, table.statistic, g in tg, logo=False) for g in groups]
        others.append(GroupTable(TRAIN_GROUPS, row.label, list(tg), lines))
    families = [SimpleNamespace(algorithm=a, params=rows[0].params,
                                config={k: v for k, v in rows[0].config.items() if k != "train_groups"},
                                label="", rows=rows) for (a, _, _), rows in sorted(logo.items())]
    set_labels(families)
    out: list[GroupTable] = []
    for fam in sorted(families, key=lambda f: f.label):
        lines = sorted((_line(r.results, r.results[0].held_out[0], table.statistic, False, logo=True)
                        for r in fam.rows), key=lambda x: x.group)
        out.append(GroupTable(LOGO, fam.label, [], lines + [_mean_line(lines)]))
    return out + others
