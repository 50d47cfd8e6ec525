"""``hetbench reproduce``: the seed papers' headline claims as executable checks.

A claim is a definition file, ``manifests/claims/<id>.yaml`` (:mod:`hetbench.reproduce.claims`): the
paper, the figure or table, the claim in one sentence, the protocol, a runner with ``quick`` and ``full``
settings, and checks whose criteria (:mod:`hetbench.reproduce.criteria`) are declared before any run. A
runner (:mod:`hetbench.reproduce.runners`) measures with the library (builders, partitioners,
:func:`hetbench.sweep.sweep`); the criteria decide; :mod:`hetbench.reproduce.write` writes
``claims.json``, ``claims.md`` and a self-contained ``claims.html`` with a plot per claim
(:mod:`hetbench.reproduce.plots`). The user guide is ``docs/reproduce.md``.

This layer consumes the library as the trainer and the leaderboard do: the core never imports it, and it
never imports the CLI.
"""

from __future__ import annotations

from hetbench.reproduce.claims import claim_ids, load_claim, select_claims
from hetbench.reproduce.criteria import CRITERIA, VERDICTS, Measurement, evaluate
from hetbench.reproduce.estimates import dry_run
from hetbench.reproduce.run import DEFAULT_OUT, Reproduced, reproduce

__all__ = ["CRITERIA", "DEFAULT_OUT", "VERDICTS", "Measurement", "Reproduced", "claim_ids", "dry_run", "evaluate", "load_claim",
           "reproduce", "select_claims"]
