"""The report plots stay readable with thousands of clients: the heatmap samples, and says so."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.report import compute_report, write_report
from hetbench.report import plots as report_plots
from hetbench.report.plots import MAX_HEATMAP_CLIENTS, sample_by_size_rank


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=1, max_size=2000), st.integers(2, 300))
def test_sample_by_size_rank_is_even_over_sizes(sizes, limit):
    sizes = np.asarray(sizes)
    pick = sample_by_size_rank(sizes, limit)
    if sizes.size <= limit:
        assert pick.tolist() == list(range(sizes.size))
        return
    assert 2 <= pick.size <= limit and np.unique(pick).size == pick.size
    assert sizes[pick].min() == sizes.min() and sizes[pick].max() == sizes.max()
    # evenly spread: the picked clients' size ranks are at most one even step apart
    rank = np.empty(sizes.size, dtype=np.int64)
    rank[np.argsort(sizes, kind="stable")] = np.arange(sizes.size)
    steps = np.diff(np.sort(rank[pick]))
    assert steps.max() <= int(np.ceil((sizes.size - 1) / (limit - 1))) + 1


def _titles(monkeypatch):
    """Record each figure's axis titles and labels as the plots close it."""
    seen = []
    plt = report_plots.pyplot()
    close = plt.close

    def record(fig=None):
        if fig is not None:
            ax = fig.axes[0]
            seen.append((ax.get_title(), ax.get_ylabel(), len(ax.get_yticklabels())))
        close(fig)

    monkeypatch.setattr(plt, "close", record)
    return seen


def _report(k, n, c=10, seed=0, empty=0):
    rng = np.random.default_rng(seed)
    cids = rng.permutation(np.arange(n) % (k - empty))  # every client but the last `empty` holds rows
    return compute_report({"train": cids}, {"train": rng.integers(0, c, n)}, [str(i) for i in range(c)],
                          [f"c{i}" for i in range(k)])


def test_few_clients_are_all_shown_and_named(tmp_path, monkeypatch):
    seen = _titles(monkeypatch)
    write_report(_report(20, 400), tmp_path)
    heat, size, hist = seen
    assert "Label distribution per client" in heat[0] and "20 clients" in heat[1]
    assert heat[2] == 20  # rows labelled with the client names (they are sorted, not in id order)
    assert "empty" not in size[0] and "(20 clients)" in hist[0]


def test_thousands_of_clients_are_sampled_and_the_title_says_so(tmp_path, monkeypatch):
    seen = _titles(monkeypatch)
    write_report(_report(5000, 20_000, empty=100), tmp_path)
    heat, size, hist = seen
    assert f"{MAX_HEATMAP_CLIENTS} of 5,000 clients" in heat[0] and "sampled evenly by size rank" in heat[0]
    assert heat[2] == 0
    assert "100 empty clients not shown" in size[0]
    assert "4,900 clients" in hist[0] and "100 empty not shown" in hist[0]


@pytest.mark.parametrize("k", [1, 3, 250])
def test_plots_are_written_for_any_client_count(tmp_path, k):
    paths = write_report(_report(k, 3 * k), tmp_path)
    assert all((tmp_path / p).stat().st_size > 1000 for p in paths)
