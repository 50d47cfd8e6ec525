"""Quiet reads: silence ``datasets``' progress bars and log lines while a source is read.

hetbench shows its own progress and turns a failed read into one error line, so every loader that
calls into ``datasets`` (files, hub ids, generated data sets) runs inside :func:`datasets_bars_off`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


@contextmanager
def datasets_bars_off() -> Iterator[None]:
    """Silence ``datasets``' progress bars and log lines for the duration; restore them afterwards.

    Examples
    --------
    >>> import datasets
    >>> from hetbench.sources.quiet import datasets_bars_off
    >>> was = datasets.are_progress_bars_disabled()
    >>> with datasets_bars_off():
    ...     datasets.are_progress_bars_disabled()
    True
    >>> datasets.are_progress_bars_disabled() == was
    True
    """
    import datasets
    from datasets.utils import logging as hf_logging

    was_off = datasets.are_progress_bars_disabled()
    verbosity = hf_logging.get_verbosity()
    datasets.disable_progress_bars()
    hf_logging.set_verbosity(hf_logging.CRITICAL)
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if not was_off:
            datasets.enable_progress_bars()
