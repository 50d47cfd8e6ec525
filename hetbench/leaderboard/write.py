"""Writing: the leaderboard of a results folder into an output folder, atomically.

The folder holds ``leaderboard.md``, ``leaderboard.csv``, ``leaderboard.html`` and a
``curves_<split>.png`` per split with curves (``docs/output-contract.md``). It is built in a
temporary sibling and renamed into place (:func:`hetbench.atomic.atomic_dir`), so a failure never
leaves half a leaderboard.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from hetbench.atomic import atomic_dir, check_out_dir
from hetbench.leaderboard.aggregate import SplitTable
from hetbench.leaderboard.cross_group import cross_group_tables, plot_cross_group
from hetbench.leaderboard.curves_png import plot_curves_png
from hetbench.leaderboard.html import render_html
from hetbench.leaderboard.load import Loaded
from hetbench.leaderboard.metrics import (
    DEFAULT_RANK_BY,
    DEFAULT_STATISTIC,
    METRIC_BY_NAME,
    check_rank_by,
    check_statistic,
    statistic_text,
)
from hetbench.leaderboard.rank import build
from hetbench.leaderboard.csv_text import render_csv
from hetbench.leaderboard.text import render_markdown
from hetbench.train.settling import settle_rule

MAX_WARNINGS = 20  # skipped files named one by one on stderr; the rest are counted


def safe_filename(text: str) -> str:
    """``text`` as a file-name stem: runs of other characters than ``A-Za-z0-9._-`` become ``-``.

    Parameters
    ----------
    text : str
        A split's title.

    Returns
    -------
    str
        The stem; ``"split"`` when nothing is left.

    Examples
    --------
    >>> from hetbench.leaderboard.write import safe_filename
    >>> safe_filename("iso isp (3fa20000)"), safe_filename("日本")
    ('iso-isp-3fa20000', 'split')
    """
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return s or "split"


@dataclass
class Written:
    """What :func:`write_leaderboard` wrote.

    Parameters
    ----------
    out : Path
        The output folder, as given.
    files : list[str]
        The names of the files inside ``out``.
    tables : list[SplitTable]
        The ranked tables.
    loaded : Loaded
        What was loaded, with the skipped files.
    unmatched_references : list[str]
        References asked for that no result's algorithm is (a misspelt name, say).

    Examples
    --------
    >>> from pathlib import Path
    >>> from hetbench.leaderboard.load import Loaded, Skipped
    >>> from hetbench.leaderboard.write import Written
    >>> w = Written(Path("lb"), ["leaderboard.md"], [], Loaded([], [Skipped(f"{i}.json", "bad") for i in range(3)]))
    >>> w.warnings(limit=2)
    ['hetbench: warning: skipped 0.json: bad', 'hetbench: warning: skipped 1.json: bad', 'hetbench: warning: ... and 1 more skipped files (listed in leaderboard.md)']
    >>> w.summary()
    'wrote lb/leaderboard.md (0 split(s), 0 configuration(s) from 0 result(s), 3 skipped)'
    """

    out: Path
    files: list[str]
    tables: list[SplitTable]
    loaded: Loaded
    unmatched_references: list[str] = field(default_factory=list)

    def warnings(self, limit: int = MAX_WARNINGS) -> list[str]:
        """One warning line per skipped file, the first ``limit`` of them, then a count of the rest.

        Parameters
        ----------
        limit : int
            How many skipped files to name.

        Returns
        -------
        list[str]
            The lines (for stderr); empty when nothing was skipped.

        Examples
        --------
        >>> from pathlib import Path
        >>> from hetbench.leaderboard.load import Loaded
        >>> from hetbench.leaderboard.write import Written
        >>> Written(Path("lb"), [], [], Loaded([], [])).warnings()
        []
        """
        skipped = self.loaded.skipped
        lines = [f"hetbench: warning: skipped {s.path}: {s.reason}" for s in skipped[:limit]]
        if len(skipped) > limit:
            lines.append(f"hetbench: warning: ... and {len(skipped) - limit} more skipped files (listed in leaderboard.md)")
        lines += [f"hetbench: warning: no result's algorithm is the reference {name!r}" for name in self.unmatched_references]
        return lines

    def summary(self) -> str:
        """The one line that says what was written, from how many splits, configurations and results.

        Returns
        -------
        str
            The line (for stdout).

        Examples
        --------
        >>> from pathlib import Path
        >>> from hetbench.leaderboard.load import Loaded
        >>> from hetbench.leaderboard.write import Written
        >>> Written(Path("lb"), ["leaderboard.md", "leaderboard.csv"], [], Loaded([], [])).summary()
        'wrote lb/leaderboard.md, lb/leaderboard.csv (0 split(s), 0 configuration(s) from 0 result(s))'
        """
        n_rows = sum(len(t.rows) for t in self.tables)
        n_res = len(self.loaded.results)
        skipped = self.loaded.skipped
        skip = f", {len(skipped)} skipped" if skipped else ""
        paths = ", ".join(str(self.out / f) for f in self.files)
        ranked = ""
        if self.tables and self.tables[0].rank_by:
            t = self.tables[0]
            ks = sorted({k for x in self.tables for k in x.last_k})
            how = f", {statistic_text(t.statistic, ks)}" if METRIC_BY_NAME[t.rank_by].per_evaluation else ""
            ranked = f"; ranked by {t.rank_by}{how}"
        return (f"wrote {paths} ({len(self.tables)} split(s), {n_rows} configuration(s) from {n_res} result(s)"
                f"{skip}){ranked}")


def write_leaderboard(results_dir: str | Path, out: str | Path, rank_by: str = DEFAULT_RANK_BY,
                      overwrite: bool = False, statistic: str = DEFAULT_STATISTIC, settle_evaluations: int = 4,
                      settle_max_change: float = 3.0, references: tuple[str, ...] = ()) -> Written:
    """Build the leaderboard of ``results_dir`` into the folder ``out``, atomically.

    Writes leaderboard.md, leaderboard.csv, leaderboard.html and a ``curves_<split>.png`` per split
    with curves (numbered ``-2``, ``-3``, ... when two titles give the same file name).

    Parameters
    ----------
    results_dir : str or Path
        The folder of ``hetbench train`` results (searched recursively).
    out : str or Path
        The output folder; neither ``results_dir``, nor inside it, nor a parent of it.
    rank_by : str
        The metric name to rank by.
    overwrite : bool
        Replace ``out`` if it is a leaderboard (its ``leaderboard.csv`` has the leaderboard's header) or empty.
    statistic : str
        What the per-evaluation metrics take of each seed's curve: ``"last-k"`` (mean of the last k
        evaluations, the default), ``"best"`` or ``"final"``.
    settle_evaluations, settle_max_change : int, float
        The settling rule rows are marked by (:mod:`hetbench.train.settling`): the line through the seed-mean of
        the last ``settle_evaluations`` test accuracies (at least 3) moves by at most ``settle_max_change`` points.
    references : tuple[str, ...]
        Algorithms shown apart as references and never ranked, besides ``central``.

    Returns
    -------
    Written
        The folder, its files, the ranked tables and what was loaded.

    Raises
    ------
    HetbenchError
        On an unknown ``rank_by`` or ``statistic``, a settling rule out of range, an ``out`` that would replace the results or exists without
        ``overwrite``, or a results folder without usable results; nothing is written then.

    Examples
    --------
    >>> import json, pathlib
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.write import write_leaderboard
    >>> folder = pathlib.Path("results_write")
    >>> folder.mkdir()
    >>> _ = (folder / "a.json").write_text(json.dumps(example_result()))
    >>> write_leaderboard(folder, "lb").files
    ['leaderboard.md', 'leaderboard.csv', 'leaderboard.html', 'curves_digits.png']
    """
    check_rank_by(rank_by)
    check_statistic(statistic)
    settle = settle_rule(settle_evaluations, settle_max_change)
    inputs = {"results folder": results_dir}
    check_out_dir(out, overwrite, "leaderboard", inputs)  # fail before any work
    tables, loaded = build(results_dir, rank_by, statistic, settle, tuple(references))
    files = ["leaderboard.md", "leaderboard.csv", "leaderboard.html"]
    with atomic_dir(out, overwrite, "leaderboard", inputs) as tmp:
        (tmp / "leaderboard.md").write_text(render_markdown(tables, loaded.skipped), encoding="utf-8")
        (tmp / "leaderboard.csv").write_text(render_csv(tables), encoding="utf-8", newline="")
        (tmp / "leaderboard.html").write_text(render_html(tables, loaded.skipped), encoding="utf-8")
        used: set[str] = set()
        for t in tables:
            stem = base = f"curves_{safe_filename(t.title)}"
            k = 2
            while stem in used:
                stem, k = f"{base}-{k}", k + 1
            used.add(stem)
            if plot_curves_png(t, tmp / f"{stem}.png"):
                files.append(f"{stem}.png")
            for k, ct in enumerate(cross_group_tables(t)):  # one group x group matrix per configuration
                name = f"cross_group_{stem[len('curves_'):]}-{safe_filename(ct.label)}" + (f"-{k}" if k else "")
                plot_cross_group(ct, tmp / f"{name}.png", statistic_text(t.statistic, t.last_k))
                files.append(f"{name}.png")
    present = {r.algorithm for t in tables for r in t.rows}
    return Written(Path(out), files, tables, loaded, [a for a in references if a not in present])
