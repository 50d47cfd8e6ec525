"""Your own algorithm without a fork (issue 48, item 3): the plugin of docs/training.md, installed as a package
with an entry point in ``hetbench.algorithms``, trains from the CLI with its own flag; ``--algo module:Class``
trains without installing; a plugin that does not import, is not an algorithm, or whose hyper-parameter clashes
with a built-in flag is one line, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "training.md"
HETBENCH = Path(sys.executable).with_name("hetbench")
SMALL = ("--rounds", "2", "--clients-per-round", "4", "--batch-size", "32", "--seed", "0", "-q")


def _guide_blocks() -> tuple[str, str]:
    """The plugin module and the pyproject of docs/training.md's "Your own algorithm"."""
    section = GUIDE.read_text(encoding="utf-8").split("## Your own algorithm")[1].split("\n## ")[0]
    (module,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    (pyproject,) = re.findall(r"```toml\n(.*?)```", section, flags=re.S)
    return module, pyproject


def _hetbench(args, cwd: Path, pythonpath: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([str(HETBENCH), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def restore_algorithms():
    """Whatever a test registers in this process is gone after it (other tests list the built-ins)."""
    from hetbench.train.algorithms import ALGORITHMS
    from hetbench.train.algorithms.plugins import LOADED_HERE

    names, entries, here = ALGORITHMS.names(), dict(ALGORITHMS._entries), set(LOADED_HERE)
    yield
    ALGORITHMS._entries.clear()
    ALGORITHMS._entries.update(entries)
    LOADED_HERE.clear()
    LOADED_HERE.update(here)
    assert ALGORITHMS.names() == names


@pytest.mark.slow
def test_the_guides_plugin_installed_with_its_entry_point_trains_from_the_cli(tmp_path):
    module, pyproject = _guide_blocks()
    pkg = tmp_path / "hetbench-clipfedavg"
    pkg.mkdir()
    (pkg / "hetbench_clipfedavg.py").write_text(module)
    (pkg / "pyproject.toml").write_text(pyproject + '\n[build-system]\nrequires = ["setuptools"]\n'
                                        'build-backend = "setuptools.build_meta"\n\n'
                                        '[tool.setuptools]\npy-modules = ["hetbench_clipfedavg"]\n')
    site = tmp_path / "site"  # installed as pip installs it, into a folder of its own rather than the shared venv
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--no-index", "--target", str(site), str(pkg)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr[-2000:]
    assert list(site.glob("hetbench_clipfedavg-0.1.0.dist-info/entry_points.txt"))

    helped = _hetbench(["train", "--help"], tmp_path, site)
    assert helped.returncode == 0, helped.stderr
    assert "clipfedavg" in helped.stdout and "--clip" in helped.stdout and "L2 bound S" in helped.stdout

    done = _hetbench(["train", "--algo", "fedavg,clipfedavg", "--clip", "0.05", *SMALL, "--out", "res"], tmp_path, site)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(next((tmp_path / "res").rglob("clipfedavg-*s0.json")).read_text())
    assert doc["algorithm"]["name"] == "clipfedavg" and doc["algorithm"]["params"] == {"clip": 0.05, "server_lr": 1.0}
    assert doc["algorithm"]["citation"].startswith("McMahan et al. 2018")
    assert doc["curves"]["algorithm"]["clipped_clients"] == [4, 4]  # a bound this tight clips every update
    board = _hetbench(["leaderboard", "res", "--out", "board"], tmp_path, site)
    assert board.returncode == 0 and "| clipfedavg |" in (tmp_path / "board" / "leaderboard.md").read_text()

    bad = _hetbench(["train", "--algo", "clipfedavg", "--clip", "0", *SMALL, "--out", "res0"], tmp_path, site)
    assert bad.returncode == 2 and bad.stderr.strip() == "hetbench: error: --clip must be a positive number (got 0.0)"
    assert not (tmp_path / "res0").exists()


@pytest.mark.slow
def test_a_module_class_spec_trains_without_installing(tmp_path):
    module, _ = _guide_blocks()
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "hetbench_clipfedavg.py").write_text(module)
    done = _hetbench(["train", "--algo", "hetbench_clipfedavg:ClipFedAvg", "--clip", "1000", *SMALL, "--out", "res"],
                     tmp_path, tmp_path / "plugins")
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(next((tmp_path / "res").rglob("clipfedavg-*s0.json")).read_text())
    assert doc["curves"]["algorithm"]["clipped_clients"] == [0, 0]  # a loose bound clips nothing: FedAvg


def _write_plugin(folder: Path, body: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "myplugin.py").write_text(
        "from hetbench.train.algorithms.fedavg import FedAvg\nfrom hetbench.train.algorithms.hyper import Hyper\n" + body)


@pytest.mark.parametrize("body, spec, message", [
    ("raise RuntimeError('broken on purpose')\n", "myplugin:X",
     "algorithm 'myplugin:X': the module myplugin does not import (RuntimeError: broken on purpose)"),
    ("class NotAnAlgo:\n    name = 'nope'\n", "myplugin:NotAnAlgo",
     "algorithm plugin 'nope' is <class 'myplugin.NotAnAlgo'>, not a subclass of hetbench.train.algorithms.base.Algorithm"),
    ("class Clash(FedAvg):\n    name = 'clash'\n    hyper = {'rounds': Hyper(5, 'Rounds again.')}\n", "myplugin:Clash",
     "algorithm plugin 'clash' declares the hyper-parameter 'rounds', which is one of the trainer's own settings; "
     "rename it"),
    ("class Kind(FedAvg):\n    name = 'kind'\n    hyper = {'mu': Hyper(1, 'An integer mu.', integer=True)}\n",
     "myplugin:Kind", "algorithm plugin 'kind' declares 'mu' with another kind of value than the algorithms that "
     "already take it; rename it"),
    ("class Taken(FedAvg):\n    name = 'fedprox'\n", "myplugin:Taken",
     "'fedprox' is already a registered algorithm; give the plugin another name"),
    ("", "myplugin:", "algorithm 'myplugin:': a plugin is named as package.module:ClassName"),
])
def test_a_bad_plugin_is_one_line_exit_2_and_writes_nothing(body, spec, message, tmp_path, monkeypatch, run_cli,
                                                             restore_algorithms):
    _write_plugin(tmp_path / "plugins", body)
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    sys.modules.pop("myplugin", None)
    code, _, err = run_cli("train", "--algo", f"fedavg,{spec}", *SMALL, "--out", tmp_path / "res")
    sys.modules.pop("myplugin", None)
    assert code == 2 and err.strip() == f"hetbench: error: {message}", err
    assert not (tmp_path / "res").exists()


def test_a_module_class_plugin_is_refused_on_the_flower_engine(tmp_path, monkeypatch, run_cli, restore_algorithms):
    _write_plugin(tmp_path / "plugins", "class Mine(FedAvg):\n    name = 'mine'\n")
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    sys.modules.pop("myplugin", None)
    code, _, err = run_cli("train", "--algo", "myplugin:Mine", "--engine", "flower", *SMALL, "--out", tmp_path / "res")
    sys.modules.pop("myplugin", None)
    assert code == 2 and "imported as MODULE:CLASS for this process only" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "res").exists()


def test_an_entry_point_that_does_not_import_is_one_line(tmp_path):
    site = tmp_path / "site"
    info = site / "broken_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[hetbench.algorithms]\nbroken = broken_plugin_module:Algo\n")
    done = _hetbench(["train", "--algo", "fedavg", *SMALL, "--out", "res"], tmp_path, site)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip() == ("hetbench: error: the algorithm plugin 'broken' (broken_plugin_module:Algo, entry "
                                   "point group hetbench.algorithms) does not import: ModuleNotFoundError: No module "
                                   "named 'broken_plugin_module'")
    assert not (tmp_path / "res").exists()
