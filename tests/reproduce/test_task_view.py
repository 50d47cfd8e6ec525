"""The borazjani-thesis claim (Borazjani et al., Sec. III-B and IV): a task's loss ratio across alpha on splits
over its own embeddings' clusters against splits over another column's labels; the ratios are paired by seed;
bad settings are one clear error."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import parse_claim
from hetbench.reproduce.criteria import Measurement, evaluate
from hetbench.reproduce.runners import RUNNERS, Context
from claim_definitions import raw_claim

CLAIM = "borazjani-thesis"

TINY = {"source": "builtin:digits-domains", "task": "domain", "attribute": "label", "clients": 4,
        "alphas": [100, 0.05], "clusters": 4, "embedder": "pixels:4", "split_seed": 0,
        "train": {"model": "digits-cnn", "image_size": 8, "rounds": 1, "clients_per_round": 2, "batch_size": 64,
                  "lr": 0.05, "eval_every": 1, "last_k": 1}}


def test_tiny_run_measures_paired_loss_ratios_of_both_splits(tmp_path):
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0, 1], mode="quick", device="cpu", threads=1)
    ctx.work.mkdir()
    runner = RUNNERS["task_view"]
    out = runner.run(runner.check_settings(copy.deepcopy(TINY), "tiny"), ctx)
    loss = {}
    for path in ctx.runs.rglob("*.json"):  # the split folder says task, method and alpha
        doc = json.loads(path.read_text())
        task, method, alpha = path.parent.name.split("-")[:3]
        assert task == "domain" and doc["split"]["num_classes"] == 4  # the task is the domain
        loss[method, alpha, doc["config"]["seed"]] = doc["final"]["last_k"]["loss"]
    assert len(loss) == 8  # 2 methods x 2 alphas x 2 seeds

    def ratio(method):
        return [loss[method, "a0.05", s] / loss[method, "a100", s] for s in (0, 1)]

    m = out.measurements
    assert m["embedding_ratio"].samples == [pytest.approx(ratio("embedding"))]
    assert m["attribute_ratio"].samples == [pytest.approx(ratio("attribute"))]
    assert m["ratio_difference"].samples == [pytest.approx(np.subtract(ratio("embedding"), ratio("attribute")))]
    emd = out.facts["split_emd"]
    # the attribute split skews the digits, not the domains (the task's labels)
    assert emd["attribute"]["attribute"][1] > max(emd["attribute"]["task"][1], emd["attribute"]["attribute"][0])
    assert set(emd) == {"attribute", "embedding"}


def test_the_shipped_criteria_read_the_gaps_as_the_paper_does():
    claim = parse_claim(raw_claim(CLAIM), f"manifests/claims/{CLAIM}.yaml")
    checks = {c.measure: c.criterion for c in claim.checks}
    wide, flat = Measurement([[4.0, 2.0, 2.7, 3.1, 2.5]]), Measurement([[1.01, 0.87, 1.18, 0.95, 1.05]])
    assert evaluate(wide, checks["embedding_ratio"]).verdict == "reproduced"
    assert evaluate(flat, checks["embedding_ratio"]).verdict == "not reproduced"
    assert evaluate(flat, checks["attribute_ratio"]).verdict == "reproduced"
    assert evaluate(wide, checks["attribute_ratio"]).verdict == "not reproduced"
    assert evaluate(Measurement([[0.1, 0.05, 0.15, 0.1, 0.12]]), checks["ratio_difference"]).verdict == "not reproduced"
    quick = claim.settings["quick"]
    assert quick["alphas"][0] > quick["alphas"][-1] and quick["task"] != quick["attribute"]


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(alphas=[0.05, 100]), "'alphas' must list at least two values, from the highest down"),
    (lambda s: s.update(attribute="domain"), "'task' and 'attribute' must be two columns"),
    (lambda s: s.update(clusters=1), "'clusters' must be at least 2"),
    (lambda s: s["train"].update(rounds=0), "tiny.train"),
    (lambda s: s.update(method="label"), "unknown setting 'method'"),
])
def test_bad_settings_are_one_clear_message(edit, message):
    settings = copy.deepcopy(TINY)
    edit(settings)
    with pytest.raises(HetbenchError) as exc:
        RUNNERS["task_view"].check_settings(settings, "tiny")
    assert str(exc.value).startswith("tiny") and message in str(exc.value) and "\n" not in str(exc.value)


def test_a_column_the_source_lacks_is_one_clear_message(tmp_path):
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0, 1], mode="quick", device="cpu", threads=1)
    ctx.work.mkdir()
    settings = {**copy.deepcopy(TINY), "task": "writer"}
    with pytest.raises(HetbenchError) as exc:
        RUNNERS["task_view"].run(RUNNERS["task_view"].check_settings(settings, "tiny"), ctx)
    assert "writer" in str(exc.value) and "\n" not in str(exc.value)
    assert not any(ctx.runs.rglob("*.json"))
