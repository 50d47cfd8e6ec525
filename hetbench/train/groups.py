"""Group protocols: which clients train and which test groups are scored (``--train-groups``,
``--test-groups``, ``--protocol leave-one-group-out``, ``--protocol cross-group``).

A split's groups are the values of the column ``--group-by`` picks (``device``, ``domain``, ``s2_cell``,
``user_id``, or ``client_id``); :class:`~hetbench.train.data.FederatedData` knows each test row's group
and, for a client whose training rows all share one group, that client's group. Two protocols of the
papers are restrictions of a split to some groups:

- HeteroSwitch (Kim et al., MLSys 2024, Fig. 3): train on the clients of the baseline ISP, test on every
  ISP variant, so each variant's drop in accuracy is the cost of that pipeline change
  (``train_groups=("baseline",)``);
- DapperFL (Chen et al., NeurIPS 2024) and domain generalisation in general: leave one domain out, train on
  the others and test on the one left out (:func:`plan_group_runs` with ``protocol="leave-one-group-out"``:
  one run per group);
- cross-site evaluation (NVFlare's ``cross_site_eval``; Bai et al. 2024's per-domain models): train on one
  group's clients, test on every group, once per group (``protocol="cross-group"``), which gives the group x
  group accuracy matrix the leaderboard draws (:mod:`hetbench.leaderboard.cross_group`).

:func:`restrict_groups` makes the restricted data: a new :class:`FederatedData` (``dataclasses.replace``)
that shares the split's image arrays. Only clients whose training rows all belong to the training groups
train (a client that spans several groups has no single group and never does); normalisation statistics
come from those clients' rows only, so a held-out group is never seen, not even through its pixel mean.
Test rows outside ``test_groups`` are dropped (a copy of those test rows, unless they are contiguous).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.train.channel_stats import blocks_stats
from hetbench.train.data import FederatedData

#: the values ``--protocol`` takes
PROTOCOLS = ("leave-one-group-out", "cross-group")


@dataclass(frozen=True)
class GroupRun:
    """One restriction of a split: the groups that train and those that are tested.

    ``train_groups`` / ``test_groups`` are None for "all" (no restriction); ``held_out`` names the group a
    leave-one-group-out run leaves out; ``tag`` goes into the results file name (None: no restriction,
    today's names).
    """

    train_groups: tuple[str, ...] | None = None
    test_groups: tuple[str, ...] | None = None
    held_out: str | None = None

    @property
    def tag(self) -> str | None:
        """``logo_<held out>``, or ``train_<g1+g2>`` and/or ``test_<g1+g2>``; None without groups.

        Examples
        --------
        >>> GroupRun(("baseline",)).tag
        'train_baseline'
        >>> GroupRun(("a", "b"), ("c",)).tag
        'train_a+b-test_c'
        >>> GroupRun(("b", "c"), None, held_out="a").tag
        'logo_a'
        >>> GroupRun().tag is None
        True
        """
        if self.held_out is not None:
            parts = [_names_tag("logo", (self.held_out,), one=True)]
            if self.test_groups is not None:
                parts.append(_names_tag("test", self.test_groups))
            return "-".join(parts)
        parts = []
        if self.train_groups is not None:
            parts.append(_names_tag("train", self.train_groups))
        if self.test_groups is not None:
            parts.append(_names_tag("test", self.test_groups))
        return "-".join(parts) or None


_PLAIN = re.compile(r"[A-Za-z0-9.=-]+")
_PLAIN_ONE = re.compile(r"[A-Za-z0-9.=+-]+")


def _names_tag(prefix: str, names: Sequence[str], one: bool = False) -> str:
    """``prefix_g1+g2``, unambiguous as a file name: a short hash of the names is added when a name has
    characters other than letters, digits and ``.=-`` (a ``+`` too, unless ``one`` says the list always
    holds one name), and replaces the names when they are long."""
    joined = "+".join(names)
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:8]
    if len(joined) > 60:
        return f"{prefix}_{len(names)}groups_{digest}"
    if all((_PLAIN_ONE if one else _PLAIN).fullmatch(n) for n in names):
        return f"{prefix}_{joined}"
    return f"{prefix}_{re.sub(r'[^A-Za-z0-9.=+-]+', '_', joined)}_{digest}"


def parse_groups(text: str | Sequence[str] | None, flag: str) -> tuple[str, ...] | None:
    """Group names from a comma list (``"baseline,wb=none"``) or a sequence, stripped; None stays None.

    Parameters
    ----------
    text : str, sequence of str or None
        What the user gave.
    flag : str
        The option's name, for the error message.

    Raises
    ------
    HetbenchError
        For an empty list or a name given twice.

    Examples
    --------
    >>> parse_groups("baseline, wb=none", "`train_groups`")
    ('baseline', 'wb=none')
    >>> parse_groups("a,a", "`train_groups`")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: train_groups names group 'a' twice
    """
    if text is None:
        return None
    items = text.split(",") if isinstance(text, str) else [str(t) for t in text]
    names = [t.strip() for t in items if t.strip()]
    if not names:
        raise HetbenchError(f"{flag} is empty; give group names separated by commas")
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise HetbenchError(f"{flag} names group '{n}' twice")
        seen.add(n)
    return tuple(names)


def _shown(names: Sequence[str], limit: int = 12) -> str:
    head = ", ".join(names[:limit])
    return head + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _group_indices(data: FederatedData, names: Sequence[str], flag: str) -> list[int]:
    """Indices of ``names`` among the split's groups, in the split's order (refusing unknown names)."""
    if data.group_by == "all":
        raise HetbenchError(
            f"{flag} needs groups, but the split has none (no device/domain/s2_cell/user_id column, group_by "
            "'all'); name a column with `group_by`"
        )
    lookup = {g: i for i, g in enumerate(data.group_names)}
    unknown = [n for n in names if n not in lookup]
    if unknown:
        raise HetbenchError(
            f"{flag}: '{unknown[0]}' is not a group of column '{data.group_by}' of this split "
            f"(groups: {_shown(list(data.group_names))})"
        )
    return sorted(lookup[n] for n in names)


def _take(x, idx: np.ndarray):
    """Rows ``idx`` (sorted) of an array or tensor, as the same kind of object: a view for a contiguous range
    (of a memory map: still a memory map), else a copy of those rows."""
    if idx.size and int(idx[-1]) - int(idx[0]) + 1 == idx.size:
        return x[int(idx[0]) : int(idx[-1]) + 1]
    try:
        import torch

        if isinstance(x, torch.Tensor):
            return x.index_select(0, torch.from_numpy(idx.astype(np.int64)))
    except ImportError:  # pragma: no cover - the trainer needs torch
        pass
    return x[idx]


def _as_numpy(x) -> np.ndarray:
    return x.numpy() if hasattr(x, "numpy") and not isinstance(x, np.ndarray) else np.asarray(x)


#: float64 elements per chunk of :func:`row_stats` (48 MiB): 2048 images of 3x32x32, 41 of 3x224x224
STATS_ELEMENTS = 2048 * 3 * 32 * 32


def row_stats(x, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and (population) std, in [0, 1] units, of the uint8 images ``x[rows]``, gathered a
    chunk of rows at a time so memory stays bounded whatever the image size (the same sums as
    :func:`hetbench.train.data.channel_stats`).

    Examples
    --------
    >>> x = np.array([[[[0, 255]]], [[[255, 255]]], [[[9, 9]]]], dtype=np.uint8)   # 3 one-channel 1x2 images
    >>> mean, std = row_stats(x, np.array([0, 1]))
    >>> float(mean[0]), round(float(std[0]), 4)
    (0.75, 0.433)
    """
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    c = int(x.shape[1])
    chunk = max(1, min(2048, STATS_ELEMENTS // max(1, int(np.prod(x.shape[1:])))))
    return blocks_stats((_as_numpy(_take(x, rows[start : start + chunk])) for start in range(0, rows.size, chunk)), c)


def restrict_groups(
    data: FederatedData,
    train_groups: Sequence[str] | None = None,
    test_groups: Sequence[str] | None = None,
) -> FederatedData:
    """``data`` restricted to the clients of ``train_groups`` and the test rows of ``test_groups``.

    Parameters
    ----------
    data : FederatedData
        The whole split (:func:`hetbench.train.data.load_federated`).
    train_groups : sequence of str, optional
        Groups whose clients train: a client trains when all its training rows belong to one of them.
        None: every client (and the split's normalisation statistics, unchanged).
    test_groups : sequence of str, optional
        Groups evaluated (each separately, in the split's order). None: all.

    Returns
    -------
    FederatedData
        A new object sharing the training images; ``group_names`` are the tested groups, client indices
        are renumbered (``client_ids`` keeps the split's ids), test rows of clients that do not train
        count as shared test rows. Without restrictions, ``data`` itself.

    Raises
    ------
    HetbenchError
        For a name that is no group of the split (the message lists the groups), a split without groups,
        no training client left, or no test row left.

    Examples
    --------
    Three clients: two of device ``a``, one of ``b``; every test row is one device's:

    >>> import numpy as np, torch
    >>> x = np.arange(10, dtype=np.uint8).reshape(10, 1, 1, 1)
    >>> data = FederatedData(
    ...     name="toy", path="toy", fingerprint="0", x_train=x[:6], y_train=torch.zeros(6, dtype=torch.int64),
    ...     x_test=x[6:], y_test=torch.zeros(4, dtype=torch.int64), client_ids=np.array([10, 11, 12]),
    ...     client_rows=[np.array([0, 1]), np.array([2, 3]), np.array([4, 5])], label_names=["0"],
    ...     group_by="device", group_names=["a", "b"], test_group=np.array([0, 1, 0, 1]),
    ...     test_client=np.full(4, -1), client_group=np.array([0, 0, 1]))
    >>> only_a = restrict_groups(data, train_groups=["a"])
    >>> only_a.client_ids.tolist(), only_a.group_names, only_a.x_train is data.x_train
    ([10, 11], ['a', 'b'], True)
    >>> restrict_groups(data, test_groups=["b"]).x_test.flatten().tolist()
    [7, 9]
    >>> restrict_groups(data, train_groups=["c"])
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: train_groups: 'c' is not a group of column 'device' of this split (groups: a, b)
    """
    if train_groups is None and test_groups is None:
        return data
    changes: dict = {}
    keep_clients = np.arange(data.num_clients)
    if train_groups is not None:
        keep_clients = _training_clients(data, train_groups, f"`train_groups` {','.join(train_groups)}")
        rows = [data.client_rows[k] for k in keep_clients]
        mean, std = row_stats(data.x_train, np.concatenate(rows))
        changes.update(client_ids=data.client_ids[keep_clients], client_rows=rows, mean=mean, std=std)
    test_idx = list(range(len(data.group_names)))
    test_rows = np.arange(data.num_test)
    if test_groups is not None:
        test_idx, test_rows = _test_rows(data, test_groups)
        changes.update(x_test=_take(data.x_test, test_rows), y_test=_take(data.y_test, test_rows))
    group_map = np.full(len(data.group_names), -1, dtype=np.int64)
    group_map[test_idx] = np.arange(len(test_idx))
    client_map = np.full(data.num_clients, -1, dtype=np.int64)
    client_map[keep_clients] = np.arange(keep_clients.size)
    old_client = data.test_client[test_rows]
    old_group = data.client_group[keep_clients]
    changes.update(
        group_names=[data.group_names[i] for i in test_idx],
        test_group=group_map[data.test_group[test_rows]],
        test_client=np.where(old_client >= 0, client_map[np.maximum(old_client, 0)], -1),
        client_group=np.where(old_group >= 0, group_map[np.maximum(old_group, 0)], -1),
    )
    return dataclasses.replace(data, **changes)


def plan_group_runs(
    data: FederatedData,
    train_groups: Sequence[str] | None = None,
    test_groups: Sequence[str] | None = None,
    protocol: str | None = None,
) -> list[GroupRun]:
    """The restrictions a sweep trains on, with names in the split's group order.

    Parameters
    ----------
    data : FederatedData
        The whole split.
    train_groups, test_groups : sequence of str, optional
        ``--train-groups`` / ``--test-groups`` (None: all).
    protocol : str, optional
        None: one run with the groups given. ``leave-one-group-out``: one run per group g of the split,
        training on every other group and testing on all (DapperFL's domain generalisation). ``cross-group``:
        one run per group g, training on g's clients only and testing on every group.

    Returns
    -------
    list of GroupRun
        Each run's restriction is checked (every one leaves training clients and test rows).

    Raises
    ------
    HetbenchError
        For an unknown protocol, unknown group names, a protocol combined with explicit groups, fewer than
        two groups for a protocol, or a restriction that leaves no client.

    Examples
    --------
    >>> import numpy as np, torch
    >>> x = np.zeros((9, 1, 1, 1), dtype=np.uint8)
    >>> data = FederatedData(
    ...     name="toy", path="toy", fingerprint="0", x_train=x[:6], y_train=torch.zeros(6, dtype=torch.int64),
    ...     x_test=x[6:], y_test=torch.zeros(3, dtype=torch.int64), client_ids=np.arange(3),
    ...     client_rows=[np.array([0, 1]), np.array([2, 3]), np.array([4, 5])], label_names=["0"],
    ...     group_by="domain", group_names=["mnist", "svhn", "usps"], test_group=np.array([0, 1, 2]),
    ...     test_client=np.full(3, -1), client_group=np.array([0, 1, 2]))
    >>> [(r.tag, r.train_groups) for r in plan_group_runs(data, protocol="leave-one-group-out")]
    [('logo_mnist', ('svhn', 'usps')), ('logo_svhn', ('mnist', 'usps')), ('logo_usps', ('mnist', 'svhn'))]
    >>> [r.tag for r in plan_group_runs(data, protocol="cross-group")]
    ['train_mnist', 'train_svhn', 'train_usps']
    >>> plan_group_runs(data, train_groups=["usps", "mnist"])[0].train_groups   # the split's order
    ('mnist', 'usps')
    """
    if protocol is not None and protocol not in PROTOCOLS:
        raise HetbenchError(f"`protocol` '{protocol}' is not one of {', '.join(PROTOCOLS)}")
    test = None if test_groups is None else _ordered(data, test_groups, "`test_groups`")
    if protocol is not None:
        flag = f"--protocol {protocol}"
        if train_groups is not None:
            raise HetbenchError(f"{flag} chooses the training groups itself; drop `train_groups`")
        _group_indices(data, [], flag)  # a split without groups is refused
        if len(data.group_names) < 2:
            raise HetbenchError(
                f"{flag} needs at least 2 groups of column '{data.group_by}'; this split has "
                f"{len(data.group_names)} ({_shown(list(data.group_names))})"
            )
        if test is not None:
            missing = [g for g in data.group_names if g not in test]
            raise HetbenchError(
                f"{flag} tests every group, so `test_groups` cannot leave out '{missing[0]}'; drop `test_groups`"
                if missing else f"{flag} tests on every group already; drop `test_groups`"
            )
        if protocol == "leave-one-group-out":
            runs = [GroupRun(tuple(g for g in data.group_names if g != held), None, held) for held in data.group_names]
        else:
            runs = [GroupRun((g,), None, None) for g in data.group_names]
    else:
        train = None if train_groups is None else _ordered(data, train_groups, "`train_groups`")
        runs = [GroupRun(train, test)]
    for run in runs:  # every restriction is possible: checked before any run trains
        _check_restriction(data, run, protocol)
    return runs


def _ordered(data: FederatedData, names: Sequence[str], flag: str) -> tuple[str, ...]:
    return tuple(data.group_names[i] for i in _group_indices(data, names, flag))


def _training_clients(data: FederatedData, train_groups: Sequence[str], label: str) -> np.ndarray:
    """Indices of the clients whose training rows all belong to one of ``train_groups`` (refusing none)."""
    idx = _group_indices(data, train_groups, "`train_groups`")
    keep = np.flatnonzero(np.isin(data.client_group, idx))
    if keep.size == 0:
        why = (f"no client's training rows all share one group of column '{data.group_by}' (does the train split "
               "have that column?)" if not (data.client_group >= 0).any() else
               f"none of the {data.num_clients} clients has all its training rows in "
               f"{'that group' if len(idx) == 1 else 'those groups'}")
        raise HetbenchError(f"{label} leaves no training client: {why}")
    return keep


def _test_rows(data: FederatedData, test_groups: Sequence[str]) -> tuple[list[int], np.ndarray]:
    """(group indices, test rows) of ``test_groups``, refusing groups without test rows."""
    idx = _group_indices(data, test_groups, "`test_groups`")
    rows = np.flatnonzero(np.isin(data.test_group, idx))
    empty = sorted(set(idx) - set(np.unique(data.test_group[rows]).tolist()))
    if empty:
        raise HetbenchError(f"`test_groups`: group '{data.group_names[empty[0]]}' has no test rows in this split")
    return idx, rows


def _check_restriction(data: FederatedData, run: GroupRun, protocol: str | None = None) -> None:
    if run.train_groups is not None:
        label = (f"--protocol leave-one-group-out, holding out '{run.held_out}'," if run.held_out is not None
                 else f"--protocol cross-group, training on '{run.train_groups[0]}' alone," if protocol == "cross-group"
                 else f"--train-groups {','.join(run.train_groups)}")
        _training_clients(data, run.train_groups, label)
    if run.test_groups is not None:
        _test_rows(data, run.test_groups)
