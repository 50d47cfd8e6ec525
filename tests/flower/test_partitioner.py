"""HetbenchPartitioner: Flower Datasets partitions of every builder's output equal hetbench's own clients.

Each split is built once per module (the smallest settings the CLI tests use) and loaded through
``flwr_datasets.FederatedDataset`` exactly as a user would; every partition of every output split is
compared with :class:`hetbench.clients.ClientPartitions` on the same folder (whole Arrow rows, in
order) and with the sample ids ``hetbench.json`` lists.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

datasets = pytest.importorskip("datasets")
pytest.importorskip("flwr_datasets")

from flwr_datasets import FederatedDataset  # noqa: E402

from hetbench.clients import ClientPartitions  # noqa: E402
from hetbench.errors import HetbenchError  # noqa: E402
from hetbench.flower import HetbenchPartitioner  # noqa: E402
from hetbench.contract import read_sample_ids  # noqa: E402

#: build name -> CLI arguments (without --out); the smallest settings of tests/cli and tests/builders
BUILDS: dict[str, tuple[str, ...]] = {
    "dirichlet": ("partition", "dirichlet", "--alpha", "0.3", "--clients", "8"),
    "iid-empty-clients": ("partition", "iid", "--clients", "5", "--sizes", "0,720,0,718,0", "--allow-empty"),
    "iid-no-id-column": ("partition", "iid", "--dataset", "{plain}", "--clients", "4"),
    "shards": ("partition", "shards", "--clients", "10"),
    "classes-per-client": ("partition", "classes-per-client", "--clients", "10"),
    "natural-id": ("partition", "natural-id", "--dataset", "builtin:observations", "--column", "observer"),
    "embedding": ("partition", "embedding", "--alpha", "0.05", "--clusters", "8", "--embedder", "pixels:8", "--clients", "6"),
    "semantic": ("partition", "semantic", "--clients", "4", "--embedder", "pixels:8"),
    "domains": ("partition", "domains", "--dataset", "builtin:digits-domains", "--clients", "5", "--fraction", "0.1"),
    "iso-isp": ("build", "iso-isp", "--stages", "wb", "--size", "32", "--crops-per-photo", "1", "--crop-size", "96"),
    "devices": ("build", "devices", "--clients", "9", "--size", "32", "--crops-per-photo", "1", "--crop-size", "96"),
    "geo": ("build", "geo", "--nmax", "1000"),
    "users": ("build", "users"),
    "digits-domains": ("build", "digits-domains", "--clients", "8", "--fraction", "0.1"),
}
#: builds that take more than a few seconds to make (embedding, rendering)
SLOW = {"embedding", "semantic", "domains", "iso-isp", "devices", "digits-domains", "natural-id"}
BUILD_PARAMS = [pytest.param(b, marks=pytest.mark.slow) if b in SLOW else b for b in BUILDS]


def _cli(*args: object) -> int:
    from hetbench.cli.main import main

    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("flower-partitioner")
    # a source without an id column: the manifest's sample ids are then source row indices
    rng = np.random.default_rng(0)
    datasets.Dataset.from_dict({"x": rng.normal(size=120).tolist(), "label": (np.arange(120) % 3).tolist()}).to_parquet(
        root / "plain.parquet"
    )
    return root


@pytest.fixture(scope="module")
def built(root):
    """build name -> folder, each built on first use and kept for the module."""
    folders: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in folders:
            out = root / name
            args = [a.format(plain=root / "plain.parquet") for a in BUILDS[name]]
            assert _cli(*args, "--out", out, "-q") == 0, f"building {name} failed"
            folders[name] = out
        return folders[name]

    return get


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "hetbench.json").read_text())


def _fds(folder: Path, splits, **kwargs) -> FederatedDataset:
    return FederatedDataset(dataset=str(folder), partitioners={s: HetbenchPartitioner() for s in splits}, **kwargs)


def _rows(ds) -> "object":
    return ds.with_format("arrow")[:]


def _check_split(fds: FederatedDataset, folder: Path, split: str) -> None:
    """Every partition of ``split`` is ClientPartitions' client, with the manifest's ids; shared rows too."""
    manifest = _manifest(folder)
    rows = datasets.load_dataset(str(folder), split=split)
    reference, features = ClientPartitions.from_folder(folder, split), rows.features
    partitioner = fds.partitioners[split]
    n = manifest["num_clients"]
    assert partitioner.num_partitions == n
    assert partitioner.client_names == manifest["client_names"]
    listed = read_sample_ids(folder)[split]
    clients, shared_ids = listed.by_name(manifest["client_names"]), listed.shared.tolist()
    id_col = manifest["source"]["id_col"]
    assert reference.num_clients == n
    empty = 0
    for k in range(n):
        part = fds.load_partition(k, split)
        assert part.features == features
        assert part._indices is None  # a slice of the loaded rows, even behind FederatedDataset's shuffle
        assert _rows(part).equals(reference.table(k)), f"{split} partition {k}"  # both keyed by client_id
        empty += len(part) == 0
        ids = clients.get(manifest["client_names"][k], [])
        assert len(part) == len(ids)
        if id_col is not None:
            assert [v if isinstance(v, int) else str(v) for v in part[id_col]] == ids
    assert empty == int((reference.sizes() == 0).sum())
    shared = partitioner.load_shared()
    assert _rows(shared).equals(reference.shared())
    assert len(shared) == len(shared_ids)
    whole = fds.load_split(split)  # the split as FederatedDataset holds it (shuffled by default)
    assert len(whole) == sum(len(v) for v in clients.values()) + len(shared_ids)


@pytest.mark.parametrize("name", BUILD_PARAMS)
@pytest.mark.parametrize("shuffle", [True, False], ids=["fds-shuffle", "no-shuffle"])
def test_every_partition_is_the_hetbench_client(built, name, shuffle):
    folder = built(name)
    splits = sorted(_manifest(folder)["splits"])
    fds = _fds(folder, splits, shuffle=shuffle)
    for split in splits:
        _check_split(fds, folder, split)


def test_empty_clients_are_partitions_with_the_split_features(built):
    folder = built("iid-empty-clients")
    fds = _fds(folder, ["train", "test"])
    assert fds.partitioners["train"].num_partitions == 5
    sizes = [len(fds.load_partition(k, "train")) for k in range(5)]
    assert sizes == [0, 720, 0, 718, 0]  # --sizes count training rows: 900 and 897 rows, 20% of each held out as test
    last = fds.load_partition(4, "test")
    assert len(last) == 0 and last.column_names == fds.load_split("train").column_names


def test_shared_test_split_is_reachable_whole(built):
    folder = built("users")  # heldout policy: test = rows of held-out users, client_id -1
    manifest = _manifest(folder)
    fds = _fds(folder, ["train", "test"])
    test = fds.load_split("test")
    assert set(test["client_id"]) == {-1}
    assert sorted(test["obs_id"]) == sorted(read_sample_ids(folder)["test"].shared.tolist())
    assert all(len(fds.load_partition(k, "test")) == 0 for k in range(fds.partitioners["test"].num_partitions))


@pytest.mark.parametrize("bad", [-1, 8, 10**9, True, 1.0, "1"])
def test_partition_id_out_of_range_is_one_clear_error(built, bad):
    fds = _fds(built("dirichlet"), ["train"])
    with pytest.raises(HetbenchError, match="out of range|must be an integer") as err:
        fds.load_partition(bad)
    assert isinstance(err.value, ValueError) and "\n" not in str(err.value)


@pytest.fixture(scope="module")
def geo_train(built):
    folder = built("geo")  # 72 S2 cells
    return folder, datasets.load_dataset(str(folder), split="train")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=-50, max_value=120), st.integers(0, 3))
def test_any_partition_id_is_that_client_or_an_error(geo_train, partition_id, shuffle_seed):
    folder, train = geo_train
    manifest = _manifest(folder)
    partitioner = HetbenchPartitioner(folder)
    partitioner.dataset = train.shuffle(seed=shuffle_seed, keep_in_memory=True)
    if not 0 <= partition_id < manifest["num_clients"]:
        with pytest.raises(HetbenchError, match=f"partition {partition_id} out of range"):
            partitioner.load_partition(partition_id)
        return
    part = partitioner.load_partition(partition_id)
    assert set(part["client_id"]) <= {partition_id}
    assert part["obs_id"] == read_sample_ids(folder)["train"].of_client(partition_id).tolist()


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 5), min_size=2, max_size=7).filter(any), st.integers(0, 2**16))
def test_random_client_sizes_with_empty_clients(tmp_path_factory, weights, seed):
    """Any client sizes (zeros included): partition k has exactly client k's rows and ids."""
    import hetbench
    from hetbench.partitioners import IIDPartitioner

    total = 1797  # builtin:digits
    cuts = np.floor(np.cumsum(weights) / sum(weights) * total).astype(int)
    sizes = np.diff(np.concatenate([[0], cuts])).tolist()
    out = tmp_path_factory.mktemp("sizes") / "split"
    hetbench.make_split("builtin:digits", IIDPartitioner(len(sizes), sizes=sizes), out, seed=seed, quiet=True, allow_empty=True)
    manifest = _manifest(out)
    fds = _fds(out, ["train", "test"], seed=seed)
    for split in ("train", "test"):
        assert fds.partitioners[split].num_partitions == len(sizes)
        got = [fds.load_partition(k, split)["sample_id"] for k in range(len(sizes))]
        listed = read_sample_ids(out)[split]
        want = [listed.of_client(k).tolist() for k in range(len(manifest["client_names"]))]
        assert got == want
        assert [len(fds.load_partition(k, split)) == 0 for k in range(len(sizes))] == [not w for w in want]
    assert [k for k, s in enumerate(sizes) if s == 0] == [
        k for k in range(len(sizes)) if len(fds.load_partition(k, "train")) == 0
    ]


def test_split_dir_when_the_rows_are_assigned_by_hand(built):
    folder = built("dirichlet")
    train = datasets.load_dataset(str(folder), split="train")
    reference = ClientPartitions.from_dataset(train)
    for where in (folder, folder / "hetbench.json"):
        partitioner = HetbenchPartitioner(where)
        partitioner.dataset = train
        assert partitioner.num_partitions == 8
        assert _rows(partitioner.load_partition(3)).equals(reference.table(3))
    orphan = HetbenchPartitioner()
    orphan.dataset = train
    with pytest.raises(HetbenchError, match="split_dir"):
        orphan.load_partition(0)


def test_split_argument_picks_the_manifest_split(built):
    folder = built("dirichlet")
    test = datasets.load_dataset(str(folder), split="test")
    partitioner = HetbenchPartitioner(folder, split="test")
    partitioner.dataset = test
    reference = ClientPartitions.from_dataset(test)
    assert _rows(partitioner.load_partition(2)).equals(reference.table(2))
    wrong = HetbenchPartitioner(folder, split="validation")
    wrong.dataset = test
    with pytest.raises(HetbenchError, match="'validation' is not an output split"):
        wrong.num_partitions


def test_a_shuffled_subset_keeps_the_published_order_unchecked(built):
    """Rows behind an indices mapping that is not a whole shuffle (a preprocessor kept some rows):
    with verify=False every partition holds its client's remaining rows, in published order."""
    folder = built("dirichlet")
    train = datasets.load_dataset(str(folder), split="train")
    reference = ClientPartitions.from_dataset(train)
    subset = train.shuffle(seed=3, keep_in_memory=True).select(range(1000), keep_in_memory=True)
    kept = set(subset["sample_id"])
    checked = HetbenchPartitioner(folder)
    checked.dataset = subset
    with pytest.raises(HetbenchError, match="rows but hetbench.json lists"):
        checked.load_partition(0)
    partitioner = HetbenchPartitioner(folder, verify=False)
    partitioner.dataset = subset
    for k in range(8):
        want = [i for i in reference.table(k).column("sample_id").to_pylist() if i in kept]
        assert partitioner.load_partition(k)["sample_id"] == want
    assert sum(len(partitioner.load_partition(k)) for k in range(8)) == 1000


def test_rows_of_another_build_are_refused(built):
    rows = datasets.load_dataset(str(built("dirichlet")), split="train")
    partitioner = HetbenchPartitioner(built("shards"), split="train")
    partitioner.dataset = rows
    with pytest.raises(HetbenchError, match="not those of the build"):
        partitioner.load_partition(0)


def test_a_folder_rebuilt_under_the_same_name_is_loaded_as_rebuilt_never_from_a_stale_cache(root):
    """Flower Datasets loads a local folder through ``datasets``, whose cache is keyed by the folder's base
    name and data-file patterns: two builds of one name, the second with --overwrite and another seed, must
    give the second build's clients (the shard names carry the split fingerprint, so the cache cannot serve
    the first build's rows; the partitioner checks every partition's ids against the manifest besides)."""
    folder = root / "rebuilt"
    assert _cli("partition", "dirichlet", "--alpha", "0.3", "--clients", "8", "--seed", "0", "--out", folder, "-q") == 0
    first = _fds(folder, ["train"]).load_partition(3, "train")["sample_id"]
    assert _cli("partition", "dirichlet", "--alpha", "0.3", "--clients", "8", "--seed", "1", "--out", folder,
                "--overwrite", "-q") == 0
    fds = _fds(folder, ["train"])
    second = fds.load_partition(3, "train")["sample_id"]
    assert second != first and second == read_sample_ids(folder)["train"].by_name(_manifest(folder)["client_names"])["client_3"]
    _check_split(fds, folder, "train")


def test_an_edited_sample_id_is_named(built):
    folder = built("dirichlet")
    train = datasets.load_dataset(str(folder), split="train")
    victim = int(np.flatnonzero(np.asarray(train["client_id"]) == 5)[1])
    edited = train.map(lambda row, i: {"sample_id": "forged" if i == victim else row["sample_id"]}, with_indices=True)
    partitioner = HetbenchPartitioner(folder)
    partitioner.dataset = edited
    with pytest.raises(HetbenchError, match=r"client 'client_5' \(partition 5\) holds sample id 'forged' where hetbench.json lists 'digits-"):
        partitioner.load_partition(0)
    unchecked = HetbenchPartitioner(folder, verify=False)
    unchecked.dataset = edited
    assert "forged" in unchecked.load_partition(5)["sample_id"]


def test_a_hub_id_reads_the_manifest_of_that_repo(built, monkeypatch):
    """A hub id: the rows come from load_dataset(<id>), the manifest and the sample ids it checks them
    against from the same repo's hetbench.json and sample_ids.parquet."""
    import flwr_datasets.federated_dataset as fd_module
    import huggingface_hub

    folder = built("dirichlet")
    local = datasets.load_dataset(str(folder))
    calls = []
    monkeypatch.setattr(fd_module.datasets, "load_dataset", lambda path, name=None, **kw: local)

    def download(repo_id, filename, repo_type=None, revision=None, **kw):
        calls.append((repo_id, filename, repo_type, revision))
        return str(folder / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    fds = FederatedDataset(dataset="someone/digits-v1.0", partitioners={"train": HetbenchPartitioner()}, revision="v1")
    reference = ClientPartitions.from_dataset(local["train"])
    assert _rows(fds.load_partition(4)).equals(reference.table(4))
    assert calls == [("someone/digits-v1.0", "hetbench.json", "dataset", "v1"),
                     ("someone/digits-v1.0", "sample_ids.parquet", "dataset", "v1")]


def test_an_unreachable_hub_manifest_is_one_clear_error(built, monkeypatch):
    import flwr_datasets.federated_dataset as fd_module

    local = datasets.load_dataset(str(built("dirichlet")))
    monkeypatch.setattr(fd_module.datasets, "load_dataset", lambda path, name=None, **kw: local)
    fds = FederatedDataset(dataset="nobody/not-cached-anywhere", partitioners={"train": HetbenchPartitioner()})
    with pytest.raises(HetbenchError, match="cannot fetch hetbench.json of the hub dataset 'nobody/not-cached-anywhere'"):
        fds.load_partition(0)


def test_a_missing_folder_is_neither_a_build_nor_a_hub_id(built, monkeypatch):
    import flwr_datasets.federated_dataset as fd_module

    local = datasets.load_dataset(str(built("dirichlet")))
    monkeypatch.setattr(fd_module.datasets, "load_dataset", lambda path, name=None, **kw: local)
    fds = FederatedDataset(dataset="./gone/split", partitioners={"train": HetbenchPartitioner()})
    with pytest.raises(HetbenchError, match="'./gone/split' is neither a hetbench build folder nor a hub dataset id"):
        fds.load_partition(0)


def test_a_folder_that_is_not_a_build_is_refused(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    datasets.Dataset.from_dict({"x": [1, 2], "client_id": [0, 1]}).to_parquet(plain / "train.parquet")
    fds = FederatedDataset(dataset=str(plain), partitioners={"train": HetbenchPartitioner()})
    with pytest.raises(HetbenchError, match="not a hetbench build"):
        fds.load_partition(0)


def test_without_flwr_datasets_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "flwr_datasets", None)
    monkeypatch.delitem(sys.modules, "hetbench.flower.partitioner")
    with pytest.raises(HetbenchError, match=r"pip install 'hetbench\[flower-datasets\]'"):
        importlib.import_module("hetbench.flower.partitioner")
