"""The shape every FL algorithm shares (Hsu et al. 2020, Algorithm 1: SelectClients, ClientUpdate,
AggregateClient) and the FedAvg server that most of them keep.

An algorithm sees the run through :class:`RunState`: the shared workspace (data tensors, the one working
model bound to a flat vector), the configuration and the global model as flat vectors. Aggregation is
streaming: ``accumulate`` folds one client's update into running sums, so a round holds one client model
at a time whatever the number of clients per round.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from hetbench.errors import HetbenchError
from hetbench.seeding import check_seed
from hetbench.train.algorithms.hyper import Hyper
from hetbench.train.local import LocalResult, Workspace, epoch_batches, local_sgd
from hetbench.train.sampling import select_uniform


#: Sides ``--image-size`` may take: the decode cache holds every image at this size, so 1024 pixels
#: already means 3 MiB per RGB image on disk.
IMAGE_SIZE_RANGE = (8, 1024)


#: the client learning rate of every algorithm that names no ``default_lr`` of its own
DEFAULT_LR = 0.05
#: the normalisation layers of every algorithm that names no ``default_norm`` of its own (Hsu et al. 2020:
#: GroupNorm, which federated averaging handles better than BatchNorm's running statistics)
DEFAULT_NORM = "group"


@dataclass
class TrainConfig:
    """Options shared by every algorithm (the ``hetbench train`` flags, one field each).

    Parameters
    ----------
    rounds : int
        Communication rounds (``--rounds``; default 20).
    clients_per_round : int
        Clients sampled each round, uniformly without replacement (``--clients-per-round``; 10).
    local_epochs : int or None
        Passes over its training rows each sampled client makes per round (``--local-epochs``); None takes
        the algorithm's ``default_local_epochs``, else 1 (DapperFL: 5, its Table 4).
    batch_size : int
        Client mini-batch size (``--batch-size``; 32).
    lr : float or None
        Client learning rate (``--lr``); None takes the algorithm's ``default_lr``, else :data:`DEFAULT_LR`
        (:meth:`for_algorithm`).
    momentum, weight_decay : float
        Client SGD momentum and L2 weight decay (``--momentum``, ``--weight-decay``; 0).
    model : str
        ``auto`` (:func:`hetbench.train.models.default_model` of the image size) or a model name (``--model``).
    norm : str or None
        Normalisation layers of the models that have them: ``group``, ``batch`` or ``none`` (``--norm``);
        None takes the algorithm's ``default_norm``, else ``group`` (FedBN: ``batch``, as in its paper).
    seed : int
        Seed of the model initialisation, client sampling and batches (``--seed``).
    eval_every, eval_from : int
        Evaluate every ``eval_every`` rounds from round ``eval_from`` on, and always after the last round.
    image_size : int or None
        Side the images are resized to (``--image-size``; None: the split's own size).
    target_accuracy : float or None
        Accuracy (%) whose first round is reported as "rounds to target" (``--target-accuracy``).
    group_by : str or None
        The test-group column (``--group-by``; None: ``device``, ``domain``, ``s2_cell`` or ``user_id`` when
        the split has one, else per client).
    workers : int or None
        Parallel client workers (``--workers``; None: one per core available, at most the clients per round).
    client_exec : str
        ``auto``, ``sequential`` or ``lockstep`` (``--client-exec``; :mod:`hetbench.train.lockstep`).
    threads : int or None
        Intra-op threads of a serial run (central, dropout models; ``--threads``; None: 1 on a CPU).
    device : str
        ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps`` (``--device``).
    amp : bool
        bf16 autocast on CUDA (``--amp``).
    cache_dir : str or None
        Where decoded images are cached (None: ``HETBENCH_CACHE``, else ``~/.cache/hetbench/train``).
    checkpoint_every : int or None
        Rounds between checkpoints (``--checkpoint-every``; None: none).
    last_k : int
        Evaluations averaged by the "mean of the last k" statistics (``--last-k``; 3).
    train_groups, test_groups : tuple of str or None
        Train only the clients of these test groups; evaluate only these groups (None: all;
        :mod:`hetbench.train.groups`).

    The :data:`RUNTIME_OPTIONS` change how a run executes, not what it computes: results leave them out.

    Examples
    --------
    >>> from hetbench.train.algorithms import TrainConfig
    >>> config = TrainConfig(rounds=5, lr=0.1)
    >>> config.rounds, config.clients_per_round, "workers" in config.result_options()
    (5, 10, False)
    """

    rounds: int = 20
    clients_per_round: int = 10
    local_epochs: int | None = None  # None: the algorithm's default_local_epochs, else 1
    batch_size: int = 32
    lr: float | None = None  # client learning rate (None: the algorithm's default_lr, else DEFAULT_LR)
    momentum: float = 0.0
    weight_decay: float = 0.0
    model: str = "auto"
    norm: str | None = None  # None: the algorithm's default_norm, else group
    seed: int = 0
    eval_every: int = 1
    eval_from: int = 1  # the first round evaluated (then every eval_every rounds, and always the last)
    image_size: int | None = None
    target_accuracy: float | None = None
    group_by: str | None = None
    workers: int | None = None  # parallel client threads (None: one per core, at most clients per round)
    client_exec: str = "auto"  # auto | sequential | lockstep (hetbench.train.lockstep.choose_client_exec)
    threads: int | None = None  # intra-op threads of a serial run (central, dropout; None: 1 on a CPU)
    device: str = "auto"  # auto | cpu | cuda | cuda:N | mps (hetbench.train.device.resolve_device)
    amp: bool = False  # bf16 autocast on CUDA
    cache_dir: str | None = None  # where decoded images are cached (None: HETBENCH_CACHE, else ~/.cache/hetbench/train)
    checkpoint_every: int | None = None  # rounds between checkpoints (None: no checkpoints)
    last_k: int = 3  # evaluations averaged by the "mean of the last k" statistics
    train_groups: tuple[str, ...] | None = None  # train only on clients of these test groups (None: all clients)
    test_groups: tuple[str, ...] | None = None  # evaluate only these test groups (None: all)

    #: options that change how a run is executed but not what it computes; results leave them out
    RUNTIME_OPTIONS: ClassVar[tuple[str, ...]] = ("workers", "device", "cache_dir", "checkpoint_every", "client_exec",
                                                  "threads")

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def for_algorithm(self, algorithm: "Algorithm | type[Algorithm]") -> "TrainConfig":
        """These options with :attr:`lr` and :attr:`local_epochs` resolved: the given one, else the
        algorithm's ``default_lr`` / ``default_local_epochs``, else :data:`DEFAULT_LR` / 1.

        Examples
        --------
        >>> from hetbench.train.algorithms import ALGORITHMS
        >>> TrainConfig().for_algorithm(ALGORITHMS["fedavg"]).lr, TrainConfig().for_algorithm(ALGORITHMS["scaffold"]).lr
        (0.05, 0.02)
        >>> TrainConfig(lr=0.1).for_algorithm(ALGORITHMS["scaffold"]).lr
        0.1
        >>> TrainConfig().for_algorithm(ALGORITHMS["dapperfl"]).local_epochs, TrainConfig().for_algorithm(ALGORITHMS["fedavg"]).local_epochs
        (5, 1)
        """
        if self.lr is not None and self.local_epochs is not None and self.norm is not None:
            return self
        lr = self.lr if self.lr is not None else getattr(algorithm, "default_lr", None) or DEFAULT_LR
        epochs = (self.local_epochs if self.local_epochs is not None
                  else getattr(algorithm, "default_local_epochs", None) or 1)
        norm = self.norm if self.norm is not None else getattr(algorithm, "default_norm", None) or DEFAULT_NORM
        return dataclasses.replace(self, lr=lr, local_epochs=epochs, norm=norm)

    def model_for(self, image_size: int) -> str:
        """The model name: :attr:`model`, or the default for ``image_size`` when it is ``auto``."""
        from hetbench.train.models import default_model

        return default_model(image_size) if self.model in (None, "", "auto") else self.model

    def result_options(self) -> dict[str, Any]:
        """The options a results document records: all but :attr:`RUNTIME_OPTIONS`."""
        return {k: v for k, v in self.__dict__.items() if k not in self.RUNTIME_OPTIONS}

    def check(self) -> "TrainConfig":
        """Refuse options no run can use (messages name the CLI flag); returns self."""
        from hetbench.train.models import MODEL_NAMES

        if self.model not in ("auto", *MODEL_NAMES):
            raise HetbenchError(f"unknown model '{self.model}'; choose from auto, {', '.join(MODEL_NAMES)}")
        positive = ("rounds", "clients_per_round", "local_epochs", "batch_size", "lr", "eval_every", "eval_from",
                    "image_size",
                    "workers", "checkpoint_every", "last_k", "threads")
        for key in positive:
            v = getattr(self, key)
            if v is not None and not (math.isfinite(v) and v > 0):
                raise HetbenchError(f"--{key.replace('_', '-')} must be a positive number (got {v})")
        for key in ("momentum", "weight_decay", "target_accuracy"):
            v = getattr(self, key)
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise HetbenchError(f"--{key.replace('_', '-')} must be a non-negative number (got {v})")
        if self.image_size is not None and not (int(self.image_size) == self.image_size
                                                and IMAGE_SIZE_RANGE[0] <= self.image_size <= IMAGE_SIZE_RANGE[1]):
            raise HetbenchError(
                f"--image-size must be an integer between {IMAGE_SIZE_RANGE[0]} and {IMAGE_SIZE_RANGE[1]} pixels "
                f"(got {self.image_size})"
            )
        if self.eval_from > self.rounds:
            raise HetbenchError(f"--eval-from must be at most --rounds ({self.rounds}; got {self.eval_from}): no "
                                "round would be evaluated")
        if self.client_exec not in ("auto", "sequential", "lockstep"):
            raise HetbenchError(f"--client-exec must be auto, sequential or lockstep (got {self.client_exec!r})")
        check_seed(self.seed)
        return self


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
    #: the client learning rate when ``--lr`` is not given (None: :data:`DEFAULT_LR`)
    default_lr: ClassVar[float | None] = None
    #: the local epochs when ``--local-epochs`` is not given (None: 1)
    default_local_epochs: ClassVar[int | None] = None
    #: the models' normalisation layers when ``--norm`` is not given (None: :data:`DEFAULT_NORM`)
    default_norm: ClassVar[str | None] = None
    #: attributes that ``setup`` or ``begin_round`` rebuild, so a checkpoint leaves them out (the round's
    #: running sums, structure derived from the data or the model)
    rebuilt: ClassVar[tuple[str, ...]] = ("_sum", "_bsum", "_wsum")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.defaults = {key: h.default for key, h in cls.hyper.items()}

    def __init__(self, **params: Any) -> None:
        given = {k: v for k, v in params.items() if v is not None}
        unknown = sorted(set(given) - set(self.hyper))
        if unknown:
            raise HetbenchError(f"{self.name} takes no option {Hyper.flag(unknown[0])}"
                                + (f" (options: {', '.join(Hyper.flag(k) for k in self.hyper)})" if self.hyper
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

    def make_update(self, run: RunState, client: int, result: LocalResult, **extra: Any) -> ClientUpdate:
        flat = run.ws.flat
        return ClientUpdate(
            client=client,
            params=flat.params.clone(),
            buffers=flat.buffers.clone(),
            weight=float(run.data.client_rows[client].size),
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
