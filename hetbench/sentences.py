"""The first sentence of a help text or a docstring, on one line: what ``hetbench list`` prints for every
registered name (:mod:`hetbench.catalog`) and what ``hetbench --help`` lists for every command
(``cli/main.py``).

A full stop ends the sentence unless it ends an abbreviation of the papers' prose ("Hsu et al. 2020",
"sec. 4.1", "Eq. 4"); click's own short help stops at the first full stop and cuts at 45 characters.
"""

from __future__ import annotations

import re

#: words that end in a full stop inside a sentence
ABBREVIATIONS = ("et al.", "sec.", "e.g.", "i.e.", "Eq.", "Fig.", "App.", "vs.", "cf.", "approx.", "no.")


def first_sentence(text: str | None) -> str:
    """The first sentence of ``text``'s first paragraph, on one line: click's markers (``\\f`` ends the help,
    ``\\b`` keeps a paragraph as it is) and reST markup (````code````, ``:func:`name```, ``[1]_``) left out.

    Examples
    --------
    >>> from hetbench.sentences import first_sentence
    >>> first_sentence("Label Dirichlet split (Hsu et al. 2019, sec. 3). Example: ...")
    'Label Dirichlet split (Hsu et al. 2019, sec. 3).'
    >>> first_sentence("\\b\\nNo full stop at all")
    'No full stop at all'
    >>> first_sentence('''``builtin:digits``: scikit-learn's 1,797 digits (Hsu et al. 2019). More text.
    ...
    ... Parameters''')
    "builtin:digits: scikit-learn's 1,797 digits (Hsu et al. 2019)."
    >>> first_sentence("Noise imbalance (NIID-Bench, [1]_ sec. 3.2): IID clients")
    'Noise imbalance (NIID-Bench, sec. 3.2): IID clients'
    """
    text = (text or "").split("\f", 1)[0].replace("\b", "")
    first = re.split(r"\n\s*\n", text.strip(), maxsplit=1)[0]
    words = " ".join(first.split())
    words = re.sub(r"``([^`]*)``", r"\1", words)
    words = re.sub(r":\w+:`~?([^`]*)`", r"\1", words)
    words = re.sub(r"\s*\[\d+\]_", "", words)
    start = 0
    while True:
        end = words.find(". ", start)
        if end < 0:
            return words
        if not any(words[: end + 1].endswith(a) for a in ABBREVIATIONS):
            return words[: end + 1]
        start = end + 1
