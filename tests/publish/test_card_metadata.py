"""The dataset card is Hub-ready (issue 14): it parses back with ``huggingface_hub``'s
``DatasetCard``, keeps the Hub's rules for its metadata (``license_name``/``license_link`` whenever
``license: other``, a ``size_categories`` bucket that matches the rows), cites the method's papers in
BibTeX that parses, and credits the data (the CC BY 2.0 photographs of ``build iso-isp``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest


def _bibtex_entries(text: str) -> list[str]:
    """The entries of the card's ```bibtex block, each checked to parse: ``@type{key,`` then
    ``field = {value}`` pairs with balanced braces, closed by the entry's own ``}``."""
    blocks = re.findall(r"```bibtex\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "the card has one BibTeX block"
    entries, depth, start = [], 0, None
    body = blocks[0]
    for i, ch in enumerate(body):
        if ch == "@" and depth == 0:
            start = i
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            assert depth >= 0, "unbalanced braces"
            if depth == 0 and start is not None:
                entries.append(body[start : i + 1])
                start = None
    assert depth == 0, "unbalanced braces"
    assert body.count("@") == len(entries)
    for e in entries:
        m = re.match(r"@(article|inproceedings|misc|software|book|incollection|techreport)\{([A-Za-z0-9_:.-]+),\n", e)
        assert m, e[:60]
        fields = re.findall(r"^\s+([a-z]+)\s*=\s*\{", e, flags=re.M)
        assert {"title", "author", "year"} <= set(fields), (m.group(2), fields)
    return entries


def _keys(entries: list[str]) -> list[str]:
    return [re.match(r"@\w+\{([^,]+),", e).group(1) for e in entries]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Folders of several families: digits (dirichlet, client test split), mnist5k (shards),
    observations (users), iso-isp (devices, CLI) and digits-domains (domains, CLI)."""
    import hetbench
    from hetbench.cli.main import main
    from hetbench.partitioners import DirichletPartitioner, ShardsPartitioner, UsersPartitioner

    tmp = tmp_path_factory.mktemp("cards")
    out = {
        "dirichlet": tmp / "digits-dir",
        "shards": tmp / "mnist-shards",
        "users": tmp / "obs-users",
        "iso-isp": tmp / "iso",
        "domains": tmp / "dom",
    }
    hetbench.make_split("builtin:digits", DirichletPartitioner(10, 0.5), out["dirichlet"], quiet=True)
    hetbench.make_split("builtin:mnist5k", ShardsPartitioner(20, 2), out["shards"], quiet=True)
    hetbench.make_split("builtin:observations", UsersPartitioner(column="observer", filters="none"), out["users"],
                        quiet=True)
    for args in (["build", "iso-isp", "--stages", "wb,tone", "--size", "32", "--crops-per-photo", "1",
                  "--crop-size", "96", "--out", str(out["iso-isp"]), "-q"],
                 ["build", "digits-domains", "--clients", "8", "--fraction", "0.05", "--out", str(out["domains"]), "-q"]):
        try:
            main(args)
        except SystemExit as exc:
            assert exc.code in (0, None), args
    return out


FAMILIES = ["dirichlet", "shards", "users", "iso-isp", "domains"]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_card_parses_back_and_keeps_the_hub_rules(folders, family):
    from huggingface_hub import DatasetCard, DatasetCardData

    from hetbench.publish.card import check_card_metadata, size_category

    folder = folders[family]
    card = DatasetCard.load(folder / "README.md")
    assert isinstance(card.data, DatasetCardData)
    meta = card.data.to_dict()
    assert check_card_metadata(meta) == []
    if meta["license"] == "other":
        assert meta["license_name"] and meta["license_link"]
        anchor = meta["license_link"].split("#", 1)[1]
        assert f"## {anchor.replace('-', ' ').capitalize()}" in card.text  # the link lands on the card's section
    manifest = json.loads((folder / "hetbench.json").read_text())
    rows = sum(s["num_rows"] for s in manifest["splits"].values())
    assert meta["size_categories"] == [size_category(rows)]
    assert meta["task_categories"] == ["image-classification" if family != "users" else "tabular-classification"]
    assert meta["pretty_name"] == manifest["name"]
    assert {"federated-learning", "hetbench"} <= set(meta["tags"])
    assert sorted(meta["configs"][0]["data_files"], key=lambda d: d["split"]) == [
        {"split": s, "path": f"data/{s}-{manifest['split_fingerprint'][:12]}-*.parquet"} for s in sorted(manifest["splits"])]


def test_the_tags_name_the_heterogeneity(folders):
    from huggingface_hub import DatasetCard

    tags = {f: DatasetCard.load(folders[f] / "README.md").data.tags for f in FAMILIES}
    assert "label-skew" in tags["dirichlet"] and "label-skew" in tags["shards"]
    assert "system-induced-heterogeneity" in tags["iso-isp"]
    assert "domain-shift" in tags["domains"]
    assert "natural-partition" in tags["users"]


@pytest.mark.parametrize("family,papers", [
    ("dirichlet", {"hsu2019measuring"}), ("shards", {"mcmahan2017communication"}),
    ("users", {"hsu2020federated"}), ("iso-isp", {"kim2024heteroswitch"}), ("domains", {"jia2024dapperfl"}),
])
def test_every_family_cites_its_papers_in_bibtex_that_parses(folders, family, papers):
    text = (folders[family] / "README.md").read_text()
    keys = _keys(_bibtex_entries(text))
    assert papers <= set(keys)
    assert keys[-1] == "hetbench" and len(keys) == len(set(keys))


def test_the_licences_of_the_builtin_sources(folders):
    from huggingface_hub import DatasetCard

    lic = {f: DatasetCard.load(folders[f] / "README.md").data.to_dict() for f in FAMILIES}
    assert lic["dirichlet"]["license"] == "cc-by-4.0"
    assert lic["shards"]["license"] == "cc-by-sa-3.0"
    assert lic["users"]["license"] == "cc0-1.0"
    assert lic["domains"]["license"] == "other" and lic["domains"]["license_name"] == "digits-domains-mixed"
    assert lic["iso-isp"]["license"] == "other" and lic["iso-isp"]["license_name"] == "embedded-photographs-mixed"
    dom = (folders["domains"] / "README.md").read_text()
    assert "CC BY-SA 3.0" in dom and "CC BY 4.0" in dom and "china.jpg" in dom and "matplotlib" in dom


def test_the_iso_isp_card_credits_the_photographs_as_scikit_learn_does(folders):
    import sklearn.datasets

    text = (folders["iso-isp"] / "README.md").read_text()
    section = text.split("## Licence and attribution", 1)[1].split("## Citation", 1)[0]
    readme = (Path(sklearn.datasets.__file__).parent / "images" / "README.txt").read_text()
    for image in ("china.jpg", "flower.jpg"):
        block = readme.split(f"Image: {image}", 1)[1].split("Image:", 1)[0]
        assert f"`{image}`" in section
        for line in block.splitlines():
            line = line.strip()
            if line.startswith("Attribution:"):
                assert line.split(" [")[0] in section  # "Attribution: Some rights reserved by ..."
            elif line.startswith("Retrieved"):
                assert line.split(" from ")[0] in section and "by Robert Layton" in section
            elif line.startswith("["):
                assert line.split("] ", 1)[1] in section  # every link of the credit
    for scene in ("astronaut", "coffee", "chelsea", "rocket", "motorcycle"):
        assert f"`{scene}`" in section
    assert "CC BY 2.0" in section


def test_the_card_shows_how_to_load_a_client(folders):
    """The snippets read a client of the split (the first with rows), with Flower Datasets' own partitioner where
    every client has rows; tests/publish/test_card_snippets.py runs them."""
    iso = (folders["iso-isp"] / "README.md").read_text()  # global test policy: a shared test split
    assert '"train": NaturalIdPartitioner(partition_by="client_id"),' in iso
    assert 'fds.load_split("test")       # the shared test rows (client_id = -1)' in iso
    assert "client_0 = clients.load_partition(0)      # a datasets.Dataset" in iso
    digits = (folders["dirichlet"] / "README.md").read_text()  # client policy: test rows have clients
    assert 'client_0_test = fds.load_partition(0, "test")' in digits
    assert 'filters=[("client_id", "==", 0)]' in digits


def test_the_folders_still_load_with_datasets(folders):
    import datasets

    for family in ("iso-isp", "domains"):
        ds = datasets.load_dataset(str(folders[family]))
        manifest = json.loads((folders[family] / "hetbench.json").read_text())
        assert {s: ds[s].num_rows for s in ds} == {s: v["num_rows"] for s, v in manifest["splits"].items()}


def test_every_registered_method_has_papers_that_parse():
    from hetbench.partitioners import REGISTRY
    from hetbench.publish.citations import METHODS, citations

    assert set(REGISTRY) <= set(METHODS), "add the new partition method to hetbench.publish.citations.METHODS"
    for method in [*METHODS, "iso-isp", "devices", "synthetic-color"]:
        entries = _bibtex_entries("```bibtex\n" + "\n\n".join(citations(method)) + "\n```")
        keys = _keys(entries)
        assert keys[-1] == "hetbench"
        if method != "natural-id":
            assert len(keys) >= 2, method


def test_an_unknown_method_cites_hetbench_alone():
    from hetbench.publish.citations import citations, method_info

    assert method_info("made-up").kind is None
    assert _keys(_bibtex_entries("```bibtex\n" + "\n\n".join(citations("made-up")) + "\n```")) == ["hetbench"]


@pytest.mark.parametrize("rows,bucket", [(0, "n<1K"), (999, "n<1K"), (1_000, "1K<n<10K"), (9_999, "1K<n<10K"),
                                         (10_000, "10K<n<100K"), (999_999, "100K<n<1M"), (1_000_000, "1M<n<10M")])
def test_size_categories_buckets(rows, bucket):
    from hetbench.publish.card import size_category

    assert size_category(rows) == bucket


def test_licences_of_other_sources():
    from hetbench.publish.attribution import card_licence
    from hetbench.publish.card import card_data, check_card_metadata

    assert card_licence("some/file.parquet", "other").license == "unknown"
    assert card_licence("user/hub-set", "MIT").license == "mit"
    free = card_licence("user/hub-set", "Research only, see paper")
    assert free.license == "other" and free.license_name == "research-only-see-paper"
    data = card_data(["train"], [], "Research only, see paper", "image-classification", "x", "0" * 12,
                     source="user/hub-set", method="iid", num_rows=5)
    assert check_card_metadata(data.to_dict()) == []
    assert data.to_dict()["license_link"] == "README.md#licence-and-attribution"
    problems = check_card_metadata({"license": "other", "size_categories": ["5"], "task_categories": ["x"],
                                    "configs": []})
    assert len(problems) == 5
