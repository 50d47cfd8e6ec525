"""Heterogeneity metrics of a federated split, as pure numpy functions of a clients x classes matrix.

All distances compare each client's label distribution q_i with the population's
p = sum_i (n_i / n) q_i, and are summarised as the population-weighted mean
sum_i (n_i / n) Dist(q_i, p) (Hsu, Qi & Brown 2020, section 6.1).
"""

from __future__ import annotations

import numpy as np


def client_distributions(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q: clients x classes row-normalised, p: population distribution, n_i: client sizes)."""
    counts = np.asarray(counts, dtype=np.float64)
    sizes = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(sizes[:, None] > 0, counts / sizes[:, None], 0.0)
    total = sizes.sum()
    p = counts.sum(axis=0) / total if total > 0 else np.zeros(counts.shape[1])
    return q, p, sizes


def _weighted_mean(values: np.ndarray, sizes: np.ndarray) -> float:
    total = sizes.sum()
    return float((values * sizes).sum() / total) if total > 0 else 0.0


def emd_per_client(counts: np.ndarray) -> np.ndarray:
    """EMD(q_i, p) = ||q_i - p||_1, in [0, 2] (Hsu et al. 2020, sec. 6.1). Empty clients get 0."""
    q, p, sizes = client_distributions(counts)
    return np.where(sizes > 0, np.abs(q - p).sum(axis=1), 0.0)


def emd(counts: np.ndarray) -> float:
    """Population-weighted mean EMD: sum_i (n_i/n) ||q_i - p||_1, in [0, 2]."""
    _, _, sizes = client_distributions(counts)
    return _weighted_mean(emd_per_client(counts), sizes)


def jensen_shannon_per_client(counts: np.ndarray) -> np.ndarray:
    """Jensen-Shannon *distance* (square root of the divergence, log base 2), in [0, 1]."""
    q, p, sizes = client_distributions(counts)
    m = 0.5 * (q + p)

    def kl(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * np.log2(a / np.where(b > 0, b, 1.0)), 0.0)
        return terms.sum(axis=1)

    js = 0.5 * kl(q, m) + 0.5 * kl(p[None, :], m)
    return np.where(sizes > 0, np.sqrt(np.clip(js, 0.0, 1.0)), 0.0)


def hellinger_per_client(counts: np.ndarray) -> np.ndarray:
    """Hellinger distance sqrt(1 - sum_y sqrt(q(y) p(y))), in [0, 1]."""
    q, p, sizes = client_distributions(counts)
    bc = np.sqrt(q * p[None, :]).sum(axis=1)
    return np.where(sizes > 0, np.sqrt(np.clip(1.0 - bc, 0.0, 1.0)), 0.0)


def gini(values: np.ndarray) -> float:
    """Gini coefficient of non-negative values (0 = all equal, -> 1 = one holds everything)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = x.size
    if n == 0 or x.sum() == 0:
        return 0.0
    ranks = np.arange(1, n + 1)
    return float((2.0 * (ranks * x).sum()) / (n * x.sum()) - (n + 1.0) / n)


def size_stats(sizes: np.ndarray) -> dict[str, float]:
    """min, median, max, mean, std (population), gini and coefficient of variation of client sizes."""
    s = np.asarray(sizes, dtype=np.float64)
    if s.size == 0:
        return {k: 0.0 for k in ("min", "median", "max", "mean", "std", "gini", "cv")}
    mean = float(s.mean())
    std = float(s.std())
    return {
        "min": float(s.min()),
        "median": float(np.median(s)),
        "max": float(s.max()),
        "mean": mean,
        "std": std,
        "gini": gini(s),
        "cv": std / mean if mean > 0 else 0.0,
    }


def classes_per_client(counts: np.ndarray) -> np.ndarray:
    """Number of classes with at least one sample, per client."""
    return (np.asarray(counts) > 0).sum(axis=1)


def label_matrix(client_ids: np.ndarray, labels: np.ndarray, num_clients: int, num_classes: int) -> np.ndarray:
    """Clients x classes counts from per-row client ids (rows with client id < 0 are ignored)."""
    keep = client_ids >= 0
    flat = client_ids[keep].astype(np.int64) * num_classes + labels[keep].astype(np.int64)
    return np.bincount(flat, minlength=num_clients * num_classes).reshape(num_clients, num_classes)
