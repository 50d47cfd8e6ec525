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

from hetbench.train.data import FederatedData, gather_rows, read_rows
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
    return predict_rows(model, data, mean, std, np.arange(start, stop), batch, amp)


def _contiguous(rows: np.ndarray) -> bool:
    return rows.size > 0 and int(rows[-1]) - int(rows[0]) == rows.size - 1 and bool((np.diff(rows) == 1).all())


@torch.no_grad()
def predict_rows(model: torch.nn.Module, data: FederatedData, mean: torch.Tensor, std: torch.Tensor,
                 rows: np.ndarray, batch: int = 512, amp: bool = False) -> tuple[np.ndarray, list[float]]:
    """As :func:`predict_range` for the test rows ``rows`` (indices, any order): (correct per row of ``rows``,
    summed cross-entropy of every batch of ``batch`` consecutive entries of ``rows``).

    A batch of consecutive rows is read as one slice of the memory map, any other is gathered
    (:func:`~hetbench.train.data.gather_rows`); either way the model sees the same rows in the same passes.
    """
    rows = np.asarray(rows, dtype=np.int64)
    device = mean.device
    pin = device.type == "cuda"
    was_training = model.training
    model.eval()
    correct = np.zeros(rows.size, dtype=bool)
    losses: list[float] = []
    for a in range(0, rows.size, batch):
        part = rows[a : a + batch]
        if _contiguous(part):
            x_u8 = read_rows(data.x_test, int(part[0]), int(part[-1]) + 1, pin)
            y = data.y_test[int(part[0]) : int(part[-1]) + 1]
        else:
            x_u8 = gather_rows(data.x_test, part, pin)
            y = data.y_test.index_select(0, torch.from_numpy(part))
        x = to_device(x_u8, device).float().div_(255.0)
        y = to_device(y, device)
        with autocast(device, amp):
            logits = model((x - mean) / std)
            losses.append(float(F.cross_entropy(logits, y, reduction="sum")))
        correct[a : a + part.size] = (logits.argmax(1) == y).cpu().numpy()
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
