"""Steps 1 and 2 of the report's ``feature_shift`` entry (:mod:`hetbench.report.feature_entry`): which embedder
a split's images are measured with, the embedding of the sampled rows, and their standardised principal
components."""

from __future__ import annotations

import dataclasses

import numpy as np

from hetbench.errors import HetbenchError, marked

#: the embedder of image splits (``--feature-embedder auto``)
DEFAULT_EMBEDDER = "pixels:8"
#: principal components the distances are measured on
COMPONENTS = 16
#: at most this many rows (a seeded sample) fit the standardisation and the principal axes
FIT_ROWS = 20000
#: ``--feature-embedder`` values that are not embedder specs
AUTO, NONE = "auto", "none"


def resolve_embedder(table, split: str, spec: str | None) -> str | None:
    """The embedder spec to use, or None when the feature shift is not measured (``none``, or ``auto``
    on data without an image column).

    Examples
    --------
    >>> from hetbench.report.feature_embedding import resolve_embedder
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:digits")
    >>> resolve_embedder(t, "train", "auto"), resolve_embedder(t, "train", "none"), resolve_embedder(t, "train", "hog")
    ('pixels:8', None, 'hog')
    """
    if spec is None or spec == NONE:
        return None
    if spec != AUTO:
        return spec
    ds = table.splits[split]
    has_image = any(type(f).__name__ == "Image" for f in ds.features.values())
    return DEFAULT_EMBEDDER if has_image else None


def check_embedder_spec(spec: str | None) -> None:
    """Refuse an unknown ``--feature-embedder`` before any work (:class:`HetbenchError`, one line).

    Examples
    --------
    >>> from hetbench.report.feature_embedding import check_embedder_spec
    >>> check_embedder_spec("auto"), check_embedder_spec("hog")
    (None, None)
    >>> check_embedder_spec("sift")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: feature_embedder sift: unknown embedder 'sift'; choose auto, none, task[:EPOCHS], pixels[:S], hog, color-hist, column:NAME, torchscript:PATH, onnx:PATH or torch:MODULE:FACTORY
    """
    if spec is None or spec in (AUTO, NONE):
        return
    from hetbench.embed import _USAGE, EMBEDDERS

    name, colon, arg = str(spec).partition(":")
    if name not in EMBEDDERS.names():
        raise HetbenchError(f"`feature_embedder` {spec}: unknown embedder '{name}'; choose auto, none, {_USAGE}")
    if name == "pixels":
        from hetbench.embed.pixels import pixel_side

        try:
            pixel_side(arg, given=bool(colon))
        except HetbenchError as exc:
            raise HetbenchError(f"`feature_embedder` {spec}: {marked(exc)}") from None


def principal_features(embedding: np.ndarray, components: int = COMPONENTS, *, fit_rows: int = FIT_ROWS,
                       seed: int = 0) -> np.ndarray:
    """Standardised features projected on their ``components`` leading principal axes (all of them when
    there are fewer); the means, deviations and axes are fitted on a seeded sample of at most ``fit_rows``
    rows (every row when there are fewer). Constant features carry nothing.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_embedding import principal_features
    >>> x = np.random.default_rng(0).normal(size=(500, 40))
    >>> principal_features(x, 16).shape, principal_features(x[:, :3], 16).shape
    ((500, 16), (500, 3))
    """
    e = np.asarray(embedding, np.float64)
    fit = e[np.sort(np.random.default_rng(seed).choice(len(e), fit_rows, replace=False))] if len(e) > fit_rows else e
    mu = fit.mean(axis=0)
    cov = (fit.T @ fit - len(fit) * np.outer(mu, mu)) / max(len(fit) - 1, 1)
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    scale = np.where(sd > 0, sd, 1.0)
    if e.shape[1] <= components:
        return (e - mu) / scale
    _, vectors = np.linalg.eigh(cov / np.outer(scale, scale))
    axes = vectors[:, ::-1][:, :components] / scale[:, None]  # standardise and project in one product
    return e @ axes - mu @ axes


def embed_rows(table, split: str, rows: np.ndarray, spec: str, quiet: bool = True) -> tuple[np.ndarray, list[int]]:
    """The embedding of ``rows`` of ``table``'s ``split`` under ``spec``, in the order of ``rows``, and the
    positions (in ``rows``) of the images that could not be read (``pixels`` only; any other embedder
    raises on them).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_embedding import embed_rows
    >>> from hetbench.sources import load_table
    >>> emb, bad = embed_rows(load_table("builtin:digits"), "train", np.array([5, 0, 3]), "pixels:4")
    >>> emb.shape, bad
    ((3, 48), [])
    """
    from hetbench.embed import embed_table
    from hetbench.embed.pixels import pixel_side
    from hetbench.report.thumbnails import pixel_thumbnails

    in_order = np.argsort(rows, kind="stable")  # read the images in stored order (a local gather), then put back
    ds = table.splits[split].select(np.asarray(rows)[in_order])
    kind, _, arg = spec.partition(":")
    try:
        if kind == "pixels":  # the default: decoded on every core, an unreadable image left out and counted
            side = pixel_side(arg, given=":" in spec)
            stored, bad = pixel_thumbnails(ds, side, quiet=quiet)
        else:
            stored, bad = embed_table(dataclasses.replace(table, splits={split: ds}, _cache={}), split, spec, quiet=quiet), []
    except HetbenchError as exc:
        raise HetbenchError(f"`feature_embedder` {spec}: {marked(exc)}") from exc
    embedding = np.empty_like(stored)
    embedding[in_order] = stored
    return embedding, sorted(int(in_order[i]) for i in bad)
