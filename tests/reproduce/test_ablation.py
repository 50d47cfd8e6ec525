"""The dapperfl-ablation claim (DapperFL Table 3): each variant is DapperFL with the hyper-parameters that
remove a module, trained beside the complete DapperFL on dapperfl-domains' split; the measurement is the
paired difference of the accuracies averaged over the domains; bad settings are one clear error."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import parse_claim
from hetbench.reproduce.criteria import Measurement, evaluate
from hetbench.reproduce.runners import RUNNERS, Context
from hetbench.reproduce.runners.ablation import VARIANTS
from claim_definitions import raw_claim

CLAIM = "dapperfl-ablation"

TINY = {"clients": 4, "fraction": 0.1, "split_seed": [0], "variants": ["without_mfp_dar", "without_dar"],
        "train": {"model": "digits-cnn", "image_size": 8, "rounds": 1, "clients_per_round": 4, "local_epochs": 2,
                  "batch_size": 32, "lr": 0.05, "eval_every": 1, "last_k": 1}}


def test_tiny_run_trains_each_variant_beside_the_complete_dapperfl(tmp_path):
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0, 1], mode="quick", device="cpu", threads=1)
    ctx.work.mkdir()
    runner = RUNNERS["dapperfl_ablation"]
    out = runner.run(runner.check_settings(copy.deepcopy(TINY), "tiny"), ctx)
    docs = [json.loads(p.read_text()) for p in ctx.runs.rglob("*.json")]
    assert len(docs) == 6 and {d["algorithm"]["name"] for d in docs} == {"dapperfl"}
    mean = {}
    for d in docs:  # the variants are DapperFL with the module's hyper-parameters at 0, nothing else changed
        params = d["algorithm"]["params"]
        name = next((v for v, hyper in VARIANTS.items() if v in TINY["variants"]
                     and all(params[k] == x for k, x in hyper.items())), "dapperfl")
        if name == "without_dar":
            assert params["alpha0"] == 0.9 and params["dar_gamma"] == 0.0
        acc = d["final"]["last_k"]["group_accuracy"]
        mean[name, d["config"]["seed"]] = float(np.mean(list(acc.values())))
    m = out.measurements["module_gain"]
    assert len(m.samples) == 2 and m.labels[0].startswith("DapperFL - w/o MFP+DAR (Table 3: +2.36)")
    for i, variant in enumerate(TINY["variants"]):
        assert m.samples[i] == pytest.approx([mean["dapperfl", s] - mean[variant, s] for s in (0, 1)])
    assert out.facts["variants"] == {v: VARIANTS[v] for v in TINY["variants"]}


def test_the_shipped_claim_shares_dapperfl_domains_settings_so_its_runs_come_from_the_store():
    claim = parse_claim(raw_claim(CLAIM), f"manifests/claims/{CLAIM}.yaml")
    domains = parse_claim(raw_claim("dapperfl-domains"), "manifests/claims/dapperfl-domains.yaml")
    for mode in ("quick", "full"):
        mine, theirs = claim.settings[mode], domains.settings[mode]
        assert {k: mine[k] for k in ("clients", "fraction", "split_seed", "train")} == {
            k: theirs[k] for k in ("clients", "fraction", "split_seed", "train")}
    assert raw_claim(CLAIM)["settings"]["quick"]["replicates"] == raw_claim("dapperfl-domains")["settings"]["quick"]["replicates"]
    criterion = claim.checks[0].criterion
    assert evaluate(Measurement([[2.3, 2.5, 2.1, 2.6, 2.4]]), criterion).verdict == "reproduced"
    assert evaluate(Measurement([[0.1, -0.3, 0.4, 0.0, 0.2]]), criterion).verdict == "not reproduced"


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(variants=["without_pruning"]), "'variants': unknown variant 'without_pruning'"),
    (lambda s: s.update(hyper={"dar_gamma": 0}), "unknown setting 'hyper'"),
    (lambda s: s.update(clients=3), "'clients' must be at least 4"),
    (lambda s: s.update(published_dapperfl=[1, 2, 3, 4]), "unknown setting 'published_dapperfl'"),
])
def test_bad_settings_are_one_clear_message(edit, message):
    settings = copy.deepcopy(TINY)
    edit(settings)
    with pytest.raises(HetbenchError) as exc:
        RUNNERS["dapperfl_ablation"].check_settings(settings, "tiny")
    assert str(exc.value).startswith("tiny") and message in str(exc.value) and "\n" not in str(exc.value)
