"""hetbench: federated-learning splits that carry real heterogeneity.

The public API (``docs/architecture.md`` shows where each part sits in the pipeline)::

    hetbench.load_table(source)                   # a data set -> SampleTable
    hetbench.get_partitioner(method, params)      # a partitioner by name (or the classes in hetbench.partitioners)
    hetbench.build_split(table, partitioner, seed)    # -> FederatedSplit (train/test rows and client ids)
    hetbench.publish_split(split, out)            # -> a Hugging Face dataset folder (parquet, card, manifest, report)
    hetbench.make_split(source, partitioner, out) # the three steps above in one call
    hetbench.verify(folder)                       # does a built folder still say what its manifest says?
    hetbench.build_iso_isp(out, stages=...)       # a ``hetbench build`` family (build_devices, build_geo, ...)
    hetbench.sweep.sweep(...)                     # score FL algorithms on a split (torch)

Everything heavy (datasets, matplotlib, torch) is imported on first use, so ``import hetbench``
stays cheap.

Examples
--------
>>> import hetbench
>>> table = hetbench.load_table("builtin:digits")
>>> split = hetbench.build_split(table, hetbench.get_partitioner("dirichlet", {"num_clients": 5, "alpha": 0.5}), seed=0)
>>> report = hetbench.publish_split(split, "digits-dirichlet", quiet=True)
>>> report["num_clients"], hetbench.verify("digits-dirichlet").ok
(5, True)
>>> {"load_table", "make_split", "ClientPartitions", "sweep"} <= set(dir(hetbench))
True
"""

from __future__ import annotations

from typing import Any

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, Partition
from hetbench.version import __version__

_LAZY = {
    "load_table": ("hetbench.sources", "load_table"),
    "get_partitioner": ("hetbench.partitioners", "get_partitioner"),
    "build_split": ("hetbench.splits", "build_split"),
    "publish_split": ("hetbench.publish", "publish_split"),
    "make_split": ("hetbench.pipeline", "make_split"),
    "PreparedSplit": ("hetbench.pipeline", "PreparedSplit"),
    "FederatedSplit": ("hetbench.splits", "FederatedSplit"),
    "SampleTable": ("hetbench.table", "SampleTable"),
    "ClientPartitions": ("hetbench.clients", "ClientPartitions"),
    # the ``hetbench build`` families (and the noise methods), each documented parameter by parameter
    "build_iso_isp": ("hetbench.builders.iso_isp", "build_iso_isp"),
    "build_devices": ("hetbench.builders.devices", "build_devices"),
    "build_synthetic_color": ("hetbench.builders.synthetic_color", "build_synthetic_color"),
    "build_real_devices": ("hetbench.builders.real_devices", "build_real_devices"),
    "build_geo": ("hetbench.builders.geo", "build_geo"),
    "build_users": ("hetbench.builders.users", "build_users"),
    "build_digits_domains": ("hetbench.builders.digits_domains", "build_digits_domains"),
    "build_noise": ("hetbench.builders.noise", "build_noise"),
}


def verify(folder: Any, dataset: str | None = None, *, re_embed: bool = False, trust_embedder: bool = False):
    """Check a built folder: its manifest's ids, the recipe re-run on the source (or on ``dataset``),
    and its parquet rows. Returns a :class:`~hetbench.tools.verify.Verdict` (``ok``, ``message``).

    Splits whose rows a builder rendered (iso-isp, devices, synthetic colour) are re-rendered;
    embedding splits are re-derived from their stored embeddings (``re_embed``, ``trust_embedder``:
    :func:`hetbench.tools.verify.verify_folder`).
    """
    from hetbench.builders import rebuilders
    from hetbench.tools.verify import verify_folder

    return verify_folder(folder, dataset, rebuilders(), re_embed=re_embed, trust_embedder=trust_embedder)


_SUBPACKAGES = ("train", "sweep", "partitioners", "sources", "embed", "report", "publish", "leaderboard", "builders",
                "isp", "flower", "reproduce", "contract", "tools")


def __dir__() -> list[str]:
    """The module's names, the lazy ones (``load_table``, ``make_split``, ...) and subpackages included."""
    return sorted(set(globals()) | set(_LAZY) | set(_SUBPACKAGES))


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"hetbench.{name}")
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hetbench' has no attribute '{name}'")


__all__ = ["__version__", "HetbenchError", "Partition", "DropReason", "verify", *_LAZY]
