"""Device profiles: what a phone camera contributes to system-induced heterogeneity.

A :class:`DeviceProfile` describes one phone of a device manifest (for HeteroSwitch, the nine
phones of Table 1): its market share, its main camera sensor (CFA order, bit depth, black/white
level, XYZ->camera colour matrix, resolution, noise) and the vendor-typical ISP, i.e. one variant
name per stage of :mod:`hetbench.isp.stages`. Every number carries a free-text citation in
``sources`` that says where it comes from or, when there is no public figure, why the value was
chosen.

Manifests live in ``manifests/devices/<name>.yaml`` (package ``hetbench.manifests``) and are read
with :func:`load_profiles`, which validates every field and raises :class:`ValueError` with a
message that names the device, the field and the valid choices.

The profile data classes (:class:`DeviceProfile`, :class:`NoiseModel`) and their matrix
conventions are in :mod:`hetbench.isp.device`; this module loads and validates manifests. Valid
ISP variant names are those of the stage registry, :data:`hetbench.isp.stages.REGISTRY`.

References
----------
.. [1] Kim et al., "HeteroSwitch", MLSys 2024, Table 1 (devices, market shares) and Table 3.
.. [2] T. Brooks et al., "Unprocessing Images for Learned Raw Denoising", CVPR 2019, section 3.2
   (noise ranges) and section 3.1 (random colour matrices as convex combinations).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import fields
from importlib import resources
from typing import Any, Mapping

import numpy as np
import yaml

from hetbench.errors import HetbenchError
from hetbench.isp.capture import CFA_PATTERNS
from hetbench.isp.device import DeviceProfile, FrozenDict, NoiseModel
from hetbench.isp.lens_shading import CORRECTIONS, LensShading
from hetbench.isp.stages import REGISTRY, STAGES

TIERS: tuple[str, ...] = ("H", "M", "L")

#: Brooks et al. (CVPR 2019) sample log(shot) uniformly in [log 1e-4, log 1.2e-2]; profiles must
#: stay within a generous band around it (variance on a [0, 1]-normalised linear signal).
SHOT_RANGE = (1e-5, 0.1)
READ_RANGE = (0.0, 0.01)

#: every DeviceProfile must cite (or justify) each of these numbers in ``sources``.
REQUIRED_SOURCES: tuple[str, ...] = (
    "market_share",
    "sensor",
    "cfa",
    "bit_depth",
    "black_level",
    "white_level",
    "color_matrix",
    "resolution",
    "noise",
    "isp",
)

#: the fields a manifest gives: every DeviceProfile field but the two derived from the shares.
_DEVICE_KEYS = {f.name for f in fields(DeviceProfile)} - {"market_share", "participation"}
_OPTIONAL_DEVICE_KEYS = {"model", "sensor_family", "lens_shading"}


# --------------------------------------------------------------------------------------- loading


def available_manifests() -> list[str]:
    """Names of the device manifests shipped in ``hetbench.manifests/devices``."""
    root = resources.files("hetbench.manifests").joinpath("devices")
    if not root.is_dir():
        return []
    return sorted(p.name[: -len(".yaml")] for p in root.iterdir() if p.name.endswith(".yaml"))


def load_profiles(name: str = "heteroswitch9") -> list[DeviceProfile]:
    """Load and validate ``manifests/devices/<name>.yaml``; devices in manifest order.

    Parameters
    ----------
    name : str, optional
        The manifest (see :func:`available_manifests`).

    Returns
    -------
    list of DeviceProfile

    Raises
    ------
    HetbenchError
        Unknown manifest, or any field missing or invalid (the message names the device and field
        and lists the valid choices).

    References
    ----------
    HeteroSwitch (MLSys 2024) Table 1 (``heteroswitch9``).

    Examples
    --------
    >>> from hetbench.isp.profiles import load_profiles
    >>> phones = load_profiles("heteroswitch9")
    >>> len(phones), round(sum(p.participation for p in phones), 6)
    (9, 1.0)
    """
    return list(_load_cached(name))


@functools.lru_cache(maxsize=8)
def _load_cached(name: str) -> tuple[DeviceProfile, ...]:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or ".." in name:
        raise HetbenchError(f"invalid device manifest name {name!r}")
    res = resources.files("hetbench.manifests").joinpath("devices").joinpath(f"{name}.yaml")
    if not res.is_file():
        raise HetbenchError(f"unknown device manifest {name!r}; available: {available_manifests()}")
    data = yaml.safe_load(res.read_text(encoding="utf-8"))
    return tuple(parse_profiles(data, origin=f"manifests/devices/{name}.yaml"))


def parse_profiles(data: Any, origin: str = "<manifest>") -> list[DeviceProfile]:
    """Validate a parsed manifest (``{"devices": [...], "reference_matrices": {...}}``) and build
    the profiles; participation weights are the market shares normalised to sum 1."""
    if not isinstance(data, Mapping):
        raise HetbenchError(f"{origin}: top level must be a mapping with a 'devices' list")
    refs = _parse_reference_matrices(data.get("reference_matrices") or {}, origin)
    devices = data.get("devices")
    if not isinstance(devices, list) or not devices:
        raise HetbenchError(f"{origin}: 'devices' must be a non-empty list")
    raw = [_parse_device(d, i, refs, origin) for i, d in enumerate(devices)]
    names = [r["name"] for r in raw]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise HetbenchError(f"{origin}: duplicate device names {dupes}")
    total = sum(r["market_share_pct"] for r in raw)
    if not total > 0:
        raise HetbenchError(f"{origin}: market shares sum to {total}; at least one must be positive")
    out = []
    for r in raw:
        pct = r.pop("market_share_pct")
        out.append(DeviceProfile(market_share_pct=pct, market_share=pct / 100.0, participation=pct / total, **r))
    return out


def _parse_reference_matrices(refs: Any, origin: str) -> dict[str, np.ndarray]:
    if not isinstance(refs, Mapping):
        raise HetbenchError(f"{origin}: 'reference_matrices' must be a mapping name -> {{matrix, source}}")
    out = {}
    for key, spec in refs.items():
        where = f"{origin}: reference_matrices.{key}"
        if not isinstance(spec, Mapping) or "matrix" not in spec:
            raise HetbenchError(f"{where}: expected a mapping with 'matrix' (3x3) and 'source'")
        if not isinstance(spec.get("source"), str) or not spec["source"].strip():
            raise HetbenchError(f"{where}: 'source' (a citation) is required")
        out[str(key)] = _matrix3(spec["matrix"], where)
    return out


def _matrix3(value: Any, where: str) -> np.ndarray:
    try:
        m = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise HetbenchError(f"{where}: colour matrix must be 3 rows of 3 numbers, got {value!r}") from None
    if m.shape != (3, 3):
        raise HetbenchError(f"{where}: colour matrix must be 3x3, got shape {m.shape}")
    if not np.all(np.isfinite(m)):
        raise HetbenchError(f"{where}: colour matrix has non-finite entries")
    return m


def _parse_device(d: Any, index: int, refs: dict[str, np.ndarray], origin: str) -> dict:
    if not isinstance(d, Mapping):
        raise HetbenchError(f"{origin}: devices[{index}] must be a mapping")
    name = d.get("name")
    if not isinstance(name, str) or not name.strip():
        raise HetbenchError(f"{origin}: devices[{index}] needs a non-empty 'name'")
    where = f"{origin}: device {name!r}"
    unknown = sorted(set(d) - _DEVICE_KEYS)
    if unknown:
        raise HetbenchError(f"{where}: unknown field(s) {unknown}; valid fields: {sorted(_DEVICE_KEYS)}")
    missing = sorted(_DEVICE_KEYS - _OPTIONAL_DEVICE_KEYS - set(d))
    if missing:
        raise HetbenchError(f"{where}: missing field(s) {missing}")

    def text(key: str, default: str | None = None) -> str:
        v = d.get(key, default)
        if not isinstance(v, str) or not v.strip():
            raise HetbenchError(f"{where}: '{key}' must be a non-empty string, got {v!r}")
        return v.strip()

    def number(key: str, lo: float, hi: float, *, integer: bool = False) -> float:
        v = d[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise HetbenchError(f"{where}: '{key}' must be a number, got {v!r}")
        if integer and int(v) != v:
            raise HetbenchError(f"{where}: '{key}' must be an integer, got {v!r}")
        if not lo <= v <= hi:
            raise HetbenchError(f"{where}: '{key}' = {v} is outside [{lo}, {hi}]")
        return int(v) if integer else float(v)

    vendor = text("vendor")
    tier = d["tier"]
    if tier not in TIERS:
        raise HetbenchError(f"{where}: tier {tier!r} is not one of {list(TIERS)}")
    pct = number("market_share_pct", 0.0, 100.0)
    cfa = d["cfa"]
    if cfa not in CFA_PATTERNS:
        raise HetbenchError(f"{where}: cfa {cfa!r} is not one of {list(CFA_PATTERNS)}")
    bit_depth = number("bit_depth", 8, 16, integer=True)
    max_dn = 2**bit_depth - 1
    white = number("white_level", 1, max_dn)
    black = number("black_level", 0, max_dn)
    if not black < white:
        raise HetbenchError(f"{where}: black_level {black} must be below white_level {white}")
    if white - black < 2 ** (bit_depth - 2):
        raise HetbenchError(f"{where}: white - black = {white - black} leaves under 2 bits of a {bit_depth}-bit range")

    cm = _color_matrix(d["color_matrix"], refs, where)
    if abs(np.linalg.det(cm)) < 1e-6 or np.linalg.cond(cm) > 1e4:
        raise HetbenchError(f"{where}: color_matrix is singular or ill-conditioned (cond {np.linalg.cond(cm):.3g})")
    white_response = cm @ np.array([0.95047, 1.0, 1.08883])
    if np.any(white_response <= 0):
        raise HetbenchError(
            f"{where}: color_matrix maps the D65 white to non-positive camera RGB {white_response.round(4)}; "
            "it must be XYZ -> camera (DNG ColorMatrix1), not camera -> XYZ"
        )

    res = d["resolution"]
    if (
        not isinstance(res, (list, tuple))
        or len(res) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 and v % 2 == 0 for v in res)
    ):
        raise HetbenchError(f"{where}: resolution must be [width, height], two positive even integers, got {res!r}")

    noise = d["noise"]
    if not isinstance(noise, Mapping) or set(noise) != {"shot", "read"}:
        raise HetbenchError(f"{where}: noise must be a mapping with exactly 'shot' and 'read', got {noise!r}")
    for k, (lo, hi) in (("shot", SHOT_RANGE), ("read", READ_RANGE)):
        v = noise[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
            raise HetbenchError(f"{where}: noise.{k} = {v!r} is outside [{lo}, {hi}] (variance on a [0, 1] signal)")

    isp = _validate_isp(d["isp"], where)
    lens = _lens_shading(d.get("lens_shading"), where)

    sources = d["sources"]
    if not isinstance(sources, Mapping):
        raise HetbenchError(f"{where}: 'sources' must be a mapping field -> citation")
    cited = REQUIRED_SOURCES + (("lens_shading",) if "lens_shading" in d else ())
    missing_src = [k for k in cited if not isinstance(sources.get(k), str) or not sources[k].strip()]
    if missing_src:
        raise HetbenchError(
            f"{where}: sources lack a citation or justification for {missing_src} "
            "(write 'no public figure; plausible value chosen because ...' where there is none)"
        )

    return dict(
        name=name.strip(),
        vendor=vendor,
        model=text("model", name),
        tier=tier,
        market_share_pct=pct,
        sensor=text("sensor"),
        sensor_family=text("sensor_family", d["sensor"]),
        cfa=cfa,
        bit_depth=bit_depth,
        black_level=black,
        white_level=white,
        color_matrix=tuple(tuple(float(x) for x in row) for row in cm),
        resolution=(int(res[0]), int(res[1])),
        noise=NoiseModel(shot=float(noise["shot"]), read=float(noise["read"])),
        isp=FrozenDict(isp),
        sources=FrozenDict({str(k): str(v).strip() for k, v in sources.items()}),
        lens_shading=lens,
    )


def _lens_shading(spec: Any, where: str) -> LensShading:
    """A profile's ``lens_shading: {corner: C, correction: none|partial|full}``, or an ideal lens."""
    if spec is None:
        return LensShading()
    if not isinstance(spec, Mapping) or set(spec) != {"corner", "correction"}:
        raise HetbenchError(f"{where}: lens_shading must be a mapping with exactly 'corner' and 'correction', got {spec!r}")
    corner, correction = spec["corner"], spec["correction"]
    if isinstance(corner, bool) or not isinstance(corner, (int, float)) or not 0 < corner <= 1:
        raise HetbenchError(f"{where}: lens_shading.corner = {corner!r} must be in (0, 1] (the corner's relative illumination)")
    if correction not in CORRECTIONS.names():
        raise HetbenchError(f"{where}: unknown lens_shading correction {correction!r}; valid: {list(CORRECTIONS.names())}")
    return LensShading(float(corner), str(correction))


def _color_matrix(spec: Any, refs: dict[str, np.ndarray], where: str) -> np.ndarray:
    """A literal 3x3 list, or ``{"mix": {reference_name: weight, ...}}``: a convex combination of
    ``reference_matrices`` (the construction of Brooks et al.'s random CCM, with fixed weights)."""
    if isinstance(spec, Mapping):
        if set(spec) != {"mix"} or not isinstance(spec["mix"], Mapping) or not spec["mix"]:
            raise HetbenchError(f"{where}: color_matrix must be a 3x3 list or {{mix: {{reference: weight}}}}")
        total = 0.0
        m = np.zeros((3, 3))
        for ref, w in spec["mix"].items():
            if ref not in refs:
                raise HetbenchError(f"{where}: color_matrix mixes unknown reference {ref!r}; known: {sorted(refs)}")
            if isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0:
                raise HetbenchError(f"{where}: mix weight for {ref!r} must be a non-negative number, got {w!r}")
            m += w * refs[ref]
            total += w
        if abs(total - 1.0) > 1e-6:
            raise HetbenchError(f"{where}: color_matrix mix weights sum to {total}, not 1")
        return m
    return _matrix3(spec, f"{where}: color_matrix")


def valid_variants(stage: str) -> tuple[str, ...]:
    """Valid variant names of ``stage``, from the stage registry.

    Parameters
    ----------
    stage : str
        One of :data:`~hetbench.isp.stages.STAGES`.

    Returns
    -------
    tuple of str
        The names, Table 3 order (baseline, option 1, option 2, extras).

    Examples
    --------
    >>> from hetbench.isp.profiles import valid_variants
    >>> valid_variants("demosaic")
    ('ppg', 'bin', 'ahd')
    """
    return REGISTRY[stage].names()


def _validate_isp(isp: Any, where: str) -> dict[str, str]:
    if not isinstance(isp, Mapping):
        raise HetbenchError(f"{where}: 'isp' must be a mapping stage -> variant; stages: {list(STAGES)}")
    unknown = [s for s in isp if s not in STAGES]
    if unknown:
        raise HetbenchError(f"{where}: unknown ISP stage(s) {unknown}; valid stages: {list(STAGES)}")
    missing = [s for s in STAGES if s not in isp]
    if missing:
        raise HetbenchError(f"{where}: ISP lacks stage(s) {missing}; every profile names all of {list(STAGES)}")
    out = {}
    for s in STAGES:
        v = isp[s]
        valid = valid_variants(s)
        if v not in valid:
            raise HetbenchError(f"{where}: unknown {s} variant {v!r}; valid {s} variants: {list(valid)}")
        out[s] = v
    return out
