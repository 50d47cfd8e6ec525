"""The read side of the published-folder format: what a built folder holds and how to read it back.

A build folder (``hetbench partition`` / ``hetbench build`` output, ``docs/output-contract.md``) is read
here and only here: the trainer, the Flower partitioner, ``verify``, ``report``, the sources that read a
build back and the reproduce runners all go through these names. The write side lives in
:mod:`hetbench.publish`. This room sits just above the infrastructure: it imports nothing of hetbench
but :mod:`hetbench.errors`.

========================  ==========================================================================
name                      what it is
========================  ==========================================================================
``MANIFEST_NAME``         ``hetbench.json``; ``SAMPLE_IDS_NAME``: ``sample_ids.parquet``
``FORMAT_VERSION``        the manifest format this hetbench writes; ``READABLE_FORMATS``: the ones it reads
``read_manifest``         the manifest, checked for the keys every reader relies on
``manifest_or_none``      the same, or None for a folder that is not a hetbench build
``recorded_build``        the recipe that rendered the split's table
``safe_path``             a path the manifest names, refused unless it stays inside the folder
``shard_paths``           the parquet shards of one output split, in row order
``SampleIds``             one split's per-row ``client_id`` and ``sample_id``
``read_sample_ids``       every split's :class:`SampleIds`
``read_embeddings``       the stored embeddings, checked against their digests
``listed_files``          the embedding files the manifest lists
``read_built_columns``    selected columns of the shards, as numpy arrays
========================  ==========================================================================

Examples
--------
>>> from hetbench.contract import read_manifest, shard_paths
>>> from hetbench.partitioners import IIDPartitioner
>>> from hetbench.pipeline import make_split
>>> _ = make_split("builtin:digits", IIDPartitioner(4), "digits-contract", quiet=True)
>>> manifest = read_manifest("digits-contract")
>>> manifest["num_clients"], [p.name for p in shard_paths("digits-contract", manifest, "test")]
(4, ['test-...-00000-of-00001.parquet'])
"""

from __future__ import annotations

from hetbench.contract.columns import read_built_columns
from hetbench.contract.embeddings import EMBEDDINGS_FOLDER, listed_files, read_embeddings
from hetbench.contract.manifest import (
    FORMAT_VERSION,
    MANIFEST_NAME,
    READABLE_FORMATS,
    SAMPLE_IDS_NAME,
    manifest_or_none,
    read_manifest,
    recorded_build,
    safe_path,
    shard_paths,
)
from hetbench.contract.sample_ids import SampleIds, read_sample_id_table, read_sample_ids, sample_ids_of

__all__ = [
    "EMBEDDINGS_FOLDER", "FORMAT_VERSION", "MANIFEST_NAME", "READABLE_FORMATS", "SAMPLE_IDS_NAME", "SampleIds",
    "listed_files", "manifest_or_none", "read_built_columns", "read_embeddings", "read_manifest",
    "read_sample_id_table", "read_sample_ids", "recorded_build", "safe_path", "sample_ids_of", "shard_paths",
]
