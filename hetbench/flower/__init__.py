"""hetbench on Flower: the Flower Datasets partitioner of a hetbench split, and hetbench's algorithms
run through Flower's Message API (simulation and deployment engines).

Flower is an optional extra (``pip install 'hetbench[flower]'``): nothing here imports ``flwr`` or
``flwr_datasets`` until a name that needs it is used.

Importing this package turns Flower's telemetry off (``FLWR_TELEMETRY_ENABLED=0``) unless the
environment already says otherwise: hetbench makes no network call at run time, and Flower and Flower
Datasets would otherwise send usage events from a run or a ``load_partition``.
"""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")

_LAZY = {"HetbenchPartitioner": "hetbench.flower.partitioner"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hetbench.flower' has no attribute {name!r}")


__all__ = sorted(_LAZY)
