"""End to end: hetbench partition embedding and compare-clusterings."""

from __future__ import annotations

from hetbench.report import read_clients

import json

import pytest


@pytest.mark.slow
def test_embedding_split_loads_with_clusters_and_verifies(tmp_path, run_cli):
    import datasets

    out = tmp_path / "emb"
    code, _, err = run_cli("partition", "embedding", "--alpha", "0.05", "--clusters", "8", "--embedder", "pixels:8",
                           "--clients", "12", "--out", out, "-q")
    assert code == 0, err
    ds = datasets.load_dataset(str(out))
    train = ds["train"]
    assert {"cluster", "label", "client_id", "image"} <= set(train.column_names)
    assert set(train["cluster"]) <= set(range(8))
    report = json.loads((out / "report.json").read_text())
    emb = report["embedding"]
    assert emb["clusters"] == 8 and sum(emb["cluster_sizes"]) == 1797
    assert 0.0 <= emb["zeta_clusters_vs_labels"] <= 1.0 and emb["emd_clusters"] > 1.0  # alpha 0.05: skewed over clusters
    for plot in ("cluster_label_contingency.png", "embedding_pca.png"):
        assert (out / "plots" / plot).is_file()
    assert run_cli("verify", out)[0] == 0
    # the same seed clustered twice agrees perfectly with itself
    code, stdout, _ = run_cli("compare-clusterings", out, out)
    assert code == 0 and stdout.startswith("zeta = 1.000000")


def test_compare_two_embedders_on_a_dataset(run_cli):
    code, stdout, err = run_cli("compare-clusterings", "--dataset", "builtin:digits", "--embedders", "pixels:8,color-hist",
                                "--clusters", "5")
    assert code == 0, err
    z = float(stdout.split()[2])
    assert 0.5 < z < 1.0


BAD = {
    "no image column": (["--dataset", "{csv}", "--embedder", "pixels"], "no image column"),
    "more clusters than data": (["--clusters", "5000"], "more clusters"),
    "missing torchscript": (["--embedder", "torchscript:{missing}"], "not found"),
    "unknown embedder": (["--embedder", "sift"], "unknown embedder"),
    "layer without torch": (["--layer", "fc"], "--layer"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_embedding_bad_input(case, tmp_path, run_cli):
    csv = tmp_path / "t.csv"
    csv.write_text("x,label\n" + "\n".join(f"{i},{i % 3}" for i in range(30)) + "\n")
    args, needle = BAD[case]
    out = tmp_path / "o"
    code, _, err = run_cli("partition", "embedding", *[a.format(csv=csv, missing=tmp_path / "m.pt") for a in args], "--out", out)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and needle in err
    assert not out.exists()


@pytest.mark.slow
def test_semantic_split_builds_and_verifies(tmp_path, run_cli):
    """Verification replays the recipe: params() must hold exactly the constructor's arguments."""
    out = tmp_path / "sem"
    code, _, err = run_cli("partition", "semantic", "--clients", "6", "--embedder", "pixels:8", "--out", out, "-q")
    assert code == 0, err
    report = json.loads((out / "report.json").read_text())
    assert report["num_clients"] == 6 and read_clients(out)["num_samples"].to_numpy().sum() == report["num_samples"]
    assert run_cli("verify", out)[0] == 0


def test_domains_split_end_to_end(tmp_path, run_cli):
    import datasets

    rows = {"label": [i % 3 for i in range(600)], "domain": [["mnist", "usps", "svhn"][i % 3 if i < 300 else 0] for i in range(600)]}
    datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows),
                          "test": datasets.Dataset.from_dict({"label": [0, 1, 2], "domain": ["mnist", "usps", "svhn"]})}
                         ).save_to_disk(tmp_path / "src")
    out = tmp_path / "dom"
    code, _, err = run_cli("partition", "domains", "--dataset", tmp_path / "src", "--clients", "5", "--fraction", "0.1",
                           "--out", out, "-q")
    assert code == 0, err
    ds = datasets.load_dataset(str(out))
    by_client = {}
    for c, d in zip(ds["train"]["client_id"], ds["train"]["domain"]):
        by_client.setdefault(c, set()).add(d)
    assert all(len(v) == 1 for v in by_client.values()) and len(by_client) == 5
    assert set().union(*by_client.values()) == {"mnist", "usps", "svhn"}
    assert set(ds["test"]["domain"]) == {"mnist", "usps", "svhn"}  # the test split stays per domain
    assert run_cli("verify", out)[0] == 0
    code, _, err = run_cli("partition", "domains", "--dataset", "builtin:digits", "--out", tmp_path / "x")
    assert code == 2 and "domain" in err  # the plain digits have no domain column


@pytest.mark.slow
def test_digits_domains_build_and_no_input_domains_split(tmp_path, run_cli):
    import datasets

    out = tmp_path / "dd"
    code, _, err = run_cli("build", "digits-domains", "--clients", "8", "--fraction", "0.1", "--out", out, "-q")
    assert code == 0, err
    ds = datasets.load_dataset(str(out))
    assert set(ds["train"]["domain"]) == set(ds["test"]["domain"]) == {"mnist", "usps", "mnistm", "syn"}
    assert set(ds["test"]["client_id"]) == {-1}
    assert run_cli("verify", out)[0] == 0
    code, _, err = run_cli("partition", "domains", "--out", tmp_path / "p", "-q")  # no inputs: the digit domains
    assert code == 0, err


@pytest.mark.slow
@pytest.mark.parametrize("embedder, coincide", [("task", True), ("color-hist", False)])
def test_the_card_says_whether_the_clusters_coincide_with_the_labels(tmp_path, run_cli, embedder, coincide):
    """The task embedder is trained on the labels, so its clusters follow them (the split is in effect a
    label split, and the card says what to change); colour histograms do not (adjusted Rand index near 0)."""
    out = tmp_path / "emb"
    code, _, err = run_cli("partition", "embedding", "--alpha", "0.1", "--embedder", embedder, "--out", out, "-q")
    assert code == 0, err
    ari = json.loads((out / "report.json").read_text())["embedding"]["ari_clusters_vs_labels"]
    card = (out / "README.md").read_text()
    assert "## Clusters and labels" in card and f"adjusted Rand index {ari:.3f}" in card
    if coincide:
        assert ari >= 0.65 and "**The clusters coincide with the labels**" in card and "`--embedder pixels`" in card
    else:
        assert ari < 0.2 and "The clusters do not coincide with the labels" in card
        # the demo's split (issue 48, item 5): the card puts the clusters' skew beside the labels' one
        summary = json.loads((out / "report.json").read_text())["embedding"]
        assert summary["emd_clusters"] > 4 * summary["emd_labels"]
        assert (f"Measured over the clusters, the clients' skew is EMD {summary['emd_clusters']:.3f}; over the labels, "
                f"{summary['emd_labels']:.3f}") in card
