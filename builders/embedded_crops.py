"""The embedded photographs as captures (``build iso-isp`` / ``build devices`` without ``--raw-dir``): how
many crops of each, their side, which of them are test crops (``--test-crops``), and the bounds on all three.
The crops are cut here; :mod:`hetbench.builders.captures` makes one render job of each.
"""

from __future__ import annotations

from hetbench.errors import HetbenchError
from hetbench.isp.jobs import PhotoSource
from hetbench.seeding import make_rng

#: The embedded default of ``build iso-isp`` / ``build devices``: 75 crops of 256 px per
#: photograph. Over the 7 scenes that is 525 captures, of which ``test_fraction`` 0.2 holds out
#: 105; every device renders every capture, so each device is tested on 105 images (at least 100,
#: so per-device accuracies differ by more than noise). Render cost grows with the crop's area.
CROPS_PER_PHOTO = 75
CROP_SIZE = 256
#: What a recipe that records no crops meant: the embedded default before it was raised (issue 15),
#: 8 crops of 384 px per photograph. A recipe made from RAW files records None (they play no part).
RECIPE_CROPS_IF_UNRECORDED = {"crops_per_photo": 8, "crop_size": 384}
#: Most crops per photograph (``--crops-per-photo``, a recipe's or claim's ``crops_per_photo``): 500, so
#: 3,500 captures per device; more is refused in one line (the crops are cut in memory before rendering).
MAX_CROPS_PER_PHOTO = 500
#: Crop sides allowed (``--crop-size``): from 32 pixels to 512, the largest shorter side among the embedded
#: photographs (astronaut, 512 x 512). A photograph smaller than the crop gives crops of its own shorter side
#: (chelsea: 300); a larger value would only be clamped, so it is refused.
CROP_SIZE_RANGE = (32, 512)
#: How the embedded photographs' test crops are chosen (``--test-crops``): ``random`` holds out
#: ``test_fraction`` of one pool of random crops, stratified by scene (a test crop may overlap training
#: crops: the test measures scenes the model has seen); ``unseen-region`` cuts each photograph's test crops
#: from a band at one end of it that no training crop touches
#: (:func:`hetbench.sources.photographs.region_crops`): the test measures parts of each scene no training
#: image showed.
TEST_CROPS = ("random", "unseen-region")


def embedded_sources(crops_per_photo: int, crop_size: int, seed: int, test_crops: str = "random",
                     test_fraction: float = 0.2) -> list[tuple[str, str, PhotoSource, bool | None]]:
    """(capture_id, label, source, held_out) for the embedded default: crops of the real photographs that
    ship inside scikit-image and scikit-learn, label = scene.

    With ``test_crops`` ``random`` every crop is drawn from the whole photograph and ``held_out`` is None
    (the split holds out ``test_fraction`` of the captures, :func:`hetbench.builders.device_split.held_out_captures`);
    with ``unseen-region`` each photograph gives ``round(test_fraction x crops_per_photo)`` (at least 1)
    test crops from a band no training crop touches (:func:`hetbench.sources.photographs.region_crops`,
    the band a ``test_fraction`` share of the longer side) and ``held_out`` says which.

    Examples
    --------
    >>> from hetbench.builders.embedded_crops import embedded_sources
    >>> found = embedded_sources(5, 64, 0, "unseen-region", 0.2)
    >>> [(cid, held) for cid, _, _, held in found[:5]]
    [('astronaut-00', False), ('astronaut-01', False), ('astronaut-02', False), ('astronaut-03', False), ('astronaut-04', True)]
    """
    from hetbench.sources.photographs import embedded_photographs, region_crops, scene_crops

    check_test_crops(test_crops, crops_per_photo, test_fraction)
    out: list[tuple[str, str, PhotoSource, bool | None]] = []
    for si, (scene, image) in enumerate(embedded_photographs()):
        rng = make_rng(seed, 10_000 + si)
        if test_crops == "random":
            crops, held = scene_crops(image, crops_per_photo, crop_size, rng), [None] * crops_per_photo
        else:
            n_test = min(crops_per_photo - 1, max(1, round(test_fraction * crops_per_photo)))
            try:
                train, test = region_crops(image, crops_per_photo - n_test, n_test, crop_size, test_fraction, rng)
            except ValueError as exc:
                raise HetbenchError(f"`test_crops` unseen-region: photograph '{scene}': {exc}; lower `crop_size` "
                                    "or `test_fraction`") from None
            crops, held = train + test, [False] * len(train) + [True] * len(test)
        for ci, (crop, is_test) in enumerate(zip(crops, held)):
            cid = f"{scene}-{ci:02d}"
            out.append((cid, scene, PhotoSource(cid, crop), is_test))
    return out


def check_test_crops(test_crops: object, crops_per_photo: int, test_fraction: float) -> None:
    """Refuse an unknown ``--test-crops`` or an ``unseen-region`` one that cannot split, in one line.

    Examples
    --------
    >>> from hetbench.builders.embedded_crops import check_test_crops
    >>> check_test_crops("unseen-region", 2, 0.2)
    >>> check_test_crops("unseen-region", 1, 0.2)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: test_crops unseen-region needs at least 2 crops per photograph, one to train on and one to test (got crops_per_photo 1)
    """
    if test_crops not in TEST_CROPS:
        raise HetbenchError(f"`test_crops` must be one of {', '.join(TEST_CROPS)} (got {test_crops!r})")
    if test_crops == "unseen-region" and crops_per_photo < 2:
        raise HetbenchError("`test_crops` unseen-region needs at least 2 crops per photograph, one to train on and "
                            f"one to test (got `crops_per_photo` {crops_per_photo})")
    if not 0.0 < test_fraction < 1.0:
        raise HetbenchError(f"`test_fraction` must be between 0 and 1 (got {test_fraction})")


def check_crops(crops_per_photo: object, crop_size: object) -> None:
    """Refuse crops of the embedded photographs outside :data:`MAX_CROPS_PER_PHOTO` and
    :data:`CROP_SIZE_RANGE` (or not integers: a manifest's values are checked too) in one line.

    Parameters
    ----------
    crops_per_photo, crop_size : int
        ``--crops-per-photo`` and ``--crop-size`` (a recipe's ``crops_per_photo`` and ``crop_size``).

    Examples
    --------
    >>> from hetbench.builders.embedded_crops import check_crops
    >>> check_crops(75, 256)
    >>> check_crops(75, 100000)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: crop_size must be an integer between 32 and 512 pixels, the largest embedded photograph's shorter side (got 100000)
    >>> check_crops(10**6, 256)
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: crops_per_photo must be an integer between 1 and 500 (got 1000000)
    """
    import numbers

    lo, hi = CROP_SIZE_RANGE
    for name, value, low, high, unit in (
        ("`crops_per_photo`", crops_per_photo, 1, MAX_CROPS_PER_PHOTO, ""),
        ("`crop_size`", crop_size, lo, hi, " pixels, the largest embedded photograph's shorter side"),
    ):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
            shown = value if isinstance(value, numbers.Integral) and not isinstance(value, bool) else repr(value)
            raise HetbenchError(f"{name} must be an integer between {low} and {high}{unit} (got {shown})")
