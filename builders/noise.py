"""``hetbench partition feature-noise`` / ``label-noise``: IID clients whose rows are corrupted.

Both builders load the source, divide its training rows IID into N equal clients (the
partitioners of :mod:`hetbench.partitioners.noise`), and make a new :class:`~hetbench.table.SampleTable`
whose rows carry the noise; the pipeline then partitions that table with the same seed (the same
IID assignment) and publishes it. ``hetbench verify`` re-runs the whole build (:func:`rebuild`).

Which rows are noised: every row of the source's training split, with the noise of the client it
is assigned to. With ``--test-split client`` a client's held-out test rows are its own rows, so they
carry its noise too; a source test split kept as a shared test set (``--test-split global``) stays
clean. Columns added: ``noise_std`` (feature noise: the standard deviation added to the row, 0 for
clean rows) and ``clean_label`` (label noise: the label before flipping; ``label`` is the noised one).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.builders.noise_tables import decode_image, feature_noise_table, image_column, label_noise_table
from hetbench.errors import HetbenchError
from hetbench.partitioners.noise import CLEAN_LABEL_COLUMN, FeatureNoisePartitioner, LabelNoisePartitioner
from hetbench.pipeline import PreparedSplit
from hetbench.seeding import check_seed, make_rng
from hetbench.table import SampleTable


def _load(dataset: str | SampleTable, label_col: str | None, id_col: str | None) -> SampleTable:
    if isinstance(dataset, SampleTable):
        return dataset
    from hetbench.sources import load_table

    return load_table(dataset, label_col, id_col)


def _check_input(method: str, table: SampleTable) -> SampleTable:
    """``table``, if ``method`` can noise it: feature noise needs images, label noise two classes."""
    if method == "feature-noise":
        image_column(table, "train")
    elif table.num_classes < 2:
        raise HetbenchError(f"label noise needs at least 2 classes (the data has {table.num_classes})")
    return table


def _per_client(values: np.ndarray) -> list[float]:
    return [round(float(v), 12) for v in values]


def noise_sheet_writer(clean: SampleTable, split, levels: np.ndarray, max_clients: int = 10):
    """A plot writer for ``publish_split``: ``plots/feature_noise.png``, the first training image of
    up to ``max_clients`` clients (evenly spaced over the client ids) as the source holds it (top) and
    as the split publishes it (bottom), each column titled with its client's sigma_k."""

    def write(out_dir: Path) -> list[str]:
        from hetbench.plotting import pyplot

        plt = pyplot()
        out = split.outputs["train"]
        col = image_column(clean, "train")
        ids = np.unique(out.client_ids)
        ids = ids[np.unique(np.linspace(0, ids.size - 1, min(max_clients, ids.size)).round().astype(int))]
        rows = [int(out.rows[np.flatnonzero(out.client_ids == k)[0]]) for k in ids]
        images = [[decode_image(t.splits["train"].with_format("arrow")[col][r].as_py()) for r in rows] for t in (clean, split.table)]
        fig, axes = plt.subplots(2, len(ids), figsize=(1.2 * len(ids) + 0.8, 3.4), squeeze=False)
        fig.subplots_adjust(left=0.7 / (1.2 * len(ids) + 0.8), right=0.99, bottom=0.03, top=0.74, wspace=0.08, hspace=0.08)
        for j, k in enumerate(ids):
            for i, label in enumerate(("source", "published")):
                ax = axes[i][j]
                img = images[i][j]
                ax.imshow(img, cmap="gray" if img.ndim == 2 else None, vmin=0, vmax=255, interpolation="nearest")
                ax.set_xticks([])
                ax.set_yticks([])
                if j == 0:
                    ax.set_ylabel(label, fontsize=9)
            axes[0][j].set_title(f"client {int(k)}\nσ = {levels[k]:.3g}", fontsize=8)
        fig.suptitle("Gaussian pixel noise per client (std on [0, 1] pixels)", fontsize=10)
        path = out_dir / "plots" / "feature_noise.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return ["plots/feature_noise.png"]

    return write


def feature_noise_extras(partitioner: FeatureNoisePartitioner, clean: SampleTable | None = None):
    """``extras``: ``report.json``'s ``feature_noise`` (sigma, the convention and sigma_k per client)
    and, given the ``clean`` source table, the plot of :func:`noise_sheet_writer`."""

    def extras(split):
        levels = partitioner.levels()
        per_client_test = split.outputs.get("test") is not None and bool((split.outputs["test"].client_ids >= 0).any())
        return {"feature_noise": {
            "sigma": partitioner.sigma,
            "convention": "sigma_k = sigma * k / N for client k = 1..N (client_id i is k = i + 1), "
                          "standard deviation on pixels scaled to [0, 1], clipped and rounded to 8 bits",
            "sigma_k": _per_client(levels),
            "noised_rows": "training rows and their clients' test rows" if per_client_test else
                           "training rows; the shared test rows are clean",
        }}, (None if clean is None or not len(split.outputs["train"]) else noise_sheet_writer(clean, split, levels))

    return extras


def label_noise_extras(partitioner: LabelNoisePartitioner):
    """``extras``: ``report.json``'s ``label_noise`` (rate, kind, the rate and the realised flip
    fraction per client on every output split that has client rows)."""

    def extras(split):
        clean = split.table.column("train", CLEAN_LABEL_COLUMN).astype(np.int64)
        noisy = split.table.labels["train"]
        realised: dict[str, list[float | None]] = {}
        for name, out in split.outputs.items():
            if out.source_split != "train" or not (out.client_ids >= 0).any():
                continue
            flipped = (noisy[out.rows] != clean[out.rows]).astype(np.int64)
            n = np.bincount(out.client_ids, minlength=split.num_clients)
            f = np.bincount(out.client_ids, weights=flipped, minlength=split.num_clients)
            realised[name] = [round(float(a / b), 6) if b else None for a, b in zip(f, n)]
        return {"label_noise": {
            "rate": partitioner.rate, "kind": partitioner.kind, "per_client": partitioner.per_client,
            "rates": _per_client(partitioner.rates()), "flip_fraction": realised,
        }}, None

    return extras


def prepare_feature_noise(
    dataset: str | SampleTable = "builtin:digits",
    label_col: str | None = None,
    id_col: str | None = None,
    num_clients: int = 10,
    sigma: float = 0.1,
    seed: int = 0,
    test_split: str | None = None,
    test_fraction: float = 0.2,
    allow_empty: bool = False,
    quiet: bool = True,
) -> PreparedSplit:
    """NIID-Bench's noise-based feature imbalance over ``dataset``; the split, not yet published.

    Rows are divided IID into N equal clients, then client k's images get Gaussian noise with
    standard deviation sigma * k / N (k = 1..N) on pixels scaled to [0, 1]
    (:class:`~hetbench.partitioners.noise.FeatureNoisePartitioner`; module notes for which rows).

    Parameters
    ----------
    dataset, label_col, id_col
        The source (any labelled image table) and its label and id columns.
    num_clients : int
        N.
    sigma : float
        The last client's noise standard deviation (>= 0).
    seed, test_split, test_fraction, allow_empty, quiet
        As for :func:`hetbench.pipeline.make_split`.

    Examples
    --------
    >>> from hetbench.builders.noise import prepare_feature_noise
    >>> split = prepare_feature_noise(num_clients=3, sigma=0.3).build()
    >>> split.num_clients, sorted(split.outputs)
    (3, ['test', 'train'])
    """
    seed = check_seed(seed)
    partitioner = FeatureNoisePartitioner(num_clients, sigma)
    table = _check_input("feature-noise", _load(dataset, label_col, id_col))
    assignment = partitioner.iid(table.num_rows("train"), make_rng(seed))
    noisy = feature_noise_table(table, assignment, partitioner.levels(), seed, quiet)
    extras = feature_noise_extras(partitioner, table)
    return PreparedSplit(noisy, partitioner, seed, test_split, test_fraction, extras, allow_empty)


def prepare_label_noise(
    dataset: str | SampleTable = "builtin:digits",
    label_col: str | None = None,
    id_col: str | None = None,
    num_clients: int = 10,
    rate: float = 0.2,
    kind: str = "uniform",
    per_client: bool = False,
    seed: int = 0,
    test_split: str | None = None,
    test_fraction: float = 0.2,
    allow_empty: bool = False,
    quiet: bool = True,
) -> PreparedSplit:
    """Label noise over ``dataset``: IID equal clients whose training labels are flipped; the split,
    not yet published (:class:`~hetbench.partitioners.noise.LabelNoisePartitioner`).

    Parameters
    ----------
    dataset, label_col, id_col
        The source and its label and id columns (at least two classes).
    num_clients : int
        N.
    rate : float
        Flip probability in [0, 1].
    kind : {"uniform", "pair"}
        A uniformly random other class, or c -> c + 1 mod C.
    per_client : bool
        Client k = 1..N flips with rate * k / N.
    seed, test_split, test_fraction, allow_empty, quiet
        As for :func:`hetbench.pipeline.make_split`.

    Examples
    --------
    >>> from hetbench.builders.noise import prepare_label_noise
    >>> prepared = prepare_label_noise(num_clients=4, rate=0.5, kind="pair")
    >>> report, _ = prepared.extras(prepared.build())
    >>> report["label_noise"]["rates"], len(report["label_noise"]["flip_fraction"]["train"])
    ([0.5, 0.5, 0.5, 0.5], 4)
    """
    seed = check_seed(seed)
    partitioner = LabelNoisePartitioner(num_clients, rate, kind, per_client)
    table = _check_input("label-noise", _load(dataset, label_col, id_col))
    assignment = partitioner.iid(table.num_rows("train"), make_rng(seed))
    noisy = label_noise_table(table, assignment, partitioner.rates(), kind, seed)
    return PreparedSplit(noisy, partitioner, seed, test_split, test_fraction, label_noise_extras(partitioner), allow_empty)


PREPARE = {"feature-noise": prepare_feature_noise, "label-noise": prepare_label_noise}


def build_noise(
    method: str, out: str | os.PathLike, *, name: str | None = None, overwrite: bool = False, quiet: bool = False,
    feature_embedder: str | None = "auto", **params: Any,
) -> tuple[Path, dict[str, Any]]:
    """Noise a labelled image table and publish it (``hetbench partition feature-noise`` / ``label-noise``);
    returns the folder and the report. The input is read before ``out`` is checked, and ``out`` before any noising.

    Parameters
    ----------
    method : {"feature-noise", "label-noise"}
        NIID-Bench's Gaussian pixel noise of std ``sigma * k / N`` on client k, or flipped training labels.
    out : str or os.PathLike
        Output folder.
    name, overwrite, quiet
        Data set name in the card (default: the folder's name); replace ``out``; no progress bar.
    feature_embedder : str, optional
        The report's feature-shift embedder (default ``"auto"``; :func:`hetbench.make_split`).
    **params
        The method's own parameters, by the names of :func:`prepare_feature_noise` (``sigma``) or
        :func:`prepare_label_noise` (``rate``, ``kind``, ``per_client``): the two take different ones.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> tmp = tempfile.TemporaryDirectory()
    >>> _, report = build_noise("label-noise", Path(tmp.name) / "ln", num_clients=4, rate=0.5, kind="pair", quiet=True)
    >>> report["num_clients"], report["label_noise"]["rates"]
    (4, [0.5, 0.5, 0.5, 0.5])
    >>> tmp.cleanup()
    """
    from hetbench.atomic import locked_out

    inputs = {"--dataset": params["dataset"] if isinstance(params.get("dataset"), (str, os.PathLike)) else None}
    if "dataset" in params:
        params["dataset"] = _check_input(method, _load(params["dataset"], params.pop("label_col", None), params.pop("id_col", None)))
    with locked_out(out, overwrite, inputs=inputs) as out_path:  # before any noising
        prepared = PREPARE[method](**params, quiet=quiet)
        _, report = prepared.publish(out_path, name=name or out_path.name, overwrite=overwrite, quiet=quiet,
                                     feature_embedder=feature_embedder)
    return out_path, report


def rebuild(manifest: dict, num_proc: int = 1):
    """Re-run a recorded feature-noise or label-noise build (for ``hetbench verify``); the split.

    The recorded source is loaded and noised again; a source whose noised table has another input
    fingerprint raises :class:`~hetbench.errors.SourceChanged`.
    """
    from hetbench.param_types import check_params
    from hetbench.errors import SourceChanged

    src, recipe = manifest["source"], manifest["recipe"]
    part = recipe["partition"]
    if not isinstance(src.get("dataset"), str):
        raise HetbenchError("hetbench.json is malformed: 'source.dataset' is missing or not a string")
    if part["method"] not in PREPARE:
        raise HetbenchError(f"hetbench.json is malformed: a noise build's partition method is {part['method']!r}")
    check_params(PREPARE[part["method"]], part["params"], "recipe.partition.params", exclude=(
        "dataset", "label_col", "id_col", "seed", "test_split", "test_fraction", "allow_empty", "quiet"))
    prepared = PREPARE[part["method"]](
        src["dataset"], src.get("label_col"), src.get("id_col"), **part["params"], seed=part["seed"],
        test_split=recipe["test_split"], test_fraction=recipe.get("test_fraction") or 0.2,
        allow_empty=bool(recipe.get("allow_empty", False)),
    )
    if prepared.table.fingerprint != manifest.get("input_fingerprint"):
        raise SourceChanged(f"the source '{src['dataset']}' differs from the one this split was built from (input fingerprint mismatch)")
    return prepared.build()
