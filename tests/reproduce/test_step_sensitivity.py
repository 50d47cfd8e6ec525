"""hsu-fedavgm-sensitivity's runner (Hsu et al. 2020, Appendix A.1, Fig. 8): every alpha trains the whole
effective-step grid, a grid point takes its best beta, the good region is the grid-mean accuracy over the
best step's, a diverged run scores chance, only the best steps' runs are judged for settling, and bad
settings are one clear error naming the file."""

from __future__ import annotations

import copy
import json

import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import parse_claim
from hetbench.reproduce.criteria import Measurement, evaluate
from hetbench.reproduce.runners.base import Context
from hetbench.reproduce.runners.step_sensitivity import StepSensitivityRunner, region_width
from claim_definitions import raw_claim

TINY = {
    "source": "builtin:digits", "clients": 6, "alphas": [100, 0.1], "test_fraction": 0.2, "split_seed": 0,
    "server_momenta": [0, 0.9], "near_best": 0.95, "effective_steps": [0.1, 1, 10000],
    "train": {"model": "digits-cnn", "image_size": 8, "rounds": 2, "clients_per_round": 2, "batch_size": 32,
              "eval_every": 1, "last_k": 1},
}


@pytest.mark.slow
def test_tiny_grid_scores_every_step_keeps_the_best_beta_and_judges_only_the_best_steps(tmp_path):
    (tmp_path / "work").mkdir()
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0, 1], mode="quick", threads=1)
    runner = StepSensitivityRunner()
    out = runner.run(runner.check_settings(copy.deepcopy(TINY), "t"), ctx)
    region, best, facts = out.measurements["good_region"], out.measurements["best_accuracy"], out.facts
    assert region.x == best.x == [100.0, 0.1] and all(len(s) == 2 for s in region.samples + best.samples)
    assert facts["chance"] == pytest.approx(10.0)
    for i, alpha in enumerate(("alpha=100", "alpha=0.1")):
        cells = facts["grid"][alpha]
        assert list(cells) == ["0.1", "1", "10000"]
        # a client rate of 1,000 (FedAvgM) or 10,000 (FedAvg) diverges for every seed: scored at chance
        assert cells["10000"]["diverged"] == 2 and cells["10000"]["accuracy"] == pytest.approx(10.0)
        assert cells["10000"]["last_change"] is None
        chosen = facts["best_step"][alpha]
        assert chosen["eta_eff"] in (0.1, 1.0) and chosen["beta"] == cells[f"{chosen['eta_eff']:g}"]["beta"]
        means = {s: c["accuracy"] for s, c in cells.items()}
        assert means[f"{chosen['eta_eff']:g}"] == max(means.values())  # the best step: the best seed-mean
        assert sum(best.samples[i]) / 2 == pytest.approx(means[f"{chosen['eta_eff']:g}"], abs=1e-3)
        # the good region: a width in decades, at most the grid's 5 (region_width is checked below)
        assert all(0 <= r <= 5 for r in region.samples[i])
    # the grid runs stay in the scratch folder; the best steps' runs (2 alphas x 2 seeds) are judged
    grid = list((tmp_path / "work" / "grid").rglob("*.json"))
    judged = list((tmp_path / "runs").rglob("*.json"))
    assert len(grid) == 2 * 2 * 2 * 2  # alphas x finite steps x betas x seeds (the diverged runs write nothing)
    assert len(judged) == 4 and all(p.parent.parent.name.startswith("eta_eff-") for p in judged)
    docs = [json.loads(p.read_text()) for p in grid]
    assert {d["algorithm"]["name"] for d in docs} == {"fedavg", "fedavgm"}  # beta 0 is FedAvg
    for d in docs:  # Hsu et al.'s convention: server rate 1, the client at eta_eff (1 - beta)
        beta = d["algorithm"]["params"].get("server_momentum", 0.0)
        assert round(d["config"]["lr"] / (1 - beta), 9) in (0.1, 1.0)


def test_good_region_is_the_width_near_the_best_step_and_the_declared_checks_read_it():
    steps = [0.01, 0.1, 1, 10]  # one decade apart
    # every step within 95% of the best: the whole grid, 3 decades
    assert region_width(steps, [[96.0], [100.0], [99.0], [95.0]], 1, 0.95) == pytest.approx([3.0])
    # the line from 100% down to 90% crosses 95% half way; from a step at chance (a diverged run, 10%) up to
    # the best it crosses 95% a eighteenth of a decade before the best
    assert region_width(steps, [[10.0], [100.0], [90.0], [90.0]], 1, 0.95) == pytest.approx([0.5 + 0.05 / 0.9])
    # a region in pieces sums them (a quarter decade each side of the dip to 80%, a tenth towards 50%); each
    # seed is measured against its own accuracy at the best step
    assert region_width(steps, [[100.0, 50.0], [80.0, 50.0], [100.0, 100.0], [50.0, 100.0]], 2, 0.95) == \
        pytest.approx([0.25 + 0.25 + 0.1, 0.1 + 1.0])
    claim = parse_claim(copy.deepcopy(raw_claim("hsu-fedavgm-sensitivity")), "x.yaml")
    region, accuracy = (c.criterion for c in claim.checks)
    wide = [1.55, 1.53, 1.6, 1.66, 1.56]
    assert evaluate(Measurement([wide, [w - 0.7 for w in wide]], x=[100, 0.05]), region).verdict == "reproduced"
    assert evaluate(Measurement([wide, [w - 0.05 for w in wide]], x=[100, 0.05]), region).verdict == "not reproduced"
    assert evaluate(Measurement([[95.0, 96, 94, 95, 95], [90.0, 91, 89, 90, 90]], x=[100, 0.05]),
                    accuracy).verdict == "reproduced"


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(server_momenta=[0.9, 1.0]), "'server_momenta' must be a non-empty list of distinct numbers"),
    (lambda s: s.update(server_momenta=[]), "'server_momenta' must be a non-empty list"),
    (lambda s: s.update(alphas=[0.05, 100]), "'alphas' must list at least two distinct values from the most"),
    (lambda s: s.update(alphas=[100]), "'alphas' must list at least two"),
    (lambda s: s.update(effective_steps=[1, 0.1, 3]), "'effective_steps' must list at least three distinct values"),
    (lambda s: s["train"].update(lr=0.1), r"train: 'lr' is not a setting of this claim"),
    (lambda s: s.update(tune_seeds=[1]), "unknown setting 'tune_seeds'"),
])
def test_bad_settings_are_one_line_naming_the_file(edit, message):
    data = copy.deepcopy(raw_claim("hsu-fedavgm-sensitivity"))
    edit(data["settings"]["quick"])
    with pytest.raises(HetbenchError, match=message) as info:
        parse_claim(data, "x.yaml")
    assert str(info.value).startswith("x.yaml: settings.quick") and "\n" not in str(info.value)
