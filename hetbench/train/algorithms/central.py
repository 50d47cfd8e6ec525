"""Centralised training on the union of the clients' training data: the reference for relative accuracy
(Hsu et al. 2020 report FL accuracy relative to centralised learning).

To compare at equal work, one "round" of the centralised run processes as many examples as an average FL
round does, E * K * mean(n_k) (K clients per round, E local epochs), as SGD mini-batches of B drawn from
shuffled passes over all training rows; curves are therefore aligned round for round with the FL runs.
"""

from __future__ import annotations

import numpy as np

from hetbench.train.algorithms.base import Algorithm, ClientUpdate, RunState


class Central(Algorithm):
    """Centralised SGD on the union of the clients' data, round for round as much work as an FL round.

    One "round" processes ``E * K * mean(n_k)`` examples in mini-batches of B from shuffled passes over
    all training rows; its accuracy is the reference for the other runs' relative accuracy.

    Parameters
    ----------
    None
        It has no hyper-parameters of its own; the run's :class:`~hetbench.train.algorithms.TrainConfig`
        (learning rate, batch size, K, E) applies.

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Federated visual classification with real-world data
       distribution", ECCV 2020, sec. 6 (accuracy relative to centralised learning).

    Examples
    --------
    >>> from hetbench.train.algorithms import make_algorithm
    >>> central = make_algorithm("central")
    >>> central.name, central.params
    ('central', {})
    """

    name = "central"
    lockstep = False
    lockstep_refusal = "central trains one client per round (the pooled data)"
    citation = "centralised SGD on the union of the clients' data"
    rebuilt = (*Algorithm.rebuilt, "rows", "per_round")  # checkpoints keep the sample stream (_stream, _pass)

    def setup(self, run: RunState) -> None:
        self.rows = np.sort(np.concatenate(run.data.client_rows))
        k = min(run.config.clients_per_round, run.data.num_clients)
        self.per_round = max(1, int(round(run.config.local_epochs * k * run.data.client_sizes.mean())))
        self._stream = np.empty(0, dtype=np.int64)
        self._pass = 0

    def select(self, run: RunState, round_index: int) -> np.ndarray:
        return np.zeros(1, dtype=np.int64)

    def batches(self, run: RunState, round_index: int, client: int) -> list[np.ndarray]:
        while self._stream.size < self.per_round:
            self._pass += 1
            perm = self.rows[np.random.default_rng([run.config.seed, self._pass, 3]).permutation(self.rows.size)]
            self._stream = np.concatenate([self._stream, perm])
        take, self._stream = self._stream[: self.per_round], self._stream[self.per_round :]
        b = run.config.batch_size
        return [take[i : i + b] for i in range(0, take.size, b)]

    def client_update(self, run: RunState, round_index: int, client: int) -> ClientUpdate:
        update = super().client_update(run, round_index, client)
        update.weight = float(self.rows.size)
        return update
