"""DapperFL (Jia et al., NeurIPS 2024): Model Fusion Pruning, Domain Adaptive Regularisation and
heterogeneous aggregation, implemented from the paper's equations.

Client i at round t (Algorithm 2, local epoch 1 is Algorithm 1):
  1. fine-tune the global model W^(t-1) on D_i for one epoch -> w_hat (Algorithm 1 line 1: local epoch 1
     is the fine-tuning; the plain cross-entropy, as the DAR objective belongs to epochs 2..E);
  2. fuse: w = alpha_t W^(t-1) + (1 - alpha_t) w_hat (Eq. 1), alpha_t = max((1 - eps)^(t-1) alpha_0, alpha_min)
     (Eq. 2; alpha_0 = 0.9, alpha_min = 0.1, eps = 0.2, Table 4);
  3. mask M: channel-wise L1 structured pruning of w at the client's ratio rho_i (the rho_i lowest-L1 output
     channels of every convolution and hidden linear layer, with their bias and following norm scale and
     shift); w <- w * M;
  4. local epochs 2..E (Algorithm 2 lines 2-3) train the pruned model w * M (re-masked after every step)
     with L = L_CE + gamma ||z||_2^2 (Eq. 3-5), z the encoder output, gamma = 0.01. E defaults to 5
     (Table 4): with E = 1 no epoch would apply the DAR term.
The client reports w * M, M and the fraction of prunable channels its mask removed. Server: recovery
w_i := w_i * M_i + W^(t-1) * not(M_i) (Eq. 6), then W^t = sum_i |D_i| / |D| w_i over the reporting clients
(Eq. 7).

The DAR term (``--dar-form``): Eq. 3 is the *squared* L2 norm of the representation, L_DAR = ||z||_2^2, and
sec. 3.3 argues for the square; that is the default (``squared``). The authors' released code
(github.com/jyzgh/DapperFL, ``fedml_api/standalone/domain_generalization/models/dapperfl.py``, its local
training loop) adds the *unsquared* norm instead, the batch mean of ||z||_2 (``--dar-form unsquared``); both
are weighted by gamma (Eq. 5).

Per-round diagnostics, recorded by the server in ``curves.algorithm`` of the results (computed from what
the clients send, so every engine records the same): ``fusion_alpha``, the round's alpha_t (Eq. 2), and
``pruned_fraction``, the mean over the round's reporting clients of the fraction of prunable channels their
masks removed.

Pruning ratios come from device levels 1..5, rho in {0, 0.2, 0.4, 0.6, 0.8} (sec. 4.1): a device's level is
its system capability, which has nothing to do with the domain its data comes from (the paper distributes
clients to domains at random, and the levels are a property of the devices), so each run draws every client's
level at random, the levels as even as the count allows (:func:`device_levels`: seeded by the run's seed,
independent of client order). Before, client k got level k mod 5; a domain split numbers its clients in blocks
by domain, so the ratio followed the domain (MNIST clients pruned 0-20%, USPS 60-80%). Depthwise convolutions are not pruned on their own
(their channels follow their input). Per client the results give:

- ``parameters`` and ``macs``: the *structural* cost of the pruned model with dead channels removed (a
  pruned output channel also removes the next layer's input channel, so both fall roughly as (1 - rho)^2);
- ``mask_parameters``: the parameters the mask keeps, which is what the paper's Table 5 reports as #Para
  (linear in 1 - rho: 3.92M at rho = 0.2 for ResNet-10's 4.90M);
- ``flops_dense_equivalent``: Table 5's FLOPs, (1 - rho) x the dense model's count (203.34M at rho = 0.2
  for ResNet-10's 254.2M). Those FLOPs are multiply-accumulates: ResNet-10 at 32 x 32 px has 253.4M MACs
  (twice that would be 506.9M), so the figure here is (1 - rho) x the dense model's MACs
  (:func:`hetbench.train.models.profile.dense_equivalent_flops`). At rho = 0.8 it is 0.2 x dense where the
  structural MACs are about 0.04 x dense: compare DapperFL's FLOPs with the paper's through this field,
  and with other algorithms' costs through ``macs``.

Note on the public code: the authors' released implementation departs from these equations: its fusion
step and its server-side recovery step have no effect on the model that is trained and aggregated. This
module implements the paper's Eq. 1, 2, 6 and 7 as written, so results can differ from numbers produced
with the released code.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hetbench.train.algorithms.base import Algorithm, ClientUpdate, RunState, StackedUpdates
from hetbench.train.algorithms.channel_pruning import l1_channel_mask, prune_groups
from hetbench.train.algorithms.hyper import Hyper
from hetbench.train.local import epoch_batches, local_sgd
from hetbench.train.local_plan import IGNORE, LocalPlan

def fusion_factor(round_index: int, alpha0: float = 0.9, alpha_min: float = 0.1, eps: float = 0.2) -> float:
    """Eq. 2: alpha_t = max((1 - eps)^(t - 1) * alpha_0, alpha_min), rounds counted from 1."""
    return max((1.0 - eps) ** (round_index - 1) * alpha0, alpha_min)


#: the DAR term's forms: Eq. 3's squared L2 norm (the paper) and the unsquared norm (the released code)
DAR_FORMS = ("squared", "unsquared")


def dar_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, gamma: float, form: str = "squared") -> torch.Tensor:
    """Eq. 5: cross-entropy (Eq. 4) + gamma * L_DAR, batch mean; L_DAR is Eq. 3's squared L2 norm of the
    encoder output ``||z||_2^2`` (``form="squared"``) or the released code's ``||z||_2`` (``"unsquared"``).
    Rows labelled ``IGNORE`` pad a stacked round's short batch: both means run over the other rows."""
    z = model.features(x)
    ce = F.cross_entropy(model.classifier(z), y, ignore_index=IGNORE)
    real = (y != IGNORE).to(z.dtype)
    if form == "squared":
        term = z.pow(2).sum(dim=1)
    elif form == "unsquared":  # vector_norm's gradient at z = 0 is 0, not NaN
        term = torch.linalg.vector_norm(z, dim=1)
    else:
        raise ValueError(f"unknown DAR form {form!r} (choose from {', '.join(DAR_FORMS)})")
    return ce + gamma * (term * real).sum() / real.sum()


@dataclass
class DapperPlan(LocalPlan):
    """A DapperFL client's plan: ``batches`` is local epoch 1 (the fine-tuning), ``later`` epochs 2..E."""

    later: list[np.ndarray] = field(default_factory=list)


def recover(local: torch.Tensor, mask: torch.Tensor, global_prev: torch.Tensor) -> torch.Tensor:
    """Eq. 6: w_i * M_i + W^(t-1) * not(M_i)."""
    return local * mask + global_prev * (1.0 - mask)


#: the stream of the run's seed that draws the device levels (apart from every (round, client) stream)
_LEVEL_STREAM = 0xDA9


def device_levels(num_clients: int, num_levels: int, seed: int) -> np.ndarray:
    """Each client's device level (0-based): as even as the count allows (every level has ``floor`` or
    ``ceil`` of ``num_clients / num_levels`` clients), assigned by a random permutation of the clients, so a
    client's level, and with it its pruning ratio, is independent of where its index sits (a domain split
    numbers its clients in blocks by domain).

    Parameters
    ----------
    num_clients, num_levels : int
        Clients of the split; device levels (DapperFL sec. 4.1: 5).
    seed : int
        The run's seed: the same run always draws the same levels, and another seed others.

    Returns
    -------
    numpy.ndarray
        int64 (num_clients,), values in 0 .. num_levels - 1.

    References
    ----------
    Jia et al., DapperFL, NeurIPS 2024, sec. 4.1 ("we categorize these heterogeneous devices into 5 levels
    according to their system capabilities"; clients are distributed to domains at random).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.train.algorithms.dapperfl import device_levels
    >>> levels = device_levels(10, 5, seed=0)
    >>> np.bincount(levels).tolist()  # two clients per level
    [2, 2, 2, 2, 2]
    >>> bool((device_levels(10, 5, seed=1) != levels).any())  # another run, another draw
    True
    """
    rng = np.random.default_rng([int(seed), _LEVEL_STREAM, int(num_clients)])
    levels = np.empty(int(num_clients), dtype=np.int64)
    levels[rng.permutation(int(num_clients))] = np.arange(int(num_clients)) % int(num_levels)
    return levels


class DapperFL(Algorithm):
    """DapperFL: model fusion pruning, domain adaptive regularisation and heterogeneous aggregation.

    Client i fine-tunes the global model one epoch (cross-entropy), fuses it with the global model (Eq. 1,
    2), prunes it at its device's ratio by L1 channel norm and trains the pruned model for local epochs
    2..E with the DAR loss (Eq. 3-5; E = 5 unless ``--local-epochs`` says otherwise, Table 4); the
    server recovers the pruned weights from the global model (Eq. 6) and averages by size (Eq. 7).

    Parameters
    ----------
    alpha0 : float, default 0.9
        Initial fusion factor alpha_0 of Eq. 2, in [0, 1] (Table 4).
    alpha_min : float, default 0.1
        Minimum fusion factor alpha_min of Eq. 2, in [0, 1].
    fusion_eps : float, default 0.2
        Fusion decay epsilon of Eq. 2, in [0, 1].
    dar_gamma : float, default 0.01
        Weight gamma of the DAR term in Eq. 5, >= 0.
    dar_form : {"squared", "unsquared"}, default "squared"
        The DAR term: Eq. 3's squared L2 norm ``||z||_2^2`` of the representation, or the unsquared norm
        ``||z||_2`` the authors' released code adds.
    pruning_ratios : sequence of float, default (0.0, 0.2, 0.4, 0.6, 0.8)
        Pruning ratio rho per device level, each in [0, 1) (sec. 4.1); each client's level is drawn at random
        per run, as evenly as the count allows, independently of its domain (:func:`device_levels`).

    References
    ----------
    .. [1] Y. Jia, X. Zhang, H. Hu, K.-K. R. Choo, L. Qi, X. Xu, A. Beheshti and W. Dou, "DapperFL: domain
       adaptive federated learning with model fusion pruning for edge devices", NeurIPS 2024, Eq. (1)-(7),
       Algorithm 1 (model fusion pruning) and Algorithm 2 (DapperFL).

    Examples
    --------
    >>> from hetbench.train.algorithms import make_algorithm
    >>> from hetbench.train.algorithms.dapperfl import fusion_factor
    >>> make_algorithm("dapperfl").params
    {'alpha0': 0.9, 'alpha_min': 0.1, 'fusion_eps': 0.2, 'dar_gamma': 0.01, 'dar_form': 'squared',
     'pruning_ratios': (0.0, 0.2, 0.4, 0.6, 0.8)}
    >>> [round(fusion_factor(t), 3) for t in (1, 2, 3, 11)]  # Eq. 2, floored at alpha_min
    [0.9, 0.72, 0.576, 0.1]
    """

    name = "dapperfl"
    default_local_epochs = 5  # Table 4: local epoch 5; epoch 1 fine-tunes (Alg. 1), epochs 2..E use DAR
    citation = "Jia et al. 2024, DapperFL: domain adaptive federated learning with model fusion pruning"
    hyper = {
        "alpha0": Hyper(0.9, "DapperFL initial fusion factor alpha_0 (Eq. 2).", "Jia et al. 2024, Table 4",
                        low=0.0, high=1.0),
        "alpha_min": Hyper(0.1, "DapperFL minimum fusion factor alpha_min (Eq. 2).", "Jia et al. 2024, Table 4",
                           low=0.0, high=1.0),
        "fusion_eps": Hyper(0.2, "DapperFL fusion decay epsilon (Eq. 2).", "Jia et al. 2024, Table 4",
                            low=0.0, high=1.0),
        "dar_gamma": Hyper(0.01, "DapperFL DAR weight gamma (Eq. 5).", "Jia et al. 2024, Table 4", low=0.0),
        "dar_form": Hyper("squared", "DapperFL DAR term: squared, the paper's squared L2 norm of the representation, "
                          "or unsquared, the plain L2 norm the authors' released code uses.",
                          "Jia et al. 2024, Eq. 3 and sec. 3.3", choices=DAR_FORMS),
        "pruning_ratios": Hyper((0.0, 0.2, 0.4, 0.6, 0.8), "DapperFL pruning ratio per device level (comma list).",
                                "Jia et al. 2024, sec. 4.1", low=0.0, high=1.0, high_open=True, sequence=True),
    }
    rebuilt = (*Algorithm.rebuilt, "_pruned")  # the round's achieved fractions, rebuilt by begin_round

    def setup(self, run: RunState) -> None:
        from hetbench.train.models.profile import profile

        self.params["pruning_ratios"] = [float(r) for r in self.params["pruning_ratios"]]
        self.levels = device_levels(run.data.num_clients, len(self.params["pruning_ratios"]), run.config.seed)
        flat = run.ws.flat
        offsets = {id(p): span for p, span in zip(flat.param_list, flat.offsets)}
        self.groups = prune_groups(run.ws.model, offsets)
        self.achieved: dict[float, float] = {}
        self.dense_macs = int(profile(run.ws.model, run.data.in_channels, run.data.image_size)["macs"])
        self.footprint = {r: self._measure(run, r) for r in sorted(set(self.params["pruning_ratios"]))}

    def ratio_of(self, client: int) -> float:
        """The pruning ratio of ``client``'s device level (:func:`device_levels`, drawn in :meth:`setup`)."""
        return self.params["pruning_ratios"][int(self.levels[client])]

    def client_update(self, run: RunState, round_index: int, client: int) -> ClientUpdate:
        cfg = run.config
        ws = run.ws
        gamma, form = float(self.params["dar_gamma"]), self.params["dar_form"]
        rows = run.data.client_rows[client]
        rng = run.rng(round_index, client, 1)
        ws.flat.load(run.global_params, run.global_buffers)
        loss_fn = functools.partial(dar_loss, gamma=gamma, form=form)
        # local epoch 1 fine-tunes W^(t-1) with the cross-entropy (Algorithm 1 line 1); the DAR objective
        # (Eq. 5) is the update rule of epochs 2..E (Algorithm 2 line 3)
        first = local_sgd(ws, epoch_batches(rows, cfg.batch_size, 1, rng), cfg.lr, cfg.momentum, cfg.weight_decay)
        alpha = fusion_factor(round_index, self.params["alpha0"], self.params["alpha_min"], self.params["fusion_eps"])
        params = ws.flat.params
        with torch.no_grad():
            params.mul_(1.0 - alpha).add_(run.global_params, alpha=alpha)  # Eq. 1
            ratio = self.ratio_of(client)
            mask, pruned, total = l1_channel_mask(params, self.groups, ratio)
            params.mul_(mask)
        steps, loss_total = first.steps, first.mean_loss * first.steps
        if cfg.local_epochs > 1:
            # the same optimisation goes on (Alg. 2 trains E local epochs; the released code keeps one
            # optimiser for all of them): the momentum of the first epoch carries over
            rest = local_sgd(
                ws, epoch_batches(rows, cfg.batch_size, cfg.local_epochs - 1, rng), cfg.lr, cfg.momentum,
                cfg.weight_decay, loss_fn=loss_fn, after_step=lambda _i: params.mul_(mask), velocity=first.velocity,
            )
            steps += rest.steps
            loss_total += rest.mean_loss * rest.steps
        # the server fills ``achieved`` and the diagnostics from this (an engine may run clients elsewhere)
        update = self.make_update(run, client, first, mask=mask, pruned_fraction=pruned / max(total, 1))
        update.steps = steps
        update.loss = loss_total / max(steps, 1)
        return update

    stacked = True  # train_stacked runs client_update's stages for a chunk: two stacked calls around the pruning

    def local_plan(self, run: RunState, round_index: int, client: int) -> DapperPlan:
        """Epoch 1 and epochs 2..E, drawn from the client's stream 1 in client_update's order."""
        cfg, rows = run.config, run.data.client_rows[client]
        rng = run.rng(round_index, client, 1)
        first = epoch_batches(rows, cfg.batch_size, 1, rng)
        later = epoch_batches(rows, cfg.batch_size, cfg.local_epochs - 1, rng) if cfg.local_epochs > 1 else []
        return DapperPlan(first, later=later)

    def train_stacked(self, run: RunState, round_index: int, clients: list[int], plans: list[LocalPlan], engine: Any,
                      initial_loss: list[float] | None = None) -> StackedUpdates:
        """:meth:`client_update` for a chunk: epoch 1 for every client at once, then fusion (Eq. 1) on the rows,
        each client's L1 channel mask at its ratio, and epochs 2..E at once with the DAR loss, the masks applied
        after every step and each client's momentum carried over."""
        cfg = run.config
        first = engine.train(plans, run.global_params, run.global_buffers, cfg.lr, cfg.momentum, cfg.weight_decay,
                             keep_velocity=True)
        alpha = fusion_factor(round_index, self.params["alpha0"], self.params["alpha_min"], self.params["fusion_eps"])
        rows = first.params.mul_(1.0 - alpha).add_(run.global_params.to(first.params.device), alpha=alpha)  # Eq. 1
        pruned = [l1_channel_mask(rows[j], self.groups, self.ratio_of(k)) for j, k in enumerate(clients)]
        masks = torch.stack([m for m, _, _ in pruned])
        rows.mul_(masks)
        params, buffers, steps, losses = rows, first.buffers, list(first.steps), list(first.mean_loss)
        if cfg.local_epochs > 1:
            loss_fn = functools.partial(dar_loss, gamma=float(self.params["dar_gamma"]),
                                        form=self.params["dar_form"])
            own_buffers = bool(first.buffers.numel()) and engine.masked  # BatchNorm statistics go on from epoch 1
            later = [LocalPlan(p.later, loss_fn=loss_fn, mask=masks[j], start_params=rows[j],
                               start_buffers=first.buffers[j] if own_buffers else None,
                               start_velocity=None if first.velocity is None else first.velocity[j])
                     for j, p in enumerate(plans)]
            rest = engine.train(later, run.global_params, run.global_buffers, cfg.lr, cfg.momentum, cfg.weight_decay)
            params, buffers = rest.params, rest.buffers
            losses = [(a * s + b * t) / (s + t) for a, s, b, t in zip(losses, steps, rest.mean_loss, rest.steps)]
            steps = [s + t for s, t in zip(steps, rest.steps)]
        extras = [{"mask": masks[j], "pruned_fraction": n / max(total, 1)} for j, (_, n, total) in enumerate(pruned)]
        return StackedUpdates(clients, params, buffers, [self.update_weight(run, k) for k in clients], losses, steps,
                              first.num_samples, extras=extras)

    def _measure(self, run: RunState, ratio: float) -> dict:
        """Parameters and MACs of the model pruned at ``ratio`` (counts depend on the ratio only), the
        parameters its mask keeps and Table 5's dense-equivalent FLOPs."""
        from hetbench.train.models.profile import dense_equivalent_flops, profile

        d = run.data
        flat = run.ws.flat
        saved = flat.params.clone()
        mask = l1_channel_mask(flat.params, self.groups, ratio)[0]
        with torch.no_grad():
            flat.params.mul_(mask)
        try:
            out = profile(run.ws.model, d.in_channels, d.image_size, live_only=True)
        finally:
            flat.load(saved)
        out["mask_parameters"] = int(mask.sum())  # parameters M keeps: DapperFL Table 5's #Para
        out["flops_dense_equivalent"] = dense_equivalent_flops(self.dense_macs, ratio)  # Table 5's FLOPs
        return out

    def begin_round(self, run: RunState, round_index: int) -> None:
        super().begin_round(run, round_index)
        self._pruned: list[float] = []

    def accumulate(self, run: RunState, round_index: int, update: ClientUpdate) -> None:
        mask = update.extra.pop("mask")
        fraction = float(update.extra.pop("pruned_fraction"))
        self.achieved[self.ratio_of(update.client)] = fraction  # the same for every client of a level
        self._pruned.append(fraction)
        update.params = recover(update.params, mask, run.global_params)  # Eq. 6
        super().accumulate(run, round_index, update)  # Eq. 7 weights |D_i|

    def end_round(self, run: RunState, round_index: int) -> None:
        super().end_round(run, round_index)
        p = self.params
        run.record("fusion_alpha", round(fusion_factor(round_index, p["alpha0"], p["alpha_min"], p["fusion_eps"]), 6))
        run.record("pruned_fraction", round(sum(self._pruned) / len(self._pruned), 6) if self._pruned else None)

    def client_footprints(self, run: RunState) -> dict[str, list]:
        """Per client: the pruned model's structural ``parameters`` and ``macs`` (dead channels removed from
        both sides of every layer: about (1 - rho)^2 x dense), ``mask_parameters`` (Table 5's #Para),
        ``flops_dense_equivalent`` (Table 5's FLOPs: (1 - rho) x the dense model's MACs, which is what the
        paper counts as FLOPs) and ``pruning_ratio``."""
        fps = [self.footprint[self.ratio_of(k)] for k in range(run.data.num_clients)]
        return {
            "parameters": [int(fp["parameters"]) for fp in fps],
            "macs": [int(fp["macs"]) for fp in fps],
            "mask_parameters": [int(fp["mask_parameters"]) for fp in fps],
            "flops_dense_equivalent": [int(fp["flops_dense_equivalent"]) for fp in fps],
            "pruning_ratio": [self.ratio_of(k) for k in range(run.data.num_clients)],
        }
