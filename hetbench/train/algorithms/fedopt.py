"""FedAdagrad, FedAdam and FedYogi: adaptive server optimisers (Reddi et al., ICLR 2021, Algorithm 2).

Clients run FedAvg's local SGD. The server treats the averaged model change as a pseudo-gradient and takes
an adaptive step (Algorithm 2, with Delta_i = x_i - x_t the change of client i's model over its local
steps)::

    Delta_t = sum_i n_i Delta_i / sum_i n_i                    (the reporting clients)
    m_t     = beta1 m_{t-1} + (1 - beta1) Delta_t
    v_t     = v_{t-1} + Delta_t^2                               (FedAdagrad)
    v_t     = v_{t-1} - (1 - beta2) Delta_t^2 sign(v_{t-1} - Delta_t^2)   (FedYogi)
    v_t     = beta2 v_{t-1} + (1 - beta2) Delta_t^2             (FedAdam)
    x_{t+1} = x_t + eta m_t / (sqrt(v_t) + tau)

element-wise, with m_{-1} = 0 and v_{-1} = tau^2 (Algorithm 2 asks for v_{-1} >= tau^2; the smallest value
it allows adds the least to the first steps). Differences from the paper and from Flower:

* the paper averages the Delta_i uniformly over the sampled clients; hetbench weights them by n_i, as its
  FedAvg does (the base class accumulates n_i (x_t - x_i), minus Delta, which is why ``apply_server_update``
  negates it);
* Flower's ``FedAdam`` multiplies eta by Adam's bias correction sqrt(1 - beta2^t) / (1 - beta1^t) and all
  three start from v = 0; Algorithm 2 has neither, and neither has this module;
* Flower's ``FedAdagrad`` fixes beta1 = 0 (no momentum); Algorithm 2 keeps m_t for all three and so does
  this module (``--beta1 0`` gives Flower's variant).

Defaults: beta1 = 0.9 and beta2 = 0.99 (sec. 5); eta and tau from the paper's tuned values for CIFAR-10
(App. D, eta on the grid 10^-3, 10^-2.5, ..., 10^1): FedAdam eta = 10^-2, tau = 10^-3; FedAdagrad eta = 10^-1,
tau = 10^-2, as Flower's baseline of the paper configures them (``conf/cifar10/strategy/*.yaml`` of
``flwr_baselines/publications/adaptive_federated_optimization``). That baseline has no CIFAR-10 FedYogi;
FedYogi takes FedAdam's values, which are also Flower's ``FedYogi`` defaults (eta 0.01, tau 10^-3). On the
strongly skewed ``builtin:mnist5k`` split of tests/train/test_default_hyperparameters.py the three defaults
reach 81-82% (mean of the last 3 of 20 rounds) where FedAvg reaches 68%.

Floating-point buffers (BatchNorm running statistics) are averaged as FedAvg averages them: they are not
parameters of the optimisation. The server state (m, v) goes into checkpoints (``Algorithm.state_dict``) and
never to the clients. Every round records ``server_step_norm``, the Euclidean norm of
eta m_t / (sqrt(v_t) + tau), in the results' ``log``.
"""

from __future__ import annotations

import abc

import torch

from hetbench.train.algorithms.base import Algorithm, RunState
from hetbench.train.algorithms.hyper import Hyper

_PAPER = "Reddi et al. 2021, Adaptive Federated Optimization"


def _server_lr(default: float, tuned: str) -> Hyper:
    return Hyper(default, "Server learning rate eta of the adaptive step x <- x + eta m / (sqrt(v) + tau).",
                 f"{_PAPER}, Algorithm 2; App. D grid 10^-3..10^1 by half decades, {tuned}", low=0.0, low_open=True)


def _tau(default: float, tuned: str) -> Hyper:
    return Hyper(default, "Adaptivity tau: the step's denominator is sqrt(v) + tau, and v starts at tau^2.",
                 f"{_PAPER}, Algorithm 2 (v_-1 >= tau^2); App. D, {tuned}", low=0.0, low_open=True)


BETA1 = Hyper(0.9, "First-moment decay beta1 of m <- beta1 m + (1 - beta1) Delta (0: no server momentum).",
              f"{_PAPER}, Algorithm 2 and sec. 5 (beta1 = 0.9)", low=0.0, high=1.0, high_open=True)
BETA2 = Hyper(0.99, "Second-moment decay beta2 of FedAdam's and FedYogi's v.",
              f"{_PAPER}, Algorithm 2 and sec. 5 (beta2 = 0.99)", low=0.0, high=1.0, high_open=True)


class FedOpt(Algorithm, abc.ABC):
    """The shared server of Reddi et al.'s Algorithm 2; subclasses say how ``v`` is updated.

    Not an ``--algo`` of its own: :class:`FedAdagrad`, :class:`FedAdam` and :class:`FedYogi` are.
    """

    name = "fedopt"
    citation = _PAPER
    rebuilt = (*Algorithm.rebuilt, "_step_norm")

    def setup(self, run: RunState) -> None:
        self.m = torch.zeros_like(run.global_params)
        self.v = torch.full_like(run.global_params, float(self.params["tau"]) ** 2)

    @abc.abstractmethod
    def second_moment(self, v: torch.Tensor, delta_sq: torch.Tensor) -> None:
        """Update ``v`` in place from ``Delta_t^2`` (Adagrad's, Yogi's or Adam's rule: each subclass's own)."""

    def apply_server_update(self, run: RunState, g_bar: torch.Tensor) -> None:
        p = self.params
        delta = g_bar.neg()  # g_bar = sum n_i (x_t - x_i) / sum n_i = -Delta_t
        beta1 = float(p.get("beta1", 0.0))
        self.m.mul_(beta1).add_(delta, alpha=1.0 - beta1)
        self.second_moment(self.v, delta.square())
        step = self.m / self.v.sqrt().add_(float(p["tau"])) * float(p["server_lr"])
        run.global_params = run.global_params + step
        self._step_norm = float(step.norm())

    def end_round(self, run: RunState, round_index: int) -> None:
        self._step_norm = 0.0  # no client reported: no step
        super().end_round(run, round_index)
        run.record("server_step_norm", self._step_norm)


class FedAdagrad(FedOpt):
    """FedAdagrad: ``v_t = v_{t-1} + Delta_t^2``, ``x <- x + eta m_t / (sqrt(v_t) + tau)``.

    Parameters
    ----------
    server_lr : float, default 0.1
        Server learning rate eta, > 0: Reddi et al.'s tuned value for CIFAR-10 (10^-1, App. D).
    beta1 : float, default 0.9
        Momentum of m_t, in [0, 1) (Algorithm 2; Flower's ``FedAdagrad`` fixes it at 0).
    tau : float, default 0.01
        Adaptivity, > 0: Reddi et al.'s tuned value for CIFAR-10 (10^-2, App. D); v starts at tau^2.

    References
    ----------
    .. [1] S. J. Reddi, Z. Charles, M. Zaheer, Z. Garrett, K. Rush, J. Konecny, S. Kumar and H. B. McMahan,
       "Adaptive federated optimization", ICLR 2021, Algorithm 2 (FedAdagrad) and App. D.

    Examples
    --------
    One round from x = 0 with the averaged change Delta = 0.5 (tau = 0.5, so v_{-1} = 0.25):
    m = 0.1 * 0.5 = 0.05, v = 0.25 + 0.25 = 0.5, x = 0.1 * 0.05 / (sqrt(0.5) + 0.5).

    >>> import torch
    >>> from types import SimpleNamespace
    >>> from hetbench.train.algorithms import ClientUpdate, make_algorithm
    >>> algo = make_algorithm("fedadagrad", tau=0.5)
    >>> algo.params
    {'server_lr': 0.1, 'beta1': 0.9, 'tau': 0.5}
    >>> run = SimpleNamespace(global_params=torch.zeros(1), global_buffers=torch.zeros(0), log={})
    >>> run.record = lambda key, value: run.log.setdefault(key, []).append(value)
    >>> algo.setup(run)
    >>> algo.begin_round(run, 1)
    >>> algo.accumulate(run, 1, ClientUpdate(0, torch.tensor([0.5]), torch.zeros(0), 4.0, 0.0, 1, 4))
    >>> algo.end_round(run, 1)
    >>> round(float(run.global_params), 6), round(0.1 * 0.05 / (0.5 ** 0.5 + 0.5), 6), algo.v
    (0.004142, 0.004142, tensor([0.5000]))
    >>> [round(norm, 6) for norm in run.log["server_step_norm"]]  # the step's norm, recorded every round
    [0.004142]
    """

    name = "fedadagrad"
    citation = f"{_PAPER} (FedAdagrad)"
    hyper = {"server_lr": _server_lr(0.1, "10^-1 for CIFAR-10"), "beta1": BETA1,
             "tau": _tau(0.01, "10^-2 for CIFAR-10")}

    def second_moment(self, v: torch.Tensor, delta_sq: torch.Tensor) -> None:
        v.add_(delta_sq)


class FedAdam(FedOpt):
    """FedAdam: ``v_t = beta2 v_{t-1} + (1 - beta2) Delta_t^2``, ``x <- x + eta m_t / (sqrt(v_t) + tau)``.

    Parameters
    ----------
    server_lr : float, default 0.01
        Server learning rate eta, > 0: Reddi et al.'s tuned value for CIFAR-10 (10^-2, App. D). Flower's
        ``FedAdam`` defaults to 0.1 and applies Adam's bias correction, which Algorithm 2 does not.
    beta1 : float, default 0.9
        Momentum of m_t, in [0, 1) (sec. 5).
    beta2 : float, default 0.99
        Decay of v_t, in [0, 1) (sec. 5).
    tau : float, default 0.001
        Adaptivity, > 0: Reddi et al.'s tuned value for CIFAR-10 (10^-3, App. D; Flower's default too).

    References
    ----------
    .. [1] S. J. Reddi, Z. Charles, M. Zaheer, Z. Garrett, K. Rush, J. Konecny, S. Kumar and H. B. McMahan,
       "Adaptive federated optimization", ICLR 2021, Algorithm 2 (FedAdam) and App. D.

    Examples
    --------
    >>> from hetbench.train.algorithms import make_algorithm
    >>> make_algorithm("fedadam").params
    {'server_lr': 0.01, 'beta1': 0.9, 'beta2': 0.99, 'tau': 0.001}
    >>> make_algorithm("fedadam", beta2=1.0)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: beta2 must be in [0, 1) (got 1.0)
    """

    name = "fedadam"
    citation = f"{_PAPER} (FedAdam)"
    hyper = {"server_lr": _server_lr(0.01, "10^-2 for CIFAR-10"), "beta1": BETA1, "beta2": BETA2,
             "tau": _tau(0.001, "10^-3 for CIFAR-10")}

    def second_moment(self, v: torch.Tensor, delta_sq: torch.Tensor) -> None:
        beta2 = float(self.params["beta2"])
        v.mul_(beta2).add_(delta_sq, alpha=1.0 - beta2)


class FedYogi(FedOpt):
    """FedYogi: ``v_t = v_{t-1} - (1 - beta2) Delta_t^2 sign(v_{t-1} - Delta_t^2)``, then FedAdam's step.

    Yogi's v moves towards ``Delta_t^2`` by an additive ``(1 - beta2) Delta_t^2`` instead of Adam's
    multiplicative decay, so a large v forgets more slowly.

    Parameters
    ----------
    server_lr : float, default 0.01
        Server learning rate eta, > 0: FedAdam's tuned value for CIFAR-10 (10^-2, App. D), which is also
        Flower's ``FedYogi`` default.
    beta1 : float, default 0.9
        Momentum of m_t, in [0, 1) (sec. 5).
    beta2 : float, default 0.99
        Rate of v_t, in [0, 1) (sec. 5).
    tau : float, default 0.001
        Adaptivity, > 0: FedAdam's tuned value for CIFAR-10 (10^-3, App. D; Flower's ``FedYogi`` default).

    References
    ----------
    .. [1] S. J. Reddi, Z. Charles, M. Zaheer, Z. Garrett, K. Rush, J. Konecny, S. Kumar and H. B. McMahan,
       "Adaptive federated optimization", ICLR 2021, Algorithm 2 (FedYogi) and App. D.
    .. [2] M. Zaheer, S. J. Reddi, D. Sachan, S. Kale and S. Kumar, "Adaptive methods for nonconvex
       optimization", NeurIPS 2018 (Yogi).

    Examples
    --------
    v grows where Delta^2 exceeds it and shrinks where it does not:

    >>> import torch
    >>> from hetbench.train.algorithms import make_algorithm
    >>> yogi = make_algorithm("fedyogi", beta2=0.5)
    >>> v = torch.tensor([1.0, 1.0])
    >>> yogi.second_moment(v, torch.tensor([4.0, 0.25]))
    >>> v  # 1 + 0.5 * 4, 1 - 0.5 * 0.25
    tensor([3.0000, 0.8750])
    """

    name = "fedyogi"
    citation = f"{_PAPER} (FedYogi)"
    hyper = {"server_lr": _server_lr(0.01, "FedAdam's 10^-2 for CIFAR-10 (Flower's FedYogi default)"),
             "beta1": BETA1, "beta2": BETA2,
             "tau": _tau(0.001, "FedAdam's 10^-3 for CIFAR-10 (Flower's FedYogi default)")}

    def second_moment(self, v: torch.Tensor, delta_sq: torch.Tensor) -> None:
        beta2 = float(self.params["beta2"])
        v.sub_(delta_sq * torch.sign(v - delta_sq), alpha=1.0 - beta2)


__all__ = ["FedAdagrad", "FedAdam", "FedOpt", "FedYogi"]
