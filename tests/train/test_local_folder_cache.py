"""Two split folders with the same name and shard names but different rows (a rebuild after a code change,
a copy edited elsewhere) each load their own rows: ``datasets`` alone returned the first one's cached
Arrow for both (hetbench.local_folders)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def _relabel(folder: Path) -> None:
    """Every training label shifted by one class, in place, under the same file names."""
    for shard in (folder / "data").glob("train-*.parquet"):
        table = pq.read_table(shard)
        labels = table.column("label").to_numpy()
        shifted = pa.array((labels + 1) % 10, type=table.schema.field("label").type)
        pq.write_table(table.set_column(table.schema.get_field_index("label"), "label", shifted), shard)


def test_same_named_folders_with_other_rows_load_their_own_rows(tmp_path):
    from hetbench.clients import ClientPartitions
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.pipeline import make_split
    from hetbench.train.data import load_federated

    first = tmp_path / "a" / "digits-split"
    make_split("builtin:digits", DirichletPartitioner(4, alpha=1.0), first, quiet=True)
    second = tmp_path / "b" / "digits-split"
    shutil.copytree(first, second)
    _relabel(second)
    a, b = load_federated(str(first)), load_federated(str(second))
    assert ((a.y_train.numpy() + 1) % 10 == b.y_train.numpy()).all()
    pa_, pb = ClientPartitions.from_folder(first), ClientPartitions.from_folder(second)
    la, lb = pa_.load_partition(0)["label"], pb.load_partition(0)["label"]
    assert [(x + 1) % 10 for x in la] == list(lb)
    _relabel(first)  # rebuilt in place: loaded again, not the cached rows
    assert (load_federated(str(first)).y_train.numpy() == b.y_train.numpy()).all()
