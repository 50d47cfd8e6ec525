"""Stable verdicts: two ``hetbench reproduce`` runs with disjoint seed sets must agree on every claim that
both decide.

A verdict that a second run with other seeds turns around was noise. :func:`compare_runs` reads two
``claims.json`` documents of the same mode and claims, made with disjoint seeds, and classes each claim:
``same`` (both decided it alike), ``differs`` (both decided it, differently) or ``undecided`` (either run
left it ``inconclusive`` or ``not run``: nothing to compare). The command::

    hetbench reproduce --quick --claims all --seeds 0,1,2,3,4 --out claims-a
    hetbench reproduce --quick --claims all --seeds 5,6,7,8,9 --out claims-b
    python -m hetbench.reproduce.stability claims-a/claims.json claims-b/claims.json

prints one line per claim and exits 0 when no claim differs, 1 when one does, and 2 for runs that cannot
be compared (another mode, other claims, or seeds in common).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Sequence

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import SMOKE
from hetbench.reproduce.verdicts import INCONCLUSIVE, NOT_RUN

#: verdicts that decide nothing, so a second run cannot contradict them
UNDECIDED = (INCONCLUSIVE, NOT_RUN)


def compare_runs(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Compare two claims.json documents claim by claim.

    Raises
    ------
    HetbenchError
        When the runs are of different modes or claims, or a claim's seed sets share a seed.

    Examples
    --------
    >>> from hetbench.reproduce.stability import compare_runs
    >>> def run(seeds, *verdicts):
    ...     return {"mode": "quick", "claims": [{"id": f"c{i}", "verdict": v, "seeds": seeds} for i, v in enumerate(verdicts)]}
    >>> out = compare_runs(run([0, 1], "reproduced", "inconclusive", "not reproduced"),
    ...                    run([2, 3], "reproduced", "reproduced", "reproduced"))
    >>> [(c["id"], c["status"]) for c in out["claims"]], out["differs"]
    ([('c0', 'same'), ('c1', 'undecided'), ('c2', 'differs')], ['c2'])
    """
    if a["mode"] != b["mode"]:
        raise HetbenchError(f"the runs are of different modes ({a['mode']} and {b['mode']})")
    if a["mode"] == SMOKE:
        raise HetbenchError("the runs are smoke runs: they decide nothing, so there is no verdict to compare")
    ids_a, ids_b = [c["id"] for c in a["claims"]], [c["id"] for c in b["claims"]]
    if ids_a != ids_b:
        raise HetbenchError(f"the runs hold different claims ({', '.join(ids_a)} and {', '.join(ids_b)})")
    rows, differs = [], []
    for ca, cb in zip(a["claims"], b["claims"]):
        # a claim run with one seed in both runs is a deterministic count (a seeded claim needs 5): its seed
        # may repeat; any other claim's seed sets must be disjoint
        shared = sorted(set(ca["seeds"]) & set(cb["seeds"]))
        if shared and (len(ca["seeds"]) > 1 or len(cb["seeds"]) > 1):
            raise HetbenchError(f"{ca['id']}: the runs share seed(s) {', '.join(map(str, shared))}; stability needs "
                                "disjoint seed sets")
        if ca["verdict"] in UNDECIDED or cb["verdict"] in UNDECIDED:
            status = "undecided"
        else:
            status = "same" if ca["verdict"] == cb["verdict"] else "differs"
        if status == "differs":
            differs.append(ca["id"])
        rows.append({"id": ca["id"], "a": ca["verdict"], "b": cb["verdict"], "status": status,
                     "seeds_a": ca["seeds"], "seeds_b": cb["seeds"]})
    return {"mode": a["mode"], "claims": rows, "differs": differs}


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hetbench.reproduce.stability A/claims.json B/claims.json``: one line per claim; exit 0 when
    no claim differs, 1 when one does, 2 for runs that cannot be compared."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m hetbench.reproduce.stability A/claims.json B/claims.json", file=sys.stderr)
        return 2
    try:
        docs = [json.loads(Path(p).read_text()) for p in args]
        out = compare_runs(*docs)
    except (OSError, ValueError, KeyError, HetbenchError) as exc:
        print(f"hetbench: error: {exc}", file=sys.stderr)
        return 2
    width = max(len(c["id"]) for c in out["claims"]) if out["claims"] else 0
    for c in out["claims"]:
        print(f"{c['id']:<{width}}  {c['status']:<9}  {c['a']} | {c['b']}")
    print(f"{len(out['differs'])} of {len(out['claims'])} claims differ"
          + (f": {', '.join(out['differs'])}" if out["differs"] else ""))
    return 1 if out["differs"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
