"""The iNaturalist 2017 metadata as a source (no images needed): ``inat2017:ANNOTATIONS.json+LOCATIONS.json``.

The iNaturalist 2017 competition annotations
(COCO style: ``images`` with ``id``/``file_name``, ``annotations`` with ``image_id``/
``category_id``) joined with the location metadata released with it (one record per image:
``id, lat, lon, date, user_id``; visipedia/inat_comp 2017, described in visipedia/fg_geo). One row
per annotated image: ``image_id, file_name, category_id, latitude, longitude, user_id``. Images
without a location keep NaN coordinates (the geo builder drops and counts them).

Hsu et al. (2020) split these images by the user who took them and by geography; the geo builder
reproduces those splits from these two files.

References
----------
.. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Federated Visual Classification with Real-World Data
   Distribution", ECCV 2020 (iNaturalist-User-160k and its geographic splits).
.. [2] G. Van Horn et al., "The iNaturalist Species Classification and Detection Dataset", CVPR 2018.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.sources.convert import to_table
from hetbench.table import SampleTable

PREFIX = "inat2017:"


def _read_json(path: str):
    p = Path(path)
    if not p.is_file():
        raise HetbenchError(f"'{path}' not found")
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise HetbenchError(f"'{path}' is not valid JSON: {exc}") from exc


def load_inat2017(dataset: str, label_col: str | None = None, id_col: str | None = None) -> SampleTable:
    """``inat2017:ANNOTATIONS.json+LOCATIONS.json`` as a SampleTable labelled by ``category_id``.

    Parameters
    ----------
    dataset : str
        ``inat2017:`` followed by the annotation file and the location file, joined by ``+``.
    label_col, id_col : str, optional
        Override the label column (``category_id``) and the id column (``image_id``).

    References
    ----------
    .. [1] T.-M. H. Hsu, H. Qi and M. Brown, "Federated Visual Classification with Real-World Data
       Distribution", ECCV 2020.

    Examples
    --------
    >>> import json
    >>> from pathlib import Path
    >>> from hetbench.sources import load_table
    >>> _ = Path("ann.json").write_text(json.dumps({"images": [{"id": 1, "file_name": "a.jpg"}, {"id": 2}],
    ...     "annotations": [{"image_id": 1, "category_id": 5}, {"image_id": 2, "category_id": 7}]}))
    >>> _ = Path("loc.json").write_text(json.dumps([{"id": 1, "lat": 52.1, "lon": 4.3, "user_id": 9}]))
    >>> t = load_table("inat2017:ann.json+loc.json")
    >>> t.class_names, t.splits["train"]["user_id"][:]
    (['5', '7'], ['9', None])
    """
    ann, _, loc = dataset[len(PREFIX):].partition("+")
    if not loc:
        raise HetbenchError("write inat2017:ANNOTATIONS.json+LOCATIONS.json")
    meta = {"description": "iNaturalist 2017 images (annotations joined with their released locations)",
            "license": "other", "id_col": "image_id"}
    return to_table({"train": read_inat2017(ann, loc)}, dataset, label_col or "category_id", id_col, meta)


def read_inat2017(annotations: str, locations: str):
    """The joined table as a ``datasets.Dataset`` (see the module docstring).

    Parameters
    ----------
    annotations : str
        The COCO-style annotation file (``images`` and ``annotations``).
    locations : str
        The location file: a list of ``{id, lat, lon, date, user_id}`` records (or an object holding
        it under ``locations`` or ``images``).
    """
    import datasets

    ann = _read_json(annotations)
    if not isinstance(ann, dict) or "images" not in ann or "annotations" not in ann:
        raise HetbenchError(f"'{annotations}' is not a COCO-style annotation file (needs 'images' and 'annotations')")
    locs = _read_json(locations)
    if isinstance(locs, dict):
        locs = locs.get("locations", locs.get("images", []))
    if not isinstance(locs, list):
        raise HetbenchError(f"'{locations}' must hold a list of {{id, lat, lon, user_id}} records")
    by_id = {int(r["id"]): r for r in locs if isinstance(r, dict) and "id" in r}
    files = {int(im["id"]): im.get("file_name", "") for im in ann["images"]}
    rows = {"image_id": [], "file_name": [], "category_id": [], "latitude": [], "longitude": [], "user_id": []}
    for a in ann["annotations"]:
        image_id = int(a["image_id"])
        loc = by_id.get(image_id, {})
        rows["image_id"].append(image_id)
        rows["file_name"].append(files.get(image_id, ""))
        rows["category_id"].append(int(a["category_id"]))
        lat, lon = loc.get("lat"), loc.get("lon")
        rows["latitude"].append(float(lat) if lat is not None else np.nan)
        rows["longitude"].append(float(lon) if lon is not None else np.nan)
        user = loc.get("user_id")
        rows["user_id"].append(None if user is None else str(user))
    if not rows["image_id"]:
        raise HetbenchError(f"'{annotations}' has no annotations")
    return datasets.Dataset.from_dict(rows)
