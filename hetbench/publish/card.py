"""The dataset card (``README.md``) of a built split, made with ``huggingface_hub``'s ``DatasetCard``.

The YAML front matter is a :class:`huggingface_hub.DatasetCardData`: ``pretty_name``, ``license``
(with ``license_name`` and ``license_link`` when it is ``other``; :mod:`hetbench.publish.attribution`),
``task_categories``, ``size_categories`` (the Hub's bucket of the row count, :func:`size_category`),
``tags`` (``federated-learning``, ``hetbench`` and the heterogeneity the method makes,
:mod:`hetbench.publish.citations`), the ``configs`` whose ``data_files`` tell ``load_dataset`` which
shards make each split, and ``dataset_info.features``. :func:`check_card_metadata` applies the Hub's
rules for these fields offline. The body (:mod:`hetbench.publish.card_sections`) summarises the recipe and
the heterogeneity, shows how to load one client (``datasets``, hetbench, Flower Datasets), credits the data
and cites the papers.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from hetbench.errors import HetbenchError
from hetbench.publish.attribution import HUB_LICENSES, LICENCE_LINK
from hetbench.publish.card_sections import card_body
from hetbench.publish.citations import method_info
from hetbench.publish.licence import GivenLicence, manifest_licence, split_licence

#: the Hub's ``size_categories`` buckets: (upper bound of the row count, exclusive; bucket)
SIZE_BUCKETS = (
    (1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
    (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B"),
    (10_000_000_000, "1B<n<10B"), (100_000_000_000, "10B<n<100B"), (1_000_000_000_000, "100B<n<1T"),
)
#: Hub task categories a hetbench card may declare
TASK_CATEGORIES = frozenset({"image-classification", "tabular-classification", "text-classification",
                             "audio-classification", "tabular-regression", "other"})
_LICENSE_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]*$")


def size_category(num_rows: int) -> str:
    """The Hub's ``size_categories`` bucket of a data set of ``num_rows`` rows.

    Examples
    --------
    >>> from hetbench.publish.card import size_category
    >>> size_category(999), size_category(1_797), size_category(1_000_000)
    ('n<1K', '1K<n<10K', '1M<n<10M')
    """
    for bound, name in SIZE_BUCKETS:
        if num_rows < bound:
            return name
    return "n>1T"


def check_card_metadata(meta: Mapping[str, Any]) -> list[str]:
    """What a card's metadata breaks of the Hub's rules for the fields hetbench writes (offline;
    ``DatasetCard.validate`` asks the Hub over the network): one message per problem.

    Examples
    --------
    >>> from hetbench.publish.card import check_card_metadata
    >>> configs = [{"config_name": "default", "data_files": [{"split": "train", "path": "data/*.parquet"}]}]
    >>> check_card_metadata({"license": "other", "size_categories": ["1K<n<10K"], "configs": configs})
    ['license is other but license_name is missing', 'license is other but license_link is missing']
    """
    problems = []
    licenses = meta.get("license")
    for lic in [licenses] if isinstance(licenses, str) else list(licenses or []):
        if lic not in HUB_LICENSES:
            problems.append(f"license '{lic}' is not a Hub licence id")
    if licenses == "other" or (isinstance(licenses, list) and "other" in licenses):
        for key in ("license_name", "license_link"):
            if not meta.get(key):
                problems.append(f"license is other but {key} is missing")
        name = meta.get("license_name")
        if name and not _LICENSE_NAME.match(str(name)):
            problems.append(f"license_name '{name}' is not lowercase [a-z0-9.-]")
    buckets = {b for _, b in SIZE_BUCKETS} | {"n>1T", "other"}
    for b in meta.get("size_categories") or []:
        if b not in buckets:
            problems.append(f"size_categories '{b}' is not a Hub bucket")
    for t in meta.get("task_categories") or []:
        if t not in TASK_CATEGORIES:
            problems.append(f"task_categories '{t}' is not a Hub task category")
    configs = meta.get("configs")
    if not isinstance(configs, list) or not configs or not configs[0].get("data_files"):
        problems.append("configs with data_files are missing")
    return problems


def card_data(
    splits: list[str], features_yaml: list[dict], license: str | None, task: str, pretty_name: str,
    file_tag: str, *, source: str | None = None, method: str | None = None, num_rows: int = 0,
    given: GivenLicence | None = None, split_rows: Mapping[str, int] | None = None,
):
    """The card's metadata as a :class:`huggingface_hub.DatasetCardData`.

    Parameters
    ----------
    splits : list of str
        Output splits, each loaded from ``data/<split>-<file_tag>-*.parquet``.
    features_yaml : list of dict
        ``datasets.Features._to_yaml_list()`` of the output features.
    license : str
        The source table's licence (a source hetbench ships uses its own, see
        :func:`hetbench.publish.attribution.card_licence`).
    task, pretty_name, file_tag : str
        Hub task category, display name, first 12 hex digits of the split fingerprint.
    source, method : str, optional
        The source data set and the recipe's partition method.
    num_rows : int
        Rows over all splits (``size_categories``).
    given : GivenLicence, optional
        The licence the split's maker gave (the manifest's ``licence``): it wins over the source's.
    split_rows : mapping, optional
        Rows of each split: ``dataset_info.splits`` (the row counts the Hub's viewer shows, and that
        ``datasets.load_dataset`` checks the files against).

    Examples
    --------
    >>> from hetbench.publish.card import card_data
    >>> d = card_data(["train"], [], "cc-by-4.0", "image-classification", "demo", "0123456789ab",
    ...               source="builtin:digits", method="dirichlet", num_rows=1797)
    >>> d.license, d.size_categories, d.tags
    ('cc-by-4.0', ['1K<n<10K'], ['federated-learning', 'hetbench', 'non-iid', 'label-skew'])
    """
    from huggingface_hub import DatasetCardData

    lic = split_licence(source, license, given)
    kind = method_info(method or "").kind
    tags = ["federated-learning", "hetbench"] + (["non-iid"] if kind != "iid" else []) + ([kind] if kind else [])
    other = {"license_name": lic.license_name, "license_link": lic.link or LICENCE_LINK} if lic.license == "other" else {}
    return DatasetCardData(
        pretty_name=pretty_name,
        license=lic.license,
        **other,
        task_categories=[task],
        size_categories=[size_category(num_rows)],
        tags=tags,
        configs=[
            {
                "config_name": "default",
                "default": True,
                "data_files": [{"split": s, "path": f"data/{s}-{file_tag}-*.parquet"} for s in splits],
            }
        ],
        dataset_info={"features": features_yaml, **({"splits": [{"name": s, "num_examples": int(n)} for s, n in
                                                                   split_rows.items()]} if split_rows else {})},
    )


def recipe_method(recipe: Mapping[str, Any]) -> str:
    """What made the split: the builder's method when a builder rendered the table, else the
    partition method (the card's tags and citations follow it).

    Examples
    --------
    >>> recipe_method({"build": {"method": "iso-isp"}, "partition": {"method": "devices"}})
    'iso-isp'
    """
    return str((recipe.get("build") or recipe["partition"])["method"])


def render_card(
    *,
    name: str,
    description: str,
    source: Mapping[str, Any],
    recipe: Mapping[str, Any],
    report: Mapping[str, Any],
    manifest: Mapping[str, Any],
    plots: list[str],
    features_yaml: list[dict],
    license: str,
    task: str,
    file_tag: str,
    client_rows: Mapping[str, Sequence[int]],
) -> str:
    """The whole ``README.md``: :func:`card_data` as YAML front matter, then the Markdown body.
    ``client_rows`` gives each output split's rows per client (the "Use" snippets read a client that has some).

    Raises :class:`~hetbench.errors.HetbenchError` if the metadata breaks a Hub rule
    (:func:`check_card_metadata`), before anything is written.
    """
    from huggingface_hub import DatasetCard

    splits = list(manifest["splits"])
    method = recipe_method(recipe)
    given = manifest_licence(manifest)
    lic = split_licence(source.get("origin") or source.get("dataset"), license, given)  # a re-partition credits the origin
    data = card_data(
        splits, features_yaml, license, task, name, file_tag, source=source.get("origin") or source.get("dataset"), method=method,
        num_rows=sum(int(v["num_rows"]) for v in manifest["splits"].values()), given=given,
        split_rows={s: int(v["num_rows"]) for s, v in manifest["splits"].items()},
    )
    problems = check_card_metadata(data.to_dict())
    if problems:
        raise HetbenchError("dataset card metadata: " + "; ".join(problems))
    body = card_body(name, description, source, recipe, report, manifest, plots, lic, method, client_rows)
    card = DatasetCard("---\n" + data.to_yaml() + "\n---\n" + body)
    return str(card)
