"""What a split made from another hetbench build inherits: the data's origin and licence.

Re-partitioning a hetbench build (``hetbench partition dirichlet --dataset demo_out/iso-isp-wb-tone``)
makes a new split of the same data. Its card must keep the data's licence, credits and papers, which
belong to the data set the first build was made from (``builtin:digits``, a corpus recipe, a hub id), not
to the folder it is read from. The source table records that data set as ``source.origin`` (followed
through any chain of re-partitions) and takes the licence the build's card declares, so that
:func:`hetbench.publish.attribution.card_licence` credits the origin.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def build_lineage(dataset: str) -> dict[str, Any]:
    """The origin and licence a source inherits when ``dataset`` is a local hetbench build, else ``{}``.

    Parameters
    ----------
    dataset : str
        The source reference as given (a path, a hub id, ...).

    Returns
    -------
    dict
        ``{"origin": <the data set the build was made from>, "license": <its card's licence>}`` and the
        ``licence`` its maker gave it, if any (:mod:`hetbench.publish.licence`), and the ``methods`` that made
        it (its recipe's, then those it inherited) for a hetbench build folder (the origin of a build made from
        another build is that build's origin); ``{}`` for anything else.

    Examples
    --------
    >>> from hetbench.partitioners import ShardsPartitioner
    >>> from hetbench.publish import publish_split
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> _ = publish_split(build_split(load_table("builtin:digits"), ShardsPartitioner(4, 2)), "first", quiet=True)
    >>> build_lineage("first")
    {'origin': 'builtin:digits', 'methods': ['shards'], 'license': 'cc-by-4.0'}
    >>> build_lineage("builtin:digits")
    {}
    """
    from hetbench.contract import manifest_or_none

    path = Path(str(dataset)).expanduser()
    doc = manifest_or_none(path)
    source = (doc or {}).get("source")
    if not isinstance(source, dict):
        return {}  # not a build, or an unreadable manifest: the source reader says so in its own words
    origin = source.get("origin") or source.get("dataset")
    out: dict[str, Any] = {"origin": origin} if isinstance(origin, str) and origin else {}
    if isinstance(doc.get("licence"), dict):  # the licence the build's maker gave (hetbench.publish.licence)
        out["licence"] = doc["licence"]
    recipe = doc.get("recipe") if isinstance(doc.get("recipe"), dict) else {}
    step = recipe.get("build") or recipe.get("partition")
    made = step.get("method") if isinstance(step, dict) else None
    before = source.get("methods") if isinstance(source, dict) and isinstance(source.get("methods"), list) else []
    methods = [m for m in [made, *before] if isinstance(m, str)]
    if methods:  # what made the build (and the builds before it): the re-partition's card still cites them
        out["methods"] = list(dict.fromkeys(methods))
    licence = _card_licence(path / "README.md")
    if licence:
        out["license"] = licence
    return out


def _card_licence(card: Path) -> str | None:
    """The ``license`` of a card's YAML front matter (``license_name`` for an ``other`` licence), if any."""
    from huggingface_hub import metadata_load

    try:
        data = metadata_load(card) or {}
    except Exception:  # noqa: BLE001 - no card, or front matter that is not YAML: nothing to inherit
        return None
    licence = data.get("license")
    if licence == "other" and isinstance(data.get("license_name"), str):
        return data["license_name"]
    return licence if isinstance(licence, str) else None
