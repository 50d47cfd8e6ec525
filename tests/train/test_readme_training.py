"""The README's training commands train (issue 31, item 1): each distinct set of optimiser settings among the
README's ``hetbench train`` lines (learning rate, momentum, local epochs, batch size, image size, clients per
round, model) and each group protocol they use, with every algorithm those lines name, on the first split they
name it with (built by the README's own command), for 40% of the line's rounds (at least 12) and one seed, evaluated every second round and at the last.
Rounds, seeds, device, logging, engine, the evaluation schedule and output do not change how a model is optimised, and splits built by
one command with other ``--clients`` hold the same data: plain lines that differ only there run once. A line
with ``--protocol`` or ``--train-groups`` runs as its own entry, on its own split, because each of its models
trains on other data; of a leave-one-group-out line, one training runs (the first group held out): each is a
whole sweep. A plain line whose split, settings and algorithms a protocol entry also runs is left to it. The entries on one split
run in one test: the split is built once, and a run an earlier entry already trained (the same algorithm on the
same groups with the same settings: ``hetbench train --skip-existing`` refuses one written with others) is taken
from that entry's results instead of being trained again (FedAvg on the baseline device is in two lines).

Every model must climb well above chance on the groups it trains on, and must not fall back towards it: a
README example whose centralised run diverged to chance (the DapperFL line without the paper's learning rate
once did, at round 13) fails here, and so does a cross-group example where a group's own model stays at chance
(the digits-domains matrix once did: 120 SYN-like images do not train this CNN). The groups a model does not
train on are what the protocol measures, not a check: a held-out domain may legitimately stay near chance.

The full-length numbers the README's commands give are in the issue's closing note; this test checks the
trend at a cost CI can pay."""

from __future__ import annotations

import json
import math
import shlex
import shutil
from pathlib import Path

import pytest

from hetbench.train.reference import reference_failure
from test_readme_commands import COMMANDS, README, readme_commands

#: options that do not change how a model is optimised: dropped when lines are grouped, set by the test
NOT_OPTIMISATION = {"--rounds", "--seed", "--out", "--device", "--amp", "--checkpoint-every", "--log", "--engine",
                    "--flower-actors", "--test-groups", "--resume", "--skip-existing", "--overwrite", "--cache-dir",
                    "--threads", "--eval-every"}
#: options that choose which data each model trains on: a line with one is an entry of its own, on its split
REGIME = ("--protocol", "--train-groups")
FLAGS = {"--amp", "--resume", "--skip-existing", "--overwrite", "-q", "--quiet"}
#: the test trains for this share of the rounds a README line gives (at least MIN_ROUNDS): the start of the curve
ROUND_SHARE, MIN_ROUNDS = 0.4, 12  # FedAvg on the default split sits at chance for 7 rounds before it climbs
#: the test evaluates every EVAL_EVERY rounds and the last (evaluation does not change the training; at 32 px it was
#: 41% of a run's time on iso-isp-wb-tone-c20: 14.5 of 35.1 s for FedAvg's 20 rounds on the baseline device)
EVAL_EVERY = 2
DEFAULT_ROUNDS = 20  # hetbench train's --rounds


def _options(args: list[str]) -> dict[str, str]:
    out, i = {}, 0
    while i < len(args):
        if args[i] in FLAGS:
            out[args[i]], i = "", i + 1
        else:
            out[args[i]], i = args[i + 1], i + 2
    return out


def _training_lines() -> dict[tuple, dict[str, str]]:
    """One entry per distinct (optimisation settings, protocol) of the README's train lines; a protocol or
    --train-groups entry is also keyed by its split."""
    groups: dict[tuple, dict[str, str]] = {}
    for args in COMMANDS:
        if args[0] != "train":
            continue
        given = _options(args[1:])
        opts = {k: v for k, v in given.items() if k not in NOT_OPTIMISATION}
        algos = opts.pop("--algo", "fedavg").split(",")
        regime = any(k in opts for k in REGIME)
        key = tuple(sorted((k, v) for k, v in opts.items() if regime or k != "--split"))
        entry = groups.setdefault(key, {**opts, "--algo": "", "rounds": "0"})
        entry["--algo"] = ",".join(dict.fromkeys([a for a in entry["--algo"].split(",") if a] + algos))
        entry["rounds"] = str(max(int(entry["rounds"]), int(given.get("--rounds", DEFAULT_ROUNDS))))
    return {key: entry for key, entry in groups.items() if not _covered(entry, groups.values())}


def _covered(entry: dict[str, str], entries) -> bool:
    """Whether a plain entry's check is done by a protocol entry: the same split and optimiser settings, and at
    least its algorithms (each of them then trains with those settings on part of that split's data)."""
    if any(k in entry for k in REGIME):
        return False
    settings = {k: v for k, v in entry.items() if k not in ("--algo", "rounds")}
    algos = set(entry["--algo"].split(","))
    return any(any(k in other for k in REGIME)
               and {k: v for k, v in other.items() if k not in ("--algo", "rounds", *REGIME)} == settings
               and algos <= set(other["--algo"].split(",")) for other in entries)


def _build_command(split: str) -> list[str]:
    """The README command that writes ``split`` (its --out)."""
    for args in readme_commands(README.read_text(encoding="utf-8")):
        opts = _options([a for a in args[2:]]) if args[0] in ("build", "partition") else {}
        if opts.get("--out") == split:
            return args
    raise AssertionError(f"no README command builds {split}")


LINES = _training_lines()


def test_the_readme_trains_on_at_least_three_settings_and_every_protocol():
    assert len(LINES) >= 3, LINES
    said = {(k, v) for key in LINES for k, v in key if k in REGIME}
    assert {v for k, v in said if k == "--protocol"} == {"leave-one-group-out", "cross-group"}, said
    assert any(k == "--train-groups" for k, _ in said), said


def _test_rounds(readme_rounds: int) -> int:
    """The rounds the test trains for a line that gives ``readme_rounds``.

    >>> _test_rounds(20), _test_rounds(50)
    (12, 20)
    """
    return max(MIN_ROUNDS, math.ceil(ROUND_SHARE * readme_rounds))


def _groups_of(split: str) -> list[str]:
    """The test groups of a built split (its ``domain`` or ``device`` column), sorted."""
    import datasets

    test = datasets.load_dataset(split, split="test")
    column = next(c for c in ("domain", "device") if c in test.column_names)
    return sorted(set(test[column]))


def _expected_runs(opts: dict[str, str], groups: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The runs a line gives, as (algorithm, groups trained on): one per algorithm, or, under a protocol, one per
    algorithm and group, each trained on the groups the protocol says. ``groups``: the split's test groups."""
    algos = opts["--algo"].split(",")
    protocol, train = opts.get("--protocol"), opts.get("--train-groups")
    if protocol == "leave-one-group-out":
        return sorted((a, tuple(h for h in groups if h != g)) for a in algos for g in groups)
    if protocol == "cross-group":
        return sorted((a, (g,)) for a in algos for g in groups)
    if train:
        return sorted((a, tuple(sorted(train.split(",")))) for a in algos)
    return sorted((a, tuple(groups)) for a in algos)


def _run_key(doc: dict) -> tuple[str, tuple[str, ...]]:
    return doc["algorithm"]["name"], tuple(_trained_on(doc))


def _check_runs(docs: dict[str, dict], opts: dict[str, str]) -> None:
    """The runs a line gives (:func:`_expected_runs`), read from each result's ``groups``."""
    groups = sorted(next(iter(docs.values())).get("groups") or {})
    assert sorted(_run_key(d) for d in docs.values()) == _expected_runs(opts, groups)


def _trained_on(doc: dict) -> list[str]:
    """The test groups a run trained on, sorted (all of them in a run without group restriction, whose groups
    carry no ``trained_on``)."""
    groups = doc.get("groups") or {}
    return sorted(g for g, v in groups.items() if v.get("trained_on", True))


def _trained_on_curve(doc: dict) -> list[float]:
    """Accuracy per round over the test groups the model trained on (the mean of their accuracies; all test rows
    when every group was trained on)."""
    groups = doc.get("groups") or {}
    trained = _trained_on(doc)
    if len(trained) == len(groups):
        return [a for a in doc["curves"]["accuracy"] if a is not None]
    per_group = [doc["curves"]["group_accuracy"][g] for g in trained]
    return [sum(v) / len(v) for v in zip(*per_group) if None not in v]


#: the entries by the split they train on (None: the default split), in the README's order
SPLITS: dict[str | None, list[tuple]] = {}
for _key, _entry in LINES.items():
    SPLITS.setdefault(_entry.get("--split"), []).append(_key)


@pytest.mark.slow
@pytest.mark.parametrize("split", list(SPLITS), ids=lambda s: s or "default-split")
def test_a_readme_training_line_climbs_and_does_not_collapse(split, tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    if split is not None:
        build = _build_command(split)
        code, _, err = run_cli(*build, "-q")
        assert code == 0, f"hetbench {shlex.join(build)}: {err[-1500:]}"
    trained: list[Path] = []  # the results of the entries before, on this split
    for number, key in enumerate(SPLITS[split]):
        out = Path(f"res{number}")
        _train_entry(dict(LINES[key]), split, out, trained, run_cli)
        trained.extend(sorted(out.rglob("*-s0.json")))


def _train_entry(opts: dict[str, str], split: str | None, out: Path, trained: list[Path], run_cli) -> None:
    """Train one entry into ``out`` (a run of ``trained`` it needs is copied in and kept by --skip-existing) and
    check its curves."""
    rounds = _test_rounds(int(opts.pop("rounds")))
    if opts.get("--protocol") == "leave-one-group-out":
        # one of its trainings, at CI's cost (each one is a full sweep): the first group held out (mnist on
        # digits-domains, the lowest of the four at 50 rounds), the others trained on
        del opts["--protocol"]
        opts["--train-groups"] = ",".join(_groups_of(split)[1:])
    if split is not None:
        wanted = set(_expected_runs(opts, _groups_of(split)))
        for path in trained:
            if _run_key(json.loads(path.read_text())) in wanted:
                (out / path.parent.name).mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, out / path.parent.name / path.name)
    args = [a for k, v in opts.items() for a in ((k, v) if v else (k,))]
    code, _, err = run_cli("train", *args, "--rounds", str(rounds), "--seed", "0", "--out", str(out),
                           "--eval-every", str(EVAL_EVERY), "--skip-existing", "-q")
    assert code == 0, err[-2000:]
    manifest = json.loads((Path(split) / "hetbench.json").read_text()) if split else {}
    docs = {p.name: json.loads(p.read_text()) for p in sorted(out.rglob("*-s0.json"))}
    _check_runs(docs, opts)
    chance = 100.0 / len(manifest.get("class_names", range(10)))
    for name, doc in docs.items():
        acc = _trained_on_curve(doc)
        best, last = max(acc), acc[-1]
        said = (f"{name} on {split or 'the default split'}: accuracy per round on the groups it trains on "
                f"{[round(a, 1) for a in acc]} (chance {chance:.1f}%)")
        # at 40% of their rounds: 2.5x chance (the full runs reach 3x and more: issue 31's closing note);
        # the small test sets make curves noisy (105 images on iso-isp), so falling back means towards chance
        assert best >= 2.5 * chance, f"never reached 2.5x chance: {said}"
        assert last >= 2 * chance and reference_failure(doc) is None, f"fell back: {said}"
