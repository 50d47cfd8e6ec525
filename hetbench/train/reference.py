"""Is a centralised run a reference worth measuring others against?

Relative accuracy (a run's accuracy over the centralised run's) and the default target (90% of it) assume
the centralised run trained. One that diverged (an accuracy back near chance after it had learned, or a
loss that became NaN or infinite) would make every relative number meaningless: a README example once
collapsed its centralised run from 59% to 10% (chance) and the leaderboard printed FedAvg at "rel. acc.
5.625". :func:`reference_failure` says why a run fails as a reference; the sweep then warns, records it in
the run's ``final.reference_failure`` and computes no relative metric against it.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

#: a final accuracy at most this many times chance counts as back at chance
AT_CHANCE = 1.5
#: ... once the run had reached at least this many times chance
HAD_LEARNED = 2.0


def reference_failure(doc: Mapping[str, Any]) -> str | None:
    """Why a centralised run cannot be the reference (None when it can).

    Parameters
    ----------
    doc : mapping
        The run's results document (``final``, ``curves``, ``split.num_classes``).

    Examples
    --------
    >>> from hetbench.train.reference import reference_failure
    >>> doc = {"split": {"num_classes": 10}, "final": {"accuracy": 10.0, "loss": 2.3},
    ...        "curves": {"round": [1, 2, 13], "accuracy": [40.0, 59.0, 10.0]}}
    >>> reference_failure(doc)
    'its accuracy fell from 59.0% (round 2) to 10.0% at the end, near chance (10.0%)'
    >>> reference_failure({"split": {"num_classes": 10}, "final": {"accuracy": 80.0, "loss": 0.4},
    ...                    "curves": {"round": [1, 2], "accuracy": [60.0, 80.0]}}) is None
    True
    """
    final = doc.get("final") or {}
    loss = final.get("loss")
    if isinstance(loss, float) and not math.isfinite(loss):
        return f"its final test loss is {loss}"
    classes = (doc.get("split") or {}).get("num_classes")
    accuracy = final.get("accuracy")
    curve = [a for a in ((doc.get("curves") or {}).get("accuracy") or []) if a is not None]
    if not classes or accuracy is None or not curve:
        return None
    chance = 100.0 / int(classes)
    best = max(curve)
    if accuracy <= AT_CHANCE * chance and best >= HAD_LEARNED * chance:
        rounds = (doc.get("curves") or {}).get("round") or []
        at = rounds[curve.index(best)] if len(rounds) == len(curve) else "?"
        return f"its accuracy fell from {best:.1f}% (round {at}) to {accuracy:.1f}% at the end, near chance ({chance:.1f}%)"
    return None


__all__ = ["reference_failure", "AT_CHANCE", "HAD_LEARNED"]
