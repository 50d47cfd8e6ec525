"""``hetbench flower-app``: write the Flower app project of a hetbench run, for Flower's deployment engine."""

from __future__ import annotations

from typing import Any

import click

from hetbench.cli.train import WithHyperOptions, split_hyper, train

#: the ``hetbench train`` options that describe a run (the rest, sweeps, resuming and the local engine's
#: threads, do not apply to one deployed run)
RUN_OPTIONS = ("rounds", "clients_per_round", "local_epochs", "batch_size", "lr", "momentum", "weight_decay", "model",
               "norm", "image_size", "group_by", "eval_every", "eval_from", "target_accuracy",
               "device", "amp", "cache_dir", "train_groups", "test_groups", "last_k")


def _flower_app_command(fn):
    """``fn`` as a click command with the run options of ``hetbench train`` (same flags, help and defaults)."""
    command = click.command("flower-app", cls=WithHyperOptions)(fn)
    shared = [p for p in train.params if p.name in RUN_OPTIONS]
    command.params = [*command.params, *shared]
    return command


@click.option("--split", required=True, help="Built split folder (every SuperNode and the SuperLink's ServerApp read "
              "it: a path they all see) or hub id.")
@click.option("--algo", default="fedavg", show_default=True,
              help="One algorithm: {federated}.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed.")
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Folder of the Flower app project.")
@click.option("--results", default=None, type=click.Path(dir_okay=False),
              help="Where the ServerApp writes the results JSON (default: hetbench_results/<split>-<fingerprint>/<algo>-s<seed>.json "
              "under the working directory, as hetbench train names it).")
@click.option("--node-wait", default=300.0, show_default=True, type=float,
              help="Seconds the ServerApp waits for SuperNodes serving every client.")
@click.option("--overwrite", is_flag=True, help="Replace an existing project folder.")
@click.option("--quiet", "-q", is_flag=True, help="Do not print the commands that run the project.")
def flower_app(split: str, algo: str, seed: int, out: str, results: str | None, node_wait: float, overwrite: bool,
               quiet: bool, train_groups: str | None, test_groups: str | None,
               **opts: Any) -> None:
    """Write a Flower app project (pyproject.toml) that runs one hetbench algorithm on a split with Flower's
    deployment engine: a SuperLink, one SuperNode per client (node config partition-id=K num-partitions=N), flwr run.

    \b
    Examples:
      hetbench flower-app --split hetbench_splits/digits-dirichlet-client-a0.5-n10-s0 --algo scaffold \\
          --rounds 20 --clients-per-round 4 --out flower_app
      flwr run flower_app hetbench --stream
    """
    import os
    from pathlib import Path

    from hetbench.errors import HetbenchError
    from hetbench.flower.job import FlowerJob, require_flower
    from hetbench.flower.project import deployment_commands, write_app_project
    from hetbench.train.algorithms import TrainConfig, check_models
    from hetbench.train.groups import parse_groups
    from hetbench.train.results import result_path

    require_flower()
    if not (node_wait > 0):
        raise HetbenchError(f"--node-wait must be a positive number of seconds (got {node_wait})")
    hyper = split_hyper(opts)
    config = TrainConfig(seed=seed, train_groups=parse_groups(train_groups, "--train-groups"),
                         test_groups=parse_groups(test_groups, "--test-groups"), **opts)
    split_path = os.path.abspath(split) if os.path.exists(split) else split
    job = FlowerJob.make(split_path, algo.strip().lower(), config, hyper)
    algorithm = job.algorithm()  # unknown names, central and bad hyper-parameters are refused here
    config = config.for_algorithm(algorithm).check()
    if config.model != "auto":  # before the split is read
        check_models([algorithm.name], config.model, config.norm)
    data = job.data(quiet=quiet)  # the split must load (and its groups exist) before a project is written
    check_models([algorithm.name], config.model_for(data.image_size), config.norm)  # fedbn: normalisation layers
    if results is None:
        results = str(result_path("hetbench_results", data.name, algorithm.name, algorithm.params,
                                  type(algorithm).defaults, seed, fingerprint=data.fingerprint))
    job.results = os.path.abspath(results)
    folder = write_app_project(out, job, overwrite=overwrite, wait_s=node_wait)
    if not quiet:
        click.echo(f"wrote the Flower app project {folder}/pyproject.toml ({algorithm.name} on {data.name}, "
                   f"{data.num_clients} clients; results go to {job.results})")
        click.echo("run it on Flower's deployment engine (one SuperNode per client; the servers in their own "
                   "terminals or with &):")
        for line in deployment_commands(Path(folder), data.num_clients):
            click.echo(f"  {line}")


flower_app = _flower_app_command(flower_app)
