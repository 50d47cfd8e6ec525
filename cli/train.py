"""``hetbench train``: score FL algorithms on a published split with the reference trainer."""

from __future__ import annotations

from typing import Any

import click

from hetbench.errors import HetbenchError


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


def hyper_params() -> list[click.Option]:
    """One flag per hyper-parameter any algorithm declares (``hetbench.train.algorithms.hyper_options``),
    help and defaults from the declarations: an option exists only in its algorithm's module."""
    from hetbench.train.algorithms import hyper_options

    out = []
    for name, takers in hyper_options().items():
        spec = takers[0][1]
        helps = list(dict.fromkeys(s.help for _, s in takers))  # one sentence per meaning (--server-lr: FedAvg's, eta)
        defaults = {}
        for algo, s in takers:
            shown = ",".join(f"{v:g}" for v in s.default) if s.sequence else s.default
            defaults.setdefault(str(shown), []).append(algo)
        said = "; ".join(f"{'/'.join(algos)} {value}" for value, algos in defaults.items())
        kind: Any = str if spec.sequence else click.Choice(spec.choices) if spec.choices else int if spec.integer else float
        out.append(click.Option([spec.flag(name), name], default=None, type=kind,
                                show_default=False, help=f"{' '.join(helps)} Default: {said}."))
    return out


class WithHyperOptions(click.Command):
    """A command whose algorithm flags, and the algorithm list of its ``--algo`` help (``{algorithms}``),
    are made from the algorithms' registry and declarations when it first parses or shows help (importing
    the algorithms imports torch: ``hetbench --help`` and the other commands do not pay for it)."""

    hyper_after = "target_accuracy"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Import the ``--algo package.module:Class`` plugins first, so that their hyper-parameters are flags."""
        for i, arg in enumerate(args):
            value = args[i + 1] if arg == "--algo" and i + 1 < len(args) else arg[7:] if arg.startswith("--algo=") else ""
            if ":" in value:
                from hetbench.train.algorithms import load_algorithm

                for item in (v.strip() for v in value.split(",")):
                    if ":" in item:
                        load_algorithm(item)
        return super().parse_args(ctx, args)

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if not getattr(self, "_hyper_added", False):
            from hetbench.train.algorithms import ALGORITHMS

            names = ALGORITHMS.names()
            for p in self.params:
                if p.name == "algo" and "{" in (p.help or ""):  # {algorithms}: all; {federated}: all but central
                    p.help = p.help.format(algorithms=", ".join(names),
                                           federated=", ".join(n for n in names if n != "central"))
            self._hyper_added = True
        have = {q.name for q in self.params}
        new = [p for p in hyper_params() if p.name not in have]  # the algorithms' flags; a plugin's once imported
        if new:
            at = next(i for i, p in enumerate(self.params) if p.name == self.hyper_after) + 1
            self.params[at:at] = new
        return super().get_params(ctx)


def split_hyper(opts: dict[str, Any]) -> dict[str, Any]:
    """Take the algorithm options out of a command's ``opts`` (comma lists parsed)."""
    from hetbench.train.algorithms import hyper_options

    hyper = {}
    for name, takers in hyper_options().items():
        value = opts.pop(name, None)
        if value is not None and takers[0][1].sequence:
            value = _float_list(value, takers[0][1].flag(name))
        hyper[name] = value
    return hyper


@click.command("train", cls=WithHyperOptions, short_help="Simulate FL algorithms on a split; one results JSON per run.")
@click.option("--split", default=None, help="Built split folder or hub id (default: the embedded digits Dirichlet split, "
              "built on first use).")
@click.option("--algo", default="fedavg", show_default=True,
              help="Algorithm or comma list: {algorithms}.")
@click.option("--rounds", default=20, show_default=True, type=int, help="Communication rounds.")
@click.option("--clients-per-round", default=10, show_default=True, type=int, help="Clients selected per round (K).")
@click.option("--local-epochs", default=None, type=int, help="Local epochs per round (E; default 1, dapperfl 5 as in "
              "its paper's Table 4).")
@click.option("--batch-size", default=32, show_default=True, type=int, help="Local mini-batch size (B).")
@click.option("--lr", default=None, type=float, help="Client learning rate (default 0.05; scaffold 0.02; with server "
              "momentum beta (fedavgm 0.9) (1 - beta) x 0.05, Hsu et al.'s effective rate: fedavgm 0.005).")
@click.option("--momentum", default=0.0, show_default=True, type=float, help="Client SGD momentum.")
@click.option("--weight-decay", default=0.0, show_default=True, type=float, help="Client weight decay.")
@click.option("--model", default="auto", show_default=True,
              help="digits-cnn | lenet | resnet10 | resnet18 | mobilenetv3-small | auto (by image size: <=16 px "
              "digits-cnn, <=48 px lenet, else resnet10).")
@click.option("--norm", type=click.Choice(["group", "batch", "none"]), default=None,
              help="Normalisation layers (default group, after Hsu et al. 2020; fedbn batch, as in its paper).")
@click.option("--image-size", default=None, type=int, help="Resize images to this side (default: keep their size).")
@click.option("--group-by", default=None,
              help="Test groups: a column (device, domain, s2_cell, user_id, ...), client_id, or all (default: the "
              "first of device/domain/s2_cell/user_id the split has, else client_id, else all).")
@click.option("--seed", default="0", show_default=True, help="Seed, or comma list of seeds (one run each).")
@click.option("--eval-every", default=1, show_default=True, type=int, help="Evaluate every N rounds (and the last).")
@click.option("--eval-from", default=1, show_default=True, type=int,
              help="The first round evaluated: a run whose curve does not matter, only its final statistics (the "
              "mean of the last --last-k evaluations), skips the test passes before it.")
@click.option("--target-accuracy", default=None, type=float,
              help="Accuracy (percent) for rounds-to-target (default: 90% of the centralised run when it runs too).")
@click.option("--workers", default=None, type=int,
              help="Clients trained in parallel threads, one torch thread each (default: one per core); results "
              "do not depend on it.")
@click.option("--client-exec", type=click.Choice(["auto", "sequential", "lockstep"]), default="auto",
              show_default=True,
              help="How a round's clients train: lockstep trains them together as one batched computation "
              "(stacked models, torch.func vmap; every algorithm but central, models without dropout, --engine "
              "local); sequential one after another; auto: lockstep on a GPU, sequential on a CPU (where the "
              "arithmetic, not the dispatch, bounds a client step and lockstep is not faster). Results match to "
              "float rounding (recorded under execution in the results).")
@click.option("--threads", default=None, type=int, help="Torch threads of the runs that train serially (central, "
              "models with dropout) and their evaluation (default 1: their last bits depend on the thread count, so "
              "the default never follows the machine's load; more is faster on an idle machine). Federated runs "
              "train one client per worker thread and share the cores with the other runs live on the machine.")
@click.option("--device", default="auto", show_default=True,
              help="Where the model trains: auto (cuda when torch sees a GPU, else cpu), cpu, cuda, cuda:N or mps. "
              "A device this machine lacks is refused; CUDA runs use deterministic kernels and record the settings.")
@click.option("--amp", is_flag=True, help="Mixed precision: bfloat16 autocast on CUDA (refused on other devices; "
              "recorded in the results).")
@click.option("--cache-dir", default=None, envvar="HETBENCH_CACHE", type=click.Path(file_okay=False),
              help="Folder for the decoded-image cache, reused by later runs and every seed (default: "
              "$HETBENCH_CACHE, else $XDG_CACHE_HOME/hetbench/train or ~/.cache/hetbench/train; never inside the "
              "split folder).")
@click.option("--train-groups", default=None, metavar="G1,G2",
              help="Train only the clients whose training rows all belong to these test groups (the values of the "
              "--group-by column: devices, domains, cells, users); every group is still tested, and results give "
              "each group's accuracy drop from the trained-on ones.")
@click.option("--test-groups", default=None, metavar="G1,G2", help="Evaluate only these groups (default: all).")
@click.option("--protocol", default=None, metavar="NAME",
              help="leave-one-group-out: one training per group, on all the other groups, tested on every group "
              "(results named <algo>-logo_<held-out group>-s<seed>.json); cross-group: one training per group, on "
              "that group's clients only, tested on every group (<algo>-train_<group>-s<seed>.json; the leaderboard "
              "draws the group x group accuracy matrix).")
@click.option("--last-k", default=3, show_default=True, type=int,
              help="The stable metrics average each metric over the last K evaluations (besides the final and "
              "best-round values).")
@click.option("--checkpoint-every", default=None, type=int, metavar="K",
              help="Write a checkpoint beside each result every K rounds (deleted once the result is written), so "
              "--resume can continue a killed run.")
@click.option("--resume", is_flag=True,
              help="Continue the runs that left a checkpoint, keep the results that exist, start the rest afresh "
              "(so a killed job can be re-queued with the same command); the results equal an uninterrupted run's.")
@click.option("--skip-existing", is_flag=True,
              help="Keep the results that exist (written with the same options) and run only the missing ones.")
@click.option("--engine", type=click.Choice(["local", "flower"]), default="local", show_default=True,
              help="local: this process; flower: Flower's Simulation Runtime (Ray backend, one virtual SuperNode per "
              "client; needs pip install 'hetbench[flower]'). Same results JSON, plus engine: flower. For Flower's "
              "deployment engine see 'hetbench flower-app'.")
@click.option("--flower-actors", default=None, type=int, metavar="N",
              help="--engine flower: Ray actors running ClientApps, one CPU each (default: one per core, at most "
              "--clients-per-round).")
@click.option("--log", "log", default=None, metavar="SINKS",
              help="Per-round metrics of every run, written as the rounds happen: a comma list of csv "
              "(<result>.rounds.csv beside each result), tensorboard (<out>/tensorboard/<split folder>/<result>/; "
              "pip install 'hetbench[tensorboard]') and wandb (<out>/wandb/, offline unless WANDB_MODE is set). "
              "Default: none.")
@click.option("--out", default="hetbench_results", show_default=True, type=click.Path(file_okay=False),
              help="Results folder; one JSON per split, algorithm, group restriction and seed.")
@click.option("--overwrite", is_flag=True, help="Replace existing result files.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")
def train(split: str | None, algo: str, seed: str, threads: int | None, out: str, overwrite: bool, quiet: bool,
          train_groups: str | None, test_groups: str | None, protocol: str | None,
          resume: bool, skip_existing: bool, engine: str, flower_actors: int | None, log: str | None,
          **opts: Any) -> None:
    """Simulate federated training of one or more algorithms on a split; write one results JSON per run.

    \b
    Examples:
      hetbench train
      hetbench train --split demo_out/iso-isp-wb-tone --algo fedavg,fedprox,heteroswitch --image-size 32
      hetbench train --split demo_out/iso-isp-wb-tone --train-groups baseline --algo central,fedavg,heteroswitch
      hetbench train --split demo_out/digits-domains --algo central,fedavg,dapperfl --protocol leave-one-group-out
      hetbench train --split demo_out/digits-domains --seed 0,1,2 --checkpoint-every 5 --resume
      hetbench train --algo fedavg,scaffold --engine flower --flower-actors 2
      hetbench train --algo fedavg --rounds 50 --log csv,tensorboard
      hetbench leaderboard hetbench_results --out leaderboard
    """
    from hetbench.sweep import sweep
    from hetbench.train.algorithms import TrainConfig
    from hetbench.train.groups import parse_groups

    seeds = _int_list(seed, "--seed")
    hyper = split_hyper(opts)
    config = TrainConfig(seed=seeds[0], train_groups=parse_groups(train_groups, "--train-groups"),
                         test_groups=parse_groups(test_groups, "--test-groups"), **opts)
    runs = sweep(split, algo, seeds, config, hyper=hyper, out=out, overwrite=overwrite, quiet=quiet,
                 threads=threads, protocol=protocol, skip_existing=skip_existing, resume=resume, engine=engine,
                 flower_actors=flower_actors, log=log)
    if not quiet:
        _print_summary(runs)


def _cell(value: Any, fmt: str = ".2f") -> str:
    return "—" if value is None else format(value, fmt)


def _print_summary(runs: list) -> None:
    from rich.console import Console
    from rich.table import Table

    split = runs[0].doc["split"]
    grouped = any(run.groups for run in runs)  # then each run has its own clients
    clients = "" if grouped else f"{split['num_clients']} clients, "
    t = Table(title=f"{split['name']}: {clients}groups by {split['group_by']}")
    k = next((run.doc["final"]["last_k"]["k"] for run in runs if "k" in run.doc["final"].get("last_k", {})), None)
    columns = ["algorithm", *(["groups", "clients"] if grouped else []), "seed", "accuracy", f"mean last {k or 'k'}", "best",
               "worst group", "variance", *(["trained-on", "unseen", "drop"] if grouped else []), "rel. acc.", "wall s"]
    for col in columns:
        t.add_column(col, no_wrap=True)
    for run in runs:
        f = run.doc["final"]
        best = (f.get("best") or {}).get("accuracy") or {}
        row = [run.algorithm + (" (kept)" if run.skipped else " (resumed)" if run.resumed
                                else " (afresh: no checkpoint)" if run.afresh else ""),
               *([run.groups or "all", str(run.doc["split"]["num_clients"])] if grouped else []), str(run.seed), _cell(f["accuracy"]),
               _cell((f.get("last_k") or {}).get("accuracy")), _cell(best.get("value")),
               _cell(f["worst_group_accuracy"]), _cell(f["group_accuracy_variance"]),
               *([_cell(f.get(m)) for m in ("trained_on_accuracy", "unseen_accuracy", "mean_drop")] if grouped else []),
               _cell(f.get("relative_accuracy"), ".3f"), _cell(run.doc.get("timing", {}).get("wall_time_s"), ".1f")]
        t.add_row(*row)
    console = Console(stderr=False)
    if not console.is_terminal:  # a log file or a pipe: the whole table, never cut to 80 columns
        console = Console(stderr=False, width=1000)  # a table keeps its natural width: wide enough for every cell
    console.print(t)
    folders = sorted({str(run.path.parent) for run in runs})
    console.print(f"results in {', '.join(folders)}", soft_wrap=True)
