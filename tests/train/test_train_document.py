"""The results document's stable statistics (best round, mean of the last k) and group-protocol fields."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from hetbench.train.algorithms import make_algorithm
from hetbench.train.algorithms.config import TrainConfig
from hetbench.train.document import History, results_document
from hetbench.train.result_stats import best_of, curve_statistics, group_protocol, mean_last, pooled_accuracy
from hetbench.train.results import EVAL_METRICS, SCHEMA_VERSION, dumps
from hetbench.train.simulation import run_training

pytestmark = pytest.mark.usefixtures("one_thread")

# the embedded demo's central run: up to 58 %, then down to 18 % in its last rounds
DEMO = [30.0, 45.0, 58.0, 52.0, 40.0, 18.0]


def _summary(acc: float, loss: float, var: float = 1.0) -> dict:
    return {"accuracy": acc, "client_accuracy": None, "worst_group_accuracy": acc - 5.0,
            "group_accuracy_variance": var, "loss": loss, "client_accuracy_p10": None, "client_accuracy_p90": None}


def _document(rounds: list[int], per_group: dict[str, list[float]], counts: dict[str, int], **config) -> dict:
    """A document built from hand-made curves (``per_group``: each group's accuracy per evaluation)."""
    names = sorted(per_group)
    history = History(names)
    for i, r in enumerate(rounds):
        accs = {g: per_group[g][i] for g in names}
        total = sum(counts.values())
        acc = sum(accs[g] * counts[g] for g in names) / total
        history.add_train(r, 1.0)
        history.add_eval(r, _summary(acc, 2.0 - i * 0.1), {g: {"accuracy": accs[g]} for g in names}, None)
    groups = {g: {"accuracy": per_group[g][-1], "num_test": counts[g]} for g in names}
    data = SimpleNamespace(name="s", path="s", fingerprint="f" * 64, num_clients=4, num_train=40,
                           num_test=sum(counts.values()), num_classes=3, image_size=8, group_by="domain",
                           group_names=names)
    algo = SimpleNamespace(name="fedavg", params={}, citation="")
    return results_document(data=data, algorithm=algo, config=TrainConfig(rounds=rounds[-1], **config),
                            model_name="lenet", model_info={}, history=history, groups=groups, log={}, clients=None,
                            central_accuracy=None, timing={"wall_time_s": 1.0})


def test_best_and_last_k_of_a_falling_curve():
    doc = _document(list(range(1, 7)), {"all": DEMO}, {"all": 10}, last_k=3)
    final = doc["final"]
    assert doc["schema_version"] == SCHEMA_VERSION == 2
    assert final["accuracy"] == 18.0  # the last round
    assert final["best"]["accuracy"] == {"value": 58.0, "round": 3}
    assert final["last_k"]["k"] == 3 and final["last_k"]["rounds"] == [4, 5, 6]
    assert final["last_k"]["accuracy"] == pytest.approx((52.0 + 40.0 + 18.0) / 3, abs=1e-6)
    assert final["last_k"]["worst_group_accuracy"] == pytest.approx((47.0 + 35.0 + 13.0) / 3, abs=1e-6)
    # loss (and variance) are best when lowest: the loss falls 0.1 per evaluation here
    assert final["best"]["loss"] == {"value": pytest.approx(1.5), "round": 6}
    assert final["best"]["client_accuracy"] is None and final["last_k"]["client_accuracy"] is None
    assert final["best"]["group_accuracy"]["all"] == {"value": 58.0, "round": 3}
    assert final["last_k"]["group_accuracy"]["all"] == pytest.approx(36.666667)
    assert set(EVAL_METRICS) <= set(final["best"]) and set(EVAL_METRICS) <= set(final["last_k"])
    assert "trained_on_accuracy" not in final and "trained_on" not in doc["groups"]["all"]


def test_fewer_evaluations_than_k_average_all_of_them_and_say_so():
    doc = _document([1, 2], {"all": [40.0, 60.0]}, {"all": 10}, last_k=5)
    assert doc["final"]["last_k"]["k"] == 2 and doc["final"]["last_k"]["rounds"] == [1, 2]
    assert doc["final"]["last_k"]["accuracy"] == 50.0
    assert mean_last([], 3) is None and best_of([], []) is None


def test_lower_is_better_variance_and_ties_take_the_earliest_round():
    assert best_of([2, 4, 6], [3.0, 1.0, 1.0], lower_is_better=True) == {"value": 1.0, "round": 4}
    assert best_of([2, 4, 6], [None, 7.0, float("nan")]) == {"value": 7.0, "round": 4}


def _run(data, **config) -> dict:
    cfg = TrainConfig(**{"batch_size": 4, "lr": 0.1, "clients_per_round": 2, **config})
    return run_training(data, make_algorithm("fedavg"), cfg)


def test_eval_every_statistics_follow_the_evaluated_rounds(tiny_data):
    """rounds 7 with eval_every 3: evaluations at 3, 6 and 7 (the last round is always evaluated)."""
    data = tiny_data(sizes=(8, 8, 8, 8))
    doc = _run(data, rounds=7, eval_every=3, last_k=2)
    curves, final = doc["curves"], doc["final"]
    assert curves["round"] == [3, 6, 7]
    assert final["last_k"]["k"] == 2 and final["last_k"]["rounds"] == [6, 7]
    assert final["last_k"]["accuracy"] == pytest.approx(sum(curves["accuracy"][1:]) / 2, abs=1e-6)
    best = max(curves["accuracy"])
    assert final["best"]["accuracy"] == {"value": best, "round": curves["round"][curves["accuracy"].index(best)]}
    low = min(curves["loss"])
    assert final["best"]["loss"] == {"value": low, "round": curves["round"][curves["loss"].index(low)]}
    json.loads(dumps(doc))  # plain JSON, no NaN


def test_the_document_is_deterministic_and_carries_the_device(tiny_data):
    data = tiny_data(sizes=(8, 8, 8, 8))
    docs = [_run(data, rounds=3, eval_every=1) for _ in range(2)]
    for d in docs:
        d.pop("timing")
    assert dumps(docs[0]) == dumps(docs[1])
    doc = _document([1], {"all": [50.0]}, {"all": 10})
    assert "device" not in doc
    data_ns = SimpleNamespace(name="s", path="s", fingerprint="f", num_clients=1, num_train=1, num_test=1,
                              num_classes=2, image_size=8, group_by="all", group_names=["all"])
    h = History(["all"])
    h.add_eval(1, _summary(50.0, 1.0), {"all": {"accuracy": 50.0}}, None)
    doc = results_document(data=data_ns, algorithm=SimpleNamespace(name="fedavg", params={}, citation=""),
                           config=TrainConfig(rounds=1), model_name="lenet", model_info={}, history=h,
                           groups={"all": {"accuracy": 50.0, "num_test": 1}}, log={}, clients=None,
                           central_accuracy=None, timing={"wall_time_s": 0.5}, device={"type": "cuda", "name": "H100"})
    assert doc["device"] == {"type": "cuda", "name": "H100"} and "device" not in doc["timing"]


def test_group_drop_arithmetic_train_on_the_baseline():
    """HeteroSwitch Fig. 3: train on the baseline ISP, test on each variant; the drop is in points."""
    counts = {"base": 100, "tone": 100, "wb": 300}
    doc = _document([1, 2, 3], {"base": [60.0, 80.0, 90.0], "tone": [50.0, 70.0, 72.5], "wb": [40.0, 75.0, 60.0]},
                    counts, train_groups=("base",), last_k=2)
    g, final = doc["groups"], doc["final"]
    assert g["base"] == {"accuracy": 90.0, "num_test": 100, "trained_on": True, "drop": 0.0}
    assert g["tone"]["trained_on"] is False and g["tone"]["drop"] == 17.5
    assert g["wb"]["drop"] == 30.0
    assert final["trained_on_accuracy"] == 90.0
    assert final["unseen_accuracy"] == pytest.approx((72.5 * 100 + 60.0 * 300) / 400)  # pooled test rows
    assert final["mean_drop"] == pytest.approx((17.5 + 30.0) / 2)  # unweighted over unseen groups
    # statistics of the derived curves: last 2 evaluations, best = lowest drop
    assert final["last_k"]["group_drop"]["wb"] == pytest.approx((5.0 + 30.0) / 2)
    assert final["last_k"]["mean_drop"] == pytest.approx(((10.0 + 5.0) / 2 + (17.5 + 30.0) / 2) / 2)
    assert final["best"]["group_drop"]["wb"] == {"value": 5.0, "round": 2}
    assert final["best"]["trained_on_accuracy"] == {"value": 90.0, "round": 3}
    assert final["best"]["mean_drop"] == {"value": 7.5, "round": 2}


def test_pooled_trained_on_accuracy_weighs_groups_by_test_rows():
    groups = {"a": {"accuracy": 90.0, "num_test": 300}, "b": {"accuracy": 50.0, "num_test": 100},
              "c": {"accuracy": 40.0, "num_test": 50}, "empty": {"accuracy": 0.0, "num_test": 0}}
    out, final = group_protocol(groups, ["a", "b"])
    assert final["trained_on_accuracy"] == 80.0  # (90 * 300 + 50 * 100) / 400
    assert out["a"]["drop"] == -10.0 and out["b"]["drop"] == 30.0 and out["c"]["drop"] == 40.0
    assert out["empty"]["drop"] is None and out["empty"]["trained_on"] is False
    assert final["unseen_accuracy"] == 40.0 and final["mean_drop"] == 40.0
    assert pooled_accuracy([None, 70.0], [5, 5]) == 70.0


def test_trained_on_groups_without_test_rows_give_null_drops():
    groups = {"a": {"accuracy": 90.0, "num_test": 10}, "b": {"accuracy": 50.0, "num_test": 10}}
    out, final = group_protocol(groups, ["elsewhere"])  # e.g. --test-groups left the trained-on groups out
    assert final == {"mean_drop": None, "trained_on_accuracy": None, "unseen_accuracy": 70.0}
    assert out["a"]["drop"] is None and not out["a"]["trained_on"]
    stats = curve_statistics({"round": [1], "group_accuracy": {"a": [90.0], "b": [50.0]}}, groups, ["elsewhere"], 3)
    assert stats["best"]["mean_drop"] is None and stats["last_k"]["trained_on_accuracy"] is None
