"""hetbench on Flower: the Flower Datasets partitioner of a hetbench split, and hetbench's algorithms
run through Flower's Message API (simulation and deployment engines).

Flower is an optional extra (``pip install 'hetbench[flower]'``): nothing here imports ``flwr`` or
``flwr_datasets`` until a name that needs it is used.
"""

from __future__ import annotations

from typing import Any

_LAZY = {"HetbenchPartitioner": "hetbench.flower.partitioner"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hetbench.flower' has no attribute {name!r}")


__all__ = sorted(_LAZY)
