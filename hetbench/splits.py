"""From a Partition of the training data to the output splits of a federated data set.

Test policies (``--test-split``):

* ``global``  - the source's test split (and any other non-train split) is kept whole as a shared
  test set; its rows have ``client_id = -1``. Default when the source has a test split.
* ``client``  - every client holds out ``--test-fraction`` of its own training samples as its test
  data, stratified by label where the client has enough of a class (largest-remainder rounding per
  (client, class)); a source test split is kept beside it as ``global_test``. Default when the source
  has no test split.
* ``natural`` - partitioners with a natural key (``natural-id``) assign every split by that key, so a
  user's train and test rows share one client id. With a single-split source it falls back to
  ``client``.
* ``heldout`` - a ``--test-fraction`` of the *clients* (e.g. users) is held out whole: their rows
  form a shared test set (``client_id = -1``) of clients never seen in training, as Hsu et al.
  built Landmarks-User-160k's test split; test rows of classes absent from training are dropped
  (reason ``filtered``).

Output rows are ordered by (client id, source row), so a client's rows are contiguous.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.hashing import canonical_json, sha256_of_arrays
from hetbench.holdout import hold_out_clients, stable_order, stratified_holdout  # noqa: F401 (re-exported)
from hetbench.partition import Partition
from hetbench.partitioners.base import Partitioner
from hetbench.registry import Registry
from hetbench.seeding import make_rng
from hetbench.table import SampleTable

@dataclass(frozen=True)
class SplitRows:
    """One output split: which rows of which source split, and each row's client id (-1 = shared)."""

    source_split: str
    rows: np.ndarray  # int64 indices into the source split
    client_ids: np.ndarray  # int32, -1 for a shared (global) test row

    def __len__(self) -> int:
        return int(self.rows.size)


@dataclass(frozen=True)
class FederatedSplit:
    """A table, the partition of its training data, and the output splits derived from both."""

    table: SampleTable
    partition: Partition
    outputs: dict[str, SplitRows]
    recipe: dict[str, Any]
    dropped: dict[str, dict[str, int]]
    #: source class index -> output class index (-1: no output row has it); None when every source
    #: class is present, so the output classes are the source's (see :func:`present_classes`)
    class_map: np.ndarray | None = None
    #: source split -> the float32 embedding the partitioner clustered (and, after the report's
    #: extras, the other splits' embeddings): stored in the folder, since an embedder that trains or
    #: runs a model gives other bits on another CPU (:mod:`hetbench.publish.embeddings`); None when
    #: the partitioner embeds nothing
    embeddings: dict[str, np.ndarray] | None = None
    #: dotted manifest key -> the local path the recipe names there by ``local:<name>``
    #: (:mod:`hetbench.local_paths`; written to the unpublished sidecar)
    local_paths: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        """A summary, e.g. ``FederatedSplit(iid, 4 clients; train: 1,437 rows, test: 360 rows; 10 classes)``."""
        rows = ", ".join(f"{s}: {len(o):,} rows" for s, o in self.outputs.items())
        return (f"FederatedSplit({(self.recipe.get('partition') or {}).get('method', '?')}, {self.num_clients:,} clients; "
                f"{rows}; {len(self.class_names):,} classes)")

    @property
    def num_clients(self) -> int:
        return self.partition.num_clients

    @property
    def client_names(self) -> tuple[str, ...]:
        return self.partition.client_names

    @property
    def class_names(self) -> list[str]:
        """The output classes: the source classes that some output row has, in source order."""
        names = list(self.table.class_names)
        return names if self.class_map is None else [n for n, k in zip(names, self.class_map) if k >= 0]

    def source_labels(self, source_split: str) -> np.ndarray:
        """Output class index of every row of a source split (-1 where its class is not an output class)."""
        labels = np.asarray(self.table.labels[source_split])
        if self.class_map is None:
            return labels
        return np.where(labels >= 0, self.class_map[np.maximum(labels, 0)], -1)

    def labels(self, split: str) -> np.ndarray:
        out = self.outputs[split]
        return self.source_labels(out.source_split)[out.rows]

    @property
    def fingerprint(self) -> str:
        """sha256 over every output split's (rows, client ids) and the canonical recipe."""
        arrays = []
        for name in sorted(self.outputs):
            out = self.outputs[name]
            arrays += [np.frombuffer(f"{name}:{out.source_split}".encode(), np.uint8), out.rows, out.client_ids]
        return sha256_of_arrays(*arrays, extra=canonical_json(self.recipe) + canonical_json(list(self.client_names)))


def _ordered(source_split: str, rows: np.ndarray, client_ids: np.ndarray) -> SplitRows:
    """The rows sorted by (client id, source row)."""
    if rows.size > 1 and bool(np.all(rows[1:] > rows[:-1])) and client_ids.min() >= -1:
        # rows already ascending: a stable sort by client is the same order (radix-sorted when small)
        order = stable_order(client_ids.astype(np.int64) + 1, int(client_ids.max()) + 2)
    else:
        order = np.lexsort((rows, client_ids))
    return SplitRows(source_split, rows[order].astype(np.int64), client_ids[order].astype(np.int32))


def _shared(table: SampleTable, split: str) -> SplitRows:
    """Every row of ``split`` as a shared test row (``client_id = -1``)."""
    n = table.num_rows(split)
    return SplitRows(split, np.arange(n, dtype=np.int64), np.full(n, -1, np.int32))


def _renamed_shared(table: SampleTable, others: list[str], outputs: dict[str, SplitRows]) -> None:
    """A source test split kept whole beside a derived one is called ``global_test``."""
    for s in others:
        outputs["global_test" if s == "test" else s] = _shared(table, s)


@dataclass
class _PolicyInput:
    table: SampleTable
    partitioner: Partitioner
    part: Partition
    seed: int
    test_fraction: float
    train_split: str
    others: list[str]


_Derived = "tuple[Partition, dict[str, SplitRows], dict[str, dict[str, int]]]"


def _global_policy(x: _PolicyInput) -> _Derived:
    """Training rows by client; every other source split shared."""
    kept = np.flatnonzero(x.part.assignment >= 0)
    outputs = {"train": _ordered(x.train_split, kept, x.part.assignment[kept])}
    for s in x.others:
        outputs[s] = _shared(x.table, s)
    return x.part, outputs, {x.train_split: x.part.dropped_counts()}


def _natural_policy(x: _PolicyInput) -> _Derived:
    """Every split assigned by the partitioner's natural key."""
    kept = np.flatnonzero(x.part.assignment >= 0)
    outputs = {"train": _ordered(x.train_split, kept, x.part.assignment[kept])}
    dropped = {x.train_split: x.part.dropped_counts()}
    for s in x.others:
        sub = x.partitioner.assign_split(x.table, s, x.part)
        rows = np.flatnonzero(sub.assignment >= 0)
        outputs[s] = _ordered(s, rows, sub.assignment[rows])
        dropped[s] = sub.dropped_counts()
    return x.part, outputs, dropped


def _client_policy(x: _PolicyInput) -> _Derived:
    """Each client holds out a stratified ``test_fraction`` of its own rows."""
    rng = make_rng(x.seed).spawn(1)[0]
    held = stratified_holdout(
        x.part.assignment, x.table.labels[x.train_split], x.part.num_clients, x.table.num_classes, x.test_fraction, rng
    )
    train_rows = np.flatnonzero((x.part.assignment >= 0) & ~held)
    test_rows = np.flatnonzero(held)
    outputs = {
        "train": _ordered(x.train_split, train_rows, x.part.assignment[train_rows]),
        "test": _ordered(x.train_split, test_rows, x.part.assignment[test_rows]),
    }
    _renamed_shared(x.table, x.others, outputs)
    return x.part, outputs, {x.train_split: x.part.dropped_counts()}


def _heldout_policy(x: _PolicyInput) -> _Derived:
    """A ``test_fraction`` of the clients held out whole as a shared test set."""
    part, test_rows, dropped_test = hold_out_clients(x.part, x.table.labels[x.train_split], x.test_fraction, make_rng(x.seed).spawn(2)[1])
    kept = np.flatnonzero(part.assignment >= 0)
    outputs = {
        "train": _ordered(x.train_split, kept, part.assignment[kept]),
        "test": SplitRows(x.train_split, test_rows, np.full(test_rows.size, -1, np.int32)),
    }
    _renamed_shared(x.table, x.others, outputs)
    return part, outputs, {x.train_split: part.dropped_counts(), "test": dropped_test}


#: the test policies (module notes), name -> how the output splits are derived
TEST_POLICY_REGISTRY = Registry("test policy", {
    "global": _global_policy, "client": _client_policy, "natural": _natural_policy, "heldout": _heldout_policy,
}, option="`test_split`")
TEST_POLICIES = TEST_POLICY_REGISTRY.names()


def check_no_empty_clients(num_clients: int, train_client_ids: np.ndarray) -> None:
    """Raise unless every one of ``num_clients`` clients holds at least one training row.

    Parameters
    ----------
    num_clients : int
        Number of clients of the split.
    train_client_ids : numpy.ndarray
        Client id of every training row.

    Raises
    ------
    HetbenchError
        Naming how many clients are empty and the way out (fewer clients, or ``--allow-empty``).

    Examples
    --------
    >>> import numpy as np
    >>> check_no_empty_clients(3, np.array([0, 2, 1, 1]))
    >>> check_no_empty_clients(4, np.array([0, 2, 1, 1]))
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: 1 of 4 clients has no training rows; use fewer clients (or a less skewed split), or pass allow_empty (allow_empty=True) to keep empty clients
    """
    held = np.zeros(num_clients, dtype=bool)
    held[np.asarray(train_client_ids)[np.asarray(train_client_ids) >= 0]] = True
    empty = int(num_clients - held.sum())
    if empty:
        verb = "has" if empty == 1 else "have"
        raise HetbenchError(
            f"{empty:,} of {num_clients:,} clients {verb} no training rows; use fewer clients (or a less skewed "
            "split), or pass `allow_empty` (allow_empty=True) to keep empty clients"
        )


def present_classes(table: SampleTable, outputs: dict[str, SplitRows]) -> np.ndarray | None:
    """Source class -> output class index, keeping only the classes some output row has (-1 for the
    others), or None when every class is present.

    A filter that removes whole classes (the Landmarks-User-160k thresholds keep 50 of 80 classes on
    the generated observations) then publishes a ClassLabel over the classes that remain.

    Examples
    --------
    >>> import datasets, numpy as np
    >>> from hetbench.splits import SplitRows, present_classes
    >>> from hetbench.table import SampleTable
    >>> t = SampleTable(splits={"train": datasets.Dataset.from_dict({"y": [0, 2, 2]})}, label_column="y",
    ...                 class_names=["a", "b", "c"], labels={"train": np.array([0, 2, 2])})
    >>> present_classes(t, {"train": SplitRows("train", np.arange(3), np.zeros(3, np.int32))}).tolist()
    [0, -1, 1]
    """
    present = np.zeros(table.num_classes, dtype=bool)
    for out in outputs.values():
        labels = np.asarray(table.labels[out.source_split])[out.rows]
        present[labels[(labels >= 0) & (labels < table.num_classes)]] = True
    if present.all():
        return None
    return np.where(present, np.cumsum(present) - 1, -1).astype(np.int64)


def build_split(
    table: SampleTable,
    partitioner: Partitioner,
    seed: int = 0,
    test_split: str | None = None,
    test_fraction: float = 0.2,
    train_split: str = "train",
    allow_empty: bool = False,
    count_training_rows: bool | None = None,
) -> FederatedSplit:
    """Partition ``table`` and derive its output splits under a test policy.

    Parameters
    ----------
    table : SampleTable
        The rows, labels and ids of every source split.
    partitioner : Partitioner
        Assigns the training rows to clients.
    seed : int
        Seed of the partition and of the test hold-out.
    test_split : {"global", "client", "natural", "heldout"}, optional
        The test policy (module notes). Default: ``natural`` for a partitioner with a natural key,
        ``global`` when the source has a test split, else ``client``.
    test_fraction : float
        Per-client hold-out fraction (``client``) or share of clients held out (``heldout``).
    train_split : str
        The source split that is partitioned.
    allow_empty : bool
        Accept clients left with no training rows (recorded in the recipe as ``allow_empty: true``);
        by default they are an error (:func:`check_no_empty_clients`).
    count_training_rows : bool, optional
        Under the ``client`` policy, whether a partitioner's client sizes (``sizes``, ``min_size``,
        ``min_samples``) count training rows, after each client's hold-out, as the CLI counts them (True;
        :meth:`~hetbench.partitioners.base.Partitioner.holding_out`), or rows before it (False: what
        earlier versions did and what ``verify`` re-runs, since a recipe records its hold-out). None: False
        with a ``FutureWarning`` where the two differ; True becomes the default in the next release.

    Returns
    -------
    FederatedSplit
        Output splits ordered by (client id, source row), the partition, the recipe and the counts
        of dropped rows by reason.

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> split = build_split(load_table("builtin:digits"), IIDPartitioner(4), seed=0, test_split="client", test_fraction=0.25)
    >>> split.num_clients, sorted(split.outputs), split.recipe["test_split"]
    (4, ['test', 'train'], 'client')
    """
    if train_split not in table.splits:
        raise HetbenchError(f"the data has no '{train_split}' split (splits: {', '.join(table.split_names)})")
    natural = type(partitioner).assign_split is not Partitioner.assign_split
    others = [s for s in table.split_names if s != train_split]
    if test_split is None:
        test_split = "natural" if natural else ("global" if others else "client")
    if test_split == "natural" and natural and not others:
        test_split = "client"
    derive = TEST_POLICY_REGISTRY[test_split]
    if test_split == "natural" and not natural:
        raise HetbenchError(f"`test_split` natural needs a partitioner with a natural key (natural-id), not '{partitioner.name}'")
    if test_split == "global" and not others:
        raise HetbenchError("`test_split` global needs a source with a test split; use `test_split` client")
    if test_split in ("client", "heldout") and not 0.0 < test_fraction < 1.0:
        raise HetbenchError(f"`test_fraction` must be between 0 and 1 (got {test_fraction})")

    counting = partitioner.holding_out(test_fraction) if test_split == "client" else partitioner
    if counting is not partitioner:  # its sizes count differently from the CLI's
        if count_training_rows is None:
            warnings.warn("build_split counts this partitioner's client sizes before each client's test hold-out, "
                          "unlike the CLI; pass count_training_rows=True to count training rows as the CLI does "
                          "(the default from the next release) or False to keep this count", FutureWarning, stacklevel=2)
        elif count_training_rows:
            partitioner = counting
    from hetbench.local_paths import publicise

    part = partitioner.partition(table, seed, train_split)
    if part.num_kept == 0:
        raise HetbenchError("the partition kept no samples")
    public, local = publicise(part.recipe, "recipe.partition")  # local paths by name (hetbench.local_paths)
    if local:
        part = part.with_recipe(**public)
    recipe: dict[str, Any] = {
        "partition": part.recipe,
        "test_split": test_split,
        "test_fraction": test_fraction if test_split in ("client", "heldout") else None,
        "train_split": train_split,
    }
    if allow_empty:
        recipe["allow_empty"] = True  # only when set: the recipes of splits without empty clients stay as they were
    if partitioner.build is not None:  # a builder rendered the table: its recipe, beside the partition's
        params, found = publicise(dict(partitioner.build["params"]), "recipe.build.params")
        recipe["build"] = {"method": partitioner.build["method"], "params": params}
        local.update(found)
    part, outputs, dropped = derive(_PolicyInput(table, partitioner, part, seed, test_fraction, train_split, others))
    class_map = present_classes(table, outputs)
    if not allow_empty:
        check_no_empty_clients(part.num_clients, outputs["train"].client_ids)
    # the split's own copy of the table: derive_columns adds columns to it, never to the caller's
    fs = FederatedSplit(table=table.copy(), partition=part, outputs=outputs, recipe=recipe, dropped=dropped,
                        class_map=class_map, embeddings=getattr(partitioner, "last_embedding", None) or None,
                        local_paths=local)
    partitioner.derive_columns(fs)  # cluster, s2_cell, renamed columns: part of the split, re-derived by verify
    return fs

