"""What ``hetbench reproduce`` checks before it runs anything: the claim ids, the mode, the seed list (and whether
each claim's statistics have seeds enough), the seeds each claim runs, and the ``metadata`` tables."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from hetbench.errors import HetbenchError
from hetbench.reproduce.claims import (ALL_MODES, SMOKE, Claim, check_seed_count, load_claim, replicated_seeds,
                                       select_claims)
from hetbench.reproduce.runners import RUNNERS

FULL_SEEDS = (0, 1, 2, 3, 4)


def checked_claims(claims: str | None, mode: str, seeds: str | Sequence[int] | None
                    ) -> tuple[list[str], list[int] | None, list[Claim]]:
    """The claim ids, ``--seeds`` and validated definitions, or one line for an unknown id, mode or seed list,
    a definition that does not validate, or fewer seeds than a claim's statistics need."""
    ids = select_claims(claims)
    if mode not in ALL_MODES:
        raise HetbenchError(f"mode '{mode}' is not one of {', '.join(ALL_MODES)}")
    seed_list = parse_seeds(seeds)
    loaded = [load_claim(i) for i in ids]  # every definition validates before anything runs
    if seed_list is not None and mode != SMOKE:  # a smoke run decides nothing: any seeds
        for claim in loaded:
            check_seed_count(claim.id, seed_list, RUNNERS[claim.runner].seeded, "`seeds`")
    for claim in loaded:
        seeds_of(claim, mode, seed_list)  # a replicated claim refuses seeds its replicates would overlap
    return ids, seed_list, loaded


def seeds_of(claim: Claim, mode: str, seeds: list[int] | None) -> list[int]:
    """The seeds ``claim`` runs in ``mode`` for the seed set ``seeds`` (None: the mode's default: its quick
    ``seeds``, :data:`FULL_SEEDS` in full mode), each replicated as its settings declare
    (:func:`hetbench.reproduce.claims.replicated_seeds`).

    Examples
    --------
    >>> from hetbench.reproduce.claims import load_claim
    >>> from hetbench.reproduce.run_inputs import seeds_of
    >>> seeds_of(load_claim("hsu-label-skew"), "quick", [5, 6, 7, 8, 9])
    [5, 6, 7, 8, 9]
    """
    if seeds is None:
        seeds = list(FULL_SEEDS) if mode == "full" else list(claim.settings[mode].get("seeds", [0]))
    return replicated_seeds(claim.id, seeds, int(claim.settings[mode].get("replicates", 1)))


def check_metadata(metadata: str | None) -> None:
    """Refuse a ``--metadata`` that names nothing readable, before any claim runs (it used to make the
    metadata checks 'not run' while the run ended 'reproduced' with exit code 0).

    Parameters
    ----------
    metadata : str, optional
        A built-in, a local file or folder (or ``SPLIT=PATH,...``), ``inat2017:ANNOTATIONS.json+LOCATIONS.json``
        or a hub id; None: not given.

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        An unknown built-in, a file that does not exist, an ``inat2017:`` source that does not name two files.

    Examples
    --------
    >>> check_metadata(None); check_metadata("builtin:observations")
    >>> check_metadata("nope.csv")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: metadata 'nope.csv' not found (no such file or folder, and not a built-in, an inat2017: source or a hub id)
    """
    from hetbench.sources.builtins import BUILTINS
    from hetbench.sources.hub import looks_like_hub_id

    if metadata is None:
        return
    if not metadata.strip():
        raise HetbenchError("`metadata` is empty; name a table, or leave `metadata` out")
    if metadata.startswith("inat2017:"):
        files = metadata[len("inat2017:"):].split("+")
        if len(files) != 2 or not all(f.strip() for f in files):
            raise HetbenchError(f"`metadata` '{metadata}' must name two files: inat2017:ANNOTATIONS.json+LOCATIONS.json")
        missing = [f for f in files if not Path(f).expanduser().is_file()]
        if missing:
            raise HetbenchError(f"`metadata` '{metadata}': {', '.join(repr(f) for f in missing)} not found")
        return
    if metadata.startswith("builtin:"):
        BUILTINS[metadata]  # an unknown name lists the valid ones
        return
    per_split = "=" in metadata and not Path(metadata).expanduser().exists()
    paths = [part.partition("=")[2].strip() for part in metadata.split(",")] if per_split else [metadata]
    for path in paths:
        if not (path and (Path(path).expanduser().exists() or looks_like_hub_id(path))):
            shown = metadata if path == metadata else f"{metadata}': '{path}"
            raise HetbenchError(f"`metadata` '{shown}' not found (no such file or folder, and not a built-in, an "
                                "inat2017: source or a hub id)")


def parse_seeds(seeds: str | Sequence[int] | None) -> list[int] | None:
    """``--seeds``: a comma list of distinct non-negative integers (None: the mode's default).

    Examples
    --------
    >>> from hetbench.reproduce.run_inputs import parse_seeds
    >>> parse_seeds("0, 1,2"), parse_seeds(None)
    ([0, 1, 2], None)
    >>> parse_seeds("0,x")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: seeds must be a comma list of non-negative integers (got '0,x')
    """
    if seeds is None:
        return None
    if isinstance(seeds, str):
        try:
            out = [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            raise HetbenchError(f"`seeds` must be a comma list of non-negative integers (got '{seeds}')") from None
    else:
        out = [int(s) for s in seeds]
    if not out or any(s < 0 for s in out):
        raise HetbenchError(f"`seeds` must be a comma list of non-negative integers (got '{seeds}')")
    if len(set(out)) != len(out):
        raise HetbenchError(f"`seeds` names a seed twice ('{seeds}')")
    return out
