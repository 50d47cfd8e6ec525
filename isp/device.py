"""Device profiles: what a phone camera contributes to system-induced heterogeneity.

A :class:`DeviceProfile` describes one phone of a device manifest (for HeteroSwitch, the nine
phones of Table 1): its market share, its main camera sensor (CFA order, bit depth, black/white
level, XYZ->camera colour matrix, resolution, noise) and the vendor-typical ISP, i.e. one variant
name per stage of :mod:`hetbench.isp.stages`. Every number carries a free-text citation in
``sources`` that says where it comes from or, when there is no public figure, why the value was
chosen. Manifests are read and validated by :func:`hetbench.isp.profiles.load_profiles`.

Matrix conventions (the same as :class:`hetbench.isp.capture.RawCapture`):

* ``color_matrix`` is **XYZ (D65) -> camera RGB** (DNG ColorMatrix1, CalibrationIlluminant1 = D65);
* :meth:`DeviceProfile.camera_to_srgb` is **white-balanced camera RGB -> linear sRGB**, exactly
  ``RawCapture.camera_to_srgb()`` for that colour matrix (dcraw convention: rows of
  ``color_matrix @ M(sRGB->XYZ)`` normalised to sum 1, then inverted).

References
----------
.. [1] Kim et al., "HeteroSwitch", MLSys 2024, Table 1 (the nine phones) and Table 3 (ISP stages).
.. [2] T. Brooks et al., "Unprocessing Images for Learned Raw Denoising", CVPR 2019, section 3.2
   (the shot/read noise model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from hetbench.isp.capture import RawCapture
from hetbench.isp.lens_shading import LensShading
from hetbench.isp.stages.base import STAGES


class FrozenDict(Mapping):
    """A read-only, hashable, picklable mapping (DeviceProfile's ``isp`` and ``sources``)."""

    __slots__ = ("_data",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "_data", dict(*args, **kwargs))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FrozenDict is read-only")

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(tuple(self._data.items()))

    def __repr__(self) -> str:
        return f"FrozenDict({self._data!r})"

    def __reduce__(self):
        return (FrozenDict, (self._data,))


@dataclass(frozen=True)
class NoiseModel:
    """Heteroscedastic Gaussian noise of Brooks et al. 2019 on a [0, 1]-normalised linear signal
    ``x`` (black level removed, white level = 1): ``variance = shot * x + read``.

    References
    ----------
    Brooks et al., CVPR 2019, section 3.2 (shot and read noise).

    Examples
    --------
    >>> from hetbench.isp.device import NoiseModel
    >>> NoiseModel(shot=0.01, read=0.0001).variance(0.5)
    0.0051
    """

    shot: float
    read: float

    def variance(self, x: np.ndarray | float) -> np.ndarray | float:
        """The noise variance at signal ``x`` (same shape as ``x``)."""
        return self.shot * x + self.read


@dataclass(frozen=True)
class DeviceProfile:
    """One phone of a device manifest.

    Attributes
    ----------
    name : str
        The manifest key (e.g. ``GalaxyS22``, as in HeteroSwitch Table 1).
    vendor : str
        ``Samsung``, ``LG``, ``Google``, ...
    model : str
        Marketing name (``Galaxy S22``); used as the capture's model.
    tier : str
        ``H``, ``M`` or ``L`` (high-, mid-, low-end).
    market_share_pct : float
        The raw market share in percent, as given by the source table.
    market_share : float
        ``market_share_pct / 100``.
    participation : float
        The share normalised over the manifest's devices (they sum to 1): the fraction of FL
        clients that are this device type.
    sensor : str
        Main camera sensor (free text; alternatives and ``unverified`` where unsure).
    sensor_family : str
        A key grouping sensors that share a colour response (equal family -> similar colour
        matrices; different family -> different ones).
    cfa : str
        Bayer order of the stored mosaic, one of RGGB, BGGR, GRBG, GBRG.
    bit_depth, black_level, white_level : int, float, float
        The stored digital numbers (black included).
    color_matrix : tuple of tuples
        3x3 XYZ (D65) -> camera RGB, rows R, G, B (DNG ColorMatrix1).
    resolution : tuple of int
        (width, height) of the main camera's default still output.
    noise : NoiseModel
        The noise at the profile's typical capture setting.
    isp : Mapping[str, str]
        Read-only mapping stage -> variant name (the vendor-typical pipeline).
    lens_shading : LensShading
        The main camera's cos^4-law vignetting and how much of it the phone's ISP corrects
        (:mod:`hetbench.isp.lens_shading`); optional in a manifest (default: an ideal lens).
    sources : Mapping[str, str]
        Read-only mapping field -> citation or justification.

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 1; Adobe DNG Specification 1.4 (ColorMatrix1).

    Examples
    --------
    >>> from hetbench.isp.profiles import load_profiles
    >>> phone = load_profiles("heteroswitch9")[0]
    >>> phone.name, phone.isp_pipeline[0], phone.camera_to_srgb().sum(axis=1).round(6).tolist()
    ('GalaxyS22', ('demosaic', 'ahd'), [1.0, 1.0, 1.0])
    """

    name: str
    vendor: str
    model: str
    tier: str
    market_share_pct: float
    market_share: float
    participation: float
    sensor: str
    sensor_family: str
    cfa: str
    bit_depth: int
    black_level: float
    white_level: float
    color_matrix: tuple[tuple[float, float, float], ...]
    resolution: tuple[int, int]
    noise: NoiseModel
    isp: Mapping[str, str]
    sources: Mapping[str, str]
    lens_shading: LensShading = LensShading()

    def xyz_to_camera(self) -> np.ndarray:
        """(3, 3) float64 XYZ (D65) -> camera RGB (the DNG ColorMatrix1)."""
        return np.array(self.color_matrix, dtype=np.float64)

    def camera_to_srgb(self) -> np.ndarray:
        """(3, 3) white-balanced camera RGB -> linear sRGB, exactly as ``RawCapture`` computes it."""
        return _template_capture(self).camera_to_srgb()

    @property
    def isp_pipeline(self) -> tuple[tuple[str, str], ...]:
        """The ISP as ``((stage, variant), ...)`` in pipeline order."""
        return tuple((s, self.isp[s]) for s in STAGES)


def _template_capture(profile: DeviceProfile) -> RawCapture:
    """A 2x2 capture carrying only the profile's colour metadata (to reuse RawCapture's maths)."""
    return RawCapture(
        mosaic=np.zeros((2, 2), dtype=np.uint16),
        cfa=profile.cfa,
        black_level=(profile.black_level,) * 4,
        white_level=profile.white_level,
        color_matrix=profile.xyz_to_camera(),
        as_shot_neutral=(1.0, 1.0, 1.0),
        make=profile.vendor,
        model=profile.model,
    )
