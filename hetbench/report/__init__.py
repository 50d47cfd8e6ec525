"""The heterogeneity report of a split: ``report.json`` and its plots.

* :mod:`~hetbench.report.metrics` - the numbers (:func:`compute_report`), a pure function of client
  ids and labels: scalar summaries for ``report.json``, per-client statistics for
  ``report/clients.parquet`` (:func:`read_clients` reads them back);
* :mod:`~hetbench.report.plots` - the plots every report has (sampled when there are thousands of
  clients), and writing the report (:func:`write_report`);
* :mod:`~hetbench.report.refresh` - recomputing a built folder's report (``hetbench report``);
* :mod:`~hetbench.report.embedding`, :mod:`~hetbench.report.devices` - what embedding and device
  splits add.

The report's keys are listed in ``docs/output-contract.md``.
"""

from hetbench.report.classes import CLASSES_FILE, read_classes
from hetbench.report.metrics import CLIENTS_FILE, ClientStats, Report, compute_report, read_clients
from hetbench.report.plots import PLOTS, write_report
from hetbench.report.refresh import refresh_report

__all__ = ["compute_report", "write_report", "refresh_report", "read_clients", "ClientStats", "Report", "PLOTS", "CLIENTS_FILE",
           "CLASSES_FILE", "read_classes"]
