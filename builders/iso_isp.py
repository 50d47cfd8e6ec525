"""``hetbench build iso-isp``: the same captures re-rendered stage by stage (HeteroSwitch sec. 3.4).

The Table 3 baseline pipeline is one "device"; each other Table 3 option of each listed stage, with
every other stage at baseline, is one more. Every capture is rendered by every device, so devices
differ only by their ISP. Sources: RAW files (``raw_dir``, labels from ``labels``), or the
embedded default: crops of the real photographs shipped in scikit-image and scikit-learn (75 crops
of 256 px of each of the 7 scenes: 525 captures, 105 of them test images of every device at
``test_fraction`` 0.2), unprocessed into RAW by the nine HeteroSwitch device profiles in turn
(label = scene).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from hetbench.builders.captures import (
    capture_jobs,
    check_clients,
    check_clients_fit,
    check_size,
    read_device_weights,
    rebuild_from_recipe,
    run_jobs,
)
from hetbench.builders.device_split import device_extras, rendered_table
from hetbench.builders.embedded_crops import CROP_SIZE, CROPS_PER_PHOTO
from hetbench.engines import EngineSpec
from hetbench.errors import HetbenchError
from hetbench.isp.jobs import Render
from hetbench.naming import SPLITS_ROOT
from hetbench.partitioners.devices import DevicePartitioner
from hetbench.pipeline import PreparedSplit
from hetbench.seeding import check_seed

EMBEDDED = "builtin:photos"
EMBEDDED_DESCRIPTION = (
    "crops of the real photographs that ship inside scikit-image and scikit-learn, turned into RAW "
    "captures by unprocessing (Brooks et al. 2019) with the nine HeteroSwitch device profiles, label = scene "
    "(HeteroSwitch's protocol in miniature: the same scenes captured by every device)"
)


def prepare_iso_isp(
    stages: str = "wb,tone",
    raw_dir: str | None = None,
    labels: str | None = None,
    size: int | None = 224,
    clients: int | None = None,
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
    recipe: str | None = None,
    lens_shading: str | None = None,
    purity: float = 1.0,
    reference: str = "phone",
    test_crops: str = "random",
) -> PreparedSplit:
    """Render every capture under every Table 3 variant of ``stages``; the split, not yet published.

    Parameters
    ----------
    stages : str
        Comma list of stages whose Table 3 options become devices (``wb``, ``demosaic``, ``denoise``,
        ``gamut``, ``tone``, ``compress``) or ``all``.
    raw_dir, labels : str, optional
        A folder of RAW files and a CSV ``file,label``; default: the embedded photographs.
    size : int, optional
        Side of the square output images (16-4096; None keeps the render's size).
    clients : int, optional
        Number of clients (default: one per device); at least one per device.
    device_weights : str, optional
        A JSON/YAML file mapping device -> participation weight (default: uniform).
    test_fraction : float
        Share of captures held out for testing (by capture, stratified by label).
    seed, num_proc, quiet
        Seed of every random choice; worker processes (default: the cores this process may use); no
        progress bar.
    crops_per_photo, crop_size : int
        Embedded default: crops per photograph and their side in pixels. The defaults, 75 crops of
        256 px of each of the 7 scenes, make 525 captures; at ``test_fraction`` 0.2 every device
        is tested on 105 of them (captures are held out by capture, and every device renders every
        capture). Fewer crops give fewer test images per device, and noisier per-device accuracies.
    title : str, optional
        Title of the contact sheet; None writes no device plots (as ``hetbench verify`` needs).
    engine : EngineSpec, optional
        What renders the captures (:mod:`hetbench.engines`; None: the local worker pool). Not part
        of the recipe: the split is the same bytes whatever renders it.
    on_checked : callable, optional
        Called once every input is checked, before any rendering (the build checks its output
        folder there, so a bad input is reported before an existing folder).
    recipe : str, optional
        A corpus recipe of this builder (``fivek-subject``, ``fivek-light``): ``raw_dir`` is a copy
        of that corpus and the labels come from its metadata (:mod:`hetbench.sources.fivek`).
    lens_shading : str, optional
        RAW files only: ``dng`` (default: each file's own GainMap / FixVignetteRadial correction),
        ``none``, or ``cos4:C`` (also correct files without their own as a cos^4-law lens whose corner
        gets C of the centre's light; :mod:`hetbench.isp.lens_shading`).
    purity : float
        Share of a client's training images rendered by its own device, in [1/D, 1] (the rest by the other
        devices, equally; :mod:`hetbench.partitioners.purity`); 1 is one device per client.
    reference : {"phone", "paper"}
        The ``baseline`` device every variant changes one stage of: ``phone`` (default), hetbench's
        phone-like rendering (grey-edge WB, mild chroma smoothing and sharpening), or ``paper``, Table 3's
        Baseline column (gray-world WB, no chroma or sharpening stage) (:data:`hetbench.isp.pipeline.REFERENCES`).
    test_crops : {"random", "unseen-region"}
        Embedded photographs only: ``random`` (default) holds out ``test_fraction`` of the crops, which may
        overlap training crops; ``unseen-region`` cuts each photograph's test crops from a band at one end no
        training crop touches (:data:`hetbench.builders.embedded_crops.TEST_CROPS`).

    References
    ----------
    Kim et al., HeteroSwitch, MLSys 2024: sec. 3.4 and Table 3 (one stage changed at a time).
    Bychkovsky et al., CVPR 2011 (MIT-Adobe FiveK), for the ``fivek-*`` recipes.

    Examples
    --------
    >>> from hetbench.builders.iso_isp import prepare_iso_isp
    >>> prepared = prepare_iso_isp("wb", size=32, crops_per_photo=1, crop_size=96, quiet=True)
    >>> split = prepared.build()
    >>> split.client_names[:2], sorted(split.outputs)
    (('baseline/0', 'wb=none/0'), ['test', 'train'])
    """
    from hetbench.isp.pipeline import Pipeline, parse_stage_list, table3_variants

    seed = check_seed(seed)
    size = check_size(size)
    base = Pipeline.reference(reference)
    pipelines = table3_variants(parse_stage_list(stages), base)
    devices = [p.name_against(base) for p in pipelines]
    isp_of = {p.name_against(base): str(p) for p in pipelines}
    weights = read_device_weights(device_weights, devices)
    description = (EMBEDDED_DESCRIPTION if raw_dir is None  # the folder's name, never its path
                   else f"the RAW captures in '{os.path.basename(os.path.abspath(raw_dir))}'")
    corpus = None if recipe is None else corpus_labels(recipe, raw_dir, labels)
    if corpus is not None:
        description = f"{corpus.description} (local copy '{os.path.basename(os.path.abspath(raw_dir))}')"  # its name
    return render_device_split(
        "iso-isp", {"stages": stages, **({"reference": reference} if reference != "phone" else {})}, isp_of, weights, [Render(d, isp_of[d]) for d in devices],
        raw_dir, labels, size, clients, device_weights, test_fraction, seed, num_proc, crops_per_photo, crop_size,
        quiet, description, f"rendering {{n}} captures x {len(devices)} ISP variants", title=title, engine=engine,
        on_checked=on_checked, corpus=corpus, lens_shading=lens_shading, purity=purity, test_crops=test_crops,
    )


@dataclass
class CorpusLabels:
    """A corpus recipe's RAW files and labels (``label_of``), what it leaves out, and its report."""

    recipe: str
    label_of: dict[str, str]
    description: str
    report: dict[str, Any]


def corpus_labels(recipe: str, raw_dir: str | None, labels: str | None) -> CorpusLabels:
    """The labelled RAW files of a corpus recipe of ``build iso-isp`` (MIT-Adobe FiveK: the field the
    recipe names, read from ``categories.txt``); bad input is a :class:`HetbenchError`."""
    from collections import Counter

    from hetbench.publish.recipes import recipe_mode
    from hetbench.sources.fivek import fivek_captures

    spec, settings = recipe_mode(recipe, "iso-isp", "import")
    if raw_dir is None:
        raise HetbenchError(f"`recipe` {recipe} needs `raw_dir`: the folder of the corpus ({spec.get('source', '')})")
    if labels is not None:
        raise HetbenchError(f"`recipe` {recipe} takes its labels from the corpus; drop `labels`")
    found = fivek_captures(raw_dir, settings["field"])
    counts = dict(sorted(Counter(found.label_of.values()).items()), unknown=len(found.unlabelled))
    report = {"recipe": recipe, "field": settings["field"], "listed": found.listed, "labelled": len(found.label_of),
              "counts": counts, "unlabelled": found.unlabelled, "published": spec.get("published", {})}
    return CorpusLabels(recipe, found.label_of, str(spec.get("description", recipe)).split(":")[0], report)


def render_device_split(
    method: str, family_params: dict[str, Any], isp_of: dict[str, str], weights: dict[str, float],
    renders: list[Render], raw_dir, labels, size, clients, device_weights, test_fraction, seed, num_proc,
    crops_per_photo, crop_size, quiet, description: str, progress: str, profile_set: str = "heteroswitch9",
    title: str | None = None, engine: EngineSpec | None = None, on_checked: Callable[[], None] | None = None,
    corpus: CorpusLabels | None = None, lens_shading: str | None = None, purity: float = 1.0,
    test_crops: str = "random",
) -> PreparedSplit:
    """What every device builder shares: check, render every capture for every device, record the
    build's recipe, and hand the table to the :class:`DevicePartitioner` (``deal`` allocation)."""
    devices = list(isp_of)
    check_clients(clients, devices)
    if purity != 1.0:  # before any rendering
        from hetbench.partitioners.purity import check_purity

        check_purity(purity, len(devices), "devices")
    jobs = capture_jobs(raw_dir, labels, renders, size, seed, crops_per_photo, crop_size, profile_set=profile_set,
                        label_of=None if corpus is None else corpus.label_of, lens_shading=lens_shading,
                        test_crops=test_crops, test_fraction=test_fraction)
    check_clients_fit(clients, weights, len(jobs), training=False)
    if on_checked is not None:  # the inputs are checked: the output folder next, before any rendering
        on_checked()
    # a stream: each capture's images go to disk as it is rendered (rendered_table), never the split in memory
    results = run_jobs(jobs, num_proc, quiet, progress.format(n=len(jobs)), engine, stream=True)
    params: dict[str, Any] = dict(family_params)
    params.update({
        "raw_dir": raw_dir, "labels": labels, "size": size, "clients": clients,
        "device_weights": weights if device_weights else None, "test_fraction": test_fraction,
        "crops_per_photo": crops_per_photo if raw_dir is None else None,
        "crop_size": crop_size if raw_dir is None else None,
    })
    if lens_shading not in (None, "dng"):  # recorded when it changes what is read (older recipes: dng)
        params["lens_shading"] = str(lens_shading).strip().lower()
    if corpus is not None:
        params["recipe"] = corpus.recipe
    if purity != 1.0:  # only when set: the recipes of pure splits stay as they were
        params["purity"] = float(purity)
    if test_crops != "random":  # likewise: the recipes of random test crops stay as they were
        params["test_crops"] = test_crops
    dataset = (raw_dir or EMBEDDED) if corpus is None else f"{corpus.recipe}:{raw_dir}"
    source = {"dataset": dataset, "label_col": "label", "id_col": "sample_id", "labels": labels}
    # the embedded photographs carry mixed licences (CC BY 2.0 among them), credited on the card
    # (hetbench.publish.attribution); a RAW folder's licence is the user's
    license = "other"
    rendered = rendered_table(jobs, results, devices, isp_of, test_fraction, seed, source, description, license)
    check_clients_fit(clients, weights, rendered.captures["train"], training=True)
    partitioner = DevicePartitioner(clients, weights, "device", "deal", build={"method": method, "params": params},
                                    purity=purity)
    extras = device_extras(rendered, isp_of, weights, title, corpus=None if corpus is None else corpus.report)
    return PreparedSplit(rendered.table, partitioner, seed, "global", extras=extras)


def build_iso_isp(
    out: str | os.PathLike | None = None, *, name: str | None = None, overwrite: bool = False, quiet: bool = False,
    stages: str = "wb,tone", clients: int | None = None, recipe: str | None = None, raw_dir: str | None = None,
    labels: str | None = None, lens_shading: str = "dng", size: int | None = 224, device_weights: str | None = None,
    test_fraction: float = 0.2, crops_per_photo: int = CROPS_PER_PHOTO, crop_size: int = CROP_SIZE,
    num_proc: int | None = None, purity: float = 1.0, seed: int = 0, engine: EngineSpec | None = None,
    reference: str = "phone", test_crops: str = "random",
) -> tuple[Path, dict[str, Any]]:
    """Render the same captures under every Table 3 ISP option of ``stages`` and publish the device split
    (``hetbench build iso-isp``); returns the folder and its report.

    The Table 3 baseline pipeline is one device, and each other Table 3 option of each listed stage (every
    other stage at baseline) one more; every capture is rendered by every device, so the devices differ
    only by their ISP. The output folder is checked once the inputs are, before any rendering.

    Parameters
    ----------
    out : str or os.PathLike, optional
        Output folder (default ``hetbench_splits/iso-isp-<stages>-s<seed>``, ``<recipe>-...`` with a recipe).
    name : str, optional
        Data set name in the card and manifest (default: the folder's tag).
    overwrite : bool
        Replace ``out`` if it exists (default False: an existing folder is an error).
    quiet : bool
        No progress bar (default False).
    stages : str
        Comma list of the stages whose Table 3 options become devices (``wb``, ``demosaic``, ``denoise``,
        ``gamut``, ``tone``, ``compress``) or ``all`` (13 devices); default ``"wb,tone"`` (5 devices).
    clients : int, optional
        Number of clients, at least one per device (default None: one client per device).
    recipe : {"fivek-subject", "fivek-light"}, optional
        ``raw_dir`` is a copy of MIT-Adobe FiveK (Bychkovsky et al., CVPR 2011), labelled by its
        subject or its light (``manifests/recipes``); default None.
    raw_dir : str, optional
        Folder of RAW files (any format LibRaw reads); default None: the embedded photographs (7 scenes
        shipped in scikit-image and scikit-learn, unprocessed into RAW by the nine HeteroSwitch profiles).
    labels : str, optional
        CSV with columns ``file,label`` (files relative to ``raw_dir``); default None.
    lens_shading : str
        RAW files only: ``"dng"`` (default: each file's own GainMap / FixVignetteRadial correction),
        ``"none"``, or ``"cos4:C"`` (also correct files without one as a cos^4-law lens whose corners
        get C, in (0, 1], of the centre's light).
    size : int, optional
        Side of the square output images in pixels, 16-4096 (default 224; None keeps the render's size).
    device_weights : str, optional
        JSON/YAML file mapping device -> participation weight (default None: uniform).
    test_fraction : float
        Share of the captures held out for testing, by capture and stratified by label (default 0.2);
        every device renders every test capture.
    crops_per_photo : int
        Embedded photographs only: crops per photograph (default 75: 7 x 75 = 525 captures, 105 test
        images per device at ``test_fraction`` 0.2; fewer make per-device accuracies noisier).
    crop_size : int
        Embedded photographs only: side of each crop in pixels (default 256; render time grows with its square).
    num_proc : int, optional
        Worker processes rendering the captures (default None: the CPU cores this process may use).
    purity : float
        Share of each client's training images rendered by its own device, in [1/D, 1] for D devices
        (default 1: one device per client; 1/D a uniform mix, the rest from the other devices equally).
    seed : int
        Seed of every random choice (default 0).
    engine : EngineSpec, optional
        What runs the renders (:func:`hetbench.engines.engine_spec`; default None: local worker
        processes). Never recorded: the output is the same bytes either way.
    reference : {"phone", "paper"}
        The ``baseline`` device: hetbench's phone-like pipeline (default) or Table 3's Baseline column
        (gray-world WB, no chroma or sharpening stage); recorded in the recipe when ``paper``.
    test_crops : {"random", "unseen-region"}
        Embedded photographs only: ``random`` (default) holds out a share of one pool of crops (a test crop
        may overlap training crops); ``unseen-region`` takes each photograph's test crops from a band at one
        end that no training crop touches, so the test is on parts of the scenes never trained on; recorded
        in the recipe when ``unseen-region``.

    Returns
    -------
    folder : pathlib.Path
        The published folder.
    report : dict
        Its ``report.json`` (``devices``, ``num_clients``, ``captures``, ...).

    References
    ----------
    Kim et al., HeteroSwitch, MLSys 2024: sec. 3.4 and Table 3 (one stage changed at a time).
    Brooks et al., "Unprocessing Images for Learned Raw Denoising", CVPR 2019 (the embedded captures).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from hetbench.builders.iso_isp import build_iso_isp
    >>> tmp = tempfile.TemporaryDirectory()
    >>> folder, report = build_iso_isp(Path(tmp.name) / "iso", stages="wb", size=16, crops_per_photo=1,
    ...                                crop_size=64, num_proc=1, quiet=True)
    >>> list(report["devices"]), report["num_clients"], (folder / "plots" / "device_samples.png").is_file()
    (['baseline', 'wb=none', 'wb=white-patch'], 3, True)
    >>> tmp.cleanup()
    """
    params = {"stages": stages, "raw_dir": raw_dir, "labels": labels, "size": size, "clients": clients,
              "device_weights": device_weights, "test_fraction": test_fraction, "seed": seed, "num_proc": num_proc,
              "crops_per_photo": crops_per_photo, "crop_size": crop_size, "quiet": quiet, "engine": engine,
              "recipe": recipe, "lens_shading": lens_shading, "purity": purity, "reference": reference,
              "test_crops": test_crops}
    tag = (f"{recipe or 'iso-isp'}-{stages.replace(',', '+')}{f'-p{purity:g}' if purity != 1.0 else ''}"
           f"{'-paper' if reference == 'paper' else ''}{'-unseen' if test_crops == 'unseen-region' else ''}-s{seed}")
    return publish_checked(prepare_iso_isp, Path(out) if out else SPLITS_ROOT / tag, name or tag, overwrite, params)


def publish_checked(prepare: Callable[..., PreparedSplit], out: Path, name: str, overwrite: bool,
                    params: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    """``prepare(**params)`` then publish to ``out``; the output folder is checked (and locked) once the
    inputs are, before any rendering (``on_checked``), so a bad input is reported before an existing folder."""
    from contextlib import ExitStack

    from hetbench.atomic import locked_out
    from hetbench.builders.row_spill import spill_beside
    from hetbench.outputs import input_paths

    inputs = input_paths(params)  # --out may not be, lie inside or contain --raw-dir, --data-dir, ...
    with ExitStack() as stack:
        stack.enter_context(spill_beside(Path(os.path.abspath(out)).parent))  # the rendered rows, until published
        locked: list[Path] = []
        prepared = prepare(**params, title=name,
                           on_checked=lambda: locked.append(stack.enter_context(locked_out(out, overwrite, inputs=inputs))))
        if not locked:  # a prepare that never reached its renders
            locked.append(stack.enter_context(locked_out(out, overwrite, inputs=inputs)))
        _, report = prepared.publish(locked[0], name=name, overwrite=overwrite, quiet=params.get("quiet", False))
    return locked[0], report


def rebuild(manifest: dict, num_proc: int = 1):
    """Re-run the recorded recipe (for ``hetbench verify``); returns the split."""
    return rebuild_from_recipe(prepare_iso_isp, manifest, num_proc)
