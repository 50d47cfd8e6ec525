"""Shared machinery of the ISP builders (iso-isp, devices): capture sources, rendering on all
cores, and turning renders into a publishable federated split.

Work is one job per capture: the job loads (or unprocesses) the capture once and renders every
variant of it, so the pipeline's prefix cache is shared within the job. Jobs run in worker
processes (``--num-proc``), one image per process at a time, with ``OMP_NUM_THREADS=1`` (LibRaw
threads gave no speed-up on these machines). Every random choice inside a job comes from a
Generator seeded by (seed, capture index, device index), so the output does not depend on the
number of workers; results come back in job order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from hetbench.errors import HetbenchError


@dataclass(frozen=True)
class PhotoSource:
    """An sRGB photograph crop (uint8 H x W x 3) that unprocessing turns into RAW."""

    name: str
    image: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class RawSource:
    """A RAW file on disk."""

    path: str


@dataclass(frozen=True)
class Render:
    """One output image of a job: which device renders it, unprocessed by which profile (None:
    use the capture as it is), through which pipeline string."""

    device: str
    pipeline: str
    profile: str | None = None


@dataclass(frozen=True)
class CaptureJob:
    index: int
    capture_id: str
    label: str
    source: PhotoSource | RawSource
    renders: tuple[Render, ...]
    size: int | None
    seed: int
    base_profile: str | None = None  # profile that unprocesses a PhotoSource when a Render has none
    profile_set: str = "heteroswitch9"


@dataclass
class JobResult:
    index: int
    capture_id: str
    label: str
    images: list[bytes]  # PNG, one per render, in the job's render order
    stats: list[dict]
    skipped: str | None = None


def _png(rgb: np.ndarray) -> bytes:
    import cv2

    ok, buf = cv2.imencode(".png", np.ascontiguousarray(rgb[..., ::-1]))
    if not ok:  # pragma: no cover - OpenCV only fails on malformed arrays
        raise RuntimeError("PNG encoding failed")
    return buf.tobytes()


def _profiles(name: str) -> dict:
    from hetbench.isp.profiles import load_profiles

    return {p.name: p for p in load_profiles(name)}


def job_rng(seed: int, *path: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed), *[int(p) for p in path]]))


def run_job(job: CaptureJob) -> JobResult:
    """Load or unprocess the capture, render every requested device; never raises on a bad RAW."""
    from hetbench.isp.image_stats import image_stats
    from hetbench.isp.pipeline import Pipeline, Renderer
    from hetbench.isp.raw import UnsupportedRaw, read_raw
    from hetbench.isp.synth import unprocess

    renderer = Renderer(size=job.size)
    images: list[bytes] = []
    stats: list[dict] = []
    try:
        if isinstance(job.source, RawSource):
            capture = read_raw(job.source.path)
            srgb = None
        else:
            capture = None
            srgb = job.source.image
        profiles = _profiles(job.profile_set) if (srgb is not None or any(r.profile for r in job.renders)) else {}
        # group renders by the capture they need: (profile) -> [(position, render)]
        groups: dict[str | None, list[tuple[int, Render]]] = {}
        for pos, r in enumerate(job.renders):
            groups.setdefault(r.profile or (job.base_profile if srgb is not None else None), []).append((pos, r))
        out: list[Any] = [None] * len(job.renders)
        for gi, (profile_name, members) in enumerate(sorted(groups.items(), key=lambda kv: str(kv[0]))):
            if profile_name is None:
                cap = capture
            else:
                if srgb is None:  # a real RAW re-captured by another sensor: render it first
                    srgb = renderer_native(capture)
                cap = unprocess(srgb, profiles[profile_name], job_rng(job.seed, job.index, gi), job.capture_id)
            rendered = renderer.render_all(cap, [Pipeline.parse(r.pipeline) for _, r in members])
            for (pos, _), res in zip(members, rendered):
                out[pos] = res
        for res in out:
            images.append(_png(res.image))
            stats.append(image_stats(res.image, res.jpeg_bytes))
    except UnsupportedRaw as exc:
        return JobResult(job.index, job.capture_id, job.label, [], [], skipped=exc.reason)
    return JobResult(job.index, job.capture_id, job.label, images, stats)


def renderer_native(capture) -> np.ndarray:
    """The baseline render of a capture at its own resolution (source for sensor emulation)."""
    from hetbench.isp.pipeline import Pipeline, Renderer

    return Renderer(size=None).render(capture, Pipeline.parse("compress=none")).image


def _init_worker() -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import cv2

        cv2.setNumThreads(1)
    except ImportError:  # pragma: no cover
        pass


WORKER_PRELOAD = ["hetbench.isp.image_stats", "hetbench.isp.pipeline", "hetbench.isp.synth", "hetbench.isp.profiles"]


def _worker_context():
    """A forkserver that has imported the ISP once (colour, rawpy and OpenCV take seconds to
    import), so workers start warm. Never plain fork: a parent that has run LibRaw (OpenMP) or
    OpenCV holds thread-pool locks that deadlock a forked child. Spawn where there is no forkserver."""
    import multiprocessing as mp

    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(WORKER_PRELOAD)
    return ctx


def run_jobs(jobs: Sequence[CaptureJob], num_proc: int = 1, quiet: bool = False, desc: str = "rendering") -> list[JobResult]:
    """Run jobs on ``num_proc`` worker processes (1: in this process); results in job order."""
    from hetbench.progress import progress_bar

    if num_proc < 1:
        raise HetbenchError(f"--num-proc must be at least 1 (got {num_proc})")
    results: list[JobResult] = []
    with progress_bar(desc, len(jobs), quiet) as bar:
        if num_proc == 1 or len(jobs) <= 1:
            for job in jobs:
                results.append(run_job(job))
                bar.update(1)
        else:
            with _worker_context().Pool(num_proc, initializer=_init_worker) as pool:
                for res in pool.imap(run_job, jobs, chunksize=1):
                    results.append(res)
                    bar.update(1)
    return results


# ---- inputs ---------------------------------------------------------------------------------
RAW_SUFFIXES = {
    ".dng", ".nef", ".nrw", ".cr2", ".cr3", ".crw", ".arw", ".srf", ".sr2", ".rw2", ".raf", ".orf",
    ".pef", ".srw", ".kdc", ".dcr", ".mrw", ".3fr", ".erf", ".mef", ".mos", ".raw", ".rwl", ".x3f", ".iiq",
}


def raw_files(raw_dir: str) -> list[str]:
    """RAW files under ``raw_dir`` (recursive, sorted); a clear error for a missing or empty folder."""
    from pathlib import Path

    root = Path(raw_dir)
    if not root.is_dir():
        raise HetbenchError(f"--raw-dir '{raw_dir}' is not a folder")
    files = sorted(str(p) for p in root.rglob("*") if p.is_file() and p.suffix.lower() in RAW_SUFFIXES)
    if not files:
        raise HetbenchError(f"--raw-dir '{raw_dir}' holds no RAW files ({', '.join(sorted(RAW_SUFFIXES)[:8])}, ...)")
    return files


def read_labels(labels_csv: str | None, files: list[str], raw_dir: str) -> dict[str, str]:
    """file -> label from a CSV with columns ``file,label`` (paths relative to ``raw_dir``); without
    a CSV every capture is labelled ``unlabelled``."""
    import csv
    from pathlib import Path

    if labels_csv is None:
        return {f: "unlabelled" for f in files}
    path = Path(labels_csv)
    if not path.is_file():
        raise HetbenchError(f"--labels '{labels_csv}' not found")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or not {"file", "label"} <= set(reader.fieldnames):
            raise HetbenchError(f"--labels '{labels_csv}' needs the columns file,label")
        rows = list(reader)
    root = Path(raw_dir).resolve()
    by_path = {str((root / r["file"]).resolve()): r["label"] for r in rows}
    missing = [r["file"] for r in rows if not (root / r["file"]).is_file()]
    if missing:
        raise HetbenchError(f"--labels names {len(missing)} file(s) not in --raw-dir, e.g. '{missing[0]}'")
    out = {f: by_path.get(str(Path(f).resolve())) for f in files}
    unlabelled = [f for f, v in out.items() if v is None]
    if unlabelled:
        raise HetbenchError(f"{len(unlabelled)} RAW file(s) have no label in --labels, e.g. '{Path(unlabelled[0]).name}'")
    return out  # type: ignore[return-value]


def embedded_sources(crops_per_photo: int, crop_size: int, seed: int) -> list[tuple[str, str, PhotoSource]]:
    """(capture_id, label, source) for the embedded default: crops of the real photographs that
    ship inside scikit-image and scikit-learn, label = scene."""
    from hetbench.isp.synth import embedded_photographs, scene_crops

    out = []
    for si, (scene, image) in enumerate(embedded_photographs()):
        crops = scene_crops(image, crops_per_photo, crop_size, job_rng(seed, 10_000 + si))
        for ci, crop in enumerate(crops):
            cid = f"{scene}-{ci:02d}"
            out.append((cid, scene, PhotoSource(cid, crop)))
    return out


def allocate_clients(num_clients: int, weights: dict[str, float], rng: np.random.Generator) -> dict[str, int]:
    """Clients per device: proportional to ``weights`` (largest remainder), at least one each."""
    from hetbench.partitioners._alloc import largest_remainder

    names = list(weights)
    if num_clients < len(names):
        raise HetbenchError(f"--clients {num_clients} is fewer than the {len(names)} devices; every device needs a client")
    w = np.array([max(float(weights[n]), 0.0) for n in names])
    if not np.isfinite(w).all() or w.sum() <= 0:
        raise HetbenchError("device weights must be non-negative numbers with a positive sum")
    extra = num_clients - len(names)
    counts = 1 + largest_remainder(w / w.sum() * extra, extra, rng)
    return dict(zip(names, counts.tolist()))


def read_device_weights(path: str | None, devices: Sequence[str]) -> dict[str, float]:
    """Uniform weights, or a JSON/YAML mapping device -> weight (every device named)."""
    if path is None:
        return {d: 1.0 for d in devices}
    import yaml

    try:
        with open(path) as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise HetbenchError(f"--device-weights '{path}' cannot be read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise HetbenchError(f"--device-weights '{path}' is not JSON/YAML") from exc
    if not isinstance(data, dict):
        raise HetbenchError(f"--device-weights '{path}' must map device names to weights")
    unknown = sorted(set(map(str, data)) - set(devices))
    if unknown:
        raise HetbenchError(f"--device-weights names unknown devices: {', '.join(unknown)} (devices: {', '.join(devices)})")
    missing = [d for d in devices if d not in data]
    if missing:
        raise HetbenchError(f"--device-weights misses devices: {', '.join(missing)}")
    try:
        return {d: float(data[d]) for d in devices}
    except (TypeError, ValueError) as exc:
        raise HetbenchError(f"--device-weights '{path}': weights must be numbers") from exc


def rebuild_from_recipe(build, manifest: dict, num_proc: int = 1):
    """Re-run an ISP builder with the parameters a manifest records; returns the FederatedSplit."""
    import tempfile

    import yaml

    part = manifest["recipe"]["partition"]
    params = dict(part["params"])
    weights = params.pop("device_weights", None)
    with tempfile.TemporaryDirectory() as tmp:
        if weights:
            params["device_weights"] = os.path.join(tmp, "weights.yaml")
            with open(params["device_weights"], "w") as fh:
                yaml.safe_dump(weights, fh)
        params["crops_per_photo"] = params.get("crops_per_photo") or 8
        params["crop_size"] = params.get("crop_size") or 384
        return build(seed=part["seed"], num_proc=num_proc, quiet=True, **params).split
