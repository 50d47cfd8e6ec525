"""The grey-edge illuminant estimate (van de Weijer, Gevers and Gijsenij 2007) in pure numpy.

The grey-edge hypothesis: the average reflectance *difference* in a scene is achromatic, so the
Minkowski p-norm of each channel's gradient magnitude, taken after Gaussian smoothing at scale
sigma, is proportional to the light's colour:

    (integral |grad f_sigma,c(x)|^p dx)^(1/p) = k e_c            (van de Weijer et al. 2007, eq. 9)

with e^{n,p,sigma} = e^{1,1,1} (first-order derivatives, p = 1, sigma = 1) as FFmpeg's ``greyedge``
filter sets its defaults, the derivatives taken on 2 x 2 block means (one Bayer period, see
:func:`grey_edge_estimate`). Edges are less biased by large uniform surfaces than pixel
averages (gray world), which is what helps on real scenes.

Every operation is an element-wise float32 multiply, add or square root, or a float64 sum over the
pixels (numpy's pairwise summation), in a fixed order: the estimate has the same bits on every CPU,
which OpenCV's vectorised filters do not promise (their kernels depend on the instruction set).

References
----------
.. [1] J. van de Weijer, T. Gevers and A. Gijsenij, "Edge-Based Color Constancy", IEEE Transactions
   on Image Processing 16(9), 2007, eq. 9 (the framework e^{n,p,sigma}).
.. [2] FFmpeg ``greyedge`` filter (libavfilter/vf_colorconstancy.c): difford = 1, minknorm = 1,
   sigma = 1 by default.
"""

from __future__ import annotations

import math

import numpy as np

#: e^{1,1,1}: FFmpeg's greyedge defaults (Minkowski norm and Gaussian scale in pixels).
MINKOWSKI_NORM = 1
SIGMA = 1.0


def gaussian_taps(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """A sampled Gaussian (sum 1) and its derivative (sum 0, first moment 1), radius ceil(3 sigma).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.grey_edge import gaussian_taps
    >>> g, d = gaussian_taps(1.0)
    >>> len(g), round(float(g.sum()), 6), round(float(d.sum()), 6), round(float((np.arange(-3, 4) * d).sum()), 6)
    (7, 1.0, 0.0, 1.0)
    """
    r = max(1, math.ceil(3 * float(sigma)))
    xs = range(-r, r + 1)
    g = [math.exp(-0.5 * (x / float(sigma)) ** 2) for x in xs]  # scalar libm: the same bits on every CPU
    total = math.fsum(g)
    g = [v / total for v in g]
    moment = math.fsum(x * x * v for x, v in zip(xs, g))
    return np.array(g, np.float32), np.array([x * v / moment for x, v in zip(xs, g)], np.float32)


def correlate_axis(plane: np.ndarray, taps: np.ndarray, axis: int) -> np.ndarray:
    """``sum_k taps[k] * plane[i + k - r]`` along ``axis``, edges replicated: one float32 multiply-add per
    tap, in tap order (bit-identical on every CPU).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.grey_edge import correlate_axis, gaussian_taps
    >>> ramp = np.tile(np.arange(8, dtype=np.float32), (3, 1))
    >>> correlate_axis(ramp, gaussian_taps(1.0)[1], axis=1)[0, 3:5].round(5).tolist()  # slope 1
    [1.0, 1.0]
    """
    r = len(taps) // 2
    pad = [(0, 0)] * plane.ndim
    pad[axis] = (r, r)
    padded = np.pad(plane, pad, mode="edge")
    n = plane.shape[axis]
    out = np.zeros(plane.shape, np.float32)
    window = [slice(None)] * plane.ndim
    for k, w in enumerate(taps):
        window[axis] = slice(k, k + n)
        out += np.float32(w) * padded[tuple(window)]
    return out


def _dilate(mask: np.ndarray, r: int) -> np.ndarray:
    """``mask`` grown by ``r`` pixels in both directions (a square structuring element, separable)."""
    h, w = mask.shape
    rows = np.pad(mask, ((0, 0), (r, r)))
    grown = np.zeros_like(mask)
    for k in range(2 * r + 1):
        grown |= rows[:, k : k + w]
    cols = np.pad(grown, ((r, r), (0, 0)))
    out = np.zeros_like(mask)
    for k in range(2 * r + 1):
        out |= cols[k : k + h]
    return out


#: values of the block-mean subsample computed per band of rows (:func:`block_means`)
_BAND_VALUES = 1 << 15


def block_means(image: np.ndarray, block: int, step: int) -> tuple[np.ndarray, np.ndarray]:
    """Means and maxima of ``block`` x ``block`` pixel blocks, every ``step``-th block in each direction.

    Sums run in a fixed order (rows of a block, then the block's row sums), element-wise in float32, so
    the result has the same bits on every CPU; a partial block at the right or bottom edge is dropped.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.grey_edge import block_means
    >>> img = np.arange(16, dtype=np.float32).reshape(4, 4, 1)
    >>> means, peaks = block_means(img, 2, 1)
    >>> means[..., 0].tolist(), peaks[..., 0].tolist()
    ([[2.5, 4.5], [10.5, 12.5]], [[5.0, 7.0], [13.0, 15.0]])
    """
    img = np.asarray(image, np.float32)
    b, s = max(1, int(block)), max(1, int(step))
    rows, cols = (img.shape[0] // b + s - 1) // s, (img.shape[1] // b + s - 1) // s
    means = np.empty((rows, cols) + img.shape[2:], np.float32)
    peaks = np.empty_like(means)
    # bands of block rows, so that the b x b taps of a band are read while its image rows are in the cache
    # (one pass over the image instead of b x b strided ones: 12 MP, 2 x 2 blocks every second block, 42 -> 33 ms)
    band = rows if b * s == 1 else max(1, _BAND_VALUES // max(1, cols * int(np.prod(img.shape[2:], dtype=np.int64))))
    for r0 in range(0, rows, band):
        r1 = min(rows, r0 + band)
        part = img[r0 * b * s : r1 * b * s]
        total = peak = None
        for i in range(b):
            row = None
            for j in range(b):
                tap = part[i :: b * s, j :: b * s][: r1 - r0, :cols]
                row = tap.copy() if row is None else row + tap
                peak = tap.copy() if peak is None else np.maximum(peak, tap)
            total = row if total is None else total + row
        np.multiply(total, np.float32(1.0 / (b * b)), out=means[r0:r1])
        peaks[r0:r1] = peak
    return means, peaks


def grey_edge_estimate(image: np.ndarray, *, sigma: float = SIGMA, p: int = MINKOWSKI_NORM, clip: float = 0.98,
                       step: int = 1, block: int = 2) -> np.ndarray:
    """The light's camera RGB by the first-order grey-edge hypothesis, e^{1,p,sigma}, green = 1.

    The derivatives are taken on means of ``block`` x ``block`` pixel blocks (default 2, one period of
    a Bayer mosaic): finer than one period, a demosaiced image's gradients measure the demosaic's
    interpolation (each 2 x 2 block holds one red and one blue sample) and the sensor noise, not the
    scene's edges. Measured on the shared ColorChecker capture: at one-pixel scale the estimate
    renders the chart at mean CIEDE2000 11.1; at any coarser scale (2 x 2 blocks, every second pixel,
    sigma 2, every third pixel) at 5.3-6.0 (docs/measurements.md has the table).

    Parameters
    ----------
    image : array_like
        (H, W, 3) linear camera RGB, white level 1.
    sigma : float
        Gaussian scale of the derivatives (blocks of the subsample).
    p : int
        Minkowski norm (a positive integer: powers by repeated multiplication are exact).
    clip : float
        Blocks with a pixel's channel at or above it, and every block whose derivative reaches one,
        are left out: a saturated channel no longer measures the light.
    step : int
        Stride, in blocks, of the subsample the statistics use.
    block : int
        Side of the averaged blocks in pixels (1: the pixels themselves).

    Returns
    -------
    numpy.ndarray
        float64 (3,), green = 1 (ones where the image has no usable edge).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.grey_edge import grey_edge_estimate
    >>> rng = np.random.default_rng(0)
    >>> grey = rng.uniform(0.05, 0.5, (64, 64, 1)).astype(np.float32)  # achromatic edges
    >>> grey_edge_estimate(grey * np.float32([0.8, 1.0, 0.4])).round(3).tolist()  # under a warm light
    [0.8, 1.0, 0.4]
    """
    if int(p) != p or p < 1:
        raise ValueError(f"grey-edge Minkowski norm must be a positive integer (got {p})")
    img, peak = block_means(image, block, step)
    g, d = gaussian_taps(sigma)
    r = len(g) // 2
    bad = (peak >= np.float32(clip)).any(axis=2)
    valid = ~_dilate(bad, r)  # a clipped pixel spoils every derivative within r pixels
    if not valid.any():
        return np.ones(3)
    norms = []
    for c in range(3):
        plane = img[..., c]
        gx = correlate_axis(correlate_axis(plane, d, 1), g, 0)
        gy = correlate_axis(correlate_axis(plane, g, 1), d, 0)
        mag = np.sqrt(gx * gx + gy * gy)[valid].astype(np.float64)
        power = mag.copy()
        for _ in range(int(p) - 1):
            power *= mag
        norms.append(math.pow(float(power.mean()), 1.0 / int(p)))
    e = np.array(norms)
    return e / e[1] if e[1] > 0 and np.all(np.isfinite(e)) else np.ones(3)
