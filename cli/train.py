"""``hetbench train``: score FL algorithms on a published split with the reference trainer."""

from __future__ import annotations

import math
from typing import Any

import click

from hetbench.errors import HetbenchError
from hetbench.naming import default_out_dir

# where `hetbench partition dirichlet` puts its default (builtin:digits, client scheme, alpha 0.5, 10 clients)
DEFAULT_SPLIT = default_out_dir("builtin:digits", "dirichlet-client-a0.5-n10", 0)


def _int_list(text: str, flag: str) -> list[int]:
    try:
        values = [int(s) for s in text.replace(" ", "").split(",") if s]
    except ValueError as exc:
        raise HetbenchError(f"{flag} must be an integer or a comma-separated list of integers (got '{text}')") from exc
    if not values:
        raise HetbenchError(f"{flag} is empty")
    return values


def _float_list(text: str | None, flag: str) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(float(s) for s in text.replace(" ", "").split(",") if s)
    except ValueError as exc:
        raise HetbenchError(f"{flag} must be a comma-separated list of numbers (got '{text}')") from exc
    return values  # the range is checked where the algorithm is made


def _default_split(quiet: bool) -> str:
    """The embedded default: the label-Dirichlet split of the built-in digits, built once if missing."""
    if (DEFAULT_SPLIT / "hetbench.json").is_file():
        return str(DEFAULT_SPLIT)
    from hetbench.partitioners import DirichletPartitioner
    from hetbench.publish import publish_split
    from hetbench.sources import load_table
    from hetbench.splits import build_split

    table = load_table("builtin:digits", None, None)
    fs = build_split(table, DirichletPartitioner(10, 0.5, "client", None, 0), 0, None, 0.2)
    publish_split(fs, DEFAULT_SPLIT, name=DEFAULT_SPLIT.name, overwrite=False, quiet=quiet)
    if not quiet:
        click.echo(f"no --split given: built the embedded default {DEFAULT_SPLIT}", err=True)
    return str(DEFAULT_SPLIT)


def _check_positive(**values: Any) -> None:
    for flag, v in values.items():
        if v is not None and not (math.isfinite(v) and v > 0):
            raise HetbenchError(f"--{flag.replace('_', '-')} must be a positive number (got {v})")


@click.command("train")
@click.option("--split", default=None, help="Built split folder or hub id (default: the embedded digits Dirichlet split, "
              "built on first use).")
@click.option("--algo", default="fedavg", show_default=True,
              help="Algorithm or comma list: fedavg, fedavgm, fedprox, scaffold, qfedavg, fedir, fedvc, heteroswitch, "
              "dapperfl, central.")
@click.option("--rounds", default=20, show_default=True, type=int, help="Communication rounds.")
@click.option("--clients-per-round", default=10, show_default=True, type=int, help="Clients selected per round (K).")
@click.option("--local-epochs", default=1, show_default=True, type=int, help="Local epochs per round (E).")
@click.option("--batch-size", default=32, show_default=True, type=int, help="Local mini-batch size (B).")
@click.option("--lr", default=0.05, show_default=True, type=float, help="Client learning rate.")
@click.option("--momentum", default=0.0, show_default=True, type=float, help="Client SGD momentum.")
@click.option("--weight-decay", default=0.0, show_default=True, type=float, help="Client weight decay.")
@click.option("--model", default="auto", show_default=True,
              help="digits-cnn | lenet | resnet10 | resnet18 | mobilenetv3-small | auto (by image size: <=16 px "
              "digits-cnn, <=48 px lenet, else resnet10).")
@click.option("--norm", type=click.Choice(["group", "batch", "none"]), default="group", show_default=True,
              help="Normalisation layers (GroupNorm after Hsu et al. 2020).")
@click.option("--image-size", default=None, type=int, help="Resize images to this side (default: keep their size).")
@click.option("--group-by", default=None,
              help="Test groups: a column (device, domain, s2_cell, user_id, ...), client_id, or all (default: the "
              "first of device/domain/s2_cell/user_id the split has, else client_id, else all).")
@click.option("--seed", default="0", show_default=True, help="Seed, or comma list of seeds (one run each).")
@click.option("--eval-every", default=1, show_default=True, type=int, help="Evaluate every N rounds (and the last).")
@click.option("--target-accuracy", default=None, type=float,
              help="Accuracy (percent) for rounds-to-target (default: 90%% of the centralised run when it runs too).")
@click.option("--server-lr", default=None, type=float, help="Server learning rate (FedAvg family, SCAFFOLD; default 1).")
@click.option("--server-momentum", default=None, type=float, help="Server momentum beta (FedAvgM 0.9; FedIR/FedVC 0).")
@click.option("--mu", default=None, type=float, help="FedProx proximal weight (default 0.1).")
@click.option("--q", "q", default=None, type=float, help="q-FedAvg fairness exponent (default 1e-6).")
@click.option("--vc-size", default=None, type=int, help="FedVC examples per virtual client N_VC (default 256).")
@click.option("--ema-alpha", default=None, type=float, help="HeteroSwitch loss EMA factor (default 0.9).")
@click.option("--wb-degree", default=None, type=float, help="HeteroSwitch random white-balance degree (default 0.001).")
@click.option("--gamma-degree", default=None, type=float, help="HeteroSwitch random gamma degree (default 0.9).")
@click.option("--alpha0", default=None, type=float, help="DapperFL initial fusion factor (default 0.9).")
@click.option("--alpha-min", default=None, type=float, help="DapperFL minimum fusion factor (default 0.1).")
@click.option("--fusion-eps", default=None, type=float, help="DapperFL fusion decay epsilon (default 0.2).")
@click.option("--dar-gamma", default=None, type=float, help="DapperFL DAR weight gamma (default 0.01).")
@click.option("--pruning-ratios", default=None, help="DapperFL pruning ratio per device level (default 0,0.2,0.4,0.6,0.8).")
@click.option("--workers", default=None, type=int,
              help="Clients trained in parallel threads, one torch thread each (default: one per core); results "
              "do not depend on it.")
@click.option("--threads", default=None, type=int, help="Torch threads for the centralised run and evaluation "
              "(default: all cores).")
@click.option("--out", default="hetbench_results", show_default=True, type=click.Path(file_okay=False),
              help="Results folder; one JSON per split, algorithm and seed.")
@click.option("--overwrite", is_flag=True, help="Replace existing result files.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")
def train(split: str | None, algo: str, seed: str, threads: int | None, out: str, overwrite: bool, quiet: bool,
          pruning_ratios: str | None, **opts: Any) -> None:
    """Simulate federated training of one or more algorithms on a split; write one results JSON per run.

    \b
    Examples:
      hetbench train
      hetbench train --split demo_out/iso-isp-wb-tone --algo fedavg,fedprox,heteroswitch --image-size 32
      hetbench train --split demo_out/digits-domains --algo central,fedavg,dapperfl --seed 0,1,2
      hetbench leaderboard hetbench_results --out leaderboard
    """
    from hetbench.train.algorithms import TrainConfig, make_algorithm

    names = [a.strip().lower() for a in algo.split(",") if a.strip()]
    if not names:
        raise HetbenchError("--algo is empty")
    if len(set(names)) != len(names):
        raise HetbenchError(f"--algo names an algorithm twice ('{algo}')")
    _check_positive(threads=threads)
    seeds = _int_list(seed, "--seed")
    hyper = {k: opts.pop(k) for k in ("server_lr", "server_momentum", "mu", "q", "vc_size", "ema_alpha", "wb_degree",
                                       "gamma_degree", "alpha0", "alpha_min", "fusion_eps", "dar_gamma")}
    hyper["pruning_ratios"] = _float_list(pruning_ratios, "--pruning-ratios")
    algos = {a: make_algorithm(a, **hyper) for a in names}  # unknown names and bad values fail here
    TrainConfig(seed=seeds[0], **opts).check()
    if "central" in names:  # first, so the others get relative accuracy and a default target
        names = ["central"] + [a for a in names if a != "central"]

    import torch

    if threads:
        torch.set_num_threads(threads)
    from hetbench.train.data import load_federated
    from hetbench.train.results import check_free, result_path, write_result

    split_path = split if split is not None else _default_split(quiet)
    data = load_federated(split_path, opts["image_size"], opts["group_by"], quiet=quiet)
    paths = {
        (a, s): result_path(out, data.name, a, algos[a].params, type(algos[a]).defaults, s) for a in names for s in seeds
    }
    check_free(list(paths.values()), overwrite)
    summaries = []
    for s in seeds:
        central_acc = None
        for a in names:
            algorithm = make_algorithm(a, **hyper)  # fresh state per run
            config = TrainConfig(seed=s, **opts)
            doc = _run_one(data, algorithm, config, central_acc, quiet)
            if a == "central":
                central_acc = doc["final"]["accuracy"]
            write_result(doc, paths[(a, s)])
            summaries.append((a, s, doc, paths[(a, s)]))
    if not quiet:
        _print_summary(data, summaries)


def _run_one(data, algorithm, config, central_acc, quiet: bool) -> dict:
    from hetbench.progress import progress_bar
    from hetbench.train.simulation import run_training

    with progress_bar(f"{algorithm.name} s{config.seed}", config.rounds, quiet=quiet) as bar:
        return run_training(data, algorithm, config, central_accuracy=central_acc,
                            on_round=lambda r, s: bar.update(advance=1))


def _print_summary(data, summaries: list) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{data.name}: {data.num_clients} clients, groups by {data.group_by}")
    for col in ("algorithm", "seed", "accuracy", "worst group", "variance", "rel. acc.", "wall s"):
        t.add_column(col, no_wrap=True)
    for a, s, doc, path in summaries:
        f = doc["final"]
        rel = f.get("relative_accuracy")
        t.add_row(a, str(s), f"{f['accuracy']:.2f}", f"{f['worst_group_accuracy']:.2f}",
                  f"{f['group_accuracy_variance']:.2f}", "—" if rel is None else f"{rel:.3f}",
                  f"{doc['timing']['wall_time_s']:.1f}")
    console = Console(stderr=False)
    console.print(t)
    folders = sorted({str(path.parent) for *_, path in summaries})
    console.print(f"results in {', '.join(folders)}", soft_wrap=True)
