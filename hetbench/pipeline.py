"""One path from a source to a published split: load, partition, derive the splits, publish.

Every split hetbench makes, from ``hetbench partition ...`` and from every ``hetbench build ...``,
goes through :func:`make_split`::

    source --load_table--> SampleTable --Partitioner--> Partition --build_split--> FederatedSplit
           --publish_split--> <out>/ (parquet shards, hetbench.json, report.json, plots, README.md)

A builder's only job is to make the :class:`~hetbench.table.SampleTable` (rendering images, joining
metadata) and to choose the :class:`~hetbench.partitioners.base.Partitioner`; ``extras`` adds what
its family reports beyond the common report (device statistics, maps, embedding clusters).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from hetbench.atomic import check_out_dir
from hetbench.partitioners.base import Partitioner
from hetbench.splits import FederatedSplit, build_split
from hetbench.table import SampleTable

if TYPE_CHECKING:
    from hetbench.publish.licence import GivenLicence

#: ``extras(split) -> (report additions or None, plot writer or None)``; the plot writer gets the
#: output folder, writes PNGs under ``plots/`` and returns their relative paths (the card shows them).
Extras = Callable[[FederatedSplit], "tuple[dict[str, Any] | None, Callable[[Path], list[str]] | None]"]


def make_split(
    source: str | SampleTable,
    partitioner: Partitioner,
    out: str | os.PathLike,
    *,
    label_col: str | None = None,
    id_col: str | None = None,
    seed: int = 0,
    test_split: str | None = None,
    test_fraction: float = 0.2,
    name: str | None = None,
    overwrite: bool = False,
    quiet: bool = False,
    extras: Extras | None = None,
    allow_empty: bool = False,
    feature_embedder: str | None = "auto",
    licence: GivenLicence | None = None,
    count_training_rows: bool | None = None,
) -> tuple[FederatedSplit, dict[str, Any]]:
    """Partition ``source`` and publish the split to ``out``; returns the split and its report.

    Parameters
    ----------
    source : str or SampleTable
        A data set reference that :func:`hetbench.sources.load_table` reads (``builtin:digits``, a
        parquet/CSV file, a ``save_to_disk`` folder, a built split, a hub id) or a table in memory.
    partitioner : Partitioner
        Decides which client every training row goes to (:mod:`hetbench.partitioners`).
    out : path
        The output folder; refused if it exists unless ``overwrite`` (checked once the input is
        read, before any partitioning, so a bad input is reported before an existing folder), refused
        when it is, lies inside or contains ``source``, written atomically.
    label_col, id_col : str, optional
        Label and sample-id columns of ``source`` when it is a reference.
    seed : int
        Seed of every random choice (partition and test hold-out).
    test_split, test_fraction
        The test policy and its fraction (:func:`hetbench.splits.build_split`).
    name : str, optional
        Data set name in the card and manifest (default: the folder's name).
    overwrite, quiet : bool
        Replace ``out``; no progress bars.
    extras : callable, optional
        Family-specific report entries and plots, computed from the built split.
    allow_empty : bool
        Accept clients with no training rows (by default an error, raised before anything is written).
    feature_embedder : str, optional
        What the report's feature-shift entry embeds the training rows with: ``auto`` (``pixels:8`` for
        image data), ``none``, or an embedder spec (:mod:`hetbench.report.feature_entry`).
    licence : GivenLicence, optional
        The data's licence as the split's maker gives it (:func:`hetbench.publish.licence.given_licence`;
        default: the one :func:`hetbench.publish.licence.licensed` gives around the call, if any).
    count_training_rows : bool, optional
        Whether client sizes count training rows under the ``client`` policy, as the CLI counts them
        (:func:`hetbench.splits.build_split`).

    Returns
    -------
    (FederatedSplit, dict)
        The split and the report written to ``out/report.json``.

    Examples
    --------
    >>> from hetbench.partitioners import DirichletPartitioner
    >>> from hetbench.pipeline import make_split
    >>> split, report = make_split("builtin:digits", DirichletPartitioner(10, alpha=0.5), "digits-dir", quiet=True)
    >>> report["num_clients"], sorted(split.outputs)
    (10, ['test', 'train'])
    """
    from hetbench.publish import publish_split
    from hetbench.publish.licence import active_licence
    from hetbench.report.feature_embedding import check_embedder_spec
    from hetbench.report.test_groups import warn_thin_test_groups

    check_embedder_spec(feature_embedder)
    if isinstance(source, SampleTable):
        table = source
    else:
        from hetbench.sources import load_table

        from hetbench.progress import show_progress

        with show_progress(not quiet):  # a large image source's decode check shows its bar
            table = load_table(source, label_col, id_col)  # the input first: a bad input is reported as such
    out = check_out_dir(out, overwrite, inputs={"`dataset`": None if isinstance(source, SampleTable) else source})
    from hetbench.progress import show_progress

    with show_progress(not quiet):  # a partitioner's long steps (embedding, K-means) show their bars
        split = build_split(table, partitioner, seed, test_split, test_fraction, allow_empty=allow_empty,
                            count_training_rows=count_training_rows)
    warn_thin_test_groups(split)  # per-device accuracy in 50-point steps says nothing: say so before writing
    extra_report, extra_plots = extras(split) if extras is not None else (None, None)
    if table.skipped and "skipped" not in (extra_report or {}):  # rows the source's image cells dropped
        extra_report = {**(extra_report or {}), **skipped_entries(table.skipped)}
    if table.not_images:  # kept as the source holds them, listed (hetbench.sources.image_cells.not_image_cells)
        extra_report = {**(extra_report or {}), "not_images": list(table.not_images[:MAX_LISTED_SKIPS]),
                        "num_not_images": len(table.not_images)}
    report = publish_split(
        split, out, name=name or out.name, overwrite=overwrite, quiet=quiet,
        extra_report=extra_report, extra_plots=extra_plots, feature_embedder=feature_embedder,
        licence=licence if licence is not None else active_licence(),
    )
    return split, report


#: the most skipped rows a report lists (all are counted in ``num_skipped``)
MAX_LISTED_SKIPS = 1000


def skipped_entries(skipped: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's ``skipped`` (the first :data:`MAX_LISTED_SKIPS`) and ``num_skipped`` (all) of ``skipped``.

    Examples
    --------
    >>> from hetbench.pipeline import skipped_entries
    >>> skipped_entries([{"split": "train", "row": 3, "file": "a.png", "reason": "r"}])["num_skipped"]
    1
    """
    return {"skipped": list(skipped[:MAX_LISTED_SKIPS]), "num_skipped": len(skipped)}


@dataclass
class PreparedSplit:
    """What a builder hands to the pipeline: its table, its partitioner and how to derive the splits.

    Parameters
    ----------
    table : SampleTable
        The rows the builder made (rendered images, joined metadata).
    partitioner : Partitioner
        Decides each training row's client.
    seed, test_split, test_fraction
        As for :func:`make_split`.
    extras : callable, optional
        The family's report entries and plots (``extras(split) -> (report additions, plot writer)``).
    allow_empty : bool
        Accept clients with no training rows (:func:`hetbench.splits.build_split`).

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.pipeline import PreparedSplit
    >>> from hetbench.sources import load_table
    >>> prepared = PreparedSplit(load_table("builtin:digits"), IIDPartitioner(5), seed=1)
    >>> prepared.build().num_clients
    5
    >>> split, report = prepared.publish("digits-iid", quiet=True)
    >>> report["num_clients"]
    5
    """

    table: SampleTable
    partitioner: Partitioner
    seed: int = 0
    test_split: str | None = None
    test_fraction: float = 0.2
    extras: Extras | None = None
    allow_empty: bool = False

    def build(self) -> FederatedSplit:
        """The split, not published (what ``hetbench verify`` compares with a manifest)."""
        return build_split(
            self.table, self.partitioner, self.seed, self.test_split, self.test_fraction, allow_empty=self.allow_empty
        )

    def publish(
        self, out: str | os.PathLike, *, name: str | None = None, overwrite: bool = False, quiet: bool = False,
        feature_embedder: str | None = "auto", licence: GivenLicence | None = None,
    ) -> tuple[FederatedSplit, dict[str, Any]]:
        """Build and publish through :func:`make_split`; returns the split and its report."""
        return make_split(
            self.table, self.partitioner, out, seed=self.seed, test_split=self.test_split,
            test_fraction=self.test_fraction, name=name, overwrite=overwrite, quiet=quiet, extras=self.extras,
            allow_empty=self.allow_empty, feature_embedder=feature_embedder, licence=licence,
        )
