"""q-FedAvg (Li, Sanjabi, Beirami, Smith 2020, Fair resource allocation in federated learning, Alg. 2).

Each selected client k evaluates F_k(w_t) on its data, runs local SGD to w_bar_k and reports
Delta_k = F_k^q * L (w_t - w_bar_k) and h_k = q F_k^(q-1) * ||L (w_t - w_bar_k)||^2 + L F_k^q, with L = 1/eta
the Lipschitz estimate the paper uses for local-SGD solvers. The server sets w_{t+1} = w_t - sum Delta_k
/ sum h_k. q = 1e-6 is the value HeteroSwitch (Appendix A) tuned; q = 0 gives the uniform average of the
local models.
"""

from __future__ import annotations

from hetbench.train.algorithms.base import Algorithm, ClientUpdate, RunState, StackedUpdates
from hetbench.train.algorithms.hyper import Hyper
from hetbench.train.local import dataset_loss
from hetbench.train.local_plan import LocalPlan, StackedResult


class QFedAvg(Algorithm):
    """q-FedAvg: clients with a higher loss weigh more, ``w_{t+1} = w_t - sum_k Delta_k / sum_k h_k``.

    ``Delta_k = F_k^q L (w_t - w_bar_k)`` and ``h_k = q F_k^(q-1) ||L (w_t - w_bar_k)||^2 + L F_k^q`` with
    ``F_k`` the client's loss at ``w_t``, ``w_bar_k`` its local SGD result and ``L = 1 / lr``.

    Parameters
    ----------
    q : float, default 1e-6
        Fairness exponent, >= 0 (the value HeteroSwitch, Appendix A, tuned); ``q = 0`` gives the uniform
        average of the local models.

    References
    ----------
    .. [1] T. Li, M. Sanjabi, A. Beirami and V. Smith, "Fair resource allocation in federated learning",
       ICLR 2020, Algorithm 2 (q-FedAvg), which minimises the q-FFL objective.

    Examples
    --------
    One aggregation step with ``q = 0``: the uniform mean of the two local models.

    >>> import torch
    >>> from types import SimpleNamespace
    >>> from hetbench.train.algorithms import ClientUpdate, make_algorithm
    >>> make_algorithm("qfedavg").params
    {'q': 1e-06}
    >>> qfedavg = make_algorithm("qfedavg", q=0.0)
    >>> run = SimpleNamespace(global_params=torch.zeros(2), global_buffers=torch.zeros(0),
    ...                       config=SimpleNamespace(lr=0.5))
    >>> qfedavg.begin_round(run, 1)
    >>> for k, theta in enumerate([[1.0, 2.0], [3.0, 0.0]]):
    ...     update = ClientUpdate(k, torch.tensor(theta), torch.zeros(0), 1.0, 0.0, 1, 8, {"f_k": 0.7})
    ...     qfedavg.accumulate(run, 1, update)
    >>> qfedavg.end_round(run, 1)
    >>> run.global_params
    tensor([2., 1.])
    """

    name = "qfedavg"
    citation = "Li et al. 2020, Fair resource allocation in federated learning (q-FedAvg)"
    hyper = {"q": Hyper(1e-6, "q-FedAvg fairness exponent q (0: the uniform average).", "HeteroSwitch Appendix A",
                        low=0.0)}
    rebuilt = (*Algorithm.rebuilt, "_h")

    def client_update(self, run: RunState, round_index: int, client: int) -> ClientUpdate:
        ws = run.ws
        ws.flat.load(run.global_params, run.global_buffers)
        f_k = dataset_loss(ws, run.data.client_rows[client])
        ws.check_finite(f_k, "initial loss")
        update = super().client_update(run, round_index, client)
        update.extra["f_k"] = max(f_k, 1e-12)
        return update

    stacked = True  # local_plan asks for F_k(w_t) over the client's rows, computed for the chunk at once

    def local_plan(self, run: RunState, round_index: int, client: int) -> LocalPlan:
        return LocalPlan(self.batches(run, round_index, client), loss_rows=run.data.client_rows[client])

    def stacked_updates(self, run: RunState, round_index: int, clients: list[int], plans: list[LocalPlan],
                        out: StackedResult) -> StackedUpdates:
        updates = super().stacked_updates(run, round_index, clients, plans, out)
        updates.extras = [{"f_k": max(f_k, 1e-12)} for f_k in out.initial_loss]
        return updates

    def begin_round(self, run: RunState, round_index: int) -> None:
        super().begin_round(run, round_index)
        self._h = 0.0

    def accumulate(self, run: RunState, round_index: int, update: ClientUpdate) -> None:
        q = float(self.params["q"])
        lipschitz = 1.0 / run.config.lr
        f_k = update.extra.pop("f_k")
        delta_w = (run.global_params - update.params).mul_(lipschitz)
        self._sum.add_(delta_w, alpha=f_k**q)
        self._h += q * f_k ** (q - 1) * float(delta_w.pow(2).sum()) + lipschitz * f_k**q
        self._bsum.add_(update.buffers)
        self._wsum += 1.0

    def end_round(self, run: RunState, round_index: int) -> None:
        if self._wsum <= 0:
            return
        run.global_params = run.global_params - self._sum / self._h
        if run.global_buffers.numel():
            run.global_buffers = self._bsum.div_(self._wsum)
