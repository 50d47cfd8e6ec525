"""Every ``hetbench ...`` line of README.md's ```bash blocks runs, in README order, in one fresh folder.

A reader copies these lines: each must exit 0 as written. The few that need what a test machine lacks
(a Ray cluster, the network) or that train for minutes are listed in :data:`ADJUSTED` with their
reason: they run with cheaper options (or, where nothing can stand in, are skipped), never silently.
New README commands (new partitioners included) are picked up as they are added.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def readme_commands(text: str) -> list[list[str]]:
    """The argument lists of every ``hetbench`` line in the ```bash blocks, backslash continuations
    joined, comments dropped, in order."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "hetbench":
                commands.append(words[1:])
    return commands


def _set(args: list[str], option: str, value: str | None) -> list[str]:
    """``args`` with ``option`` set to ``value`` (added when absent; removed when value is None)."""
    out = list(args)
    if option in out:
        i = out.index(option)
        del out[i: i + 2]
    return out if value is None else [*out, option, value]


def _cheap(args: list[str], **options: str | None) -> list[str]:
    for name, value in options.items():
        args = _set(args, "--" + name.replace("_", "-"), value)
    return args


def _local(args: list[str]) -> list[str]:
    """Ray and Flower engine options dropped: the same command on the local engine."""
    return _cheap(args, engine=None, ray_address=None, ray_inputs=None, flower_actors=None)


ISP_CHEAP = {"size": "32", "crops_per_photo": "1", "crop_size": "96"}
TRAIN_CHEAP = {"rounds": "1", "seed": "0", "local_epochs": "1", "clients_per_round": "2"}

#: (command prefix, what the test does instead of running it as written, why)
ADJUSTED: list[tuple[str, object, str]] = [
    ("publish ", None, "uploads to the Hugging Face Hub: needs the network and a token"),
    ("build iso-isp --stages wb,tone --recipe fivek", None, "reads a local copy of MIT-Adobe FiveK (about 50 GB of DNGs); "
     "tests/builders/test_fivek_recipe.py runs both recipes on a folder in FiveK's layout with DNGs hetbench writes"),
    ("build real-devices", None, "reads a local copy of a public corpus that no test machine holds (tens of GB); "
     "tests/builders/test_real_devices.py and test_fed_isic_recipe.py run these recipes on copies written in their "
     "layouts"),
    ("build iso-isp --stages all --raw-dir /nfs/raws", None, "reads RAW files from a cluster's NFS share"),
    ("build iso-isp", lambda a: _cheap(_local(a), **ISP_CHEAP),
     "renders 75 crops of 256 px per photograph under every variant (minutes); the Ray lines need `ray start` "
     "(tests/engines runs them on a real cluster): run locally on one small crop per photograph"),
    ("build devices --profiles", lambda a: _cheap(a, clients="9", **ISP_CHEAP),
     "renders every capture on nine phones (minutes): one small crop per photograph, one client per phone"),
    ("partition embedding", lambda a: _cheap(_local(a), **({"embedder": "pixels"} if "--embedder" not in a else {})),
     "the default task embedder trains a CNN (a minute on 2 cores; tests/partitioners and tests/embed cover it), "
     "and the Ray line needs a running cluster: the pixels embedder, local engine"),
    ("train", lambda a: _cheap(_local(a), **TRAIN_CHEAP, **({} if "--image-size" in a else {"image_size": "16"})),
     "trains for 20-50 rounds of 10 clients over several seeds (and --device cuda needs a GPU; --engine flower "
     "starts Ray actors, run by tests/flower): one round of 2 clients, one seed, images at most 32 px (16 where the line does not say), on this machine's CPU"),
    ("reproduce", lambda a: _cheap(a, claims="dapperfl-footprint", seeds="0"),
     "trains for every claim (about 12 minutes on 2 cores; --full is for a GPU): the same options with the claim "
     "that trains nothing, one seed, on this machine's CPU (tests/reproduce runs every claim's runner on small "
     "settings)"),
]


def _adjust(args: list[str]) -> tuple[list[str] | None, str | None]:
    line = " ".join(args)
    for prefix, how, why in ADJUSTED:
        if line.startswith(prefix):
            if how is None:
                return None, why
            new = how(args)
            if "--device" in new and new[new.index("--device") + 1].startswith("cuda"):  # no GPU here
                new = _cheap([a for a in new if a != "--amp"], device="cpu")
            return new, why
    return args, None


COMMANDS = readme_commands(README.read_text(encoding="utf-8"))


def _log(line: str) -> None:
    """Past run_cli's capture: shown with pytest -s (the skipped commands and every command's time)."""
    sys.__stderr__.write(line + "\n")
    sys.__stderr__.flush()


def test_the_readme_has_commands_and_every_adjustment_is_used():
    assert len(COMMANDS) > 30
    lines = [" ".join(c) for c in COMMANDS]
    for prefix, _, why in ADJUSTED:
        assert why and any(line.startswith(prefix) for line in lines), f"allow-list entry '{prefix}' matches no README command"
    assert all("[" not in line and "..." not in line for line in lines), "a README command with a placeholder"


@pytest.mark.slow
def test_every_readme_command_runs(tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLWR_TELEMETRY_ENABLED", "0")
    times = []
    for args in COMMANDS:
        run, why = _adjust(args)
        if run is None:
            _log(f"skipped hetbench {' '.join(args)}: {why}")
            continue
        start = time.perf_counter()
        code, out, err = run_cli(*run)
        times.append((time.perf_counter() - start, " ".join(run)))
        _log(f"{times[-1][0]:6.1f} s  hetbench {times[-1][1]}")
        assert code == 0, f"hetbench {' '.join(run)} exited {code}:\n{err[-2000:]}"
    _log(f"{sum(t for t, _ in times):6.1f} s in all")
