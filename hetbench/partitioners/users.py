"""One client per user after the published per-user filters (Hsu, Qi & Brown, ECCV 2020, sec. 4).

:class:`UsersPartitioner` applies a filter of :mod:`hetbench.partitioners.user_filters` to the
partitioned split, then runs the natural-id partitioner over the surviving rows.
"""

from __future__ import annotations

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import DropReason, Partition
from hetbench.partitioners.base import split_partition
from hetbench.partitioners.natural_id import (
    NaturalIdPartitioner,
    encode_keys,
    map_to_clients,
    natural_id_assignment,
    plain_array,
    value_clients,
)
from hetbench.partitioners.user_filters import FILTERS, THRESHOLDS, inaturalist_balance, landmarks_filter
from hetbench.table import arrow_column


def surviving_classes(partition: Partition, labels: np.ndarray) -> np.ndarray:
    """Sorted class codes that have at least one kept row in ``partition``."""
    return np.unique(np.asarray(labels)[partition.assignment >= 0])


class UsersPartitioner(NaturalIdPartitioner):
    """One client per user after a Hsu et al. 2020 (sec. 4) long-tail filter.

    The filter runs on the partitioned split's rows that have a user; then natural-id (reused from
    :mod:`hetbench.partitioners.natural_id`) gives one client per surviving user, sorted, named by
    the user id, keeping users with >= ``min_samples`` surviving training rows. Drop reasons: ``filtered``
    (removed by the filter), ``client-too-small``, ``missing-value``. :meth:`assign_split` places
    another split's rows on their users' clients.

    Parameters
    ----------
    column : str, default "user_id"
        The user-id column.
    filters : {"landmarks", "inaturalist", "none"}, default "landmarks"
        ``"landmarks"``: :func:`landmarks_filter` (Landmarks-User-160k); ``"inaturalist"``:
        :func:`inaturalist_balance` over the partitioned split's rows (iNaturalist-User-120k);
        ``"none"``: plain natural-id.
    min_samples : int, default 1
        Fewest surviving training rows a user needs to be a client: its surviving rows, less (with
        ``holdout_fraction``) the rows the ``client`` test policy holds out.
    holdout_fraction : float, optional
        As for :class:`~hetbench.partitioners.natural_id.NaturalIdPartitioner`: the ``client`` test
        policy's ``--test-fraction`` when the split is built under it.
    strip : bool, default True
        Strip surrounding whitespace from string user ids before grouping (an id that is empty
        after stripping is missing).
    **thresholds : int
        Overrides of the chosen filter's thresholds (non-negative integers): for ``"landmarks"``
        ``min_class_images=30``, ``min_class_users=10``, ``min_user_images=30``,
        ``min_user_classes=5``; for ``"inaturalist"`` ``min_train=100``, ``per_class=100``
        (``per_class <= min_train``). Recorded in the recipe's params.

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Federated Visual Classification with Real-World Data
       Distribution", ECCV 2020, sec. 4.1 (iNaturalist-User-120k: classes with fewer than 100
       training images dropped, the others subsampled to 100; 9,275 users, 1,203 classes) and
       sec. 4.2 (Landmarks-User-160k: every landmark >= 30 images from >= 10 users, every user
       >= 30 images of >= 5 landmarks; 1,262 users, 2,028 classes, 164,172 images).

    Examples
    --------
    >>> import datasets
    >>> from hetbench.partitioners import UsersPartitioner
    >>> from hetbench.sources import load_table
    >>> table = load_table(datasets.Dataset.from_dict({
    ...     "label": [0, 1, 0, 1, 0, 1, 2],
    ...     "user_id": ["u1", "u1", "u2", "u2", " u3", "u3", "u3"]}))
    >>> part = UsersPartitioner(filters="landmarks", min_class_images=2, min_class_users=2,
    ...                         min_user_images=2, min_user_classes=2).partition(table)
    >>> part.client_names, part.assignment.tolist(), part.dropped_counts()
    (('u1', 'u2', 'u3'), [0, 0, 1, 1, 2, 2, -1], {'filtered': 1})
    """

    name = "users"

    def __init__(
        self,
        column: str = "user_id",
        filters: str = "landmarks",
        min_samples: int = 1,
        strip: bool = True,
        holdout_fraction: float | None = None,
        **thresholds: int,
    ) -> None:
        super().__init__(column=column, min_samples=min_samples, holdout_fraction=holdout_fraction)
        if filters not in FILTERS:
            raise HetbenchError(f"unknown user filter '{filters}'; choose one of: {', '.join(FILTERS)}")
        unknown = sorted(set(thresholds) - set(THRESHOLDS[filters]))
        if unknown:
            known = ", ".join(THRESHOLDS[filters]) or "none"
            raise HetbenchError(f"filter '{filters}' has no threshold {', '.join(unknown)} (it takes: {known})")
        values = dict(THRESHOLDS[filters])
        for k, v in thresholds.items():
            if isinstance(v, bool) or int(v) != v or int(v) < 0:
                raise HetbenchError(f"threshold {k} must be a non-negative integer (got {v!r})")
            values[k] = int(v)
        if filters == "inaturalist" and not 1 <= values["per_class"] <= values["min_train"]:
            raise HetbenchError(
                f"per_class must be between 1 and min_train ({values['min_train']}); got {values['per_class']}"
            )
        self.filters = filters
        self.strip = bool(strip)
        self.thresholds = values

    def derive_columns(self, fs) -> None:
        """The user column renamed ``user_id`` in every split (where that name is free)."""
        from hetbench.split_columns import rename_columns

        rename_columns(fs, {self.column: "user_id"})

    def params(self) -> dict:
        return {
            "column": self.column,
            "filters": self.filters,
            "min_samples": self.min_samples,
            "strip": self.strip,
            **({"holdout_fraction": self.holdout_fraction} if self.holdout_fraction is not None else {}),
            **self.thresholds,
        }

    # ---- encoding: natural-id's encode_keys over the splits that have the column --------------
    def _encode(self, table):
        key = ("users-codes", self.column, self.strip)
        if key not in table._cache:
            import pyarrow as pa
            import pyarrow.compute as pc

            names = [s for s in table.split_names if self.column in table.splits[s].column_names]
            if not names:
                arrow_column(table.splits[table.split_names[0]], self.column)  # raises: column not found
            cols = []
            for s in names:
                col = plain_array(arrow_column(table.splits[s], self.column))
                if self.strip and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
                    col = pc.utf8_trim_whitespace(col)
                    col = pc.if_else(pc.equal(col, ""), pa.scalar(None, col.type), col)
                cols.append(col)
            codes, values = encode_keys(cols)
            table._cache[key] = (dict(zip(names, codes)), values)
        return table._cache[key]

    def _split_codes(self, table, split):
        codes, values = self._encode(table)
        if split not in codes:
            raise HetbenchError(
                f"split '{split}' has no '{self.column}' column, so its rows cannot go to users; "
                "use a shared test set (`test_split` global) for a user-disjoint test split"
            )
        return codes[split], values

    def _filter(self, users: np.ndarray, classes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        t = self.thresholds
        if self.filters == "none":
            return users >= 0
        if self.filters == "inaturalist":
            keep = inaturalist_balance(np.where(users >= 0, classes, -1), np.ones(users.size, bool), rng, **t)
            if not keep.any():
                raise HetbenchError(
                    f"the inaturalist filter left nothing: no class has at least min_train={t['min_train']} "
                    f"rows with a '{self.column}'; lower min_train"
                )
            return keep
        res = landmarks_filter(users, classes, **t)
        if res.emptied_by is not None:
            what = "no row has a user" if res.emptied_by == "input" else (
                " and ".join(f"{c}={t[c]}" for c in res.emptied_by.split("+"))
            )
            raise HetbenchError(
                f"the landmarks filter left nothing (emptied by {what}, after {res.iterations} rounds); "
                "lower that threshold"
            )
        return res.keep

    def _assign(self, table, split, rng):
        users, values = self._split_codes(table, split)
        classes = np.asarray(table.labels[split], dtype=np.int64)
        keep = self._filter(users, classes, rng)
        assignment, reason, client_of_value = natural_id_assignment(
            np.where(keep, users, -1), len(values), self.min_rows()
        )
        reason[(users >= 0) & ~keep] = DropReason.FILTERED
        num_clients, names = value_clients(
            client_of_value, values,
            f"no user in '{self.column}' has {self._too_few()} after the {self.filters} filter; lower --min-samples",
        )
        return assignment, reason, num_clients, names

    def assign_split(self, table, split, train: Partition) -> Partition:
        """Rows of another split go to their user's client (natural-id); rows whose user is not a
        client are dropped (``client-too-small``), rows whose class did not survive the filter in
        the partitioned split are dropped (``filtered``). A split without the user column raises a
        HetbenchError (Landmarks-User-160k's test split has none: use it as a shared test set)."""
        users, values = self._split_codes(table, split)
        assignment, reason = map_to_clients(users, values, train)
        train_split = train.recipe.get("split", "train")
        ok_class = np.zeros(table.num_classes, dtype=bool)
        ok_class[surviving_classes(train, table.labels[train_split])] = True
        bad = ~ok_class[np.asarray(table.labels[split], dtype=np.int64)] & (users >= 0)
        assignment[bad] = -1
        reason[bad] = DropReason.FILTERED
        return split_partition(train, split, assignment, reason)
