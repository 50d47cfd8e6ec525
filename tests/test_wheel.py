"""The built wheel: no packaging warning while it builds, every data file hetbench reads at run time
inside it, and ``hetbench list`` running from it outside the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


@pytest.mark.slow
def test_the_wheel_builds_quietly_holds_the_data_and_runs_outside_the_checkout(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                           "-w", str(tmp_path / "dist"), str(ROOT)], env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    log = done.stdout + done.stderr
    noisy = [line for line in log.splitlines() if "warning" in line.lower() and "Location '" not in line]
    assert not noisy, "\n".join(noisy[:20])
    (wheel,) = (tmp_path / "dist").glob("hetbench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("manifests/recipes", "manifests/claims", "manifests/devices"):
        shipped = {p.name for p in (ROOT / folder).glob("*.yaml")}
        assert shipped and {f"hetbench/{folder}/{n}" for n in shipped} <= names, folder
    tables = {p.name for p in (ROOT / "isp" / "tables").glob("*.npy")}
    assert tables and {f"hetbench/isp/tables/{n}" for n in tables} <= names
    assert not any(n.startswith(("tests/", "docs/")) or "__pycache__" in n for n in names)
    packages = {f"hetbench/{p.relative_to(ROOT / 'hetbench').as_posix()}" for p in (ROOT / "hetbench").rglob("__init__.py")
                if "__pycache__" not in p.parts}
    assert packages <= names, sorted(packages - names)  # e.g. hetbench.sweep, which hetbench train imports

    target = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--target",
                                str(target), str(wheel)], env=_env(), capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]
    env = dict(_env(), PYTHONPATH=str(target), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    code = ("import hetbench, sys; print(hetbench.__file__, file=sys.stderr); "
            "from hetbench.cli.main import main; sys.argv = ['hetbench', 'list']; main()")
    ran = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stderr.splitlines()[0].startswith(str(target))  # the wheel's copy, not the checkout's
    for recipe in (ROOT / "manifests" / "recipes").glob("*.yaml"):
        assert recipe.stem in ran.stdout, recipe.stem
