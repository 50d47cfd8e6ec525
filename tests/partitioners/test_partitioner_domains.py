"""DomainsPartitioner (DapperFL section 4.1): clients over domains, a fraction of rows each."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason
from hetbench.partitioners.domains import DomainsPartitioner, domains_assignment
from hetbench.sources import load_table

SIZES = {"mnist": 400, "svhn": 300, "syn": 200, "usps": 100}


def _table(sizes=SIZES, with_missing=0, column="domain", seed=0):
    rng = np.random.default_rng(seed)
    domains = [d for d, k in sizes.items() for _ in range(k)] + [None] * with_missing
    domains = [domains[i] for i in rng.permutation(len(domains))]
    labels = rng.integers(0, 10, size=len(domains)).tolist()
    return load_table(datasets.Dataset.from_dict({"label": labels, column: domains}))


def _check(p, table, num_clients, fraction):
    doms = np.asarray(table.splits["train"]["domain"], dtype=object)
    names = sorted(SIZES)
    assert p.num_clients == num_clients and len(p.client_names) == num_clients
    client_domain = [n.rsplit("/", 1)[0] for n in p.client_names]
    # every domain covered, each client in exactly one domain, names unique
    assert set(client_domain) == set(names)
    assert len(set(p.client_names)) == num_clients
    seen = np.zeros(len(doms), dtype=bool)
    for c, idx in enumerate(p.client_indices()):
        assert not seen[idx].any()  # disjoint (also guaranteed by a single assignment array)
        seen[idx] = True
        assert set(doms[idx]) == {client_domain[c]}
        assert idx.size == max(1, round(fraction * SIZES[client_domain[c]]))
    dropped = p.assignment < 0
    assert np.all(p.drop_reason[dropped & (doms != None)] == DropReason.REMAINDER)  # noqa: E711
    assert np.all(p.drop_reason[doms == None] == DropReason.MISSING_VALUE)  # noqa: E711


@pytest.mark.parametrize("num_clients,fraction", [(4, 0.01), (10, 0.01), (10, 0.2), (20, 0.05), (4, 1.0)])
def test_properties(num_clients, fraction):
    table = _table(with_missing=7)
    for seed in range(5):
        p = DomainsPartitioner(num_clients, fraction).partition(table, seed)
        _check(p, table, num_clients, fraction)
        assert p.recipe["method"] == "domains"
        assert p.recipe["params"] == {"num_clients": num_clients, "fraction": fraction, "column": "domain"}


def test_client_grouping_and_names():
    table = _table()
    p = DomainsPartitioner(10, 0.05).partition(table, 3)
    doms = [n.rsplit("/", 1)[0] for n in p.client_names]
    assert doms == sorted(doms)  # client ids grouped by domain, domains sorted
    for d in set(doms):
        ks = [int(n.rsplit("/", 1)[1]) for n in p.client_names if n.startswith(d + "/")]
        assert ks == list(range(len(ks)))


def test_deterministic_and_seed_dependent():
    table = _table()
    a = DomainsPartitioner(10, 0.05).partition(table, 1)
    b = DomainsPartitioner(10, 0.05).partition(table, 1)
    assert np.array_equal(a.assignment, b.assignment) and a.client_names == b.client_names
    assert a.fingerprint == b.fingerprint
    c = DomainsPartitioner(10, 0.05).partition(table, 2)
    assert not np.array_equal(a.assignment, c.assignment)


def test_random_client_counts_per_domain():
    table = _table()
    layouts = {DomainsPartitioner(10, 0.01).partition(table, s).client_names for s in range(20)}
    assert len(layouts) > 1  # the extra clients land on different domains for different seeds


def test_pure_function_vectorised_core():
    codes = np.array([0] * 50 + [1] * 30 + [-1] * 5, dtype=np.int64)
    a, r, dom = domains_assignment(codes, 2, 5, 0.1, np.random.default_rng(0))
    assert dom.tolist() == sorted(dom.tolist()) and set(dom.tolist()) == {0, 1}
    sizes = np.bincount(a[a >= 0], minlength=5)
    assert sizes.tolist() == [5 if d == 0 else 3 for d in dom]
    assert np.all(r[-5:] == DropReason.MISSING_VALUE)
    assert np.all((r == 0) == (a >= 0))


def test_at_least_one_row():
    table = _table({"a": 10, "b": 20})
    p = DomainsPartitioner(2, 0.01).partition(table, 0)
    assert p.client_sizes().tolist() == [1, 1]


def test_more_domains_than_clients():
    with pytest.raises(HetbenchError, match="more domains than clients"):
        DomainsPartitioner(3, 0.01).partition(_table(), 0)


def test_missing_column():
    table = _table(column="site")
    with pytest.raises(HetbenchError, match="domain"):
        DomainsPartitioner(4, 0.01).partition(table, 0)


@pytest.mark.parametrize("fraction", [0.0, -0.1, 1.5, float("nan")])
def test_bad_fraction(fraction):
    with pytest.raises(HetbenchError, match="fraction"):
        DomainsPartitioner(4, fraction)


def test_bad_num_clients():
    with pytest.raises(HetbenchError):
        DomainsPartitioner(0, 0.1)


def test_not_enough_rows():
    # 4 domains, 12 clients, 40 % each: at least one domain gets >= 3 clients -> 120 % of its rows
    with pytest.raises(HetbenchError, match=r"usps|syn|svhn|mnist") as e:
        DomainsPartitioner(12, 0.4).partition(_table(), 0)
    assert "rows but its" in str(e.value)


def test_all_missing():
    table = load_table(datasets.Dataset.from_dict({"label": [0, 1], "domain": [None, None]}))
    with pytest.raises(HetbenchError, match="no non-missing"):
        DomainsPartitioner(2, 0.5).partition(table, 0)
