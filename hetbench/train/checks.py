"""What a training run checks once its split is loaded, before any round: every label names a class of the
split, and the results folder can be written. Each refusal is one line (:class:`~hetbench.errors.HetbenchError`,
exit code 2), not a 70-line ``IndexError`` from the loss or a ``FileNotFoundError`` after the last round.
"""

from __future__ import annotations

import os
from typing import Any

from hetbench.errors import HetbenchError


def check_labels(data: Any, split: str) -> None:
    """Refuse a split whose train or test labels fall outside ``0 .. num_classes - 1``.

    Parameters
    ----------
    data : FederatedData
        The loaded split (its ``y_train``, ``y_test`` and ``label_names``).
    split : str
        The split as given, for the message.

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        Naming the first bad label, its split and row, and the classes the split declares.

    Examples
    --------
    >>> import torch
    >>> from types import SimpleNamespace
    >>> ok = SimpleNamespace(y_train=torch.tensor([0, 1]), y_test=torch.tensor([1]), label_names=["a", "b"])
    >>> check_labels(ok, "s")
    >>> bad = SimpleNamespace(y_train=torch.tensor([0, 5]), y_test=torch.tensor([1]), label_names=["a", "b"])
    >>> check_labels(bad, "s")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: the train split of 's' has label 5 at row 1, outside the 2 classes it declares (0 to 1: a, b); every label must name one of them
    """
    import numpy as np

    n = len(data.label_names)
    for name, y in (("train", data.y_train), ("test", data.y_test)):
        labels = np.asarray(y)
        if labels.size == 0:
            continue
        bad = np.flatnonzero((labels < 0) | (labels >= n))
        if bad.size:
            shown = ", ".join(map(str, data.label_names[:5])) + (", ..." if n > 5 else "")
            raise HetbenchError(
                f"the {name} split of '{split}' has label {int(labels[bad[0]])} at row {int(bad[0])}"
                + (f" (and {bad.size - 1:,} more rows)" if bad.size > 1 else "")
                + f", outside the {n} classes it declares (0 to {n - 1}: {shown}); every label must name one of them"
            )


def check_out(out: str | os.PathLike, split: str) -> None:
    """The checks of a results folder ``out`` before the split is read.

    Parameters
    ----------
    out : path
        The results folder (it need not exist).
    split : str
        The split as given.

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        ``out`` empty or a name the file system cannot hold (:func:`hetbench.outnames.check_out_name`), or
        equal to, inside or containing the split (results inside it would change what verify sees).

    Examples
    --------
    >>> check_out("results", "builtin:digits")
    >>> check_out("", "split")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: out is empty; name a folder or file (or leave out out for the default)
    """
    from hetbench.outnames import check_out_name
    from hetbench.outputs import check_inputs

    check_out_name(out)
    check_inputs(out, {"`split`": split})


def check_run(data: Any, split: str, out: str | os.PathLike) -> None:
    """The checks of a loaded split and the results folder ``out`` before a sweep trains.

    Parameters
    ----------
    data : FederatedData
        The loaded split.
    split : str
        The split as given.
    out : path
        The results folder (it need not exist).

    Returns
    -------
    None

    Raises
    ------
    HetbenchError
        A label outside the split's classes (:func:`check_labels`), or a results folder that cannot be
        written (:func:`hetbench.outnames.check_writable`: ``/proc/x``, a read-only file system).

    Examples
    --------
    >>> import torch
    >>> from types import SimpleNamespace
    >>> data = SimpleNamespace(y_train=torch.tensor([0]), y_test=torch.tensor([0]), label_names=["a"])
    >>> check_run(data, "s", "results")
    """
    from hetbench.outnames import check_writable

    check_labels(data, split)
    check_writable(out)
