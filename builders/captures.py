"""Captures for the ISP builders (iso-isp, devices): RAW folders and their labels, one render job per
capture (RAW files, or the embedded photographs' crops of :mod:`hetbench.builders.embedded_crops`), device
weights, and re-running a recorded build. Rendering itself is :mod:`hetbench.isp.jobs`.
"""

from __future__ import annotations

import math
import os
from typing import Iterator, Sequence

from hetbench.builders.embedded_crops import RECIPE_CROPS_IF_UNRECORDED, check_crops, embedded_sources
from hetbench.engines import EngineSpec
from hetbench.errors import HetbenchError
from hetbench.isp.jobs import CaptureJob, JobResult, RawSource


# ---- inputs ---------------------------------------------------------------------------------
#: arguments of a builder's ``prepare`` that its rebuild passes itself (never read from a manifest)
REBUILD_PASSES = ("seed", "num_proc", "quiet", "title", "engine", "on_checked")

RAW_SUFFIXES = {
    ".dng", ".nef", ".nrw", ".cr2", ".cr3", ".crw", ".arw", ".srf", ".sr2", ".rw2", ".raf", ".orf",
    ".pef", ".srw", ".kdc", ".dcr", ".mrw", ".3fr", ".erf", ".mef", ".mos", ".raw", ".rwl", ".x3f", ".iiq",
}


def raw_files(raw_dir: str) -> list[str]:
    """RAW files under ``raw_dir`` (recursive, sorted); a clear error for a missing or empty folder. A
    link among them that leads out of ``raw_dir`` is listed too: its job skips it unread
    (:func:`capture_jobs`)."""
    from pathlib import Path

    root = Path(raw_dir)
    if not root.is_dir():
        raise HetbenchError(f"`raw_dir` '{raw_dir}' is not a folder")
    files = sorted(str(p) for p in root.rglob("*") if p.is_file() and p.suffix.lower() in RAW_SUFFIXES)
    if not files:
        raise HetbenchError(f"`raw_dir` '{raw_dir}' holds no RAW files ({', '.join(sorted(RAW_SUFFIXES)[:8])}, ...)")
    return files


def refused_file(path: str, root: str, flag: str) -> str | None:
    """Why ``path`` must not be read: it resolves outside ``root``, the folder of ``flag`` (a symbolic link
    leading out of it); None when it stays inside. Its capture is skipped and listed, the build goes on.

    Parameters
    ----------
    path : str
        A RAW file found under ``root``.
    root : str
        The declared folder (``--raw-dir``, ``--data-dir``).
    flag : str
        The option naming it, for the reason.

    Examples
    --------
    >>> import os
    >>> from hetbench.builders.captures import refused_file
    >>> os.mkdir("raws")
    >>> os.symlink("/etc/passwd", "raws/a.dng")
    >>> refused_file("raws/a.dng", "raws", "--raw-dir")
    'a link leading outside --raw-dir (not read)'
    >>> refused_file("raws/b.dng", "raws", "--raw-dir") is None
    True
    """
    from hetbench.roots import inside_root, outside_reason

    return None if inside_root(path, root) else outside_reason(flag)


def read_labels(labels_csv: str | None, files: list[str], raw_dir: str) -> dict[str, str]:
    """file -> label from a CSV with columns ``file,label`` (paths relative to ``raw_dir``); without
    a CSV every capture is labelled ``unlabelled``. Every label must be non-empty; a file may be
    listed twice only with the same label."""
    import csv
    from pathlib import Path

    if labels_csv is None:
        return {f: "unlabelled" for f in files}
    path = Path(labels_csv)
    if not path.is_file():
        raise HetbenchError(f"`labels` '{labels_csv}' not found")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or not {"file", "label"} <= set(reader.fieldnames):
            raise HetbenchError(f"`labels` '{labels_csv}' needs the columns file,label")
        rows = list(reader)
    root = Path(raw_dir).resolve()
    by_path = _labels_by_path(rows, root, labels_csv)
    missing = [r["file"] for r in rows if not (root / r["file"]).is_file()]
    if missing:
        raise HetbenchError(f"`labels` names {len(missing)} file(s) not in `raw_dir`, e.g. '{missing[0]}'")
    out = {f: by_path.get(str(Path(f).resolve())) for f in files}
    unlabelled = [f for f, v in out.items() if v is None]
    if unlabelled:
        raise HetbenchError(f"{len(unlabelled)} RAW file(s) have no label in `labels`, e.g. '{Path(unlabelled[0]).name}'")
    return out  # type: ignore[return-value]


def _labels_by_path(rows: list[dict], root, labels_csv: str) -> dict[str, str]:
    """Resolved path -> label; an empty label or a file listed twice with different labels is an
    error naming the CSV line (identical repeated rows are accepted)."""
    by_path: dict[str, str] = {}
    line_of: dict[str, int] = {}
    for line, r in enumerate(rows, start=2):  # line 1 is the header
        file, label = r.get("file") or "", r.get("label")
        if label is None or not label.strip():
            raise HetbenchError(f"`labels` '{labels_csv}' line {line}: empty label for file '{file}'")
        key = str((root / file).resolve())
        if key in by_path and by_path[key] != label:
            raise HetbenchError(
                f"`labels` '{labels_csv}' line {line}: file '{file}' is labelled '{label}' but line "
                f"{line_of[key]} labels it '{by_path[key]}'"
            )
        by_path[key] = label
        line_of.setdefault(key, line)
    return by_path


def read_device_weights(path: str | None, devices: Sequence[str]) -> dict[str, float]:
    """Uniform weights, or a JSON/YAML mapping device -> weight (every device named; each weight a
    finite number >= 0, their sum positive and finite)."""
    if path is None:
        return {d: 1.0 for d in devices}
    import yaml

    try:
        with open(path) as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise HetbenchError(f"`device_weights` '{path}' cannot be read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise HetbenchError(f"`device_weights` '{path}' is not JSON/YAML") from exc
    if not isinstance(data, dict):
        raise HetbenchError(f"`device_weights` '{path}' must map device names to weights")
    unknown = sorted(set(map(str, data)) - set(devices))
    if unknown:
        raise HetbenchError(f"`device_weights` names unknown devices: {', '.join(unknown)} (devices: {', '.join(devices)})")
    missing = [d for d in devices if d not in data]
    if missing:
        raise HetbenchError(f"`device_weights` misses devices: {', '.join(missing)}")
    weights: dict[str, float] = {}
    for d in devices:
        value = data[d]
        try:
            if isinstance(value, bool):
                raise TypeError
            weights[d] = float(value)
        except (TypeError, ValueError):
            raise HetbenchError(f"`device_weights` '{path}': the weight of '{d}' must be a number (got {value!r})") from None
        if not math.isfinite(weights[d]) or weights[d] < 0:
            raise HetbenchError(f"`device_weights` '{path}': the weight of '{d}' must be a finite number >= 0 (got {value!r})")
    total = sum(weights.values())
    if not 0 < total < math.inf:
        raise HetbenchError(f"`device_weights` '{path}': the weights must have a positive, finite sum (got {total:g})")
    return weights


def rebuild_from_recipe(prepare, manifest: dict, num_proc: int = 1):
    """Re-run an ISP builder's ``prepare`` with the parameters a manifest records; returns the
    FederatedSplit (what ``hetbench verify`` compares with the manifest)."""
    import tempfile

    import yaml

    from hetbench.param_types import check_params
    from hetbench.contract import recorded_build

    part = recorded_build(manifest)
    where = "recipe.build.params" if isinstance(manifest["recipe"].get("build"), dict) else "recipe.partition.params"
    check_params(prepare, part["params"], where, exclude=REBUILD_PASSES,
                 hints={"device_weights": dict[str, float] | None, "crops_per_photo": int | None, "crop_size": int | None})
    params = dict(part["params"])
    weights = params.pop("device_weights", None)
    with tempfile.TemporaryDirectory() as tmp:
        if weights:
            params["device_weights"] = os.path.join(tmp, "weights.yaml")
            with open(params["device_weights"], "w") as fh:
                yaml.safe_dump(weights, fh)
        for key, unrecorded in RECIPE_CROPS_IF_UNRECORDED.items():  # never today's default: a recipe keeps its meaning
            if params.get(key) is None:
                params[key] = unrecorded
        return prepare(seed=part["seed"], num_proc=num_proc, quiet=True, **params).build()


def run_jobs(
    jobs: Sequence[CaptureJob], num_proc: int | None = None, quiet: bool = False, desc: str = "rendering",
    engine: EngineSpec | None = None, stream: bool = False,
) -> list[JobResult] | Iterator[JobResult]:
    """Render every job on ``engine`` (:mod:`hetbench.engines`; None: the local worker pool);
    results in job order, whatever the engine and the number of workers.

    ``num_proc`` (default: the cores this process may use, :func:`hetbench.cores.available_cores`) is
    capped at those cores and at the jobs (:func:`hetbench.isp.jobs.cap_num_proc`): the local pool's
    workers, or the CPUs of the local Ray instance started when no ``--ray-address`` is given. With Ray,
    a RAW file reaches its worker by path or, with ``--ray-inputs object``, as its bytes in the object
    store; a capture whose worker died on every try is skipped (listed under ``skipped``), as a RAW
    LibRaw cannot read is.

    Parameters
    ----------
    jobs : sequence of CaptureJob
        One job per capture (:func:`capture_jobs`).
    num_proc : int, optional
        Worker processes (None: one per available core).
    quiet : bool
        No progress bar or note.
    desc : str
        The progress bar's label.
    engine : EngineSpec, optional
        The engine; not part of the build's recipe.
    stream : bool
        Return a generator that yields each result as its capture is done, in job order, instead of
        the list: the engine starts on the first result asked for and stops after the last, and no
        result is kept (what the device builders use, so memory does not grow with the captures).

    Examples
    --------
    >>> from hetbench.builders.captures import capture_jobs, run_jobs
    >>> from hetbench.isp.jobs import Render
    >>> jobs = capture_jobs(None, None, [Render("baseline", "compress=none")], 32, 0, 1, 64)[:2]
    >>> [(r.capture_id, len(r.images)) for r in run_jobs(jobs, 1, quiet=True)]
    [('astronaut-00', 1), ('coffee-00', 1)]
    >>> next(run_jobs(jobs, 1, quiet=True, stream=True)).capture_id
    'astronaut-00'
    """
    from hetbench.isp.jobs import cap_num_proc

    # checked now, not on the first result: a bad --num-proc is refused before anything renders
    results = _stream_jobs(jobs, cap_num_proc(resolve_num_proc(num_proc), len(jobs), quiet), quiet, desc, engine)
    return results if stream else list(results)


def _stream_jobs(jobs: Sequence[CaptureJob], num_proc: int, quiet: bool, desc: str,
                 engine: EngineSpec | None) -> Iterator[JobResult]:
    """:func:`run_jobs`' generator, ``num_proc`` already capped."""
    from hetbench.engines import open_engine
    from hetbench.isp.jobs import WORKER_PRELOAD, init_worker, job_files, job_with_files, run_job, skipped_job
    from hetbench.progress import progress_bar

    with open_engine(engine, num_proc, len(jobs), preload=WORKER_PRELOAD, initializer=init_worker, quiet=quiet) as eng:
        with progress_bar(desc, len(jobs), quiet) as bar:
            for result in eng.map(run_job, jobs, files=job_files, with_files=job_with_files, on_failure=skipped_job):
                bar.update(1)
                yield result


def resolve_num_proc(num_proc: int | None) -> int:
    """``--num-proc`` as given, or by default (None) the cores this process may use (affinity and cgroup
    quota, :func:`hetbench.cores.available_cores`).

    Examples
    --------
    >>> from hetbench.builders.captures import resolve_num_proc
    >>> from hetbench.cores import available_cores
    >>> resolve_num_proc(3), resolve_num_proc(None) == available_cores()
    (3, True)
    """
    if num_proc is None:
        from hetbench.cores import available_cores

        return available_cores()
    return num_proc


def check_clients(clients: int | None, devices: list[str]) -> None:
    """Every device needs a client: checked before any rendering."""
    if clients is not None and clients < len(devices):
        raise HetbenchError(f"`clients` {clients} is fewer than the {len(devices)} devices; every device needs a client")


def check_clients_fit(clients: int | None, weights: dict[str, float], captures: int, training: bool) -> None:
    """Every client needs at least one training capture of its device (each capture is rendered by
    every device, so a device has one training row per training capture).

    Device d gets at least ``1 + floor(w_d / sum(w) * (N - D))`` clients (the ``deal`` allocation
    of :func:`hetbench.partitioners.devices.allocate_clients`); that must not exceed the training
    captures. Before rendering (``training`` False) ``captures`` counts every capture, an upper
    bound; after it, the captures kept for training.
    """
    import numpy as np

    if clients is None or clients <= len(weights):
        return
    names = list(weights)
    w = np.array([weights[n] for n in names], dtype=float)
    least = 1 + np.floor(w / w.sum() * (clients - len(names))).astype(np.int64)
    worst = int(np.argmax(least))
    if least[worst] > captures:
        have = f"only {captures} of the captures are for training" if training else f"there are only {captures} captures"
        raise HetbenchError(
            f"`clients` {clients} is too many: device '{names[worst]}' gets at least {least[worst]} clients but "
            f"{have}, and every client needs a training capture of its own"
        )


def check_size(size: int | None) -> int | None:
    if size is not None and not 16 <= int(size) <= 4096:
        raise HetbenchError(f"`size` must be between 16 and 4096 pixels (got {size})")
    return None if size is None else int(size)


def capture_jobs(raw_dir, labels, renders, size, seed, crops_per_photo, crop_size, profile_set="heteroswitch9",
                 label_of: dict[str, str] | None = None, lens_shading: str | None = None, test_crops: str = "random",
                 test_fraction: float = 0.2) -> list[CaptureJob]:
    """One job per capture, from RAW files (``raw_dir``, labels from ``labels``, or the files and
    labels of ``label_of``, a corpus recipe's) or the embedded photographs (``crops_per_photo``
    crops of side ``crop_size``, unprocessed by the profiles of ``profile_set`` in turn, test crops chosen
    by ``test_crops``, :func:`embedded_sources`); every job renders ``renders`` at ``size``.
    ``lens_shading`` (RAW files only; None: ``dng``) is :func:`hetbench.isp.raw.read_raw`'s: ``dng``,
    ``none`` or ``cos4:C``; it is checked here, in one line."""
    from pathlib import Path

    from hetbench.isp.profiles import load_profiles

    shading = check_lens_shading(lens_shading, raw_dir)
    if raw_dir is not None and test_crops != "random":
        raise HetbenchError(f"`test_crops` {test_crops} applies to the embedded photographs; RAW files are "
                            "held out whole (by capture)")
    if raw_dir is not None:
        files = raw_files(raw_dir) if label_of is None else sorted(label_of)
        label_of = read_labels(labels, files, raw_dir) if label_of is None else label_of
        return [
            CaptureJob(i, Path(f).stem, label_of[f], RawSource(f, lens_shading=shading), tuple(renders), size, seed,
                       refused=refused_file(f, raw_dir, "--raw-dir"))
            for i, f in enumerate(files)
        ]
    if labels is not None:
        raise HetbenchError("`labels` needs `raw_dir`")
    check_crops(crops_per_photo, crop_size)
    profiles = [p.name for p in load_profiles(profile_set)]
    return [
        CaptureJob(i, cid, label, src, tuple(renders), size, seed, base_profile=profiles[i % len(profiles)],
                   profile_set=profile_set, held_out=held)
        for i, (cid, label, src, held) in enumerate(embedded_sources(crops_per_photo, crop_size, seed, test_crops,
                                                                     test_fraction))
    ]


def check_lens_shading(lens_shading: str | None, raw_dir) -> str:
    """``--lens-shading`` checked: ``dng`` (None), ``none`` or ``cos4:C``, and only with RAW files (the
    embedded captures take their lens from the device profiles).

    Examples
    --------
    >>> from hetbench.builders.captures import check_lens_shading
    >>> check_lens_shading(None, None), check_lens_shading("cos4:0.4", "raws")
    ('dng', 'cos4:0.4')
    >>> check_lens_shading("cos4:2", "raws")
    Traceback (most recent call last):
    ...
    hetbench.errors.HetbenchError: lens_shading 'cos4:2': choose dng, none or cos4:C with C in (0, 1] (the corner's relative illumination)
    """
    from hetbench.isp.lens_shading import parse_cos4_option

    value = "dng" if lens_shading is None else str(lens_shading).strip().lower()
    try:
        parse_cos4_option(value)
    except ValueError as exc:
        raise HetbenchError(str(exc)) from None
    if value != "dng" and raw_dir is None:
        raise HetbenchError(f"`lens_shading` {value} applies to RAW files (`raw_dir`); the embedded captures "
                            "take their lens shading from the device profiles")
    return value
