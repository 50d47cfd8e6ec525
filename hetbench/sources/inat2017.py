"""Readers for public benchmark metadata files (no images needed).

``inat2017:ANNOTATIONS.json+LOCATIONS.json`` - the iNaturalist 2017 competition annotations
(COCO style: ``images`` with ``id``/``file_name``, ``annotations`` with ``image_id``/
``category_id``) joined with the location metadata released with it (one record per image:
``id, lat, lon, date, user_id``; visipedia/inat_comp 2017, described in visipedia/fg_geo). One row
per annotated image: ``image_id, file_name, category_id, latitude, longitude, user_id``. Images
without a location keep NaN coordinates (the geo builder drops and counts them).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hetbench.errors import HetbenchError


def _read_json(path: str):
    p = Path(path)
    if not p.is_file():
        raise HetbenchError(f"'{path}' not found")
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise HetbenchError(f"'{path}' is not valid JSON: {exc}") from exc


def read_inat2017(annotations: str, locations: str):
    """The joined table as a ``datasets.Dataset`` (see module docstring)."""
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
