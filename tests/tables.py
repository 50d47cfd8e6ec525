"""In-memory sample tables for unit and property tests."""

from __future__ import annotations

import datasets
import numpy as np

from hetbench.table import SampleTable


def make_table(labels, num_classes=None, users=None, test_labels=None, test_users=None, features=None) -> SampleTable:
    """A SampleTable over in-memory ``datasets.Dataset`` splits (``train`` and optionally ``test``)."""
    labels = np.asarray(labels, dtype=np.int64)
    if num_classes is None:
        num_classes = int(labels.max()) + 1 if labels.size else 1
    cols = {"label": labels.tolist()}
    if users is not None:
        cols["user"] = list(users)
    splits = {"train": datasets.Dataset.from_dict(cols)}
    lab = {"train": labels}
    if test_labels is not None:
        test_labels = np.asarray(test_labels, dtype=np.int64)
        tcols = {"label": test_labels.tolist()}
        if test_users is not None:
            tcols["user"] = list(test_users)
        splits["test"] = datasets.Dataset.from_dict(tcols, features=features)
        lab["test"] = test_labels
    return SampleTable(
        splits=splits,
        label_column="label",
        class_names=[f"c{i}" for i in range(num_classes)],
        labels=lab,
        source={"dataset": "mem"},
    )
