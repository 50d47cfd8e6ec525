"""The README's training commands train (issue 31, item 1): each distinct set of optimiser settings among the
README's ``hetbench train`` lines (learning rate, momentum, local epochs, batch size, image size, clients per
round, model), with every algorithm those lines name, on the first split they name it with (built by the
README's own command), for fewer rounds and one seed. Rounds, seeds, protocols, groups, device, logging,
engine and output do not change how a model is optimised, and splits built by one command with other
``--clients`` hold the same data: lines that differ only there run once. Every algorithm must climb well
above chance and must not fall back towards it: a README example whose centralised run diverged to chance
(the DapperFL line without the paper's learning rate once did, at round 13) fails here.

The full-length numbers the README's commands give are in the issue's closing note; this test checks the
trend at a cost CI can pay."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from hetbench.train.reference import reference_failure
from test_readme_commands import COMMANDS, README, readme_commands

#: options that do not change how a model is optimised: dropped when lines are grouped, set by the test
NOT_OPTIMISATION = {"--rounds", "--seed", "--out", "--device", "--amp", "--checkpoint-every", "--log", "--engine",
                    "--flower-actors", "--protocol", "--train-groups", "--test-groups", "--resume", "--skip-existing",
                    "--overwrite", "--cache-dir", "--threads"}
FLAGS = {"--amp", "--resume", "--skip-existing", "--overwrite", "-q", "--quiet"}
ROUNDS = "12"  # FedAvg on the default split sits at chance for 7 rounds before it climbs (87% at 20)


def _options(args: list[str]) -> dict[str, str]:
    out, i = {}, 0
    while i < len(args):
        if args[i] in FLAGS:
            out[args[i]], i = "", i + 1
        else:
            out[args[i]], i = args[i + 1], i + 2
    return out


def _training_lines() -> dict[tuple, dict[str, str]]:
    """One entry per distinct (split, optimisation settings) of the README's train lines."""
    groups: dict[tuple, dict[str, str]] = {}
    for args in COMMANDS:
        if args[0] != "train":
            continue
        opts = {k: v for k, v in _options(args[1:]).items() if k not in NOT_OPTIMISATION}
        algos = opts.pop("--algo", "fedavg").split(",")
        key = tuple(sorted((k, v) for k, v in opts.items() if k != "--split"))  # the optimiser's settings
        entry = groups.setdefault(key, {**opts, "--algo": ""})
        entry["--algo"] = ",".join(dict.fromkeys([a for a in entry["--algo"].split(",") if a] + algos))
    return groups


def _build_command(split: str) -> list[str]:
    """The README command that writes ``split`` (its --out)."""
    for args in readme_commands(README.read_text(encoding="utf-8")):
        opts = _options([a for a in args[2:]]) if args[0] in ("build", "partition") else {}
        if opts.get("--out") == split:
            return args
    raise AssertionError(f"no README command builds {split}")


LINES = _training_lines()


def test_the_readme_trains_on_at_least_three_settings():
    assert len(LINES) >= 3, LINES


@pytest.mark.slow
@pytest.mark.parametrize("key", list(LINES), ids=lambda k: " ".join(f"{a}={b}" for a, b in k)[:80] or "default-settings")
def test_a_readme_training_line_climbs_and_does_not_collapse(key, tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    opts = dict(LINES[key])
    split = opts.get("--split")
    if split is not None:
        build = _build_command(split)
        code, _, err = run_cli(*build, "-q")
        assert code == 0, f"hetbench {shlex.join(build)}: {err[-1500:]}"
    args = [a for k, v in opts.items() for a in ((k, v) if v else (k,))]
    code, _, err = run_cli("train", *args, "--rounds", ROUNDS, "--seed", "0", "--out", "res", "-q")
    assert code == 0, err[-2000:]
    results = sorted(Path("res").rglob("*-s0.json"))
    assert sorted(p.name.split("-s0")[0] for p in results) == sorted(opts["--algo"].split(","))
    for path in results:
        doc = json.loads(path.read_text())
        classes = len(json.loads((Path(split) / "hetbench.json").read_text())["class_names"]) if split else 10
        chance = 100.0 / classes
        acc = [a for a in doc["curves"]["accuracy"] if a is not None]
        best, last = max(acc), acc[-1]
        said = f"{path.name} on {split or 'the default split'}: accuracy per round {acc} (chance {chance:.1f}%)"
        # at 12 of their 20-50 rounds: 2.5x chance (the full runs reach 3x and more: issue 31's closing note);
        # the small test sets make curves noisy (105 images on iso-isp), so falling back means towards chance
        assert best >= 2.5 * chance, f"never reached 2.5x chance: {said}"
        assert last >= 2 * chance and reference_failure(doc) is None, f"fell back: {said}"
