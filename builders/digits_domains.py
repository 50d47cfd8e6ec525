"""``hetbench build digits-domains``: DapperFL's Digits domain split on digit domains made offline.

The four domains (MNIST, USPS-like, MNIST-M-like, SYN-like) come from ``builtin:digits-domains``
(:mod:`hetbench.sources.digits_domains`); the :class:`~hetbench.partitioners.domains.DomainsPartitioner`
assigns clients to domains and gives each a disjoint ``fraction`` of its domain's training rows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hetbench.naming import SPLITS_ROOT
from hetbench.partitioners.domains import DomainsPartitioner
from hetbench.pipeline import PreparedSplit

SOURCE = "builtin:digits-domains"


def prepare_digits_domains(clients: int = 12, fraction: float = 0.1, seed: int = 0) -> PreparedSplit:
    """The domain split of the offline digit domains; not yet published.

    Parameters
    ----------
    clients : int
        Number of clients, every domain at least one.
    fraction : float
        Share of its domain's training data each client takes (DapperFL: 0.01 for Digits).
    seed : int
        Seed of every random choice.

    References
    ----------
    Jia et al., "DapperFL: Domain Adaptive Federated Learning with Model Fusion Pruning for Edge
    Devices", NeurIPS 2024, sec. 4.1 (Digits: MNIST, USPS, SVHN, SYN).

    Examples
    --------
    >>> from hetbench.builders.digits_domains import prepare_digits_domains
    >>> prepare_digits_domains(clients=8, fraction=0.05).build().num_clients
    8
    """
    from hetbench.sources import load_table

    return PreparedSplit(load_table(SOURCE), DomainsPartitioner(clients, fraction, "domain"), seed)


def build_digits_domains(
    out: str | os.PathLike | None = None, *, name: str | None = None, overwrite: bool = False, quiet: bool = False,
    clients: int = 12, fraction: float = 0.1, seed: int = 0,
) -> tuple[Path, dict[str, Any]]:
    """Build DapperFL's Digits domain split on the offline digit domains and publish it
    (``hetbench build digits-domains``); returns the folder and its report.

    The four domains (MNIST, USPS-like, MNIST-M-like, SYN-like: ``builtin:digits-domains``, 400 training
    and 100 test images each) are dealt to the clients, every domain at least one; each client takes a disjoint
    ``fraction`` of its domain's training rows, and the test split stays per domain.

    Parameters
    ----------
    out : str or os.PathLike, optional
        Output folder (default ``hetbench_splits/digits-domains-n<clients>-f<fraction>-s<seed>``).
    name : str, optional
        Data set name in the card and manifest (default: the folder's tag).
    overwrite : bool
        Replace ``out`` if it exists (default False).
    quiet : bool
        No progress bar (default False).
    clients : int
        Number of clients, at least 4 (one per domain); default 12.
    fraction : float
        Share of its domain's training data each client takes, in (0, 1]; ``clients`` times it must fit
        each domain (default 0.1; DapperFL uses 0.01 of the full Digits data sets).
    seed : int
        Seed of every random choice (default 0).

    Returns
    -------
    folder : pathlib.Path
        The published folder.
    report : dict
        Its ``report.json``.

    References
    ----------
    Jia et al., "DapperFL: Domain Adaptive Federated Learning with Model Fusion Pruning for Edge
    Devices", NeurIPS 2024, sec. 4.1 (Digits: MNIST, USPS, SVHN, SYN).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from hetbench.builders.digits_domains import build_digits_domains
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder, report = build_digits_domains(Path(tmp.name) / "dd", clients=4, fraction=0.05, quiet=True)
    >>> # 4 clients x 5 % of their domain's 400 training images; the report draws each domain's images
    >>> report["num_clients"], report["num_samples"], (folder / "plots" / "domain_samples.png").is_file()
    (4, 80, True)
    >>> tmp.cleanup()
    """
    from hetbench.atomic import locked_out

    tag = f"digits-domains-n{clients}-f{fraction:g}-s{seed}"
    prepared = prepare_digits_domains(clients, fraction, seed)  # the input first
    with locked_out(Path(out) if out else SPLITS_ROOT / tag, overwrite) as out_path:
        _, report = prepared.publish(out_path, name=name or tag, overwrite=overwrite, quiet=quiet)
    return out_path, report
