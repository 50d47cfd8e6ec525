"""DapperFL's per-client footprint (Jia et al., NeurIPS 2024, Table 5): parameters and FLOPs at each
pruning ratio, counted on the trainer's own model and pruning code; no training.

For each ratio rho the model is built (:func:`hetbench.train.models.build_model`), pruned by DapperFL's
channel-wise L1 mask (:func:`hetbench.train.algorithms.dapperfl.l1_channel_mask` over
:func:`~hetbench.train.algorithms.dapperfl.prune_groups`), and counted as the DapperFL algorithm counts
it in its results (``mask_parameters``: the parameters the mask keeps, Table 5's #Para;
``flops_dense_equivalent``: (1 - rho) x the dense model's multiply-accumulates, Table 5's FLOPs). It also
counts what a client running the pruned network does: the mask applied to the weights, the model is
profiled with its pruned channels removed (:func:`hetbench.train.models.profile.profile` with
``live_only=True``: a pruned output channel also removes the next layer's input channel), giving its
structural MACs and parameters, which fall roughly as (1 - rho)^2. The counts do not depend on the weights'
values beyond which channels the L1 norm drops, so one seed is enough.
"""

from __future__ import annotations

from typing import Any

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import Measurement
from hetbench.reproduce.runners.base import Axes, Context, Runner, RunOutput


def footprint(model: str, in_channels: int, num_classes: int, image_size: int, ratios: list[float],
              seed: int = 0) -> dict[str, Any]:
    """Table 5's counts of ``model`` pruned at each of ``ratios``.

    Returns
    -------
    dict
        ``dense_parameters``, ``dense_macs`` and, one per ratio, ``mask_parameters``,
        ``flops_dense_equivalent``, ``structural_macs`` and ``structural_parameters``.

    Examples
    --------
    >>> from hetbench.reproduce.runners.footprint import footprint
    >>> fp = footprint("lenet", 1, 10, 28, [0.5])
    >>> fp["mask_parameters"][0] < fp["dense_parameters"], fp["flops_dense_equivalent"][0] * 2 == fp["dense_macs"]
    (True, True)
    >>> fp["structural_macs"][0] < fp["flops_dense_equivalent"][0]  # the next layer's inputs go too
    True
    """
    import torch

    from hetbench.train.algorithms.dapperfl import l1_channel_mask, prune_groups
    from hetbench.train.flat import FlatModel
    from hetbench.train.models import build_model
    from hetbench.train.models.profile import dense_equivalent_flops, profile

    torch.manual_seed(seed)
    net = build_model(model, in_channels, num_classes, image_size)
    flat = FlatModel(net)
    groups = prune_groups(net, {id(p): span for p, span in zip(flat.param_list, flat.offsets)})
    dense = profile(net, in_channels, image_size)
    out: dict[str, Any] = {"dense_parameters": int(dense["parameters"]), "dense_macs": int(dense["macs"]),
                           "mask_parameters": [], "flops_dense_equivalent": [], "structural_macs": [],
                           "structural_parameters": []}
    weights = flat.params.clone()
    for r in ratios:
        if not 0 <= r < 1:
            raise HetbenchError(f"a pruning ratio must be in [0, 1) (got {r})")
        mask = l1_channel_mask(weights, groups, float(r))[0]
        out["mask_parameters"].append(int(mask.sum()))
        out["flops_dense_equivalent"].append(dense_equivalent_flops(dense["macs"], float(r)))
        flat.load(weights * mask)
        live = profile(net, in_channels, image_size, live_only=True)
        out["structural_macs"].append(int(live["macs"]))
        out["structural_parameters"].append(int(live["parameters"]))
    flat.load(weights)
    return out


class FootprintRunner(Runner):
    measures = {
        "parameters": "parameters DapperFL's mask keeps per client, at each pruning ratio (Table 5's #Para)",
        "flops": "(1 - rho) x the dense model's multiply-accumulates per image (Table 5's FLOPs)",
        "structural_macs": "multiply-accumulates per image of the pruned network with its pruned channels removed",
    }
    schema = {
        "model": ("str", True), "in_channels": ("int", True), "num_classes": ("int", True),
        "image_size": ("int", True), "ratios": ("numbers", True), "published_parameters": ("numbers", True),
        "published_flops": ("numbers", True),
    }

    def check_settings(self, settings: dict[str, Any], where: str) -> dict[str, Any]:
        super().check_settings(settings, where)
        n = len(settings["ratios"])
        for key in ("published_parameters", "published_flops"):
            if len(settings[key]) != n:
                raise HetbenchError(f"{where}: '{key}' needs one value per ratio ({n})")
        return settings

    def run(self, settings: dict[str, Any], ctx: Context) -> RunOutput:
        ratios = [float(r) for r in settings["ratios"]]
        fp = footprint(settings["model"], settings["in_channels"], settings["num_classes"], settings["image_size"],
                       ratios, seed=ctx.seeds[0])
        labels = [f"rho={r:g}" for r in ratios]
        return RunOutput(
            measurements={
                "parameters": Measurement([[v] for v in fp["mask_parameters"]], x=ratios,
                                          published=[float(v) for v in settings["published_parameters"]],
                                          unit="parameters", labels=labels),
                "flops": Measurement([[v] for v in fp["flops_dense_equivalent"]], x=ratios,
                                     published=[float(v) for v in settings["published_flops"]],
                                     unit="FLOPs (multiply-accumulates)", labels=labels),
                "structural_macs": Measurement([[v] for v in fp["structural_macs"]], x=ratios,
                                               published=[float(v) for v in settings["published_flops"]],
                                               unit="multiply-accumulates of the pruned network", labels=labels),
            },
            axes={"parameters": Axes("pruning ratio rho", "parameters per client (millions)", scale=1e6),
                  "flops": Axes("pruning ratio rho", "FLOPs per image (millions)", scale=1e6),
                  "structural_macs": Axes("pruning ratio rho", "pruned network's MACs per image (millions)",
                                          scale=1e6)},
            facts={"model": settings["model"], "input": f"{settings['in_channels']} x {settings['image_size']}^2",
                   "classes": settings["num_classes"], "dense_parameters": fp["dense_parameters"],
                   "dense_macs": fp["dense_macs"], "seed": ctx.seeds[0],
                   "structural_parameters": fp["structural_parameters"],
                   "structural_macs_over_dense": [round(v / fp["dense_macs"], 4) for v in fp["structural_macs"]],
                   "uncertainty": "none: deterministic counts (they do not depend on the weights)"},
        )
