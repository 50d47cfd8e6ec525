"""Write a federated split as a Hugging Face dataset folder (``docs/output-contract.md``).

```
<out>/README.md            dataset card (YAML configs + features, heterogeneity summary, plots)
<out>/data/<split>-<fingerprint>-NNNNN-of-NNNNN.parquet
<out>/hetbench.json        manifest (recipe, fingerprints, shard and content digests)
<out>/sample_ids.parquet   every row's split, client_id and sample id (digested in the manifest)
<out>/embeddings/<split>.npy  embedding splits: what the partition was derived from (digested)
<out>/report.json          heterogeneity report
<out>/plots/*.png
```

The first 12 hex digits of the split fingerprint are part of every shard name and of the card's
``data_files`` patterns: ``datasets`` caches a local folder under its *basename* and its config's
patterns, not its contents, so without them a rebuilt folder (``--overwrite``) or another folder of
the same name would load stale rows from the cache.

Rows are streamed into parquet shards (:mod:`hetbench.publish.parquet`); the manifest is
:mod:`~hetbench.publish.manifest`, the card :mod:`~hetbench.publish.card`, the report
:mod:`hetbench.report`. The folder is written atomically.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hetbench.atomic import atomic_dir
from hetbench.contract.columns import read_built_columns  # re-exported: the read side's public name
from hetbench.progress import progress_bar
from hetbench.publish.card import render_card
from hetbench.publish.licence import GivenLicence, resolve_licence
from hetbench.publish.manifest import build_manifest, write_manifest, write_sample_ids
from hetbench.publish.parquet import TARGET_SHARD_BYTES, output_features, write_split
from hetbench.report import compute_report, write_report
from hetbench.splits import FederatedSplit


class Background:
    """``fn(*args)`` on a daemon thread; :meth:`result` waits for it and returns its value or raises
    its exception.

    A daemon thread, unlike a ``concurrent.futures`` worker, does not hold the process open: when a
    build is stopped (Ctrl-C, SIGTERM) its temporary folder is removed and the process exits without
    waiting for a plot that is still drawing.

    Examples
    --------
    >>> Background(sum, [1, 2, 3]).result()
    6
    """

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name="hetbench-report", daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[..., Any], args: tuple) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            self._error = exc

    def wait(self, timeout: float) -> None:
        """Wait at most ``timeout`` seconds for the thread (after a failure elsewhere, so that it does
        not write into a folder being removed)."""
        self._thread.join(timeout)

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def publish_split(
    fs: FederatedSplit,
    out: str | os.PathLike,
    *,
    name: str | None = None,
    overwrite: bool = False,
    quiet: bool = False,
    shard_bytes: int = TARGET_SHARD_BYTES,
    extra_report: dict[str, Any] | None = None,
    extra_plots: Callable[[Path], list[str]] | None = None,
    feature_embedder: str | None = "auto",
    licence: GivenLicence | None = None,
) -> dict[str, Any]:
    """Write ``fs`` to ``out`` (atomically) and return the report.

    Parameters
    ----------
    fs : FederatedSplit
        The split (:func:`hetbench.splits.build_split`).
    out : path
        The output folder; refused if it exists unless ``overwrite``.
    name : str, optional
        Data set name in the card and manifest (default: the folder's name).
    overwrite, quiet : bool
        Replace ``out``; no progress bar.
    shard_bytes : int
        Target size of a parquet shard.
    extra_report : dict, optional
        Family-specific entries added to ``report.json`` (e.g. per-device image statistics).
    extra_plots : callable, optional
        ``extra_plots(folder)`` writes family-specific PNGs under ``folder/plots`` and returns their
        relative paths, which the dataset card shows too.
    feature_embedder : str, optional
        What the feature-shift entry embeds the training rows with: ``auto`` (``pixels:8`` for image
        data), ``none``, or an embedder spec (:mod:`hetbench.report.feature_entry`).
    licence : GivenLicence, optional
        The data's licence as its maker gives it (:func:`hetbench.publish.licence.given_licence`): recorded in
        the manifest, shown by the card. Default: the licence the source's own build gave, when the source is
        a hetbench build that has one, else the source's.

    Returns
    -------
    dict
        The report written to ``report.json``.

    Examples
    --------
    >>> import datasets
    >>> from hetbench.partitioners import ShardsPartitioner
    >>> from hetbench.publish import publish_split
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> report = publish_split(build_split(load_table("builtin:digits"), ShardsPartitioner(10, 2)), "digits-shards", quiet=True)
    >>> report["num_clients"], datasets.load_dataset("digits-shards", split="train").num_rows == report["num_samples"]
    (10, True)
    """
    from hetbench.outnames import check_split_name

    out = Path(out)
    name = name or out.name
    check_split_name(name)  # the card, the manifest and results folders hold it as given
    features = output_features(fs)
    total = sum(len(r) for r in fs.outputs.values())
    report = compute_report(
        {s: r.client_ids for s, r in fs.outputs.items()},
        {s: fs.labels(s) for s in fs.outputs},
        fs.class_names,
        fs.client_names,
        fs.dropped,
    )
    report.update(extra_report or {})
    from hetbench.report.feature_embedding import check_embedder_spec
    from hetbench.report.feature_entry import feature_shift_writer, measure_feature_shift
    from hetbench.report.groups import client_groups

    check_embedder_spec(feature_embedder)
    groups = client_groups(report, fs.client_names)

    def measure_and_draw(tmp: Path) -> list[str]:
        shift = measure_feature_shift(fs, feature_embedder, groups=groups)
        if shift is not None:
            report["feature_shift"] = shift.entry
        return write_report(report, tmp) + feature_shift_writer(shift)(tmp)

    # the licence, checked before anything is written: the one given, else the one the source build's maker gave
    given = resolve_licence(licence, fs.table.source.get("licence"), str(fs.table.source.get("dataset")))
    with atomic_dir(out, overwrite) as tmp:
        data_dir = tmp / "data"
        data_dir.mkdir()
        written = {}
        # the feature shift is measured and the report's plots drawn on a second thread while the shards are
        # written: writing is Arrow and sha256 work, decoding and the shift's sums are OpenCV and numpy, all
        # releasing the GIL; drawing is Python (matplotlib's Agg, one thread)
        drawn = Background(measure_and_draw, tmp)
        try:
            with progress_bar(f"writing {name}", total, quiet) as bar:
                for split in fs.outputs:
                    written[split] = write_split(fs, split, features, data_dir, bar, shard_bytes)
        except Exception:  # a full disk, say: let the plots finish before the folder is removed
            drawn.wait(10.0)  # (Ctrl-C and SIGTERM do not wait for a plot)
            raise
        sample_ids = write_sample_ids(fs, tmp)
        plots = drawn.result()
        if extra_plots is not None:
            plots += extra_plots(tmp)
        embeddings = None
        if fs.embeddings:  # what the partition was derived from: verify re-derives it on any CPU
            from hetbench.embed.cache import model_digest
            from hetbench.publish.embeddings import write_embeddings

            spec = fs.recipe["partition"]["params"].get("embedder")
            model = fs.local_paths.get("recipe.partition.params.embedder")  # its model file, by its local path
            embeddings = write_embeddings(fs.embeddings, tmp, model_digest(f"{spec.partition(':')[0]}:{model}" if model else spec))
        from hetbench.local_paths import publicise, write_sidecar
        from hetbench.publish.inventory import file_inventory
        from hetbench.publish.published_files import card_task

        source, local_source = publicise(fs.table.source, "source")
        source.pop("licence", None)  # recorded as the manifest's own 'licence' (given above)
        manifest = build_manifest(fs, written, name, sample_ids, embeddings)
        manifest["source"] = source  # sources by name: no local path is published (hetbench.local_paths)
        if given is not None:  # only when given: the manifests of splits without one stay as they were
            manifest["licence"] = given.as_manifest()
        write_sidecar(tmp, {**fs.local_paths, **local_source})
        manifest["files"] = file_inventory(tmp)  # the report, its statistics and plots: digested, uploaded
        write_manifest(manifest, tmp)
        task = card_task(features)
        card = render_card(
            name=name,
            description=fs.table.description,
            source=source,
            recipe=fs.recipe,
            report=report,
            manifest=manifest,
            plots=plots,
            features_yaml=features._to_yaml_list(),
            file_tag=fs.fingerprint[:12],
            license=fs.table.license,
            task=task,
            client_rows={s: np.bincount(r.client_ids[r.client_ids >= 0], minlength=fs.num_clients).tolist()
                         for s, r in fs.outputs.items()},
        )
        (tmp / "README.md").write_text(card, encoding="utf-8")
    return report


__all__ = ["publish_split", "output_features", "read_built_columns", "TARGET_SHARD_BYTES"]
