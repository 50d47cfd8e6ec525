"""A training run's options (:class:`TrainConfig`, ``hetbench train``'s flags as one checked value) and the
defaults every algorithm shares unless it names its own.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

from hetbench.errors import HetbenchError
from hetbench.seeding import check_seed


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
        ``auto``, ``sequential`` or ``lockstep`` (``--client-exec``; :mod:`hetbench.train.client_exec`).
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
    client_exec: str = "auto"  # auto | sequential | lockstep (hetbench.train.client_exec.choose_client_exec)
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
                raise HetbenchError(f"`{key}` must be a positive number (got {v})")
        for key in ("momentum", "weight_decay", "target_accuracy"):
            v = getattr(self, key)
            if v is not None and not (math.isfinite(v) and v >= 0):
                raise HetbenchError(f"`{key}` must be a non-negative number (got {v})")
        if self.image_size is not None and not (int(self.image_size) == self.image_size
                                                and IMAGE_SIZE_RANGE[0] <= self.image_size <= IMAGE_SIZE_RANGE[1]):
            raise HetbenchError(
                f"`image_size` must be an integer between {IMAGE_SIZE_RANGE[0]} and {IMAGE_SIZE_RANGE[1]} pixels "
                f"(got {self.image_size})"
            )
        if self.eval_from > self.rounds:
            raise HetbenchError(f"`eval_from` must be at most `rounds` ({self.rounds}; got {self.eval_from}): no "
                                "round would be evaluated")
        if self.client_exec not in ("auto", "sequential", "lockstep"):
            raise HetbenchError(f"`client_exec` must be auto, sequential or lockstep (got {self.client_exec!r})")
        check_seed(self.seed)
        return self
