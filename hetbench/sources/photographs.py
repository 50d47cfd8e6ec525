"""The real photographs every embedded image build starts from, loaded offline.

:func:`embedded_photographs` returns the colour photographs of natural scenes that ship inside the
scikit-image and scikit-learn wheels (no download); :func:`scene_crops` cuts random square crops.
``build iso-isp`` and ``build devices`` unprocess the crops into RAW captures
(:mod:`hetbench.isp.unprocess`); ``builtin:digits-domains`` uses them as MNIST-M backgrounds.

Licences: the scikit-image photographs are public domain or CC0 (astronaut: NASA; coffee, chelsea,
rocket, motorcycle: CC0 / public domain per scikit-image's data README); scikit-learn's
``china.jpg`` and ``flower.jpg`` are CC BY 2.0 (attribution in scikit-learn's
``datasets/images/README.txt``).
"""

from __future__ import annotations

import functools

import numpy as np


def _skimage(name: str):
    def load() -> np.ndarray:
        from skimage import data

        img = getattr(data, name)()
        return img[0] if isinstance(img, tuple) else img  # stereo_motorcycle: (left, right, disparity)

    return load


def _sklearn(filename: str):
    def load() -> np.ndarray:
        from sklearn.datasets import load_sample_image

        return load_sample_image(filename)

    return load


#: (scene name, loader) of the colour photographs of natural scenes shipped *inside* the
#: scikit-image and scikit-learn wheels (no download). Left out on purpose: hubble_deep_field
#: (astronomy), immunohistochemistry and retina (microscopy / fundus imaging), colorwheel and logo
#: (synthetic), cat (the same photograph as chelsea) and the pooch-fetched images (skin, lily, ...).
_PHOTOGRAPHS = (
    ("astronaut", _skimage("astronaut")),
    ("coffee", _skimage("coffee")),
    ("chelsea", _skimage("chelsea")),
    ("rocket", _skimage("rocket")),
    ("motorcycle", _skimage("stereo_motorcycle")),  # the left view
    ("china", _sklearn("china.jpg")),
    ("flower", _sklearn("flower.jpg")),
)


@functools.lru_cache(maxsize=1)
def _load_photographs() -> tuple[tuple[str, np.ndarray], ...]:
    out = []
    for name, loader in _PHOTOGRAPHS:
        try:
            img = np.asarray(loader())
        except Exception:  # a file missing from this installation: skip it
            continue
        if img.ndim == 3 and img.shape[2] == 4:
            img = img[..., :3]
        if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            continue
        img = np.ascontiguousarray(img)
        img.setflags(write=False)
        out.append((name, img))
    return tuple(out)


def embedded_photographs() -> list[tuple[str, np.ndarray]]:
    """The real colour photographs bundled with scikit-image and scikit-learn, loaded offline.

    Returns
    -------
    list of (str, numpy.ndarray)
        ``[(scene_name, uint8 (H, W, 3) sRGB), ...]``: astronaut, coffee, chelsea, rocket,
        motorcycle (left view of skimage's stereo pair), china, flower (any that fail to load are
        skipped). The arrays are writeable copies.

    Examples
    --------
    >>> from hetbench.sources.photographs import embedded_photographs
    >>> photos = embedded_photographs()
    >>> photos[0][0], photos[0][1].shape, photos[0][1].dtype
    ('astronaut', (512, 512, 3), dtype('uint8'))
    """
    return [(name, img.copy()) for name, img in _load_photographs()]


def scene_crops(image: np.ndarray, n: int, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``n`` random square crops of ``image``, positions drawn from ``rng``; returns copies.

    Parameters
    ----------
    image : numpy.ndarray
        An image with at least two dimensions (H, W, ...).
    n : int
        Number of crops (0 or more).
    size : int
        Side of every crop, or ``min(H, W)`` where the image is smaller.
    rng : numpy.random.Generator
        Draws the positions (the same generator state gives the same crops).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.sources.photographs import scene_crops
    >>> crops = scene_crops(np.zeros((100, 80, 3), np.uint8), 2, 64, np.random.default_rng(0))
    >>> [c.shape for c in crops]
    [(64, 64, 3), (64, 64, 3)]
    """
    img = np.asarray(image)
    if img.ndim < 2:
        raise ValueError(f"expected an image with at least 2 dimensions, got shape {img.shape}")
    if n < 0 or size < 1:
        raise ValueError(f"need n >= 0 and size >= 1, got n={n}, size={size}")
    h, w = img.shape[:2]
    side = min(int(size), h, w)
    ys = rng.integers(0, h - side + 1, size=n)
    xs = rng.integers(0, w - side + 1, size=n)
    return [img[y : y + side, x : x + side].copy() for y, x in zip(ys.tolist(), xs.tolist())]
