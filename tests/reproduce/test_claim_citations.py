"""Every claim cites its paper as hetbench's BibTeX does (hetbench/publish/citations.py): the same authors,
in the same order, the same title and year. A claim is the first place a reader meets the paper, so a
wrong author list there (as HeteroSwitch's once was) is a defect a test must catch."""

from __future__ import annotations

import re

import pytest

from hetbench.publish.citations import PAPERS
from hetbench.reproduce.claims import claim_ids, load_claim


def _plain(text: str) -> str:
    """Lower-case words only: BibTeX braces, accents' macros and punctuation removed."""
    text = re.sub(r"\\.", "", text).replace("{", "").replace("}", "")
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _field(entry: str, name: str) -> str:
    return re.search(rf"^\s*{name}\s*=\s*\{{(.*)\}},?\s*$", entry, re.M).group(1)


def _bibtex_surnames(entry: str) -> list[str]:
    return [a.split(",")[0].strip() for a in _field(entry, "author").split(" and ")]


def _claim_surnames(paper: str) -> list[str]:
    names = paper.split(". ", 1)[0]
    return [n.strip() for n in re.split(r",\s*|\s+and\s+", names) if n.strip()]


def _cited(paper: str) -> str:
    hits = [key for key, entry in PAPERS.items() if _plain(_field(entry, "title")) in _plain(paper)]
    assert len(hits) == 1, f"the claim's paper matches {hits or 'no'} BibTeX title of citations.py: {paper}"
    return hits[0]


@pytest.mark.parametrize("claim_id", claim_ids())
def test_each_claim_cites_its_paper_as_the_bibtex_does(claim_id):
    paper = load_claim(claim_id).paper
    entry = PAPERS[_cited(paper)]
    assert _claim_surnames(paper) == _bibtex_surnames(entry), claim_id
    assert _field(entry, "year") in paper, f"{claim_id}: the year {_field(entry, 'year')} is not in '{paper}'"


def test_a_wrong_author_list_is_caught():
    """The check itself fails on the defect it exists for: HeteroSwitch's authors as a claim once gave them."""
    wrong = ("Kim, Kang, Lee, Kim, Kim and Kim. HeteroSwitch: Characterizing and Taming System-Induced Data "
             "Heterogeneity in Federated Learning. MLSys 2024.")
    assert _claim_surnames(wrong) != _bibtex_surnames(PAPERS[_cited(wrong)])
