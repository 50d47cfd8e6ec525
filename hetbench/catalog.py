"""What hetbench has, by name, with one line each: the listing behind ``hetbench list``.

Every section is read from the place that defines it, so the list never disagrees with what the
commands accept:

* ``built-ins``: the ``builtin:`` sources (:data:`hetbench.sources.builtins.BUILTINS`);
* ``partitioners``: the partition methods a recipe names (:data:`hetbench.partitioners.REGISTRY`);
* ``recipes``: the canonical benchmarks in ``manifests/recipes/*.yaml``;
* ``profiles``: the device profile sets in ``manifests/devices/*.yaml`` (``build devices --profiles``).

The sections of the layers above the core (``builders``, ``algorithms``, ``models``) are handed in
by the caller as ``providers`` (the CLI passes the ``hetbench build`` commands and the trainer's
registries), so this module imports nothing above the core (``docs/architecture.md``).

Examples
--------
>>> from hetbench.catalog import catalog, format_catalog
>>> listing = catalog(["built-ins", "recipes"])
>>> [e.name for e in listing["built-ins"]][:2]
['builtin:digits', 'builtin:mnist5k']
>>> print(format_catalog({"recipes": [e for e in listing["recipes"] if e.name == "inaturalist-geo-100"]}))
recipes:
  inaturalist-geo-100  iNaturalist-Geo-100 (Hsu, Qi & Brown, ECCV 2020, sec. 4.1): iNaturalist 2017 training images with locations, clients = adaptive S2 cells split until none holds more than Nmax = 100 images; cells with fewer than 0.01 x Nmax images are dropped. [build geo]
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable, Iterable, Mapping, Sequence

from hetbench.errors import HetbenchError
from hetbench.sentences import first_sentence

#: every section, in the order ``hetbench list`` prints them
SECTIONS: tuple[str, ...] = ("built-ins", "partitioners", "builders", "recipes", "profiles", "algorithms", "models")

@dataclass(frozen=True)
class Entry:
    """One name and what it is, in one line."""

    name: str
    description: str


def registry_entries(registry: Mapping[str, Any]) -> list[Entry]:
    """Name and docstring summary of every entry of a registry (classes or functions), in its order."""
    return [Entry(name, first_sentence(getattr(obj, "__doc__", None))) for name, obj in registry.items()]


def _builtins() -> list[Entry]:
    from hetbench.sources.builtins import BUILTINS

    entries = []
    for e in registry_entries(BUILTINS):
        text = e.description
        if text.startswith(f"{e.name}:"):
            text = text[len(e.name) + 1:].strip()
        entries.append(Entry(e.name, text))
    return entries


def _partitioners() -> list[Entry]:
    from hetbench.partitioners import REGISTRY

    return registry_entries(REGISTRY)


def _yaml_files(folder: str) -> list[tuple[str, dict[str, Any]]]:
    import yaml

    root = resources.files("hetbench.manifests").joinpath(folder)
    out = []
    for name in sorted(p.name for p in root.iterdir() if p.name.endswith(".yaml")):
        data = yaml.safe_load(root.joinpath(name).read_text(encoding="utf-8")) or {}
        out.append((name[: -len(".yaml")], data if isinstance(data, dict) else {}))
    return out


def _recipes() -> list[Entry]:
    return [
        Entry(name, first_sentence(str(d.get("description", ""))) + (f" [build {d['builder']}]" if d.get("builder") else ""))
        for name, d in _yaml_files("recipes")
    ]


def _profiles() -> list[Entry]:
    entries = []
    for name, d in _yaml_files("devices"):
        devices = d.get("devices") or []
        text = first_sentence(str(d.get("description", "")))
        entries.append(Entry(name, f"{len(devices)} devices: {text}" if devices else text))
    return entries


_CORE: dict[str, Callable[[], list[Entry]]] = {
    "built-ins": _builtins,
    "partitioners": _partitioners,
    "recipes": _recipes,
    "profiles": _profiles,
}


def catalog(
    sections: Sequence[str] | None = None, providers: Mapping[str, Callable[[], Iterable[Entry]]] | None = None
) -> dict[str, list[Entry]]:
    """The entries of ``sections`` (default: every section), section -> entries.

    Parameters
    ----------
    sections : sequence of str, optional
        Names from :data:`SECTIONS`; default all of them.
    providers : mapping, optional
        Section -> a function returning its entries, for the sections of layers above the core
        (``builders``, ``algorithms``, ``models``); a section without a provider is left out of the
        default listing and is an error when asked for by name.

    Returns
    -------
    dict
        Section name -> list of :class:`Entry`, in :data:`SECTIONS` order.
    """
    providers = {**_CORE, **(providers or {})}
    if sections is None:
        wanted = [s for s in SECTIONS if s in providers]
    else:
        wanted = []
        for s in sections:
            if s not in SECTIONS:
                raise HetbenchError(f"unknown section '{s}'; choose one of: {', '.join(SECTIONS)}")
            if s not in providers:
                raise HetbenchError(f"section '{s}' needs its provider (the CLI passes it)")
            if s not in wanted:
                wanted.append(s)
    return {s: list(providers[s]()) for s in wanted}


def format_catalog(listing: Mapping[str, Sequence[Entry]]) -> str:
    """Plain text: a heading per section, then one aligned line per entry."""
    blocks = []
    for section, entries in listing.items():
        width = max((len(e.name) for e in entries), default=0)
        lines = [f"{section}:"] + [f"  {e.name.ljust(width)}  {e.description}".rstrip() for e in entries]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
