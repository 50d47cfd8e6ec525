"""The LibRaw front end and the ``demosaic`` stage (HeteroSwitch Table 3: PPG, pixel binning, AHD).

LibRaw runs black-level removal, scaling to the white level, FBDD denoising (Table 3's ``denoise``
baseline) and the demosaic in one ``postprocess`` call, with FBDD *before* the demosaic. The
pipeline therefore does not call the registry's ``apply(image, ctx)`` for this stage; it calls
:func:`libraw_linear` with the demosaic variant's name and whether ``denoise`` is ``fbdd``, and the
stages after it (``denoise``, ``wb``, ...) take its output. The variants (``VARIANTS``) carry their
algorithm (``variant.apply.algorithm``: the argument :func:`libraw_linear` takes;
``variant.apply.libraw_algorithm``: what LibRaw runs, from :data:`DEMOSAIC_ALGORITHMS`), and their
``apply`` raises :class:`TypeError` pointing at :func:`libraw_linear`.

LibRaw settings (docs/architecture.md): unit WB, raw (camera) colour, linear gamma,
16-bit output, no auto-brightness, no flip, highlight clip, ``adjust_maximum_thr=0`` (see below),
the file's black and white levels, and never ``noise_thr`` (it segfaults rawpy 0.28.0).

Measured LibRaw scaling (rawpy 0.28.0 / LibRaw 0.22.2, tests/isp/test_isp_raw.py):

* with these settings a pixel at the white level comes out as 65535 and one at black as 0, so the
  16-bit output divided by 65535 is the linear ``(v - black) / (white - black)``;
* *but* LibRaw divides every channel by ``white - min(black)``: with per-CFA-position black levels
  that differ, the channels with a higher black come out too dark (e.g. 0.4975 instead of 0.5).
  :func:`libraw_linear` therefore normalises the mosaic itself first, ``(v - black_pos) /
  (white - black_pos)`` per CFA position, requantised to 16 bits with black 0 and white 65535, and
  hands LibRaw that DNG. LibRaw scales to the same 0..65535 range before FBDD and demosaic anyway,
  so this changes nothing else (16-bit steps are finer than any sensor's);
* LibRaw's default ``adjust_maximum_thr=0.75`` replaces the white level by the image's own maximum
  whenever that is above 75 % of it, an image-dependent brightness change; it is set to 0 here;
* FBDD (``Full``) leaves wrong pixels near two image corners (rows/columns 4-8 from the corner:
  zeros and values up to ~1.45x on a perfectly flat field) and its result depends on the border up
  to ~26 pixels in; PPG/AHD fall back to a cruder interpolation on the outer 3-4 rows/columns.
  The mosaic is therefore reflect-padded by :data:`PAD` (32) pixels on every side before LibRaw and
  the output cropped back (reflection about the edge pixel keeps every CFA site's colour, and an
  even pad keeps the pattern's phase). Measured: the cropped result is identical to one with a
  64-pixel pad, for PPG/AHD with and without FBDD; the cost is ~4 % more pixels at 12 MP. It also
  lets tiny captures through: LibRaw rejects images under 22 pixels a side as "unsupported";
* the normalisation truncates like LibRaw's own ``scale_colors`` (float32 product, then integer
  truncation), so for a capture with one black level it is bit-identical to letting LibRaw scale
  the original file; such captures (all real files seen so far) skip it.

References
----------
.. [1] Kim et al., "HeteroSwitch", MLSys 2024, Table 3 (row "Demosaicing": PPG, pixel binning, AHD).
.. [2] C.-K. Lin, "Pixel Grouping for Color Filter Array Demosaicing", 2003 (PPG).
.. [3] K. Hirakawa, T. W. Parks, "Adaptive homogeneity-directed demosaicing algorithm", IEEE TIP
   14(3), 2005 (AHD).
.. [4] J. Gozdz, FBDD noise reduction, 2010, in LibRaw.
"""

from __future__ import annotations

import dataclasses
import io

import numpy as np

from hetbench.isp.capture import RawCapture
from hetbench.isp.dng import dng_bytes
from hetbench.isp.stages.base import StageContext, StageVariant, stage_variants
from hetbench.registry import Registry

#: demosaic variant -> what LibRaw is asked for (``half`` = ``half_size``, 2x2 binning).
DEMOSAIC_ALGORITHMS: Registry[str] = Registry("demosaic algorithm", {"ppg": "PPG", "bin": "half", "ahd": "AHD"})
_OUT_MAX = 65535.0
#: reflect padding (pixels, even) around the mosaic while LibRaw runs; cropped off afterwards.
PAD = 32


def normalized_capture(capture: RawCapture, pad: int = 0) -> RawCapture:
    """``capture`` with its mosaic mapped to ``(v - black) / (white - black)`` per CFA position,
    clipped to [0, 1] and stored as 16-bit with black 0 and white 65535 (colour metadata kept);
    with ``pad`` > 0 (even) the mosaic is also reflect-padded by ``pad`` pixels on every side.

    Parameters
    ----------
    capture : RawCapture
        The frame.
    pad : int, optional
        Reflect padding in pixels (even, >= 0).

    Returns
    -------
    RawCapture
        ``capture`` itself when it is already normalised and not padded, else a new capture.

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.capture import RawCapture
    >>> from hetbench.isp.stages.demosaic import normalized_capture
    >>> cap = RawCapture(np.full((4, 4), 2079, np.uint16), "RGGB", (64, 64, 32, 64), 4095, np.eye(3), (1, 1, 1))
    >>> out = normalized_capture(cap)
    >>> out.black_level, out.white_level, out.mosaic[:2, :2].tolist()
    ((0.0, 0.0, 0.0, 0.0), 65535.0, [[32759, 32759], [33017, 32759]])
    """
    if pad < 0 or pad % 2:
        raise ValueError(f"pad must be a non-negative even number (got {pad})")
    white = float(capture.white_level)
    black = np.asarray(capture.black_level, dtype=np.float64).reshape(2, 2)
    if np.any(white <= black):
        raise ValueError(f"white level {white} is not above the black levels {capture.black_level}")
    if np.all(black == 0) and white == _OUT_MAX and pad == 0:
        return capture
    mosaic = capture.mosaic.astype(np.float32)
    for i in range(2):
        for j in range(2):
            plane = mosaic[i::2, j::2]
            plane -= np.float32(black[i, j])
            plane *= np.float32(_OUT_MAX / (white - black[i, j]))
    np.clip(mosaic, 0.0, _OUT_MAX, out=mosaic)
    mosaic = np.floor(mosaic, out=mosaic).astype(np.uint16)
    if pad:
        mosaic = np.pad(mosaic, pad, mode="reflect")
    return RawCapture(
        mosaic=mosaic,
        cfa=capture.cfa,
        black_level=(0.0, 0.0, 0.0, 0.0),
        white_level=_OUT_MAX,
        color_matrix=capture.color_matrix,
        as_shot_neutral=capture.as_shot_neutral,
        make=capture.make,
        model=capture.model,
        calibration_illuminant=capture.calibration_illuminant,
        capture_id=capture.capture_id,
    )


def _libraw_input(capture: RawCapture, pad: int) -> RawCapture:
    """What LibRaw gets: with one integer black level for all CFA positions and an integer white
    level, the capture itself (padded); LibRaw's own scaling is then exact and the result
    bit-identical to :func:`normalized_capture`'s (measured), without its ~0.08 s at 12 MP.
    Otherwise (LibRaw keeps levels as integers) the normalised capture."""
    black, white = capture.black_level, float(capture.white_level)
    uniform = all(b == black[0] for b in black) and black[0].is_integer() and white.is_integer()
    if uniform and 0 <= black[0] < white <= _OUT_MAX:
        if not pad:
            return capture
        return dataclasses.replace(capture, mosaic=np.pad(capture.mosaic, pad, mode="reflect"), _fingerprint=[])
    return normalized_capture(capture, pad=pad)


def libraw_linear(capture: RawCapture, algorithm: str, fbdd: bool) -> np.ndarray:
    """Demosaic ``capture`` with LibRaw: float32 (H, W, 3) linear camera RGB.

    Black removed, scaled so the white level is 1.0 (clipped to [0, 1]), *not* white balanced, in
    the camera's own RGB (no colour matrix), sensor orientation (no flip).

    Args:
        capture: the RAW frame; it goes to LibRaw as an in-memory uncompressed DNG, reflect-padded
            and, when its CFA positions have different (or fractional) black levels, normalised
            first (module docstring), so real and synthetic captures take the same path.
        algorithm: the demosaic variant, ``"ppg"``, ``"ahd"`` or ``"bin"`` (case-insensitive);
            ``"bin"`` is LibRaw's ``half_size`` (one RGB pixel per 2x2 CFA block, so the output is
            (H/2, W/2, 3); it is not resized back here).
        fbdd: LibRaw's FBDD noise reduction (``Full``) before the demosaic, else ``Off``. LibRaw
            skips FBDD in ``half_size`` mode, so it has no effect with ``"bin"``.

    Threads: LibRaw uses OpenMP; set ``OMP_NUM_THREADS=1`` in the caller (one image per process).

    Returns
    -------
    numpy.ndarray
        float32 (H, W, 3), or (H/2, W/2, 3) for ``"bin"``, in [0, 1].

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 3, "Demosaicing" (PPG: Lin 2003; AHD: Hirakawa & Parks 2005)
    and "Denoising" Baseline (FBDD, Gozdz 2010).

    Examples
    --------
    >>> import numpy as np
    >>> from hetbench.isp.capture import RawCapture
    >>> from hetbench.isp.stages.demosaic import libraw_linear
    >>> cap = RawCapture(np.full((8, 8), 2079, np.uint16), "RGGB", 64, 4095, np.eye(3), (1, 1, 1))
    >>> rgb = libraw_linear(cap, "ppg", fbdd=False)
    >>> rgb.shape, rgb.dtype, rgb[4, 4].round(3).tolist()
    ((8, 8, 3), dtype('float32'), [0.5, 0.5, 0.5])
    >>> libraw_linear(cap, "bin", fbdd=False).shape
    (4, 4, 3)
    """
    import rawpy

    from hetbench.isp.libraw_stderr import libraw_quiet

    key = str(algorithm).lower()
    libraw_algorithm = DEMOSAIC_ALGORITHMS[key]  # an unknown name lists the valid ones
    half = key == "bin"
    params = dict(
        user_wb=[1.0, 1.0, 1.0, 1.0],
        output_color=rawpy.ColorSpace.raw,
        gamma=(1, 1),
        no_auto_bright=True,
        output_bps=16,
        user_flip=0,
        half_size=half,
        highlight_mode=rawpy.HighlightMode.Clip,
        adjust_maximum_thr=0.0,
        fbdd_noise_reduction=rawpy.FBDDNoiseReductionMode.Full if fbdd else rawpy.FBDDNoiseReductionMode.Off,
    )
    if not half:
        params["demosaic_algorithm"] = getattr(rawpy.DemosaicAlgorithm, libraw_algorithm)
    pad = PAD  # numpy reflects repeatedly where the pad is wider than the image
    data = dng_bytes(_libraw_input(capture, pad))
    with libraw_quiet(), rawpy.imread(io.BytesIO(data)) as raw:
        rgb16 = raw.postprocess(**params)
    scale = 2 if half else 1
    expected = ((capture.height + 2 * pad) // scale, (capture.width + 2 * pad) // scale, 3)
    if rgb16.shape != expected:
        raise RuntimeError(f"LibRaw returned {rgb16.shape}, expected {expected}")
    crop = pad // scale
    if crop:
        rgb16 = rgb16[crop:-crop, crop:-crop]
    return np.multiply(rgb16, np.float32(1.0 / _OUT_MAX), dtype=np.float32)  # one pass: convert and scale


def _libraw_variant(name: str, description: str, table3: str, reference: str) -> StageVariant:
    """The variant ``name``: its ``apply`` documents the algorithm and raises (LibRaw runs it)."""

    def apply(image: np.ndarray, ctx: StageContext) -> np.ndarray:
        raise TypeError(
            f"demosaic variant {name!r} runs inside LibRaw together with FBDD and cannot be applied "
            f"to an image; call hetbench.isp.stages.demosaic.libraw_linear(capture, {name!r}, fbdd)"
        )

    apply.__name__ = f"demosaic_{name}"
    apply.__doc__ = f"""Demosaic ``{name}``: {description} (LibRaw: {DEMOSAIC_ALGORITHMS[name]}).

    Runs inside LibRaw: use :func:`libraw_linear` with ``algorithm="{name}"``; this function only
    raises :class:`TypeError` saying so.

    Parameters
    ----------
    image : numpy.ndarray
        Not used.
    ctx : StageContext
        Not used.

    Returns
    -------
    numpy.ndarray
        Never: it raises.

    References
    ----------
    {reference}

    Examples
    --------
    >>> from hetbench.isp.stages.demosaic import demosaic_{name}
    >>> demosaic_{name}.algorithm, demosaic_{name}.libraw_algorithm
    ('{name}', '{DEMOSAIC_ALGORITHMS[name]}')
    """
    apply.algorithm = name  # the argument libraw_linear() takes
    apply.libraw_algorithm = DEMOSAIC_ALGORITHMS[name]  # what LibRaw runs
    return StageVariant("demosaic", name, apply, description, table3)


_PPG = _libraw_variant(
    "ppg", "PPG demosaic (LibRaw, Patterned Pixel Grouping)", "baseline",
    "HeteroSwitch (MLSys 2024) Table 3, \"Demosaicing\", Baseline (PPG: Lin 2003).",
)
_BIN = _libraw_variant(
    "bin", "pixel binning (LibRaw half_size: one RGB pixel per 2x2 CFA block)", "option1",
    "HeteroSwitch (MLSys 2024) Table 3, \"Demosaicing\", Option 1 (pixel binning).",
)
_AHD = _libraw_variant(
    "ahd", "AHD demosaic (LibRaw, Adaptive Homogeneity-Directed)", "option2",
    "HeteroSwitch (MLSys 2024) Table 3, \"Demosaicing\", Option 2 (AHD: Hirakawa & Parks 2005).",
)
demosaic_ppg, demosaic_bin, demosaic_ahd = _PPG.apply, _BIN.apply, _AHD.apply

VARIANTS = stage_variants("demosaic", _PPG, _BIN, _AHD)
