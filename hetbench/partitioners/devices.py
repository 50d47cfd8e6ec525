"""Device heterogeneity: every client is one device (a phone, or an ISP variant of one pipeline).

HeteroSwitch (Kim et al., MLSys 2024) builds its federated splits by device: the same scenes
captured by every device, clients allocated to devices by weight (uniform for the ISP-variant
study of sec. 3.4 / Table 3, market share for the nine phones of Table 1), and a test set shared
by every client and split *by capture*, so no test scene is seen in training under any device. The
builders render the rows (``hetbench.builders.iso_isp``, ``devices``, ``synthetic_color``) and
split train/test by capture when they make the table; this partitioner decides the clients.

Two allocations, one per protocol:

``deal`` (iso-isp, devices)
    Device d gets ``n_d = 1 + LR(w_d / sum(w) * (N - D))`` clients (largest remainder ``LR``, so
    every device has at least one); clients are numbered device by device and named
    ``<device>/<k>``; each device's training rows are dealt evenly, in random order, among its
    clients.
``iid`` (synthetic colour devices, HeteroSwitch sec. 6.5)
    The rows are split IID over N equal clients, and the clients are allocated to devices as above
    and then shuffled, so a client's device is random; a row is rendered by its client's device.
    A builder asks :meth:`DevicePartitioner.plan` which device renders each source row, renders
    the rows device by device (source order within a device), and the partition of the rendered
    table is the same plan (checked against its device column).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.partition import Partition
from hetbench.partitioners._alloc import largest_remainder
from hetbench.partitioners.base import Partitioner
from hetbench.seeding import make_rng
from hetbench.table import SampleTable

ALLOCATIONS = ("deal", "iid")


def allocate_clients(num_clients: int, weights: Mapping[str, float], rng: np.random.Generator) -> dict[str, int]:
    """Clients per device: ``1 + largest_remainder(w / sum(w) * (N - D))``, at least one each.

    Parameters
    ----------
    num_clients : int
        N, at least the number of devices D.
    weights : mapping of str to float
        Participation weight per device (market share, or 1 for uniform); non-negative, positive sum.
    rng : numpy.random.Generator
        Breaks ties between equal remainders.

    Returns
    -------
    dict
        Device -> number of clients, in the order of ``weights``; the values sum to N.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.partitioners.devices import allocate_clients
    >>> allocate_clients(10, {"pixel5": 3.0, "galaxy-s22": 1.0}, np.random.default_rng(0))
    {'pixel5': 7, 'galaxy-s22': 3}
    """
    names = list(weights)
    if num_clients < len(names):
        raise HetbenchError(f"`num_clients` {num_clients} is fewer than the {len(names)} devices; every device needs a client")
    w = np.array([float(weights[n]) for n in names])
    if not np.isfinite(w).all() or (w < 0).any() or not 0 < w.sum() < np.inf:
        raise HetbenchError("device weights must be finite non-negative numbers with a positive, finite sum")
    extra = num_clients - len(names)
    counts = 1 + largest_remainder(w / w.sum() * extra, extra, rng)
    return dict(zip(names, counts.tolist()))


@dataclass(frozen=True)
class DevicePlan:
    """What the ``iid`` allocation decides before any row is rendered."""

    client_of_row: np.ndarray  # int32, the client of every source row (source order)
    device_of_client: np.ndarray  # int64, index into ``devices`` of every client
    devices: tuple[str, ...]
    clients_per_device: dict[str, int]

    @property
    def device_of_row(self) -> np.ndarray:
        return self.device_of_client[self.client_of_row]

    def rows_of_device(self, d: int) -> np.ndarray:
        """Source rows rendered by device ``d``, in source order."""
        return np.flatnonzero(self.device_of_row == d)

    def client_names(self) -> tuple[str, ...]:
        return tuple(f"{self.devices[self.device_of_client[c]]}/{c:03d}" for c in range(self.device_of_client.size))


class DevicePartitioner(Partitioner):
    """Clients are devices: allocate clients to devices by weight, give each device's rows to its clients.

    Parameters
    ----------
    clients : int, optional
        Number of clients N (default: one per device). At least the number of devices.
    weights : mapping of str to float, optional
        Participation weight per device, which also fixes the device order (default: uniform over
        the devices of ``column``, in order of first appearance).
    column : str
        The table's device column.
    allocation : {"deal", "iid"}
        ``deal``: each device's rows dealt among its clients (iso-isp, devices); ``iid``: rows IID
        over clients, a random device per client (synthetic colour devices). See the module notes.
    build : mapping, optional
        ``{"method": ..., "params": ...}`` of the builder that rendered the table: the split's recipe
        records it as ``build`` (what ``hetbench verify`` re-runs), beside this partitioner's own
        ``partition`` (:attr:`hetbench.partitioners.base.Partitioner.build`).
    purity : float
        ``deal`` only: the share of a client's rows rendered by its own device, in [1/D, 1] for D devices;
        the rest are the other devices' renders, equally from each, and every client keeps its size
        (:mod:`hetbench.partitioners.purity`; 1, the default, is one device per client).

    References
    ----------
    Kim et al., "Addressing Heterogeneity in Federated Learning via Heterogeneity-Aware
    Switching" (HeteroSwitch), MLSys 2024: sec. 3.4 and Table 3 (ISP variants as devices), Table 1
    (nine phones, market share), sec. 6.5 (synthetic colour devices).

    Examples
    --------
    >>> import datasets, numpy as np
    >>> from hetbench.partitioners.devices import DevicePartitioner
    >>> from hetbench.table import SampleTable
    >>> rows = {"device": ["a", "b"] * 6, "label": [0, 1, 0, 1] * 3}
    >>> table = SampleTable(splits={"train": datasets.Dataset.from_dict(rows)}, label_column="label",
    ...                     class_names=["x", "y"], labels={"train": np.array(rows["label"])})
    >>> part = DevicePartitioner(clients=4).partition(table, seed=0)
    >>> part.client_names, np.bincount(part.assignment).tolist()
    (('a/0', 'a/1', 'b/0', 'b/1'), [3, 3, 3, 3])
    """

    name = "device"

    def __init__(
        self,
        clients: int | None = None,
        weights: Mapping[str, float] | None = None,
        column: str = "device",
        allocation: str = "deal",
        build: Mapping[str, Any] | None = None,
        purity: float = 1.0,
    ) -> None:
        if allocation not in ALLOCATIONS:
            raise HetbenchError(f"unknown device allocation '{allocation}'; choose one of: {', '.join(ALLOCATIONS)}")
        purity = float(purity)
        if not (np.isfinite(purity) and 0.0 < purity <= 1.0):
            raise HetbenchError(f"`purity` must be in [1/G, 1] for G devices (got {purity})")
        if purity != 1.0 and allocation != "deal":
            raise HetbenchError("`purity` mixes the renders of devices that all render the same captures (iso-isp, "
                                "devices, real-devices); synthetic-colour devices render each row once")
        self.purity = purity
        self.clients = None if clients is None else int(clients)
        self.weights = None if weights is None else {str(k): float(v) for k, v in weights.items()}
        self.column = column
        self.allocation = allocation
        self.build = None if build is None else dict(build)

    def params(self) -> dict[str, Any]:
        params = {"clients": self.clients, "weights": self.weights, "column": self.column, "allocation": self.allocation}
        if self.purity != 1.0:  # only when set: the recipes of pure splits stay as they were
            params["purity"] = self.purity
        return params

    def _weights(self, devices_seen: Sequence[str]) -> dict[str, float]:
        if self.weights is not None:
            return self.weights
        return {d: 1.0 for d in dict.fromkeys(devices_seen)}

    def plan(self, num_rows: int, seed: int, weights: Mapping[str, float] | None = None) -> DevicePlan:
        """The ``iid`` allocation of ``num_rows`` source rows: each row's client and each client's device.

        Equal client sizes (``n // N``, the first ``n % N`` one larger), rows drawn without
        replacement; clients allocated to devices by weight, then shuffled.
        """
        from hetbench.partitioners.iid import iid_assignment

        weights = dict(weights if weights is not None else (self.weights or {}))
        if not weights:
            raise HetbenchError("the iid device allocation needs the devices (weights)")
        clients = len(weights) if self.clients is None else self.clients
        if clients > num_rows:
            raise HetbenchError(f"more clients ({clients}) than training samples ({num_rows})")
        sizes = np.full(clients, num_rows // clients)
        sizes[: num_rows % clients] += 1
        client_of_row = iid_assignment(num_rows, sizes, make_rng(seed, 24))
        per_device = allocate_clients(clients, weights, make_rng(seed, 25))
        devices = tuple(weights)
        device_of_client = np.repeat(np.arange(len(devices)), [per_device[d] for d in devices])
        device_of_client = make_rng(seed, 26).permutation(device_of_client)
        return DevicePlan(client_of_row, device_of_client, devices, per_device)

    def partition(self, table: SampleTable, seed: int = 0, split: str = "train") -> Partition:
        ds = table.splits[split]
        if self.column not in ds.column_names:
            raise HetbenchError(f"the data has no device column '{self.column}' (columns: {', '.join(ds.column_names)})")
        device = np.asarray(ds.with_format("arrow")[self.column].to_pylist(), dtype=object).astype(str)
        weights = self._weights(device.tolist())
        unknown = sorted(set(device.tolist()) - set(weights))
        if unknown:
            raise HetbenchError(f"rows of devices without a weight: {', '.join(unknown[:5])}")
        if self.allocation == "deal":
            assignment, names = self._deal(device, weights, seed)
        else:
            assignment, names = self._iid(device, weights, seed)
        return Partition(assignment, len(names), names, self.recipe(table, seed, split))

    def _deal(self, device: np.ndarray, weights: dict[str, float], seed: int) -> tuple[np.ndarray, tuple[str, ...]]:
        devices = list(weights)
        num_clients = len(devices) if self.clients is None else self.clients
        per_device = allocate_clients(num_clients, weights, make_rng(seed, 2))
        names: list[str] = []
        first_client: dict[str, int] = {}
        for d in devices:
            first_client[d] = len(names)
            width = len(str(per_device[d] - 1))
            names += [f"{d}/{k:0{width}d}" for k in range(per_device[d])]
        if self.purity != 1.0:
            return self._mixed(device, devices, per_device, names, seed), tuple(names)
        assignment = np.empty(device.size, dtype=np.int32)
        deal_rng = make_rng(seed, 3)
        for d in devices:
            rows = np.flatnonzero(device == d)
            deal = np.resize(np.arange(per_device[d], dtype=np.int32), rows.size)
            assignment[rows[deal_rng.permutation(rows.size)]] = first_client[d] + deal
        return assignment, tuple(names)

    def _mixed(self, device: np.ndarray, devices: list[str], per_device: dict[str, int], names: list[str],
               seed: int) -> np.ndarray:
        """The ``deal`` sizes, each client's rows mixed over the devices at :attr:`purity`."""
        from hetbench.partitioners.purity import check_purity, mix_groups

        check_purity(self.purity, len(devices), "devices")
        code = np.full(device.size, -1, np.int64)
        sizes, device_of_client = [], []
        for k, d in enumerate(devices):
            rows = np.flatnonzero(device == d)
            code[rows] = k
            sizes += np.bincount(np.resize(np.arange(per_device[d]), rows.size), minlength=per_device[d]).tolist()
            device_of_client += [k] * per_device[d]
        return mix_groups(code, np.array(device_of_client), np.array(sizes), self.purity, make_rng(seed, 4),
                          [f"device '{d}'" for d in devices])

    def _iid(self, device: np.ndarray, weights: dict[str, float], seed: int) -> tuple[np.ndarray, tuple[str, ...]]:
        plan = self.plan(device.size, seed, weights)
        order = np.argsort(plan.device_of_row, kind="stable")  # the rendered order: device by device
        expected = np.asarray(plan.devices, dtype=object)[plan.device_of_row[order]].astype(str)
        if not np.array_equal(expected, device):
            raise HetbenchError("the table's rows are not rendered in the order of the iid device plan (DevicePartitioner.plan)")
        return plan.client_of_row[order].astype(np.int32), plan.client_names()
