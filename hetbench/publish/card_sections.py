"""The body of a split's dataset card (:mod:`hetbench.publish.card` writes the front matter and the file): the
recipe, the heterogeneity table and what the split varies by construction, the corpus, the embedding, the plots,
how to use it, the licence and credits, and the papers to cite."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from hetbench.publish.card_use import use_section
from hetbench.publish.citations import bibtex_keys, citations


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
    >>> from hetbench.publish.card_sections import _by_construction
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


def card_body(name, description, source, recipe, report, manifest, plots, lic, method, client_rows) -> str:
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
