"""The dataset card (``README.md``) of a built split: Hugging Face YAML front matter + summary."""

from __future__ import annotations

from typing import Any, Mapping

import yaml


def front_matter(
    splits: list[str], features_yaml: list[dict], license: str, task: str, pretty_name: str, file_tag: str
) -> str:
    meta = {
        "pretty_name": pretty_name,
        "license": license,
        "task_categories": [task],
        "tags": ["federated-learning", "hetbench", "non-iid"],
        "configs": [
            {
                "config_name": "default",
                "default": True,
                "data_files": [{"split": s, "path": f"data/{s}-{file_tag}-*.parquet"} for s in splits],
            }
        ],
        "dataset_info": {"features": features_yaml},
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def _recipe_lines(recipe: Mapping[str, Any]) -> list[str]:
    part = recipe["partition"]
    params = ", ".join(f"{k}={v}" for k, v in part["params"].items() if v is not None)
    lines = [
        f"- **method**: `{part['method']}` ({params})",
        f"- **seed**: {part['seed']}",
        f"- **test split**: `{recipe['test_split']}`"
        + (f", fraction {recipe['test_fraction']}" if recipe.get("test_fraction") else ""),
        f"- **input fingerprint**: `{part['input_fingerprint'][:16]}...`",
    ]
    return lines


def render_card(
    *,
    name: str,
    description: str,
    source: Mapping[str, Any],
    recipe: Mapping[str, Any],
    report: Mapping[str, Any],
    manifest: Mapping[str, Any],
    plots: list[str],
    features_yaml: list[dict],
    license: str,
    task: str,
    file_tag: str,
) -> str:
    splits = list(manifest["splits"])
    st = report["size_stats"]
    cpc = report["classes_per_client_stats"]
    rows = "\n".join(
        f"| `{s}` | {v['num_rows']:,} | {report['splits'][s]['clients_with_rows']:,} | {report['splits'][s]['shared_rows']:,} |"
        for s, v in manifest["splits"].items()
    )
    dropped = {s: d for s, d in manifest.get("dropped", {}).items() if d}
    dropped_text = (
        "; ".join(f"{s}: " + ", ".join(f"{k} {v:,}" for k, v in d.items()) for s, d in dropped.items())
        if dropped
        else "none"
    )
    plot_md = "\n\n".join(f"![{p.split('/')[-1][:-4].replace('_', ' ')}]({p})" for p in plots)
    body = f"""
# {name}

A federated split built by hetbench from {description}
(source `{source.get('dataset')}`). Each row carries `client_id`; rows with `client_id = -1` belong to a
shared (global) test set.

## Recipe

{chr(10).join(_recipe_lines(recipe))}
- **split fingerprint**: `{manifest['split_fingerprint']}`

`hetbench verify <this folder>` recomputes the assignment from `hetbench.json` and the source and
checks it against the fingerprints above.

## Heterogeneity (training split)

| metric | value |
|---|---|
| clients | {report['num_clients']:,} |
| training samples | {report['num_samples']:,} |
| classes | {report['num_classes']:,} |
| EMD to population, weighted mean (Hsu et al. 2020; 0 = IID, 2 = disjoint) | {report['emd']:.4f} |
| Jensen-Shannon distance, weighted mean | {report['jensen_shannon']:.4f} |
| Hellinger distance, weighted mean | {report['hellinger']:.4f} |
| client size min / median / max | {st['min']:.0f} / {st['median']:.0f} / {st['max']:.0f} |
| client size mean +/- std, Gini, CV | {st['mean']:.1f} +/- {st['std']:.1f}, {st['gini']:.3f}, {st['cv']:.3f} |
| classes per client min / median / max | {cpc['min']:.0f} / {cpc['median']:.0f} / {cpc['max']:.0f} |
| dropped samples | {dropped_text} |

| split | rows | clients with rows | shared rows |
|---|---|---|---|
{rows}

Per-client statistics (training samples, classes, EMD, Jensen-Shannon and Hellinger distance, label
counts, rows per split) are in `{report.get('clients_file', 'report/clients.parquet')}`, one row per client.

{plot_md}

## Use

```python
from datasets import load_dataset

ds = load_dataset("path/or/hub-id/of/this/dataset")

# rows are grouped by client_id (ascending), so a client is one contiguous range
import numpy as np
cids = np.asarray(ds["train"].with_format("arrow")["client_id"])
lo, hi = np.searchsorted(cids, [7, 8])
client_7 = ds["train"].select(range(lo, hi))

# or, with hetbench installed: every client at once, zero-copy
from hetbench.clients import ClientPartitions
clients = ClientPartitions.from_dataset(ds["train"])
client_7 = clients.load_partition(7)      # the rows with client_id 7 (a Dataset); clients.table(7) gives Arrow
```

With Flower Datasets: `NaturalIdPartitioner(partition_by="client_id")`.

Licence of the data: `{license}` (that of the source data set).
"""
    return front_matter(splits, features_yaml, license, task, name, file_tag) + body
