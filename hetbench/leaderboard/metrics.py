"""The leaderboard's columns (each metric's name, header, direction and number format) and its statistics.

A metric's ``name`` is also its ``--rank-by`` value and its CSV column prefix; :data:`FINAL_METRICS` are
read from a result's ``final`` section, the last three from ``timing``, ``clients`` and ``model``
(the result format is in ``docs/output-contract.md``).

The metrics measured at every evaluation (``per_evaluation``: accuracy, client and worst-group accuracy,
group variance and, with ``--train-groups``, trained-on / unseen accuracy and the mean drop) are shown as
one of :data:`STATISTICS` of each seed's curve (``--statistic``): the mean of the last k evaluations (the
default, k = the run's ``--last-k``), the best evaluation, or the final one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from hetbench.errors import HetbenchError

DEFAULT_RANK_BY = "worst_group_accuracy"

#: what a per-evaluation metric's cell shows of each seed's curve (``--statistic``)
STATISTICS: tuple[str, ...] = ("last-k", "best", "final")
DEFAULT_STATISTIC = "last-k"


def fmt_fixed(digits: int) -> Callable[[float], str]:
    """A formatter with ``digits`` decimals.

    Parameters
    ----------
    digits : int
        Decimals after the point.

    Returns
    -------
    Callable[[float], str]
        ``x -> f"{x:.{digits}f}"``.

    Examples
    --------
    >>> from hetbench.leaderboard.metrics import fmt_fixed
    >>> fmt_fixed(2)(81.2345)
    '81.23'
    """
    return lambda x: f"{x:.{digits}f}"


def fmt_count(x: float) -> str:
    """A count with an SI-like suffix (K, M, G, T) and three significant digits.

    Parameters
    ----------
    x : float
        The count.

    Returns
    -------
    str
        ``x`` shortened; below 1000 the plain number.

    Examples
    --------
    >>> from hetbench.leaderboard.metrics import fmt_count
    >>> fmt_count(1234567), fmt_count(890), fmt_count(12.5)
    ('1.23M', '890', '12.5')
    """
    ax = abs(x)
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if ax >= div:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.3g}" if ax < 100 else f"{x:.0f}"


def fmt_seconds(x: float) -> str:
    """Seconds: two decimals below 10 s, one from 10 s on.

    Parameters
    ----------
    x : float
        A duration in seconds.

    Returns
    -------
    str
        The formatted duration, without a unit.

    Examples
    --------
    >>> from hetbench.leaderboard.metrics import fmt_seconds
    >>> fmt_seconds(3.14159), fmt_seconds(31.4159)
    ('3.14', '31.4')
    """
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"


def fmt_seconds_like(mean: float, x: float) -> str:
    """``x`` with the decimals :func:`fmt_seconds` gives ``mean`` (a std beside its mean).

    Parameters
    ----------
    mean : float
        The mean whose format the std follows.
    x : float
        The value to format (the std).

    Returns
    -------
    str
        ``x`` with two decimals when ``abs(mean) < 10``, else one.

    Examples
    --------
    >>> from hetbench.leaderboard.metrics import fmt_seconds_like
    >>> fmt_seconds_like(12.0, 0.123), fmt_seconds_like(2.0, 0.123)
    ('0.1', '0.12')
    """
    return f"{x:.2f}" if abs(mean) < 10 else f"{x:.1f}"


@dataclass(frozen=True)
class Metric:
    """A leaderboard column.

    Parameters
    ----------
    name : str
        The metric's name: its ``--rank-by`` value and its CSV column prefix.
    header : str
        The short column header of the Markdown and HTML tables.
    higher_is_better : bool
        The metric's direction.
    fmt : Callable[[float], str]
        The number format of a mean.
    description : str
        One line for the HTML header's tooltip.
    std_fmt : Callable[[float, float], str] or None
        The format of a std given ``(mean, std)``; None formats the std with ``fmt``.
    compact_digits : Callable[[float], int] or None
        The decimals of the HTML table's compact cells given the mean (the std gets the same); None
        shows ``fmt`` and the std's own format there too.
    per_evaluation : bool
        Measured at every evaluation: the cell shows the chosen statistic (:data:`STATISTICS`) of the
        seed's curve; else the value the result gives once.
    protocol : bool
        A group-protocol metric (only runs with ``--train-groups`` have it; tables show its column only
        when some row has a value).
    spread_decides_best : bool
        A measurement that varies run to run on shared cores (wall time): its best mean is bold only when it is
        apart from every other row's by more than their spreads (mean ± std over seeds do not overlap).

    Examples
    --------
    >>> from hetbench.leaderboard.metrics import METRIC_BY_NAME
    >>> m = METRIC_BY_NAME["wall_time_s"]
    >>> m.arrow, m.fmt(12.345), m.format_std(12.345, 0.25), m.compact(12.345, 0.25)
    ('↓', '12.3', '0.2', ('12', '0'))
    """

    name: str
    header: str
    higher_is_better: bool
    fmt: Callable[[float], str]
    description: str = ""
    std_fmt: Callable[[float, float], str] | None = None
    per_evaluation: bool = False
    protocol: bool = False
    compact_digits: Callable[[float], int] | None = None
    spread_decides_best: bool = False

    def compact(self, mean: float, std: float | None = None) -> tuple[str, str | None]:
        """The mean and std as the HTML table's compact cells show them (fewer decimals than ``fmt``).

        Parameters
        ----------
        mean : float
            The mean.
        std : float, optional
            Its std; None for one seed.

        Returns
        -------
        tuple[str, str or None]
            The mean's text and the std's (None without a std).

        Examples
        --------
        >>> from hetbench.leaderboard.metrics import METRIC_BY_NAME
        >>> acc, var = METRIC_BY_NAME["accuracy"], METRIC_BY_NAME["group_accuracy_variance"]
        >>> acc.compact(78.234, 0.4321), var.compact(236.2, 67.1)
        (('78.2', '0.4'), ('236', '67'))
        >>> METRIC_BY_NAME["parameters"].compact(1234567.0), METRIC_BY_NAME["relative_accuracy"].compact(0.8123, 0.01)
        (('1.23M', None), ('0.81', '0.01'))
        """
        if self.compact_digits is None:
            return self.fmt(mean), None if std is None else self.format_std(mean, std)
        d = self.compact_digits(mean)
        return f"{mean:.{d}f}", None if std is None else f"{std:.{d}f}"

    @property
    def arrow(self) -> str:
        """``↑`` when higher is better, else ``↓``."""
        return "↑" if self.higher_is_better else "↓"

    def format_std(self, mean: float, std: float) -> str:
        """The std ``std`` of the mean ``mean`` as shown beside it.

        Parameters
        ----------
        mean : float
            The mean the std belongs to.
        std : float
            The std.

        Returns
        -------
        str
            The formatted std.

        Examples
        --------
        >>> from hetbench.leaderboard.metrics import METRIC_BY_NAME
        >>> METRIC_BY_NAME["accuracy"].format_std(81.0, 1.234)
        '1.23'
        """
        return self.std_fmt(mean, std) if self.std_fmt is not None else self.fmt(std)


def _one(_mean: float) -> int:
    return 1


def _two(_mean: float) -> int:
    return 2


def _whole_from_100(mean: float) -> int:
    return 0 if abs(mean) >= 100 else 1


def _seconds(mean: float) -> int:
    return 1 if abs(mean) < 10 else 0


# The compact cells' decimals (Metric.compact_digits): percentages and rounds 1, a ratio 2, a variance (%^2)
# whole from 100, seconds 1 below 10 s; the counts (parameters, MACs) keep their K/M/G form.

METRICS: tuple[Metric, ...] = (
    Metric("accuracy", "accuracy", True, fmt_fixed(2), "test accuracy (%)", per_evaluation=True,
           compact_digits=_one),
    Metric("client_accuracy", "client acc.", True, fmt_fixed(2), "mean per-client accuracy (%)", per_evaluation=True,
           compact_digits=_one),
    Metric("worst_group_accuracy", "worst group", True, fmt_fixed(2), "accuracy of the worst group (%)",
           per_evaluation=True, compact_digits=_one),
    Metric("group_accuracy_variance", "group var.", False, fmt_fixed(2), "variance of group accuracies (%^2)",
           per_evaluation=True, compact_digits=_whole_from_100),
    Metric("trained_on_accuracy", "trained-on acc.", True, fmt_fixed(2),
           "accuracy on the test rows of the groups trained on (%)", per_evaluation=True, protocol=True,
           compact_digits=_one),
    Metric("unseen_accuracy", "unseen acc.", True, fmt_fixed(2),
           "accuracy on the test rows of the groups not trained on (%)", per_evaluation=True, protocol=True,
           compact_digits=_one),
    Metric("mean_drop", "mean drop", False, fmt_fixed(2),
           "trained-on accuracy minus an unseen group's accuracy, mean over unseen groups (points)",
           per_evaluation=True, protocol=True, compact_digits=_one),
    Metric("client_accuracy_p10", "client p10", True, fmt_fixed(2), "10th percentile of client accuracy (%)",
           compact_digits=_one),
    Metric("client_accuracy_p90", "client p90", True, fmt_fixed(2), "90th percentile of client accuracy (%)",
           compact_digits=_one),
    Metric("relative_accuracy", "rel. acc.", True, fmt_fixed(3), "accuracy / centralised accuracy (ratio)",
           compact_digits=_two),
    Metric("rounds_to_target", "rounds to target", False, fmt_fixed(1), "rounds to reach the target accuracy",
           compact_digits=_one),
    Metric("wall_time_s", "wall time (s)", False, fmt_seconds, "training wall time (s)", fmt_seconds_like,
           compact_digits=_seconds, spread_decides_best=True),
    Metric("parameters", "params/client", False, fmt_count, "model parameters per client"),
    Metric("macs", "MACs/client", False, fmt_count, "multiply-accumulates per client"),
)
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
METRIC_BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}
#: read from result["final"] (the rest from timing, clients and model)
FINAL_METRICS: tuple[str, ...] = tuple(n for n in METRIC_NAMES if n not in ("wall_time_s", "parameters", "macs"))
#: shown as the chosen statistic of each seed's curve
PER_EVALUATION: tuple[str, ...] = tuple(m.name for m in METRICS if m.per_evaluation)

# learning curves drawn per split: (key in result["curves"], title)
CURVES: tuple[tuple[str, str], ...] = (
    ("accuracy", "test accuracy (%)"),
    ("worst_group_accuracy", "worst-group accuracy (%)"),
)


def check_rank_by(rank_by: str) -> Metric:
    """The metric named ``rank_by``.

    Parameters
    ----------
    rank_by : str
        A metric name (a ``--rank-by`` value).

    Returns
    -------
    Metric
        The metric of that name.

    Raises
    ------
    HetbenchError
        When no metric has that name; the message lists the valid names.

    Examples
    --------
    >>> from hetbench.leaderboard.metrics import check_rank_by
    >>> check_rank_by("group_accuracy_variance").higher_is_better
    False
    >>> check_rank_by("speed")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: unknown rank_by 'speed'; choose one of: accuracy, ...
    """
    if rank_by not in METRIC_BY_NAME:
        raise HetbenchError(f"unknown `rank_by` '{rank_by}'; choose one of: {', '.join(METRIC_NAMES)}")
    return METRIC_BY_NAME[rank_by]


def check_statistic(statistic: str) -> str:
    """``statistic`` when it is one of :data:`STATISTICS`.

    Parameters
    ----------
    statistic : str
        A ``--statistic`` value.

    Returns
    -------
    str
        The same value.

    Raises
    ------
    HetbenchError
        When it is none of them; the message lists them.

    Examples
    --------
    >>> from hetbench.leaderboard.metrics import check_statistic
    >>> check_statistic("best")
    'best'
    >>> check_statistic("median")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: unknown statistic 'median'; choose one of: last-k, best, final
    """
    if statistic not in STATISTICS:
        raise HetbenchError(f"unknown `statistic` '{statistic}'; choose one of: {', '.join(STATISTICS)}")
    return statistic


def statistic_text(statistic: str, ks: list[int] | tuple[int, ...] = ()) -> str:
    """A statistic in words, for the tables' header lines.

    Parameters
    ----------
    statistic : str
        One of :data:`STATISTICS`.
    ks : sequence of int
        The k the results used for ``last-k`` (a run with fewer evaluations than ``--last-k`` uses fewer).

    Returns
    -------
    str
        E.g. ``"mean of the last 3 evaluations"``.

    Examples
    --------
    >>> from hetbench.leaderboard.metrics import statistic_text
    >>> statistic_text("last-k", [3]), statistic_text("last-k", [2, 3])
    ('mean of the last 3 evaluations', 'mean of the last k evaluations (k = 2, 3)')
    >>> statistic_text("best"), statistic_text("final")
    ('best evaluation (highest accuracy, lowest variance and drop)', 'final evaluation')
    """
    check_statistic(statistic)
    if statistic == "best":
        return "best evaluation (highest accuracy, lowest variance and drop)"
    if statistic == "final":
        return "final evaluation"
    ks = sorted(set(ks))
    if len(ks) == 1:
        return f"mean of the last {ks[0]} evaluation{'s' if ks[0] != 1 else ''}"
    return "mean of the last k evaluations" + (f" (k = {', '.join(map(str, ks))})" if ks else "")
