"""The partitioner interface (``docs/architecture.md``: the pipeline's partition step, and how to add
a partitioner).

A partitioner holds its parameters (set in the constructor) and has one method,
``partition(table, seed) -> Partition``, which partitions the table's ``train`` split. The heavy
lifting is a pure numpy function in the same module that tests call directly. Randomness comes only
from a ``numpy.random.Generator`` made from the seed.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import Partition
from hetbench.seeding import make_rng
from hetbench.table import SampleTable


def sizes_before_holdout(train_sizes: np.ndarray, fraction: float) -> np.ndarray:
    """The client sizes that leave exactly ``train_sizes`` training rows after every client holds out
    ``fraction`` of its rows (the ``client`` test policy, :func:`hetbench.splits.stratified_holdout`:
    T = round(fraction * n), at least 1 and at most n - 1 when n >= 2, none when n < 2).

    Parameters
    ----------
    train_sizes : numpy.ndarray
        Non-negative training rows wanted per client.
    fraction : float
        The per-client test fraction, in (0, 1).

    Returns
    -------
    numpy.ndarray
        int64 rows per client before the hold-out: the smallest n with n - T(n) = train size.

    Examples
    --------
    >>> import numpy as np
    >>> sizes_before_holdout(np.array([0, 1, 2, 100, 575]), 0.2).tolist()
    [0, 1, 3, 125, 719]
    """
    s = np.asarray(train_sizes, dtype=np.int64)
    guess = np.floor(s / (1.0 - fraction)).astype(np.int64)
    n = np.maximum(guess[:, None] + np.arange(-3, 5)[None, :], 0)  # n - T(n) grows by 0 or 1 per step
    held = np.where(n >= 2, np.clip(np.rint(fraction * n).astype(np.int64), 1, n - 1), 0)
    hit = (n - held) == s[:, None]
    return n[np.arange(s.size), np.argmax(hit, axis=1)]


def check_holdout(fraction: float | None, minimum: int) -> float | None:
    """The ``holdout_fraction`` a partitioner with a minimum client size keeps: None when there is no
    hold-out or when ``minimum`` is at most 1 (any client keeps a training row), else the fraction,
    which must lie in (0, 1) (:class:`~hetbench.errors.HetbenchError` otherwise, as for
    ``--test-fraction``).

    Examples
    --------
    >>> check_holdout(0.2, 5), check_holdout(0.2, 1), check_holdout(None, 5)
    (0.2, None, None)
    """
    if fraction is None or minimum <= 1:
        return None
    fraction = float(fraction)
    if not 0.0 < fraction < 1.0:
        raise HetbenchError(f"`test_fraction` must be between 0 and 1 (got {fraction})")
    return fraction


def rows_for_training(min_train: int, holdout_fraction: float | None) -> int:
    """The fewest rows a client needs so that at least ``min_train`` of them stay training rows once
    the ``client`` test policy holds out ``holdout_fraction`` of them (None: no hold-out, every row
    trains). What ``--min-samples`` and ``--min-size`` ask of a client's rows in the partitioned split.

    Examples
    --------
    >>> rows_for_training(5, 0.2), rows_for_training(5, None), rows_for_training(1, 0.5), rows_for_training(10, 0.5)
    (6, 5, 1, 20)
    """
    if holdout_fraction is None or min_train <= 1:
        return max(int(min_train), 0)
    f = float(holdout_fraction)
    # the training rows left, n - T(n), grow by 0 or 1 with every row more: bisect for the first n
    # that leaves min_train (n = min_train leaves fewer; the upper bound leaves at least min_train)
    lo, hi = int(min_train), int(math.ceil((min_train + 1) / (1.0 - f))) + 2
    while lo < hi:
        mid = (lo + hi) // 2
        if mid - training_holdout(mid, f) >= min_train:
            hi = mid
        else:
            lo = mid + 1
    return lo


def training_holdout(n: int, fraction: float) -> int:
    """The rows a client of ``n`` rows holds out under the ``client`` test policy
    (:func:`hetbench.splits.stratified_holdout`): round(fraction * n), at least 1 and at most n - 1
    when n >= 2, none when n < 2.

    Examples
    --------
    >>> [training_holdout(n, 0.2) for n in (1, 2, 5, 6, 8)]
    [0, 1, 1, 1, 2]
    """
    if n < 2:
        return 0
    return int(min(max(int(np.rint(fraction * n)), 1), n - 1))


def holdout_note(min_train: int, holdout_fraction: float | None) -> str:
    """``"N training rows"``, with the rows that means before the client test policy's hold-out.

    Examples
    --------
    >>> holdout_note(5, 0.2), holdout_note(5, None)
    ('5 training rows (6 rows before each client holds out 0.2 of its rows for testing)', '5 training rows')
    """
    need = rows_for_training(min_train, holdout_fraction)
    rows = f"{min_train} training row{'' if min_train == 1 else 's'}"
    if need == min_train:
        return rows
    return f"{rows} ({need} rows before each client holds out {holdout_fraction:g} of its rows for testing)"


def split_partition(train: Partition, split: str, assignment: np.ndarray, reason: np.ndarray) -> Partition:
    """The partition of another ``split`` on ``train``'s clients: its client names, and its recipe
    with ``split`` replaced (what :meth:`Partitioner.assign_split` returns)."""
    recipe = dict(train.recipe, split=split)
    return Partition(assignment, train.num_clients, train.client_names, recipe, reason)


class Partitioner:
    """Base class of the partitioners: a table's split -> a :class:`~hetbench.partition.Partition`.

    Subclasses set :attr:`name` (the recipe's ``method``, the key of
    :data:`hetbench.partitioners.REGISTRY`), store their parameters in ``__init__`` and implement
    :meth:`params` and :meth:`_assign`; those that can place the rows of another split (e.g.
    ``test``) consistently with the partitioned one also override :meth:`assign_split`.
    ``docs/architecture.md`` walks through adding one.

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.sources import load_table
    >>> part = IIDPartitioner(num_clients=3).partition(load_table("builtin:digits"), seed=0)
    >>> part.recipe["method"], part.recipe["params"], part.recipe["seed"], part.recipe["split"]
    ('iid', {'num_clients': 3, 'sizes': None}, 0, 'train')
    """

    name: ClassVar[str] = ""
    #: the builder that rendered the table this partitioner splits, ``{"method": ..., "params": ...}``:
    #: :func:`hetbench.splits.build_split` records it as the recipe's ``build`` (what ``hetbench verify``
    #: re-runs), beside this partitioner's own ``partition``; None for a table read from a source
    build: dict[str, Any] | None = None

    def derive_columns(self, fs: Any) -> None:
        """Add to ``fs.table`` the columns this partitioner derives (``cluster``, ``s2_cell``, renamed
        coordinates, ...). :func:`hetbench.splits.build_split` calls it on every split it builds, so
        the Python API, the CLI and ``hetbench verify``'s re-run publish the same columns. The base
        class derives none.

        Parameters
        ----------
        fs : FederatedSplit
            The split just built (its partition and output rows are final).
        """

    def params(self) -> dict[str, Any]:
        """The parameters that, with the seed and the input, determine the assignment."""
        raise TypeError(f"{type(self).__name__} must define params()")

    def holding_out(self, fraction: float) -> "Partitioner":
        """This partitioner with its client sizes (``sizes``, ``min_size``, ``min_samples``) counted in
        training rows once the ``client`` test policy holds out ``fraction`` of each client's rows, as
        the CLI counts ``--sizes``, ``--min-size`` and ``--min-samples``: a copy with ``holdout_fraction``
        set, or the partitioner itself when it counts no rows or already holds out a fraction
        (:func:`hetbench.splits.build_split`'s ``count_training_rows``). The base class counts none.

        Examples
        --------
        >>> from hetbench.partitioners import IIDPartitioner
        >>> IIDPartitioner(2, sizes=[100, 40]).holding_out(0.2).params()
        {'num_clients': 2, 'sizes': [100, 40], 'holdout_fraction': 0.2}
        >>> p = IIDPartitioner(2)
        >>> p.holding_out(0.2) is p
        True
        """
        return self

    def __repr__(self) -> str:
        """``Name(param=value, ...)``: the parameters the recipe records.

        Examples
        --------
        >>> from hetbench.partitioners import DirichletPartitioner
        >>> DirichletPartitioner(5, 0.5)
        DirichletPartitioner(num_clients=5, alpha=0.5, scheme='client', sizes=None, min_size=0)
        """
        try:
            params = self.params()
        except TypeError:
            params = {}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})"

    def recipe(self, table: SampleTable, seed: int, split: str = "train") -> dict[str, Any]:
        """What rebuilds the partition: method, parameters, seed, split and the input's fingerprint
        (the recipe fields of ``docs/output-contract.md``)."""
        return {
            "method": self.name,
            "params": self.params(),
            "seed": int(seed),
            "split": split,
            "input_fingerprint": table.fingerprint,
        }

    def partition(self, table: SampleTable, seed: int = 0, split: str = "train") -> Partition:
        """Partition ``table``'s ``split``; the same seed and input give the same partition.

        Parameters
        ----------
        table : SampleTable
            The input rows and their labels.
        seed : int, default 0
            Seed of the ``numpy.random.Generator`` (:func:`hetbench.seeding.make_rng`) that is the
            only source of randomness.
        split : str, default "train"
            The split to partition.

        Returns
        -------
        Partition
            Client id per row (-1 = dropped, with a drop reason), client names and the recipe.
        """
        rng = make_rng(seed)
        assignment, reason, num_clients, names = self._assign(table, split, rng)
        return Partition(assignment, num_clients, names, self.recipe(table, seed, split), reason)

    def assign_split(self, table: SampleTable, split: str, train: Partition) -> Partition | None:
        """Assign another split (e.g. test) consistently with ``train``; None when the method has no
        natural way to (then the build's test-split policy decides)."""
        return None

    def _assign(
        self, table: SampleTable, split: str, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray | None, int, tuple[str, ...]]:
        """(assignment int32, drop reason int8 or None, number of clients, client names)."""
        raise TypeError(f"{type(self).__name__} must define _assign()")
