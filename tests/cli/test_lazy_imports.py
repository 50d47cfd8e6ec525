"""A partition command imports what it uses (issue 16): no torch, no scikit-learn, no trainer, no
claim runners; a command's module is imported when the command runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = """
import json, sys
from hetbench.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(m for m in sys.modules if "." not in m or m.startswith("hetbench"))}))
"""


def _imported(tmp_path, *args: str) -> tuple[int, set[str]]:
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return got["code"], set(got["modules"])


def test_partition_imports_neither_torch_nor_sklearn(tmp_path):
    code, modules = _imported(tmp_path, "partition", "dirichlet", "--clients", "5", "--out", str(tmp_path / "s"), "-q")
    assert code in (0, None)
    assert (tmp_path / "s" / "hetbench.json").is_file()
    assert not {"torch", "sklearn", "flwr", "ray"} & modules
    assert not {m for m in modules if m.startswith(("hetbench.train", "hetbench.reproduce", "hetbench.leaderboard"))}
    assert "hetbench.cli.partition" in modules and "hetbench.cli.train" not in modules


def test_the_help_still_lists_every_command(tmp_path):
    from hetbench.cli.main import COMMANDS

    proc = subprocess.run([sys.executable, "-m", "hetbench.cli.main", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    listed = proc.stdout.split("Commands:", 1)[1]
    assert all(f"  {name} " in listed for name in COMMANDS)
