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


def region_crops(image: np.ndarray, n_train: int, n_test: int, size: int, test_share: float,
                 rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Training and test crops of ``image`` that share no pixel: the test crops come from a band at one end
    of the image's longer side, the training crops from the rest.

    The band spans the whole shorter side and ``max(side, ceil(test_share x L))`` pixels of the longer side L
    (``side = min(size, H, W)``); which end it sits at is drawn from ``rng``, then the test crops' positions
    inside it, then the training crops' positions outside it. A model trained on the training crops has never
    seen any pixel of a test crop: the test measures the scene's unseen parts, not crops that overlap the
    ones it learned (as random crops held out from one pool do).

    Parameters
    ----------
    image : numpy.ndarray
        An image with at least two dimensions (H, W, ...).
    n_train, n_test : int
        Number of training and of test crops (0 or more each).
    size : int
        Side of every crop, or ``min(H, W)`` where the image is smaller.
    test_share : float
        Share of the longer side the test band takes, in (0, 1); at least one crop's side.
    rng : numpy.random.Generator
        Draws the band's end and every position (the same state gives the same crops).

    Returns
    -------
    train, test : list of numpy.ndarray
        Copies of the crops.

    Raises
    ------
    ValueError
        The image's longer side cannot hold the band and one training crop beside it.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.sources.photographs import region_crops
    >>> img = np.arange(100 * 300).reshape(100, 300)
    >>> train, test = region_crops(img, 3, 2, 64, 0.2, np.random.default_rng(0))
    >>> [c.shape for c in train + test]
    [(64, 64), (64, 64), (64, 64), (64, 64), (64, 64)]
    >>> seen = set(np.concatenate([c.ravel() for c in train]).tolist())
    >>> any(v in seen for c in test for v in c.ravel().tolist())
    False
    """
    img = np.asarray(image)
    if img.ndim < 2:
        raise ValueError(f"expected an image with at least 2 dimensions, got shape {img.shape}")
    if n_train < 0 or n_test < 0 or size < 1 or not 0.0 < test_share < 1.0:
        raise ValueError(f"need n_train, n_test >= 0, size >= 1 and 0 < test_share < 1, got {n_train}, {n_test}, "
                         f"{size}, {test_share}")
    h, w = img.shape[:2]
    side = min(int(size), h, w)
    long_axis = 1 if w >= h else 0
    length, short = (w, h) if long_axis == 1 else (h, w)
    band = max(side, int(np.ceil(test_share * length)))
    if length - band < side:
        raise ValueError(f"a {h} x {w} image cannot hold a test band of {band} pixels and a {side}-pixel training "
                         "crop beside it")
    at_start = bool(rng.integers(0, 2))
    lo_test, lo_train = (0, band) if at_start else (length - band, 0)
    hi_test, hi_train = lo_test + band - side, lo_train + (length - band) - side

    def cut(n: int, lo: int, hi: int) -> list[np.ndarray]:
        along = rng.integers(lo, hi + 1, size=n)
        across = rng.integers(0, short - side + 1, size=n)
        ys, xs = (across, along) if long_axis == 1 else (along, across)
        return [img[y : y + side, x : x + side].copy() for y, x in zip(ys.tolist(), xs.tolist())]

    test = cut(n_test, lo_test, hi_test)
    return cut(n_train, lo_train, hi_train), test
