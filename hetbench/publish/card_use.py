"""The dataset card's "Use" section: snippets that read one client of this very split.

Every snippet names a client that has rows (:func:`example_client`), and the Flower Datasets route is
the plain ``NaturalIdPartitioner`` wherever it numbers the clients exactly as hetbench does (every
client has rows; its partition ``i`` is then client ``i``), else hetbench's own partitioner, with the
reason. ``tests/publish/test_card_snippets.py`` runs every snippet of the cards of real builds.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def example_client(rows: Mapping[str, Sequence[int]], per_client_test: bool) -> int:
    """The client the card's snippets read: the first with training rows (and test rows, when the test rows
    belong to clients), so that every snippet returns rows on this very split.

    Parameters
    ----------
    rows : mapping
        Rows per client of each output split (``{"train": [n_0, n_1, ...], "test": [...]}``).
    per_client_test : bool
        Whether the test split's rows carry their client's id (else they are shared, ``client_id = -1``).

    Examples
    --------
    >>> example_client({"train": [0, 5, 7], "test": [1, 0, 2]}, per_client_test=True)
    2
    >>> example_client({"train": [0, 5, 7], "test": [0, 0, 0]}, per_client_test=False)
    1
    """
    train = list(rows["train"])
    test = list(rows.get("test") or [0] * len(train)) if per_client_test else [1] * len(train)
    both = [k for k, (a, b) in enumerate(zip(train, test)) if a > 0 and b > 0]
    return both[0] if both else next(k for k, a in enumerate(train) if a > 0)


def use_section(manifest: Mapping[str, Any], recipe: Mapping[str, Any], rows: Mapping[str, Sequence[int]]) -> str:
    """The card's "Use" section: every snippet reads client ``k`` of this split (:func:`example_client`), and
    the Flower Datasets route is the plain ``NaturalIdPartitioner`` where it gives client ``i`` as partition
    ``i`` (every client has rows), else hetbench's partitioner, with the reason. Each snippet is run on
    real builds by ``tests/publish/test_card_snippets.py``."""
    has_test = "test" in manifest["splits"]
    per_client_test = has_test and recipe.get("test_split") not in ("global", "heldout")
    k = example_client(rows, per_client_test)
    n_train = int(rows["train"][k])
    num_clients = len(rows["train"])
    empty_train = sum(int(n) == 0 for n in rows["train"])
    empty_test = sum(int(n) == 0 for n in rows.get("test") or []) if per_client_test else 0
    if not has_test:
        hf_test = ""
    elif per_client_test:
        hf_test = (f'\nclient_{k}_test = ClientPartitions.from_dataset(ds["test"]).load_partition({k})'
                   f'   # its {int(rows["test"][k]):,} test rows')
    else:
        hf_test = '\ntest = ds["test"]   # the shared test rows (client_id = -1), the same for every client'
    exact = empty_train == 0 and empty_test == 0
    if exact:
        part, imports = 'NaturalIdPartitioner(partition_by="client_id")', \
            "from flwr_datasets.partitioner import NaturalIdPartitioner"
        why = (f"every one of the {num_clients:,} clients has training rows"
               + (" and test rows" if per_client_test else "")
               + ", so Flower Datasets' own `NaturalIdPartitioner` (which numbers the `client_id` values it "
               "finds, in ascending order) gives hetbench client `i` as partition `i` "
               "(`pip install flwr-datasets`):")
        install = ""
    else:
        part, imports = "HetbenchPartitioner()", "from hetbench.flower import HetbenchPartitioner"
        empty = f"{empty_train:,} of the {num_clients:,} clients have no training rows" if empty_train else \
            f"{empty_test:,} of the {num_clients:,} clients have no test rows"
        why = (f"here {empty}, so Flower Datasets' `NaturalIdPartitioner`, which numbers only the `client_id` "
               "values it finds, would not give client `i` as partition `i`; hetbench's partitioner does "
               "(empty clients are empty partitions):")
        install = " (`pip install 'hetbench[flower-datasets]'`)"
    parts = f'\n    "train": {part},' + (f'\n    "test": {part},' if per_client_test else "") + "\n"
    if not has_test:
        fl_test = ""
    elif per_client_test:
        fl_test = f'\nclient_{k}_test = fds.load_partition({k}, "test")'
    else:
        fl_test = '\ntest = fds.load_split("test")       # the shared test rows (client_id = -1)'
    return f"""## Use

The snippets read client `{k}` ({n_train:,} training rows); any of the {num_clients:,} clients reads the same way.

```python
from datasets import load_dataset

ds = load_dataset("<this folder or hub id>")

# rows are sorted by client_id (ascending), so a client is one contiguous range
import numpy as np
cids = np.asarray(ds["train"].with_format("arrow")["client_id"])
lo, hi = np.searchsorted(cids, [{k}, {k + 1}])
client_{k} = ds["train"].select(range(lo, hi))

# or, with hetbench installed: every client at once, zero-copy
from hetbench.clients import ClientPartitions
clients = ClientPartitions.from_dataset(ds["train"])
client_{k} = clients.load_partition({k})      # a datasets.Dataset; clients.table({k}) gives Arrow{hf_test}
```

**With [Flower Datasets](https://flower.ai/docs/datasets/)**{install}: {why}

```python
from flwr_datasets import FederatedDataset
{imports}
fds = FederatedDataset(dataset="<this folder or hub id>", partitioners={{{parts}}})
client_{k} = fds.load_partition({k}, "train")    # hetbench client_id {k}{fl_test}
```

Reading one client straight from the parquet shards (a local copy or the hub's files) reads only
its row groups: every row group holds whole clients (a very large client is cut into row groups of
its own), and the `client_id` statistics of each row group tell the reader which clients it holds:

```python
import glob
import pyarrow.parquet as pq
client_{k} = pq.read_table(sorted(glob.glob("data/train-*.parquet")), filters=[("client_id", "==", {k})])
```
"""
