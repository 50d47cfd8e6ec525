"""docs/reproduce.md: its Python examples run and print what they show, and it documents every claim and
criterion that exists."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

from hetbench.reproduce import CRITERIA, claim_ids

DOC = Path(__file__).resolve().parents[2] / "docs" / "reproduce.md"


def test_the_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```pycon\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    assert blocks
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {}, DOC.name, str(DOC), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 3 and result.failed == 0


def test_every_claim_and_criterion_is_documented():
    text = DOC.read_text(encoding="utf-8")
    for cid in claim_ids():
        assert f"### `{cid}`" in text
    for name in CRITERIA:
        assert f"`{name}`" in text
