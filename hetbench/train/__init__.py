"""Reference federated trainer: score FL algorithms on any hetbench split.

A split is read only through the published contract (``docs/output-contract.md``):
``datasets.load_dataset`` on a built folder, clients by ``client_id``, groups by ``device`` / ``domain`` / ``s2_cell`` / ``user_id``.
Every client runs in this one process; the images are decoded once into a memory-mapped cache
(:mod:`hetbench.train.cache`) and clients are index arrays into it, so resident memory stays bounded by
the model and a few batches, not by the split or the number of clients.

The path through the package (``docs/architecture.md``)::

    split --data.load_federated--> FederatedData
          --simulation.run_training(algorithms.make_algorithm(name), TrainConfig)--> results document
          --results.write_result--> <out>/<split>/<algorithm>[-<params>][-<groups>]-s<seed>.json

:func:`sweep` (in :mod:`hetbench.train.runs`) does all of it for every algorithm and seed, as
``hetbench train`` does; :func:`default_split` is the split it uses when none is given. Importing this
package does not import torch (the names below load on first use).
"""

from __future__ import annotations

from typing import Any

__all__ = ["RunResult", "default_split", "sweep"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from hetbench.train import runs

        return getattr(runs, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
