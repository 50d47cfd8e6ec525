"""Deprecated: the sweep moved to :mod:`hetbench.sweep` (it runs the local and the Flower engine, so it sits above
the trainer). This alias keeps ``from hetbench.train.sweep import sweep`` working for one more release and warns
(``DeprecationWarning``) when it is imported; import :mod:`hetbench.sweep` instead (CHANGELOG.md).

Examples
--------
>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     import importlib, sys
...     _ = sys.modules.pop("hetbench.train.sweep", None)
...     old = importlib.import_module("hetbench.train.sweep")
>>> import hetbench.sweep
>>> old.sweep is hetbench.sweep.sweep, caught[0].category.__name__
(True, 'DeprecationWarning')
"""

from __future__ import annotations

import warnings

from hetbench.sweep import DEFAULT_SPLIT, ENGINES, RunResult, algorithm_names, default_split, sweep

warnings.warn("hetbench.train.sweep is deprecated: import hetbench.sweep (the sweep moved there; this alias will be "
              "removed)", DeprecationWarning, stacklevel=2)

__all__ = ["DEFAULT_SPLIT", "ENGINES", "RunResult", "algorithm_names", "default_split", "sweep"]
