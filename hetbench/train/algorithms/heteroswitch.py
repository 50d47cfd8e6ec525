"""HeteroSwitch (Kim et al., MLSys 2024, sec. 5 and Algorithm 1 ClientUpdate).

Server: the exponential moving average of the aggregated training loss,
L_EMA,t+1 = alpha * L_cur + (1 - alpha) * L_EMA,t with alpha = 0.9 (Eq. 1, Appendix A); L_cur is the
n_k-weighted mean of the reporting clients' training losses. Before the first round there is no L_EMA:
both switches stay off in round 1 and L_EMA starts at that round's loss.

Client (Algorithm 1): L_init = L(D, W) on the client's data. Switch 1 when L_init < L_EMA (the global model
already fits this data: it is biased towards it), which turns on
  * random white balance, per image r1, r2, r3 ~ U(1 - d, 1 + d) scaling R, G, B (Eq. 2, d = 0.001), and
  * random gamma, per image gamma ~ U(1 - d, 1 + d), out = in^gamma (Eq. 3, d = 0.9),
applied to [0, 1] images afresh in every batch, and per-batch weight averaging (SWAD):
W_SWA <- (W_SWA * idx + W) / (idx + 1) after every step (line 17). L_train is the running mean of the
batch losses (line 14; the paper's "+ W" there is a typo for "+ L(b, W)"). Switch 2 when switch 1 is on
and L_train < L_EMA as well; the client then returns W_SWA instead of W (lines 22-29). The server
aggregates with FedAvg weights.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from hetbench.train.algorithms.base import ClientUpdate, RunState, StackedUpdates
from hetbench.train.algorithms.hyper import SERVER_LR, Hyper
from hetbench.train.algorithms.fedavg import FedAvg
from hetbench.train.local import dataset_loss, local_sgd
from hetbench.train.local_plan import LocalPlan, StackedResult


def ema_update(l_ema: float | None, l_cur: float, alpha: float) -> float:
    """Eq. 1; the first value seeds the average."""
    return l_cur if l_ema is None else alpha * l_cur + (1.0 - alpha) * l_ema


def switch_one(l_init: float, l_ema: float | None) -> bool:
    """Algorithm 1 lines 2-5."""
    return l_ema is not None and l_init < l_ema


def switch_two(switch1: bool, l_train: float, l_ema: float | None) -> bool:
    """Algorithm 1 lines 22-24."""
    return bool(switch1) and l_ema is not None and l_train < l_ema


def isp_draw(b: int, c: int, wb_degree: float, gamma_degree: float, gen: torch.Generator
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch's random ISP draws: per image, channel gains ``r ~ U(1 - d, 1 + d)`` ``(b, c, 1, 1)`` (Eq. 2)
    and a gamma ``~ U(1 - d, 1 + d)`` ``(b, 1, 1, 1)`` (Eq. 3), from ``gen`` (a CPU generator, so they are the
    same numbers on every device)."""
    r = 1.0 + wb_degree * (2.0 * torch.rand((b, c, 1, 1), generator=gen) - 1.0)
    gamma = 1.0 + gamma_degree * (2.0 * torch.rand((b, 1, 1, 1), generator=gen) - 1.0)
    return r, gamma


def random_isp(x01: torch.Tensor, wb_degree: float, gamma_degree: float, gen: torch.Generator) -> torch.Tensor:
    """Eq. 2 then Eq. 3 on a batch of [0, 1] images (B, C, H, W), fresh draws per image (:func:`isp_draw`,
    moved to the batch's device)."""
    r, gamma = isp_draw(x01.shape[0], x01.shape[1], wb_degree, gamma_degree, gen)
    return (x01 * r.to(x01.device)).clamp_(0.0, 1.0).pow_(gamma.to(x01.device))


class HeteroSwitch(FedAvg):
    """HeteroSwitch: clients the global model already fits train with random ISP changes and SWA.

    Switch 1 (``L_init < L_EMA``) turns on random white balance and gamma (Eq. 2, 3) and per-step weight
    averaging; switch 2 (switch 1 and ``L_train < L_EMA``) returns the averaged weights. The server
    aggregates as FedAvg and updates ``L_EMA`` (Eq. 1).

    Parameters
    ----------
    server_lr : float, default 1.0
        Server learning rate.
    ema_alpha : float, default 0.9
        EMA factor alpha of Eq. 1, in [0, 1] (Appendix A).
    wb_degree : float, default 0.001
        Random white-balance degree d of Eq. 2, in [0, 1): gains ``r ~ U(1 - d, 1 + d)`` per channel.
    gamma_degree : float, default 0.9
        Random gamma degree d of Eq. 3, in [0, 1): ``gamma ~ U(1 - d, 1 + d)`` per image.

    References
    ----------
    .. [1] G. Kim, M. Ghasemi, S. Heidari, S. Kim, Y. G. Kim, S. Vrudhula and C.-J. Wu, "HeteroSwitch:
       characterizing and taming system-induced data heterogeneity in federated learning", MLSys 2024,
       sec. 5, Eq. (1)-(3) and Algorithm 1 (ClientUpdate).

    Examples
    --------
    >>> from hetbench.train.algorithms import make_algorithm
    >>> from hetbench.train.algorithms.heteroswitch import ema_update, switch_one, switch_two
    >>> make_algorithm("heteroswitch").params
    {'server_lr': 1.0, 'ema_alpha': 0.9, 'wb_degree': 0.001, 'gamma_degree': 0.9}
    >>> ema = ema_update(ema_update(None, 2.0, 0.9), 1.0, 0.9)  # Eq. 1: 0.9 * 1.0 + 0.1 * 2.0
    >>> round(ema, 6), switch_one(0.5, ema), switch_two(True, 1.2, ema)
    (1.1, True, False)
    """

    name = "heteroswitch"
    citation = "Kim et al. 2024, HeteroSwitch: characterizing and taming system-induced data heterogeneity in FL"
    hyper = {
        "server_lr": SERVER_LR,
        "ema_alpha": Hyper(0.9, "HeteroSwitch loss EMA factor alpha (Eq. 1).", "Kim et al. 2024, Appendix A",
                           low=0.0, high=1.0),
        "wb_degree": Hyper(0.001, "HeteroSwitch random white-balance degree d (Eq. 2).", "Kim et al. 2024, Appendix A",
                           low=0.0, high=1.0, high_open=True),
        "gamma_degree": Hyper(0.9, "HeteroSwitch random gamma degree d (Eq. 3).", "Kim et al. 2024, Appendix A",
                              low=0.0, high=1.0, high_open=True),
    }
    server_to_client = ("l_ema",)

    #: local_plan asks for L_init; adjust_plan turns switch 1's random ISP (drawn as client_update draws it)
    #: and SWA on; stacked_updates applies switch 2
    stacked = True

    def setup(self, run: RunState) -> None:
        self.l_ema: float | None = None

    def isp_generator(self, run: RunState, round_index: int, client: int) -> torch.Generator:
        """The generator of a switched-on client's random ISP draws (its stream 2)."""
        return torch.Generator().manual_seed(int(run.rng(round_index, client, 2).integers(2**62)))

    def local_plan(self, run: RunState, round_index: int, client: int) -> LocalPlan:
        return LocalPlan(self.batches(run, round_index, client), loss_rows=run.data.client_rows[client])

    def adjust_plan(self, run: RunState, round_index: int, client: int, plan: LocalPlan, initial_loss: float) -> LocalPlan:
        """Switch 1 (Alg. 1 lines 2-5): random ISP on every batch, drawn in batch order, and SWA."""
        if not switch_one(initial_loss, self.l_ema):
            return plan
        gen = self.isp_generator(run, round_index, client)
        wb, gd, c = float(self.params["wb_degree"]), float(self.params["gamma_degree"]), run.data.in_channels
        return replace(plan, isp_draws=[isp_draw(b.size, c, wb, gd, gen) for b in plan.batches], average_weights=True)

    def stacked_updates(self, run: RunState, round_index: int, clients: list[int], plans: list[LocalPlan],
                        out: StackedResult) -> StackedUpdates:
        """Switch 2 (Alg. 1 lines 22-29): a switched-on client whose training loss is below L_EMA returns its
        averaged weights."""
        updates = super().stacked_updates(run, round_index, clients, plans, out)
        s1 = [p.average_weights for p in plans]
        s2 = [switch_two(a, loss, self.l_ema) for a, loss in zip(s1, out.mean_loss)]
        if any(s2):
            rows = torch.tensor(s2, device=out.params.device).unsqueeze(1)
            updates.params = torch.where(rows, out.averages, out.params)
        updates.extras = [{"switch1": a, "switch2": b, "l_init": f} for a, b, f in zip(s1, s2, out.initial_loss)]
        return updates

    def client_update(self, run: RunState, round_index: int, client: int) -> ClientUpdate:
        cfg = run.config
        ws = run.ws
        ws.flat.load(run.global_params, run.global_buffers)
        rows = run.data.client_rows[client]
        l_init = dataset_loss(ws, rows)
        ws.check_finite(l_init, "initial loss")
        s1 = switch_one(l_init, self.l_ema)
        transform = swa_step = swa = None
        if s1:
            gen = self.isp_generator(run, round_index, client)
            wb, gd = float(self.params["wb_degree"]), float(self.params["gamma_degree"])
            transform = lambda x: random_isp(x, wb, gd, gen)  # noqa: E731
            swa = ws.flat.params.clone()
            # line 17: W_SWA <- (W_SWA * idx + W) / (idx + 1) after every step
            swa_step = lambda i: swa.mul_(i / (i + 1)).add_(ws.flat.params, alpha=1.0 / (i + 1))  # noqa: E731

        result = local_sgd(
            ws, self.batches(run, round_index, client), cfg.lr, cfg.momentum, cfg.weight_decay,
            transform=transform, after_step=swa_step,
        )
        s2 = switch_two(s1, result.mean_loss, self.l_ema)
        if s2:
            ws.flat.load(swa)
        return self.make_update(run, client, result, switch1=s1, switch2=s2, l_init=l_init)

    def begin_round(self, run: RunState, round_index: int) -> None:
        super().begin_round(run, round_index)
        self._loss_sum = 0.0
        self._switch = np.zeros(2, dtype=np.int64)
        self._count = 0

    def accumulate(self, run: RunState, round_index: int, update: ClientUpdate) -> None:
        super().accumulate(run, round_index, update)
        self._loss_sum += update.weight * update.loss
        self._switch += [int(update.extra["switch1"]), int(update.extra["switch2"])]
        self._count += 1

    def end_round(self, run: RunState, round_index: int) -> None:
        wsum = self._wsum
        super().end_round(run, round_index)
        if wsum > 0:
            self.l_ema = ema_update(self.l_ema, self._loss_sum / wsum, float(self.params["ema_alpha"]))
        run.record("switch1_fraction", round(float(self._switch[0]) / max(self._count, 1), 4))
        run.record("switch2_fraction", round(float(self._switch[1]) / max(self._count, 1), 4))
        run.record("l_ema", None if self.l_ema is None else round(self.l_ema, 6))
