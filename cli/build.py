"""``hetbench build <family>``: builders that render or assemble their own data."""

from __future__ import annotations

from pathlib import Path

import click

from hetbench.builders.embedded_crops import CROP_SIZE, CROPS_PER_PHOTO, TEST_CROPS
from hetbench.cli.licence_options import licence_options


#: skipped items a build's summary names, with their reasons (report.json lists them all)
SUMMARY_SKIPPED = 2


def skipped_text(report: dict, noun: str) -> str:
    """The summary's account of skipped items: how many, the first :data:`SUMMARY_SKIPPED` by name with
    their reasons, and where the rest are; "" when none was skipped.

    Examples
    --------
    >>> skipped_text({"num_skipped": 1, "skipped": [{"file": "a.dng", "reason": "not a CFA mosaic"}]}, "capture")
    '; 1 capture skipped: a.dng (not a CFA mosaic)'
    >>> skipped_text({"num_skipped": 4, "skipped": [{"file": f"{i}.png", "reason": "truncated"} for i in range(4)]},
    ...              "image")
    '; 4 images skipped: 0.png (truncated), 1.png (truncated) and 2 more (report.json lists every one)'
    """
    n = int(report.get("num_skipped", 0))
    if not n:
        return ""
    named = [f"{s['file']} ({s['reason']})" for s in report.get("skipped", [])[:SUMMARY_SKIPPED]]
    rest = n - len(named)
    return (f"; {n} {noun}{'s' if n != 1 else ''} skipped: {', '.join(named)}"
            + (f" and {rest} more (report.json lists every one)" if rest else ""))


def _summary(out: Path, report: dict) -> None:
    # every device renders every capture: its test images are the held-out captures
    per_device = report.get("captures", {}).get("test")
    click.echo(
        f"wrote {out}: {report['num_clients']} clients on {len(report['devices'])} devices, "
        f"{report['num_samples']:,} training images, {report['splits']['test']['num_rows']:,} test images"
        + (f"; test images per device: {per_device:,}" if per_device is not None else "")
        + skipped_text(report, "capture")
    )


#: the default of every builder's ``--num-proc``: the CPU cores this process may use (hetbench.cores.available_cores)
NUM_PROC_DEFAULT = "[default: the CPU cores this process may use (affinity and cgroup quota)]"

RAY_INPUTS_HELP = (
    "With --engine ray: how RAW files reach the workers. path: by their path (use it when every node of the "
    "cluster mounts the same file system, e.g. a local Ray instance or an NFS share); object: the driver reads "
    "each file and puts its bytes in Ray's object store (use it when the nodes do not share this file system). "
    "The embedded photographs always travel by value."
)


def engine_options(fn, inputs: bool = True):
    """``--engine``, ``--ray-address`` (and ``--ray-inputs``): what runs a build's jobs (never recorded)."""
    opts = [
        click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="What runs the jobs: local (worker processes on this machine) or ray (Ray tasks; "
                     "pip install 'hetbench[ray]'). The output is the same bytes either way."),
        click.option("--ray-address", default=None, metavar="ADDRESS",
                     help="With --engine ray: 'auto' joins the Ray cluster running on this machine, HOST:PORT the "
                     "cluster whose head listens there (hetbench must be installed on its nodes). Default: start a "
                     "local Ray instance with --num-proc CPUs for this build."),
    ]
    if inputs:
        opts.append(click.option("--ray-inputs", type=click.Choice(["path", "object"]), default="path", show_default=True,
                                 help=RAY_INPUTS_HELP))
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _engine(engine: str, ray_address: str | None, ray_inputs: str = "path"):
    from hetbench.engines import engine_spec

    return engine_spec(engine, ray_address, ray_inputs)


PURITY_OPTION = click.option(
    "--purity", default=1.0, show_default=True, type=float, metavar="LAMBDA",
    help="Share of each client's training images taken by its own device, in [1/D, 1] for D devices: 1 is one "
    "device per client, 1/D a uniform mix; the rest are the other devices' images, equally from each.")


def _isp_options(fn):
    fn = engine_options(fn)
    opts = [
        click.option("--raw-dir", default=None, type=click.Path(), help="Folder of RAW files (any format LibRaw reads). Default: the embedded photographs."),
        click.option("--labels", default=None, type=click.Path(), help="CSV with columns file,label (files relative to --raw-dir)."),
        click.option("--lens-shading", default="dng", show_default=True,
                     help="With --raw-dir: dng (each file's own GainMap/FixVignetteRadial correction), none, or cos4:C "
                          "(also correct files without one as a cos^4-law lens whose corners get C of the centre's light)."),
        click.option("--size", default=224, show_default=True, type=int, help="Side of the square output images (16-4096)."),
        click.option("--device-weights", default=None, type=click.Path(), help="JSON/YAML mapping device -> participation weight."),
        click.option("--test-fraction", default=0.2, show_default=True, type=float, help="Share of captures held out for testing (by capture)."),
        click.option("--crops-per-photo", default=CROPS_PER_PHOTO, show_default=True, type=int,
                     help=f"Embedded default: crops per photograph. The default gives >= 100 test images per device across "
                     f"the 7 scenes (7 x {CROPS_PER_PHOTO} = {7 * CROPS_PER_PHOTO} captures, "
                     f"{round(0.2 * 7 * CROPS_PER_PHOTO)} held out at --test-fraction 0.2); fewer make per-device accuracies noisier."),
        click.option("--crop-size", default=CROP_SIZE, show_default=True, type=int,
                     help="Embedded default: side of each crop (pixels; render time grows with its square)."),
        click.option("--test-crops", default="random", show_default=True, type=click.Choice(list(TEST_CROPS)),
                     help="Embedded default: random holds out --test-fraction of the crops (a test crop may overlap "
                     "training crops); unseen-region cuts each photograph's test crops from a band at one end that no "
                     "training crop touches (scenes' unseen parts)."),
        click.option("--num-proc", default=None, type=int,
                     help=f"Worker processes rendering captures. {NUM_PROC_DEFAULT}"),
        PURITY_OPTION,
        click.option("--seed", default=0, show_default=True, type=int),
        click.option("--out", default=None, type=click.Path(file_okay=False), help="Output folder (default: hetbench_splits/<family>-...)."),
        click.option("--name", default=None, help="Data set name in the card and manifest."),
        click.option("--overwrite", is_flag=True, help="Replace --out if it exists."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


@click.group(short_help="Build benchmark families that render or assemble their own data.")
def build() -> None:
    """Build benchmark families that render their own data.

    \b
    Examples:
      hetbench build iso-isp --stages wb,tone
      hetbench build iso-isp --stages all --raw-dir my_raws --labels labels.csv --num-proc 2
      hetbench build devices --synthetic-color 10 --dataset builtin:mnist5k
      hetbench build iso-isp --stages all --raw-dir /nfs/raws --engine ray --ray-address auto
      hetbench build devices --profiles heteroswitch9 --clients 50
    """


@build.command("iso-isp", short_help="The same captures under every Table 3 ISP option (HeteroSwitch).")
@licence_options
@click.option("--stages", default="wb,tone", show_default=True, help="Stages whose Table 3 options become devices: comma list or 'all'.")
@click.option("--clients", default=None, type=int, help="Number of clients (default: one per device).")
@click.option("--recipe", default=None, type=click.Choice(["fivek-subject", "fivek-light"]),
              help="A RAW corpus: --raw-dir is a copy of MIT-Adobe FiveK, labelled by its subject or light.")
@click.option("--reference", default="phone", show_default=True, type=click.Choice(["phone", "paper"]),
              help="The baseline device: hetbench's phone-like pipeline, or Table 3's Baseline column (gray-world "
              "WB, no chroma smoothing or sharpening).")
@_isp_options
def iso_isp_cmd(stages, clients, recipe, reference, raw_dir, labels, lens_shading, size, device_weights, test_fraction, crops_per_photo, crop_size,
                test_crops, num_proc, purity, seed, out, name, overwrite, quiet, engine, ray_address, ray_inputs):
    """Re-render the same captures per ISP stage option: one device per Table 3 variant.

    \b
    Examples:
      hetbench build iso-isp --stages wb,tone
      hetbench build iso-isp --stages wb,tone --recipe fivek-subject --raw-dir fivek_dataset --num-proc 2
      hetbench build iso-isp --stages wb,tone,denoise --reference paper
    """
    from hetbench.builders.iso_isp import build_iso_isp

    out_path, report = build_iso_isp(
        out, name=name, overwrite=overwrite, stages=stages, raw_dir=raw_dir, labels=labels, size=size, clients=clients,
        device_weights=device_weights, test_fraction=test_fraction, seed=seed, num_proc=num_proc,
        crops_per_photo=crops_per_photo, crop_size=crop_size, quiet=quiet, engine=_engine(engine, ray_address, ray_inputs),
        recipe=recipe, lens_shading=lens_shading, purity=purity, reference=reference, test_crops=test_crops,
    )
    if not quiet:
        _summary(out_path, report)


@build.command("devices", short_help="Emulated phones (sensor + ISP), or --synthetic-color devices.")
@licence_options
@click.option("--profiles", default="heteroswitch9", show_default=True, help="Device profile set (manifests/devices/<name>.yaml).")
@click.option("--clients", default=None, type=int, help="Number of clients (default: 50 phones, or one per synthetic device).")
@click.option("--synthetic-color", default=None, type=int,
              help="HeteroSwitch sec. 6.5 instead: N synthetic devices (fixed random brightness/contrast/saturation/hue) over --dataset.")
@click.option("--dataset", default="builtin:digits", show_default=True, help="With --synthetic-color: any labelled image table.")
@click.option("--label-col", default=None, help="With --synthetic-color: the label column.")
@_isp_options
def devices_cmd(profiles, clients, synthetic_color, dataset, label_col, raw_dir, labels, lens_shading, size, device_weights, test_fraction,
                crops_per_photo, crop_size, test_crops, num_proc, purity, seed, out, name, overwrite, quiet, engine, ray_address,
                ray_inputs):
    """Every client is one emulated phone: its sensor profile and its own ISP.

    \b
    Examples:
      hetbench build devices --clients 50
      hetbench build devices --synthetic-color 10 --dataset builtin:mnist5k
    """
    spec = _engine(engine, ray_address, ray_inputs)
    if synthetic_color is not None:
        from hetbench.builders.synthetic_color import build_synthetic_color

        if spec.name != "local":
            raise click.UsageError("--synthetic-color renders no captures; it takes no --engine ray")
        if raw_dir or labels or device_weights or lens_shading != "dng" or purity != 1.0 or test_crops != "random":
            raise click.UsageError("--synthetic-color works on --dataset; it takes no --raw-dir, --labels, "
                                   "--lens-shading, --device-weights, --purity or --test-crops (each row is rendered "
                                   "by one device)")
        size = None if size == 224 and dataset.startswith("builtin:") else size  # keep the digits' own size
        out_path, report = build_synthetic_color(
            out, name=name, overwrite=overwrite, num_devices=synthetic_color, dataset=dataset, label_col=label_col,
            clients=clients, size=size, test_fraction=test_fraction, seed=seed, quiet=quiet,
        )
    else:
        from hetbench.builders.devices import build_devices

        out_path, report = build_devices(
            out, name=name, overwrite=overwrite, profiles=profiles, raw_dir=raw_dir, labels=labels, size=size,
            clients=clients, device_weights=device_weights, test_fraction=test_fraction, seed=seed, num_proc=num_proc,
            crops_per_photo=crops_per_photo, crop_size=crop_size, quiet=quiet, engine=spec, lens_shading=lens_shading,
            purity=purity, test_crops=test_crops,
        )
    if not quiet:
        _summary(out_path, report)


@build.command("real-devices", short_help="Public corpora taken by real devices: HeteroSwitch phones, ImageNet-ES, FiveK cameras.")
@licence_options
@click.option("--recipe", required=True, type=click.Choice(["heteroswitch-phones", "imagenet-es", "fivek-cameras", "fed-isic2019"]),
              help="The corpus (manifests/recipes/<recipe>.yaml documents the layout it reads).")
@click.option("--data-dir", default=None, type=click.Path(), help="The local copy of the corpus, in its public layout (folder recipes).")
@click.option("--dataset", default=None,
              help="Parquet recipes (fed-isic2019): the local copy of the Hub dataset (the folder of its Parquet files) or "
              "its hub id, read from the Hugging Face cache.")
@click.option("--clients", default=None, type=int, help="Clients, allocated by the corpus's device weights (default: one per device).")
@click.option("--clients-per-device", default=None, type=int, help="Instead of --clients: K clients for every device.")
@click.option("--size", default=None, type=int,
              help="Resize every image (shorter side, centre square). Default: the files' own bytes (RAW files: 224).")
@click.option("--test-fraction", default=0.2, show_default=True, type=float, help="Share of captures (scenes) held out for testing.")
@click.option("--num-proc", default=None, type=int, help=f"Worker processes reading the images. {NUM_PROC_DEFAULT}")
@PURITY_OPTION
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--out", default=None, type=click.Path(file_okay=False), help="Output folder (default: hetbench_splits/<recipe>-...).")
@click.option("--name", default=None, help="Data set name in the card and manifest.")
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary.")
def real_devices_cmd(recipe, data_dir, dataset, clients, clients_per_device, size, test_fraction, num_proc, purity, seed, out, name,
                     overwrite, quiet):
    """One device per phone (HeteroSwitch), per light and camera setting (ImageNet-ES) or per camera model
    (MIT-Adobe FiveK, its RAW files rendered by the baseline ISP); test split by capture.

    \b
    Examples:
      hetbench build real-devices --recipe heteroswitch-phones --data-dir heteroswitch/ --clients 50 --size 224
      hetbench build real-devices --recipe imagenet-es --data-dir ImageNet-ES/ --clients-per-device 2
      hetbench build real-devices --recipe fivek-cameras --data-dir fivek_dataset/ --size 224 --num-proc 2
      hetbench build real-devices --recipe fed-isic2019 --dataset fed-isic2019/
    """
    from hetbench.builders.real_devices import build_real_devices

    out_path, report = build_real_devices(
        out, name=name, overwrite=overwrite, recipe=recipe, clients=clients, data_dir=data_dir, dataset=dataset,
        clients_per_device=clients_per_device, size=size, test_fraction=test_fraction, seed=seed, num_proc=num_proc,
        quiet=quiet, purity=purity,
    )
    if not quiet:
        click.echo(
            f"wrote {out_path}: {report['num_clients']} clients on {len(report['devices'])} devices, "
            f"{report['num_samples']:,} training images, {report['splits']['test']['num_rows']:,} test images"
            + skipped_text(report, "image")
        )


def _table_summary(out: Path, report: dict, what: str, quiet: bool = False) -> None:
    from hetbench.cli.partition_options import warn_many_classes

    warn_many_classes(int(report.get("num_classes") or 0))  # a label column of a million values, say
    if quiet:
        return
    from hetbench.cli.partition_options import dropped_summary  # held-out rows are the test set, not lost data

    dropped = dropped_summary(report.get("dropped") or {})
    click.echo(
        f"wrote {out}: {report['num_clients']} {what}, {report['num_samples']:,} training rows, EMD {report['emd']:.3f}"
        + ("" if dropped == "no rows dropped" else f"; {dropped}")
    )


def _table_options(fn):
    opts = [
        click.option("--metadata", default=None, help="CSV / parquet / save_to_disk table (default: a generated observation table)."),
        click.option("--label-col", default=None, help="Label column (default: 'species' for the generated table, else 'label')."),
        click.option("--id-col", default=None, help="Sample-id column recorded in the manifest."),
        click.option("--image-root", default=None, type=click.Path(), help="Attach images: files under this folder named by --image-col."),
        click.option("--image-col", default=None, help="Column with image paths relative to --image-root (default: the id column)."),
        click.option("--test-split", type=click.Choice(["global", "client", "natural", "heldout"]), default=None,
                     help="Test policy (default: natural with a source test split; else client for geo, heldout users for users)."),
        click.option("--seed", default=0, show_default=True, type=int),
        click.option("--out", default=None, type=click.Path(file_okay=False)),
        click.option("--name", default=None),
        click.option("--overwrite", is_flag=True),
        click.option("--quiet", "-q", is_flag=True),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


@build.command("geo", short_help="Adaptive S2-cell clients (Hsu et al. 2020, iNaturalist-Geo).")
@licence_options
@click.option("--recipe", default=None, help="A canonical recipe, e.g. inaturalist-geo-3k (manifests/recipes).")
@click.option("--lat-col", default=None, help="Latitude column [default: latitude].")
@click.option("--lon-col", default=None, help="Longitude column [default: longitude].")
@click.option("--nmax", default=None, type=int, help="Split S2 cells holding more than this many examples [default: 3000].")
@click.option("--nmin", default=None, type=int, help="Drop cells with fewer examples (default: 0.01 x nmax).")
@click.option("--test-fraction", default=0.2, show_default=True, type=float)
@_table_options
def geo_cmd(recipe, lat_col, lon_col, nmax, nmin, test_fraction, metadata, label_col, id_col, image_root, image_col, test_split, seed, out, name, overwrite, quiet):
    """Adaptive S2-cell clients (Hsu et al. 2020, iNaturalist-Geo).

    \b
    Examples:
      hetbench build geo --nmax 1000
      hetbench build geo --metadata obs.csv --lat-col latitude --lon-col longitude --label-col species --nmax 3000
    """
    from hetbench.builders.geo import build_geo

    out_path, report = build_geo(
        out, name=name, overwrite=overwrite, quiet=quiet, recipe=recipe, metadata=metadata, lat_col=lat_col, lon_col=lon_col,
        label_col=label_col, id_col=id_col, nmax=nmax, nmin=nmin, test_split=test_split, test_fraction=test_fraction,
        seed=seed, image_root=image_root, image_col=image_col,
    )
    _table_summary(out_path, report, "S2-cell clients", quiet)


@build.command("users", short_help="One client per user, with the published filters (Hsu et al. 2020).")
@licence_options
@click.option("--recipe", default=None, help="landmarks-user-160k or inaturalist-user-120k (manifests/recipes).")
@click.option("--mode", type=click.Choice(["import", "rebuild"]), default=None,
              help="With --recipe: import the published split files, or rebuild from raw metadata [default: import].")
@click.option("--user-col", default=None, help="User column (default: 'observer' for the generated table, else 'user_id').")
@click.option("--filters", type=click.Choice(["landmarks", "inaturalist", "none"]), default=None, help="[default: landmarks]"
              " landmarks: classes >= 30 images & 10 users, users >= 30 images & 5 classes, to a fixed point;"
              " inaturalist: classes >= 100 training images, subsampled to 100.")
@click.option("--min-samples", default=1, show_default=True, type=int, help="Drop users with fewer training rows (counted after --test-split client's per-user hold-out).")
@click.option("--test-fraction", default=0.1, show_default=True, type=float, help="With --test-split heldout: share of users held out.")
@_table_options
def users_cmd(recipe, mode, user_col, filters, min_samples, test_fraction, metadata, label_col, id_col, image_root, image_col, test_split, seed, out, name, overwrite, quiet):
    """One client per user, with the published per-user filters (Hsu et al. 2020).

    \b
    Examples:
      hetbench build users
      hetbench export builtin:observations --out obs.csv
      hetbench build users --metadata obs.csv --user-col observer --label-col species --filters landmarks
    """
    from hetbench.builders.users import build_users

    out_path, report = build_users(
        out, name=name, overwrite=overwrite, quiet=quiet, recipe=recipe, mode=mode, metadata=metadata, user_col=user_col,
        label_col=label_col, id_col=id_col, filters=filters, min_samples=min_samples, test_split=test_split,
        test_fraction=test_fraction, seed=seed, image_root=image_root, image_col=image_col,
    )
    _table_summary(out_path, report, "users", quiet)


@build.command("digits-domains", short_help="DapperFL-style Digits domains made offline, split by domain.")
@licence_options
@click.option("--clients", default=12, show_default=True, type=int)
@click.option("--fraction", default=0.1, show_default=True, type=float, help="Share of its domain's training data per client.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--out", default=None, type=click.Path(file_okay=False))
@click.option("--name", default=None)
@click.option("--overwrite", is_flag=True)
@click.option("--quiet", "-q", is_flag=True)
def digits_domains_cmd(clients, fraction, seed, out, name, overwrite, quiet):
    """DapperFL-style Digits domains made offline (MNIST, USPS-like, MNIST-M-like, SYN-like), split
    over clients by domain; the test split stays per domain.

    Example: hetbench build digits-domains --clients 12 --fraction 0.1
    """
    from hetbench.builders.digits_domains import build_digits_domains

    out_path, report = build_digits_domains(out, name=name, overwrite=overwrite, quiet=quiet, clients=clients, fraction=fraction, seed=seed)
    if not quiet:
        click.echo(f"wrote {out_path}: {report['num_clients']} clients over 4 domains, {report['num_samples']:,} training images")
