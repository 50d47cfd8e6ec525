"""PNG bytes of the images hetbench stores: every encoder in one place.

The bytes are part of each split's fingerprint, so each kind of image keeps the encoder it was recorded
with:

* :func:`encode_png`: Pillow's encoder (zlib level 6, no optimisation pass) for images that come from
  arrays or Pillow images: the built-in data sets (:mod:`hetbench.sources.packaged`), the device corpora's
  crops (:mod:`hetbench.sources.device_corpora`) and the noise families' images (``builders/noise.py``);
* :func:`encode_png_opencv`: OpenCV's encoder (its default compression) for the ISP's renders
  (:mod:`hetbench.isp.jobs`), which are OpenCV arrays already; Pillow would write other bytes for the same
  pixels, and so other fingerprints.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np


def encode_png(image: Any) -> bytes:
    """PNG bytes of ``image`` with Pillow: a uint8 array (``(H, W)`` grey, ``(H, W, 3)`` RGB) or a Pillow
    image, written as it is (no optimisation pass).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.png import encode_png
    >>> data = encode_png(np.zeros((2, 3), np.uint8))
    >>> data[:4], data[16:24]  # the signature, then the IHDR chunk's width and height (3 x 2)
    (b'\\x89PNG', b'\\x00\\x00\\x00\\x03\\x00\\x00\\x00\\x02')
    """
    from PIL import Image

    if isinstance(image, np.ndarray):
        image = Image.fromarray(np.ascontiguousarray(image))
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=False)
    return buf.getvalue()


def encode_png_opencv(rgb: np.ndarray) -> bytes:
    """PNG bytes of a uint8 RGB image with OpenCV's encoder (default compression): every rendered image of a
    device split is stored this way.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.png import encode_png_opencv
    >>> encode_png_opencv(np.zeros((2, 2, 3), np.uint8))[:4]
    b'\\x89PNG'
    """
    import cv2

    ok, buf = cv2.imencode(".png", np.ascontiguousarray(rgb[..., ::-1]))
    if not ok:  # pragma: no cover - OpenCV only fails on malformed arrays
        raise RuntimeError("PNG encoding failed")
    return buf.tobytes()
