"""Reference federated trainer: score FL algorithms on any hetbench split.

A split is read only through the published contract (``docs/output-contract.md``):
``datasets.load_dataset`` on a built folder, clients by ``client_id``, groups by ``device`` / ``domain`` / ``s2_cell`` / ``user_id``.
Every client runs in this one process; the images are decoded once into a memory-mapped cache
(:mod:`hetbench.train.cache`) and clients are index arrays into it, so resident memory stays bounded by
the model and a few batches, not by the split or the number of clients.

The path through the package (``docs/architecture.md``)::

    split --data.load_federated--> FederatedData
          --simulation.run_training(algorithms.make_algorithm(name), TrainConfig)--> results document
          --results.write_result--> <out>/<split>-<fingerprint[:12]>/<algorithm>[-<params>][-<groups>]-s<seed>.json

:func:`hetbench.sweep.sweep` does all of it for every algorithm and seed, as ``hetbench train`` does; it
sits above this package and :mod:`hetbench.flower`, whose engine it can also run. Importing this package
does not import torch.
"""


def __getattr__(name: str):
    """``hetbench.train.sweep``, ``default_split`` and ``RunResult``, deprecated aliases of :mod:`hetbench.sweep`'s
    (they moved there; CHANGELOG.md): each access warns with a ``DeprecationWarning``.

    Examples
    --------
    >>> import warnings
    >>> import hetbench.sweep, hetbench.train
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old = hetbench.train.sweep
    >>> old is hetbench.sweep.sweep, caught[0].category.__name__
    (True, 'DeprecationWarning')
    """
    if name in ("sweep", "default_split", "RunResult"):
        import warnings

        from hetbench.train import moved

        warnings.warn(f"hetbench.train.{name} is deprecated: use {moved.MOVED[name]} (it moved there; this alias "
                      "will be removed)", DeprecationWarning, stacklevel=2)
        return getattr(moved, name)
    raise AttributeError(f"module 'hetbench.train' has no attribute {name!r}")
