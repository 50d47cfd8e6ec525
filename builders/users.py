"""``hetbench build users``: one client per user (Hsu et al. 2020 sec. 4.2) after the published filters
(Landmarks-User-160k, iNaturalist class balancing, or none; :class:`~hetbench.partitioners.users.UsersPartitioner`);
output column ``user_id``. With a single-split source the test split is user-disjoint (``heldout``). It works on
metadata alone, ``--image-root`` attaches images, and shares its recipes, column checks and publishing with
``hetbench build geo`` (:mod:`hetbench.builders.geo`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from hetbench.builders.geo import EMBEDDED, PUBLISHED, check_columns, publish_prepared, resolve_recipe, with_images
from hetbench.builders.geo_images import skipped_report
from hetbench.naming import input_slug
from hetbench.pipeline import PreparedSplit
from hetbench.report.geo_map import map_plot_writer
from hetbench.splits import FederatedSplit


def prepare_users(
    metadata: str | None = None,
    user_col: str | None = None,
    label_col: str | None = None,
    id_col: str | None = None,
    filters: str | None = None,
    min_samples: int = 1,
    test_split: str | None = None,
    test_fraction: float = 0.1,
    seed: int = 0,
    image_root: str | None = None,
    image_col: str | None = None,
    thresholds: dict[str, int] | None = None,
    recipe: str | None = None,
    mode: str | None = None,
) -> PreparedSplit:
    """One client per user after the published filters; the split, not yet published.

    Parameters
    ----------
    metadata : str, optional
        A table with a user column (default: the generated ``builtin:observations``).
    user_col, label_col, id_col : str, optional
        Its columns (default user column: ``observer`` for the generated table, else ``user_id``).
    filters : {"landmarks", "inaturalist", "none"}
        Landmarks-User-160k's class and user thresholds to a fixed point, iNaturalist-User-120k's
        class balancing, or none (default: landmarks).
    min_samples : int
        Drop users with fewer training rows (after the per-user hold-out of --test-split client).
    test_split, test_fraction
        The test policy; default: by user (``natural``) when every split has users, a shared test
        set when the test file has none, and held-out users (``heldout``) for a single split.
    thresholds : dict, optional
        Overrides of the filter thresholds.
    recipe, mode : str, optional
        A canonical recipe (``landmarks-user-160k``, ``inaturalist-user-120k``) and its mode
        (``import`` the published split files, or ``rebuild`` from raw metadata).
    Others
        As for :func:`prepare_geo`.

    References
    ----------
    Hsu, Qi and Brown, ECCV 2020, sec. 4.2 and Table 1 (Landmarks-User-160k, iNaturalist-User-120k).

    Examples
    --------
    >>> from hetbench.builders.users import prepare_users
    >>> prepared = prepare_users()
    >>> prepared.test_split, prepared.build().num_clients > 10
    ('heldout', True)
    """
    from hetbench.partitioners.users import UsersPartitioner
    from hetbench.sources import load_table

    params = {"user_col": user_col, "label_col": label_col, "id_col": id_col, "filters": filters, "test_split": test_split}
    published = resolve_recipe(recipe, "users", mode, metadata, params)
    filters = params["filters"] or "landmarks"
    user_col = params["user_col"] or ("observer" if metadata is None else "user_id")
    table, skipped = with_images(load_table(metadata or EMBEDDED, params["label_col"], params["id_col"]), image_root, image_col)
    check_columns(table, {"`user_col`": user_col})
    test_split = params["test_split"]
    if test_split is None:
        # a published test file without users (Landmarks' test.csv) is a shared test set of unseen users
        others_have_users = all(user_col in table.splits[s].column_names for s in table.split_names if s != "train")
        test_split = ("natural" if others_have_users else "global") if len(table.split_names) > 1 else "heldout"
    # min_samples counts training rows: under the client policy, the rows each user keeps after its hold-out
    partitioner = UsersPartitioner(column=user_col, filters=filters, min_samples=min_samples, **(thresholds or {}),
                                   holdout_fraction=test_fraction if test_split == "client" else None)

    def extras(fs: FederatedSplit):  # user_id: UsersPartitioner.derive_columns
        train_labels = fs.labels("train")
        users = {
            "filters": filters,
            "users": fs.num_clients,
            "classes_in_train": int(np.unique(train_labels).size),
            "train_images": int(train_labels.size),
            "test_images": int(len(fs.outputs["test"])) if "test" in fs.outputs else 0,
            "heldout_users": len(fs.partition.recipe.get("heldout_clients", [])),
            "published": PUBLISHED["landmarks-user-160k" if filters == "landmarks" else "inaturalist-user-120k"],
        }
        if published:
            users["published"] = published
        return {"users": users, **skipped_report(fs, skipped)}, map_plot_writer(fs, f"{fs.num_clients} users", False)

    return PreparedSplit(table, partitioner, seed, test_split, test_fraction, extras)


def build_users(
    out: str | os.PathLike | None = None, *, name: str | None = None, overwrite: bool = False, quiet: bool = False,
    recipe: str | None = None, mode: str | None = None, metadata: str | None = None, user_col: str | None = None,
    label_col: str | None = None, id_col: str | None = None, filters: str | None = None, min_samples: int = 1,
    test_split: str | None = None, test_fraction: float = 0.1, seed: int = 0, image_root: str | None = None,
    image_col: str | None = None, thresholds: dict[str, int] | None = None,
) -> tuple[Path, dict[str, Any]]:
    """One client per user after the published per-user filters, published (``hetbench build users``);
    returns the folder and its report.

    Parameters
    ----------
    out : str or os.PathLike, optional
        Output folder (default ``hetbench_splits/<recipe>``, or ``hetbench_splits/users-<input>-<filters>-s<seed>``,
        ``<input>`` as for :func:`build_geo`).
    name : str, optional
        Data set name in the card and manifest (default: the folder's tag).
    overwrite : bool
        Replace ``out`` if it exists (default False).
    quiet : bool
        No progress bar (default False).
    recipe : {"landmarks-user-160k", "inaturalist-user-120k"}, optional
        A canonical recipe (``manifests/recipes``); default None.
    mode : {"import", "rebuild"}, optional
        With ``recipe``: import the published split files, or rebuild from raw metadata (default None: import).
    metadata : str, optional
        A table with a user column (default None: the generated ``builtin:observations``).
    user_col : str, optional
        Its user column (default None: ``observer`` for the generated table, else ``user_id``).
    label_col, id_col : str, optional
        Its label and sample-id columns, as for :func:`build_geo`.
    filters : {"landmarks", "inaturalist", "none"}, optional
        ``landmarks``: classes with >= 30 images and 10 users, users with >= 30 images and 5 classes, to a
        fixed point (Landmarks-User-160k); ``inaturalist``: classes with >= 100 training images,
        subsampled to 100 (iNaturalist-User-120k); ``none``. Default None: ``landmarks``.
    min_samples : int
        Drop users with fewer training rows, counted after the per-user hold-out of ``test_split="client"`` (default 1).
    test_split : {"global", "client", "natural", "heldout"}, optional
        The test policy; default None: by user (``natural``) when every split has users, a shared test
        set when the test file has none, held-out users (``heldout``) for a single split.
    test_fraction : float
        With ``heldout``: the share of users held out (default 0.1).
    seed : int
        Seed of every random choice (default 0).
    image_root, image_col : str, optional
        Attach image files, as for :func:`build_geo`.
    thresholds : dict, optional
        Overrides of the filters' thresholds (:class:`hetbench.partitioners.users.UsersPartitioner`); not
        a CLI option.

    Returns
    -------
    folder : pathlib.Path
        The published folder.
    report : dict
        Its ``report.json`` (``users``: the filters, users, classes and images, beside the published ones).

    References
    ----------
    Hsu, Qi and Brown, ECCV 2020, sec. 4.2 and Table 1 (Landmarks-User-160k, iNaturalist-User-120k).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from hetbench.builders.users import build_users
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder, report = build_users(Path(tmp.name) / "users", quiet=True)
    >>> report["users"]["filters"], report["users"]["users"] == report["num_clients"] > 10
    ('landmarks', True)
    >>> tmp.cleanup()
    """
    params = dict(recipe=recipe, mode=mode, metadata=metadata, user_col=user_col, label_col=label_col, id_col=id_col,
                  filters=filters, min_samples=min_samples, test_split=test_split, test_fraction=test_fraction,
                  seed=seed, image_root=image_root, image_col=image_col, thresholds=thresholds)

    def tag(p: dict) -> str:
        slug = input_slug(p.get("metadata"), "observations")
        return p.get("recipe") or f"users-{slug}-{p.get('filters') or 'landmarks'}-s{p.get('seed', 0)}"

    return publish_prepared(prepare_users, tag, out, name, overwrite, quiet, params)
