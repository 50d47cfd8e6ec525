"""``hetbench build real-devices``: federated splits of public corpora photographed by real devices.

The corpus's recipe (``manifests/recipes/<name>.yaml``, builder ``real-devices``) names its layout
reader (:mod:`hetbench.sources.device_corpora`). Every photograph becomes one row (``image``,
``label``, ``device``, ``capture_id``, ``sample_id``); train and test are split *by capture*,
stratified by label, so no test scene is seen in training under any device (HeteroSwitch sec. 3.1
displays the same ImageNet images to every phone); the test rows are a shared test set that keeps
the ``device`` column, for per-device accuracy. Clients are allocated to devices by the
:class:`~hetbench.partitioners.devices.DevicePartitioner` (``deal``): ``--clients N`` by the
corpus's device weights (market shares where it has them, uniform otherwise) or
``--clients-per-device K``. Unreadable images are skipped and listed in the report.

Each image goes to disk as soon as it is read (or rendered), in the corpus's order
(:class:`~hetbench.builders.row_spill.RowSpill`), so memory does not grow with the corpus; the shards
are written from there once every image is in.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from hetbench.builders.captures import check_clients, check_clients_fit, check_size, resolve_num_proc
from hetbench.builders.device_split import empty_rows, held_out_captures, spilled_table
from hetbench.builders.row_spill import RowSpill
from hetbench.engines import EngineSpec
from hetbench.errors import HetbenchError
from hetbench.naming import SPLITS_ROOT
from hetbench.partitioners.devices import DevicePartitioner
from hetbench.pipeline import PreparedSplit
from hetbench.seeding import check_seed

#: the ``isp`` column of a real device: the photographs as the device's own camera app made them
AS_CAPTURED = "as-captured"


def prepare_real_devices(
    recipe: str,
    data_dir: str | None = None,
    clients: int | None = None,
    clients_per_device: int | None = None,
    size: int | None = None,
    test_fraction: float = 0.2,
    seed: int = 0,
    num_proc: int | None = None,
    quiet: bool = False,
    title: str | None = None,
    engine: EngineSpec | None = None,
    on_checked: Callable[[], None] | None = None,
    purity: float = 1.0,
    dataset: str | None = None,
) -> PreparedSplit:
    """Read a real-device corpus in its public layout; the split, not yet published.

    Parameters
    ----------
    recipe, data_dir, dataset, clients, clients_per_device, size, test_fraction, purity, seed, num_proc, quiet, engine
        As for :func:`build_real_devices`.
    title, on_checked
        As for the other device builders (:func:`hetbench.builders.iso_isp.prepare_iso_isp`).

    References
    ----------
    Kim et al., HeteroSwitch, MLSys 2024, sec. 3.1 and Table 1 (nine phones, market shares).

    Examples
    --------
    See ``tests/builders/test_real_devices.py``, which writes a corpus in each documented layout.
    """
    from hetbench.isp.jobs import cap_num_proc
    from hetbench.publish.recipes import recipe_mode
    from hetbench.sources.device_corpora import check_folder, corpus

    seed = check_seed(seed)
    spec, settings = recipe_mode(recipe, "real-devices", "import")
    if settings["reader"] == "hub-parquet":
        if dataset is None or data_dir is not None or size is not None or test_fraction != 0.2:
            raise HetbenchError(f"the {recipe} recipe reads a Hub Parquet dataset: give --dataset (a local copy or the hub "
                                "id), not --data-dir, no --size (its images are published as stored; resize at "
                                "training time with hetbench train --image-size) and no --test-fraction (it keeps the "
                                "corpus's own test split)")
        from hetbench.builders.parquet_corpus import prepare_parquet_corpus

        return prepare_parquet_corpus(spec, settings, recipe, dataset, clients, clients_per_device, seed, quiet,
                                      on_checked, purity, client_allocation)
    if data_dir is None or dataset is not None:
        raise HetbenchError(f"the {recipe} recipe reads a folder: give --data-dir, not --dataset")
    if settings["reader"] == "fivek-cameras":
        return _prepare_raw_cameras(spec, settings, recipe, data_dir, clients, clients_per_device, size, test_fraction,
                                    seed, num_proc, quiet, engine, on_checked, purity)
    layout = corpus(settings["reader"])
    root = check_folder(data_dir, layout.layout)
    images = layout.scan(root)
    present = {im.device for im in images}
    devices = [d for d in layout.devices if d in present]
    if purity != 1.0:  # before any image is read
        from hetbench.partitioners.purity import check_purity

        check_purity(purity, len(devices), "devices")
    asked = clients  # recorded as given: --clients-per-device sets the count
    # the corpus's device weights (HeteroSwitch Table 1 market shares), or uniform
    clients, weights = client_allocation(clients, clients_per_device, devices,
                                         {d: float(layout.weights.get(d, 1.0)) if layout.weights else 1.0 for d in devices})
    if size is not None:
        size = check_size(size)
    if not 0.0 < test_fraction < 1.0:
        raise HetbenchError(f"--test-fraction must be between 0 and 1 (got {test_fraction})")
    captures = sorted({im.capture for im in images})
    check_clients_fit(clients, weights, len(captures), training=False)
    num_proc = cap_num_proc(resolve_num_proc(num_proc), len(images), quiet)  # --num-proc 1000 started 83 processes on 2 cores
    if on_checked is not None:  # the inputs are checked: the output folder next, before reading the images
        on_checked()
    spill = RowSpill()
    try:
        kept, skipped = [], []
        for im, r in zip(images, stream_images(root, images, size, num_proc, quiet, engine)):
            if r.data is None:
                skipped.append({"file": im.file, "reason": stable_reason(r.skipped)})
            else:
                kept.append((im, spill.add(r.data)))
        if not kept:
            raise HetbenchError(f"no image of '{data_dir}' could be read ({len(skipped)} skipped: {skipped[0]['reason']})")
        rows, counts = _split_by_capture(kept, test_fraction, seed)
    except BaseException:
        spill.close()
        raise
    class_names = sorted({im.label for im, _ in kept})
    for split in rows.values():
        split["label"] = [class_names.index(x) for x in split["label"]]
    params: dict[str, Any] = {"recipe": recipe, "data_dir": str(data_dir), "clients": asked,
                              "clients_per_device": clients_per_device, "size": size, "test_fraction": test_fraction}
    source = {"dataset": f"{recipe}:{data_dir}", "label_col": "label", "id_col": "sample_id"}
    table = spilled_table(spill, rows, class_names, source, f"{layout.description} (local copy '{_folder_name(data_dir)}')",
                          spec.get("license", "other"))
    check_clients_fit(clients, weights, counts["train"], training=True)
    if purity != 1.0:  # only when set: the recipes of pure splits stay as they were
        params["purity"] = float(purity)
    partitioner = DevicePartitioner(clients, weights, "device", "deal", build={"method": "real-devices", "params": params},
                                    purity=purity)
    extras = _extras(spec, layout.setting_of, devices, weights, counts, skipped, len(images))
    return PreparedSplit(table, partitioner, seed, "global", extras=extras)


def _folder_name(path: str) -> str:
    """A folder's name for the card, never its path (the card is published; :mod:`hetbench.local_paths`)."""
    return os.path.basename(os.path.abspath(path)) or str(path)


def client_allocation(clients: int | None, clients_per_device: int | None, devices: list[str],
                      weights: dict[str, float]) -> tuple[int | None, dict[str, float]]:
    """(clients, device weights): ``--clients N`` with ``weights``, or ``--clients-per-device K`` (K x
    devices clients, uniform weights); checked (one of the two at most, every device a client).

    Examples
    --------
    >>> client_allocation(None, 2, ["a", "b"], {"a": 3.0, "b": 1.0})
    (4, {'a': 1.0, 'b': 1.0})
    """
    if clients is not None and clients_per_device is not None:
        raise HetbenchError("give --clients or --clients-per-device, not both")
    if clients_per_device is not None:
        if clients_per_device < 1:
            raise HetbenchError(f"--clients-per-device must be at least 1 (got {clients_per_device})")
        clients, weights = clients_per_device * len(devices), {d: 1.0 for d in devices}
    check_clients(clients, devices)
    return clients, weights


def _prepare_raw_cameras(spec, settings, recipe, data_dir, clients, clients_per_device, size, test_fraction, seed,
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
        raise HetbenchError("give --clients or --clients-per-device, not both")
    size = check_size(224 if size is None else size)  # RAW files are rendered: they need a size
    if not 0.0 < test_fraction < 1.0:
        raise HetbenchError(f"--test-fraction must be between 0 and 1 (got {test_fraction})")
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
        rows, counts = _split_by_capture(kept, test_fraction, seed, per_device=True)  # every camera keeps a training photo
    except BaseException:
        spill.close()
        raise
    class_names = sorted({im.label for im, _ in kept})
    for split in rows.values():
        split["label"] = [class_names.index(x) for x in split["label"]]
        split["isp"] = [baseline] * len(split["isp"])
    params: dict[str, Any] = {"recipe": recipe, "data_dir": str(data_dir), "clients": None if clients_per_device else clients,
                              "clients_per_device": clients_per_device, "size": size, "test_fraction": test_fraction}
    source = {"dataset": f"{recipe}:{data_dir}", "label_col": "label", "id_col": "sample_id"}
    description = f"{str(spec.get('description', recipe)).split(':')[0]} (local copy '{_folder_name(data_dir)}')"
    table = spilled_table(spill, rows, class_names, source, description, spec.get("license", "other"))
    if purity != 1.0:  # only when set: the recipes of pure splits stay as they were
        params["purity"] = float(purity)
    partitioner = DevicePartitioner(clients, weights, "device", "deal", build={"method": "real-devices", "params": params},
                                    purity=purity)
    extras = _extras(spec, None, devices, weights, counts, skipped, len(files) + len(found.unlabelled))
    return PreparedSplit(table, partitioner, seed, "global", extras=extras)


def _split_by_capture(kept, test_fraction: float, seed: int, per_device: bool = False) -> tuple[dict, dict[str, int]]:
    """Rows of every kept image (``(CorpusImage, its spill row)``), train/test by capture, stratified by the
    capture's label; with ``per_device`` (each capture on one device), by device and label, so that every
    device keeps at least one training capture (the per-client hold-out of
    :func:`hetbench.splits.stratified_holdout`). The ``image`` column holds the spill rows."""
    first: dict[str, tuple[str, str]] = {}
    for im, _ in kept:
        first.setdefault(im.capture, (im.label, im.device))
    captures = sorted(first)
    if per_device:
        from hetbench.seeding import make_rng
        from hetbench.splits import stratified_holdout

        labels = sorted({lab for lab, _ in first.values()})
        devs = sorted({dev for _, dev in first.values()})
        held = stratified_holdout(np.array([devs.index(first[c][1]) for c in captures], np.int32),
                                  np.array([labels.index(first[c][0]) for c in captures], np.int64),
                                  len(devs), len(labels), test_fraction, make_rng(seed, 1))
    else:
        held = held_out_captures([first[c][0] for c in captures], test_fraction, seed)
    if held.all() or not held.any():
        raise HetbenchError(f"need captures in both train and test to split by capture (have {len(captures)})")
    is_test = dict(zip(captures, held.tolist()))
    rows = empty_rows()
    for im, row in kept:
        r = rows["test" if is_test[im.capture] else "train"]
        r["image"].append(row)
        r["label"].append(im.label)
        r["device"].append(im.device)
        r["isp"].append(AS_CAPTURED)
        r["capture_id"].append(im.capture)
        r["sample_id"].append(im.file)
    counts = {"captures": len(captures), "train": int((~held).sum()), "test": int(held.sum())}
    return rows, counts


def stable_reason(reason: str | None) -> str | None:
    """A skip reason without the memory addresses an error message may quote (PIL names the file object it
    could not identify, ``<_io.BytesIO object at 0x7f...>``), so the report is the same bytes on every run.

    Examples
    --------
    >>> stable_reason("unreadable image: cannot identify image file <_io.BytesIO object at 0x7f27e7d79350>")
    'unreadable image: cannot identify image file <_io.BytesIO object>'
    """
    import re

    return None if reason is None else re.sub(r" at 0x[0-9a-fA-F]+>", ">", reason)


def stream_images(root: Path, images: Sequence[Any], size: int | None, num_proc: int, quiet: bool = False,
                  engine: EngineSpec | None = None) -> Iterator[Any]:
    """:func:`hetbench.sources.device_corpora.read_image` of every image, yielded in order as each is read
    (on ``num_proc`` worker processes or ``engine``), with a progress bar; nothing is kept. An image that
    resolves outside ``root`` (a link leading out of ``--data-dir``) is never opened: its result gives
    the reason, and the builder skips and lists it as an unreadable one.

    Parameters
    ----------
    root : Path
        The corpus folder (``--data-dir``).
    images : sequence of CorpusImage
        What the corpus's ``scan`` found.
    size : int, optional
        As for ``read_image``: None publishes the file's own bytes.
    num_proc, quiet, engine
        Worker processes (already capped), no progress bar, the engine.

    Examples
    --------
    >>> import pathlib
    >>> from PIL import Image
    >>> from hetbench.sources.device_corpora import CorpusImage
    >>> root = pathlib.Path("stream_example"); root.mkdir()
    >>> Image.new("RGB", (4, 4)).save(root / "a.png")
    >>> [r.data is not None for r in stream_images(root, [CorpusImage("a.png", "x", "d", "0")], None, 1, quiet=True)]
    [True]
    """
    from contextlib import ExitStack

    from hetbench.engines import open_engine
    from hetbench.progress import progress_bar
    from hetbench.roots import inside_root, outside_reason, real_root
    from hetbench.sources.device_corpora import ReadImage, read_image

    real = real_root(root)
    paths = [str(Path(root) / im.file) for im in images]
    inside = [inside_root(path, real) for path in paths]
    jobs = [(path, size) for path, ok in zip(paths, inside) if ok]
    with progress_bar(f"reading {len(paths):,} images", len(paths), quiet) as bar, ExitStack() as stack:
        done: Iterator[ReadImage] = iter(())
        if jobs:  # no engine starts for a corpus of refused links only
            pool = stack.enter_context(open_engine(engine, num_proc, len(jobs), quiet=quiet,
                                                   preload=("hetbench.sources.device_corpora", "PIL.Image")))
            done = iter(pool.map(read_image, jobs))
        for ok in inside:
            yield next(done) if ok else ReadImage(None, outside_reason("--data-dir"))
            bar.update(1)


def _extras(spec: dict[str, Any], setting_of: Callable[[str], dict] | None, devices: list[str],
            weights: dict[str, float], counts: dict[str, int], skipped: list[dict[str, str]], scanned: int):
    """Report entries: per device its clients, weight and images; the captures; the skipped files;
    the corpus's published statistics beside ours."""
    from hetbench.builders.device_split import clients_per_device

    def extras(split):
        per_device = clients_per_device(split, devices)
        train_dev = np.asarray(split.table.column("train", "device"))
        test_dev = np.asarray(split.table.column("test", "device"))
        entries = {}
        for d in devices:
            entry: dict[str, Any] = {"isp": AS_CAPTURED}
            if setting_of is not None:
                entry["setting"] = setting_of(d)
            entry.update({"clients": per_device[d], "weight": weights[d],
                          "train_images": int((train_dev == d).sum()), "test_images": int((test_dev == d).sum())})
            entries[d] = entry
        report: dict[str, Any] = {
            "devices": entries,
            "captures": counts,
            "corpus": {"recipe": spec["name"], "images": scanned - len(skipped), "classes": len(split.class_names),
                       "devices": len(devices), "published": spec.get("published", {})},
            "skipped": skipped, "num_skipped": len(skipped),
        }
        return report, None

    return extras


def build_real_devices(
    out: str | os.PathLike | None = None, *, recipe: str, name: str | None = None, overwrite: bool = False,
    quiet: bool = False, data_dir: str | None = None, dataset: str | None = None, clients: int | None = None,
    clients_per_device: int | None = None, size: int | None = None, test_fraction: float = 0.2,
    num_proc: int | None = None, purity: float = 1.0, seed: int = 0, engine: EngineSpec | None = None,
) -> tuple[Path, dict[str, Any]]:
    """Read a public corpus photographed by real devices and publish its device split (``hetbench build
    real-devices``); returns the folder and its report. Train and test are split by capture.

    Parameters
    ----------
    out : str or os.PathLike, optional
        Output folder (default ``hetbench_splits/<recipe>-n<clients>-s<seed>``).
    recipe : {"heteroswitch-phones", "imagenet-es", "fivek-cameras", "fed-isic2019"}
        The corpus: its ``manifests/recipes/<recipe>.yaml`` documents the layout read. Required.
    name : str, optional
        Data set name in the card and manifest (default: the folder's tag).
    overwrite : bool
        Replace ``out`` if it exists (default False).
    quiet : bool
        No progress bar (default False).
    data_dir : str, optional
        Folder recipes: the local copy of the corpus, in its public layout.
    dataset : str, optional
        Parquet recipes (``fed-isic2019``): the local copy of the Hub dataset or its hub id.
    clients : int, optional
        Clients, allocated by the corpus's device weights (market shares where it has them, else uniform);
        default None: one per device.
    clients_per_device : int, optional
        Instead of ``clients``: K clients for every device (default None).
    size : int, optional
        Resize every image (shorter side, centre square), in pixels; default None: the files' own bytes,
        never decoded (RAW files: 224).
    test_fraction : float
        Share of the captures (scenes) held out for testing, stratified by label (default 0.2).
    num_proc : int, optional
        Worker processes reading the images (default None: the CPU cores this process may use).
    purity : float
        Share of each client's training images taken by its own device, in [1/D, 1] (default 1).
    seed : int
        Seed of every random choice (default 0).
    engine : EngineSpec, optional
        What reads the images (default None: local worker processes); never recorded.

    References
    ----------
    Kim et al., HeteroSwitch, MLSys 2024, sec. 3.1 and Table 1 (nine phones, market shares).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from PIL import Image
    >>> from hetbench.builders.real_devices import build_real_devices
    >>> tmp = Path(tempfile.mkdtemp())  # 3 phones x 2 classes x 3 displayed images: <phone>/<class>/<image>
    >>> for phone in ("pixel2", "nexus5x", "galaxys6"):
    ...     for k, cls in enumerate(("Timber_Wolf", "n02085620")):
    ...         (tmp / "hs" / phone / cls).mkdir(parents=True)
    ...         for i in range(3):
    ...             Image.new("RGB", (8, 8), (80 * k, 40 * i, 90)).save(tmp / "hs" / phone / cls / f"{i}.png")
    >>> folder, report = build_real_devices(tmp / "out", recipe="heteroswitch-phones", data_dir=str(tmp / "hs"),
    ...                                     test_fraction=0.34, num_proc=1, quiet=True)
    >>> sorted(report["devices"]), report["num_clients"]
    (['GalaxyS6', 'Nexus5X', 'Pixel2'], 3)
    >>> import shutil; shutil.rmtree(tmp)
    """
    from hetbench.builders.iso_isp import publish_checked

    params = dict(recipe=recipe, data_dir=data_dir, dataset=dataset, clients=clients, clients_per_device=clients_per_device,
                  size=size, test_fraction=test_fraction, seed=seed, num_proc=num_proc, quiet=quiet, purity=purity, engine=engine)
    n = clients or (f"{clients_per_device}x" if clients_per_device else "dev")
    tag = f"{recipe}-n{n}{f'-p{purity:g}' if purity != 1.0 else ''}-s{seed}"
    return publish_checked(prepare_real_devices, Path(out) if out else SPLITS_ROOT / tag, name or tag, overwrite, params)


def rebuild(manifest: dict, num_proc: int = 1):
    """Re-read the recorded corpus folder with the recorded parameters (for ``hetbench verify``)."""
    from hetbench.builders.captures import REBUILD_PASSES
    from hetbench.param_types import check_params
    from hetbench.publish.manifest import recorded_build

    part = recorded_build(manifest)
    where = "recipe.build.params" if isinstance(manifest["recipe"].get("build"), dict) else "recipe.partition.params"
    check_params(prepare_real_devices, part["params"], where, exclude=REBUILD_PASSES)
    return prepare_real_devices(seed=part["seed"], num_proc=num_proc, quiet=True, **part["params"]).build()
