"""The partitioner interface (``docs/architecture.md``: the pipeline's partition step, and how to add
a partitioner).

A partitioner holds its parameters (set in the constructor) and has one method,
``partition(table, seed) -> Partition``, which partitions the table's ``train`` split. The heavy
lifting is a pure numpy function in the same module that tests call directly. Randomness comes only
from a ``numpy.random.Generator`` made from the seed.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from hetbench.partition import Partition
from hetbench.seeding import make_rng
from hetbench.table import SampleTable


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
