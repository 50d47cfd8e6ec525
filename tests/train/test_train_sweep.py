"""The library's sweep (hetbench.sweep.sweep): what ``hetbench train`` does, in one call."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
import torch

from hetbench.errors import HetbenchError
from hetbench.sweep import sweep
from hetbench.train.algorithms import TrainConfig
from hetbench.train.data import load_federated

CONFIG = TrainConfig(rounds=1, clients_per_round=2, batch_size=16)


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split

    out = tmp_path_factory.mktemp("split") / "digits"
    make_split("builtin:digits", DirichletPartitioner(4, alpha=0.5), out, quiet=True)
    return out


def _results_folder(split):
    """``digits-<fingerprint[:12]>``: where the sweeps of ``split`` write (its name and fingerprint)."""
    return f"digits-{json.loads((split / 'hetbench.json').read_text())['split_fingerprint'][:12]}"


def test_sweep_runs_central_first_per_seed_and_writes_one_file_per_run(split, tmp_path):
    threads = torch.get_num_threads()
    runs = sweep(split, ["fedavg", "central"], [0, 1], CONFIG, out=tmp_path, quiet=True, threads=1)
    assert [(r.algorithm, r.seed, r.path.name) for r in runs] == [
        ("central", 0, "central-s0.json"), ("fedavg", 0, "fedavg-s0.json"),
        ("central", 1, "central-s1.json"), ("fedavg", 1, "fedavg-s1.json"),
    ]
    assert torch.get_num_threads() == threads  # restored
    for r in runs:
        assert r.path.parent == tmp_path / _results_folder(split)
        assert json.loads(r.path.read_text()) == json.loads(json.dumps(r.doc))
        assert r.doc["config"]["seed"] == r.seed and r.doc["config"]["rounds"] == 1
    central, fedavg = runs[0].doc["final"], runs[1].doc["final"]
    assert fedavg["relative_accuracy"] == pytest.approx(fedavg["accuracy"] / central["accuracy"], rel=1e-4)


def test_sweep_checks_everything_before_training(split, tmp_path):
    with pytest.raises(HetbenchError, match="algo names an algorithm twice"):
        sweep(split, "fedavg,FedAvg", config=CONFIG, out=tmp_path, quiet=True)
    with pytest.raises(HetbenchError, match="mu must be in"):
        sweep(split, "fedprox", config=CONFIG, hyper={"mu": -1.0}, out=tmp_path, quiet=True)
    with pytest.raises(HetbenchError, match="^mu is not an option of fedavg or scaffold$"):  # not silently ignored
        sweep(split, "fedavg,scaffold", config=CONFIG, hyper={"mu": 0.1}, out=tmp_path, quiet=True)
    with pytest.raises(HetbenchError, match="rounds must be a positive number"):
        sweep(split, "fedavg", config=TrainConfig(rounds=0), out=tmp_path, quiet=True)
    with pytest.raises(HetbenchError, match="threads must be a positive number"):
        sweep(split, "fedavg", config=CONFIG, out=tmp_path, quiet=True, threads=0)
    assert not any(tmp_path.iterdir())
    (runs,) = sweep(split, "fedprox", 3, CONFIG, hyper={"mu": 0.01}, out=tmp_path, quiet=True, threads=1)
    assert runs.path.name == "fedprox-mu0.01-s3.json"
    with pytest.raises(HetbenchError, match="overwrite"):
        sweep(split, "fedprox", 3, CONFIG, hyper={"mu": 0.01}, out=tmp_path, quiet=True)


# ---- issue 12: group protocols, --skip-existing, --resume ------------------------------------------

FAST = TrainConfig(rounds=2, clients_per_round=3, batch_size=16)


@pytest.fixture(scope="module")
def domains(tmp_path_factory):
    """DapperFL's four digit domains, 12 clients (3 per domain), a small share of each domain."""
    from hetbench.builders.digits_domains import build_digits_domains

    folder, _ = build_digits_domains(tmp_path_factory.mktemp("split") / "domains", fraction=0.05, quiet=True)
    return folder


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _no_timing(doc):
    return {k: v for k, v in json.loads(json.dumps(doc)).items() if k != "timing"}


def test_train_groups_train_only_their_clients_and_score_every_group(domains, tmp_path):
    config = dataclasses.replace(FAST, train_groups=("usps", "mnist"))
    central, fedavg = sweep(domains, "fedavg,central", 0, config, out=tmp_path, quiet=True, threads=1)
    assert [central.path.name, fedavg.path.name] == ["central-train_mnist+usps-s0.json", "fedavg-train_mnist+usps-s0.json"]
    doc = fedavg.doc
    assert doc["config"]["train_groups"] == ["mnist", "usps"] and doc["split"]["num_clients"] == 6
    assert {g: v["trained_on"] for g, v in doc["groups"].items()} == {
        "mnist": True, "mnistm": False, "syn": False, "usps": True}
    assert fedavg.groups == "train_mnist+usps" and not fedavg.skipped
    assert fedavg.doc["final"]["relative_accuracy"] == pytest.approx(
        doc["final"]["accuracy"] / central.doc["final"]["accuracy"], rel=1e-4)
    # the same groups in another order are the same run (and the same file)
    with pytest.raises(HetbenchError, match="already exists"):
        sweep(domains, "fedavg", 0, dataclasses.replace(FAST, train_groups=("mnist", "usps")), out=tmp_path, quiet=True)


def test_test_groups_evaluate_only_those_groups(domains, tmp_path):
    (run,) = sweep(domains, "fedavg", 0, dataclasses.replace(FAST, test_groups=("syn",)), out=tmp_path, quiet=True,
                   threads=1)
    assert run.path.name == "fedavg-test_syn-s0.json"
    assert list(run.doc["groups"]) == ["syn"] and run.doc["split"]["num_test"] == run.doc["groups"]["syn"]["num_test"]
    assert run.doc["split"]["num_clients"] == 12


def test_leave_one_group_out_trains_once_per_held_out_domain(domains, tmp_path):
    runs = sweep(domains, "central,fedavg", 0, FAST, out=tmp_path, quiet=True, threads=1,
                 protocol="leave-one-group-out")
    assert [r.path.name for r in runs] == [f"{a}-logo_{d}-s0.json" for d in ("mnist", "mnistm", "syn", "usps")
                                           for a in ("central", "fedavg")]
    data = load_federated(str(domains))
    per_domain = {g: int((data.client_group == i).sum()) for i, g in enumerate(data.group_names)}
    assert sum(per_domain.values()) == 12
    for central, fedavg in zip(runs[::2], runs[1::2]):
        held = fedavg.path.name.split("logo_")[1].split("-s0")[0]
        groups = fedavg.doc["groups"]
        assert [g for g, v in groups.items() if not v["trained_on"]] == [held]
        assert fedavg.doc["final"]["unseen_accuracy"] == pytest.approx(groups[held]["accuracy"], abs=1e-3)
        assert fedavg.doc["split"]["num_clients"] == 12 - per_domain[held]  # the held-out clients sit out
        assert fedavg.doc["final"]["relative_accuracy"] == pytest.approx(  # against its own central run
            fedavg.doc["final"]["accuracy"] / central.doc["final"]["accuracy"], rel=1e-4)


def test_group_errors_come_before_any_training(domains, split, tmp_path):
    bad = {
        "'svhn' is not a group of column 'domain' of this split (groups: mnist, mnistm, syn, usps)":
            dict(config=dataclasses.replace(FAST, train_groups=("svhn",))),
        "protocol 'loo' is not one of leave-one-group-out": dict(config=FAST, protocol="loo"),
        "drop train_groups": dict(config=dataclasses.replace(FAST, train_groups=("syn",)),
                                    protocol="leave-one-group-out"),
    }
    for needle, kwargs in bad.items():
        with pytest.raises(HetbenchError, match=re.escape(needle)):
            sweep(domains, "fedavg", 0, out=tmp_path, quiet=True, **kwargs)
    with pytest.raises(HetbenchError, match="'9' is not a group of column 'client_id'"):
        sweep(split, "fedavg", 0, dataclasses.replace(FAST, train_groups=("9",)), out=tmp_path, quiet=True)
    assert not any(tmp_path.iterdir())


def test_skip_existing_keeps_results_and_runs_the_rest(split, tmp_path, capsys):
    (first,) = sweep(split, "central", 0, FAST, out=tmp_path, quiet=True, threads=1)
    kept = _files(tmp_path)
    with pytest.raises(HetbenchError, match="already exists; pass skip_existing"):
        sweep(split, "central,fedavg", 0, FAST, out=tmp_path, quiet=True)
    runs = sweep(split, "central,fedavg", 0, FAST, out=tmp_path, threads=1, skip_existing=True)
    assert "skipped 1 existing result: central-s0.json" in capsys.readouterr().err
    assert [(r.path.name, r.skipped) for r in runs] == [("central-s0.json", True), ("fedavg-s0.json", False)]
    central = f"{_results_folder(split)}/central-s0.json"
    assert _files(tmp_path)[central] == kept[central]  # untouched
    assert runs[0].doc == first.doc | {"timing": runs[0].doc["timing"]}
    # the kept central run still gives the new runs their relative accuracy
    assert runs[1].doc["final"]["relative_accuracy"] == pytest.approx(
        runs[1].doc["final"]["accuracy"] / first.doc["final"]["accuracy"], rel=1e-4)


def test_skip_existing_refuses_a_result_written_with_other_options(split, tmp_path):
    sweep(split, "fedavg", 0, FAST, out=tmp_path, quiet=True, threads=1)
    before = _files(tmp_path)
    with pytest.raises(HetbenchError, match=r"written with other options \(rounds 2, not 3\)"):
        sweep(split, "fedavg,fedprox", 0, dataclasses.replace(FAST, rounds=3), out=tmp_path, quiet=True,
              skip_existing=True)
    with pytest.raises(HetbenchError, match="cannot be combined with overwrite"):
        sweep(split, "fedavg", 0, FAST, out=tmp_path, quiet=True, skip_existing=True, overwrite=True)
    (tmp_path / _results_folder(split) / "fedavg-s0.json").write_text("{not json")
    with pytest.raises(HetbenchError, match="cannot be read"):
        sweep(split, "fedavg", 0, FAST, out=tmp_path, quiet=True, skip_existing=True)
    assert set(_files(tmp_path)) == set(before)


class Killed(BaseException):
    """Stands for the process being killed in the middle of a run."""


def _kill_at(monkeypatch, algorithm: str, round_index: int) -> None:
    """The next run of ``algorithm`` in a sweep dies after ``round_index`` rounds."""
    import hetbench.train.simulation as simulation

    real = simulation.run_training

    def dying(data, algo, config, *args, on_round=None, **kwargs):
        def hook(r, summary):
            if on_round is not None:
                on_round(r, summary)
            if algo.name == algorithm and r == round_index:
                raise Killed()
        return real(data, algo, config, *args, on_round=hook, **kwargs)

    monkeypatch.setattr(simulation, "run_training", dying)


def test_resume_continues_a_killed_sweep_and_equals_an_uninterrupted_one(domains, tmp_path, monkeypatch, capsys):
    from hetbench.train.checkpoint import checkpoint_path

    config = dataclasses.replace(FAST, rounds=4, checkpoint_every=1, train_groups=("mnist", "syn"))
    whole = sweep(domains, "fedavg,fedprox", 0, config, out=tmp_path / "whole", quiet=True, threads=1)
    assert not [p for p in (tmp_path / "whole").rglob("*") if p.is_file() and p.suffix != ".json"]  # no checkpoint left
    out = tmp_path / "killed"
    with monkeypatch.context() as m:
        _kill_at(m, "fedprox", 3)
        with pytest.raises(Killed):
            sweep(domains, "fedavg,fedprox", 0, config, out=out, quiet=True, threads=1)
    fedavg_path, fedprox_path = (out / r.path.relative_to(tmp_path / "whole") for r in whole)
    assert fedavg_path.is_file() and not fedprox_path.exists() and checkpoint_path(fedprox_path).is_file()
    with pytest.raises(HetbenchError, match="already exists"):  # neither flag: refused, nothing touched
        sweep(domains, "fedavg,fedprox", 0, config, out=out, quiet=True)
    runs = sweep(domains, "fedavg,fedprox", 0, config, out=out, threads=1, resume=True)
    err = capsys.readouterr().err
    assert "skipped 1 existing result: fedavg-train_mnist+syn-s0.json" in err
    assert "resuming 1 run from its checkpoint: fedprox-train_mnist+syn-s0.json" in err
    assert [(r.skipped, r.resumed) for r in runs] == [(True, False), (False, True)]
    assert _no_timing(json.loads(fedprox_path.read_text())) == _no_timing(whole[1].doc)
    assert not checkpoint_path(fedprox_path).exists()  # deleted once the result was written
    again = sweep(domains, "fedavg,fedprox", 0, config, out=out, quiet=True, resume=True)  # all done: all kept
    assert [(r.skipped, r.resumed, r.afresh) for r in again] == [(True, False, False)] * 2


def test_resume_refuses_before_training(split, tmp_path, monkeypatch):
    from hetbench.train.checkpoint import checkpoint_path

    config = dataclasses.replace(FAST, rounds=3, checkpoint_every=1)
    with pytest.raises(HetbenchError, match="resume .* cannot be combined with overwrite"):
        sweep(split, "fedavg", 0, config, out=tmp_path, quiet=True, resume=True, overwrite=True)
    with monkeypatch.context() as m:
        _kill_at(m, "fedavg", 2)
        with pytest.raises(Killed):
            sweep(split, "fedavg", 0, config, out=tmp_path, quiet=True, threads=1)
    (ckpt,) = [p for p in (tmp_path / _results_folder(split)).iterdir()]
    assert ckpt == checkpoint_path(tmp_path / _results_folder(split) / "fedavg-s0.json")
    before = _files(tmp_path)
    with pytest.raises(HetbenchError):  # the checkpoint is of another configuration (learning rate)
        sweep(split, "fedavg", 0, dataclasses.replace(config, lr=0.01), out=tmp_path, quiet=True, resume=True)
    assert _files(tmp_path) == before


def test_resume_starts_runs_without_a_checkpoint_afresh_so_the_same_command_can_be_requeued(split, tmp_path, capsys):
    """A job killed before its first checkpoint (or run without --checkpoint-every) is re-queued with the same
    command line: --resume starts it at round 1, says so, and gives the uninterrupted results."""
    config = dataclasses.replace(FAST, rounds=2, checkpoint_every=1)
    (plain,) = sweep(split, "fedavg", 0, config, out=tmp_path / "plain", quiet=True, threads=1)
    (requeued,) = sweep(split, "fedavg", 0, config, out=tmp_path / "requeued", threads=1, resume=True)
    assert "starting 1 run afresh: no checkpoint of it" in capsys.readouterr().err
    assert (requeued.afresh, requeued.resumed, requeued.skipped) == (True, False, False)
    assert _no_timing(requeued.doc) == _no_timing(plain.doc)
