"""A Flower Datasets partitioner that hands out a hetbench split's clients exactly as built.

``FederatedDataset(dataset=<built folder or hub id>, partitioners={"train": HetbenchPartitioner()})``
gives partition *i* = hetbench client *i* (``client_id`` *i*, ``client_names[i]`` in ``hetbench.json``):
the same rows in the same order as :class:`hetbench.clients.ClientPartitions`, with the sample ids the
manifest lists. Every client of the manifest is a partition, clients without rows included (an empty
``Dataset`` with the split's features), so ``num_partitions`` is the manifest's ``num_clients``.

The rows are grouped by ``client_id`` once, with one vectorised sort, and every partition is a
``Dataset.select`` of its index range: no per-call scan or filter of the split. ``FederatedDataset``
shuffles every split by default; the grouping undoes that shuffle, so a partition keeps the published
row order whatever ``shuffle=``/``seed=`` say (shuffle the partition yourself if you want another order).

The client count and names come from the build's ``hetbench.json``. The partitioner finds it through
the ``FederatedDataset`` that hands it the split: a local folder is read directly; for a hub id the
file is fetched from the same dataset repo with ``huggingface_hub`` (``hetbench publish`` uploads it),
which needs the network once or the file already in the hub cache. ``split_dir=`` names it by hand.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hetbench.contract import MANIFEST_NAME, SAMPLE_IDS_NAME, read_manifest, read_sample_ids
from hetbench.contract.client_rows import group_by_client
from hetbench.errors import HetbenchError, marked

if TYPE_CHECKING:  # pragma: no cover
    import datasets

try:
    from flwr_datasets import FederatedDataset
    from flwr_datasets.partitioner import Partitioner
except ImportError as exc:  # tests/flower/test_partitioner.py hides flwr_datasets to check this line
    raise HetbenchError(
        f"the Flower Datasets partitioner needs flwr-datasets ({exc}); install it with: pip install 'hetbench[flower-datasets]'"
    ) from exc

CLIENT_COLUMN = "client_id"


@dataclass(frozen=True)
class _Origin:
    """What the FederatedDataset that handed the split over was loading."""

    dataset: str
    revision: str | None
    split: str | None


def _federated_dataset_origin(max_depth: int = 6) -> _Origin | None:
    """The ``dataset`` argument and split of the FederatedDataset assigning a split to us, read from
    the caller's frame (``FederatedDataset._assign_dataset_to_partitioner``); None when a split is
    assigned some other way."""
    frame = inspect.currentframe()
    try:
        f = frame.f_back if frame is not None else None
        for _ in range(max_depth):
            if f is None:
                return None
            owner = f.f_locals.get("self")
            if isinstance(owner, FederatedDataset):
                name = getattr(owner, "_dataset_name", None)
                kwargs = getattr(owner, "_load_dataset_kwargs", None) or {}
                split = f.f_locals.get("split")
                if not isinstance(name, str):
                    return None
                return _Origin(name, kwargs.get("revision"), split if isinstance(split, str) else None)
            f = f.f_back
        return None
    finally:
        del frame


def _hub_file(repo_id: str, revision: str | None, filename: str) -> Path:
    """One file of a dataset repo on the Hugging Face Hub, through huggingface_hub's cache (offline,
    ``HF_HUB_OFFLINE=1``, works once the file is cached)."""
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(repo_id, filename, repo_type="dataset", revision=revision))
    except Exception as exc:  # noqa: BLE001 - any hub failure is one line for the user
        reason = " ".join(str(exc).split())[:200]
        raise HetbenchError(
            f"cannot fetch {filename} of the hub dataset '{repo_id}' ({type(exc).__name__}: {reason}); "
            f"download it (huggingface-cli download {repo_id} {MANIFEST_NAME} {SAMPLE_IDS_NAME} --repo-type dataset) "
            "and pass HetbenchPartitioner(split_dir=<its folder>)"
        ) from exc


def _as_ids(values: Any) -> np.ndarray:
    """Sample ids as a numpy array that compares by value (strings as ``str``)."""
    arr = np.asarray(values)
    return arr if arr.dtype.kind in "iub" else arr.astype(str)


def _unshuffled(ds: "datasets.Dataset") -> "datasets.Dataset":
    """``ds`` without its indices mapping (the rows in loaded order), with its format; no copy."""
    import datasets

    fp = hashlib.sha256(f"{getattr(ds, '_fingerprint', '')}:unshuffled".encode()).hexdigest()[:16]
    base = datasets.Dataset(ds.data, info=ds.info.copy(), split=ds.split, fingerprint=fp)
    fmt = ds.format
    if fmt["type"] is not None or fmt["columns"] is not None or fmt["format_kwargs"]:
        base = base.with_format(fmt["type"], columns=fmt["columns"], output_all_columns=fmt["output_all_columns"], **fmt["format_kwargs"])
    return base


class HetbenchPartitioner(Partitioner):
    """Partition *i* of one output split of a hetbench build = hetbench client *i*'s rows.

    Parameters
    ----------
    split_dir : path, optional
        The build folder (or its ``hetbench.json``). By default it is found from the
        ``FederatedDataset`` that assigns the split: its ``dataset`` argument when that is a local
        folder, else ``hetbench.json`` of that hub dataset repo, fetched with ``huggingface_hub``
        (this needs the network once, or the file in the hub cache). Give it when the split reaches
        the partitioner another way (``partitioner.dataset = ds``).
    split : str, optional
        The output split of the manifest these rows are (``train``, ``test``, ``global_test``...).
        Default: the split the ``FederatedDataset`` assigns this partitioner to, else the
        ``Dataset``'s own ``split``.
    verify : bool
        Check once, on first use, that every client's rows carry exactly the sample ids (in order)
        that ``hetbench.json`` lists, and that the shared rows (``client_id = -1``) do too
        (:class:`HetbenchError` naming the first client that differs). One pass over the id column.

    Notes
    -----
    Rows with ``client_id = -1`` are a shared test set, in no partition. Under the ``global`` and
    ``heldout`` policies the ``test`` split holds only those: load it whole with
    ``fds.load_split("test")``. Under ``client`` (and ``natural``) ``test`` rows carry their
    client's id: ``partitioners={"train": HetbenchPartitioner(), "test": HetbenchPartitioner()}``
    then ``fds.load_partition(i, "test")``.

    Examples
    --------
    >>> import hetbench
    >>> from flwr_datasets import FederatedDataset
    >>> from hetbench.flower import HetbenchPartitioner
    >>> from hetbench.partitioners import IIDPartitioner
    >>> _ = hetbench.make_split("builtin:digits", IIDPartitioner(4, sizes=[0, 900, 0, 897]), "digits-flower",
    ...                         quiet=True, allow_empty=True)
    >>> fds = FederatedDataset(dataset="digits-flower", partitioners={"train": HetbenchPartitioner()})
    >>> part = fds.load_partition(1)
    >>> fds.partitioners["train"].num_partitions, len(part), len(fds.load_partition(2))
    (4, 720, 0)
    >>> set(part["client_id"])
    {1}
    >>> fds.load_partition(4)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: partition 4 out of range: split 'train' of digits-flower has 4 clients (partition ids 0 to 3)
    """

    def __init__(self, split_dir: str | Path | None = None, *, split: str | None = None, verify: bool = True) -> None:
        super().__init__()
        self._split_dir = None if split_dir is None else Path(split_dir)
        self._split = split
        self._verify = verify
        self._folder: Path | None = None  # the folder holding the manifest (a hub download: its cache folder)
        self._origin: _Origin | None = None
        self._ready = False
        self._name = ""
        self._split_name = ""
        self._client_names: list[str] = []
        self._source: "datasets.Dataset | None" = None  # what partitions are selected from (the dataset, or it unshuffled)
        self._order: np.ndarray | None = None  # source row indices in client order; None = already in order
        self._bounds = np.zeros(2, dtype=np.int64)  # grouped rows: shared bounds[0]..bounds[1], client k bounds[k+1]..bounds[k+2]

    # ---- the Partitioner contract --------------------------------------------------------
    @property
    def dataset(self) -> "datasets.Dataset":
        """The split's rows, set once (by ``FederatedDataset`` or by hand)."""
        return Partitioner.dataset.fget(self)

    @dataset.setter
    def dataset(self, value: "datasets.Dataset") -> None:
        Partitioner.dataset.fset(self, value)
        self._origin = _federated_dataset_origin()

    @property
    def num_partitions(self) -> int:
        """Clients of the split (``num_clients`` in ``hetbench.json``), clients without rows included."""
        self._prepare()
        return len(self._client_names)

    def load_partition(self, partition_id: int) -> "datasets.Dataset":
        """Client ``partition_id``'s rows, in the published order (empty for a client without rows).

        Parameters
        ----------
        partition_id : int
            A client index, 0 to ``num_partitions - 1`` (``client_id`` in the rows).

        Returns
        -------
        datasets.Dataset
            The client's rows with the split's features and format.
        """
        self._prepare()
        k = self._check(partition_id)
        lo, hi = int(self._bounds[k + 1]), int(self._bounds[k + 2])
        return self._select(lo, hi, str(k))

    # ---- extras ---------------------------------------------------------------------------
    @property
    def client_names(self) -> list[str]:
        """Name of partition *i* (``client_names`` in ``hetbench.json``: an S2 token, a user, a device...)."""
        self._prepare()
        return list(self._client_names)

    def load_shared(self) -> "datasets.Dataset":
        """The split's shared rows (``client_id = -1``: a global or held-out test set), in published order."""
        self._prepare()
        return self._select(0, int(self._bounds[1]), "shared")

    # ---- internals -------------------------------------------------------------------------
    def _check(self, partition_id: Any) -> int:
        if isinstance(partition_id, bool) or not isinstance(partition_id, (int, np.integer)):
            raise HetbenchError(f"partition id must be an integer (got {partition_id!r})")
        n = len(self._client_names)
        if not 0 <= int(partition_id) < n:
            raise HetbenchError(
                f"partition {partition_id} out of range: split '{self._split_name}' of {self._name} has {n} clients"
                + (f" (partition ids 0 to {n - 1})" if n else "")
            )
        return int(partition_id)

    def _select(self, lo: int, hi: int, tag: str) -> "datasets.Dataset":
        ds = self._source
        # an explicit fingerprint: without one, datasets hashes the indices of every partition
        fp = hashlib.sha256(f"{getattr(ds, '_fingerprint', '')}:hetbench:{self._split_name}:{tag}".encode()).hexdigest()[:16]
        if self._order is None or lo == hi:  # an empty range at the end would fail datasets' index check
            return ds.select(range(lo, hi) if lo < hi else range(0), new_fingerprint=fp)
        return ds.select(self._order[lo:hi], keep_in_memory=True, new_fingerprint=fp)

    def _manifest(self) -> dict[str, Any]:
        if self._split_dir is not None:
            folder = self._split_dir.parent if self._split_dir.name == MANIFEST_NAME else self._split_dir
            self._name = str(self._split_dir)
            self._folder = folder
            return read_manifest(folder)
        origin = self._origin
        if origin is None:
            raise HetbenchError(
                "HetbenchPartitioner cannot tell which hetbench build these rows come from: pass "
                "HetbenchPartitioner(split_dir=<the build folder>) or let FederatedDataset assign the split"
            )
        self._name = origin.dataset
        local = Path(origin.dataset).expanduser()
        if local.is_dir():
            self._folder = local
            return read_manifest(local)
        if origin.dataset.count("/") != 1 or origin.dataset.startswith(("/", ".", "~")):
            raise HetbenchError(
                f"'{origin.dataset}' is neither a hetbench build folder nor a hub dataset id (owner/name); "
                "pass HetbenchPartitioner(split_dir=<the build folder>)"
            )
        self._folder = _hub_file(origin.dataset, origin.revision, MANIFEST_NAME).parent
        manifest = read_manifest(self._folder)
        entry = manifest.get("sample_ids")
        if self._verify and manifest.get("format", 2) >= 3 and isinstance(entry, dict) and isinstance(entry.get("file"), str):
            _hub_file(origin.dataset, origin.revision, entry["file"])  # beside the manifest in the hub cache
        return manifest

    def _split_of(self, manifest: dict[str, Any]) -> str:
        split = self._split or (self._origin.split if self._origin else None)
        if split is None:
            split = str(self.dataset.split) if self.dataset.split is not None else None
        if split not in manifest["splits"]:
            raise HetbenchError(
                f"split {split!r} is not an output split of {self._name} (it has: {', '.join(sorted(manifest['splits']))}); "
                "pass HetbenchPartitioner(split=...)"
            )
        return split

    def _prepare(self) -> None:
        """Read the manifest and group the rows by client, once."""
        if self._ready:
            return
        ds = self.dataset
        manifest = self._manifest()
        split = self._split_of(manifest)
        self._split_name = split
        names = manifest.get("client_names")
        num_clients = manifest.get("num_clients")
        if not isinstance(names, list) or not isinstance(num_clients, int) or len(names) != num_clients:
            raise HetbenchError(f"{MANIFEST_NAME} of {self._name} has no consistent 'num_clients' and 'client_names'")
        if CLIENT_COLUMN not in ds.column_names:
            raise HetbenchError(f"split '{split}' of {self._name} has no '{CLIENT_COLUMN}' column (columns: {', '.join(ds.column_names)})")

        table = ds.data.table  # the rows as loaded; a shuffle only adds an indices mapping
        cids = table.column(CLIENT_COLUMN).to_numpy().astype(np.int64, copy=False)
        positions = ds._indices.column(0).to_numpy() if ds._indices is not None else None  # noqa: SLF001
        if positions is not None:
            cids = cids[positions]
        if cids.size and (cids.max() >= num_clients or cids.min() < -1):
            bad = int(cids.max() if cids.max() >= num_clients else cids.min())
            raise HetbenchError(f"split '{split}' of {self._name} has client_id {bad}, outside -1 to {num_clients - 1} ({MANIFEST_NAME})")
        rows = group_by_client(cids, num_clients, then_by=positions)  # by client, then published position
        self._source = ds
        if positions is not None and positions.size == table.num_rows and np.array_equal(positions[rows.order], np.arange(positions.size)):
            # a shuffle of a grouped split (FederatedDataset's default): partitions are contiguous ranges
            # of the loaded table, so serve them from it without the shuffle's indices mapping
            rows, positions = group_by_client(cids[rows.order], num_clients), None
            self._source = _unshuffled(ds)
        self._bounds = rows.bounds
        self._order = rows.order
        self._client_names = [str(n) for n in names]
        if self._verify:
            self._verify_ids(manifest, table, positions)
        self._ready = True

    def _verify_ids(self, manifest: dict[str, Any], table: Any, positions: np.ndarray | None) -> None:
        """Every client's (and the shared) sample ids, in order, against ``hetbench.json``."""
        split, names = self._split_name, self._client_names
        if manifest.get("format", 2) < 3 and not isinstance((manifest["sample_ids"].get(split) or {}).get("clients"), dict):
            raise HetbenchError(f"{MANIFEST_NAME} of {self._name} lists no sample ids for split '{split}'")
        try:
            listed = read_sample_ids(self._folder, manifest)[split]
        except HetbenchError as exc:
            raise HetbenchError(f"{self._name}: {marked(exc)}") from exc
        cids = listed.client_id
        if cids.size and (cids.min() < -1 or cids.max() >= len(names) or np.any(np.diff(cids) < 0)):
            raise HetbenchError(f"{MANIFEST_NAME} of {self._name} lists sample ids of unknown clients or out of client order")
        want_sizes = np.bincount(cids + 1, minlength=len(names) + 1)
        sizes = np.diff(self._bounds)
        for k in np.flatnonzero(want_sizes != sizes)[:1]:
            who = "the shared rows" if k == 0 else f"client {names[k - 1]!r} (partition {k - 1})"
            raise HetbenchError(
                f"split '{split}' of {self._name}: {who} has {sizes[k]} rows but {MANIFEST_NAME} lists "
                f"{want_sizes[k]}; the rows are not those of the build (a preprocessor, or another folder?)"
            )
        id_col = manifest["source"].get("id_col") if isinstance(manifest["source"], dict) else None
        if id_col is None or id_col not in table.column_names:
            return  # ids are source row indices, not a column: the counts above are the check
        rows = np.arange(len(self._source)) if self._order is None else self._order
        take = rows if positions is None else positions[rows]
        actual = _as_ids(table.column(id_col).take(take).to_numpy(zero_copy_only=False))
        want = _as_ids(listed.sample_id)
        if actual.dtype.kind != want.dtype.kind:
            actual, want = actual.astype(str), want.astype(str)
        if actual.shape != want.shape or not np.array_equal(actual, want):
            first = int(np.argmax(actual != want)) if actual.shape == want.shape else 0
            k = int(np.searchsorted(self._bounds, first, side="right")) - 1  # 0 = shared, k = client k - 1
            who = "a shared row" if k == 0 else f"client {names[k - 1]!r} (partition {k - 1})"
            raise HetbenchError(
                f"split '{split}' of {self._name}: {who} holds sample id {actual[first].item()!r} where {MANIFEST_NAME} "
                f"lists {want[first].item()!r}; the rows are not those of the build"
            )
