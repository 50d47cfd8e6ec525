"""ImageNet-ES (Baek et al., CVPR 2024): Tiny-ImageNet validation images shown on a screen and
photographed by one camera under two lights and a grid of sensor settings.

The layout read here is the one the authors' loaders read (``Edw2n/ImageNet-ES``:
``configs/datasets.py``, ``utils/labeler.py``, ``utils/dg_param_controls/modules/datasets.py``), inside
the released ``ImageNet-ES.zip``::

    <data-dir>/es-test/param_control/<light>/param_<k>/<wnid>/ILSVRC2012_val_XXXXXXXX.JPEG

``<light>`` is ``l1`` (light on) or ``l5`` (light off); ``param_1`` .. ``param_27`` are the 3 x 3 x 3
grid of ISO {250, 2000, 16000} x shutter {1/4, 1/60, 1/1000} s x aperture {f/5.0, f/9.0, f/16}
(``settings/grid-options-3x3x3.csv``: ``idx = 1 + iso_i + 3 ss_j + 9 ap_k``; that ``param_<k>`` is
row ``idx = k``, and that this grid is the one of ``es-test``, are inferred from the counts); the
label is the class folder (one of the 200 Tiny-ImageNet wnids). A device is one (light, setting)
pair, ``l1/param_1`` .. ``l5/param_27``: 54 devices of 1,000 images (200 classes x 5), 54,000 in
all. The same file name under every device is the same displayed image: the capture.
"""

from __future__ import annotations

import re
from pathlib import Path

from hetbench.errors import HetbenchError
from hetbench.sources.device_corpora import Corpus, CorpusImage, first_unexpected, image_files, visible_dirs

PART = ("es-test", "param_control")
LIGHTS = {"l1": "light on", "l5": "light off"}
ISO = (250, 2000, 16000)
SHUTTER = ("1/4", "1/60", "1/1000")
APERTURE = ("f/5.0", "f/9.0", "f/16")
NUM_PARAMS = len(ISO) * len(SHUTTER) * len(APERTURE)
LAYOUT = "<data-dir>/es-test/param_control/{l1,l5}/param_<1..27>/<wnid>/<image>"
_WNID = re.compile(r"n\d{8}")


def setting(k: int) -> dict[str, str | int]:
    """ISO, shutter and aperture of ``param_<k>`` (the 3x3x3 grid, aperture-major).

    Examples
    --------
    >>> setting(1), setting(27)
    ({'iso': 250, 'shutter': '1/4', 'aperture': 'f/5.0'}, {'iso': 16000, 'shutter': '1/1000', 'aperture': 'f/16'})
    """
    i, j, a = (k - 1) % 3, (k - 1) // 3 % 3, (k - 1) // 9
    return {"iso": ISO[i], "shutter": SHUTTER[j], "aperture": APERTURE[a]}


def scan(root: Path) -> list[CorpusImage]:
    """Every image of ``es-test/param_control`` under ``root`` (sorted by file); the first missing
    or unexpected path is a :class:`HetbenchError`."""
    base = root.joinpath(*PART)
    if not base.is_dir():
        raise HetbenchError(f"'{root}' does not hold {'/'.join(PART)} (expected {LAYOUT})")
    lights = visible_dirs(base)
    bad = first_unexpected([p.name for p in lights], LIGHTS.__contains__)
    if bad or not lights:
        raise HetbenchError(f"{base / (bad or '')}: expected the light folders l1 and l5 (layout {LAYOUT})")
    out: list[CorpusImage] = []
    for light in lights:
        params = visible_dirs(light)
        ok = lambda n: re.fullmatch(r"param_\d+", n) is not None and 1 <= int(n[6:]) <= NUM_PARAMS  # noqa: E731
        bad = first_unexpected([p.name for p in params], ok)
        if bad or not params:
            raise HetbenchError(f"{light / (bad or '')}: expected folders param_1 .. param_{NUM_PARAMS} (layout {LAYOUT})")
        for param in params:
            classes = visible_dirs(param)
            bad = first_unexpected([p.name for p in classes], lambda n: _WNID.fullmatch(n) is not None)
            if bad or not classes:
                raise HetbenchError(f"{param / (bad or '')}: expected class folders named by wnid, e.g. n02124075 (layout {LAYOUT})")
            device = f"{light.name}/{param.name}"
            for cls in classes:
                for f in image_files(cls):
                    out.append(CorpusImage(f.relative_to(root).as_posix(), cls.name, device, f"{cls.name}/{f.name}"))
    if not out:
        raise HetbenchError(f"'{base}' holds no images (layout {LAYOUT})")
    return sorted(out, key=lambda im: im.file)


def device_setting(device: str) -> dict[str, str | int]:
    """The light and camera setting of a device ``l1/param_<k>``.

    Examples
    --------
    >>> device_setting("l5/param_2")
    {'light': 'light off', 'iso': 2000, 'shutter': '1/4', 'aperture': 'f/5.0'}
    """
    light, param = device.split("/")
    return {"light": LIGHTS[light], **setting(int(param[len("param_"):]))}


DEVICES = tuple(f"{light}/param_{k}" for light in LIGHTS for k in range(1, NUM_PARAMS + 1))
CORPUS = Corpus(
    name="imagenet-es",
    description="ImageNet-ES es-test (Baek et al., CVPR 2024): Tiny-ImageNet validation images photographed "
                "under 2 lights x 27 camera settings (ISO, shutter, aperture); device = light/setting, label = class",
    devices=DEVICES,
    scan=scan,
    layout=LAYOUT,
    setting_of=device_setting,
)
