"""The dataset card (``README.md``) of a built split, made with ``huggingface_hub``'s ``DatasetCard``.

The YAML front matter is a :class:`huggingface_hub.DatasetCardData`: ``pretty_name``, ``license``
(with ``license_name`` and ``license_link`` when it is ``other``; :mod:`hetbench.publish.attribution`),
``task_categories``, ``size_categories`` (the Hub's bucket of the row count, :func:`size_category`),
``tags`` (``federated-learning``, ``hetbench`` and the heterogeneity the method makes,
:mod:`hetbench.publish.citations`), the ``configs`` whose ``data_files`` tell ``load_dataset`` which
shards make each split, and ``dataset_info.features``. :func:`check_card_metadata` applies the Hub's
rules for these fields offline. The body summarises the recipe and the heterogeneity, shows how to
load one client (``datasets``, hetbench, Flower Datasets), credits the data and cites the papers.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from hetbench.errors import HetbenchError
from hetbench.publish.attribution import HUB_LICENSES, LICENCE_LINK
from hetbench.publish.card_use import use_section
from hetbench.publish.citations import bibtex_keys, citations, method_info
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


def _params(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items() if v is not None)


def _recipe_lines(recipe: Mapping[str, Any]) -> list[str]:
    part = recipe["partition"]
    build = recipe.get("build")
    lines = [f"- **build**: `{build['method']}` ({_params(build['params'])})"] if build else []
    lines += [
        f"- **{'partition' if build else 'method'}**: `{part['method']}` ({_params(part['params'])})",
        f"- **seed**: {part['seed']}",
        f"- **test split**: `{recipe['test_split']}`"
        + (f", fraction {recipe['test_fraction']}" if recipe.get("test_fraction") else ""),
        f"- **input fingerprint**: `{part['input_fingerprint'][:16]}...`",
    ]
    return lines


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
    body = _body(name, description, source, recipe, report, manifest, plots, lic, method, client_rows)
    card = DatasetCard("---\n" + data.to_yaml() + "\n---\n" + body)
    return str(card)


def _licence_section(lic, name: str) -> str:
    lines = [f"## Licence and attribution", ""]
    shown = f"`{lic.license}`" + (f" (`{lic.license_name}`)" if lic.license_name else "")
    lines.append(f"Licence of the data of {name}: {shown}. {lic.note}".rstrip())
    if lic.link:
        lines.append(f"\nIts text: <{lic.link}>." if "://" in lic.link else f"\nIts text: [{lic.link}]({lic.link}).")
    if lic.credits:
        lines += ["", "The data comes from:", ""]
        lines += [c if c.startswith("  - ") else f"- {c}" for c in lic.credits]
    lines += ["", "The split itself (the assignment of rows to clients, the manifest and the report) is made "
              "by hetbench: cite it and the papers below."]
    return "\n".join(lines) + "\n"


_WORDS = {2: "two", 3: "three", 4: "four"}


def _citation_section(method: str, lic, inherited: Sequence[str] = ()) -> str:
    """The card's BibTeX block: the papers of ``method``, then those of the methods that made the build this
    split re-partitions (``inherited``, from ``source.methods``: a re-partition of an iso-isp build still cites
    HeteroSwitch), the data's own papers, then hetbench.

    Examples
    --------
    >>> from hetbench.publish.attribution import card_licence
    >>> text = _citation_section("dirichlet", card_licence("builtin:photos", None), ["iso-isp"])
    >>> [k for k in ("hsu2019measuring", "kim2024heteroswitch", "scharstein2014high", "brooks2019unprocessing") if k in text]
    ['hsu2019measuring', 'kim2024heteroswitch', 'scharstein2014high', 'brooks2019unprocessing']
    """
    entries = citations(method)
    papers = entries[:-1]
    seen, earlier = {bibtex_keys(e)[0] for e in papers}, []
    for entry in (e for m in inherited for e in citations(m)[:-1]):
        if bibtex_keys(entry)[0] not in seen:  # a paper the method itself cites is listed once
            seen.add(bibtex_keys(entry)[0])
            earlier.append(entry)
    intro = ("The partition method (`" + method + "`) comes from the first "
             + ("entry" if len(papers) == 1 else f"{_WORDS.get(len(papers), len(papers))} entries") + " below; "
             if papers else f"hetbench registers no paper for the method `{method}`; ")
    if earlier:
        intro += (f"the build it re-partitions ({', '.join(f'`{m}`' for m in inherited)}) from the "
                  + ("next" if papers else "first") + " "
                  + ("one" if len(earlier) == 1 else _WORDS.get(len(earlier), str(len(earlier)))) + "; ")
    intro += "the data's own papers follow, then hetbench." if lic.bibtex else "hetbench is last."
    bib = "\n\n".join(papers + earlier + list(lic.bibtex) + entries[-1:])
    return f"## Citation\n\n{intro}\n\n```bibtex\n{bib}\n```\n"



#: what this build holds, for the published statistics a corpus recipe records (``report["corpus"]``)
_CORPUS_OURS = {"images": "images", "photos": "listed", "classes": "classes", "devices": "devices", "phones": "devices"}


def _corpus_section(report: Mapping[str, Any]) -> str:
    """The corpus recipe's published statistics beside this build's (empty without a corpus recipe).

    Examples
    --------
    >>> print(_corpus_section({"corpus": {"recipe": "imagenet-es", "published": {"images": 54000, "lights": 2},
    ...                                   "images": 60}}).strip())
    The corpus recipe `imagenet-es`: its published statistics beside this build's (a partial copy holds less).
    <BLANKLINE>
    | statistic | published | this build |
    |---|---|---|
    | images | 54,000 | 60 |
    | lights | 2 |  |
    """
    corpus = report.get("corpus")
    if not isinstance(corpus, Mapping) or not corpus.get("published"):
        return ""
    lines = []
    for key, value in corpus["published"].items():
        ours = corpus.get(_CORPUS_OURS.get(key, key), (corpus.get("counts") or {}).get(key))
        ours_text = f"{ours:,}" if isinstance(ours, int) else ""
        lines.append(f"| {key} | {value:,} | {ours_text} |" if isinstance(value, int) else f"| {key} | {value} | {ours_text} |")
    return (f"\nThe corpus recipe `{corpus.get('recipe')}`: its published statistics beside this build's (a partial "
            "copy holds less).\n\n| statistic | published | this build |\n|---|---|---|\n" + "\n".join(lines) + "\n")


#: label EMD below which a device or domain split's label statistics are called near zero
NEAR_ZERO_EMD = 0.05


def _by_construction(report: Mapping[str, Any], recipe: Mapping[str, Any]) -> str:
    """For a device or domain split whose label statistics are near zero: say so, and where its
    heterogeneity is, so that the table below does not read as an IID split (empty otherwise).

    Examples
    --------
    >>> from hetbench.publish.card import _by_construction
    >>> "**What this split varies: its clients' devices.**" in _by_construction({"emd": 0.0, "devices": {}},
    ...                                                                           {"partition": {"method": "device"}})
    True
    >>> _by_construction({"emd": 0.4}, {"partition": {"method": "dirichlet"}})
    ''
    """
    method = str((recipe.get("partition") or {}).get("method"))
    if method not in ("device", "domains") or not report.get("emd", 1.0) < NEAR_ZERO_EMD:
        return ""
    kind = "device" if method == "device" else "domain"
    where = ("the device-to-device distances (`device_distance` in `report.json`, `plots/device_distance.png`) "
             "and the contact sheet show it" if isinstance(report.get("devices"), Mapping)
             else "the per-domain plots show it")
    if isinstance(report.get("feature_shift"), Mapping):
        where = f"the feature-shift rows at the top of the table measure it (`plots/feature_shift.png`); {where}"
    return (f"\n**What this split varies: its clients' {kind}s.** Each client holds the rows of one {kind}. The "
            f"label statistics below are near zero by construction (EMD {report['emd']:.4f}: every {kind} holds "
            f"the same classes in about the same proportions), so they read as an IID split; the heterogeneity "
            f"is in the images, and {where}.\n")


def _embedding_section(report: Mapping[str, Any], recipe: Mapping[str, Any]) -> str:
    """An embedding split's clusters beside its labels (:func:`hetbench.report.embedding.clusters_and_labels_text`)."""
    summary = report.get("embedding")
    if not isinstance(summary, Mapping):
        return ""
    from hetbench.report.embedding import clusters_and_labels_text

    embedder = (recipe.get("partition") or {}).get("params", {}).get("embedder")
    text = clusters_and_labels_text(summary, embedder)
    return f"\n## Clusters and labels\n\n{text}\n" if text else ""


def _partition_method(recipe: Mapping[str, Any]) -> str:
    return str((recipe.get("partition") or {}).get("method"))


def _table(report: Mapping[str, Any], recipe: Mapping[str, Any], dropped_text: str) -> str:
    """The heterogeneity table: what the split was built to vary first (:mod:`hetbench.report.feature_text`)."""
    from hetbench.report.feature_text import heterogeneity_table

    st, cpc = report["size_stats"], report["classes_per_client_stats"]
    label_rows = [
        f"| clients | {report['num_clients']:,} |",
        f"| training samples | {report['num_samples']:,} |",
        f"| classes | {report['num_classes']:,} |",
        f"| EMD to population, weighted mean (Hsu et al. 2020; 0 = IID, 2 = disjoint) | {report['emd']:.4f} |",
        f"| Jensen-Shannon distance, weighted mean | {report['jensen_shannon']:.4f} |",
        f"| Hellinger distance, weighted mean | {report['hellinger']:.4f} |",
        f"| client size min / median / max | {st['min']:.0f} / {st['median']:.0f} / {st['max']:.0f} |",
        f"| client size mean +/- std, Gini, CV | {st['mean']:.1f} +/- {st['std']:.1f}, {st['gini']:.3f}, {st['cv']:.3f} |",
        f"| classes per client min / median / max | {cpc['min']:.0f} / {cpc['median']:.0f} / {cpc['max']:.0f} |",
        f"| dropped samples | {dropped_text} |",
    ]
    return heterogeneity_table(report, _partition_method(recipe), label_rows)


def _feature_note(report: Mapping[str, Any], recipe: Mapping[str, Any]) -> str:
    from hetbench.report.feature_text import feature_note

    text = feature_note(report, _partition_method(recipe))
    return f"\n{text}" if text else ""


def _body(name, description, source, recipe, report, manifest, plots, lic, method, client_rows) -> str:
    rows = "\n".join(
        f"| `{s}` | {v['num_rows']:,} | {report['splits'][s]['clients_with_rows']:,} | {report['splits'][s]['shared_rows']:,} |"
        for s, v in manifest["splits"].items()
    )
    dropped = {s: d for s, d in manifest.get("dropped", {}).items() if d}
    dropped_text = (
        "; ".join(f"{s}: " + ", ".join(f"{k} {v:,}" for k, v in d.items()) for s, d in dropped.items())
        if dropped
        else "none"
    )
    plot_md = "\n\n".join(f"![{p.split('/')[-1][:-4].replace('_', ' ')}]({p})" for p in plots)
    return f"""
# {name}

A federated split built by hetbench from {description}
(source `{source.get('dataset')}`). Each row carries `client_id`; rows with `client_id = -1` belong to a
shared (global) test set.

## Recipe

{chr(10).join(_recipe_lines(recipe))}
- **split fingerprint**: `{manifest['split_fingerprint']}`

`hetbench verify <this folder>` recomputes the assignment from `hetbench.json` and the source and
checks it against the fingerprints above.

## Heterogeneity (training split)
{_by_construction(report, recipe)}
{_table(report, recipe, dropped_text)}

| split | rows | clients with rows | shared rows |
|---|---|---|---|
{rows}

Per-client statistics (training samples, classes, EMD, Jensen-Shannon and Hellinger distance, label
counts, rows per split) are in `{report.get('clients_file', 'report/clients.parquet')}`, one row per client.
{_feature_note(report, recipe)}{_corpus_section(report)}{_embedding_section(report, recipe)}
{plot_md}

{use_section(manifest, recipe, client_rows)}
{_licence_section(lic, name)}
{_citation_section(method, lic, source.get("methods") or ())}"""
