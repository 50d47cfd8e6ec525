"""The shape every FL algorithm shares (Hsu et al. 2020, Algorithm 1: SelectClients, ClientUpdate,
AggregateClient) and the FedAvg server that most of them keep.

An algorithm sees the run through :class:`RunState`: the shared workspace (data tensors, the one working
model bound to a flat vector), the configuration and the global model as flat vectors. Aggregation is
streaming: ``accumulate`` folds one client's update into running sums, so a round holds one client model
at a time whatever the number of clients per round.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from hetbench.errors import HetbenchError
from hetbench.train.algorithms.hyper import Hyper
from hetbench.train.local import LocalResult, Workspace, epoch_batches, local_sgd
from hetbench.train.local_plan import LocalPlan, StackedResult
from hetbench.train.algorithms.config import TrainConfig
from hetbench.train.sampling import select_uniform


class RunState:
    """The state of one simulated run that algorithms read and update.

    ``ws`` is the workspace of the calling thread: clients of a round may train in parallel threads,
    each on its own copy of the working model; the server side (select, accumulate, end_round) runs on
    the main thread with the main workspace.
    """

    def __init__(self, ws: Workspace, config: TrainConfig, global_params: torch.Tensor,
                 global_buffers: torch.Tensor) -> None:
        self.main_ws = ws
        self.config = config
        self.global_params = global_params
        self.global_buffers = global_buffers
        self.round = 0
        self.log: dict[str, list] = {}  # per-round algorithm diagnostics
        self._local = threading.local()

    @property
    def ws(self) -> Workspace:
        return getattr(self._local, "ws", None) or self.main_ws

    def bind(self, ws: Workspace | None) -> None:
        """Make ``ws`` the workspace of the calling thread (None: back to the main one)."""
        self._local.ws = ws

    @property
    def data(self):
        return self.ws.data

    def rng(self, round_index: int, client: int, stream: int) -> np.random.Generator:
        """Generator of (round, client, stream): independent of client order and of other algorithms.

        A client drawn more than once in a round (FedVC) gets independent streams for each further update:
        the calling thread's workspace says which draw it trains (``ws.draw``)."""
        key = [int(self.config.seed), int(round_index), int(stream), int(client)]
        draw = int(getattr(self.ws, "draw", 0))
        return np.random.default_rng(key + [draw] if draw else key)

    def record(self, key: str, value: Any) -> None:
        self.log.setdefault(key, []).append(value)


def portable(value: Any) -> bool:
    """Whether ``value`` can go into a checkpoint: a tensor, a numeric or boolean numpy array or scalar, a
    number, string, bool or None, or a list, tuple or dict (keys: numbers, strings, bools, None) of those.

    Examples
    --------
    >>> import numpy as np, torch
    >>> portable({1: torch.zeros(2), 0.2: [np.arange(3), None, "x"]}), portable([object()])
    (True, False)
    """
    if value is None or isinstance(value, (bool, int, float, str, torch.Tensor)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "biuf"
    if isinstance(value, np.generic):
        return value.dtype.kind in "biuf"
    if isinstance(value, (list, tuple)):
        return all(portable(v) for v in value)
    if isinstance(value, dict):
        return all((k is None or isinstance(k, (bool, int, float, str))) and portable(v) for k, v in value.items())
    return False


@dataclass
class ClientUpdate:
    client: int
    params: torch.Tensor
    buffers: torch.Tensor
    weight: float  # aggregation weight, n_k unless the algorithm says otherwise
    loss: float  # mean training loss over the local steps
    steps: int
    num_samples: int
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class StackedUpdates:
    """The updates of a chunk of clients trained as one stacked computation (:mod:`hetbench.train.stacked`),
    as rows: what :meth:`Algorithm.accumulate_stacked` folds into the round at once. ``split`` gives each
    client's :class:`ClientUpdate` (views of the rows) for code that takes one update at a time."""

    clients: list[int]
    params: torch.Tensor  # (C, size)
    buffers: torch.Tensor  # (C, buffer size)
    weights: list[float]
    losses: list[float]
    steps: list[int]
    num_samples: list[int]
    #: each client's :attr:`ClientUpdate.extra` (None: none has any)
    extras: list[dict[str, Any]] | None = None

    def split(self) -> list[ClientUpdate]:
        return [ClientUpdate(client=k, params=self.params[j], buffers=self.buffers[j], weight=self.weights[j],
                             loss=self.losses[j], steps=self.steps[j], num_samples=self.num_samples[j],
                             extra=dict(self.extras[j]) if self.extras else {})
                for j, k in enumerate(self.clients)]


class Algorithm:
    """Base class: FedAvg's client selection, local SGD and size-weighted averaging (McMahan et al. 2017).

    Subclasses override the parts their paper changes and declare, in their own module, everything an
    engine needs to run them anywhere:

    * ``hyper``: the hyper-parameters (:class:`~hetbench.train.algorithms.hyper.Hyper`: default, the paper's
      source for it, the range its equation allows); ``defaults`` is derived from it and ``params`` holds
      the values in force for this run;
    * ``server_to_client``: attributes of the server's state that a client update reads; an engine that
      runs clients elsewhere (Flower) sends them with every train message;
    * ``client_state``: attributes holding per-client state, ``{client: value}`` dicts that a client keeps
      between the rounds it takes part in (SCAFFOLD's ``c_i``); an engine that runs clients elsewhere keeps
      each client's entry with that client and never on the server.

    Everything else a client sends back travels in :class:`ClientUpdate` (``extra`` included), and every
    other attribute a client update uses is derived from the data or the model by :meth:`setup`.
    """

    name: ClassVar[str] = "base"
    citation: ClassVar[str] = ""
    hyper: ClassVar[dict[str, Hyper]] = {}
    #: ``{name: default}`` of :attr:`hyper` (set for every subclass)
    defaults: ClassVar[dict[str, Any]] = {}
    #: server state a client update reads (sent with every train message by engines that need it)
    server_to_client: ClassVar[tuple[str, ...]] = ()
    #: per-client state, ``{client: value}`` attributes each client keeps between its rounds
    client_state: ClassVar[tuple[str, ...]] = ()
    #: whether the client updates can train in lockstep (:mod:`hetbench.train.lockstep`): every algorithm
    #: whose client update is gradient steps through :func:`~hetbench.train.local.local_sgd` can, with no code
    #: of its own; ``lockstep_refusal`` says why one cannot
    lockstep: ClassVar[bool] = True
    lockstep_refusal: ClassVar[str | None] = None
    #: whether the client update is :meth:`local_plan` trained by plain local SGD and made into an update by
    #: :meth:`make_update`: a lockstep round then trains its clients as one stacked computation
    #: (:mod:`hetbench.train.stacked`), with no thread per client. A subclass that overrides ``client_update``,
    #: ``train_locally`` or ``make_update`` is not, unless it says so again (and its ``local_plan`` describes
    #: what its override does: FedProx)
    stacked: ClassVar[bool] = True
    #: the client learning rate when ``--lr`` is not given (None: :data:`~hetbench.train.algorithms.config.DEFAULT_LR`)
    default_lr: ClassVar[float | None] = None
    #: the local epochs when ``--local-epochs`` is not given (None: 1)
    default_local_epochs: ClassVar[int | None] = None
    #: the models' normalisation layers when ``--norm`` is not given (None: :data:`~hetbench.train.algorithms.config.DEFAULT_NORM`)
    default_norm: ClassVar[str | None] = None
    #: attributes that ``setup`` or ``begin_round`` rebuild, so a checkpoint leaves them out (the round's
    #: running sums, structure derived from the data or the model)
    rebuilt: ClassVar[tuple[str, ...]] = ("_sum", "_bsum", "_wsum")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.defaults = {key: h.default for key, h in cls.hyper.items()}
        if "stacked" not in vars(cls) and any(k in vars(cls) for k in ("client_update", "train_locally", "make_update")):
            cls.stacked = False

    def __init__(self, **params: Any) -> None:
        given = {k: v for k, v in params.items() if v is not None}
        unknown = sorted(set(given) - set(self.hyper))
        if unknown:
            raise HetbenchError(f"{self.name} takes no option `{unknown[0]}`"
                                + (f" (options: {', '.join(f'`{k}`' for k in self.hyper)})" if self.hyper
                                   else " (it has no hyper-parameters)"))
        self.params: dict[str, Any] = {**self.defaults,
                                       **{k: self.hyper[k].check(k, v) for k, v in given.items()}}

    @classmethod
    def check_model(cls, model_name: str, norm: str) -> None:
        """Refuse (HetbenchError, one line) a model this algorithm cannot run on, before anything is read or
        written; ``model_name`` is resolved (not ``auto``). Every model by default."""

    # -- lifecycle ----------------------------------------------------------------------------------
    def setup(self, run: RunState) -> None:
        """Called once before round 1 (and before :meth:`load_state_dict` when a run resumes)."""

    def state_dict(self) -> dict[str, Any]:
        """What the algorithm carries from one round to the next, for a checkpoint.

        Every instance attribute but ``params`` (the hyper-parameters, which identify the run) and
        :attr:`rebuilt` whose value is :func:`portable`: server state (SCAFFOLD's ``c``, FedAvgM's
        velocity), per-client state (SCAFFOLD's ``c_i``), counters, running averages. Attributes holding
        other objects (DapperFL's prune groups) are structure ``setup`` derives from the model again; they
        are not saved. Values are the live objects, not copies.

        Examples
        --------
        >>> import torch
        >>> from types import SimpleNamespace
        >>> from hetbench.train.algorithms import make_algorithm
        >>> scaffold = make_algorithm("scaffold")
        >>> scaffold.setup(SimpleNamespace(global_params=torch.ones(2)))
        >>> scaffold.c_i[3] = torch.tensor([0.5, -0.5])
        >>> state = scaffold.state_dict()
        >>> sorted(state), state["c_i"]
        (['c', 'c_i'], {3: tensor([ 0.5000, -0.5000])})
        >>> fresh = make_algorithm("scaffold")
        >>> fresh.load_state_dict(state)
        >>> fresh.c_i[3].tolist()
        [0.5, -0.5]
        """
        return {k: v for k, v in vars(self).items() if k != "params" and k not in self.rebuilt and portable(v)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (after ``setup``, which rebuilds the rest)."""
        for key, value in state.items():
            setattr(self, key, value)

    def select(self, run: RunState, round_index: int) -> np.ndarray:
        """Clients of this round: uniform without replacement (Hsu et al. 2020, Alg. 1)."""
        return select_uniform(run.config.seed, round_index, run.data.num_clients, run.config.clients_per_round)

    def batches(self, run: RunState, round_index: int, client: int) -> list[np.ndarray]:
        """E shuffled epochs over the client's rows in mini-batches of B."""
        rows = run.data.client_rows[client]
        return epoch_batches(rows, run.config.batch_size, run.config.local_epochs, run.rng(round_index, client, 1))

    def client_update(self, run: RunState, round_index: int, client: int) -> ClientUpdate:
        """Load the global model, train locally, return the local model (ClientUpdate in Alg. 1)."""
        ws = run.ws
        ws.flat.load(run.global_params, run.global_buffers)
        result = self.train_locally(run, round_index, client, self.batches(run, round_index, client))
        return self.make_update(run, client, result)

    def train_locally(self, run: RunState, round_index: int, client: int, batches: list[np.ndarray]) -> LocalResult:
        c = run.config
        return local_sgd(run.ws, batches, c.lr, c.momentum, c.weight_decay)

    def local_plan(self, run: RunState, round_index: int, client: int) -> LocalPlan:
        """This client's local training as data (:class:`~hetbench.train.stacked.LocalPlan`: its batches and
        gradient terms), for algorithms whose ``stacked`` is True: what :meth:`client_update` does, trained for
        a round's clients together."""
        return LocalPlan(self.batches(run, round_index, client))

    def adjust_plan(self, run: RunState, round_index: int, client: int, plan: LocalPlan, initial_loss: float) -> LocalPlan:
        """The plan once the client's loss at the global model is known (plans with ``loss_rows``; the chunk's
        losses come from one pass): HeteroSwitch's switch 1 turns on its random ISP and weight averaging here.
        The plan as it is by default."""
        return plan

    def train_stacked(self, run: RunState, round_index: int, clients: list[int], plans: list[LocalPlan], engine: Any,
                      initial_loss: list[float] | None = None) -> StackedUpdates:
        """Train a chunk's plans as one stacked computation on ``engine`` (a
        :class:`~hetbench.train.stacked.StackedClients`) and return its updates: one ``engine.train`` from the
        global model, then :meth:`stacked_updates`. An algorithm whose client update trains in stages overrides
        it (DapperFL: fine-tune, fuse and prune, then train on)."""
        c = run.config
        out = engine.train(plans, run.global_params, run.global_buffers, c.lr, c.momentum, c.weight_decay,
                           initial_loss=initial_loss)
        return self.stacked_updates(run, round_index, clients, plans, out)

    def stacked_updates(self, run: RunState, round_index: int, clients: list[int], plans: list[LocalPlan],
                        out: StackedResult) -> StackedUpdates:
        """A stacked chunk's updates from its training (``out``, in the order of ``clients`` and ``plans``): what
        :meth:`make_update` is to one client. An algorithm whose plans ask for more (SCAFFOLD's gradient sums,
        q-FedAvg's initial losses) turns it into its ``extra`` and its client state here."""
        return StackedUpdates(clients, out.params, out.buffers, [self.update_weight(run, k) for k in clients],
                              out.mean_loss, out.steps, out.num_samples)

    def update_weight(self, run: RunState, client: int) -> float:
        """The client's aggregation weight: n_k, its training rows (McMahan et al. 2017, Alg. 1)."""
        return float(run.data.client_rows[client].size)

    def make_update(self, run: RunState, client: int, result: LocalResult, params: torch.Tensor | None = None,
                    buffers: torch.Tensor | None = None, **extra: Any) -> ClientUpdate:
        """The update of ``client`` after ``result``: its model (``params`` and ``buffers``; default: copies of
        the bound workspace's), weight, loss, steps and samples, and ``extra``."""
        flat = run.ws.flat
        return ClientUpdate(
            client=client,
            params=flat.params.clone() if params is None else params,
            buffers=flat.buffers.clone() if buffers is None else buffers,
            weight=self.update_weight(run, client),
            loss=result.mean_loss,
            steps=result.steps,
            num_samples=result.num_samples,
            extra=dict(extra),
        )

    # -- server -------------------------------------------------------------------------------------
    def begin_round(self, run: RunState, round_index: int) -> None:
        self._sum = torch.zeros_like(run.global_params)
        self._bsum = torch.zeros_like(run.global_buffers)
        self._wsum = 0.0

    def accumulate(self, run: RunState, round_index: int, update: ClientUpdate) -> None:
        """Fold ``n_k * (theta_t - theta_k)`` into the running sum (AggregateClient in Alg. 1)."""
        w = update.weight
        self._sum.add_(run.global_params - update.params, alpha=w)
        self._bsum.add_(update.buffers, alpha=w)
        self._wsum += w

    def accumulate_stacked(self, run: RunState, round_index: int, stacked: StackedUpdates) -> None:
        """Fold a stacked chunk's updates into the round: :meth:`accumulate`'s sum as one weighted sum over the
        rows, ``sum_k n_k (theta_t - theta_k) = n @ (theta_t - Theta)``, where the algorithm keeps the base's
        ``accumulate``; else each client's update in turn."""
        if type(self).accumulate is not Algorithm.accumulate:
            for update in stacked.split():
                self.accumulate(run, round_index, update)
            return
        w = torch.tensor(stacked.weights, dtype=self._sum.dtype, device=stacked.params.device)
        self._sum.add_(w @ (run.global_params - stacked.params))
        if stacked.buffers.numel():
            self._bsum.add_(w @ stacked.buffers)
        for weight in stacked.weights:  # as accumulate adds them, one by one
            self._wsum += weight

    def end_round(self, run: RunState, round_index: int) -> None:
        """theta_{t+1} = theta_t - server_lr * g_bar, g_bar = sum_k n_k/n (theta_t - theta_k)."""
        if self._wsum <= 0:
            return
        g_bar = self._sum.div_(self._wsum)
        self.apply_server_update(run, g_bar)
        if run.global_buffers.numel():
            run.global_buffers = self._bsum.div_(self._wsum)

    def evaluate(self, run: RunState, pool: Any) -> tuple[np.ndarray, float]:
        """The global model on every test row: (correct per row, mean cross-entropy).

        ``pool`` is the run's :class:`~hetbench.train.client_pool.ClientPool`, whose ``predict`` evaluates
        ``run.global_params`` in parallel. Algorithms whose clients keep part of the model (FedBN) override
        this to evaluate each client's rows with its own model.
        """
        return pool.predict()

    def apply_server_update(self, run: RunState, g_bar: torch.Tensor) -> None:
        run.global_params = run.global_params - float(self.params.get("server_lr", 1.0)) * g_bar
