"""``leaderboard.csv``: the ranked tables as one tidy CSV row per (split, configuration), numbers in full; the
columns are :data:`CSV_COLUMNS` (``docs/output-contract.md``)."""

from __future__ import annotations

import csv
import io

from hetbench.leaderboard.aggregate import SplitTable
from hetbench.leaderboard.load import json_text
from hetbench.leaderboard.metrics import METRIC_NAMES


def _csv_num(x: float | None) -> str:
    return "" if x is None else repr(float(x))


CSV_COLUMNS: tuple[str, ...] = (
    ("split", "fingerprint", "rank", "algorithm", "seeds")
    + tuple(f"{m}_{s}" for m in METRIC_NAMES for s in ("mean", "std"))
    + ("algorithm_name", "params", "config", "rank_by", "statistic", "last_k", "role", "settled", "settle_change",
       "seed_list", "engine")
)


def render_csv(tables: list[SplitTable]) -> str:
    """``leaderboard.csv``: one row per (split, configuration), the columns :data:`CSV_COLUMNS`.

    Numbers are written in full (``repr``); null is an empty cell. The per-evaluation metrics' columns
    hold the table's statistic, named in ``statistic`` (``last_k``: the k used, ``+``-joined when they
    differ); ``rank_by`` names the ranking metric. ``role`` is ``ranked``, ``reference`` (never ranked) or
    ``groups`` (trained on some groups only); ``settled`` is ``true``/``false`` by the table's settling rule,
    ``settle_change`` the fitted change behind it (points; empty with too few evaluations); ``seed_list`` the
    seeds ``+``-joined; ``engine`` what trained the runs (``local``, ``flower``).

    Parameters
    ----------
    tables : list[SplitTable]
        Ranked tables.

    Returns
    -------
    str
        The CSV text (``\\n`` line ends).

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> from hetbench.leaderboard.rank import rank
    >>> from hetbench.leaderboard.csv_text import render_csv
    >>> import csv, io
    >>> runs = [example_result(params={"mu": 0.1}, seed=s, accuracy=acc) for s, acc in [(0, 80.0), (1, 84.0)]]
    >>> (row,) = csv.DictReader(io.StringIO(render_csv(rank(aggregate([parse_result(r) for r in runs])))))
    >>> row["algorithm"], row["seeds"], row["accuracy_mean"], row["accuracy_std"], row["rounds_to_target_mean"], row["params"]
    ('fedavg', '2', '82.0', '2.8284271247461903', '', '{"mu":0.1}')
    """
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    w.writeheader()
    for t in tables:
        for r in t.rows:
            rec = {"split": t.name, "fingerprint": t.fingerprint, "rank": "" if r.rank is None else r.rank,
                   "algorithm": r.label, "seeds": len(r.results), "algorithm_name": r.algorithm,
                   "params": json_text(r.params), "config": json_text(r.config), "rank_by": t.rank_by or "",
                   "statistic": t.statistic,
                   "last_k": "+".join(str(k) for k in sorted({x.last_k for x in r.results if x.last_k})),
                   "role": r.role, "settled": "true" if r.settled else "false",
                   "settle_change": _csv_num(r.settling.get("change")),
                   "seed_list": "+".join(json_text(x) for x in r.seeds), "engine": r.engine}
            for m in METRIC_NAMES:
                rec[f"{m}_mean"] = _csv_num(r.stats[m].mean)
                rec[f"{m}_std"] = _csv_num(r.stats[m].std)
            w.writerow(rec)
    return buf.getvalue()
