"""DapperFL's per-client footprint (Jia et al., NeurIPS 2024, Table 5): parameters and FLOPs at each
pruning ratio, counted on the trainer's own model and pruning code; no training.

For each ratio rho the model is built (:func:`hetbench.train.models.build_model`) and pruned by DapperFL's
channel-wise L1 mask (:func:`hetbench.train.algorithms.channel_pruning.l1_channel_mask` over
:func:`~hetbench.train.algorithms.channel_pruning.prune_groups`), exactly as the trainer's dapperfl algorithm does.

- #Para is the number of parameters the mask keeps (``mask_parameters`` in the results), as the paper
  counts it.
- FLOPs are what a client running the pruned network computes: the mask applied, the model is profiled
  with its pruned channels removed (:func:`hetbench.train.models.profile.profile` with ``live_only=True``:
  a pruned output channel also removes the next layer's input channel), giving its structural
  multiply-accumulates, which fall roughly as (1 - rho)^2.

The paper's FLOPs column is (1 - rho) x the dense model's count (203.34M = 0.8 x 254.2M): arithmetic on the
dense cost, neither what a masked client computes (it multiplies by its zeros: the dense cost) nor what the
pruned network costs. That number (``flops_dense_equivalent``) is reported in the facts, with how close the
paper's column is to it, and is never what the FLOPs check measures: a check of it would only re-derive the
paper's arithmetic. The counts do not depend on the weights' values beyond which channels the L1 norm
drops, so one seed is enough.
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

    from hetbench.train.algorithms.channel_pruning import l1_channel_mask, prune_groups
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
        "flops": "multiply-accumulates per image of the pruned network a client runs, its pruned channels "
                 "removed with the next layer's inputs they fed (against Table 5's FLOPs)",
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
                "flops": Measurement([[v] for v in fp["structural_macs"]], x=ratios,
                                     published=[float(v) for v in settings["published_flops"]],
                                     unit="multiply-accumulates of the pruned network", labels=labels),
            },
            axes={"parameters": Axes("pruning ratio rho", "parameters per client (millions)", scale=1e6),
                  "flops": Axes("pruning ratio rho", "pruned network's MACs per image (millions)", scale=1e6)},
            facts={"model": settings["model"], "input": f"{settings['in_channels']} x {settings['image_size']}^2",
                   "classes": settings["num_classes"], "dense_parameters": fp["dense_parameters"],
                   "dense_macs": fp["dense_macs"], "seed": ctx.seeds[0],
                   "structural_parameters": fp["structural_parameters"],
                   "structural_macs_over_dense": [round(v / fp["dense_macs"], 4) for v in fp["structural_macs"]],
                   "flops_dense_equivalent": fp["flops_dense_equivalent"],
                   "published_flops_over_dense_equivalent": [
                       round(p / d, 4) for p, d in zip(settings["published_flops"], fp["flops_dense_equivalent"])],
                   "flops_note": "Table 5's FLOPs are (1 - rho) x the dense model's MACs (flops_dense_equivalent; "
                                 "the ratio above): the dense cost scaled, not the pruned network's cost, which "
                                 "is what the flops check measures",
                   "uncertainty": "none: deterministic counts (they do not depend on the weights)"},
        )
