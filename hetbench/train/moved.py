"""Names that moved out of this package, kept for old imports (CHANGELOG.md): ``hetbench.train.sweep``,
``default_split`` and ``RunResult`` are :mod:`hetbench.sweep`'s since the sweep runs the local and the Flower
engine and so sits above the trainer. ``hetbench.train``'s ``__getattr__`` hands them out with a
``DeprecationWarning``; like the facade (``hetbench/__init__``), this module stands outside the layers.
"""

from __future__ import annotations

from hetbench.sweep import RunResult, default_split, sweep

#: old name in ``hetbench.train`` -> where it lives now
MOVED = {"sweep": "hetbench.sweep.sweep", "default_split": "hetbench.sweep.default_split",
         "RunResult": "hetbench.sweep.RunResult"}

__all__ = ["MOVED", "RunResult", "default_split", "sweep"]
