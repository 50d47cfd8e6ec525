"""What every ``hetbench partition <method>`` shares: the source, output and engine options, the one run that
partitions and publishes, and the summary it prints (the commands themselves: :mod:`hetbench.cli.partition`)."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any, Callable

import click

from hetbench.cli.licence_options import licence_options
from hetbench.errors import HetbenchError
from hetbench.naming import default_out_dir
from hetbench.sources import DEFAULT_DATASET

#: the options every partition command takes (:func:`common_options`), handed to the run, not to the method
SHARED_OPTIONS = ("dataset", "label_col", "id_col", "seed", "test_split", "test_fraction", "out", "name", "overwrite",
                  "quiet", "allow_empty", "feature_embedder")


def source_options(fn: Callable) -> Callable:
    options = [
        click.option("--dataset", default=DEFAULT_DATASET, show_default=True,
                     help="builtin:digits | builtin:mnist5k | save_to_disk folder | parquet file/folder | CSV | hetbench build | hub id."),
        click.option("--label-col", default=None, help="Label column (default: 'label' or the only ClassLabel column)."),
        click.option("--id-col", default=None, help="Sample-id column recorded in the manifest (default: row index)."),
        click.option("--seed", default=0, show_default=True, type=int, help="Seed of every random choice."),
        click.option("--test-split", type=click.Choice(["global", "client", "natural"]), default=None,
                     help="global: keep the source's test split shared; client: per-client hold-out; natural: by the id column. "
                     "Default: natural for natural-id, global when the source has a test split, else client."),
        click.option("--test-fraction", default=0.2, show_default=True, type=float,
                     help="Per-client hold-out fraction with --test-split client."),
        click.option("--out", default=None, type=click.Path(file_okay=False),
                     help="Output folder (default: hetbench_splits/<dataset>-<method>-<params>-s<seed>)."),
        click.option("--name", default=None, help="Data set name in the card and manifest (default: <dataset>-<method>-<params>-s<seed>)."),
        click.option("--overwrite", is_flag=True, help="Replace --out if it exists."),
        click.option("--feature-embedder", default="auto", show_default=True, metavar="SPEC",
                     help="What the report's feature shift (each client's images against the others', class by class) "
                     "embeds the training rows with: auto (pixels:8 for image data, nothing otherwise), none, or an "
                     "--embedder spec (pixels[:S], hog, color-hist, column:NAME, ...)."),
        click.option("--allow-empty", is_flag=True,
                     help="Accept clients left with no training rows (by default an error naming how many)."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary."),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def engine_options(fn: Callable) -> Callable:
    """``--engine`` / ``--ray-address`` of the embedding step (never recorded in the split)."""
    options = [
        click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="What embeds the images: local (this process) or ray (every batch of images one Ray task; "
                     "the pixels, hog and color-hist embedders; models and columns run here). Same split either way. "
                     "pip install 'hetbench[ray]'."),
        click.option("--ray-address", default=None, metavar="ADDRESS",
                     help="With --engine ray: 'auto' joins the Ray cluster running on this machine, HOST:PORT the cluster "
                     "whose head listens there. Default: a local Ray instance on every core. Images travel by value."),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def with_engine(partitioner, engine: str, ray_address: str | None):
    from hetbench.engines import engine_spec

    partitioner.engine = engine_spec(engine, ray_address)
    return partitioner


def summary_line(out, report: dict) -> str:
    """The one line a partition command prints about the split it wrote."""
    st = report["size_stats"]
    return (f"wrote {out}: {report['num_clients']} clients, {report['num_samples']:,} training samples, "
            f"EMD {report['emd']:.3f}, sizes {st['min']:.0f}/{st['median']:.0f}/{st['max']:.0f} (min/median/max); "
            + dropped_summary(report.get("dropped") or {}))


def clients_option(fn: Callable) -> Callable:
    return click.option("--clients", "-n", default=10, show_default=True, type=int, help="Number of clients.")(fn)


def fmt_number(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:g}"


def run_partition(partitioner, tag: str, opts: dict[str, Any], extras: Callable | None = None) -> None:
    """Partition and publish through the one pipeline, print a summary."""
    from hetbench.pipeline import make_split
    from hetbench.sources import load_table

    default = default_out_dir(opts["dataset"], tag, opts["seed"])
    out = Path(opts["out"]) if opts["out"] else default
    table = opts.get("table")
    if table is None:  # the input first: a bad input is reported as such, before --out is checked
        table = load_table(opts["dataset"], opts["label_col"], opts["id_col"])
    warn_many_classes(table.num_classes, table.label_column)
    _, report = make_split(
        table, partitioner, out, label_col=opts["label_col"], id_col=opts["id_col"], seed=opts["seed"],
        test_split=opts["test_split"], test_fraction=opts["test_fraction"], name=opts["name"] or default.name,
        overwrite=opts["overwrite"], quiet=opts["quiet"], extras=extras, allow_empty=opts["allow_empty"],
        feature_embedder=opts["feature_embedder"],
    )
    if not opts["quiet"]:
        click.echo(summary_line(out, report))


def warn_many_classes(num_classes: int, label_col: str | None = None) -> None:
    """One warning line on stderr for a split of more classes than :data:`hetbench.outnames.MANY_CLASSES`
    (the card and report list every class: a million made a 27.8 MB card); nothing for fewer.

    Examples
    --------
    >>> warn_many_classes(10)
    """
    from hetbench.outnames import many_classes_warning

    warning = many_classes_warning(num_classes, label_col)
    if warning is not None:
        click.echo(f"hetbench: warning: {warning}", err=True)


def dropped_summary(dropped: dict[str, dict[str, int]]) -> str:
    """How many rows were dropped and why, summed over the splits (rows held out as test are not lost).

    Examples
    --------
    >>> dropped_summary({"train": {"remainder": 300, "class-unassigned": 12}, "test": {"filtered": 0}})
    '312 rows dropped (remainder 300, class-unassigned 12)'
    >>> dropped_summary({"train": {}})
    'no rows dropped'
    """
    by_reason: dict[str, int] = {}
    for counts in dropped.values():
        for reason, count in counts.items():
            if reason != "held-out" and count:
                by_reason[reason] = by_reason.get(reason, 0) + int(count)
    if not by_reason:
        return "no rows dropped"
    total = sum(by_reason.values())
    reasons = ", ".join(f"{r} {c:,}" for r, c in sorted(by_reason.items(), key=lambda rc: (-rc[1], rc[0])))
    return f"{total:,} row{'s' if total != 1 else ''} dropped ({reasons})"


def common_options(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> None:
        opts = {k: kwargs.pop(k) for k in SHARED_OPTIONS}
        made = fn(**kwargs)
        if len(made) > 3:  # a method's own default data set, used when --dataset was not given; or its loaded table
            source = click.get_current_context().get_parameter_source("dataset")
            if not isinstance(made[3], str):
                opts["table"] = made[3]
            elif source in (None, click.core.ParameterSource.DEFAULT):
                opts["dataset"] = made[3]
        run_partition(made[0], made[1], opts, made[2] if len(made) > 2 else None)

    return licence_options(source_options(wrapper))


def client_holdout() -> tuple[float | None, Any]:
    """(--test-fraction under the client test policy, else None; the loaded table): what turns the training rows
    --sizes, --min-samples and --min-size count into rows of the partitioned split. The client policy is
    --test-split client, or the default (or natural, which falls back to it) for a source of one split."""
    from hetbench.sources import load_table

    o = click.get_current_context().params
    table = load_table(o["dataset"], o["label_col"], o["id_col"])
    client = o["test_split"] == "client" or (o["test_split"] in (None, "natural") and len(table.split_names) == 1)
    return (o["test_fraction"] if client else None), table


def parse_sizes(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(s) for s in text.replace(" ", "").split(",") if s]
    except ValueError as exc:
        raise HetbenchError(f"--sizes must be a comma-separated list of integers (got '{text}')") from exc


def noise_options(fn: Callable) -> Callable:
    """``common_options`` for the methods whose builder rewrites rows (feature-noise, label-noise): the command
    returns (method, prepare parameters, folder tag); the builder checks --out, noises and publishes."""

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> None:
        from hetbench.builders.noise import build_noise

        opts = {k: kwargs.pop(k) for k in SHARED_OPTIONS}
        method, params, tag = fn(**kwargs)
        default = default_out_dir(opts["dataset"], tag, opts["seed"])
        out, report = build_noise(
            method, Path(opts["out"]) if opts["out"] else default, name=opts["name"] or default.name,
            overwrite=opts["overwrite"], quiet=opts["quiet"], dataset=opts["dataset"], label_col=opts["label_col"],
            id_col=opts["id_col"], seed=opts["seed"], test_split=opts["test_split"], test_fraction=opts["test_fraction"],
            allow_empty=opts["allow_empty"], feature_embedder=opts["feature_embedder"], **params,
        )
        if not opts["quiet"]:
            click.echo(summary_line(out, report))

    return licence_options(source_options(wrapper))
