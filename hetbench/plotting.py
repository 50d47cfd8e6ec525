"""Matplotlib for files: every plot hetbench writes goes through :func:`pyplot`."""

from __future__ import annotations


def pyplot():
    """``matplotlib.pyplot`` on the non-interactive Agg backend (files only, no display needed).

    Imported on first use, so commands that draw nothing never import matplotlib.
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt
