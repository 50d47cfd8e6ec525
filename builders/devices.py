"""``hetbench build devices``: every client is one emulated phone (HeteroSwitch Table 1).

Each device couples a sensor profile (CFA, bit depth, levels, colour matrix, noise) with its own
vendor-typical ISP (``manifests/devices/<profiles>.yaml``). Every scene is re-captured by every
device: an sRGB source (an embedded photograph crop, or a real RAW rendered by the baseline
pipeline) is unprocessed with the device's sensor profile and rendered by the device's ISP.
Clients are allocated to devices by market share (participation weights).
"""

from __future__ import annotations

from typing import Any

from hetbench.builders.isp_common import Render, read_device_weights, rebuild_from_recipe, run_jobs
from hetbench.builders.iso_isp import capture_jobs, check_clients, check_size
from hetbench.builders.isp_split import DeviceSplit, assemble_device_split

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
    renders = [Render(d, isp_of[d], profile=d) for d in devices]
    check_clients(clients, devices)
    jobs = capture_jobs(raw_dir, labels, renders, size, seed, crops_per_photo, crop_size, profile_set=profiles)
    results = run_jobs(jobs, num_proc, quiet, f"capturing {len(jobs)} scenes x {len(devices)} devices")
    params: dict[str, Any] = {
        "profiles": profiles, "raw_dir": raw_dir, "labels": labels, "size": size, "clients": clients,
        "device_weights": weights if device_weights else None, "test_fraction": test_fraction,
        "crops_per_photo": crops_per_photo if raw_dir is None else None,
        "crop_size": crop_size if raw_dir is None else None,
    }
    recipe = {"method": "devices", "params": params, "seed": seed, "split": "train"}
    source = {"dataset": raw_dir or EMBEDDED, "label_col": "label", "id_col": "sample_id", "labels": labels}
    what = "crops of the real photographs shipped in scikit-image and scikit-learn" if raw_dir is None else f"the RAW captures in '{raw_dir}'"
    description = (
        f"{what}, re-captured by {len(devices)} emulated phones ('{profiles}' profiles: sensor unprocessing, "
        "Brooks et al. 2019, then each phone's own ISP), label = scene"
    )
    license = "other" if raw_dir else "bsd-3-clause"
    return assemble_device_split(jobs, results, devices, isp_of, weights, clients, test_fraction, seed, recipe, source, description, license)


def rebuild(manifest: dict, num_proc: int = 1):
    """Re-run the recorded recipe (for ``hetbench verify``)."""
    return rebuild_from_recipe(build_devices, manifest, num_proc)
