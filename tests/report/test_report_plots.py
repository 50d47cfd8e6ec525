"""The report plots read at a glance: client rows in ``client_id`` order with integer ticks, linear
axes when sizes barely vary and no size plot when they are equal, legends, per-device/per-domain
plots instead of flat size curves and one-bar histograms, and bounded work at 100,000 clients."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.report import compute_report, write_report
from hetbench.report import plots as report_plots
from hetbench.report.groups import client_groups
from hetbench.report.axes import MAX_CLIENT_TICKS, tick_rows
from hetbench.report.plots import LOG_SIZE_RATIO, MAX_HEATMAP_CLIENTS, sample_by_size_rank, size_scale


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


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 100_000))
def test_tick_rows_are_few_whole_rows(n):
    ticks = tick_rows(n)
    assert ticks.dtype.kind == "i" and ticks[0] == 0 and ticks.max() < n and ticks.size <= MAX_CLIENT_TICKS
    assert np.all(np.diff(ticks) > 0)


def _figures(monkeypatch):
    """Record every figure the plots close: per axes its title, labels, tick labels, scales, legend."""
    seen = []
    plt = report_plots.pyplot()
    close = plt.close

    def record(fig=None):
        if fig is not None:
            axes = [{
                "title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                "yticks": [t.get_text() for t in ax.get_yticklabels()], "ytickpos": list(ax.get_yticks()),
                "xticks": [t.get_text() for t in ax.get_xticklabels()],
                "xscale": ax.get_xscale(), "yscale": ax.get_yscale(), "legend": ax.get_legend(),
                "ylim": ax.get_ylim(),
            } for ax in fig.axes]
            seen.append(axes)
        close(fig)

    monkeypatch.setattr(plt, "close", record)
    return seen


def _report(k, n, c=10, seed=0, empty=0, names=None, sizes=None):
    rng = np.random.default_rng(seed)
    if sizes is not None:
        cids = np.repeat(np.arange(k), sizes)
    else:
        cids = rng.permutation(np.arange(n) % (k - empty))  # every client but the last `empty` holds rows
    return compute_report({"train": cids}, {"train": rng.integers(0, c, cids.size)}, [str(i) for i in range(c)],
                          names or [f"c{i}" for i in range(k)])


def test_heatmap_rows_are_client_ids_in_order_with_integer_ticks(tmp_path, monkeypatch):
    seen = _figures(monkeypatch)
    write_report(_report(20, 410), tmp_path)
    heat = seen[0][0]
    assert "Label distribution per client" in heat["title"] and heat["ylabel"].startswith("client_id")
    assert heat["yticks"] == [str(i) for i in range(20)]
    assert heat["ytickpos"] == list(range(20))  # the row of client i is row i, not a re-sorted position


def test_heatmap_ticks_of_many_clients_are_round_ids(tmp_path, monkeypatch):
    seen = _figures(monkeypatch)
    write_report(_report(72, 72 * 5), tmp_path)
    heat = seen[0][0]
    ids = [int(t) for t in heat["yticks"]]
    assert ids == [int(p) for p in heat["ytickpos"]] and ids[:3] == [0, 5, 10] and len(ids) <= 30


def test_sizes_that_barely_vary_get_linear_axes_from_zero(tmp_path, monkeypatch):
    seen = _figures(monkeypatch)
    sizes = np.array([72] * 17 + [71] * 3)
    assert size_scale(sizes) == "linear"
    paths = write_report(_report(20, 0, sizes=sizes), tmp_path)
    assert "plots/client_size_rank.png" in paths
    size = seen[1][0]
    assert size["xscale"] == size["yscale"] == "linear" and size["ylim"][0] == 0
    assert "min 71" in size["title"] and "max 72" in size["title"]


def test_sizes_spanning_a_decade_get_log_axes(tmp_path, monkeypatch):
    seen = _figures(monkeypatch)
    sizes = np.array([5, 8, 20, 60, 5 * int(LOG_SIZE_RATIO)])
    assert size_scale(sizes) == "log"
    write_report(_report(5, 0, sizes=sizes), tmp_path)
    assert seen[1][0]["yscale"] == "log"


def test_equal_sizes_get_no_size_plot(tmp_path, monkeypatch):
    seen = _figures(monkeypatch)
    paths = write_report(_report(20, 400), tmp_path)
    assert paths == ["plots/label_distribution_heatmap.png", "plots/emd_histogram.png"]
    assert not (tmp_path / "plots" / "client_size_rank.png").exists()
    assert len(seen) == 2 and seen[1][0]["legend"] is not None  # the histogram says what its line is


def test_thousands_of_clients_are_sampled_in_id_order_and_the_axis_says_so(tmp_path, monkeypatch):
    seen = _figures(monkeypatch)
    write_report(_report(5000, 20_003, empty=100), tmp_path)
    heat, size, hist = (axes[0] for axes in seen)
    assert f"{MAX_HEATMAP_CLIENTS} of 5,000 clients" in heat["title"] and "sampled evenly by size rank" in heat["title"]
    assert f"{MAX_HEATMAP_CLIENTS} of 5,000 clients" in heat["ylabel"]
    ids = [int(t) for t in heat["yticks"]]
    assert 2 <= len(ids) <= 30 and ids == sorted(ids) and ids[-1] < 5000  # real client ids, ascending
    assert "100 empty clients not shown" in size["title"]
    assert "4,900 clients" in hist["title"] and "100 empty not shown" in hist["title"]


@pytest.mark.parametrize("k", [1, 3, 250])
def test_plots_are_written_for_any_client_count(tmp_path, k):
    paths = write_report(_report(k, 3 * k + 1), tmp_path)
    assert all((tmp_path / p).stat().st_size > 1000 for p in paths)


def _device_report(per_device=(6, 12, 2), rows=45, c=7):
    names = [f"dev{d}/{k:02d}" for d, n in enumerate(per_device) for k in range(n)]
    rng = np.random.default_rng(1)
    cids, labels = [], []
    start = 0
    for n in per_device:  # every device sees the same rows, split over its clients
        cids.append(start + rng.integers(0, n, rows))
        labels.append(np.arange(rows) % c)
        start += n
    rep = compute_report({"train": np.concatenate(cids)}, {"train": np.concatenate(labels)},
                         [f"class{i}" for i in range(c)], names)
    rep["devices"] = {f"dev{d}": {"clients": n} for d, n in enumerate(per_device)}
    return rep


def test_device_splits_get_per_device_plots_not_the_size_curve_or_emd_bar(tmp_path, monkeypatch):
    seen = _figures(monkeypatch)
    paths = write_report(_device_report(), tmp_path)
    assert paths == ["plots/label_distribution_heatmap.png", "plots/device_client_samples.png",
                     "plots/device_label_distribution.png"]
    assert not (tmp_path / "plots" / "emd_histogram.png").exists()
    assert not (tmp_path / "plots" / "client_size_rank.png").exists()
    samples, labels = seen[1][0], seen[2][0]
    assert samples["xlabel"] == "client_id" and samples["legend"] is not None
    legend = [t.get_text() for t in samples["legend"].get_texts()]
    assert legend[0].startswith("dev0: 6 clients, 45 samples")
    assert [t.split(" (")[0] for t in labels["yticks"]] == ["dev0", "dev1", "dev2"]
    assert seen[0][0]["yticks"][:3] == ["0", "1", "2"]  # the heatmap keeps client ids, devices marked beside


def test_domain_names_make_domain_plots_and_other_names_do_not():
    assert client_groups({}, ["mnist/0", "mnist/1", "usps/0"]).kind == "domain"
    assert client_groups({"devices": {}}, ["a/0", "b/0"]).kind == "device"
    for names in (["client_00", "client_01"], ["a/1", "a/2"], ["a/0", "b/0", "a/1"], ["x/0", "y"]):
        assert client_groups({}, names) is None, names


def test_a_hundred_thousand_clients_stay_bounded(tmp_path):
    """Sampling and aggregation keep every picture small (speed is a benchmark, not this test)."""
    k = 100_000
    rng = np.random.default_rng(0)
    cids = np.concatenate([np.arange(k), rng.integers(0, k, 150_000)])
    rep = compute_report({"train": cids}, {"train": rng.integers(0, 50, cids.size)}, [str(i) for i in range(50)],
                         [f"user{i:06d}" for i in range(k)])
    paths = write_report(rep, tmp_path / "users")
    assert len(paths) == 3
    assert all(1000 < (tmp_path / "users" / p).stat().st_size < 1_000_000 for p in paths)
    names = [f"dev{d}/{i:05d}" for d in range(10) for i in range(k // 10)]  # 10 devices x 10,000 clients
    rep = compute_report({"train": cids}, {"train": rng.integers(0, 50, cids.size)}, [str(i) for i in range(50)], names)
    rep["devices"] = {f"dev{d}": {} for d in range(10)}
    paths = write_report(rep, tmp_path / "devices")
    assert paths[1:] == ["plots/device_client_samples.png", "plots/device_label_distribution.png"]
    assert all(1000 < (tmp_path / "devices" / p).stat().st_size < 1_000_000 for p in paths)


def test_heatmap_shows_each_clients_row_count_beside_its_shares(tmp_path, monkeypatch):
    """Shares alone make a 3-row client and a 900-row one look alike (64 classes, 30 clients)."""
    bars = []
    plt = report_plots.pyplot()
    close = plt.close

    def record(fig=None):
        if fig is not None and not bars:
            heat, size_panel = fig.axes[:2]
            assert heat.get_shared_y_axes().joined(heat, size_panel)  # one row per client in both
            bars.append(([p.get_y() + p.get_height() / 2 for p in size_panel.patches],
                         [p.get_x() + p.get_width() for p in size_panel.patches],
                         size_panel.get_xscale(), size_panel.get_title()))
        close(fig)

    monkeypatch.setattr(plt, "close", record)
    sizes = np.round(np.geomspace(3, 900, 30)).astype(int)[::-1]
    write_report(_report(30, 0, c=64, sizes=sizes), tmp_path)
    rows, ends, scale, title = bars[0]
    assert rows == list(range(30)) and np.allclose(ends, sizes)  # client i's bar on row i, as long as its rows
    assert scale == "log" and title == "3-900 rows"
