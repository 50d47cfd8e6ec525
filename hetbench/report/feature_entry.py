"""The ``feature_shift`` entry of a split's report: how far each client's (and each device's or domain's)
images lie from everyone else's, on one scale for every kind of split.

Label statistics (EMD, Jensen-Shannon) read zero on a device, domain or place split whose clients hold the
same classes; this entry measures the images instead. The steps, each fixed so that two splits of one
source are comparable:

1. **Embed** the training rows (at most :data:`PER_PAIR` of each class of each client, a seeded sample, so
   the cost is bounded by clients x classes) with a fixed, offline embedder: ``pixels:8`` for image data
   (:data:`~hetbench.report.feature_embedding.DEFAULT_EMBEDDER`: the image area-averaged to 8 x 8 RGB,
   192 numbers: colour, tone and layout, which is what devices and domains change), or any registry spec
   (``--feature-embedder``).
2. **Standardise** every feature over the training rows and keep the
   :data:`~hetbench.report.feature_embedding.COMPONENTS` leading principal components (the population's),
   so that a client's Gaussian fit rests on a few dozen rows per class. Steps 1 and 2 are
   :mod:`hetbench.report.feature_embedding`'s.
3. **Measure** with :func:`hetbench.report.unit_shift.unit_shifts`: per client the class-conditional
   unbiased MMD^2 (Gretton et al. 2012) with random Fourier features of a Gaussian kernel of
   median-heuristic bandwidth (Rahimi & Recht 2007) against the rest; per device or domain when the clients
   are grouped, the MMD^2 and the Fréchet distance (FID's, Heusel et al. 2017, eq. 6) of the group's
   pooled rows, from sums over every row. The Fréchet distance is reported per group only: it is biased
   upwards on small samples, so its average over clients of a few dozen rows each does not rank splits as
   the pooled distance does, where MMD^2 averages do (Jayasumana et al., arXiv 2310.11714; Bińkowski et
   al. 2018).
4. **Calibrate**: the same measure with every unit's rows dealt at random within each class, in
   :data:`IID_DRAWS` independent deals (the IID reference and its spread: unbiased MMD^2 reads about 0
   there, slightly negative half the time; the Fréchet distance reads its small-sample bias). A value
   inside the IID band is no feature shift.

The per-client values go to ``report/feature_shift.parquet``; ``report.json`` holds the row-weighted
summaries, the IID references with their ranges, the per-group values and, for pixel embeddings, each
group's mean colour and luminance. Numbers are rounded to 4 significant digits: they come from BLAS and
LAPACK, whose last bits vary between CPUs.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.report.feature_embedding import AUTO, embed_rows, principal_features, resolve_embedder
from hetbench.report.feature_shift import median_bandwidth
from hetbench.report.thumbnails import colour_stats  # noqa: F401 (re-exported)
from hetbench.report.unit_shift import FOURIER, UnitShifts, iid_units, many_unit_shifts

#: at most this many rows of each class of each client are embedded and measured (a seeded sample): the cost
#: is bounded by clients x classes x this, whatever the split's size
PER_PAIR = 32
#: independent random deals of the rows (within each class) that make the IID reference and its band
IID_DRAWS = 5
#: the per-client table under the build folder
FEATURE_FILE = "report/feature_shift.parquet"


def _sig(value: float, digits: int = 4) -> float | None:
    return float(f"{value:.{digits}g}") if np.isfinite(value) else None


@dataclasses.dataclass
class FeatureShift:
    """A split's measured feature shift: the report entry and what is written beside it."""

    entry: dict[str, Any]
    clients: UnitShifts
    client_colour: dict[str, np.ndarray] | None
    client_names: list[str]
    #: the measured split's images per device or domain (:mod:`hetbench.report.samples`), drawn beside it
    samples: Any = None
    #: the clients' values in each IID deal (the plot's band)
    iid_clients: list[UnitShifts] = dataclasses.field(default_factory=list)

    def write(self, folder: Path) -> list[str]:
        """Write ``report/feature_shift.parquet``, ``plots/feature_shift.png`` and, for a split with a device
        or domain column, ``plots/<kind>_samples.png``; returns the plot paths."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from hetbench.report.feature_plot import plot_feature_shift

        cols = {
            "client_id": pa.array(np.arange(len(self.client_names), dtype=np.int32)),
            "client": pa.array(self.client_names, pa.string()),
            "rows": pa.array(self.clients.rows),
            "mmd2": pa.array([_sig(v) for v in self.clients.mmd2], pa.float64()),
            "classes_compared": pa.array(self.clients.classes_compared),
        }
        for key, values in (self.client_colour or {}).items():
            cols[key] = pa.array([_sig(v) for v in values], pa.float64())
        path = folder / FEATURE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(cols), path)
        plot_feature_shift(self.entry, self.clients, folder / "plots" / "feature_shift.png", self.iid_clients)
        return ["plots/feature_shift.png"] + (self.samples.write(folder) if self.samples is not None else [])


def _iid_reference(iids: list[UnitShifts], field: str) -> dict[str, Any]:
    """The IID reference of a row-weighted mean: its mean over the deals and their range."""
    means = np.array([i.weighted_mean(field) for i in iids])
    means = means[np.isfinite(means)]
    if not means.size:
        return {f"iid_{field}": None, f"iid_{field}_range": None}
    return {f"iid_{field}": _sig(float(means.mean())), f"iid_{field}_range": [_sig(float(means.min())), _sig(float(means.max()))]}


def _iid_band(iids: list[UnitShifts], field: str) -> list[list[float | None]]:
    """Each unit's IID band: the lowest and highest of its values over the deals."""
    values = np.stack([getattr(i, field) for i in iids])
    ok = np.isfinite(values)
    lo = np.where(ok.any(axis=0), np.where(ok, values, np.inf).min(axis=0), np.nan)  # NaN: no deal measured it
    hi = np.where(ok.any(axis=0), np.where(ok, values, -np.inf).max(axis=0), np.nan)
    return [[_sig(a), _sig(b)] for a, b in zip(lo, hi)]


def _summary(shifts: UnitShifts, iids: list[UnitShifts]) -> dict[str, Any]:
    finite = shifts.mmd2[np.isfinite(shifts.mmd2)]
    return {
        "mmd2": _sig(shifts.weighted_mean("mmd2")),
        **_iid_reference(iids, "mmd2"),
        "iid_draws": len(iids),
        "measured": int(np.isfinite(shifts.mmd2).sum()),
        "mmd2_quantiles": {q: _sig(float(np.quantile(finite, p))) for q, p in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9))}
        if finite.size else None,
    }


def sample_pairs(client_ids: np.ndarray, labels: np.ndarray, per_pair: int = PER_PAIR, seed: int = 0) -> np.ndarray:
    """Sorted positions of at most ``per_pair`` rows of every (client, class) pair, drawn at random.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_entry import sample_pairs
    >>> clients, labels = np.repeat([0, 1], 50), np.tile([0, 1], 50)
    >>> kept = sample_pairs(clients, labels, per_pair=10)
    >>> len(kept), np.bincount(clients[kept] * 2 + labels[kept]).tolist()
    (40, [10, 10, 10, 10])
    """
    key = np.asarray(client_ids, np.int64) * (int(np.max(labels, initial=0)) + 1) + np.asarray(labels, np.int64)
    order = np.lexsort((np.random.default_rng(seed).random(len(key)), key))  # by pair, at random within it
    first = np.r_[True, key[order][1:] != key[order][:-1]] if len(key) else np.zeros(0, bool)
    starts = np.flatnonzero(first)
    rank = np.arange(len(key)) - np.repeat(starts, np.diff(np.r_[starts, len(key)]))
    return np.sort(order[rank < per_pair])


#: the column naming the capture a rendered row comes from (device builds: one scene under every device)
CAPTURE_COLUMN = "capture_id"


def deal_strata(table, split: str, rows: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, bool]:
    """What the IID deals shuffle the rows within: each class, or, where the rows carry a ``capture_id``
    (one scene rendered under every device), each capture. Such a design is paired: every group holds the
    same scenes, so deals within a class, which give each group other scenes, read the groups as farther
    apart than they are and the real split falls below its band; deals within a capture keep the scenes
    and exchange only which device rendered them (a permutation null for the paired design). Rows without
    a capture keep their class as stratum. Returns (stratum codes, whether captures were used).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.report.feature_entry import deal_strata
    >>> from hetbench.sources import load_table
    >>> strata, paired = deal_strata(load_table("builtin:digits"), "train", np.arange(5), np.array([0, 1, 2, 3, 4]))
    >>> strata.tolist(), paired
    ([0, 1, 2, 3, 4], False)
    """
    ds = table.splits[split]
    if CAPTURE_COLUMN not in ds.column_names:
        return np.asarray(labels, np.int64), False
    captures = np.asarray(ds.with_format("arrow")[CAPTURE_COLUMN].to_numpy(zero_copy_only=False), dtype=object)[rows]
    keys = [f"c{c}" if c is not None else f"l{int(lab)}" for c, lab in zip(captures, labels)]
    return np.unique(np.asarray(keys, dtype=str), return_inverse=True)[1].astype(np.int64), True


def measure_rows(table, split: str, rows: np.ndarray, labels: np.ndarray, client_ids: np.ndarray,
                 client_names: list[str], embedder: str | None = AUTO, *, groups=None, quiet: bool = True,
                 seed: int = 0) -> FeatureShift | None:
    """The feature shift of the clients holding ``rows`` of ``table``'s ``split`` (module notes); None when
    it is not measured (``none``, ``auto`` without images, fewer than 4 rows).

    Parameters
    ----------
    table : SampleTable
        The rows' table.
    split : str
        Their split.
    rows, labels, client_ids : numpy.ndarray
        The training rows (indices into ``split``), their classes and their clients (>= 0).
    client_names : list of str
        Every client's name, in client index order.
    embedder, groups, quiet, seed
        As for :func:`measure_feature_shift`.
    """
    if len(rows) < 4:
        return None
    spec = resolve_embedder(table, split, embedder)
    if spec is None:
        return None
    rows, cid, labels = np.asarray(rows), np.asarray(client_ids, np.int64), np.asarray(labels)
    total_rows = len(rows)
    kept = sample_pairs(cid, labels, PER_PAIR, seed)
    rows, cid, labels = rows[kept], cid[kept], labels[kept]
    embedding, unreadable = embed_rows(table, split, rows, spec, quiet)
    listed = [f"{split}[{int(rows[i])}]" for i in unreadable[:20]]  # source rows, as the skipped files are listed
    if unreadable:
        ok = np.ones(len(rows), bool)
        ok[unreadable] = False
        rows, cid, labels, embedding = rows[ok], cid[ok], labels[ok], embedding[ok]
        if len(rows) < 4:
            raise HetbenchError(f"`feature_embedder` {spec}: only {len(rows)} of {len(ok)} training images could be read")
    z = principal_features(embedding, seed=seed)
    n_clients = len(client_names)
    h = median_bandwidth(z, seed)
    draws = IID_DRAWS + 1  # each assignment and its IID deals
    strata, paired = deal_strata(table, split, rows, labels)
    assignments = [(cid, n_clients)] + [(iid_units(strata, cid, seed + d), n_clients) for d in range(IID_DRAWS)]
    if groups is not None:
        g = np.asarray(groups.of_client)[cid]
        n_groups = len(groups.names)
        assignments += [(g, n_groups)] + [(iid_units(strata, g, seed + d), n_groups) for d in range(IID_DRAWS)]
    measured = many_unit_shifts(z, labels, assignments, seed=seed, bandwidth=h)
    clients, iids = measured[0], measured[1:draws]
    pixels = spec.split(":")[0] == "pixels"
    entry: dict[str, Any] = {
        "embedder": spec,
        "components": int(z.shape[1]),
        "conditional": True,
        "kernel": f"{FOURIER} random Fourier features of exp(-|x - y|^2 / h), h = median squared distance",
        "bandwidth": _sig(h),
        "rows": int(len(rows)),
        "training_rows": int(total_rows),
        "per_pair": PER_PAIR,
        "unreadable_rows": len(unreadable),
        "unreadable_examples": listed,
        "iid_deal": "within each capture" if paired else "within each class",
        "clients": _summary(clients, iids),
        "file": FEATURE_FILE,
    }
    if groups is not None:
        by_group, g_iids = measured[draws], measured[draws + 1:]
        entry["groups"] = {
            "kind": groups.kind,
            "names": list(groups.names),
            "rows": by_group.rows.tolist(),
            "frechet": [_sig(v) for v in by_group.frechet],
            "mmd2": [_sig(v) for v in by_group.mmd2],
            "mean_mmd2": _sig(by_group.weighted_mean("mmd2")),
            "mean_frechet": _sig(by_group.weighted_mean("frechet")),
            **_iid_reference(g_iids, "mmd2"),
            **_iid_reference(g_iids, "frechet"),
            "iid_mmd2_band": _iid_band(g_iids, "mmd2"),
            "iid_frechet_band": _iid_band(g_iids, "frechet"),
        }
        if pixels:
            entry["groups"]["colour"] = {k: [_sig(v) for v in vals] for k, vals in colour_stats(embedding, g, n_groups).items()}
    client_colour = colour_stats(embedding, cid, n_clients) if pixels else None
    return FeatureShift(entry, clients, client_colour, list(client_names), iid_clients=list(iids))


def measure_feature_shift(fs, embedder: str | None = AUTO, *, groups=None, quiet: bool = True,
                          seed: int = 0) -> FeatureShift | None:
    """Measure a built split's feature shift (module notes); None when it is not measured. A split with a
    ``domain`` or ``device`` column also gets its sample grid (:func:`hetbench.report.samples.collect_samples`).

    Parameters
    ----------
    fs : FederatedSplit
        The split (:func:`hetbench.splits.build_split`).
    embedder : str, optional
        ``auto`` (``pixels:8`` for image data, nothing otherwise), ``none``, or an embedder spec
        (:func:`hetbench.embed.embed_table`).
    groups : ClientGroups, optional
        The clients' devices or domains (:func:`hetbench.report.groups.client_groups`): measured as units too.
    quiet : bool
        No progress bar.
    seed : int
        Seed of the PCA sample, the random features and the IID reference.

    Raises
    ------
    HetbenchError
        The embedder cannot read the rows (no image column, a bad spec, an unreadable image for any embedder
        but ``pixels``, which leaves unreadable images out and counts them in ``unreadable_rows``).

    Examples
    --------
    >>> from hetbench.partitioners import DirichletPartitioner
    >>> from hetbench.report.feature_entry import measure_feature_shift
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> shift = measure_feature_shift(build_split(load_table("builtin:digits"), DirichletPartitioner(8, 0.3)))
    >>> shift.entry["embedder"], shift.entry["components"], shift.entry["clients"]["measured"]
    ('pixels:8', 16, 8)
    """
    out = fs.outputs.get("train")
    if out is None:
        return None
    keep = out.client_ids >= 0
    shift = measure_rows(fs.table, out.source_split, out.rows[keep], np.asarray(fs.labels("train"))[keep],
                         out.client_ids[keep], list(fs.client_names), embedder, groups=groups, quiet=quiet, seed=seed)
    if shift is not None:
        from hetbench.report.samples import collect_samples

        shift.samples = collect_samples(fs, seed=seed)
    return shift


def feature_shift_writer(shift: FeatureShift | None) -> Callable[[Path], list[str]]:
    """``writer(folder) -> plot paths`` for :func:`hetbench.publish.publish_split` (nothing when None)."""
    return shift.write if shift is not None else (lambda folder: [])


__all__ = ["measure_feature_shift", "measure_rows", "FeatureShift", "colour_stats", "FEATURE_FILE", "feature_shift_writer"]
