"""Every random choice in hetbench comes from a Generator made here from the user's ``--seed``.

A *path* of integers names one independent stream below the seed (a capture, a device, a stage of
a build), so a choice does not depend on the order in which work runs or on the number of workers.
This module depends on nothing of hetbench but :mod:`hetbench.errors`, so every layer may use it.
"""

from __future__ import annotations

import operator

import numpy as np

from hetbench.errors import HetbenchError

#: Seeds are integers in ``[0, SEED_LIMIT)``: SeedSequence takes any non-negative integer, but
#: ``torch.manual_seed`` (the trainer, the task embedder) takes at most 64 bits.
SEED_LIMIT = 2**64


def check_seed(seed, option: str = "`seed`") -> int:
    """``seed`` as an int if it is a valid seed, else a :class:`~hetbench.errors.HetbenchError`.

    Parameters
    ----------
    seed : int
        The user's seed: a non-negative integer below ``2**64``.
    option : str
        The option named in the error message.

    Returns
    -------
    int
        The seed.

    Examples
    --------
    >>> from hetbench.seeding import check_seed
    >>> check_seed(7)
    7
    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: seed must be a non-negative integer (got -1)
    """
    try:
        seed = operator.index(seed)
    except TypeError:
        raise HetbenchError(f"{option} must be a non-negative integer (got {seed!r})") from None
    if seed < 0:
        raise HetbenchError(f"{option} must be a non-negative integer (got {seed})")
    if seed >= SEED_LIMIT:
        raise HetbenchError(f"{option} must be below 2**64 = {SEED_LIMIT} (got {seed})")
    return int(seed)


def make_rng(seed: int, *path: int) -> np.random.Generator:
    """The Generator of ``seed`` (a PCG64 seeded through ``numpy.random.SeedSequence``) or of the
    stream ``path`` below it.

    Parameters
    ----------
    seed : int
        The user's seed: a non-negative integer below ``2**64`` (else a
        :class:`~hetbench.errors.HetbenchError`, see :func:`check_seed`).
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
    return np.random.default_rng(np.random.SeedSequence([check_seed(seed), *(int(p) for p in path)]))
