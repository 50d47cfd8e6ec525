"""The Python examples of the README and of docs/training.md run and print what they show (their ``pycon``
blocks)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "training.md"


def _blocks(path: Path) -> list[str]:
    return re.findall(r"```pycon\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


BLOCKS = _blocks(README)


def test_the_readme_has_a_python_api_section():
    assert "## Python API" in README.read_text(encoding="utf-8")
    assert len(BLOCKS) >= 3


def _run_blocks(path: Path, blocks: list[str]):
    """All blocks in one namespace, in order, as a reader would type them."""
    parser = doctest.DocTestParser()
    test = parser.get_doctest("\n".join(blocks), {}, path.name, str(path), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    return runner.summarize(verbose=False)


@pytest.mark.slow
def test_readme_python_examples(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _run_blocks(README, BLOCKS)
    assert result.attempted > 10
    assert result.failed == 0, f"{result.failed} README example(s) failed (output above)"


@pytest.mark.slow
def test_training_guide_python_examples(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = _blocks(GUIDE)
    assert len(blocks) >= 3
    result = _run_blocks(GUIDE, blocks)
    assert result.attempted > 10
    assert result.failed == 0, f"{result.failed} docs/training.md example(s) failed (output above)"


def test_the_ray_example_stops_only_the_cluster_it_started():
    """On a shared node `ray stop` stops every Ray process the user may signal, other people's jobs of the same
    account included: the README's cluster example starts its own head on a port of its own and stops that."""
    bash = "\n".join(re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S))
    lines = [line.split("#")[0].strip() for line in bash.splitlines()]
    assert not any(re.match(r"ray stop\b", line) for line in lines)
    start = [line for line in lines if line.startswith(("ray start", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 ray start"))]
    assert start and all("--block &" in line and "--port 6379" not in line for line in start)
    assert "RAY_HEAD=$!" in lines and "kill $RAY_HEAD" in lines
