"""``hetbench build devices``: every client is one emulated phone (HeteroSwitch Table 1).

Each device couples a sensor profile (CFA, bit depth, levels, colour matrix, noise) with its own
vendor-typical ISP (``manifests/devices/<profiles>.yaml``). Every scene is re-captured by every
device: an sRGB source (an embedded photograph crop, or a real RAW rendered by the baseline
pipeline) is unprocessed with the device's sensor profile and rendered by the device's ISP.
Clients are allocated to devices by market share (participation weights).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from hetbench.builders.captures import check_size, read_device_weights, rebuild_from_recipe
from hetbench.builders.embedded_crops import CROP_SIZE, CROPS_PER_PHOTO
from hetbench.builders.iso_isp import render_device_split
from hetbench.engines import EngineSpec
from hetbench.isp.jobs import Render
from hetbench.naming import SPLITS_ROOT
from hetbench.pipeline import PreparedSplit
from hetbench.seeding import check_seed

EMBEDDED = "builtin:photos"


def prepare_devices(
    profiles: str = "heteroswitch9",
    raw_dir: str | None = None,
    labels: str | None = None,
    size: int | None = 224,
    clients: int | None = 50,
    device_weights: str | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    num_proc: int | None = None,
    crops_per_photo: int = CROPS_PER_PHOTO,
    crop_size: int = CROP_SIZE,
    quiet: bool = False,
    title: str | None = None,
    engine: EngineSpec | None = None,
    on_checked: Callable[[], None] | None = None,
    lens_shading: str | None = None,
    purity: float = 1.0,
    test_crops: str = "random",
) -> PreparedSplit:
    """Capture every scene with every emulated phone of ``profiles``; the split, not yet published.

    Parameters
    ----------
    profiles : str
        Device profile set (``manifests/devices/<profiles>.yaml``).
    clients : int, optional
        Number of clients, allocated to devices by market share (or ``device_weights``).
    Others
        As for :func:`hetbench.builders.iso_isp.prepare_iso_isp` (``engine`` included: not part of
        the recipe; ``lens_shading`` too: RAW files only, each phone's lens otherwise comes from its profile;
        ``purity``: the share of a client's images taken by its own phone; ``test_crops``: ``random`` or
        ``unseen-region``, the embedded photographs' test crops).

    References
    ----------
    Kim et al., HeteroSwitch, MLSys 2024: Table 1 (nine phones and their market shares); Brooks et
    al., CVPR 2019 (unprocessing sRGB into a sensor's RAW).

    Examples
    --------
    >>> from hetbench.builders.devices import prepare_devices
    >>> split = prepare_devices(clients=10, size=32, crops_per_photo=1, crop_size=96, quiet=True).build()
    >>> split.num_clients, len(split.client_names[0].split("/"))
    (10, 2)
    """
    from hetbench.isp.pipeline import Pipeline
    from hetbench.isp.profiles import load_profiles

    seed = check_seed(seed)
    size = check_size(size)
    devs = load_profiles(profiles)
    devices = [d.name for d in devs]
    isp_of = {d.name: str(Pipeline.parse(dict(d.isp))) for d in devs}
    weights = read_device_weights(device_weights, devices) if device_weights else {d.name: d.market_share for d in devs}
    what = ("crops of the real photographs shipped in scikit-image and scikit-learn" if raw_dir is None
            else f"the RAW captures in '{os.path.basename(os.path.abspath(raw_dir))}'")  # its name, never its path
    description = (
        f"{what}, re-captured by {len(devices)} emulated phones ('{profiles}' profiles: sensor unprocessing, "
        "Brooks et al. 2019, then each phone's own ISP), label = scene"
    )
    return render_device_split(
        "devices", {"profiles": profiles}, isp_of, weights, [Render(d, isp_of[d], profile=d) for d in devices],
        raw_dir, labels, size, clients, device_weights, test_fraction, seed, num_proc, crops_per_photo, crop_size,
        quiet, description, f"capturing {{n}} scenes x {len(devices)} devices", profile_set=profiles, title=title, engine=engine,
        on_checked=on_checked, lens_shading=lens_shading, purity=purity, test_crops=test_crops,
    )


def build_devices(
    out: str | os.PathLike | None = None, *, name: str | None = None, overwrite: bool = False, quiet: bool = False,
    profiles: str = "heteroswitch9", clients: int | None = 50, raw_dir: str | None = None, labels: str | None = None,
    lens_shading: str = "dng", size: int | None = 224, device_weights: str | None = None, test_fraction: float = 0.2,
    crops_per_photo: int = CROPS_PER_PHOTO, crop_size: int = CROP_SIZE, num_proc: int | None = None,
    purity: float = 1.0, seed: int = 0, engine: EngineSpec | None = None, test_crops: str = "random",
) -> tuple[Path, dict[str, Any]]:
    """Capture every scene with every emulated phone of ``profiles`` and publish the device split
    (``hetbench build devices``); returns the folder and its report.

    Each device couples a sensor profile (CFA, bit depth, levels, colour matrix, noise) with its own
    vendor-typical ISP; clients are allocated to devices by market share. The output folder is
    checked once the inputs are, before any rendering.

    Parameters
    ----------
    out : str or os.PathLike, optional
        Output folder (default ``hetbench_splits/devices-<profiles>-n<clients>-s<seed>``).
    name : str, optional
        Data set name in the card and manifest (default: the folder's tag).
    overwrite : bool
        Replace ``out`` if it exists (default False).
    quiet : bool
        No progress bar (default False).
    profiles : str
        Device profile set, ``manifests/devices/<profiles>.yaml`` (default ``"heteroswitch9"``: the nine
        phones of HeteroSwitch Table 1 with their market shares).
    clients : int, optional
        Number of clients, allocated to devices by market share or ``device_weights``; at least one per
        device (default 50; None means 50 too).
    raw_dir : str, optional
        Folder of RAW files, rendered by the baseline pipeline and re-captured by every phone; default
        None: the embedded photographs.
    labels : str, optional
        CSV with columns ``file,label`` (files relative to ``raw_dir``); default None.
    lens_shading : str
        RAW files only: ``"dng"`` (default), ``"none"`` or ``"cos4:C"``, as for
        :func:`hetbench.builders.iso_isp.build_iso_isp`; each phone's own lens comes from its profile.
    size : int, optional
        Side of the square output images in pixels, 16-4096 (default 224).
    device_weights : str, optional
        JSON/YAML file mapping device -> participation weight (default None: the profiles' market shares).
    test_fraction : float
        Share of the captures held out for testing, by capture (default 0.2); every phone captures every
        test scene.
    crops_per_photo : int
        Embedded photographs only: crops per photograph (default 75).
    crop_size : int
        Embedded photographs only: side of each crop in pixels (default 256).
    num_proc : int, optional
        Worker processes rendering the captures (default None: the CPU cores this process may use).
    purity : float
        Share of each client's training images taken by its own phone, in [1/D, 1] (default 1).
    seed : int
        Seed of every random choice (default 0).
    engine : EngineSpec, optional
        What runs the renders (default None: local worker processes); never recorded.
    test_crops : {"random", "unseen-region"}
        Embedded photographs only: how the test crops are chosen, as for
        :func:`hetbench.builders.iso_isp.build_iso_isp` (default ``random``).

    Returns
    -------
    folder : pathlib.Path
        The published folder.
    report : dict
        Its ``report.json`` (``devices`` with each phone's clients, ``captures``, ...).

    References
    ----------
    Kim et al., HeteroSwitch, MLSys 2024: Table 1 (nine phones and their market shares); Brooks et
    al., CVPR 2019 (unprocessing sRGB into a sensor's RAW).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from hetbench.builders.devices import build_devices
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder, report = build_devices(Path(tmp.name) / "phones", clients=9, size=16, crops_per_photo=1,
    ...                                crop_size=64, num_proc=1, quiet=True)
    >>> len(report["devices"]), report["num_clients"], {d["clients"] for d in report["devices"].values()}
    (9, 9, {1})
    >>> tmp.cleanup()
    """
    from hetbench.builders.iso_isp import publish_checked

    clients = 50 if clients is None else clients
    params = {"profiles": profiles, "raw_dir": raw_dir, "labels": labels, "size": size, "clients": clients,
              "device_weights": device_weights, "test_fraction": test_fraction, "seed": seed, "num_proc": num_proc,
              "crops_per_photo": crops_per_photo, "crop_size": crop_size, "quiet": quiet, "engine": engine,
              "lens_shading": lens_shading, "purity": purity, "test_crops": test_crops}
    tag = (f"devices-{profiles}-n{clients}{f'-p{purity:g}' if purity != 1.0 else ''}"
           f"{'-unseen' if test_crops == 'unseen-region' else ''}-s{seed}")
    return publish_checked(prepare_devices, Path(out) if out else SPLITS_ROOT / tag, name or tag, overwrite, params)


def rebuild(manifest: dict, num_proc: int = 1):
    """Re-run the recorded recipe (for ``hetbench verify``); returns the split."""
    return rebuild_from_recipe(prepare_devices, manifest, num_proc)
