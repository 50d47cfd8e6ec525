"""The one bound on the size of a decoded image, and the helpers that open images under it.

An image file can be small and still decode to hundreds of millions of pixels (a PNG of one colour
at 20000 x 20000 is a few hundred kilobytes and 1.2 GB as RGB): a "decompression bomb". Every image
hetbench decodes from user input (sources' image columns, ``--image-root``, ``--data-dir``, a
split's shards in ``hetbench train``, the images the noise and synthetic-colour builders re-encode)
is opened through :func:`open_image` (PIL) or :func:`decode_cv2` (OpenCV), which read the header
first and refuse an image of more than :data:`MAX_PIXELS` pixels with :class:`ImageTooLarge`, before
any pixel is decoded. A batch build skips such an image, counts it and lists it with its reason, as it
does an unreadable one; a command that cannot skip a row (``partition embedding``, ``train``) stops with
one line naming the row (exit code 2). The bound is documented in ``docs/output-contract.md``
("Decoded image size").

PIL's own guard (``Image.MAX_IMAGE_PIXELS``: a warning above 89,478,485 pixels, an error above twice
that) is left as the user set it; its warning is silenced here, since the bound below decides, and its
error becomes :class:`ImageTooLarge`.
"""

from __future__ import annotations

import io
import re
import warnings
from pathlib import Path
from typing import IO, Any, Sequence

import numpy as np

from hetbench.errors import HetbenchError

#: most pixels (width x height) of one decoded image: 2**27 = 134,217,728 (e.g. 16384 x 8192; 384 MiB as
#: 8-bit RGB), above every phone and camera photograph of the corpora hetbench reads
MAX_PIXELS = 2**27


class ImageTooLarge(HetbenchError):
    """An image that decodes to more than :data:`MAX_PIXELS` pixels (bad input: one line, exit code 2)."""


def check_pixels(width: int, height: int, what: str = "the image") -> None:
    """Refuse an image of ``width`` x ``height`` pixels over :data:`MAX_PIXELS`.

    Parameters
    ----------
    width, height : int
        The image's size, from its header.
    what : str
        How the message names the image (``"row 5"``, a file name).

    Raises
    ------
    ImageTooLarge
        Over the bound.

    Examples
    --------
    >>> from hetbench.image_limits import check_pixels
    >>> check_pixels(8192, 8192)
    >>> try:
    ...     check_pixels(20000, 20000, "row 3")
    ... except ValueError as exc:
    ...     print(exc)
    row 3 is too large to decode: 20000 x 20000 = 400,000,000 pixels, over hetbench's bound of 134,217,728 pixels per image
    """
    pixels = int(width) * int(height)
    if pixels > MAX_PIXELS:
        raise ImageTooLarge(f"{what} is too large to decode: {int(width)} x {int(height)} = {pixels:,} pixels, "
                            f"over hetbench's bound of {MAX_PIXELS:,} pixels per image")


def open_image(source: bytes | str | Path | IO[bytes], what: str = "the image",
               formats: Sequence[str] | None = None) -> Any:
    """The PIL image of ``source``, opened lazily (only the header is read), within the bound.

    Parameters
    ----------
    source : bytes, path or binary file
        Encoded image bytes, a file path, or an open binary file.
    what : str
        How an error names the image.
    formats : sequence of str, optional
        PIL formats to try (``Image.open``'s ``formats``); None: all.

    Returns
    -------
    PIL.Image.Image
        Not yet decoded: ``load()``, ``convert()`` or ``numpy.asarray`` decode it.

    Raises
    ------
    ImageTooLarge
        Over :data:`MAX_PIXELS` (PIL's ``DecompressionBombError`` included).
    PIL.UnidentifiedImageError, OSError
        Not an image PIL reads, or a file that cannot be opened (the caller names the row).

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> from hetbench.image_limits import open_image
    >>> buf = io.BytesIO(); Image.new("RGB", (5, 4)).save(buf, "PNG")
    >>> open_image(buf.getvalue()).size
    (5, 4)
    """
    from PIL import Image

    fp = io.BytesIO(source) if isinstance(source, (bytes, bytearray, memoryview)) else source
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            img = Image.open(fp, formats=list(formats) if formats else None)
        except Image.DecompressionBombError as exc:
            found = re.search(r"\((\d+) pixels\)", str(exc))
            pixels = f"{int(found.group(1)):,} pixels" if found else "more pixels than PIL's limit"
            raise ImageTooLarge(f"{what} is too large to decode: {pixels}, over hetbench's bound of {MAX_PIXELS:,} "
                                "pixels per image") from None
    try:
        check_pixels(img.width, img.height, what)
    except ImageTooLarge:
        img.close()
        raise
    return img


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, which the PNG specification puts first (section 5.6);
    None when ``data`` is not a PNG whose first chunk is IHDR.

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> from hetbench.image_limits import png_size
    >>> buf = io.BytesIO(); Image.new("RGB", (5, 4)).save(buf, "PNG")
    >>> png_size(buf.getvalue()), png_size(b"GIF89a")
    ((5, 4), None)
    """
    if len(data) < 24 or data[:8] != _PNG_SIGNATURE or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def decode_cv2(data: bytes, flags: int | None = None, what: str = "the image") -> np.ndarray:
    """``cv2.imdecode`` of ``data``, after its header (read by PIL) is checked against the bound.

    OpenCV's own limit (``OPENCV_IO_MAX_IMAGE_PIXELS``, 2**30 by default) is far above hetbench's, and
    it is read once per process, so the header is checked here first; a format PIL cannot identify is
    refused, since its size cannot be checked before decoding.

    Parameters
    ----------
    data : bytes
        The encoded image.
    flags : int, optional
        ``cv2.imdecode``'s flags (default ``cv2.IMREAD_COLOR``: BGR).
    what : str
        How an error names the image.

    Returns
    -------
    numpy.ndarray
        What ``cv2.imdecode`` returns.

    Raises
    ------
    ImageTooLarge
        Over :data:`MAX_PIXELS`.
    HetbenchError
        Not an image, or one OpenCV cannot decode.

    Examples
    --------
    >>> import io
    >>> from PIL import Image
    >>> from hetbench.image_limits import decode_cv2
    >>> buf = io.BytesIO(); Image.new("RGB", (5, 4), (255, 0, 0)).save(buf, "PNG")
    >>> decode_cv2(buf.getvalue())[0, 0].tolist()  # BGR
    [0, 0, 255]
    """
    import cv2
    from PIL import UnidentifiedImageError

    size = png_size(data)
    if size is not None:  # a PNG's size is in its first chunk: no need to open it with PIL (45 us an image)
        check_pixels(*size, what)
    else:
        try:
            open_image(bytes(data), what).close()
        except (UnidentifiedImageError, OSError) as exc:
            raise HetbenchError(f"{what}: cannot read the image ({type(exc).__name__}: {exc})") from None
    out = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR if flags is None else flags)
    if out is None:
        raise HetbenchError(f"{what}: OpenCV cannot decode the image")
    return out


__all__ = ["MAX_PIXELS", "ImageTooLarge", "check_pixels", "decode_cv2", "open_image", "png_size"]
