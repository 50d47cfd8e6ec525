"""A careful forger's tools for the verify tests: rewrite a shard's column, then re-record the shard
sha256 and column digests in the manifest so only the recipe check can catch the edit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable


def rewrite_column(path: Path, column: str, change: Callable[[list], None]) -> None:
    """Rewrite one parquet shard with ``change(values)`` applied to one column (schema kept)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    i = table.schema.get_field_index(column)
    values = table.column(column).to_pylist()
    change(values)
    table = table.set_column(i, table.schema.field(i), pa.array(values, type=table.schema.field(i).type))
    pq.write_table(table, path)


def rerecord(folder: Path) -> None:
    """Re-record every shard's sha256 and column digests in the manifest."""
    import pyarrow.parquet as pq

    from hetbench.publish.digest import SplitDigest, file_sha256, split_digest

    m = json.loads((folder / "hetbench.json").read_text())
    for info in m["splits"].values():
        digest = None
        for f in info["files"]:
            info["file_sha256"][f] = file_sha256(folder / f)
            pf = pq.ParquetFile(folder / f)
            digest = digest or SplitDigest(pf.schema_arrow)
            for batch in pf.iter_batches():
                digest.update(batch)
        info["column_sha256"] = digest.columns()
        info["content_sha256"] = split_digest(info["column_sha256"])
    (folder / "hetbench.json").write_text(json.dumps(m, sort_keys=True, indent=1))
