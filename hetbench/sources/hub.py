"""Hugging Face hub ids as sources (``owner/name``), read with ``datasets.load_dataset``.

A hub id is tried only when no local file or folder of that name exists; offline, only a data set
already in the local ``datasets`` cache can be read. Nothing else in hetbench downloads.
"""

from __future__ import annotations

import re

from hetbench.errors import HetbenchError


def looks_like_hub_id(dataset: str) -> bool:
    """Whether ``dataset`` has the form of a hub id (``owner/name``, not a relative or absolute path).

    Examples
    --------
    >>> from hetbench.sources.hub import looks_like_hub_id
    >>> looks_like_hub_id("ylecun/mnist"), looks_like_hub_id("./data/mnist"), looks_like_hub_id("a/b/c")
    (True, False, False)
    """
    return bool(re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", dataset)) and not dataset.startswith((".", "/"))


def read_hub(repo_id: str) -> dict:
    """The splits of hub data set ``repo_id`` (``{split: datasets.Dataset}``).

    Parameters
    ----------
    repo_id : str
        ``owner/name`` on the Hugging Face hub (or in the local ``datasets`` cache).

    Raises
    ------
    HetbenchError
        When it cannot be loaded (no network, no cache, no such data set).

    Examples
    --------
    Reading a hub id needs a network or a cache that holds it, so this example does not run in
    the test suite; :func:`looks_like_hub_id` decides when a reference is tried as one.

    >>> from hetbench.sources.hub import read_hub
    >>> read_hub("ylecun/mnist")["train"].num_rows  # doctest: +SKIP
    60000
    """
    import datasets

    try:
        obj = datasets.load_dataset(repo_id)
    except Exception as exc:
        raise HetbenchError(
            f"dataset '{repo_id}' is not a local path and could not be loaded from the Hugging Face hub "
            f"({type(exc).__name__})"
        ) from exc
    return dict(obj) if isinstance(obj, datasets.DatasetDict) else {"train": obj}
