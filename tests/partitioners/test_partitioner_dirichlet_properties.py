"""Properties of Hsu et al.'s client-scheme Dirichlet that a user relies on (issue 11, item 2):
alpha = inf is as IID as ``partition iid``, alpha = 0 gives one class per client, and the mean EMD
does not increase with alpha, for the label and the embedding partitioners; a finite alpha too large
to sample behaves as ``inf``.

The deal is random, so the comparisons are between averages over seeds, with tolerances derived in
the tests' docstrings."""

from __future__ import annotations

import math

import datasets
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.metrics import emd, emd_per_client
from hetbench.partitioners import DirichletPartitioner, EmbeddingPartitioner, IIDPartitioner
from hetbench.partitioners.dirichlet_counts import ALPHA_IID, hsu_client_counts
from hetbench.partitioners.iid import iid_assignment
from hetbench.sources import load_table
from hetbench.table import SampleTable
from partition_checks import PROPS
from tables import make_table

ALPHAS = [0.01, 0.05, 0.1, 0.5, 1.0, 10.0, 100.0, math.inf]
#: statistical properties: a fixed, reproducible set of examples (no flaky reruns)
STAT = settings(PROPS, max_examples=20, derandomize=True)


@st.composite
def population(draw, min_clients=2, max_clients=30):
    """Class counts (a Dir(1) class mix, so some classes are rare) and equal client sizes."""
    C = draw(st.integers(2, 10))
    N = draw(st.integers(min_clients, max_clients))
    n = N * draw(st.integers(20, 100))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    cc = np.bincount(rng.choice(C, n, p=rng.dirichlet(np.ones(C))), minlength=C)
    sizes = np.full(N, n // N)
    sizes[: n % N] += 1
    return cc, sizes


def iid_counts(cc, sizes, seed):
    labels = np.repeat(np.arange(cc.size), cc)
    a = iid_assignment(labels.size, sizes, np.random.default_rng(seed))
    return np.bincount(a.astype(np.int64) * cc.size + labels, minlength=sizes.size * cc.size).reshape(sizes.size, -1)


@STAT
@given(case=population(min_clients=5), base=st.integers(0, 2**31 - 1))
def test_alpha_inf_is_as_iid_as_partition_iid(case, base):
    """Over 16 seeds, the mean and the largest per-client EMD at alpha = inf are at most IID's
    times f * 1.15 (mean) and f * 1.25 (largest), f = sqrt((n - 1) / (n - m)) ~ sqrt(N / (N - 1)).

    Why f: at alpha = inf every draw is a class drawn from p over the classes left, so a client's
    counts are (up to the last draws) multinomial, variance m p (1 - p), where a slice of a random
    permutation is hypergeometric, variance m p (1 - p) (n - m) / (n - 1); EMD scales with the
    standard deviation. Over 150 random populations the seed-averaged ratio divided by f was 0.97
    on average, at most 1.11 (mean EMD) and 1.18 (largest EMD): the 1.15 / 1.25 margins are that
    seed noise. Before the interleaved deal the largest EMD was 3x IID's (issue 11)."""
    cc, sizes = case
    n, m = int(cc.sum()), int(sizes.max())
    f = math.sqrt((n - 1) / (n - m))
    deal = [hsu_client_counts(cc, sizes, math.inf, np.random.default_rng(base + s)) for s in range(16)]
    iid = [iid_counts(cc, sizes, base + s) for s in range(16)]
    assert np.mean([emd(c) for c in deal]) <= 1.15 * f * np.mean([emd(c) for c in iid])
    assert np.mean([emd_per_client(c).max() for c in deal]) <= 1.25 * f * np.mean([emd_per_client(c).max() for c in iid])


@STAT
@given(case=population(min_clients=5), base=st.integers(0, 2**31 - 1))
def test_label_mean_emd_non_increasing_in_alpha(case, base):
    """Averaged over 16 seeds, the mean EMD at each alpha of ALPHAS is at most the previous one's
    plus 0.05 (EMD lies in [0, 2]). The slack is seed noise: over 300 random populations the largest
    increase between neighbouring alphas was 0.048 with 12 seeds (standard error of a seed average
    up to ~0.02); with 200 seeds the same populations are monotone up to ~0.007. alpha = 0 (one class
    per client) is at least alpha = 0.01's.

    At least 5 clients: with 2-4 clients that must use every sample, tiny-alpha clients often pick
    the same class and then share the data evenly (e.g. classes 14/26, 2 clients of 20: EMD 0.39 at
    alpha = 0.01, 0.49 at 0.5), whatever the dealing order: a property of the scheme, not a bug."""
    cc, sizes = case
    labels = np.repeat(np.arange(cc.size), cc)
    e = [np.mean([emd(DirichletPartitioner(sizes.size, a).client_counts(labels, cc.size, np.random.default_rng(base + s)))
                  for s in range(16)]) for a in [0.0] + ALPHAS]
    assert np.all(np.diff(e) <= 0.05), np.round(e, 3)
    assert e[1] - e[-1] > 0.0 or e[1] < 0.05  # heterogeneity falls overall (unless there is none)


def test_label_mean_emd_non_increasing_on_mnist5k_20_clients():
    """The issue's case: builtin:mnist5k, 20 clients. alpha = inf no longer gives a client 7 classes
    and EMD 0.75: its largest per-client EMD stays within IID's (0.21-0.24 on these seeds), and the
    seed-averaged EMD falls with alpha."""
    t = load_table("builtin:mnist5k")
    y, C = t.labels["train"], t.num_classes
    for seed in range(3):
        deal = DirichletPartitioner(20, math.inf).partition(t, seed).label_matrix(y, C)
        iid = IIDPartitioner(20).partition(t, seed).label_matrix(y, C)
        assert emd_per_client(deal).max() <= 1.1 * emd_per_client(iid).max()
        assert np.all((deal > 0).sum(axis=1) == C)
    e = [np.mean([emd(DirichletPartitioner(20, a).partition(t, s).label_matrix(y, C)) for s in range(4)]) for a in ALPHAS]
    assert np.all(np.diff(e) <= 0.0), np.round(e, 3)


def blob_table(n_per, k, d=8, seed=0):
    """Well separated blobs of different sizes in one ``emb`` column, a single class."""
    rng = np.random.default_rng(seed)
    sizes = (n_per * rng.uniform(0.5, 1.5, k)).astype(int)
    truth = np.repeat(np.arange(k), sizes)
    x = (rng.normal(size=(k, d)) * 20)[truth] + rng.normal(size=(truth.size, d))
    labels = np.zeros(truth.size, dtype=np.int64)
    ds = datasets.Dataset.from_dict({"label": labels.tolist(), "emb": x.astype(np.float32).tolist()})
    return SampleTable(splits={"train": ds}, label_column="label", class_names=["c0"], labels={"train": labels},
                       source={"dataset": "mem"})


@pytest.mark.parametrize("clients", [10, 20])
def test_embedding_mean_emd_non_increasing_in_alpha(clients):
    """The embedding partitioner's Dirichlet over clusters: the seed-averaged cluster EMD falls with
    alpha (before the fix, alpha = 0.01 gave a lower EMD than alpha = 0.1) and alpha = 0 gives one
    cluster per client."""
    table = blob_table(60, 8)
    e = []
    for a in [0.0] + ALPHAS:
        vals = []
        for s in range(4):
            p = EmbeddingPartitioner(clients, a, clusters=8, embedder="column:emb")
            part = p.partition(table, s)
            m = part.label_matrix(p.last_clusters["train"], 8)
            if a == 0:
                assert np.all((m > 0).sum(axis=1) == 1)
            vals.append(emd(m))
        e.append(np.mean(vals))
    assert np.all(np.diff(e) <= 0.02), np.round(e, 3)


@pytest.mark.parametrize("scheme", ["client", "class"])
@pytest.mark.parametrize("alpha", [ALPHA_IID, 1e300, 1.7e308, np.finfo(np.float64).max])
def test_alpha_too_large_to_sample_is_inf(scheme, alpha):
    """A finite alpha past ALPHA_IID (e.g. 1.7e308, which used to put every row on one client)
    gives exactly the split of alpha = inf."""
    labels = np.arange(500) % 7
    t = make_table(labels, 7)
    huge = DirichletPartitioner(10, alpha, scheme).partition(t, 3)
    inf = DirichletPartitioner(10, math.inf, scheme).partition(t, 3)
    assert np.array_equal(huge.assignment, inf.assignment)
    assert huge.client_sizes().min() >= 49
    assert DirichletPartitioner(10, alpha, scheme).params()["alpha"] == alpha  # recorded as given
