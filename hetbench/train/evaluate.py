"""Test metrics of the global model, per group and per client.

HeteroSwitch (Table 4, sec. 6) scores fairness by the variance of accuracy across device types and
domain generalisation by the worst-case accuracy across them; both are computed here over the split's
groups (device / domain / s2_cell / user_id, or clients). Accuracies are percentages, the variance is in
percent squared (population variance over groups), as in the paper's table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from hetbench.train.data import FederatedData, read_rows
from hetbench.train.device import autocast, to_device


@dataclass
class Evaluation:
    accuracy: float  # over all test rows (weighted by samples)
    loss: float
    group_accuracy: np.ndarray  # one per group that has test rows, percent
    client_accuracy: np.ndarray | None  # one per client that has a defined accuracy, percent

    @property
    def worst_group_accuracy(self) -> float:
        return float(self.group_accuracy.min())

    @property
    def group_accuracy_variance(self) -> float:
        return float(self.group_accuracy.var())

    def summary(self) -> dict[str, float | None]:
        ca = self.client_accuracy
        has = ca is not None and ca.size > 0
        return {
            "accuracy": round(self.accuracy, 4),
            "client_accuracy": round(float(ca.mean()), 4) if has else None,
            "worst_group_accuracy": round(self.worst_group_accuracy, 4),
            "group_accuracy_variance": round(self.group_accuracy_variance, 4),
            "client_accuracy_p10": round(float(np.percentile(ca, 10)), 4) if has else None,
            "client_accuracy_p90": round(float(np.percentile(ca, 90)), 4) if has else None,
            "loss": round(self.loss, 6),
        }


@torch.no_grad()
def predict_range(model: torch.nn.Module, data: FederatedData, mean: torch.Tensor, std: torch.Tensor, start: int,
                  stop: int, batch: int = 512, amp: bool = False) -> tuple[np.ndarray, list[float]]:
    """(correct per test row in [start, stop) as a bool array, summed cross-entropy of every batch).

    The test rows are read ``batch`` at a time from ``data.x_test`` (a memory map) and evaluated on the
    device of ``mean`` (the model's), under bf16 autocast when ``amp``. The losses come per batch, so a
    caller that splits the rows into ranges can add them up in the same order as one range would.
    """
    device = mean.device
    pin = device.type == "cuda"
    was_training = model.training
    model.eval()
    correct = np.zeros(stop - start, dtype=bool)
    losses: list[float] = []
    for a in range(start, stop, batch):
        b = min(a + batch, stop)
        x = to_device(read_rows(data.x_test, a, b, pin), device).float().div_(255.0)
        y = to_device(data.y_test[a:b], device)
        with autocast(device, amp):
            logits = model((x - mean) / std)
            losses.append(float(F.cross_entropy(logits, y, reduction="sum")))
        correct[a - start : b - start] = (logits.argmax(1) == y).cpu().numpy()
    model.train(was_training)
    return correct, losses


def metrics_from_correct(correct: np.ndarray, loss: float, data: FederatedData) -> Evaluation:
    """Group and client accuracies from per-row correctness.

    A client's accuracy is measured on its own test rows when the split has per-client test data;
    otherwise, when all its training rows come from one group, it is that group's accuracy; otherwise it
    is undefined (``client_accuracy`` is None).
    """
    ng = len(data.group_names)
    counts = np.bincount(data.test_group, minlength=ng)
    hits = np.bincount(data.test_group, weights=correct.astype(np.float64), minlength=ng)
    group_acc = 100.0 * hits / np.maximum(counts, 1)
    group_acc = group_acc[counts > 0] if (counts == 0).any() else group_acc
    client_acc = None
    own = data.test_client >= 0
    if own.any():
        nc = data.num_clients
        c_counts = np.bincount(data.test_client[own], minlength=nc)
        c_hits = np.bincount(data.test_client[own], weights=correct[own].astype(np.float64), minlength=nc)
        client_acc = 100.0 * c_hits[c_counts > 0] / c_counts[c_counts > 0]
    elif (data.client_group >= 0).all():
        full = 100.0 * hits / np.maximum(counts, 1)
        client_acc = full[data.client_group]
    return Evaluation(
        accuracy=100.0 * float(correct.mean()) if correct.size else 0.0,
        loss=loss,
        group_accuracy=group_acc,
        client_accuracy=client_acc,
    )


def per_group(data: FederatedData, correct: np.ndarray) -> dict[str, dict]:
    """{group name: {accuracy, num_test}} for the results file."""
    ng = len(data.group_names)
    counts = np.bincount(data.test_group, minlength=ng)
    hits = np.bincount(data.test_group, weights=correct.astype(np.float64), minlength=ng)
    return {
        name: {"accuracy": round(100.0 * float(hits[i]) / max(int(counts[i]), 1), 4), "num_test": int(counts[i])}
        for i, name in enumerate(data.group_names)
    }
