"""One PNG per claim: a panel per check that ran, drawn from the measurement and the declared criterion.

- a measurement with published values: measured and published side by side over the grid;
- a grid measurement: the mean and its 95% t interval over seeds (each seed a small dot), with the fitted
  power law for ``ratio_scaling``;
- a single value: each seed, the mean and its 95% t interval, the criterion's threshold and the margin the
  whole interval must clear (threshold -/+ min_effect).

The panel title gives the check's verdict.
"""

from __future__ import annotations

import math
import textwrap

from pathlib import Path
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from hetbench.reproduce.criteria import (
    INCONCLUSIVE, NO_VERDICT, NOT_REPRODUCED, NOT_RUN, PARTIAL, REPRODUCED, CheckResult, Measurement, criterion_level,
    loglog_slope,
)
from hetbench.reproduce.runners.base import Axes

#: verdict -> colour of the panel title
VERDICT_COLOURS = {REPRODUCED: "#1a7f37", PARTIAL: "#b35900", INCONCLUSIVE: "#7a5c00", NOT_REPRODUCED: "#c62828",
                   NOT_RUN: "#666666", NO_VERDICT: "#3d5a80"}


#: a white box behind a point's number, so that an interval drawn behind it does not cross it out
_LABEL_BOX = {"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85}


class Panel(NamedTuple):
    """One check's panel: the measure's name, its measurement and axes, the declared criterion, the
    verdict, and the paper's own numbers for the measure (``{"values", "where"}``, in the measure's
    units, one per point; :func:`hetbench.reproduce.claims.check_paper`) or why it prints none."""

    measure: str
    measurement: Measurement
    axes: Axes
    criterion: dict[str, Any]
    result: CheckResult
    paper: Mapping[str, Any] | None = None


#: the paper's numbers: gold stars, apart from the measured blue
_PAPER_STYLE = {"marker": "*", "color": "#c99700", "mec": "#6b5000", "mew": 0.6, "ms": 13, "ls": "none"}


def _draw_paper(ax, paper: Mapping[str, Any] | None, x: np.ndarray, scale: float) -> list[float]:
    """The paper's values as gold stars at the measurement's points (a one-point panel: beside the seeds,
    with the number); a check whose paper prints no comparable number gets a legend line saying where it
    reports the measure and why nothing is drawn. Returns the values drawn (for the y limits)."""
    if not paper:
        return []
    label = textwrap.fill(f"paper: {paper['where']}", 40)
    values = paper.get("values")
    if values is None:
        ax.plot([], [], ls="none", label=label)
        return []
    if len(values) != len(x):  # declared for another grid (the other mode): never at the wrong points
        ax.plot([], [], ls="none", label=textwrap.fill(f"paper: {paper['where']} ({len(values)} points, not this grid's"
                                                       f" {len(x)})", 40))
        return []
    pts = [(xi, v / scale) for xi, v in zip(x, values) if v is not None]
    if len(x) == 1:
        (_, v), = pts
        ax.plot([0.45], [v], label=label, **_PAPER_STYLE)
        ax.annotate(f"{v:.3g}", (0.45, v), textcoords="offset points", xytext=(9, 0), va="center", fontsize=8,
                    color="#6b5000")
    else:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, **_PAPER_STYLE)
    return [p[1] for p in pts]


def _short(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _panel(ax, m: Measurement, axes: Axes, criterion: dict[str, Any], result: CheckResult, title: str,
           paper: Mapping[str, Any] | None = None) -> None:
    s = axes.scale
    level = criterion_level(criterion)
    intervals = m.intervals(level)
    means = np.array(m.means()) / s
    # asymmetric error bars from each point's t interval (zero width for one value)
    bars = np.array([[c.mean - c.low for c in intervals], [c.high - c.mean for c in intervals]]) / s
    pct = f"{level * 100:g}%"
    x = np.array(m.x if m.x is not None else range(len(means)), dtype=float)
    name = criterion["name"]
    if m.published is not None:
        # measured and published agree to within percent: their difference, not their values, is readable
        pub = np.array(m.published, dtype=float)
        rel = np.where(pub != 0, (np.array(m.means()) / np.where(pub != 0, pub, 1) - 1) * 100, np.nan)
        tol = criterion.get("tolerance", 0.0) * 100
        pos = np.arange(len(rel))
        colours = ["#1a7f37" if abs(r) <= tol + 1e-9 else "#c62828" for r in rel]
        ax.bar(pos, rel, color=colours, width=0.6, label="measured / published - 1")
        if tol > 0:
            ax.axhspan(-tol, tol, color="#1a7f37", alpha=0.08, label=f"declared tolerance ±{tol:g}%")
            ax.axhline(tol, color="#1a7f37", lw=0.8, ls="--")
            ax.axhline(-tol, color="#1a7f37", lw=0.8, ls="--")
        ax.axhline(0, color="#444444", lw=0.8)
        # many bars: the values go under the tick labels, so each bar carries only its short percentage
        crowded = len(rel) > 5
        sep = "\nvs " if crowded else " vs "  # measured over published, stacked where bars are narrow
        values = [f"{_short(mi / s)}{sep}{_short(pi / s)}" for mi, pi in zip(m.means(), pub)]
        for i, (r, v) in enumerate(zip(rel, values)):
            ax.annotate(f"{r:+.1f}%" if crowded else f"{r:+.2f}%\n{v}", (i, r), textcoords="offset points",
                        xytext=(0, 4 if r >= 0 else -4), ha="center", va="bottom" if r >= 0 else "top", fontsize=7)
        lim = max(tol * 1.6, float(np.nanmax(np.abs(rel))) * 1.25 if np.isfinite(rel).any() else 1.0, 0.5)
        signs = rel[np.isfinite(rel)]
        low = -0.15 * lim if signs.size and (signs >= 0).all() and tol == 0 else -lim  # no empty half-panel
        high = 0.15 * lim if signs.size and (signs <= 0).all() and tol == 0 else lim
        ax.set_ylim(low, high)
        labels = m.point_labels()
        ax.set_xticks(pos, [f"{t}\n{v}" for t, v in zip(labels, values)] if crowded else labels,
                      fontsize=7 if crowded else None)
        ax.set_xlim(-0.6, len(rel) - 0.4)
        ax.set_ylabel("measured / published - 1 (%)")
        ax.set_xlabel(textwrap.fill(axes.xlabel + (f"; values in {axes.ylabel}" if axes.ylabel else ""), 66))
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="lower left")
        ax.set_title(title, fontsize=10, color=VERDICT_COLOURS.get(result.verdict, "#222222"))
        return
    elif len(means) == 1:
        seeds = np.array(m.samples[0], dtype=float) / s
        ax.plot(np.zeros(len(seeds)), seeds, "o", color="#1f5fa8", alpha=0.45, ms=6, label=f"seeds (n={len(seeds)})")
        ax.errorbar([0], means, yerr=bars, fmt="D", color="#1f5fa8", capsize=6, ms=8,
                    label=f"mean and {pct} t interval")
        paper_drawn = _draw_paper(ax, paper, x, s)
        if "threshold" in criterion:
            t = criterion["threshold"] / s
            sign = -1 if name == "less_than" else 1
            ax.axhline(t, color="#444444", lw=1, label=f"threshold {t:g}")
            edge = t + sign * criterion.get("min_effect", 0.0) / s
            if edge != t:
                ax.axhline(edge, color="#c62828", ls="--", lw=1,
                           label=f"the whole interval must be {'below' if sign < 0 else 'above'} {edge:g}")
            lo = min(float(seeds.min()), edge, t, float(means[0] - bars[0, 0]), *paper_drawn)
            hi = max(float(seeds.max()), edge, t, float(means[0] + bars[1, 0]), *paper_drawn)
            pad = 0.15 * (hi - lo or 1.0)
            ax.set_ylim(lo - pad, hi + pad)
        ci = intervals[0]
        label = f"{ci.mean / s:.3g}" if ci.low == ci.high else f"{ci.mean / s:.3g} [{ci.low / s:.3g}, {ci.high / s:.3g}]"
        low, high = ax.get_ylim()
        # the paper's star sits just right of the point: a number near the mean moves the mean's label below it
        near = any(abs(v - means[0]) < 0.06 * ((high - low) or 1.0) for v in paper_drawn)
        ax.annotate(label, (0, means[0]), textcoords="offset points", xytext=(10, -11 if near else 0),
                    va="top" if near else "center", fontsize=8, color="#1f5fa8")
        ax.set_xticks([0], [m.point_labels()[0]])
        ax.set_xlim(-0.6, 6.6 if paper else 4.2)  # the legend sits right of the points and their interval's label
        if all(float(v).is_integer() for v in seeds):  # a count (domains won): whole-number ticks
            from matplotlib.ticker import MaxNLocator

            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        for i, row in enumerate(m.samples):
            if len(row) > 1:
                ax.plot([x[i]] * len(row), np.array(row) / s, "o", color="#1f5fa8", alpha=0.35, ms=4,
                        label="each seed" if i == 0 else None)
        n = max(len(r) for r in m.samples)
        label = f"mean and {pct} t interval ({n} seeds)" if n > 1 else "measured"
        categories = name == "every_greater_than"  # points that are no grid (algorithms): no line between them
        ax.errorbar(x, means, yerr=bars if n > 1 else None, fmt="o" if categories else "o-", color="#1f5fa8",
                    capsize=4, label=label)
        paper_drawn = _draw_paper(ax, paper, x, s)
        if categories:
            t = criterion["threshold"] / s
            edge = t + criterion.get("min_effect", 0.0) / s
            ax.axhline(t, color="#444444", lw=1, label=f"threshold {t:g}")
            if edge != t:
                ax.axhline(edge, color="#c62828", ls="--", lw=1, label=f"every interval must be above {edge:g}")
            ax.set_xticks(x, m.point_labels(), rotation=45 if len(means) > 5 else 0,
                          ha="right" if len(means) > 5 else "center")
            ax.set_ylim(min(t, float(np.min(means - bars[0])), *paper_drawn) - 5 / s, None)
        if len(means) <= 8:  # the numbers beside their points
            for k, (xi, mi) in enumerate(zip(x, means)):  # alternately above and below: neighbours stay apart
                ax.annotate(_short(mi) if n == 1 else f"{mi:.3g}", (xi, mi), textcoords="offset points",
                            xytext=(5, 5 if k % 2 == 0 else -12), fontsize=8, color="#1f5fa8",
                            bbox=_LABEL_BOX)  # legible where a neighbour's interval passes behind it
        if name == "ratio_scaling" and min(means) > 0:
            slope, _, _ = loglog_slope(x, means)
            b = np.mean(np.log(means) - slope * np.log(x))
            xs = np.geomspace(x.min(), x.max(), 50)
            ax.plot(xs, np.exp(b) * xs**slope, "--", color="#b35900", label=f"fit: slope {slope:.3f}")
            mid = (criterion["slope_min"] + criterion["slope_max"]) / 2
            b0 = np.mean(np.log(means) - mid * np.log(x))
            ax.plot(xs, np.exp(b0) * xs**mid, ":", color="#444444",
                    label=f"slope {mid:g} (declared: {criterion['slope_min']:g} to {criterion['slope_max']:g})")
    if axes.log_x and len(means) > 1:
        ax.set_xscale("log")
    if axes.log_y:
        ax.set_yscale("log")
    if axes.reverse_x and len(means) > 1:
        ax.invert_xaxis()
    if m.x is not None and len(m.x) <= 8 and len(means) > 1:
        ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.minorticks_off()
    ax.set_xlabel(axes.xlabel)
    ax.set_ylabel(textwrap.fill(axes.ylabel, 42))  # a long label wraps instead of leaving the figure
    ax.grid(True, which="major", alpha=0.3)
    if len(means) == 1:  # the legend right of the point, in a band that hides no threshold, margin or the point's label
        loc = _clear_band(ax, float(means[0]))
        if loc is None:  # every band hides one: room above the data for the legend
            low, high = ax.get_ylim()
            ax.set_ylim(low, high + (high - low))  # everything drawn in the lower half, under the upper band
            loc = "upper right"
        ax.legend(fontsize=8, loc=loc)
    else:
        ax.legend(fontsize=8, loc="best")
    ax.set_title(title, fontsize=10, color=VERDICT_COLOURS.get(result.verdict, "#222222"))


def _clear_band(ax, point: float) -> str | None:
    """Where a one-point panel's legend goes: the right-hand band (upper, center or lower) that crosses no
    horizontal line (thresholds, margins) and not the point (its label is written beside it), the one farthest
    from the point first; None when every band crosses one (the caller makes room above the data), so the legend
    never hides the line a reader checks the interval against nor the interval's numbers.

    Examples
    --------
    >>> from hetbench.plotting import pyplot
    >>> fig, ax = pyplot().subplots()
    >>> _ = ax.set_ylim(-14, 3); _ = ax.axhline(0); _ = ax.axhline(1)
    >>> _clear_band(ax, -12.0)  # the threshold (0) and margin (1) lines lie in the upper band, the point low
    'center right'
    >>> _clear_band(ax, -8.0) is None  # the point in the centre and lower bands, the lines in the upper one
    True
    >>> pyplot().close(fig)
    """
    low, high = ax.get_ylim()
    span = (high - low) or 1.0
    rows = [(y - low) / span for line in ax.get_lines()
            for y in [line.get_ydata()] if len(y) == 2 and y[0] == y[1] for y in [float(y[0])]]
    where = (point - low) / span
    bands = {"upper right": (0.55, 1.0), "center right": (0.28, 0.72), "lower right": (0.0, 0.45)}
    clear = [(name, (lo, hi)) for name, (lo, hi) in bands.items()
             if not any(lo <= r <= hi for r in rows + [where])]
    return max(clear, key=lambda item: abs((item[1][0] + item[1][1]) / 2 - where))[0] if clear else None


def plot_claim(claim_id: str, verdict: str, panels: Sequence[Panel], not_run: Sequence[tuple[str, str]], path: Path,
               coverage: str = "") -> bool:
    """Draw a claim's panels (a :class:`Panel` per check that ran) to ``path``; checks not run are listed
    under the figure. Returns False when nothing ran (no file). The paper's numbers, where a check
    declares them, are gold stars beside the measured blue.
    ``coverage`` (:func:`hetbench.reproduce.write.coverage`) follows the verdict in the title, which then
    takes the colour of ``not run``: a claim checked on part of its data never reads as fully checked.

    Examples
    --------
    >>> from pathlib import Path
    >>> from hetbench.reproduce.criteria import Measurement, evaluate
    >>> from hetbench.reproduce.plots import Panel, plot_claim
    >>> from hetbench.reproduce.runners.base import Axes
    >>> m = Measurement([[1000], [100], [10]], x=[1, 10, 100])
    >>> c = {"name": "ratio_scaling", "slope_min": -1.1, "slope_max": -0.9}
    >>> panel = Panel("counts", m, Axes(log_x=True, log_y=True), c, evaluate(m, c), {"where": "Fig. 1",
    ...               "values": [900, None, 11]})
    >>> plot_claim("demo", "reproduced", [panel], [], Path("demo_claim.png")), Path("demo_claim.png").stat().st_size > 1000
    (True, True)
    """
    from hetbench.plotting import pyplot

    if not panels:
        return False
    plt = pyplot()
    n = len(panels)

    cols = n if n <= 3 else math.ceil(n / 2)  # four panels or more: two rows, so each stays readable
    rows = math.ceil(n / cols)
    width = max(5.4 * cols, 7.5)
    notes = [textwrap.fill(f"not run: {measure}: {why}", width=int(width * 15), subsequent_indent="    ")
             for measure, why in not_run]
    lines = sum(t.count("\n") + 1 for t in notes)
    height = 4.4 * rows + 0.2 * lines
    fig, axs = plt.subplots(rows, cols, figsize=(width, height), squeeze=False)
    for ax, (measure, m, axes, criterion, result, paper) in zip(axs.ravel(), panels):
        why = " (runs not settled)" if m.unsettled and result.verdict == INCONCLUSIVE else ""
        _panel(ax, m, axes, criterion, result, textwrap.fill(f"{measure}: {result.verdict}{why}", 50),  # fits a panel
               paper)
    for ax in axs.ravel()[n:]:
        ax.set_visible(False)
    fig.suptitle(f"{claim_id}: {verdict}{coverage}", fontsize=12,
                 color=VERDICT_COLOURS.get(NOT_RUN if coverage else verdict, "#222222"))
    bottom = 0.0
    if notes:
        fig.text(0.01, 0.01, "\n".join(notes), fontsize=8, color="#555555", ha="left", va="bottom")
        bottom = (0.2 * lines + 0.1) / height
    fig.tight_layout(rect=(0, bottom, 1, 1 - 0.22 / height))
    try:
        fig.savefig(path, dpi=100)
    finally:
        plt.close(fig)
    return True
