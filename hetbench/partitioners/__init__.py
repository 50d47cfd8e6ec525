"""Partitioners: sample table -> Partition. Look one up by name with :func:`get_partitioner`.

``REGISTRY`` is the explicit mapping of recipe method names to partitioner classes (the names a
manifest records and ``hetbench verify`` rebuilds from); a package adds its own through the entry-point
group ``hetbench.partitioners`` (a :class:`Partitioner` subclass; ``build_split`` and ``verify`` then use it).
"""

from __future__ import annotations

from hetbench.errors import HetbenchError
from hetbench.registry import Registry
from hetbench.partitioners.base import Partitioner
from hetbench.partitioners.devices import DevicePartitioner
from hetbench.seeding import make_rng
from hetbench.partitioners.dirichlet import DirichletPartitioner
from hetbench.partitioners.domains import DomainsPartitioner
from hetbench.partitioners.embedding import EmbeddingPartitioner
from hetbench.partitioners.geo_s2 import GeoS2Partitioner
from hetbench.partitioners.iid import IIDPartitioner
from hetbench.partitioners.natural_id import NaturalIdPartitioner
from hetbench.partitioners.noise import FeatureNoisePartitioner, LabelNoisePartitioner
from hetbench.partitioners.quantity import QuantityPartitioner
from hetbench.partitioners.semantic import SemanticPartitioner
from hetbench.partitioners.shards import ClassesPerClientPartitioner, ShardsPartitioner
from hetbench.partitioners.users import UsersPartitioner

def _check_plugin(name: str, cls: object) -> None:
    """A partitioner plugin is a :class:`Partitioner` subclass whose ``name`` is the name it registers under."""
    if not isinstance(cls, type) or not issubclass(cls, Partitioner) or cls is Partitioner:
        raise HetbenchError(f"partitioner plugin '{name}' is {cls!r}, not a subclass of "
                            "hetbench.partitioners.base.Partitioner")
    if cls.name != name:
        raise HetbenchError(f"partitioner plugin {cls.__module__}.{cls.__qualname__} is named {cls.name!r} but "
                            f"registers as '{name}'; use one name")


REGISTRY: Registry[type[Partitioner]] = Registry("partition method", {
    cls.name: cls
    for cls in (
        IIDPartitioner,
        DirichletPartitioner,
        ShardsPartitioner,
        ClassesPerClientPartitioner,
        NaturalIdPartitioner,
        GeoS2Partitioner,
        UsersPartitioner,
        EmbeddingPartitioner,
        SemanticPartitioner,
        DomainsPartitioner,
        DevicePartitioner,
        QuantityPartitioner,
        FeatureNoisePartitioner,
        LabelNoisePartitioner,
    )
}, plugins="hetbench.partitioners", validate=_check_plugin)


def get_partitioner(method: str, params: dict | None = None) -> Partitioner:
    """Rebuild a partitioner from its recipe (``method`` and ``params``).

    Examples
    --------
    >>> from hetbench.partitioners import get_partitioner
    >>> get_partitioner("dirichlet", {"num_clients": 20, "alpha": 0.1}).params()["alpha"]
    0.1
    """
    cls = REGISTRY[method]
    try:
        return cls(**(params or {}))
    except TypeError as exc:
        raise HetbenchError(f"bad parameters for '{method}': {exc}") from exc


__all__ = [
    "Partitioner",
    "make_rng",
    "get_partitioner",
    "REGISTRY",
    "IIDPartitioner",
    "DirichletPartitioner",
    "ShardsPartitioner",
    "ClassesPerClientPartitioner",
    "NaturalIdPartitioner",
    "GeoS2Partitioner",
    "UsersPartitioner",
    "EmbeddingPartitioner",
    "SemanticPartitioner",
    "DomainsPartitioner",
    "DevicePartitioner",
    "QuantityPartitioner",
    "FeatureNoisePartitioner",
    "LabelNoisePartitioner",
]
