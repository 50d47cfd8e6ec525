"""The purity knob of device and domain splits (issue 30, item 3): every client keeps its size and takes a
share lambda of its rows from its own group, the rest equally from the others; it is recorded, verified, and
the feature shift falls as lambda falls; values outside [1/G, 1] are one line and exit 2."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.partitioners.purity import group_mix, mix_groups

SMALL_ISP = ("--crops-per-photo", "5", "--crop-size", "96", "--size", "48", "-q")


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(1, 4), st.integers(5, 40), st.floats(0.0, 1.0), st.integers(0, 10**6))
def test_every_client_keeps_its_size_holds_disjoint_rows_and_gets_lambda_of_its_own_group(groups, per_group, size, t, seed):
    """Equal groups whose rows all go to clients (as in a device split): each client's own share is
    round(lambda * size) exactly, the rest spread over the other groups within one row of equal shares."""
    purity = 1.0 / groups + t * (1.0 - 1.0 / groups)
    group_of_client = np.repeat(np.arange(groups), per_group)
    sizes = np.full(len(group_of_client), size)
    group_of_row = np.repeat(np.arange(groups), per_group * size)
    got = mix_groups(group_of_row, group_of_client, sizes, purity, np.random.default_rng(seed))
    assert np.array_equal(np.bincount(got[got >= 0], minlength=len(sizes)), sizes)  # sizes kept, rows disjoint
    assert (got >= 0).all()  # supply equals demand: every row is taken
    for c, g in enumerate(group_of_client):
        mine = np.bincount(group_of_row[got == c], minlength=groups)
        other = np.delete(mine, g)
        assert abs(int(mine[g]) - round(purity * size)) <= per_group * groups  # balancing moves at most a few rows
        assert other.max() - other.min() <= per_group * groups + 1


def test_the_realised_purity_follows_lambda_and_one_over_g_is_a_uniform_mix():
    rng = np.random.default_rng(0)
    group_of_row = np.repeat(np.arange(4), 500)
    group_of_client = np.repeat(np.arange(4), 5)
    sizes = np.full(20, 100)
    for purity in (1.0, 0.7, 0.4, 0.25):
        got = mix_groups(group_of_row, group_of_client, sizes, purity, rng)
        assert group_mix(got, group_of_row, group_of_client) == pytest.approx(purity, abs=0.005)
    uniform = mix_groups(group_of_row, group_of_client, sizes, 0.25, rng)
    shares = np.array([np.bincount(group_of_row[uniform == c], minlength=4) for c in range(20)])
    assert shares.min() >= 24 and shares.max() <= 26  # every group supplies a quarter of every client


def test_a_small_group_passes_its_excess_on_and_groups_too_small_for_the_clients_are_one_line():
    from hetbench.errors import HetbenchError

    rows = np.array([0] * 30 + [1] * 3)
    got = mix_groups(rows, np.array([0, 0]), np.array([10, 10]), 0.5, np.random.default_rng(0))
    assert np.bincount(got[got >= 0]).tolist() == [10, 10] and np.bincount(rows[got >= 0]).tolist() == [17, 3]
    with pytest.raises(HetbenchError, match="domain 'b' has 3 rows but its share of every client needs"):
        mix_groups(np.array([0] * 12 + [1] * 3), np.array([0, 0]), np.array([10, 10]), 0.5,
                   np.random.default_rng(0), ["domain 'a'", "domain 'b'"])


def test_the_domain_split_mixes_is_recorded_verifies_and_its_feature_shift_falls_with_lambda(tmp_path, run_cli):
    shifts = []
    for purity in ("1", "0.7", "0.4", "0.25"):
        out = tmp_path / f"p{purity}"
        code, _, err = run_cli("partition", "domains", "--clients", "8", "--fraction", "0.2", "--purity", purity,
                               "--out", out, "-q")
        assert code == 0, err
        params = json.loads((out / "hetbench.json").read_text())["recipe"]["partition"]["params"]
        assert params.get("purity", 1.0) == float(purity) and ("purity" in params) == (purity != "1")
        shifts.append(json.loads((out / "report.json").read_text())["feature_shift"]["groups"]["mean_mmd2"])
    assert shifts[0] > shifts[1] > shifts[2] > shifts[3], shifts
    code, stdout, err = run_cli("verify", tmp_path / "p0.4")
    assert code == 0 and stdout.startswith("OK"), stdout + err


@pytest.mark.slow
def test_a_mixed_iso_isp_build_gives_each_client_lambda_of_its_own_renders_and_verifies(tmp_path, run_cli):
    out = tmp_path / "iso"
    code, _, err = run_cli("build", "iso-isp", "--stages", "wb,tone", *SMALL_ISP, "--purity", "0.6", "--out", out)
    assert code == 0, err
    manifest = json.loads((out / "hetbench.json").read_text())
    assert manifest["recipe"]["build"]["params"]["purity"] == 0.6
    names = manifest["client_names"]
    train = pq.read_table(out / manifest["splits"]["train"]["files"][0], columns=["client_id", "device"]).to_pydict()
    own = [names[c].split("/")[0] == d for c, d in zip(train["client_id"], train["device"])]
    assert np.mean(own) == pytest.approx(0.6, abs=0.02)
    code, stdout, err = run_cli("verify", out)
    assert code == 0 and stdout.startswith("OK"), stdout + err


@pytest.mark.parametrize("args, message", [
    (("partition", "domains", "--purity", "0.1"), "--purity must be in [1/G, 1] = [0.25, 1] for G = 4 domains"),
    (("partition", "domains", "--purity", "1.5"), "--purity must be in [1/G, 1]"),
    (("build", "iso-isp", "--purity", "0.1", *SMALL_ISP), "--purity must be in [1/G, 1] = [0.2, 1] for G = 5 devices"),
    (("build", "devices", "--synthetic-color", "3", "--purity", "0.5", "-q"), "takes no"),
    (("partition", "dirichlet", "--purity", "0.5"), "No such option '--purity'"),
])
def test_bad_purity_is_one_line_and_exit_2(tmp_path, run_cli, args, message):
    out = tmp_path / "o"
    code, _, err = run_cli(*args, "--out", out)
    assert code == 2 and message in err and "Traceback" not in err and not out.exists(), err
