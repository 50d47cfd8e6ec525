"""``hetbench reproduce --dry-run``: each claim's training cost in a mode on this machine's device, estimated
from its runner's workloads (:mod:`hetbench.reproduce.cost`), before anything runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from hetbench.reproduce.claims import Claim
from hetbench.reproduce.run_inputs import checked_claims, seeds_of
from hetbench.reproduce.runners import RUNNERS


@dataclass
class ClaimCost:
    """A claim's estimated training cost in one mode on one device (:mod:`hetbench.reproduce.cost`)."""

    id: str
    seconds: float
    runs: int
    examples: int

    def line(self, width: int) -> str:
        from hetbench.reproduce.cost import format_duration

        if not self.runs:
            return f"{self.id:<{width}}  no federated training (seconds)"
        return (f"{self.id:<{width}}  {format_duration(self.seconds):>9}  {self.runs} training runs, "
                f"{self.examples / 1e6:.3g}M training examples")


def estimate_claims(loaded: Sequence[Claim], mode: str, seeds: list[int] | None, device: str,
                    on_claim: Callable[[ClaimCost], None] | None = None, timings: dict | None = None
                    ) -> list[ClaimCost]:
    """Each claim's training cost in ``mode`` on ``device`` (this machine), from its runner's workloads
    timed here (:func:`hetbench.reproduce.cost.estimate`: a floor, training and evaluation arithmetic
    only).

    Parameters
    ----------
    loaded : sequence of Claim
        Validated claim definitions.
    mode : str
        ``quick`` or ``full``.
    seeds : list of int, optional
        ``--seeds``; None: the mode's default.
    device : str
        A resolved torch device (``cpu``, ``cuda``, ...).
    on_claim : callable, optional
        Called with each claim's cost as soon as it is estimated (timing a full-mode workload takes
        minutes on a loaded machine: the CLI prints each line then, not all at the end).
    timings : dict, optional
        A cache of the trainer's timings by workload shape, shared between calls (filled here).

    Examples
    --------
    >>> from hetbench.reproduce.claims import load_claim
    >>> [c.line(18) for c in estimate_claims([load_claim("dapperfl-footprint")], "full", None, "cpu")]
    ['dapperfl-footprint  no federated training (seconds)']
    """
    from hetbench.reproduce.cost import estimate

    timings = {} if timings is None else timings
    costs = []
    for claim in loaded:
        claim_seeds = seeds_of(claim, mode, seeds)
        work = RUNNERS[claim.runner].workloads(claim.settings[mode], claim_seeds)
        costs.append(ClaimCost(claim.id, estimate(work, device, timings=timings) if work else 0.0,
                               sum(w.runs for w in work), sum(w.runs * w.train_examples for w in work)))
        if on_claim is not None:
            on_claim(costs[-1])
    return costs


def dry_run(claims: str | None = "all", mode: str = "quick", seeds: str | Sequence[int] | None = None,
            device: str = "auto", on_start: Callable[[str, list[str]], None] | None = None,
            on_claim: Callable[[ClaimCost], None] | None = None) -> tuple[str, list[ClaimCost]]:
    """``hetbench reproduce --dry-run``: check the claims, seeds and device as :func:`reproduce` does,
    run nothing, and estimate each claim's training cost here (:func:`estimate_claims`). ``on_start``
    gets the resolved device and the claim ids before the first estimate, ``on_claim`` each cost as it
    is made.

    Returns
    -------
    tuple
        The resolved device (``cpu``, ``cuda:0``, ...) and one :class:`ClaimCost` per claim.

    Examples
    --------
    >>> device, costs = dry_run("hsu-geo-clients", "full")
    >>> [c.line(15) for c in costs]
    ['hsu-geo-clients  no federated training (seconds)']
    """
    from hetbench.train.device import resolve_device

    ids, seed_list, loaded = checked_claims(claims, mode, seeds)
    resolved = str(resolve_device(device))
    if on_start is not None:
        on_start(resolved, ids)
    return resolved, estimate_claims(loaded, mode, seed_list, resolved, on_claim)
