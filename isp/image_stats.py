"""Per-image statistics that show how devices (ISP variants) render the same scenes differently.

For each rendered uint8 RGB image: mean RGB, mean chroma and colour-cast angle in CIELAB (the hue
angle of the mean a*, b*; HeteroSwitch sec. 3.4 finds colour and tone the dominant sources of
device heterogeneity), a 16-bin luminance histogram, sharpness (variance of the Laplacian of the
luminance, a standard focus measure), and the stored JPEG size. :func:`device_summary` averages
them per device and :func:`device_distances` compares devices on the standardised averages.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

LUMA_BINS = 16
FEATURES = ("mean_r", "mean_g", "mean_b", "chroma", "cast_a", "cast_b", "sharpness", "luma_mean", "luma_std")
#: what :func:`device_distances` measures, in words (the distance plot says it)
DISTANCE_BASIS = ("Euclidean distance between the devices' image statistics, each z-scored across the devices: "
                  "mean R, G and B, chroma C*ab, colour cast a* and b* (CIELAB), sharpness (variance of the Laplacian), "
                  f"luminance mean and SD, and the {LUMA_BINS}-bin luminance histogram")


def image_stats(rgb: np.ndarray, jpeg_bytes: int | None = None) -> dict:
    """Statistics of one uint8 (H, W, 3) RGB image."""
    import cv2

    lab = cv2.cvtColor(rgb, cv2.COLOR_RGB2LAB).astype(np.float32)
    # OpenCV's 8-bit Lab: L in [0, 255] (= L* x 255/100), a and b offset by 128
    L = lab[..., 0] * (100.0 / 255.0)
    a = lab[..., 1] - 128.0
    b = lab[..., 2] - 128.0
    chroma = float(np.sqrt(a * a + b * b).mean())
    mean_a, mean_b = float(a.mean()), float(b.mean())
    grey = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    sharp = float(cv2.Laplacian(grey, cv2.CV_32F).var())
    hist = np.bincount(((grey.astype(np.int32) * LUMA_BINS) // 256).ravel(), minlength=LUMA_BINS)
    mean_rgb = rgb.reshape(-1, 3).mean(axis=0)
    return {
        "mean_r": float(mean_rgb[0]),
        "mean_g": float(mean_rgb[1]),
        "mean_b": float(mean_rgb[2]),
        "chroma": chroma,
        "cast_a": mean_a,
        "cast_b": mean_b,
        "sharpness": sharp,
        "luma_mean": float(L.mean()),
        "luma_std": float(L.std()),
        "luma_hist": (hist / max(hist.sum(), 1)).tolist(),
        "jpeg_bytes": None if jpeg_bytes is None else int(jpeg_bytes),
    }


def _r(x: float) -> float:
    return float(round(x, 4))


def device_summary(stats: Sequence[Mapping], devices: Sequence[str]) -> dict[str, dict]:
    """Per-device means of :func:`image_stats` (plus the colour-cast angle of the mean cast)."""
    out: dict[str, dict] = {}
    devices = np.asarray(devices)
    for dev in sorted(set(devices.tolist())):
        rows = [s for s, d in zip(stats, devices) if d == dev]
        summary = {k: _r(np.mean([r[k] for r in rows])) for k in FEATURES}
        summary["cast_angle_deg"] = _r(float(np.degrees(np.arctan2(summary["cast_b"], summary["cast_a"]))))
        summary["luma_hist"] = [_r(v) for v in np.mean([r["luma_hist"] for r in rows], axis=0)]
        jpeg = [r["jpeg_bytes"] for r in rows if r["jpeg_bytes"] is not None]
        summary["jpeg_bytes"] = _r(float(np.mean(jpeg))) if jpeg else None
        summary["num_images"] = len(rows)
        out[dev] = summary
    return out


def device_distances(summary: Mapping[str, Mapping]) -> tuple[list[str], list[list[float]]]:
    """Euclidean distances between devices on standardised mean statistics (z-scores across
    devices, luminance histogram included), so no feature dominates by its unit."""
    names = sorted(summary)
    feats = np.array(
        [[summary[d][k] for k in FEATURES] + list(summary[d]["luma_hist"]) for d in names], dtype=np.float64
    )
    std = feats.std(axis=0)
    z = (feats - feats.mean(axis=0)) / np.where(std > 0, std, 1.0)
    diff = z[:, None, :] - z[None, :, :]
    dist = np.sqrt((diff**2).sum(axis=-1))
    return names, [[_r(v) for v in row] for row in dist]
