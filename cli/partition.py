"""``hetbench partition <method>``: partition a source table and publish the split."""

from __future__ import annotations

import click

from hetbench.cli.partition_options import (
    client_holdout, clients_option, common_options, engine_options, fmt_number, noise_options, parse_sizes, with_engine,
)
from hetbench.errors import HetbenchError


@click.group(short_help="Partition a data set into clients and publish the split.")
def partition() -> None:
    """Partition a data set into clients and publish it as a Hugging Face dataset folder.

    \b
    Examples:
      hetbench partition dirichlet --alpha 0.1 --clients 20
      hetbench partition dirichlet --scheme class --alpha 0.5 --min-size 20
      hetbench partition shards --clients 50 --shards-per-client 2
      hetbench export builtin:observations --out obs.csv
      hetbench partition natural-id --dataset obs.csv --label-col species --column observer --min-samples 5
    """


@partition.command("iid", short_help="IID clients: a uniform shuffle cut into equal or given sizes.")
@clients_option
@click.option("--sizes", default=None,
              help="Comma-separated training rows per client, as the summary counts them (after --test-split client's "
              "per-client hold-out); at most the training rows, the rest dropped. Default: equal sizes.")
@common_options
def iid_cmd(clients: int, sizes: str | None):
    """Uniformly shuffled clients of equal (or given) sizes.

    Example: hetbench partition iid --clients 4 --sizes 500,400,300,200
    """
    from hetbench.partitioners import IIDPartitioner

    parsed = parse_sizes(sizes)
    if parsed is None:
        return IIDPartitioner(clients), f"iid-n{clients}"
    # --sizes count training rows: under the client policy each client's hold-out comes on top of its size
    holdout, table = client_holdout()
    return IIDPartitioner(clients, parsed, holdout), f"iid-n{clients}", None, table


@partition.command("dirichlet", short_help="Label Dirichlet skew (Hsu et al. 2019; or per class).")
@clients_option
@click.option("--alpha", "-a", default=0.5, show_default=True, type=float, help="Concentration; 0 = one class per client, inf = IID.")
@click.option("--scheme", type=click.Choice(["client", "class"]), default="client", show_default=True,
              help="client: Hsu et al. q_k ~ Dir(alpha p), fixed sizes; class: per-class shares ~ Dir(alpha) (Flower/NIID-Bench).")
@click.option("--sizes", default=None, help="--scheme client: comma-separated client sizes (default n/N each).")
@click.option("--min-size", default=0, show_default=True, type=int,
              help="--scheme class: fewest training rows per client, as the summary counts them (after --test-split "
              "client's per-client hold-out), met by a deterministic repair.")
@click.option("--partition-by", default=None, metavar="COLUMN", help="Skew clients over this column, not the label.")
@common_options
def dirichlet_cmd(clients: int, alpha: float, scheme: str, sizes: str | None, min_size: int, partition_by: str | None):
    """Label Dirichlet split (Hsu et al. 2019/2020 Appendix B, or the per-class variant).

    Example: hetbench partition dirichlet --alpha 0.1 --clients 20
    """
    from hetbench.partitioners import DirichletPartitioner

    p = DirichletPartitioner(clients, alpha, scheme, parse_sizes(sizes), min_size, partition_by=partition_by)
    tag = f"dirichlet-{scheme}-a{fmt_number(alpha)}-n{clients}" + (f"-by-{partition_by}" if partition_by else "")
    if p.scheme != "class" or p.min_size < 2:  # bad options were refused above, before the data is read
        return p, tag
    holdout, table = client_holdout()  # --min-size counts training rows: the hold-out comes on top
    return DirichletPartitioner(clients, alpha, scheme, None, min_size, holdout, partition_by), tag, None, table


@partition.command("shards", short_help="Sorted-label shards, k per client (McMahan et al. 2017).")
@clients_option
@click.option("--shards-per-client", default=2, show_default=True, type=int)
@common_options
def shards_cmd(clients: int, shards_per_client: int):
    """McMahan et al. (2017): sort by label, cut into equal shards, k shards per client.

    Example: hetbench partition shards --clients 50 --shards-per-client 2
    """
    from hetbench.partitioners import ShardsPartitioner

    return ShardsPartitioner(clients, shards_per_client), f"shards-k{shards_per_client}-n{clients}"


@partition.command("classes-per-client", short_help="Pathological split: exactly k classes per client.")
@clients_option
@click.option("--classes", "-k", "classes_per_client", default=2, show_default=True, type=int, help="Classes per client.")
@common_options
def classes_cmd(clients: int, classes_per_client: int):
    """Pathological split: every client holds exactly k classes.

    Example: hetbench partition classes-per-client --clients 20 --classes 2
    """
    from hetbench.partitioners import ClassesPerClientPartitioner

    return ClassesPerClientPartitioner(clients, classes_per_client), f"cpc-k{classes_per_client}-n{clients}"


@partition.command("natural-id", short_help="One client per value of a column (user, writer, device).")
@click.option("--column", default="label", show_default=True,
              help="Column whose values are the clients (user id, writer, device). The built-in digit sets carry no "
              "writer ids, so the default groups by label there.")
@click.option("--min-samples", default=1, show_default=True, type=int,
              help="Drop clients with fewer training rows, as the summary counts them (after --test-split client's "
              "per-client hold-out).")
@common_options
def natural_cmd(column: str, min_samples: int):
    """One client per distinct value of a column (user, writer, device), ids sorted.

    Example: hetbench partition natural-id --dataset obs.csv --label-col species --column observer
    """
    from hetbench.partitioners import NaturalIdPartitioner

    p, tag = NaturalIdPartitioner(column, min_samples), f"natural-{column}-m{min_samples}"  # bad options: refused first
    if p.min_samples < 2:
        return p, tag
    holdout, table = client_holdout()  # --min-samples counts training rows: the hold-out comes on top
    return NaturalIdPartitioner(column, min_samples, holdout), tag, None, table


@partition.command("embedding", short_help="Dirichlet over K-means clusters of embeddings (Borazjani et al.).")
@clients_option
@click.option("--alpha", "-a", default=0.1, show_default=True, type=float, help="Dirichlet concentration over clusters.")
@click.option("--clusters", "-k", default=10, show_default=True, type=int, help="K-means clusters.")
@click.option("--embedder", default="task", show_default=True,
              help="task[:EPOCHS] (a small CNN trained on the labels) | pixels[:S] | hog | color-hist | column:NAME | "
              "torchscript:PATH | torch:MODULE:FACTORY.")
@click.option("--layer", default=None, help="With torch:MODULE:FACTORY: the layer whose output is the embedding (default: penultimate).")
@click.option("--scheme", type=click.Choice(["client", "class"]), default="client", show_default=True)
@click.option("--pca-dim", default=None, type=int, help="Reduce the standardised embeddings with PCA first.")
@click.option("--min-size", default=0, show_default=True, type=int,
              help="--scheme class: fewest training rows per client (after --test-split client's per-client hold-out).")
@click.option("--kmeans", "kmeans_method", type=click.Choice(["auto", "lloyd", "minibatch"]), default="auto", show_default=True)
@engine_options
@common_options
def embedding_cmd(clients, alpha, clusters, embedder, layer, scheme, pca_dim, min_size, kmeans_method, engine, ray_address):
    """Task-specific heterogeneity (Borazjani et al.): embed, K-means, Dirichlet over clusters.

    Example: hetbench partition embedding --alpha 0.1 --clusters 10 --embedder hog
    """
    from hetbench.partitioners import EmbeddingPartitioner
    from hetbench.report.embedding import embedding_extras

    if layer is not None and not embedder.startswith("torch:"):
        raise HetbenchError("--layer applies to --embedder torch:MODULE:FACTORY")
    args = (clients, alpha, clusters, scheme, embedder, pca_dim, min_size, kmeans_method, layer)
    p, table = EmbeddingPartitioner(*args), None  # bad options: refused before the data is read
    if scheme == "class" and min_size >= 2:  # --min-size counts training rows: the hold-out comes on top
        holdout, table = client_holdout()
        p = EmbeddingPartitioner(*args, holdout_fraction=holdout)
    with_engine(p, engine, ray_address).reuse_embeddings_of(click.get_current_context().params.get("out"))  # over a build: its embeddings
    tag = f"embedding-{embedder.split(':')[0]}-k{clusters}-a{fmt_number(alpha)}-n{clients}"
    return (p, tag, embedding_extras(p)) + ((table,) if table is not None else ())


@partition.command("semantic", short_help="Per-label Gaussian mixtures matched by KL (Yuan et al. 2022).")
@clients_option
@click.option("--embedder", default="pixels", show_default=True, help="As for 'partition embedding'.")
@click.option("--layer", default=None, help="With torch:MODULE:FACTORY: the embedding layer.")
@click.option("--pca-dim", default=16, show_default=True, type=int)
@click.option("--max-iter", default=100, show_default=True, type=int, help="Gaussian-mixture EM iterations.")
@engine_options
@common_options
def semantic_cmd(clients, embedder, layer, pca_dim, max_iter, engine, ray_address):
    """Semantic split (Yuan et al., ICLR 2022): per label, a Gaussian mixture with one component
    per client over PCA-reduced embeddings; components matched across labels by KL divergence.

    Example: hetbench partition semantic --clients 10 --embedder hog
    """
    from hetbench.partitioners import SemanticPartitioner

    p = with_engine(SemanticPartitioner(clients, embedder, pca_dim, max_iter, layer=layer), engine, ray_address)
    return p, f"semantic-{embedder.split(':')[0]}-n{clients}"


@partition.command("domains", short_help="One domain per client, a fraction of its data each (DapperFL).")
@clients_option
@click.option("--fraction", default=0.01, show_default=True, type=float,
              help="Share of its domain's training data each client takes (DapperFL: 0.01 Digits, 0.2 Office-Caltech).")
@click.option("--column", default="domain", show_default=True, help="The domain column.")
@click.option("--purity", default=1.0, show_default=True, type=float, metavar="LAMBDA",
              help="Share of each client's rows from its own domain, in [1/D, 1] for D domains: 1 is one domain per "
              "client (DapperFL), 1/D a uniform mix; the rest comes from the other domains in equal shares.")
@common_options
def domains_cmd(clients, fraction, column, purity):
    """Domain split (DapperFL sec. 4.1): clients assigned to domains (every domain at least one),
    each taking a disjoint --fraction of its domain's training data; the test split stays per domain.

    Without --dataset it uses builtin:digits-domains (four digit domains made offline).

    Example: hetbench partition domains --dataset my_domains/ --clients 20 --fraction 0.01 --purity 0.5
    """
    from hetbench.partitioners import DomainsPartitioner

    tag = f"domains-f{fmt_number(fraction)}-n{clients}" + (f"-p{fmt_number(purity)}" if purity != 1.0 else "")
    return DomainsPartitioner(clients, fraction, column, purity), tag, None, "builtin:digits-domains"


@partition.command("quantity", short_help="Quantity skew: random client sizes, IID labels.")
@clients_option
@click.option("--size-dist", type=click.Choice(["dirichlet", "power-law", "lognormal"]), default="dirichlet", show_default=True,
              help="Client-size law: dirichlet (NIID-Bench q ~ Dir(beta)), power-law (Pareto, tail index beta), "
              "lognormal (sigma = beta, FedLab).")
@click.option("--beta", "-b", default=0.5, show_default=True, type=float,
              help="> 0. dirichlet and power-law: smaller = more unequal sizes; lognormal: larger = more unequal.")
@common_options
def quantity_cmd(clients: int, size_dist: str, beta: float):
    """Quantity skew (NIID-Bench sec. 3.3): random client sizes, labels IID within each client.
    Every client gets one row first; the other rows follow the drawn proportions.

    Example: hetbench partition quantity --size-dist dirichlet --beta 0.5 --clients 10
    """
    from hetbench.partitioners.quantity import QuantityPartitioner, quantity_extras

    p = QuantityPartitioner(clients, size_dist, beta)
    return p, f"quantity-{size_dist}-b{fmt_number(p.beta)}-n{clients}", quantity_extras(p)


@partition.command("feature-noise", short_help="Per-client Gaussian pixel noise, std sigma*k/N.")
@clients_option
@click.option("--sigma", default=0.1, show_default=True, type=float,
              help="Noise std of the last client on pixels in [0, 1]; client k of N (k = 1..N) gets sigma*k/N.")
@noise_options
def feature_noise_cmd(clients: int, sigma: float):
    """Noise-based feature imbalance (NIID-Bench sec. 3.2): IID equal clients, client k's images
    with Gaussian noise N(0, (sigma*k/N)^2). Shared test rows stay clean; with --test-split client a
    client's test rows carry its noise.

    Example: hetbench partition feature-noise --sigma 0.1 --clients 10
    """
    from hetbench.partitioners.noise import check_sigma

    return "feature-noise", {"num_clients": clients, "sigma": sigma}, f"feature-noise-sigma{fmt_number(check_sigma(sigma))}-n{clients}"


@partition.command("label-noise", short_help="Labels flipped to another or the next class.")
@clients_option
@click.option("--rate", default=0.2, show_default=True, type=float, help="Probability that a training label is flipped, in [0, 1].")
@click.option("--kind", type=click.Choice(["uniform", "pair"]), default="uniform", show_default=True,
              help="uniform: a uniformly random other class; pair: c -> c+1 mod C (Han et al. 2018).")
@click.option("--per-client", is_flag=True, help="Client k of N (k = 1..N) flips with rate*k/N instead of rate.")
@noise_options
def label_noise_cmd(clients: int, rate: float, kind: str, per_client: bool):
    """Label noise: IID equal clients whose training labels are flipped (uniform or pair, Han et al.
    NeurIPS 2018); the clean label is kept in the column clean_label.

    Example: hetbench partition label-noise --rate 0.2 --kind pair --clients 10
    """
    from hetbench.partitioners.noise import check_rate

    tag = f"label-noise-{kind}-r{fmt_number(check_rate(rate))}{'-pc' if per_client else ''}-n{clients}"
    return "label-noise", {"num_clients": clients, "rate": rate, "kind": kind, "per_client": per_client}, tag
