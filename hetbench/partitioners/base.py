"""The partitioner interface (DESIGN.md section 2).

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


class Partitioner:
    """Base class: subclasses set ``name`` and implement ``params`` and ``_assign``."""

    name: ClassVar[str] = ""

    def params(self) -> dict[str, Any]:
        """The parameters that, with the seed and the input, determine the assignment."""
        raise TypeError(f"{type(self).__name__} must define params()")

    def recipe(self, table: SampleTable, seed: int, split: str = "train") -> dict[str, Any]:
        return {
            "method": self.name,
            "params": self.params(),
            "seed": int(seed),
            "split": split,
            "input_fingerprint": table.fingerprint,
        }

    def partition(self, table: SampleTable, seed: int = 0, split: str = "train") -> Partition:
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
        raise TypeError(f"{type(self).__name__} must define _assign()")
