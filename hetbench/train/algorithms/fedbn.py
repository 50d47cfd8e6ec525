"""FedBN (Li, Jiang, Zhang, Kamp and Dou, ICLR 2021, Algorithm 1): clients keep their normalisation layers.

Features shift between clients (other cameras, scanners, ISPs) while the labels do not; FedBN lets each
client keep the parameters and running statistics of its normalisation layers and federates the rest.
Client k, at the start of its update, overwrites the normalisation entries of the global model it loaded
with its own saved copy (a client taking part for the first time keeps the global model's), trains as
FedAvg does, and saves its copy again (``client_state``: on Flower it stays on the client).

The "normalisation entries" are every parameter and floating-point buffer of a BatchNorm layer (weight,
bias, running mean, running variance), and, with ``--norm group``, the affine weight and bias of every
GroupNorm layer: GroupNorm keeps no running statistics, but its affine parameters play the same part as
BatchNorm's. Models without normalisation layers (``digits-cnn``, ``lenet``, any model with ``--norm
none``) leave nothing to keep local and are refused (:attr:`FedBN.requires_norm`).

The server averages everything with FedAvg's weights n_k, normalisation entries included; those averaged
entries are never what a returning client trains from. They form the global model that serves (a) clients
taking part for the first time and (b) the shared test rows.

Evaluation (:meth:`FedBN.evaluate`): FedBN evaluates each client's model, with its own normalisation, on
that client's own test data (Li et al. 2021, sec. 5: every client of a domain is tested on the domain's
held-out data). A test row that belongs to client k (``data.test_client == k``) is evaluated with the global
model plus client k's own normalisation entries. A shared test row (``test_client == -1``) of a test group
(a device, a domain, an S2 cell: ``data.test_group``) is evaluated by the clients of that group
(``data.client_group``): the group's shared rows are dealt in row order, round robin, to the group's clients
that have trained (:func:`norm_owners`), so each such client's model, with its own normalisation, scores
an equal share of its own domain's test rows, as a per-client test set would. Rows of a group none of whose
clients has trained yet, rows of a split without test groups (``group_by`` ``all``: no row says whose
distribution it comes from) and rows of groups whose clients mix several groups (``--purity`` below 1) are
evaluated with the global model, whose normalisation entries are the n_k-weighted average of the
clients': the model a new client starts from. (Before, every shared row was scored with the averaged
entries, so on the device and domain splits, which share every test row, no reported accuracy used the
clients' own normalisation.) Because on Flower a client's copy never leaves the client between its rounds
while evaluation runs on the server, each client also sends its copy back with its update
(``extra["norm"]``); the server keeps it for evaluation only (``eval_norm``, updated in
:meth:`FedBN.accumulate`) and never sends it to a client, so both engines evaluate the same models.

FedBN trains BatchNorm models unless ``--norm`` says otherwise (``default_norm``): the paper's method keeps
BatchNorm layers local; with ``--norm group`` the kept entries are GroupNorm's affine weights and biases.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from hetbench.errors import HetbenchError
from hetbench.train.algorithms.base import Algorithm, ClientUpdate, RunState, StackedUpdates
from hetbench.train.algorithms.fedavg import FedAvg
from hetbench.train.flat import FlatModel
from hetbench.train.local_plan import LocalPlan, StackedResult

#: layer types whose parameters and float buffers stay with the clients
NORM_LAYERS = (nn.modules.batchnorm._NormBase, nn.GroupNorm, nn.LayerNorm)


def norm_refusal(model_name: str, norm: str) -> str:
    """The one line that refuses FedBN on a model without normalisation layers.

    Examples
    --------
    >>> norm_refusal("lenet", "group")
    "fedbn keeps each client's normalisation layers, but the model lenet has none; use `model` resnet10, resnet18 or mobilenetv3-small with `norm` batch or group"
    """
    from hetbench.train.models import models_with_norm

    names = models_with_norm()
    where = f"{model_name} with `norm` none" if norm == "none" and model_name in names else model_name
    return (f"fedbn keeps each client's normalisation layers, but the model {where} has none; use `model` "
            f"{', '.join(names[:-1])} or {names[-1]} with `norm` batch or group")


def norm_positions(flat: FlatModel) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions in ``flat.params`` and ``flat.buffers`` of the normalisation layers' parameters and float
    buffers (:data:`NORM_LAYERS`), as index tensors on the devices of ``flat.params`` and ``flat.buffers``
    (a model without float buffers has an empty CPU buffer vector).

    Examples
    --------
    >>> from torch import nn
    >>> from hetbench.train.flat import FlatModel
    >>> flat = FlatModel(nn.Sequential(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2), nn.Conv2d(2, 1, 1)))
    >>> p, b = norm_positions(flat)
    >>> p.tolist(), b.tolist()  # conv weight 0-1, bias 2-3; BN weight 4-5, bias 6-7; running mean, var
    ([4, 5, 6, 7], [0, 1, 2, 3])
    """
    param_at = {id(p): ab for p, ab in zip(flat.param_list, flat.offsets)}
    buffer_at, start = {}, 0
    for b in flat.buffer_list:
        buffer_at[id(b)] = (start, start + b.numel())
        start += b.numel()
    ps: list[torch.Tensor] = [torch.zeros(0, dtype=torch.long)]
    bs: list[torch.Tensor] = [torch.zeros(0, dtype=torch.long)]
    for module in flat.model.modules():
        if isinstance(module, NORM_LAYERS):
            ps.extend(torch.arange(*param_at[id(p)]) for p in module.parameters(recurse=False))
            bs.extend(torch.arange(*buffer_at[id(b)]) for b in module.buffers(recurse=False) if id(b) in buffer_at)
    return torch.cat(ps).to(flat.params.device), torch.cat(bs).to(flat.buffers.device)


def norm_owners(test_client: np.ndarray, test_group: np.ndarray, client_group: np.ndarray, group_by: str,
                trained: list[int]) -> np.ndarray:
    """The client whose model (with its own normalisation entries) evaluates each test row; -1: the global
    model.

    A row of client k is client k's. A shared row (``test_client`` -1) of test group g goes to one of the
    trained clients whose rows all lie in group g, dealt round robin in row order; with ``group_by`` ``all``
    (one pool, no row says whose distribution it is), or no trained client in g, it stays with the global
    model.

    Parameters
    ----------
    test_client, test_group : numpy.ndarray
        Per test row: its client (-1: shared) and its test group.
    client_group : numpy.ndarray
        Per client: its group, -1 when its rows span several.
    group_by : str
        The test-group column (``all``: no groups).
    trained : list of int
        Clients that have normalisation entries of their own.

    Returns
    -------
    numpy.ndarray
        int64, one owner per test row.

    References
    ----------
    Li et al., FedBN, ICLR 2021, sec. 5 (each client evaluated on its own domain's test data).

    Examples
    --------
    >>> import numpy as np
    >>> norm_owners(np.array([-1, -1, -1, -1, 1]), np.array([0, 0, 0, 1, 1]), np.array([0, 1, 0]), "domain",
    ...             [0, 1, 2]).tolist()  # domain 0's rows alternate between clients 0 and 2
    [0, 2, 0, 1, 1]
    """
    test_client, test_group = np.asarray(test_client), np.asarray(test_group)
    owner = test_client.astype(np.int64).copy()
    if group_by == "all":
        return owner
    groups = np.asarray(client_group)
    clients = np.unique(np.asarray([int(k) for k in trained if 0 <= int(k) < groups.size], dtype=np.int64))
    clients = clients[groups[clients] >= 0]
    if not clients.size:
        return owner
    by_group = clients[np.argsort(groups[clients], kind="stable")]  # trained clients, group by group, ascending
    gs, first, count = np.unique(groups[by_group], return_index=True, return_counts=True)
    shared = np.flatnonzero(test_client < 0)
    at = np.searchsorted(gs, test_group[shared])
    has = (at < gs.size) & (gs[np.minimum(at, gs.size - 1)] == test_group[shared])
    rows, at = shared[has], at[has]
    order = np.argsort(test_group[rows], kind="stable")  # each group's shared rows in row order
    rows, at = rows[order], at[order]
    start = np.searchsorted(test_group[rows], test_group[rows], side="left")  # the group's first position
    owner[rows] = by_group[first[at] + (np.arange(rows.size) - start) % count[at]]
    return owner


class FedBN(FedAvg):
    """FedBN: FedAvg whose clients keep their own normalisation layers (BatchNorm, or GroupNorm's affine part).

    With ``--norm group`` the normalisation entries are the GroupNorm layers' affine weights and biases.

    Client k trains from the global model with its own saved normalisation entries in place (the global
    model's the first time) and saves them again; the server averages every entry with weights n_k. Test
    rows of client k, and a share of the shared test rows of client k's device or domain, are evaluated
    with client k's normalisation entries (:func:`norm_owners`; the module docstring gives the rule and its
    reason). The models are BatchNorm ones unless ``--norm`` says otherwise, as in the paper. Models
    without normalisation layers are refused in one line (exit 2).

    FedBN has no hyper-parameters of its own (the paper's server is a plain average); the client learning
    rate is ``--lr`` as for FedAvg.

    References
    ----------
    .. [1] X. Li, M. Jiang, X. Zhang, M. Kamp and Q. Dou, "FedBN: federated learning on non-IID features via
       local batch normalization", ICLR 2021, Algorithm 1 (local BN layers, the rest averaged) and sec. 5
       (each client evaluated on its own test data).

    Examples
    --------
    >>> from hetbench.train.algorithms import make_algorithm
    >>> fedbn = make_algorithm("fedbn")
    >>> fedbn.params, fedbn.client_state, fedbn.requires_norm
    ({}, ('norm_i',), True)
    >>> from hetbench.train.algorithms import check_models
    >>> check_models(["fedavg", "fedbn"], "resnet10", "batch")
    >>> check_models(["fedavg", "fedbn"], "resnet10", "none")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: fedbn keeps each client's normalisation layers, but the model resnet10 with norm none has none; use model resnet10, resnet18 or mobilenetv3-small with norm batch or group
    """

    name = "fedbn"
    citation = "Li, Jiang, Zhang, Kamp, Dou 2021, FedBN: federated learning on non-IID features via local batch normalization"
    hyper = {}
    client_state = ("norm_i",)
    default_norm = "batch"  # the paper's FedBN keeps BatchNorm layers local (Li et al. 2021, Algorithm 1)
    #: the model must have normalisation layers (checked by ``hetbench.train.algorithms.check_models``)
    requires_norm = True
    rebuilt = (*Algorithm.rebuilt, "_pidx", "_bidx")

    @classmethod
    def check_model(cls, model_name: str, norm: str) -> None:
        """Refuse a model without normalisation layers (:func:`norm_refusal`)."""
        from hetbench.train.models import has_norm_layers

        if not has_norm_layers(model_name, norm):
            raise HetbenchError(norm_refusal(model_name, norm))

    def setup(self, run: RunState) -> None:
        self._pidx, self._bidx = norm_positions(run.main_ws.flat)
        if not (self._pidx.numel() or self._bidx.numel()):
            raise HetbenchError(norm_refusal(run.config.model_for(run.data.image_size), run.config.norm))
        self.norm_i: dict[int, torch.Tensor] = {}  # each client's own copy (stays on the client)
        self.eval_norm: dict[int, torch.Tensor] = {}  # the server's copy of the last one each client sent

    def take_norm(self, flat: FlatModel) -> torch.Tensor:
        """The normalisation entries of ``flat``: its parameters, then its buffers, as one new vector."""
        own = flat.params.index_select(0, self._pidx)
        if not self._bidx.numel():  # GroupNorm: no running statistics
            return own
        return torch.cat([own, flat.buffers.index_select(0, self._bidx).to(own.device)])

    def put_norm(self, flat: FlatModel, norm: torch.Tensor) -> None:
        """Overwrite the normalisation entries of ``flat`` with ``norm`` (from :meth:`take_norm`)."""
        with torch.no_grad():
            self.put_entries(flat.params, flat.buffers, norm)

    def put_entries(self, params: torch.Tensor, buffers: torch.Tensor, norm: torch.Tensor) -> None:
        """Overwrite the normalisation entries of the flat vectors ``params`` and ``buffers`` with ``norm``."""
        n = self._pidx.numel()
        params.index_copy_(0, self._pidx, norm[:n].to(params.device))
        if self._bidx.numel():
            buffers.index_copy_(0, self._bidx, norm[n:].to(buffers.device))

    stacked = True  # local_plan starts a returning client from its own entries; stacked_updates keeps them

    def local_plan(self, run: RunState, round_index: int, client: int) -> LocalPlan:
        """The client's batches, from the global model with its own normalisation entries put in (if any)."""
        plan = LocalPlan(self.batches(run, round_index, client))
        own = self.norm_i.get(client)
        if own is not None:
            plan.start_params, plan.start_buffers = run.global_params.clone(), run.global_buffers.clone()
            self.put_entries(plan.start_params, plan.start_buffers, own)
        return plan

    def stacked_updates(self, run: RunState, round_index: int, clients: list[int], plans: list[LocalPlan],
                        out: StackedResult) -> StackedUpdates:
        """Each client keeps its trained normalisation entries (copies of its rows) and sends them for the
        server's evaluation copy, as :meth:`client_update` does."""
        updates = super().stacked_updates(run, round_index, clients, plans, out)
        entries = out.params.index_select(1, self._pidx.to(out.params.device))
        if self._bidx.numel():
            entries = torch.cat([entries, out.buffers.index_select(1, self._bidx.to(out.buffers.device))
                                 .to(entries.device)], dim=1)
        mine = [row.clone() for row in entries]
        for k, norm in zip(clients, mine):
            self.norm_i[k] = norm
        updates.extras = [{"norm": norm} for norm in mine]
        return updates

    def client_update(self, run: RunState, round_index: int, client: int) -> ClientUpdate:
        """Load the global model, put this client's own normalisation entries in (if it has any), train,
        and keep the trained entries (Algorithm 1)."""
        flat = run.ws.flat
        flat.load(run.global_params, run.global_buffers)
        own = self.norm_i.get(client)
        if own is not None:
            self.put_norm(flat, own)
        result = self.train_locally(run, round_index, client, self.batches(run, round_index, client))
        update = self.make_update(run, client, result)
        mine = self.take_norm(flat)
        self.norm_i[client] = mine
        update.extra["norm"] = mine  # for the server's evaluation copy, never sent back to a client
        return update

    def accumulate(self, run: RunState, round_index: int, update: ClientUpdate) -> None:
        norm = update.extra.pop("norm")
        super().accumulate(run, round_index, update)
        self.eval_norm[update.client] = norm

    def _loader(self, run: RunState, own: torch.Tensor | None):
        params, buffers = run.global_params, run.global_buffers

        def load(flat: FlatModel) -> None:
            flat.load(params, buffers)
            if own is not None:
                self.put_norm(flat, own)

        return load

    def evaluate(self, run: RunState, pool) -> tuple[np.ndarray, float]:
        """Each test row with the global model plus the normalisation entries of the client that owns it
        (:func:`norm_owners`: its own client, or a trained client of its device or domain), or with the
        global model: (correct per test row, mean cross-entropy). Rows go client by client through
        ``pool.predict_parts``, in parallel and independent of the number of workers."""
        d = run.data
        owner = norm_owners(np.asarray(d.test_client), np.asarray(d.test_group), np.asarray(d.client_group),
                            d.group_by, sorted(self.eval_norm))
        order = np.argsort(owner, kind="stable")  # global-model rows (-1) first, then client by client
        keys, starts = np.unique(owner[order], return_index=True)
        parts = [(rows, self._loader(run, self.eval_norm.get(int(key)) if key >= 0 else None))
                 for key, rows in zip(keys, np.split(order, starts[1:]))]
        got, total = pool.predict_parts(parts)
        correct = np.zeros(owner.size, dtype=bool)
        for (rows, _), hits in zip(parts, got):
            correct[rows] = hits
        return correct, total / max(owner.size, 1)
