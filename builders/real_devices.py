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

from hetbench.builders.captures import check_clients_fit, check_size, resolve_num_proc
from hetbench.builders.corpus_split import (
    client_allocation,
    corpus_device_split,
    corpus_extras,
    folder_name,
    split_by_capture,
    stable_reason,
)
from hetbench.builders.row_spill import RowSpill
from hetbench.engines import EngineSpec
from hetbench.errors import HetbenchError
from hetbench.naming import SPLITS_ROOT
from hetbench.pipeline import PreparedSplit
from hetbench.seeding import check_seed


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
            raise HetbenchError(f"the {recipe} recipe reads a Hub Parquet dataset: give `dataset` (a local copy or the hub "
                                "id), not `data_dir`, no `size` (its images are published as stored; resize at "
                                "training time with hetbench train `image_size`) and no `test_fraction` (it keeps the "
                                "corpus's own test split)")
        from hetbench.builders.parquet_corpus import prepare_parquet_corpus

        return prepare_parquet_corpus(spec, settings, recipe, dataset, clients, clients_per_device, seed, quiet,
                                      on_checked, purity, client_allocation)
    if data_dir is None or dataset is not None:
        raise HetbenchError(f"the {recipe} recipe reads a folder: give `data_dir`, not `dataset`")
    if settings["reader"] == "fivek-cameras":
        from hetbench.builders.raw_cameras import prepare_raw_cameras

        return prepare_raw_cameras(spec, settings, recipe, data_dir, clients, clients_per_device, size, test_fraction,
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
        raise HetbenchError(f"`test_fraction` must be between 0 and 1 (got {test_fraction})")
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
        rows, counts = split_by_capture(kept, test_fraction, seed)
    except BaseException:
        spill.close()
        raise
    params: dict[str, Any] = {"recipe": recipe, "data_dir": str(data_dir), "clients": asked,
                              "clients_per_device": clients_per_device, "size": size, "test_fraction": test_fraction}
    return corpus_device_split(spec, recipe, data_dir, f"{layout.description} (local copy '{folder_name(data_dir)}')",
                               spill, rows, kept, params, clients, weights, purity, seed,
                               corpus_extras(spec, layout.setting_of, devices, weights, counts, skipped, len(images)),
                               fit_rows=counts["train"])


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
    from hetbench.contract import recorded_build

    part = recorded_build(manifest)
    where = "recipe.build.params" if isinstance(manifest["recipe"].get("build"), dict) else "recipe.partition.params"
    check_params(prepare_real_devices, part["params"], where, exclude=REBUILD_PASSES)
    return prepare_real_devices(seed=part["seed"], num_proc=num_proc, quiet=True, **part["params"]).build()
