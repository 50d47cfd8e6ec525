"""What one process needs to take part in a run: the options resolved, the model, the workspace, the run
state with the algorithm set up on it, and the pool of client workers.

Every side of every engine builds it the same way, so they hold the same model and the same algorithm
state: the round loop (:func:`hetbench.train.simulation.run_training`) for the local engine and for
Flower's ServerApp, and each Flower ClientApp for the clients it serves.

Randomness: the initial model comes from ``torch.manual_seed(seed)``; the pool's extra worker models are
built right after it, so a resumed run draws from torch's generator exactly as a fresh one did.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from hetbench.train.algorithms import Algorithm, RunState, TrainConfig
from hetbench.train.client_pool import ClientPool
from hetbench.train.data import FederatedData
from hetbench.train.device import resolve_device
from hetbench.train.local import Workspace
from hetbench.train.models import build_model


@dataclass
class TrainingSession:
    """A run's model, run state and client workers in this process.

    Parameters
    ----------
    data : FederatedData
        The run's view of the split.
    algorithm : Algorithm
        Set up on :attr:`run` (``algorithm.setup``).
    config : TrainConfig
        The options, checked, with the learning rate resolved (:meth:`TrainConfig.for_algorithm`).
    model_name : str
        The model (``auto`` resolved by image size).
    model : torch.nn.Module
        The working model of the main workspace.
    run : RunState
        Global model, configuration, per-round log.
    pool : ClientPool
        The client workers and the evaluation.

    Examples
    --------
    >>> from hetbench.train.algorithms import TrainConfig, make_algorithm
    >>> from hetbench.train.data import load_federated
    >>> from hetbench.sweep import default_split
    >>> session = TrainingSession.start(load_federated(default_split(quiet=True), quiet=True),
    ...                                 make_algorithm("fedavg"), TrainConfig(workers=1))
    >>> session.model_name, session.config.lr, session.run.global_params.numel() > 0
    ('digits-cnn', 0.05, True)
    >>> session.close()
    """

    data: FederatedData
    algorithm: Algorithm
    config: TrainConfig
    model_name: str
    model: torch.nn.Module
    run: RunState
    pool: ClientPool

    @classmethod
    def start(cls, data: FederatedData, algorithm: Algorithm, config: TrainConfig) -> "TrainingSession":
        """Resolve and check ``config``, build the model from the run's seed, set ``algorithm`` up and start
        the pool (HetbenchError for options no run can use)."""
        config = config.for_algorithm(algorithm).check()
        device = resolve_device(config.device)
        model_name = config.model_for(data.image_size)
        torch.manual_seed(int(config.seed))
        model = build_model(model_name, data.in_channels, data.num_classes, data.image_size, config.norm)
        ws = Workspace(data, model, device)
        run = RunState(ws=ws, config=config, global_params=ws.flat.params.clone(),
                       global_buffers=ws.flat.buffers.clone())
        algorithm.setup(run)
        pool = ClientPool(run, model_name, algorithm, config)
        return cls(data, algorithm, config, model_name, model, run, pool)

    @property
    def device(self) -> torch.device:
        return self.run.main_ws.device

    def close(self) -> None:
        """Stop the pool's worker threads (and give the main thread back its torch thread count)."""
        self.pool.close()
