"""The card's heterogeneity table: the kinds of heterogeneity a split was built to carry first.

A device, domain, place or feature-noise split varies its clients' images; a Dirichlet, shards or
quantity split varies their labels or sizes. The card's table leads with the first kind's numbers (the
``feature_shift`` entry of :mod:`hetbench.report.feature_entry`) for the first family and with the label
statistics for the second, and says which numbers are near their IID value by construction.
"""

from __future__ import annotations

from typing import Any, Mapping

#: partition methods whose clients differ in their images (devices, domains, places, users, noise)
FEATURE_METHODS = ("device", "domains", "feature-noise", "geo-s2", "users", "natural-id")
#: partition methods that deal rows by label or by count only: within a class every client's rows are a
#: random draw, so the class-conditional feature shift is at its IID value by construction
LABEL_ONLY_METHODS = ("dirichlet", "shards", "classes-per-client", "quantity", "label-noise", "iid")


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _iid(value: Any, span: Any) -> str:
    """``IID v, range a to b`` (the range only when known)."""
    if isinstance(span, (list, tuple)) and len(span) == 2 and None not in span:
        return f"IID {_fmt(value)}, range {_fmt(span[0])} to {_fmt(span[1])}"
    return f"IID {_fmt(value)}"


def feature_rows(report: Mapping[str, Any]) -> list[str]:
    """Markdown table rows of the ``feature_shift`` entry (none when the split has none): MMD² per client, and
    per device or domain the MMD² and the Fréchet distance of its pooled rows, each beside its IID reference
    (the mean over the random deals and their range).

    Examples
    --------
    >>> from hetbench.report.feature_text import feature_rows
    >>> entry = {"embedder": "pixels:8", "clients": {"mmd2": 0.12, "iid_mmd2": -0.001, "iid_mmd2_range": [-0.002, 0.001]}}
    >>> feature_rows({"feature_shift": entry})[0]
    '| feature shift per client: MMD² to the other clients, class by class, row-weighted mean | 0.12 (IID -0.001, range -0.002 to 0.001) |'
    """
    entry = report.get("feature_shift")
    if not isinstance(entry, Mapping) or not isinstance(entry.get("clients"), Mapping):
        return []
    c = entry["clients"]
    rows = [f"| feature shift per client: MMD² to the other clients, class by class, row-weighted mean | "
            f"{_fmt(c.get('mmd2'))} ({_iid(c.get('iid_mmd2'), c.get('iid_mmd2_range'))}) |"]
    g = entry.get("groups")
    if isinstance(g, Mapping):
        kind = g["kind"]
        rows.append(f"| feature shift per {kind}: MMD², mean | {_fmt(g.get('mean_mmd2'))} "
                    f"({_iid(g.get('iid_mmd2'), g.get('iid_mmd2_range'))}) |")
        if g.get("mean_frechet") is not None:
            rows.append(f"| feature shift per {kind}: Fréchet distance of its pooled rows, mean | "
                        f"{_fmt(g.get('mean_frechet'))} ({_iid(g.get('iid_frechet'), g.get('iid_frechet_range'))}) |")
        values = [(v, n) for v, n in zip(g.get("mmd2", []), g.get("names", [])) if v is not None]
        if values:
            top, name = max(values)
            rows.append(f"| {kind} farthest from the others (MMD²) | `{name}` ({top:.4g}) |")
    return rows


def _negative(entry: Mapping[str, Any]) -> bool:
    """Whether any MMD² the card prints is negative."""
    c, g = entry.get("clients") or {}, entry.get("groups") or {}
    printed = [c.get("mmd2"), c.get("iid_mmd2"), *(c.get("iid_mmd2_range") or []), g.get("mean_mmd2"),
               g.get("iid_mmd2"), *(g.get("iid_mmd2_range") or [])]
    return any(isinstance(v, (int, float)) and v < 0 for v in printed)


def feature_note(report: Mapping[str, Any], method: str) -> str:
    """What the feature-shift rows mean, and when they are near their IID value by construction (or why there
    are none).

    Examples
    --------
    >>> from hetbench.report.feature_text import feature_note
    >>> feature_note({}, "geo-s2").split(".")[0]
    'Feature shift: not measured'
    """
    entry = report.get("feature_shift")
    if not isinstance(entry, Mapping):
        return ("Feature shift: not measured. The training rows have no image column (or the split was made with "
                "`--feature-embedder none`); `--feature-embedder column:NAME` measures a numeric embedding column.\n")
    draws = (entry.get("clients") or {}).get("iid_draws")
    text = (f"Feature shift: each client's images against every other client's, class by class, on "
            f"`{entry.get('embedder')}` embeddings ({entry.get('components')} principal components): the unbiased "
            "MMD² (Gretton et al. 2012; Gaussian kernel, median bandwidth); per device or domain also the Fréchet "
            "distance of FID on its pooled rows (averaged over clients of a few dozen rows it is dominated by its "
            "small-sample bias, so it is not given per client). In brackets, the IID reference: the same measure "
            f"with the rows dealt to the clients at random {entry.get('iid_deal') or 'within each class'}"
            + (f", its mean and range over {draws} deals" if draws else "")
            + ": a value inside that range means no feature shift. Per-client values: "
            f"`{entry.get('file', 'report/feature_shift.parquet')}`.")
    if _negative(entry):
        text += (" A negative MMD² is not an error: the unbiased estimate is 0 in expectation when the clients' "
                 "features do not differ, so it falls below 0 about half the time there, and further where every "
                 "group holds the same scenes (a device build); compare it with its IID range, not with 0.")
    if method in LABEL_ONLY_METHODS:
        text += (f" A `{method}` split deals rows by label or count only, so its feature shift is near its IID "
                 "value by construction; its heterogeneity is in the label statistics.")
    return text + "\n"


def heterogeneity_table(report: Mapping[str, Any], method: str, label_rows: list[str]) -> str:
    """The card's table: feature rows first for :data:`FEATURE_METHODS`, label rows first otherwise.

    Examples
    --------
    >>> from hetbench.report.feature_text import heterogeneity_table
    >>> rep = {"feature_shift": {"clients": {"mmd2": 0.5, "iid_mmd2": 0.0, "iid_mmd2_range": [-0.1, 0.1]}}}
    >>> heterogeneity_table(rep, "device", ["| EMD | 0.0000 |"]).splitlines()[2].startswith("| feature shift")
    True
    >>> heterogeneity_table(rep, "dirichlet", ["| EMD | 0.4 |"]).splitlines()[2]
    '| EMD | 0.4 |'
    """
    features = feature_rows(report)
    rows = features + label_rows if method in FEATURE_METHODS else label_rows + features
    return "| metric | value |\n|---|---|\n" + "\n".join(rows)


__all__ = ["feature_rows", "feature_note", "heterogeneity_table", "FEATURE_METHODS", "LABEL_ONLY_METHODS"]
