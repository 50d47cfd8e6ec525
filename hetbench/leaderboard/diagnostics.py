"""The algorithms' per-round diagnostics the curves show: what each recorded key is, in words and units.

An algorithm records a diagnostic with ``RunState.record`` on the server, once per trained round; a result
carries it in ``curves.algorithm.<name>`` and :func:`hetbench.leaderboard.aggregate.aggregate` averages it
over seeds under the row curve ``algorithm.<name>``. :data:`DIAGNOSTICS` says what the known ones are; a
key it does not know is still drawn, titled by its name.
"""

from __future__ import annotations

from dataclasses import dataclass

from hetbench.leaderboard.aggregate import SplitTable
from hetbench.leaderboard.seed_curves import DIAGNOSTIC_PREFIX


@dataclass(frozen=True)
class Diagnostic:
    """How to show one diagnostic.

    Parameters
    ----------
    title : str
        The panel's title: the algorithm and what the value is.
    ylabel : str
        The y axis: the quantity and its unit.
    limits : tuple of float, optional
        The y range every value lies in (fractions: 0 to 1); None: the data's.

    Examples
    --------
    >>> from hetbench.leaderboard.diagnostics import DIAGNOSTICS
    >>> DIAGNOSTICS["c_norm"].ylabel
    'L2 norm (gradient units)'
    """

    title: str
    ylabel: str
    limits: tuple[float, float] | None = None


_CLIENTS = "fraction of the round's clients"

#: the known diagnostics by recorded name, in the order their panels come
DIAGNOSTICS: dict[str, Diagnostic] = {
    "switch1_fraction": Diagnostic("HeteroSwitch: switch 1 on (L_init < L_EMA)", _CLIENTS, (0.0, 1.0)),
    "switch2_fraction": Diagnostic("HeteroSwitch: switch 2 on (SWA weights sent)", _CLIENTS, (0.0, 1.0)),
    "l_ema": Diagnostic("HeteroSwitch: L_EMA, loss average (Eq. 1)", "cross-entropy (nats)"),
    "c_norm": Diagnostic("SCAFFOLD: server control variate ‖c‖₂", "L2 norm (gradient units)"),
    "c_i_norm_mean": Diagnostic("SCAFFOLD: mean client control variate ‖c_i‖₂", "L2 norm (gradient units)"),
    "fusion_alpha": Diagnostic("DapperFL: fusion factor α_t (Eq. 2)", "weight of the global model", (0.0, 1.0)),
    "pruned_fraction": Diagnostic("DapperFL: mean pruning ratio of round's clients",
                                  "fraction of channels pruned", (0.0, 1.0)),
    "server_step_norm": Diagnostic("FedAdam/FedYogi/FedAdagrad: server step norm",
                                   "‖Δx‖₂ per round (parameter units)"),
}


def describe(name: str) -> Diagnostic:
    """What diagnostic ``name`` is; an unknown name is titled by itself.

    Parameters
    ----------
    name : str
        The recorded name (``curves.algorithm.<name>``), with or without the ``algorithm.`` prefix.

    Returns
    -------
    Diagnostic
        Its title, axis label and range.

    Examples
    --------
    >>> from hetbench.leaderboard.diagnostics import describe
    >>> describe("algorithm.fusion_alpha").limits, describe("my_value")
    ((0.0, 1.0), Diagnostic(title='my_value', ylabel='value per round', limits=None))
    """
    name = name[len(DIAGNOSTIC_PREFIX):] if name.startswith(DIAGNOSTIC_PREFIX) else name
    return DIAGNOSTICS.get(name) or Diagnostic(name, "value per round")


def diagnostic_panels(table: SplitTable) -> list[tuple[str, Diagnostic]]:
    """The diagnostics some row of ``table`` has: (row curve key, description), the known ones in
    :data:`DIAGNOSTICS` order, then the others by name.

    Parameters
    ----------
    table : SplitTable
        An aggregated table.

    Returns
    -------
    list[tuple[str, Diagnostic]]
        One entry per panel to draw; empty when no result recorded a diagnostic.

    Examples
    --------
    >>> from hetbench.leaderboard.aggregate import aggregate
    >>> from hetbench.leaderboard.diagnostics import diagnostic_panels
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> run = example_result(algorithm="scaffold", curves={
    ...     "round": [1, 2], "accuracy": [40.0, 60.0], "algorithm": {"zeta": [1.0, 2.0], "c_norm": [0.5, 0.7]}})
    >>> (table,) = aggregate([parse_result(run)])
    >>> [(key, d.title) for key, d in diagnostic_panels(table)]
    [('algorithm.c_norm', 'SCAFFOLD: server control variate ‖c‖₂'), ('algorithm.zeta', 'zeta')]
    >>> diagnostic_panels(aggregate([parse_result(example_result())])[0])
    []
    """
    keys = {k for r in table.rows for k in r.curves if k.startswith(DIAGNOSTIC_PREFIX)}
    order = {DIAGNOSTIC_PREFIX + name: i for i, name in enumerate(DIAGNOSTICS)}
    return [(k, describe(k)) for k in sorted(keys, key=lambda k: (order.get(k, len(order)), k))]
