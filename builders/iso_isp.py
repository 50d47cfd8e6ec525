"""``hetbench build iso-isp``: the same captures re-rendered stage by stage (HeteroSwitch sec. 3.4).

The Table 3 baseline pipeline is one "device"; each other Table 3 option of each listed stage, with
every other stage at baseline, is one more. Every capture is rendered by every device, so devices
differ only by their ISP. Sources: RAW files (``--raw-dir``, labels from ``--labels``), or the
embedded default: crops of the real photographs shipped in scikit-image and scikit-learn,
unprocessed into RAW by the nine HeteroSwitch device profiles in turn (label = scene).
"""

from __future__ import annotations

from typing import Any

from hetbench.builders.isp_common import embedded_sources, raw_files, read_device_weights, read_labels, rebuild_from_recipe
from hetbench.builders.isp_split import DeviceSplit, assemble_device_split
from hetbench.errors import HetbenchError
from hetbench.isp.jobs import CaptureJob, RawSource, Render, run_jobs

EMBEDDED = "builtin:photos"
EMBEDDED_DESCRIPTION = (
    "crops of the real photographs that ship inside scikit-image and scikit-learn, turned into RAW "
    "captures by unprocessing (Brooks et al. 2019) with the nine HeteroSwitch device profiles, label = scene "
    "(HeteroSwitch's protocol in miniature: the same scenes captured by every device)"
)


def check_clients(clients: int | None, devices: list[str]) -> None:
    """Every device needs a client: checked before any rendering."""
    if clients is not None and clients < len(devices):
        raise HetbenchError(f"--clients {clients} is fewer than the {len(devices)} devices; every device needs a client")


def check_size(size: int | None) -> int | None:
    if size is not None and not 16 <= int(size) <= 4096:
        raise HetbenchError(f"--size must be between 16 and 4096 pixels (got {size})")
    return None if size is None else int(size)


def capture_jobs(raw_dir, labels, renders, size, seed, crops_per_photo, crop_size, profile_set="heteroswitch9"):
    """One job per capture, from RAW files or the embedded photographs."""
    from hetbench.isp.profiles import load_profiles

    if raw_dir is not None:
        files = raw_files(raw_dir)
        label_of = read_labels(labels, files, raw_dir)
        from pathlib import Path

        return [
            CaptureJob(i, Path(f).stem, label_of[f], RawSource(f), tuple(renders), size, seed)
            for i, f in enumerate(files)
        ]
    if labels is not None:
        raise HetbenchError("--labels needs --raw-dir")
    if crops_per_photo < 1 or crop_size < 32:
        raise HetbenchError("--crops-per-photo must be >= 1 and --crop-size >= 32")
    profiles = [p.name for p in load_profiles(profile_set)]
    return [
        CaptureJob(i, cid, label, src, tuple(renders), size, seed, base_profile=profiles[i % len(profiles)], profile_set=profile_set)
        for i, (cid, label, src) in enumerate(embedded_sources(crops_per_photo, crop_size, seed))
    ]


def build_iso_isp(
    stages: str = "wb,tone",
    raw_dir: str | None = None,
    labels: str | None = None,
    size: int | None = 224,
    clients: int | None = None,
    device_weights: str | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    num_proc: int = 1,
    crops_per_photo: int = 8,
    crop_size: int = 384,
    quiet: bool = False,
) -> DeviceSplit:
    from hetbench.isp.pipeline import parse_stage_list, table3_variants

    size = check_size(size)
    pipelines = table3_variants(parse_stage_list(stages))
    devices = [p.short_name for p in pipelines]
    isp_of = {p.short_name: str(p) for p in pipelines}
    weights = read_device_weights(device_weights, devices)
    description = EMBEDDED_DESCRIPTION if raw_dir is None else f"the RAW captures in '{raw_dir}'"
    return render_device_split(
        "iso-isp", {"stages": stages}, devices, isp_of, weights, [Render(d, isp_of[d]) for d in devices],
        raw_dir, labels, size, clients, device_weights, test_fraction, seed, num_proc, crops_per_photo, crop_size,
        quiet, description, f"rendering {{n}} captures x {len(devices)} ISP variants",
    )


def render_device_split(
    method: str, family_params: dict[str, Any], devices: list[str], isp_of: dict[str, str], weights: dict[str, float],
    renders: list[Render], raw_dir, labels, size, clients, device_weights, test_fraction, seed, num_proc,
    crops_per_photo, crop_size, quiet, description: str, progress: str, profile_set: str = "heteroswitch9",
) -> DeviceSplit:
    """The part every device builder shares: check, render every capture for every device, record
    the recipe, assemble the split."""
    check_clients(clients, devices)
    jobs = capture_jobs(raw_dir, labels, renders, size, seed, crops_per_photo, crop_size, profile_set=profile_set)
    results = run_jobs(jobs, num_proc, quiet, progress.format(n=len(jobs)))
    params: dict[str, Any] = dict(family_params)
    params.update({
        "raw_dir": raw_dir, "labels": labels, "size": size, "clients": clients,
        "device_weights": weights if device_weights else None, "test_fraction": test_fraction,
        "crops_per_photo": crops_per_photo if raw_dir is None else None,
        "crop_size": crop_size if raw_dir is None else None,
    })
    recipe = {"method": method, "params": params, "seed": seed, "split": "train"}
    source = {"dataset": raw_dir or EMBEDDED, "label_col": "label", "id_col": "sample_id", "labels": labels}
    license = "other" if raw_dir else "bsd-3-clause"
    return assemble_device_split(jobs, results, devices, isp_of, weights, clients, test_fraction, seed, recipe, source, description, license)


def rebuild(manifest: dict, num_proc: int = 1):
    """Re-run the recorded recipe (for ``hetbench verify``)."""
    return rebuild_from_recipe(build_iso_isp, manifest, num_proc)
