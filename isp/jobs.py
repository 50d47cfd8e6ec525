"""The ISP job engine: one job per capture, rendered by every requested device, on all cores.

A job loads (or unprocesses) its capture once and renders every variant of it, so the pipeline's
prefix cache is shared within the job. Jobs run in worker processes (``num_proc``), one image per
process at a time, with ``OMP_NUM_THREADS=1`` (LibRaw threads gave no speed-up on these machines).
Every random choice inside a job comes from a Generator seeded by (seed, capture index, device
group index), so the output does not depend on the number of workers; results come back in job
order. A RAW file LibRaw cannot read is a skipped job (``JobResult.skipped``), never an exception.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from hetbench.cores import available_cores
from hetbench.errors import HetbenchError
from hetbench.png import encode_png_opencv
from hetbench.process_pool import worker_context
from hetbench.seeding import make_rng


@dataclass(frozen=True)
class PhotoSource:
    """An sRGB photograph crop (uint8 H x W x 3) that unprocessing turns into RAW."""

    name: str
    image: np.ndarray = field(repr=False)


@dataclass(frozen=True)
class RawSource:
    """A RAW file: on disk at ``path``, or its bytes in ``data`` (shipped to a worker that does not
    see this file system; ``path`` then only names it)."""

    path: str
    data: bytes | None = field(default=None, repr=False, compare=False)
    lens_shading: str = "dng"  # read_raw's lens_shading: dng, none or cos4:C


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
    refused: str | None = None  # why its file must not be read (a link out of its folder): skipped unread
    held_out: bool | None = None  # a test capture (True) or a training one; None: the split holds out by label


@dataclass
class JobResult:
    index: int
    capture_id: str
    label: str
    images: list[bytes]  # PNG, one per render, in the job's render order
    stats: list[dict]
    skipped: str | None = None
    camera: str | None = None  # "<make> <model>" of a RAW file (its TIFF tags, else its stem)


def job_files(job: CaptureJob) -> tuple[str, ...]:
    """The files a job reads: its RAW file, or nothing for an in-memory photograph.

    Examples
    --------
    >>> from hetbench.isp.jobs import CaptureJob, RawSource, job_files
    >>> job_files(CaptureJob(0, "a", "x", RawSource("raws/a.dng"), (), 32, 0))
    ('raws/a.dng',)
    >>> job_files(CaptureJob(0, "a", "x", RawSource("raws/a.dng"), (), 32, 0, refused="a link out"))
    ()
    """
    if job.refused is not None:  # never read, not even to ship its bytes
        return ()
    return (job.source.path,) if isinstance(job.source, RawSource) and job.source.data is None else ()


def job_with_files(job: CaptureJob, contents: Sequence[bytes]) -> CaptureJob:
    """``job`` reading the bytes of its files (:func:`job_files`, same order) instead of the files.

    Examples
    --------
    >>> from hetbench.isp.jobs import CaptureJob, RawSource, job_with_files
    >>> job = job_with_files(CaptureJob(0, "a", "x", RawSource("raws/a.dng"), (), 32, 0), [b"II*"])
    >>> job.source.path, job.source.data
    ('raws/a.dng', b'II*')
    """
    if not contents:
        return job
    return replace(job, source=replace(job.source, data=bytes(contents[0])))


def skipped_job(job: CaptureJob, reason: str) -> JobResult:
    """The result of a job that could not be run (``reason`` is listed under ``skipped``).

    Examples
    --------
    >>> from hetbench.isp.jobs import CaptureJob, RawSource, skipped_job
    >>> skipped_job(CaptureJob(3, "a", "x", RawSource("a.dng"), (), 32, 0), "worker died").skipped
    'worker died'
    """
    return JobResult(job.index, job.capture_id, job.label, [], [], skipped=reason)


def _read_raw_source(source: RawSource):
    """:func:`~hetbench.isp.raw.read_raw` of a RAW source; one given by its bytes is read from a
    private temporary copy under its own file name (the name gives the capture id and the format)."""
    from hetbench.isp.raw import read_raw

    if source.data is None:
        return read_raw(source.path, lens_shading=source.lens_shading)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hetbench-raw-") as tmp:
        local = os.path.join(tmp, os.path.basename(source.path) or "capture.raw")
        with open(local, "wb") as fh:
            fh.write(source.data)
        return read_raw(local, lens_shading=source.lens_shading)


def _profiles(name: str) -> dict:
    from hetbench.isp.profiles import load_profiles

    return {p.name: p for p in load_profiles(name)}


def camera_name(make: str, model: str) -> str:
    """A camera's name from its Make and Model tags: the model alone when it already starts with the
    make's first word.

    Examples
    --------
    >>> camera_name("Canon", "Canon EOS 5D"), camera_name("NIKON CORPORATION", "NIKON D70"), camera_name("Leica", "M8")
    ('Canon EOS 5D', 'NIKON D70', 'Leica M8')
    """
    make, model = str(make).strip(), str(model).strip()
    if not make or model.lower().startswith(make.split()[0].lower()):
        return model or make
    return f"{make} {model}".strip()


def run_job(job: CaptureJob) -> JobResult:
    """Load or unprocess the capture, render every requested device; never raises on a bad RAW. A job
    whose file is ``refused`` is skipped with that reason, its file never opened.

    Examples
    --------
    >>> from hetbench.isp.jobs import CaptureJob, RawSource, run_job
    >>> run_job(CaptureJob(0, "a", "x", RawSource("/etc/passwd"), (), 32, 0, refused="a link out")).skipped
    'a link out'
    """
    if job.refused is not None:
        return skipped_job(job, job.refused)
    from hetbench.isp.image_stats import image_stats
    from hetbench.isp.pipeline import Pipeline, Renderer
    from hetbench.isp.raw import UnsupportedRaw
    from hetbench.isp.unprocess import unprocess

    renderer = Renderer(size=job.size)
    images: list[bytes] = []
    stats: list[dict] = []
    try:
        if isinstance(job.source, RawSource):
            capture = _read_raw_source(job.source)
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
                cap = unprocess(srgb, profiles[profile_name], make_rng(job.seed, job.index, gi), job.capture_id)
            rendered = renderer.render_all(cap, [Pipeline.parse(r.pipeline) for _, r in members])
            for (pos, _), res in zip(members, rendered):
                out[pos] = res
        for res in out:
            images.append(encode_png_opencv(res.image))
            stats.append(image_stats(res.image, res.jpeg_bytes))
    except UnsupportedRaw as exc:
        return JobResult(job.index, job.capture_id, job.label, [], [], skipped=exc.reason)
    camera = None if capture is None else camera_name(capture.make, capture.model)
    return JobResult(job.index, job.capture_id, job.label, images, stats, camera=camera)


def renderer_native(capture) -> np.ndarray:
    """The baseline render of a capture at its own resolution (source for sensor emulation)."""
    from hetbench.isp.pipeline import Pipeline, Renderer

    return Renderer(size=None).render(capture, Pipeline.parse("compress=none")).image


def init_worker() -> None:
    """Set up a worker process: one OpenMP / OpenCV thread (jobs run one per core), and freed image buffers
    kept for the next render (:func:`hetbench.isp.memory.keep_freed_memory`)."""
    from hetbench.isp.memory import keep_freed_memory

    os.environ["OMP_NUM_THREADS"] = "1"
    keep_freed_memory()
    try:
        import cv2

        cv2.setNumThreads(1)
    except ImportError:  # pragma: no cover
        pass


#: what the render workers' forkserver imports once (colour, rawpy and OpenCV take seconds to import)
WORKER_PRELOAD = ["hetbench.isp.image_stats", "hetbench.isp.pipeline", "hetbench.isp.unprocess", "hetbench.isp.profiles"]


def cap_num_proc(num_proc: int, num_jobs: int, quiet: bool = False) -> int:
    """``num_proc`` capped at the cores this process may use (:func:`hetbench.cores.available_cores`: affinity
    and cgroup quota) and at ``num_jobs``; a cap
    above the cores is noted on stderr (one line, unless ``quiet``), a value below 1 is an error.

    Parameters
    ----------
    num_proc : int
        The worker processes asked for (``--num-proc``).
    num_jobs : int
        How many jobs there are (no more workers than jobs are started).
    quiet : bool
        No note on stderr.

    Returns
    -------
    int
        The worker processes to start, at least 1.

    Examples
    --------
    >>> from hetbench.isp.jobs import cap_num_proc
    >>> cap_num_proc(4, 2)
    2
    >>> cap_num_proc(1, 0)
    1
    """
    import sys

    if isinstance(num_proc, bool) or int(num_proc) != num_proc or num_proc < 1:
        raise HetbenchError(f"`num_proc` must be at least 1 (got {num_proc})")
    num_proc = int(num_proc)
    cores = available_cores()
    if num_proc > cores:
        if not quiet:
            print(f"hetbench: note: --num-proc {num_proc} is more than the {cores} CPU cores; using {cores}", file=sys.stderr)
        num_proc = cores
    return max(1, min(num_proc, num_jobs))


def run_jobs(jobs: Sequence[CaptureJob], num_proc: int = 1, quiet: bool = False, desc: str = "rendering") -> list[JobResult]:
    """Run jobs on ``num_proc`` worker processes (1: in this process; capped by :func:`cap_num_proc`
    at the CPU cores and the number of jobs); results in job order."""
    from hetbench.progress import progress_bar

    num_proc = cap_num_proc(num_proc, len(jobs), quiet)
    results: list[JobResult] = []
    with progress_bar(desc, len(jobs), quiet) as bar:
        if num_proc == 1 or len(jobs) <= 1:
            for job in jobs:
                results.append(run_job(job))
                bar.update(1)
        else:
            with worker_context(WORKER_PRELOAD).Pool(num_proc, initializer=init_worker) as pool:
                for res in pool.imap(run_job, jobs, chunksize=1):
                    results.append(res)
                    bar.update(1)
    return results
