"""Leaderboard over ``hetbench train`` results: load, aggregate over seeds, rank, render, write.

One module per step (``docs/architecture.md``), each importing only the ones before it:

- :mod:`~hetbench.leaderboard.metrics`: the columns (name, direction, number format), ``--rank-by`` and
  ``--statistic`` (last-k, best, final);
- :mod:`~hetbench.leaderboard.statistics`: a result's best / last-k values (schema 2 reads them, schema 1
  computes them from its curves);
- :mod:`~hetbench.leaderboard.load`: result files read and validated, the bad ones listed;
- :mod:`~hetbench.leaderboard.labels`: row labels;
- :mod:`~hetbench.leaderboard.aggregate`: split tables and configuration rows, mean/std over seeds;
- :mod:`~hetbench.leaderboard.rank`: rows ranked by one metric; :func:`build` = load + aggregate + rank;
- :mod:`~hetbench.leaderboard.groups`: per-group accuracy and drop of runs with ``--train-groups``
  (leave-one-group-out tables);
- :mod:`~hetbench.leaderboard.layout`: what a split's main table shows (ranked rows, references apart, the
  settled column, the rows trained on some groups), decided once for both renderings;
- :mod:`~hetbench.leaderboard.text`: ``leaderboard.md`` and ``leaderboard.csv``;
- :mod:`~hetbench.leaderboard.diagnostics`: what the algorithms' per-round diagnostics (a result's
  ``curves.algorithm``) are, in words and units;
- :mod:`~hetbench.leaderboard.curves`: learning curves, with the diagnostics' small panels, as inline SVG
  and as PNG;
- :mod:`~hetbench.leaderboard.html`: the self-contained ``leaderboard.html``;
- :mod:`~hetbench.leaderboard.write`: all of them into an output folder, atomically.

The result and leaderboard file formats are in ``docs/output-contract.md``. This module only
re-exports the public API.
"""

from __future__ import annotations

from hetbench.leaderboard.aggregate import CENTRAL, Row, SplitTable, Stat, aggregate, summarize
from hetbench.leaderboard.curves import curves_svg
from hetbench.leaderboard.curves_png import plot_curves_png
from hetbench.leaderboard.groups import GroupLine, GroupTable, group_tables
from hetbench.leaderboard.html import render_html
from hetbench.leaderboard.load import RESULT_KIND, SCHEMA_VERSION, Loaded, Result, Skipped, load_results, parse_result
from hetbench.leaderboard.metrics import (
    CURVES,
    DEFAULT_RANK_BY,
    DEFAULT_STATISTIC,
    METRIC_BY_NAME,
    METRIC_NAMES,
    METRICS,
    STATISTICS,
    Metric,
    check_rank_by,
    check_statistic,
)
from hetbench.leaderboard.rank import best_means, build, is_best, rank
from hetbench.leaderboard.csv_text import CSV_COLUMNS, render_csv
from hetbench.leaderboard.text import render_markdown
from hetbench.leaderboard.write import Written, safe_filename, write_leaderboard

__all__ = [
    "CENTRAL", "CSV_COLUMNS", "CURVES", "DEFAULT_RANK_BY", "DEFAULT_STATISTIC", "METRICS", "METRIC_BY_NAME",
    "METRIC_NAMES", "RESULT_KIND", "SCHEMA_VERSION", "STATISTICS", "GroupLine", "GroupTable", "Loaded", "Metric",
    "Result", "Row", "Skipped", "SplitTable", "Stat", "Written", "aggregate", "best_means", "build", "check_rank_by",
    "check_statistic", "curves_svg", "group_tables", "is_best", "load_results", "parse_result", "plot_curves_png",
    "rank", "render_csv", "render_html", "render_markdown", "safe_filename", "summarize", "write_leaderboard",
]
