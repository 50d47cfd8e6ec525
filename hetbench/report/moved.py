"""Names that moved out of this package, kept for old imports (CHANGELOG.md): ``hetbench.report.refresh_report``
is :func:`hetbench.tools.report_refresh.refresh_report`'s since recomputing a built folder's report reads and
rewrites the folder, which puts it in the tools room above :mod:`hetbench.publish`. ``hetbench.report``'s
``__getattr__`` hands it out with a ``DeprecationWarning``; like the facade (``hetbench/__init__``), this
module stands outside the layers.
"""

from __future__ import annotations

from hetbench.tools.report_refresh import refresh_report

#: old name in ``hetbench.report`` -> where it lives now
MOVED = {"refresh_report": "hetbench.tools.report_refresh.refresh_report"}

__all__ = ["MOVED", "refresh_report"]
