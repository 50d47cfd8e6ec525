"""``hetbench report`` refreshes the dataset card too: the card's report-derived sections are re-rendered from
the folder's new ``report.json``; everything else stays as written.

A card (``README.md``) has three kinds of content: its YAML front matter (what ``hetbench verify`` checks
against the re-run split), the text that describes the data and how to use, licence and cite it (from the
source table, which a built folder no longer holds), and the sections drawn from the report: from
``## Heterogeneity (training split)`` up to ``## Use`` (the statistics table, the feature shift, the
clusters against the labels and the plots). :func:`refresh_card` replaces only the last, rendered by the
same code the build used (:func:`hetbench.publish.card._body`), so a card refreshed from an unchanged
report is byte for byte the card the build wrote.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

from hetbench.atomic import write_atomic
from hetbench.errors import HetbenchError

#: where the report-derived sections of a card start and where they end (the next section)
REPORT_START, REPORT_END = "\n## Heterogeneity (training split)\n", "\n## Use\n"
_PLOT = re.compile(r"!\[[^\]]*\]\((plots/[^)\s]+\.png)\)")
#: a row of the card's table of output splits: | `train` | 1,437 | ...
_SPLIT_ROW = re.compile(r"^\| `([^`]+)` \| [\d,]+ \|", re.MULTILINE)


def card_plots(card: str, folder: Path) -> list[str]:
    """The plots a refreshed card shows: those the card showed that still exist, in its order, then any other
    plot in ``plots/``, sorted.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from hetbench.tools.card_refresh import card_plots
    >>> folder = Path(tempfile.mkdtemp())
    >>> (folder / "plots").mkdir()
    >>> for name in ("b.png", "a.png", "new.png"):
    ...     _ = (folder / "plots" / name).write_bytes(b"")
    >>> card_plots("![b](plots/b.png) ![gone](plots/gone.png) ![a](plots/a.png)", folder)
    ['plots/b.png', 'plots/a.png', 'plots/new.png']
    """
    shown = [p for p in dict.fromkeys(_PLOT.findall(card)) if (folder / p).is_file()]
    present = sorted(f"plots/{p.name}" for p in (folder / "plots").glob("*.png")) if (folder / "plots").is_dir() else []
    return shown + [p for p in present if p not in shown]


def refresh_card(folder: str | os.PathLike) -> bool:
    """Re-render the report-derived sections of a built folder's ``README.md`` from its ``report.json``
    (module notes); the front matter, the description, the use, licence and citation sections are kept.
    Written atomically (a temporary file renamed over the card).

    Parameters
    ----------
    folder : path
        A folder written by ``hetbench partition`` or ``hetbench build`` whose report is current
        (:func:`hetbench.tools.report_refresh.refresh_report`).

    Returns
    -------
    bool
        True when the card was rewritten; False when it is missing or is not laid out as hetbench writes
        cards (no ``## Heterogeneity (training split)`` before ``## Use``): it is then left as it is.

    Raises
    ------
    HetbenchError
        A manifest or report that cannot be read.

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.pipeline import make_split
    >>> from hetbench.tools.card_refresh import refresh_card
    >>> _ = make_split("builtin:digits", IIDPartitioner(4), "digits-iid-card", quiet=True)
    >>> before = open("digits-iid-card/README.md").read()
    >>> refresh_card("digits-iid-card"), open("digits-iid-card/README.md").read() == before
    (True, True)
    """
    from hetbench.publish.card import recipe_method
    from hetbench.publish.card_sections import card_body
    from hetbench.publish.licence import manifest_licence, split_licence
    from hetbench.contract import read_manifest
    from hetbench.contract.columns import read_built_columns

    folder = Path(folder)
    path = folder / "README.md"
    if not path.is_file():
        return False
    card = path.read_text(encoding="utf-8")
    start, end = card.find(REPORT_START), card.find(REPORT_END)
    if start < 0 or end < start:
        return False
    manifest = read_manifest(folder)
    try:
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HetbenchError(f"{folder / 'report.json'} cannot be read: {exc}") from None
    source, recipe = manifest["source"], manifest["recipe"]
    shown = [m for m in _SPLIT_ROW.findall(card[start:end]) if m in manifest["splits"]]  # the card's split order
    manifest = {**manifest, "splits": {s: manifest["splits"][s] for s in dict.fromkeys([*shown, *manifest["splits"]])}}
    ids = {s: c["client_id"] for s, c in read_built_columns(folder, ("client_id",)).items()}
    rows = {s: np.bincount(c[c >= 0], minlength=int(manifest["num_clients"])).tolist() for s, c in ids.items()}
    origin = source.get("origin") or source.get("dataset")
    lic = split_licence(origin, None, manifest_licence(manifest))  # the licence sections are kept as written
    body = card_body(manifest.get("name") or folder.name, "", source, recipe, report, manifest, card_plots(card, folder),
                 lic, recipe_method(recipe), rows)
    new_start, new_end = body.find(REPORT_START), body.find(REPORT_END)
    refreshed = card[:start] + body[new_start:new_end] + card[end:]
    write_atomic(path, refreshed)
    return True


__all__ = ["refresh_card", "card_plots", "REPORT_START", "REPORT_END"]
