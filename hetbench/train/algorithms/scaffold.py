"""SCAFFOLD (Karimireddy et al. 2020, Algorithm 1, control variates with option II).

Client i starts from the server model x with control variates c (server) and c_i (its own, zero until it
first takes part) and takes K local steps y <- y - eta_l (g_i(y) - c_i + c). Option II then sets
c_i+ = c_i - c + (x - y) / (K eta_l) and reports dy = y - x and dc = c_i+ - c_i. Under plain SGD that
c_i+ is exactly the mean of the K plain gradients g_i(y), which is how it is computed here: with client
momentum (``--momentum``), x - y no longer equals eta_l times the sum of the corrected steps, and the
formula would inflate c_i by up to 1 / (1 - beta); the mean of the gradients is what option II
estimates whatever the local optimiser. The server applies
x <- x + eta_g * mean_S(dy) and c <- c + (1/N) * sum_S(dc) with N the number of clients. The paper
averages client updates uniformly over the sampled set S (not by n_k); that is what this does.

Memory: c_i is state per client by design of the method; it is kept (float32, one vector) only for the
clients that have taken part.

Per-round diagnostics, recorded by the server in ``curves.algorithm`` of the results: ``c_norm``, the L2
norm ||c||_2 of the server control variate after the round's update, and ``c_i_norm_mean``, the mean over
the round's reporting clients of ||c_i+||_2, their control variates after the round. The server never holds
c_i (a client keeps it), so each client sends its norm as a number beside dc.
"""

from __future__ import annotations

import torch

from hetbench.train.algorithms.base import Algorithm, ClientUpdate, RunState, StackedUpdates
from hetbench.train.algorithms.hyper import Hyper
from hetbench.train.local import local_sgd
from hetbench.train.local_plan import LocalPlan, StackedResult


class Scaffold(Algorithm):
    """SCAFFOLD: local steps corrected by control variates, ``y <- y - eta_l (g_i(y) - c_i + c)``.

    After K local steps client i sets ``c_i+ = c_i - c + (x - y) / (K eta_l)`` (option II) and reports
    ``dy = y - x`` and ``dc = c_i+ - c_i``; the server applies ``x <- x + eta_g mean_S(dy)`` and
    ``c <- c + (1/N) sum_S(dc)``. Updates are averaged uniformly over the sampled clients S.

    Parameters
    ----------
    server_lr : float, default 1.0
        Global step size eta_g.

    The local step eta_l is ``--lr``, by default 0.02 for SCAFFOLD (0.05 for the other algorithms): the
    paper tunes eta_l per algorithm, and at 0.05 the control variates grow round over round on strongly
    label-skewed splits (``builtin:mnist5k``, Dirichlet alpha 0.05 over 20 clients: the largest |c| went
    from 1.9 to 27 in 17 rounds, then the loss became NaN), while at 0.02 it learns
    (tests/train/test_default_hyperparameters.py).

    References
    ----------
    .. [1] S. P. Karimireddy, S. Kale, M. Mohri, S. J. Reddi, S. U. Stich and A. T. Suresh, "SCAFFOLD:
       stochastic controlled averaging for federated learning", ICML 2020, Algorithm 1 with control variates
       by option II.

    Examples
    --------
    >>> import torch
    >>> from types import SimpleNamespace
    >>> from hetbench.train.algorithms import make_algorithm
    >>> scaffold = make_algorithm("scaffold")
    >>> scaffold.params
    {'server_lr': 1.0}
    >>> scaffold.setup(SimpleNamespace(global_params=torch.ones(3)))
    >>> scaffold.c, scaffold.c_i  # the server control variate starts at 0; clients get theirs on first use
    (tensor([0., 0., 0.]), {})
    """

    name = "scaffold"
    citation = "Karimireddy et al. 2020, SCAFFOLD: stochastic controlled averaging for federated learning"
    hyper = {"server_lr": Hyper(1.0, "SCAFFOLD global step size eta_g.", "Karimireddy et al. 2020, Algorithm 1",
                                low=0.0, low_open=True)}
    server_to_client = ("c",)
    client_state = ("c_i",)
    default_lr = 0.02  # see the class docstring: 0.05 (the others' default) diverges on strongly skewed splits
    rebuilt = (*Algorithm.rebuilt, "_dc", "_ci_norms")  # c and every c_i go into checkpoints (Algorithm.state_dict)

    def setup(self, run: RunState) -> None:
        self.c = torch.zeros_like(run.global_params)
        self.c_i: dict[int, torch.Tensor] = {}

    def client_update(self, run: RunState, round_index: int, client: int) -> ClientUpdate:
        cfg = run.config
        ws = run.ws
        ws.flat.load(run.global_params, run.global_buffers)
        c_i = self.c_i.get(client)
        correction = self.c - c_i if c_i is not None else self.c  # (c - c_i)
        batches = self.batches(run, round_index, client)
        gradients = torch.zeros_like(self.c)  # the sum of the plain gradients g_i(y) of the K steps

        def corrected(g: torch.Tensor) -> torch.Tensor:
            gradients.add_(g)
            return g.add_(correction)

        result = local_sgd(ws, batches, cfg.lr, cfg.momentum, cfg.weight_decay, grad_hook=corrected)
        update = self.make_update(run, client, result)
        old = c_i if c_i is not None else torch.zeros_like(self.c)
        # option II: c_i+ = c_i - c + (x - y) / (K eta_l). With plain SGD, x - y = eta_l sum_k (g_k - c_i + c),
        # so c_i+ is the mean of the plain gradients g_k; taken from them directly, it stays that mean when
        # client momentum makes x - y up to 1 / (1 - beta) times larger (which inflated c_i tenfold at 0.9)
        new = gradients / max(result.steps, 1)
        update.extra["dc"] = new - old
        update.extra["c_i_norm"] = float(torch.linalg.vector_norm(new))  # the server cannot derive it from dc
        self.c_i[client] = new
        update.weight = 1.0  # uniform over the sampled clients (Karimireddy et al. Alg. 1 line 16)
        return update

    stacked = True  # local_plan carries (c - c_i) and asks for the gradient sums that give c_i+

    def local_plan(self, run: RunState, round_index: int, client: int) -> LocalPlan:
        c_i = self.c_i.get(client)
        return LocalPlan(self.batches(run, round_index, client), grad_offset=self.c - c_i if c_i is not None else self.c,
                         sum_gradients=True)

    def stacked_updates(self, run: RunState, round_index: int, clients: list[int], plans: list[LocalPlan],
                        out: StackedResult) -> StackedUpdates:
        """:meth:`client_update`'s option II for a stacked chunk: ``c_i+`` is each row of gradient sums over its
        steps; ``dc`` and the norms as rows, ``c_i+`` kept per client (a copy: not a view of the chunk)."""
        new = out.grad_sums / torch.tensor(out.steps, dtype=out.grad_sums.dtype,
                                           device=out.grad_sums.device).clamp(min=1).unsqueeze(1)
        old = torch.stack([self.c_i.get(k, torch.zeros_like(self.c)) for k in clients])
        dc = new - old
        norms = torch.linalg.vector_norm(new, dim=1).tolist()
        for j, k in enumerate(clients):
            self.c_i[k] = new[j].clone()
        return StackedUpdates(clients, out.params, out.buffers, [1.0] * len(clients), out.mean_loss, out.steps,
                              out.num_samples, extras=[{"dc": dc[j], "c_i_norm": norms[j]} for j in range(len(clients))])

    def begin_round(self, run: RunState, round_index: int) -> None:
        super().begin_round(run, round_index)
        self._dc = torch.zeros_like(run.global_params)
        self._ci_norms: list[float] = []

    def accumulate(self, run: RunState, round_index: int, update: ClientUpdate) -> None:
        super().accumulate(run, round_index, update)
        self._dc.add_(update.extra.pop("dc"))
        self._ci_norms.append(float(update.extra.pop("c_i_norm")))

    def end_round(self, run: RunState, round_index: int) -> None:
        super().end_round(run, round_index)
        self.c.add_(self._dc, alpha=1.0 / run.data.num_clients)
        run.record("c_norm", significant(float(torch.linalg.vector_norm(self.c))))
        norms = self._ci_norms
        run.record("c_i_norm_mean", significant(sum(norms) / len(norms)) if norms else None)


def significant(x: float, digits: int = 6) -> float:
    """``x`` to ``digits`` significant digits (a diagnostic's value in the results).

    Examples
    --------
    >>> significant(123.456789), significant(0.000123456789)
    (123.457, 0.000123457)
    """
    return float(f"{x:.{digits}g}")
