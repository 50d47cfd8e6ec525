"""Every random choice in hetbench comes from a Generator made here from the user's ``--seed``.

A *path* of integers names one independent stream below the seed (a capture, a device, a stage of
a build), so a choice does not depend on the order in which work runs or on the number of workers.
This module depends on nothing of hetbench, so every layer may use it.
"""

from __future__ import annotations

import numpy as np


def make_rng(seed: int, *path: int) -> np.random.Generator:
    """The Generator of ``seed`` (a PCG64 seeded through ``numpy.random.SeedSequence``) or of the
    stream ``path`` below it.

    Parameters
    ----------
    seed : int
        The user's seed (non-negative).
    *path : int
        Integers naming an independent stream below the seed; none gives the seed's own stream.

    Examples
    --------
    >>> from hetbench.seeding import make_rng
    >>> bool(make_rng(0).integers(100) == make_rng(0).integers(100))
    True
    >>> bool(make_rng(0, 1).random() != make_rng(0, 2).random())
    True
    """
    return np.random.default_rng(np.random.SeedSequence([int(seed), *(int(p) for p in path)]))
