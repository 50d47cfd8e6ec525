"""``hetbench build devices``: every client is one emulated phone (HeteroSwitch Table 1).

Each device couples a sensor profile (CFA, bit depth, levels, colour matrix, noise) with its own
vendor-typical ISP (``manifests/devices/<profiles>.yaml``). Every scene is re-captured by every
device: an sRGB source (an embedded photograph crop, or a real RAW rendered by the baseline
pipeline) is unprocessed with the device's sensor profile and rendered by the device's ISP.
Clients are allocated to devices by market share (participation weights).
"""

from __future__ import annotations

from hetbench.builders.isp_common import read_device_weights, rebuild_from_recipe
from hetbench.builders.iso_isp import check_size, render_device_split
from hetbench.builders.isp_split import DeviceSplit
from hetbench.isp.jobs import Render

EMBEDDED = "builtin:photos"


def build_devices(
    profiles: str = "heteroswitch9",
    raw_dir: str | None = None,
    labels: str | None = None,
    size: int | None = 224,
    clients: int | None = 50,
    device_weights: str | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    num_proc: int = 1,
    crops_per_photo: int = 8,
    crop_size: int = 384,
    quiet: bool = False,
) -> DeviceSplit:
    from hetbench.isp.pipeline import Pipeline
    from hetbench.isp.profiles import load_profiles

    size = check_size(size)
    devs = load_profiles(profiles)
    devices = [d.name for d in devs]
    isp_of = {d.name: str(Pipeline.parse(dict(d.isp))) for d in devs}
    weights = read_device_weights(device_weights, devices) if device_weights else {d.name: d.market_share for d in devs}
    what = "crops of the real photographs shipped in scikit-image and scikit-learn" if raw_dir is None else f"the RAW captures in '{raw_dir}'"
    description = (
        f"{what}, re-captured by {len(devices)} emulated phones ('{profiles}' profiles: sensor unprocessing, "
        "Brooks et al. 2019, then each phone's own ISP), label = scene"
    )
    return render_device_split(
        "devices", {"profiles": profiles}, devices, isp_of, weights, [Render(d, isp_of[d], profile=d) for d in devices],
        raw_dir, labels, size, clients, device_weights, test_fraction, seed, num_proc, crops_per_photo, crop_size,
        quiet, description, f"capturing {{n}} scenes x {len(devices)} devices", profile_set=profiles,
    )


def rebuild(manifest: dict, num_proc: int = 1):
    """Re-run the recorded recipe (for ``hetbench verify``)."""
    return rebuild_from_recipe(build_devices, manifest, num_proc)
