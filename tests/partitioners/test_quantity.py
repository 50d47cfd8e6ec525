"""Quantity skew (``partition quantity``): sizes from a Dirichlet, a power law or a log-normal, labels
IID within each client (issue 14)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.errors import HetbenchError
from hetbench.metrics import gini
from hetbench.partitioners import QuantityPartitioner, get_partitioner
from hetbench.partitioners.quantity import SIZE_DISTS, quantity_assignment, quantity_sizes
from partition_checks import PROPS, check_invariants, check_seeds
from tables import make_table

BETAS = st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False)
STAT = settings(PROPS, max_examples=10, derandomize=True)


@PROPS
@given(n=st.integers(1, 400), data=st.data(), dist=st.sampled_from(SIZE_DISTS), beta=BETAS, seed=st.integers(0, 2**32))
def test_every_row_once_sizes_sum_to_n_and_every_client_has_a_row(n, data, dist, beta, seed):
    num_clients = data.draw(st.integers(1, min(n, 60)))
    sizes = quantity_sizes(n, dist, num_clients, beta, np.random.default_rng(seed))
    assert sizes.dtype == np.int64 and sizes.shape == (num_clients,)
    assert int(sizes.sum()) == n and int(sizes.min()) >= 1
    a = quantity_assignment(n, dist, num_clients, beta, np.random.default_rng(seed))
    assert a.shape == (n,) and a.min() >= 0 and a.max() < num_clients
    assert np.array_equal(np.bincount(a, minlength=num_clients), sizes)  # same draws, same sizes
    assert np.array_equal(a, quantity_assignment(n, dist, num_clients, beta, np.random.default_rng(seed)))


@PROPS
@given(labels=st.lists(st.integers(0, 4), min_size=5, max_size=200), dist=st.sampled_from(SIZE_DISTS), beta=BETAS,
       seed=st.integers(0, 2**31))
def test_partition_invariants_and_seed_contract(labels, dist, beta, seed):
    labels = np.asarray(labels)
    num_clients = min(5, labels.size)
    table = make_table(labels, num_classes=5)
    part = check_seeds(lambda: QuantityPartitioner(num_clients, dist, beta), lambda: table, seed)
    check_invariants(part, labels, 5, num_clients)
    assert part.num_kept == labels.size and int(part.client_sizes().min()) >= 1


def test_more_clients_than_rows_is_refused():
    with pytest.raises(HetbenchError, match="more clients"):
        quantity_sizes(3, "dirichlet", 4, 1.0, np.random.default_rng(0))
    assert quantity_sizes(4, "power-law", 4, 0.01, np.random.default_rng(0)).tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("beta", [0, -1, math.nan, math.inf, "lots"])
def test_bad_beta(beta):
    with pytest.raises(HetbenchError, match="beta"):
        QuantityPartitioner(5, "dirichlet", beta)


def test_unknown_size_dist_and_recipe():
    with pytest.raises(HetbenchError, match="size_dist"):
        QuantityPartitioner(5, "zipf", 1.0)
    p = get_partitioner("quantity", {"num_clients": 7, "size_dist": "lognormal", "beta": 2.0})
    assert p.params() == {"num_clients": 7, "size_dist": "lognormal", "beta": 2.0}


def _mean_gini(dist: str, beta: float, seeds: range, n: int = 5000, clients: int = 20) -> float:
    return float(np.mean([gini(quantity_sizes(n, dist, clients, beta, np.random.default_rng(s))) for s in seeds]))


@STAT
@given(seed=st.integers(0, 10_000))
def test_gini_ordering(seed):
    """Smaller beta -> more unequal sizes on average for dirichlet and power-law, larger sigma for
    lognormal. Averages over 30 draws; the gaps (e.g. Dirichlet(0.1) ~0.8 vs Dirichlet(10) ~0.1 for 20
    clients) are many standard errors wide."""
    seeds = range(seed, seed + 30)
    assert _mean_gini("dirichlet", 0.1, seeds) > _mean_gini("dirichlet", 1.0, seeds) > _mean_gini("dirichlet", 10.0, seeds)
    assert _mean_gini("power-law", 0.5, seeds) > _mean_gini("power-law", 2.0, seeds) > _mean_gini("power-law", 8.0, seeds)
    assert _mean_gini("lognormal", 2.0, seeds) > _mean_gini("lognormal", 0.5, seeds) > _mean_gini("lognormal", 0.1, seeds)


def test_labels_are_iid_within_clients(digits_table):
    """Every client's label mix is a uniform sample of the population: EMD to it stays small."""
    from hetbench.metrics import emd_per_client

    part = QuantityPartitioner(5, "dirichlet", 1.0).partition(digits_table, seed=3)
    counts = part.label_matrix(digits_table.labels["train"], digits_table.num_classes)
    big = counts.sum(axis=1) >= 200
    assert big.any() and float(emd_per_client(counts)[big].max()) < 0.3


@pytest.mark.slow
def test_cli_builds_loads_and_verifies(tmp_path, run_cli):
    import datasets

    out = tmp_path / "q"
    code, stdout, err = run_cli("partition", "quantity", "--size-dist", "power-law", "--beta", "1.5", "--clients", "6",
                                "--seed", "2", "--out", out)
    assert code == 0, err
    assert "6 clients" in stdout
    report = json.loads((out / "report.json").read_text())
    q = report["quantity"]
    assert q["size_dist"] == "power-law" and q["beta"] == 1.5 and sum(q["client_sizes"]) == 1797
    assert q["min"] == min(q["client_sizes"]) >= 1 and q["max"] == max(q["client_sizes"])
    assert q["gini"] == pytest.approx(gini(np.array(q["client_sizes"])), abs=1e-6)
    ds = datasets.load_dataset(str(out))
    assert sum(len(ds[s]) for s in ds) == 1797
    train_sizes = np.bincount(np.array(ds["train"]["client_id"]), minlength=6)
    assert np.all(train_sizes <= np.array(q["client_sizes"]))
    code, stdout, err = run_cli("verify", out)
    assert code == 0 and stdout.startswith("OK"), (stdout, err)


def test_default_folder_name(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("partition", "quantity", "--size-dist", "lognormal", "--beta", "1", "--clients", "3", "-q")
    assert code == 0, err
    assert (tmp_path / "hetbench_splits" / "digits-quantity-lognormal-b1-n3-s0" / "hetbench.json").exists()
