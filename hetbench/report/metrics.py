"""The heterogeneity report's numbers: ``report.json`` as a pure function of client ids and labels.

:func:`compute_report` needs only per-split client ids and labels, so the same report comes from a
fresh build and from a published folder (``hetbench report <out>``). The keys are listed in
``docs/output-contract.md``; the distances are :mod:`hetbench.metrics`.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from hetbench import metrics


def _round(x: float, nd: int = 6) -> float:
    return float(round(float(x), nd))


def compute_report(
    client_ids: Mapping[str, np.ndarray],
    labels: Mapping[str, np.ndarray],
    class_names: list[str],
    client_names: list[str] | tuple[str, ...],
    dropped: Mapping[str, Mapping[str, int]] | None = None,
    train_split: str = "train",
) -> dict[str, Any]:
    """Report of the ``train_split`` (heterogeneity) and row counts of every split."""
    num_clients, num_classes = len(client_names), len(class_names)
    counts = metrics.label_matrix(client_ids[train_split], labels[train_split], num_clients, num_classes)
    sizes = counts.sum(axis=1)
    emd_pc = metrics.emd_per_client(counts)
    jsd_pc = metrics.jensen_shannon_per_client(counts)
    hel_pc = metrics.hellinger_per_client(counts)
    cpc = metrics.classes_per_client(counts)
    _, p, _ = metrics.client_distributions(counts)
    splits = {}
    for split, cids in client_ids.items():
        per_client = np.bincount(cids[cids >= 0], minlength=num_clients)
        splits[split] = {
            "num_rows": int(cids.size),
            "shared_rows": int(np.count_nonzero(cids < 0)),
            "clients_with_rows": int(np.count_nonzero(per_client)),
            "client_sizes": per_client.astype(int).tolist(),
        }
    return {
        "num_clients": num_clients,
        "num_samples": int(sizes.sum()),
        "num_classes": num_classes,
        "class_names": list(class_names),
        "client_names": list(client_names),
        "client_sizes": sizes.astype(int).tolist(),
        "size_stats": {k: _round(v) for k, v in metrics.size_stats(sizes).items()},
        "emd": _round(float((emd_pc * sizes).sum() / max(sizes.sum(), 1))),
        "emd_per_client": [_round(v) for v in emd_pc],
        "jensen_shannon": _round(float((jsd_pc * sizes).sum() / max(sizes.sum(), 1))),
        "jensen_shannon_per_client": [_round(v) for v in jsd_pc],
        "hellinger": _round(float((hel_pc * sizes).sum() / max(sizes.sum(), 1))),
        "hellinger_per_client": [_round(v) for v in hel_pc],
        "classes_per_client": cpc.astype(int).tolist(),
        "classes_per_client_stats": {k: _round(v) for k, v in metrics.size_stats(cpc).items() if k in ("min", "median", "max", "mean")},
        "empty_client_class_cells": int(np.count_nonzero(counts == 0)),
        "population_distribution": [_round(v) for v in p],
        "label_distribution": counts.astype(int).tolist(),
        "splits": splits,
        "dropped": {s: dict(d) for s, d in (dropped or {}).items()},
    }
