"""The heterogeneity report of a split: ``report.json`` and its plots.

* :mod:`~hetbench.report.metrics` - the numbers (:func:`compute_report`), a pure function of client
  ids and labels: scalar summaries for ``report.json``, per-client statistics for
  ``report/clients.parquet`` (:func:`read_clients` reads them back);
* :mod:`~hetbench.report.plots` - the plots every report has (sampled when there are thousands of
  clients), and writing the report (:func:`write_report`);
* :mod:`~hetbench.report.embedding`, :mod:`~hetbench.report.devices` - what embedding and device
  splits add.

The report's keys are listed in ``docs/output-contract.md``. Recomputing a built folder's report
(``hetbench report``) reads and rewrites the folder: :mod:`hetbench.tools.report_refresh`.
"""

from hetbench.report.classes import CLASSES_FILE, read_classes
from hetbench.report.metrics import CLIENTS_FILE, ClientStats, Report, compute_report, read_clients
from hetbench.report.plots import PLOTS, write_report

__all__ = ["compute_report", "write_report", "read_clients", "ClientStats", "Report", "PLOTS", "CLIENTS_FILE",
           "CLASSES_FILE", "read_classes"]


def __getattr__(name: str):
    """``hetbench.report.refresh_report``, a deprecated alias of :func:`hetbench.tools.report_refresh.refresh_report`
    (it moved there; CHANGELOG.md): each access warns with a ``DeprecationWarning``.

    Examples
    --------
    >>> import warnings
    >>> import hetbench.report, hetbench.tools.report_refresh
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old = hetbench.report.refresh_report
    >>> old is hetbench.tools.report_refresh.refresh_report, caught[0].category.__name__
    (True, 'DeprecationWarning')
    """
    if name == "refresh_report":
        import warnings

        from hetbench.report import moved

        warnings.warn(f"hetbench.report.{name} is deprecated: use {moved.MOVED[name]} (it moved there; this alias "
                      "will be removed)", DeprecationWarning, stacklevel=2)
        return getattr(moved, name)
    raise AttributeError(f"module 'hetbench.report' has no attribute {name!r}")
