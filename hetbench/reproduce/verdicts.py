"""The verdicts a check and a claim can get, and how they are reached from an interval and combined."""

from __future__ import annotations

from typing import Sequence

from hetbench.reproduce.statistics import Interval

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
INCONCLUSIVE = "inconclusive"
PARTIAL = "partially reproduced"
NOT_RUN = "not run"
NO_VERDICT = "no verdict (smoke run)"
"""A smoke run's every verdict: toy settings check that the code runs; their numbers decide nothing."""
CHECK_VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN, NO_VERDICT)
"""Every verdict one check can get."""
VERDICTS = (REPRODUCED, PARTIAL, NOT_REPRODUCED, INCONCLUSIVE, NOT_RUN, NO_VERDICT)
"""Every verdict a claim can get (``partially reproduced``: its checks disagree)."""
#: the claim verdicts that decide something (two seed sets that both decide a claim must agree)
DECIDED = (REPRODUCED, PARTIAL, NOT_REPRODUCED)

#: what joins an unsettled check's reason to what its numbers alone say (hetbench.reproduce.docs splits on it)
UNSETTLED_MARK = "; settled, the numbers would say: "

def side_of(interval: Interval, margin: float, sign: int) -> str:
    """Where an interval lies against a margin, for a claim that the value is above it (``sign`` +1) or
    below it (-1): ``reproduced`` (entirely on the claimed side; touching the margin counts as not past
    it), ``not reproduced`` (entirely on the other side) or ``inconclusive`` (it straddles the margin).

    Examples
    --------
    >>> from hetbench.reproduce.statistics import Interval
    >>> from hetbench.reproduce.verdicts import side_of
    >>> [side_of(Interval(m, m - 1, m + 1, 5, 0.95), 0.0, +1) for m in (3.0, 0.5, -3.0)]
    ['reproduced', 'inconclusive', 'not reproduced']
    """
    low, high = (interval.low, interval.high) if sign > 0 else (-interval.high, -interval.low)
    edge = sign * margin
    if low > edge:
        return REPRODUCED
    if high <= edge:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def combine(verdicts: Sequence[str]) -> str:
    """A claim's verdict from its checks' verdicts. Checks not run are left out; when some checks are
    ``reproduced`` and others ``not reproduced``, the claim is ``partially reproduced``; else any
    ``inconclusive`` check makes it ``inconclusive``; else all agree and that is the verdict; nothing run:
    ``not run``.

    Examples
    --------
    >>> from hetbench.reproduce.verdicts import combine
    >>> combine(["reproduced", "not run"]), combine(["reproduced", "not reproduced"]), combine(["not run"])
    ('reproduced', 'partially reproduced', 'not run')
    >>> combine(["reproduced", "inconclusive"]), combine(["not reproduced", "not reproduced"])
    ('inconclusive', 'not reproduced')
    """
    run = [v for v in verdicts if v != NOT_RUN]
    if not run:
        return NOT_RUN
    if REPRODUCED in run and NOT_REPRODUCED in run:
        return PARTIAL
    if INCONCLUSIVE in run:
        return INCONCLUSIVE
    return run[0]
