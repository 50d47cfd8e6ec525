"""Shared by the ISP tests: HeteroSwitch Table 1, the device manifest, 2x2 block averaging."""

from __future__ import annotations

from importlib import resources

import numpy as np
import yaml

TABLE1 = {  # HeteroSwitch Table 1: device -> (vendor, tier, market share %)
    "GalaxyS22": ("Samsung", "H", 12),
    "VELVET": ("LG", "H", 2),
    "Pixel5": ("Google", "H", 1),
    "GalaxyS9": ("Samsung", "M", 27),
    "G7": ("LG", "M", 5),
    "Pixel2": ("Google", "M", 3),
    "GalaxyS6": ("Samsung", "L", 38),
    "G4": ("LG", "L", 8),
    "Nexus5X": ("Google", "L", 4),
}


def manifest_data() -> dict:
    text = resources.files("hetbench.manifests").joinpath("devices", "heteroswitch9.yaml").read_text("utf-8")
    return yaml.safe_load(text)


def half_and_blocks(img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(image averaged over 2x2 blocks, that image repeated back to full size)."""
    h, w = img.shape[0] // 2, img.shape[1] // 2
    small = np.rint(img[: 2 * h, : 2 * w].reshape(h, 2, w, 2, 3).mean(axis=(1, 3))).astype(np.uint8)
    return small, np.repeat(np.repeat(small, 2, axis=0), 2, axis=1)
