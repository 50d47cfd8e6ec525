"""Per-user splits with the long-tail filters of Hsu, Qi & Brown, "Federated Visual Classification
with Real-World Data Distribution", ECCV 2020, section 4.

* **Landmarks-User-160k** (sec. 4.2): GLD-v2-clean partitioned by author, filtered so that every
  landmark (class) has at least 30 images and at least 10 distinct users, and every user has at
  least 30 images that depict at least 5 distinct landmarks. Published result: 1,262 users,
  2,028 classes, 164,172 train images; the test split (19,526 images) comes from users disjoint
  from training and has no user id.
* **iNaturalist-User-120k** (sec. 4.1): iNaturalist-2017 with tail classes of fewer than 100
  training images dropped and every remaining class subsampled to exactly 100 training images,
  then partitioned by user id. Published result: 9,275 users, 1,203 classes, 120,300 train images.

The filters are pure numpy functions on int64 code arrays (``-1`` = missing) that tests call
directly: :func:`landmarks_filter`, :func:`inaturalist_balance` and
:func:`user_disjoint_test_split`. :class:`UsersPartitioner` applies one of them to the partitioned
split and then runs the natural-id partitioner over the surviving rows (one client per user,
clients in sorted user order); removed rows get :attr:`DropReason.FILTERED`. The partitioner is
:mod:`hetbench.partitioners.users`; this module holds the filters.

The Landmarks constraints define a unique result: the set of row subsets in which every class and
every user meets its thresholds is closed under union, so there is one largest such subset, and
removing violating classes / users until nothing changes reaches exactly it, whatever the order of
removal. The paper does not say how it iterated; any correct fixed-point iteration gives this set.

Test split for a source with a single split (how Landmarks-User-160k's user-disjoint test set is
made). The builder should:

1. ``train, test = user_disjoint_test_split(users, classes, None, test_fraction, rng)`` on the
   whole table: whole users are held out;
2. partition the ``train`` rows with ``UsersPartitioner(filters="landmarks")`` (the filter then
   reaches its fixed point on the training users only, as in the paper);
3. keep only the test rows whose class survived in training:
   ``test &= np.isin(classes, users.surviving_classes(partition, train_labels))``
   (or call the helper again with ``keep_train_classes`` set, using the same rng state);
4. write the test rows as one shared test set with client id ``-1``.

For a source whose other split carries the user column, :meth:`UsersPartitioner.assign_split`
gives each row to its user's client (natural-id semantics) and drops rows of filtered classes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hetbench.errors import HetbenchError

FILTERS = ("landmarks", "inaturalist", "none")

#: thresholds of each filter and their defaults (the paper's values)
THRESHOLDS: dict[str, dict[str, int]] = {
    "landmarks": {"min_class_images": 30, "min_class_users": 10, "min_user_images": 30, "min_user_classes": 5},
    "inaturalist": {"min_train": 100, "per_class": 100},
    "none": {},
}


class FilterResult(NamedTuple):
    """What :func:`landmarks_filter` returns.

    keep: bool mask over the rows. iterations: rounds that removed something (0 when the input is
    already a fixed point). emptied_by: None when rows are kept; otherwise the criterion whose
    application removed the last rows (``"min_class_images"``, ``"min_class_users"``,
    ``"min_user_images"``, ``"min_user_classes"``, two of them joined by ``+`` when only their
    combination emptied it, or ``"input"`` when no row had both a user and a class).
    """

    keep: np.ndarray
    iterations: int
    emptied_by: str | None


def _pair_arrays(users: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``users`` and ``classes`` as int64 arrays, checked to be one-dimensional and of one length."""
    users = np.asarray(users, dtype=np.int64)
    classes = np.asarray(classes, dtype=np.int64)
    if users.shape != classes.shape or users.ndim != 1:
        raise ValueError("users and classes must be one-dimensional arrays of the same length")
    return users, classes


def _which(masks: dict[str, np.ndarray]) -> str:
    """Name the criterion that, alone, keeps nothing; or the combination when none does alone."""
    alone = [name for name, ok in masks.items() if not ok.any()]
    return alone[0] if alone else "+".join(masks)


def landmarks_filter(
    users: np.ndarray,
    classes: np.ndarray,
    min_class_images: int = 30,
    min_class_users: int = 10,
    min_user_images: int = 30,
    min_user_classes: int = 5,
) -> FilterResult:
    """Landmarks-User-160k filter (Hsu et al. 2020, sec. 4.2), applied until nothing changes.

    Every kept class has >= ``min_class_images`` rows from >= ``min_class_users`` distinct users,
    and every kept user has >= ``min_user_images`` rows of >= ``min_user_classes`` distinct
    classes, all counted over the kept rows. Rows with a missing user or class (-1) are never kept.

    Each round works on the distinct (user, class) pairs, found once with one ``np.unique``: a
    round is four ``np.bincount`` calls over the pairs, so a million rows cost one sort plus a few
    cheap rounds.

    Parameters
    ----------
    users, classes : numpy.ndarray
        int64 user and class code per row (-1 = missing), of one length.
    min_class_images : int, default 30
        Fewest rows a kept class has.
    min_class_users : int, default 10
        Fewest distinct users a kept class has.
    min_user_images : int, default 30
        Fewest rows a kept user has.
    min_user_classes : int, default 5
        Fewest distinct classes a kept user has.

    Returns
    -------
    FilterResult
        The keep mask over the rows, the rounds that removed something, and what emptied the
        table (None when rows are kept).

    Examples
    --------
    >>> import numpy as np
    >>> users = np.array([0, 0, 1, 1, 2, 2, 2])
    >>> classes = np.array([0, 1, 0, 1, 0, 1, 2])  # class 2 has one user: it goes
    >>> res = landmarks_filter(users, classes, min_class_images=2, min_class_users=2, min_user_images=2, min_user_classes=2)
    >>> res.keep.tolist(), res.iterations, res.emptied_by
    ([True, True, True, True, True, True, False], 1, None)
    """
    users, classes = _pair_arrays(users, classes)
    valid = (users >= 0) & (classes >= 0)
    if not valid.any():
        return FilterResult(np.zeros(users.size, dtype=bool), 0, "input")
    n_users = int(users[valid].max()) + 1
    n_classes = int(classes[valid].max()) + 1
    key = users[valid] * n_classes + classes[valid]
    pairs, inverse, pair_count = np.unique(key, return_inverse=True, return_counts=True)
    pair_user = pairs // n_classes
    pair_class = pairs % n_classes
    pair_count = pair_count.astype(np.float64)
    alive = np.ones(pairs.size, dtype=bool)

    iterations = 0
    emptied_by = None
    # one pass over classes, then one over users, until neither removes anything
    passes = (
        (pair_class, n_classes, "min_class_images", min_class_images, "min_class_users", min_class_users),
        (pair_user, n_users, "min_user_images", min_user_images, "min_user_classes", min_user_classes),
    )
    while True:
        removed = False
        for group, size, img_name, min_images, dist_name, min_distinct in passes:
            alive, changed, emptied = _prune(alive, group, size, pair_count, img_name, min_images, dist_name, min_distinct)
            removed |= changed
            if emptied is not None:
                emptied_by = emptied
                break
        if emptied_by is not None:
            iterations += 1
            break
        if not removed:
            break
        iterations += 1

    keep = np.zeros(users.size, dtype=bool)
    keep[valid] = alive[inverse.reshape(-1)]
    return FilterResult(keep, iterations, emptied_by)


def _prune(alive, group, size, pair_count, img_name, min_images, dist_name, min_distinct):
    """One filter pass over the groups (classes or users) of the live (user, class) pairs: a group
    needs ``min_images`` images and ``min_distinct`` distinct partners (users or classes). Returns
    (alive, whether anything was removed, the criterion that emptied everything or None)."""
    w = alive.astype(np.float64)
    images = np.bincount(group, weights=pair_count * w, minlength=size)
    distinct = np.bincount(group, weights=w, minlength=size)
    present = distinct > 0
    crit = {img_name: images >= min_images, dist_name: distinct >= min_distinct}
    ok = crit[img_name] & crit[dist_name]
    if not np.any(present & ~ok):
        return alive, False, None
    alive = alive & ok[group]
    emptied = None if alive.any() else _which({k: v[present] for k, v in crit.items()})
    return alive, True, emptied


def inaturalist_balance(
    classes: np.ndarray,
    is_train: np.ndarray,
    rng: np.random.Generator,
    min_train: int = 100,
    per_class: int = 100,
) -> np.ndarray:
    """iNaturalist-User-120k class balancing (Hsu et al. 2020, sec. 4.1): keep mask over the rows.

    Classes with fewer than ``min_train`` training rows are dropped (their test rows too); every
    remaining class keeps exactly ``per_class`` of its training rows, drawn uniformly with ``rng``;
    test rows (``is_train`` False) of kept classes all stay. Rows with class -1 are dropped.
    Needs ``per_class <= min_train`` (the paper uses 100 and 100, giving 1,203 x 100 = 120,300).

    Parameters
    ----------
    classes : numpy.ndarray
        int64 class code per row (-1 = missing).
    is_train : numpy.ndarray
        bool per row: a training row (counted and subsampled) or a test row (kept with its class).
    rng : numpy.random.Generator
        Draws the kept training rows.
    min_train : int, default 100
        Classes with fewer training rows are dropped.
    per_class : int, default 100
        Training rows kept per remaining class (1 <= per_class <= min_train).

    Returns
    -------
    numpy.ndarray
        bool keep mask over the rows.

    Examples
    --------
    >>> import numpy as np
    >>> classes = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    >>> keep = inaturalist_balance(classes, np.ones(9, bool), np.random.default_rng(0), min_train=3, per_class=3)
    >>> np.bincount(classes[keep]).tolist()  # class 1 (2 rows) dropped, class 2 subsampled to 3
    [3, 0, 3]
    """
    classes = np.asarray(classes, dtype=np.int64)
    is_train = np.asarray(is_train, dtype=bool)
    if classes.shape != is_train.shape or classes.ndim != 1:
        raise ValueError("classes and is_train must be one-dimensional arrays of the same length")
    if not 1 <= per_class <= min_train:
        raise HetbenchError(f"per_class must be between 1 and min_train ({min_train}); got {per_class}")
    valid = classes >= 0
    if not valid.any():
        return np.zeros(classes.size, dtype=bool)
    n_classes = int(classes[valid].max()) + 1
    train = np.flatnonzero(valid & is_train)
    train_counts = np.bincount(classes[train], minlength=n_classes)
    keep_class = train_counts >= min_train
    keep = valid & ~is_train
    keep[keep] = keep_class[classes[keep]]
    # random order inside each class: sort by (class, random key), keep the first per_class
    cand = train[keep_class[classes[train]]]
    order = np.lexsort((rng.random(cand.size), classes[cand]))
    sorted_cls = classes[cand][order]
    starts = np.searchsorted(sorted_cls, sorted_cls, side="left")
    rank = np.arange(cand.size) - starts
    keep[cand[order[rank < per_class]]] = True
    return keep


def user_disjoint_test_split(
    users: np.ndarray,
    classes: np.ndarray,
    keep_train_classes: np.ndarray | None,
    test_fraction: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Hold out whole users as a test set (how Landmarks-User-160k's user-disjoint test split is
    made from a source with one split). Returns (train_mask, test_mask) over the rows.

    ``round(test_fraction * U)`` of the ``U`` users with rows are drawn uniformly with ``rng`` (at
    least one, and at least one user stays in training). All rows of the other users are training
    rows. A held-out row is a test row only when its class still has a training row and, if
    ``keep_train_classes`` (bool mask over class codes) is given, that class is in it; so the test
    classes are always a subset of the training classes. The other held-out rows are in neither
    mask, as are rows with a missing user or class. See the module docstring for the order in which
    a builder combines this with the Landmarks filter.

    Parameters
    ----------
    users, classes : numpy.ndarray
        int64 user and class code per row (-1 = missing), of one length.
    keep_train_classes : numpy.ndarray or None
        bool mask over class codes that test rows must also be in (e.g. the classes that survived
        the Landmarks filter), or None.
    test_fraction : float
        Share of the users held out, strictly between 0 and 1.
    rng : numpy.random.Generator
        Draws the held-out users.

    Returns
    -------
    train_mask, test_mask : numpy.ndarray
        bool masks over the rows; no user has rows in both.
    """
    users, classes = _pair_arrays(users, classes)
    if not 0.0 < test_fraction < 1.0:
        raise HetbenchError(f"`test_fraction` must be between 0 and 1 (got {test_fraction})")
    valid = (users >= 0) & (classes >= 0)
    present = np.unique(users[valid])
    if present.size < 2:
        raise HetbenchError(f"a user-disjoint test split needs at least two users (found {present.size})")
    k = min(max(int(round(test_fraction * present.size)), 1), present.size - 1)
    held_users = np.zeros(int(present[-1]) + 1, dtype=bool)
    held_users[rng.permutation(present)[:k]] = True
    held = valid.copy()
    held[valid] = held_users[users[valid]]
    train = valid & ~held
    n_classes = int(classes[valid].max()) + 1
    allowed = np.bincount(classes[train], minlength=n_classes) > 0
    if keep_train_classes is not None:
        ktc = np.zeros(n_classes, dtype=bool)
        given = np.asarray(keep_train_classes, dtype=bool)[:n_classes]
        ktc[: given.size] = given
        allowed &= ktc
    test = held.copy()
    test[held] = allowed[classes[held]]
    return train, test
