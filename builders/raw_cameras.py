"""``hetbench build real-devices`` on a RAW corpus with one device per camera model (MIT-Adobe FiveK, recipe
reader ``fivek-cameras``): every photograph rendered once by the baseline ISP, its device the camera that
took it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hetbench.builders.captures import check_size
from hetbench.builders.corpus_split import client_allocation, corpus_device_split, corpus_extras, folder_name, split_by_capture
from hetbench.builders.row_spill import RowSpill
from hetbench.errors import HetbenchError
from hetbench.pipeline import PreparedSplit

def prepare_raw_cameras(spec, settings, recipe, data_dir, clients, clients_per_device, size, test_fraction, seed,
                         num_proc, quiet, engine, on_checked, purity: float = 1.0) -> PreparedSplit:
    """A RAW corpus with one device per camera model (MIT-Adobe FiveK): every photograph rendered once
    by the baseline ISP (HeteroSwitch Table 3) at ``size``, its device the camera its RAW file names
    (Make and Model tags), clients allocated to cameras by their number of photographs."""
    from hetbench.builders.captures import refused_file, run_jobs
    from hetbench.isp.jobs import CaptureJob, RawSource, Render
    from hetbench.isp.pipeline import Pipeline
    from hetbench.sources.device_corpora import CorpusImage
    from hetbench.sources.fivek import fivek_captures

    if clients is not None and clients_per_device is not None:
        raise HetbenchError("give `clients` or `clients_per_device`, not both")
    size = check_size(224 if size is None else size)  # RAW files are rendered: they need a size
    if not 0.0 < test_fraction < 1.0:
        raise HetbenchError(f"`test_fraction` must be between 0 and 1 (got {test_fraction})")
    found = fivek_captures(data_dir, settings["field"])
    files = sorted(found.label_of)
    if on_checked is not None:
        on_checked()
    baseline = str(Pipeline.parse({}))
    jobs = [CaptureJob(i, Path(f).stem, found.label_of[f], RawSource(f), (Render("baseline", baseline),), size, seed,
                       refused=refused_file(f, data_dir, "--data-dir"))  # a link out of --data-dir: skipped unread
            for i, f in enumerate(files)]
    results = run_jobs(jobs, num_proc, quiet, f"rendering {len(jobs):,} RAW photographs", engine, stream=True)
    root = Path(data_dir)
    spill = RowSpill()
    try:
        kept, skipped = [], []
        for j, r in zip(jobs, results):  # each rendered photograph to disk as it comes
            file = Path(j.source.path).relative_to(root).as_posix()
            if r.skipped:
                skipped.append({"file": file, "reason": r.skipped})
            else:
                kept.append((CorpusImage(file, r.label, r.camera or "unknown camera", j.capture_id), spill.add(r.images[0])))
        skipped += found.unlabelled
        if not kept:
            raise HetbenchError(f"no photograph of '{data_dir}' could be rendered ({len(skipped)} skipped)")
        photos: dict[str, int] = {}
        for im, _ in kept:
            photos[im.device] = photos.get(im.device, 0) + 1
        devices = sorted(photos, key=lambda d: (-photos[d], d))  # most photographs first
        clients, weights = client_allocation(clients, clients_per_device, devices, {d: float(photos[d]) for d in devices})
        rows, counts = split_by_capture(kept, test_fraction, seed, per_device=True)  # every camera keeps a training photo
    except BaseException:
        spill.close()
        raise
    for split in rows.values():
        split["isp"] = [baseline] * len(split["isp"])
    params: dict[str, Any] = {"recipe": recipe, "data_dir": str(data_dir), "clients": None if clients_per_device else clients,
                              "clients_per_device": clients_per_device, "size": size, "test_fraction": test_fraction}
    description = f"{str(spec.get('description', recipe)).split(':')[0]} (local copy '{folder_name(data_dir)}')"
    return corpus_device_split(spec, recipe, data_dir, description, spill, rows, kept, params, clients, weights, purity,
                               seed, corpus_extras(spec, None, devices, weights, counts, skipped,
                                                   len(files) + len(found.unlabelled)))
