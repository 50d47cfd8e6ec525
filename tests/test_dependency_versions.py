"""The published bytes under the oldest and the newest release pyproject admits of each library that
could decide them (OpenCV, numpy, Pillow): every embedded output is digested with those releases put
first on the path (``pip install --no-deps --target``) and compared with the one recorded
fingerprint (tests/output_fingerprints.py).

The releases come from the package index (CI reaches it); they are installed once per run into a
temporary folder, beside the test environment, which they never change.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from output_fingerprints import OTHER_CPU_VARIABLES, RECORD, compare

TESTS = Path(__file__).parent
ROOT = TESTS.parent
#: distribution name in pyproject -> import name
BYTE_DECIDING = {"opencv-python-headless": "cv2", "numpy": "numpy", "pillow": "PIL"}
#: the oldest release of each lower bound's series that has wheels for every Python hetbench admits
OLDEST_PATCH = {"opencv-python-headless": {"4.10": "4.10.0.84"}}


def admitted(dist: str) -> tuple[str, str]:
    """(lower bound, upper bound) of ``dist`` in pyproject's dependencies."""
    text = (ROOT / "pyproject.toml").read_text()
    found = re.search(rf'"{re.escape(dist)}>=([0-9.]+),<([0-9.]+)"', text)
    assert found, f"{dist} has no '>=low,<high' range in pyproject.toml"
    return found.group(1), found.group(2)


def _specs(which: str) -> list[str]:
    out = []
    for dist in BYTE_DECIDING:
        low, high = admitted(dist)
        out.append(f"{dist}=={OLDEST_PATCH.get(dist, {}).get(low, low)}" if which == "oldest"
                   else f"{dist}>={low},<{high}")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("which", ["oldest", "newest"])
def test_every_output_is_the_recorded_one_with_the_oldest_and_newest_admitted_releases(which, tmp_path):
    site = tmp_path / "site"
    env = {k: v for k, v in os.environ.items() if k not in OTHER_CPU_VARIABLES and k != "PYTHONPATH"}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1")
    got = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--only-binary=:all:",
                          "--target", str(site), *_specs(which)], env=env, capture_output=True, text=True,
                         timeout=600)
    assert got.returncode == 0, f"pip could not install {_specs(which)}: {got.stderr[-1500:]}"
    env.update(PYTHONPATH=str(site), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", MPLBACKEND="Agg")
    probe = "import json, cv2, numpy, PIL; print(json.dumps([cv2.__file__, numpy.__file__, PIL.__file__, " \
            "cv2.__version__, numpy.__version__, PIL.__version__]))"
    seen = json.loads(subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                                     timeout=120, check=True).stdout)
    assert all(path.startswith(str(site)) for path in seen[:3]), seen  # the releases under test took effect
    out = tmp_path / "digests.json"
    done = subprocess.run([sys.executable, str(TESTS / "output_fingerprints.py"), "--digest", str(out)], env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    now = json.loads(out.read_text())
    recorded = json.loads(RECORD.read_text())
    same = {lib: now["versions"][lib] == recorded["versions"][lib] for lib in ("pyarrow", "matplotlib")}
    problems = compare(recorded, now["outputs"], same)
    assert not problems, f"outputs differ with OpenCV {seen[3]}, numpy {seen[4]}, Pillow {seen[5]}:\n" + "\n".join(problems)
