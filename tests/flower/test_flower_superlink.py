"""The SuperLink ``hetbench train --engine flower`` runs its Flower apps on: a child of the run, on 127.0.0.1
and an ephemeral port, with a temporary FLWR_HOME; it and everything below it stopped by pid whatever
happens (the run ends, fails, or its caller is interrupted mid-round)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("flwr")

from proc_sockets import listening_addresses_of  # noqa: E402


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="needs Linux /proc")
def test_the_superlink_is_a_loopback_child_with_its_own_flwr_home(owned_processes, monkeypatch, tmp_path):
    from hetbench.flower.superlink import LocalSuperLink

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FLWR_HOME", raising=False)
    with LocalSuperLink() as link:
        root, (proc,) = link.root, link.procs
        assert proc.poll() is None
        assert set(listening_addresses_of([proc.pid])) == {f"127.0.0.1:{link.port}"}
        assert link.env["FLWR_HOME"] == str(root / "flwr-home") and root.stat().st_mode & 0o077 == 0
        assert f'address = "127.0.0.1:{link.port}"' in (root / "flwr-home" / "config.toml").read_text()
        assert link.env["RAY_ADDRESS"] == "local" and link.env["FLWR_DISABLE_UPDATE_CHECK"] == "1"
        pids = dict(link.seen)
        assert len(pids) >= 1
    assert proc.poll() is not None and not root.exists()
    assert not link.alive()
    assert not (tmp_path / "home").exists()


@pytest.mark.slow
def test_an_interrupted_run_stops_every_process_it_started(owned_processes, tmp_path):
    """Ctrl-C (KeyboardInterrupt) in the middle of a run, raised from the round callback as it would be
    from the progress bar: the SuperLink, its SuperExec, flwr-simulation and Ray are all gone afterwards."""
    from hetbench.flower.job import FlowerJob
    from hetbench.flower.simulation import run_flower_simulation
    from hetbench.flower.superlink import PREFIX
    from hetbench.partitioners import IIDPartitioner
    from hetbench.pipeline import make_split

    split = tmp_path / "digits-n2"
    make_split("builtin:digits", IIDPartitioner(2), split, seed=0, test_fraction=0.2, quiet=True)
    rounds = []

    def on_round(r: int, summary: dict) -> None:
        rounds.append(r)
        raise KeyboardInterrupt

    import tempfile

    before = {p.name for p in Path(tempfile.gettempdir()).glob(PREFIX + "*")}
    with pytest.raises(KeyboardInterrupt):
        run_flower_simulation(FlowerJob(str(split), "fedavg", {"rounds": 50, "clients_per_round": 2}), actors=1,
                              on_round=on_round)
    assert rounds == [1]
    # its folder removed (compared as "nothing new": a run in another test process may remove its own meanwhile)
    assert not {p.name for p in Path(tempfile.gettempdir()).glob(PREFIX + "*")} - before
