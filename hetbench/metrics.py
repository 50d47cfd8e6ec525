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


# ---- sparse forms: millions of clients ------------------------------------------------------------
QUANTILES = {"p01": 0.01, "p10": 0.1, "p25": 0.25, "p75": 0.75, "p90": 0.9, "p99": 0.99}


def quantile_stats(values: np.ndarray) -> dict[str, float]:
    """min, quantiles (``p01`` ... ``p99``), median, max, mean and std (population) of ``values``.

    Parameters
    ----------
    values : numpy.ndarray
        Any 1-D numbers (per-client sizes, distances, ...).

    Returns
    -------
    dict
        ``min``, ``p01``, ``p10``, ``p25``, ``median``, ``p75``, ``p90``, ``p99``, ``max``,
        ``mean``, ``std`` as floats (linear interpolation between order statistics); all 0.0 for
        an empty input.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.metrics import quantile_stats
    >>> s = quantile_stats(np.arange(101))
    >>> s["min"], s["p10"], s["median"], s["p99"], s["max"]
    (0.0, 10.0, 50.0, 99.0, 100.0)
    """
    v = np.asarray(values, dtype=np.float64)
    keys = ("min", "p01", "p10", "p25", "median", "p75", "p90", "p99", "max", "mean", "std")
    if v.size == 0:
        return {k: 0.0 for k in keys}
    q = np.quantile(v, [0.0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0])
    return {**dict(zip(keys[:9], (float(x) for x in q))), "mean": float(v.mean()), "std": float(v.std())}


class LabelCounts:
    """A clients x classes count matrix in compressed sparse row form (only non-zero cells).

    Client i's non-zero cells are ``classes[indptr[i]:indptr[i+1]]`` (ascending) with counts
    ``counts[indptr[i]:indptr[i+1]]``. Memory grows with the number of non-zero cells (at most the
    number of rows), never with clients x classes, so a million clients cost a few megabytes. The
    distances equal those of the dense functions above (:func:`emd_per_client`, ...), computed
    over the non-zero cells only.

    Parameters
    ----------
    indptr : numpy.ndarray
        int64, ``num_clients + 1`` offsets into ``classes`` and ``counts``.
    classes : numpy.ndarray
        int64 class index of every non-zero cell, ascending within a client.
    counts : numpy.ndarray
        int64 count of every non-zero cell (> 0).
    num_classes : int
        Number of classes (columns).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.metrics import LabelCounts
    >>> lc = LabelCounts.from_labels(np.array([0, 0, 1, -1, 2]), np.array([1, 1, 0, 0, 1]), 4, 2)
    >>> lc.sizes().tolist(), lc.classes_per_client().tolist(), lc.to_dense().tolist()
    ([2, 1, 1, 0], [1, 1, 1, 0], [[0, 2], [1, 0], [0, 1], [0, 0]])
    >>> lc.emd_per_client().round(3).tolist()
    [0.5, 1.5, 0.5, 0.0]
    """

    def __init__(self, indptr: np.ndarray, classes: np.ndarray, counts: np.ndarray, num_classes: int) -> None:
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.classes = np.asarray(classes, dtype=np.int64)
        self.counts = np.asarray(counts, dtype=np.int64)
        self.num_classes = int(num_classes)

    @classmethod
    def from_labels(cls, client_ids: np.ndarray, labels: np.ndarray, num_clients: int, num_classes: int) -> "LabelCounts":
        """From per-row client ids and labels (rows with client id < 0 are ignored).

        Parameters
        ----------
        client_ids, labels : numpy.ndarray
            Client and class of every row.
        num_clients, num_classes : int
            The matrix's shape.

        Returns
        -------
        LabelCounts
            The non-zero cells of :func:`label_matrix`.

        Examples
        --------
        >>> import numpy as np
        >>> from hetbench.metrics import LabelCounts
        >>> LabelCounts.from_labels(np.array([1, 1, 0]), np.array([2, 0, 2]), 2, 3).classes.tolist()
        [2, 0, 2]
        """
        cids = np.asarray(client_ids)
        keep = cids >= 0
        key = cids[keep].astype(np.int64) * int(num_classes) + np.asarray(labels)[keep].astype(np.int64)
        cells, counts = np.unique(key, return_counts=True)
        owner = cells // max(int(num_classes), 1)
        indptr = np.zeros(int(num_clients) + 1, dtype=np.int64)
        np.cumsum(np.bincount(owner, minlength=int(num_clients)), out=indptr[1:])
        return cls(indptr, cells - owner * int(num_classes), counts, num_classes)

    @classmethod
    def from_dense(cls, counts: np.ndarray) -> "LabelCounts":
        """From a dense clients x classes count matrix.

        Parameters
        ----------
        counts : numpy.ndarray
            Non-negative integer counts, clients x classes.

        Returns
        -------
        LabelCounts
            Its non-zero cells.

        Examples
        --------
        >>> import numpy as np
        >>> from hetbench.metrics import LabelCounts
        >>> LabelCounts.from_dense(np.array([[0, 3], [1, 1]])).counts.tolist()
        [3, 1, 1]
        """
        m = np.asarray(counts, dtype=np.int64)
        rows, cols = np.nonzero(m)
        indptr = np.zeros(m.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=m.shape[0]), out=indptr[1:])
        return cls(indptr, cols, m[rows, cols], m.shape[1])

    @property
    def num_clients(self) -> int:
        return int(self.indptr.size - 1)

    def _owner(self) -> np.ndarray:
        return np.repeat(np.arange(self.num_clients), np.diff(self.indptr))

    def _per_client(self, terms: np.ndarray) -> np.ndarray:
        return np.bincount(self._owner(), weights=terms, minlength=self.num_clients)

    def sizes(self) -> np.ndarray:
        """Rows per client (int64)."""
        csum = np.concatenate([[0], np.cumsum(self.counts)])
        return csum[self.indptr[1:]] - csum[self.indptr[:-1]]

    def classes_per_client(self) -> np.ndarray:
        """Classes with at least one row, per client."""
        return np.diff(self.indptr)

    def class_totals(self) -> np.ndarray:
        """Rows per class over all clients (int64)."""
        return np.bincount(self.classes, weights=self.counts, minlength=self.num_classes).astype(np.int64)

    def population(self) -> np.ndarray:
        """p: the class distribution over all rows (zeros when there are none)."""
        col = self.class_totals().astype(np.float64)
        total = col.sum()
        return col / total if total > 0 else np.zeros(self.num_classes)

    def to_dense(self, clients: np.ndarray | None = None) -> np.ndarray:
        """The dense counts of ``clients`` (default: all; only sensible for a few thousand rows)."""
        clients = np.arange(self.num_clients) if clients is None else np.asarray(clients, dtype=np.int64)
        out = np.zeros((clients.size, self.num_classes), dtype=np.int64)
        lo, hi = self.indptr[clients], self.indptr[clients + 1]
        row = np.repeat(np.arange(clients.size), hi - lo)
        cell = np.repeat(lo - np.concatenate([[0], np.cumsum(hi - lo)[:-1]]), hi - lo) + np.arange(row.size)
        out[row, self.classes[cell]] = self.counts[cell]
        return out

    def _q_p(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sizes = self.sizes()
        q = self.counts / np.repeat(np.maximum(sizes, 1), np.diff(self.indptr))
        p = self.population()
        return q, p[self.classes], p

    def emd_per_client(self) -> np.ndarray:
        """As :func:`emd_per_client`: ||q_i - p||_1 = sum over non-zero cells of (|q - p| - p) + sum(p)."""
        q, pc, p = self._q_p()
        out = self._per_client(np.abs(q - pc) - pc) + p.sum()
        return np.where(self.sizes() > 0, np.clip(out, 0.0, 2.0), 0.0)

    def jensen_shannon_per_client(self) -> np.ndarray:
        """As :func:`jensen_shannon_per_client`; outside a client's classes, KL(p || m) adds p(y) each."""
        q, pc, p = self._q_p()
        m = 0.5 * (q + pc)
        kl_q = self._per_client(q * np.log2(q / m))
        kl_p = self._per_client(pc * np.log2(pc / m) - pc) + p.sum()
        js = 0.5 * kl_q + 0.5 * kl_p
        return np.where(self.sizes() > 0, np.sqrt(np.clip(js, 0.0, 1.0)), 0.0)

    def hellinger_per_client(self) -> np.ndarray:
        """As :func:`hellinger_per_client`: the Bhattacharyya sum runs over non-zero cells only."""
        q, pc, _ = self._q_p()
        bc = self._per_client(np.sqrt(q * pc))
        return np.where(self.sizes() > 0, np.sqrt(np.clip(1.0 - bc, 0.0, 1.0)), 0.0)
