"""hetbench: federated-learning splits that carry real heterogeneity.

The core objects are re-exported here; everything heavy (datasets, matplotlib, torch) is imported
by the modules that need it, so ``import hetbench`` stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, Partition

__all__ = ["__version__", "HetbenchError", "Partition", "DropReason"]
