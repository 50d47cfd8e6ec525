"""Every Python snippet on a dataset card runs, as written, on the split the card describes, and reads what
its comment says: client ``k``'s training rows (``k`` taken from the split, never a hard-coded id), its test
rows or the shared test rows. Run on a split whose test rows are held out per client, one whose test rows
keep the source's test split and their clients (natural), one with a shared test split and one with empty
clients (where Flower Datasets' plain ``NaturalIdPartitioner`` would renumber the clients, so the card must
offer hetbench's partitioner and say why)."""

from __future__ import annotations

import re
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

SPLITS = {
    "client-test": ["dirichlet", "--alpha", "0.1", "--clients", "20"],
    "shared-test": ["dirichlet", "--dataset", "builtin:digits-domains", "--alpha", "0.5", "--clients", "10",
                    "--test-split", "global"],
    "empty-clients": ["dirichlet", "--scheme", "class", "--alpha", "0.05", "--clients", "100", "--allow-empty"],
    "natural-test": ["natural-id", "--dataset", "builtin:digits-domains", "--column", "domain", "--test-split", "natural"],
}
PLACEHOLDER = '"<this folder or hub id>"'


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from click.testing import CliRunner

    from hetbench.cli.main import cli

    root = tmp_path_factory.mktemp("cards")
    for name, args in SPLITS.items():
        result = CliRunner().invoke(cli, ["partition", *args, "--out", str(root / name), "-q"])
        assert result.exit_code == 0, result.output
    return root


def _snippets(card: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", card, re.S)


def _rows(folder: Path) -> dict[str, np.ndarray]:
    clients = pq.read_table(folder / "report" / "clients.parquet").to_pydict()
    return {"train": np.asarray(clients["rows_train"]), "test": np.asarray(clients["rows_test"])}


def _client_ids(value) -> np.ndarray:
    if isinstance(value, datasets.Dataset):
        return np.asarray(value.with_format("arrow")["client_id"])
    assert isinstance(value, pa.Table), type(value)
    return value.column("client_id").to_numpy()


@pytest.mark.parametrize("name", list(SPLITS))
def test_every_card_snippet_runs_on_its_split(built, name, monkeypatch):
    folder = built / name
    card = (folder / "README.md").read_text(encoding="utf-8")
    k = int(re.search(r"The snippets read client `(\d+)`", card).group(1))
    rows = _rows(folder)
    assert rows["train"][k] > 0
    snippets = _snippets(card)
    assert len(snippets) == 3 and all(PLACEHOLDER in s for s in snippets[:2])
    assert not re.search(r"client_(?!id|%d\b|%d_test\b)\w*" % (k, k), "".join(snippets)), "a hard-coded client id"
    shared = name == "shared-test"
    monkeypatch.chdir(folder)  # the parquet snippet reads data/ relative to the folder
    for code in snippets:
        scope: dict = {}
        exec(compile(code.replace(PLACEHOLDER, repr(str(folder))), f"{name}-card", "exec"), scope)
        ids = _client_ids(scope[f"client_{k}"])
        assert len(ids) == rows["train"][k] and (ids == k).all(), code
        if f"client_{k}_test" in scope:
            ids = _client_ids(scope[f"client_{k}_test"])
            assert not shared and len(ids) == rows["test"][k] > 0 and (ids == k).all(), code
        if "test" in scope:
            assert shared and (_client_ids(scope["test"]) == -1).all() and len(scope["test"]) > 0
    flower = snippets[1]
    if name == "empty-clients":
        assert (rows["train"] == 0).any()
        assert "HetbenchPartitioner()" in flower and "NaturalIdPartitioner" not in flower
        assert f"{int((rows['train'] == 0).sum())} of the 100 clients have no training rows" in card
    else:
        assert "NaturalIdPartitioner(partition_by=\"client_id\")" in flower and "from hetbench" not in flower
        assert ('"test": NaturalIdPartitioner' in flower) == (not shared)
        assert ('fds.load_split("test")' in flower) == shared


def test_the_plain_natural_id_route_gives_every_client_exactly(built):
    """Where the card offers NaturalIdPartitioner, its partition i is hetbench client i, for every i."""
    from flwr_datasets.partitioner import NaturalIdPartitioner

    folder = built / "client-test"
    train = datasets.load_dataset(str(folder), split="train")
    part = NaturalIdPartitioner(partition_by="client_id")
    part.dataset = train
    rows = _rows(folder)["train"]
    assert part.num_partitions == len(rows)
    for i in range(len(rows)):
        ids = np.asarray(part.load_partition(i)["client_id"])
        assert len(ids) == rows[i] and (ids == i).all()
