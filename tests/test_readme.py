"""The README's Python examples run and print what the README shows (its ``pycon`` blocks)."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```pycon\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_a_python_api_section():
    assert "## Python API" in README.read_text(encoding="utf-8")
    assert len(BLOCKS) >= 3


@pytest.mark.slow
def test_readme_python_examples(tmp_path, monkeypatch):
    """All blocks in one namespace, in order, as a reader would type them."""
    monkeypatch.chdir(tmp_path)
    parser = doctest.DocTestParser()
    test = parser.get_doctest("\n".join(BLOCKS), {}, "README.md", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 10
    assert result.failed == 0, f"{result.failed} README example(s) failed (output above)"
