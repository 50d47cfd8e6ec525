"""Noise-based skews: IID clients whose inputs (feature noise) or labels (label noise) are corrupted.

Both methods divide the training rows IID into N equal clients (as NIID-Bench does before adding
noise) and then change the rows themselves; the partitioners here make the IID assignment and
carry the parameters, and the builder :mod:`hetbench.builders.noise` writes the noised table (so
``hetbench verify`` re-renders it). The numpy cores:

* :func:`noise_levels` and :func:`add_gaussian_noise` - NIID-Bench's "noise-based feature
  imbalance" (Li et al., ICDE 2022, sec. 3.2): client k of N (k = 1..N) gets Gaussian noise of
  standard deviation sigma_k = sigma * k / N on pixel values scaled to [0, 1].
* :func:`flip_rates` and :func:`flip_labels` - symmetric ("uniform") and pair label flipping,
  the two noise transition matrices of Han et al. (Co-teaching, NeurIPS 2018, sec. 4).
"""

from __future__ import annotations

import math

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import default_client_names, parse_sizes
from hetbench.partitioners.base import Partitioner
from hetbench.partitioners.iid import iid_assignment

FLIP_KINDS = ("uniform", "pair")

#: the column a feature-noise table carries: the noise standard deviation added to each row
NOISE_STD_COLUMN = "noise_std"
#: the column a label-noise table carries: each row's label before flipping
CLEAN_LABEL_COLUMN = "clean_label"


def check_sigma(sigma: float) -> float:
    """``sigma`` as a finite float >= 0, else a :class:`~hetbench.errors.HetbenchError`.

    Examples
    --------
    >>> check_sigma(0.1)
    0.1
    """
    try:
        value = float(sigma)
    except (TypeError, ValueError):
        raise HetbenchError(f"`sigma` must be a number >= 0 (got {sigma!r})") from None
    if not math.isfinite(value) or value < 0:
        raise HetbenchError(f"`sigma` must be a finite number >= 0 (got {sigma})")
    return value


def check_rate(rate: float) -> float:
    """``rate`` as a float in [0, 1], else a :class:`~hetbench.errors.HetbenchError`.

    Examples
    --------
    >>> check_rate("0.2")
    0.2
    """
    try:
        value = float(rate)
    except (TypeError, ValueError):
        raise HetbenchError(f"`rate` must be a number in [0, 1] (got {rate!r})") from None
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise HetbenchError(f"`rate` must be in [0, 1] (got {rate})")
    return value


def noise_levels(sigma: float, num_clients: int) -> np.ndarray:
    """Noise standard deviation of every client: sigma_k = sigma * k / N for clients k = 1..N.

    hetbench's client i (0-based) is k = i + 1, so the first client gets sigma / N and the last
    exactly sigma; every client is noised. NIID-Bench's paper (sec. 3.2) writes the noise of party
    P_i, i = 1..N, as Gau(sigma * i / N), a zero-mean Gaussian (its text calls sigma * i / N the
    variance); its released code (``experiments.py``) adds ``torch.randn(...) * std`` to the [0, 1]
    tensors with std = sigma / (N - 1) * i for i = 0..N-1, so there the first party is clean and the
    last gets sigma. hetbench takes the paper's k = 1..N and, as the code does, reads the level as a
    standard deviation.

    Parameters
    ----------
    sigma : float
        The noise level of the last client (>= 0).
    num_clients : int
        N.

    Returns
    -------
    numpy.ndarray
        float64 (N,) standard deviations, increasing in k.

    Examples
    --------
    >>> noise_levels(0.5, 4).tolist()
    [0.125, 0.25, 0.375, 0.5]
    """
    return sigma * np.arange(1, num_clients + 1, dtype=np.float64) / num_clients


def add_gaussian_noise(image: np.ndarray, std: float, rng: np.random.Generator) -> np.ndarray:
    """``image`` (uint8) scaled to [0, 1], plus N(0, std**2) per pixel and channel, clipped to [0, 1]
    and rounded back to uint8 (the published images are 8-bit PNG, so the noise is quantised and
    clipped; NIID-Bench adds it to float tensors).

    Parameters
    ----------
    image : numpy.ndarray
        uint8 pixels, any shape ((H, W) or (H, W, C)).
    std : float
        Standard deviation on the [0, 1] scale; 0 returns the image unchanged (no draw).
    rng : numpy.random.Generator
        Draws ``image.size`` standard normals.

    Returns
    -------
    numpy.ndarray
        uint8 of the same shape.

    Examples
    --------
    >>> import numpy as np
    >>> img = np.full((2, 2), 128, np.uint8)
    >>> add_gaussian_noise(img, 0.0, np.random.default_rng(0)).tolist()
    [[128, 128], [128, 128]]
    >>> add_gaussian_noise(img, 0.1, np.random.default_rng(0)).tolist()
    [[131, 125], [144, 131]]
    """
    if std == 0:
        return image
    x = image.astype(np.float64) / 255.0 + std * rng.standard_normal(image.shape)
    return np.rint(np.clip(x, 0.0, 1.0) * 255.0).astype(np.uint8)


def flip_rates(rate: float, num_clients: int, per_client: bool = False) -> np.ndarray:
    """Flip probability of every client: ``rate`` for all, or rate * k / N (k = 1..N) with
    ``per_client``.

    Examples
    --------
    >>> flip_rates(0.5, 4).tolist(), flip_rates(0.5, 4, per_client=True).tolist()
    ([0.5, 0.5, 0.5, 0.5], [0.125, 0.25, 0.375, 0.5])
    """
    if per_client:
        return rate * np.arange(1, num_clients + 1, dtype=np.float64) / num_clients
    return np.full(num_clients, float(rate))


def flip_labels(
    labels: np.ndarray, rates: np.ndarray, num_classes: int, kind: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Flip each label independently with its row's probability (Han et al.'s transition matrices).

    A row is flipped with probability ``rates[i]`` (one uniform draw per row, so a client's flipped
    count is Binomial(n_k, rate_k)). ``uniform`` (symmetric flipping): the new label is one of the
    C - 1 *other* classes, uniformly, Q = (1 - r) I + r / (C - 1) (11^T - I). ``pair``: class c
    becomes c + 1 mod C, Q = (1 - r) I + r P with P the cyclic shift.

    Parameters
    ----------
    labels : numpy.ndarray
        Class index per row, in [0, C).
    rates : numpy.ndarray
        Flip probability per row, in [0, 1].
    num_classes : int
        C, at least 2.
    kind : {"uniform", "pair"}
        The transition matrix.
    rng : numpy.random.Generator
        Draws one uniform per row, then (``uniform``) one offset in 1..C-1 per row.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        int64 noised labels and the boolean mask of the flipped rows (a flipped label always
        differs from the clean one).

    Examples
    --------
    >>> import numpy as np
    >>> noisy, flipped = flip_labels(np.array([0, 1, 2, 2]), np.ones(4), 3, "pair", np.random.default_rng(0))
    >>> noisy.tolist(), flipped.tolist()
    ([1, 2, 0, 0], [True, True, True, True])
    """
    if kind not in FLIP_KINDS:
        raise HetbenchError(f"unknown `kind` '{kind}'; choose one of: {', '.join(FLIP_KINDS)}")
    if num_classes < 2:
        raise HetbenchError(f"label noise needs at least 2 classes (the data has {num_classes})")
    labels = np.asarray(labels, dtype=np.int64)
    flipped = rng.random(labels.size) < np.asarray(rates, dtype=np.float64)
    offset = rng.integers(1, num_classes, size=labels.size) if kind == "uniform" else np.ones(labels.size, np.int64)
    noisy = np.where(flipped, (labels + offset) % num_classes, labels)
    return noisy, flipped


class _NoisePartitioner(Partitioner):
    """IID equal clients of a table that the noise builder has written (module notes)."""

    marker_column = ""
    command = ""

    def __init__(self, num_clients: int) -> None:
        if int(num_clients) < 1:
            raise HetbenchError(f"`num_clients` must be at least 1 (got {num_clients})")
        self.num_clients = int(num_clients)

    def iid(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """The IID assignment of ``n`` rows to N equal clients (the noise builder's first step)."""
        return iid_assignment(n, parse_sizes(None, self.num_clients, n), rng)

    def _assign(self, table, split, rng):
        if self.marker_column not in table.splits[split].column_names:
            raise HetbenchError(
                f"'{self.name}' partitions the table its builder noised (hetbench partition {self.name}, "
                f"hetbench.builders.noise.prepare_{self.name.replace('-', '_')}): the table has no '{self.marker_column}' column"
            )
        return self.iid(table.num_rows(split), rng), None, self.num_clients, default_client_names(self.num_clients)


class FeatureNoisePartitioner(_NoisePartitioner):
    """Noise-based feature imbalance (NIID-Bench sec. 3.2): IID clients, client k of N with pixel noise of std sigma*k/N.

    Following [1]_, the rows are split IID into N equal clients and client k (k = 1..N) sees its
    images with Gaussian noise N(0, (sigma * k / N)**2) on pixels in [0, 1]. The partition itself is the IID one (n // N rows each); the images are noised by
    :func:`hetbench.builders.noise.prepare_feature_noise`, which makes the table this partitioner
    splits (it refuses a table without the builder's ``noise_std`` column). See
    :func:`noise_levels` for the convention for k.

    Parameters
    ----------
    num_clients : int, default 10
        Number of clients N.
    sigma : float, default 0.1
        Noise standard deviation of the last client (>= 0), on pixels scaled to [0, 1].

    References
    ----------
    .. [1] Q. Li, Y. Diao, Q. Chen and B. He, "Federated Learning on Non-IID Data Silos: An
       Experimental Study" (NIID-Bench), ICDE 2022, sec. 3.2, "noise-based feature imbalance":
       party P_i's data gets noise Gau(sigma * i / N).

    Examples
    --------
    >>> from hetbench.partitioners import FeatureNoisePartitioner
    >>> p = FeatureNoisePartitioner(4, sigma=0.5)
    >>> p.params(), p.levels().tolist()
    ({'num_clients': 4, 'sigma': 0.5}, [0.125, 0.25, 0.375, 0.5])
    """

    name = "feature-noise"
    marker_column = NOISE_STD_COLUMN

    def __init__(self, num_clients: int = 10, sigma: float = 0.1) -> None:
        super().__init__(num_clients)
        self.sigma = check_sigma(sigma)

    def params(self) -> dict:
        return {"num_clients": self.num_clients, "sigma": self.sigma}

    def levels(self) -> np.ndarray:
        """sigma_k of every client (:func:`noise_levels`)."""
        return noise_levels(self.sigma, self.num_clients)


class LabelNoisePartitioner(_NoisePartitioner):
    """Label noise: IID clients whose labels are flipped, to a random other class or the next (Han et al. 2018).

    Each training label is flipped with probability ``rate`` (``uniform``: to a uniformly random
    other class; ``pair``: c -> c + 1 mod C), the two transition matrices of [1]_ (sec. 4); with
    ``per_client`` client k of N flips with rate * k / N.

    The partition itself is the IID one; the labels are flipped by
    :func:`hetbench.builders.noise.prepare_label_noise`, which keeps each row's clean label in a
    ``clean_label`` column (this partitioner refuses a table without it).

    Parameters
    ----------
    num_clients : int, default 10
        Number of clients N.
    rate : float, default 0.2
        Flip probability in [0, 1].
    kind : {"uniform", "pair"}, default "uniform"
        Symmetric or pair flipping.
    per_client : bool, default False
        Scale the rate to rate * k / N for client k = 1..N.

    References
    ----------
    .. [1] B. Han, Q. Yao, X. Yu, G. Niu, M. Xu, W. Hu, I. W. Tsang and M. Sugiyama, "Co-teaching:
       Robust Training of Deep Neural Networks with Extremely Noisy Labels", NeurIPS 2018, sec. 4
       and Fig. 3 (pair flipping and symmetry flipping transition matrices).

    Examples
    --------
    >>> from hetbench.partitioners import LabelNoisePartitioner
    >>> p = LabelNoisePartitioner(4, rate=0.5, kind="pair", per_client=True)
    >>> p.params()["kind"], p.rates().tolist()
    ('pair', [0.125, 0.25, 0.375, 0.5])
    """

    name = "label-noise"
    marker_column = CLEAN_LABEL_COLUMN

    def __init__(self, num_clients: int = 10, rate: float = 0.2, kind: str = "uniform", per_client: bool = False) -> None:
        super().__init__(num_clients)
        if kind not in FLIP_KINDS:
            raise HetbenchError(f"unknown `kind` '{kind}'; choose one of: {', '.join(FLIP_KINDS)}")
        self.rate = check_rate(rate)
        self.kind = kind
        self.per_client = bool(per_client)

    def params(self) -> dict:
        return {"num_clients": self.num_clients, "rate": self.rate, "kind": self.kind, "per_client": self.per_client}

    def rates(self) -> np.ndarray:
        """Flip probability of every client (:func:`flip_rates`)."""
        return flip_rates(self.rate, self.num_clients, self.per_client)
