"""``hetbench build <family>``: builders that render or assemble their own data."""

from __future__ import annotations

from pathlib import Path

import click


def _publish(ds, out: Path, name: str, overwrite: bool, quiet: bool) -> None:
    from hetbench.builders.isp_split import isp_plots
    from hetbench.publish import publish_split

    report = publish_split(
        ds.split, out, name=name, overwrite=overwrite, quiet=quiet,
        extra_report=ds.extra_report, extra_plots=isp_plots(ds, name),
    )
    if not quiet:
        skipped = report.get("num_skipped", 0)
        click.echo(
            f"wrote {out}: {report['num_clients']} clients on {len(report['devices'])} devices, "
            f"{report['num_samples']:,} training images, {report['splits']['test']['num_rows']:,} test images"
            + (f"; {skipped} capture(s) skipped (see report.json)" if skipped else "")
        )


def _isp_options(fn):
    opts = [
        click.option("--raw-dir", default=None, type=click.Path(), help="Folder of RAW files (any format LibRaw reads). Default: the embedded photographs."),
        click.option("--labels", default=None, type=click.Path(), help="CSV with columns file,label (files relative to --raw-dir)."),
        click.option("--size", default=224, show_default=True, type=int, help="Side of the square output images (16-4096)."),
        click.option("--device-weights", default=None, type=click.Path(), help="JSON/YAML mapping device -> participation weight."),
        click.option("--test-fraction", default=0.2, show_default=True, type=float, help="Share of captures held out for testing (by capture)."),
        click.option("--crops-per-photo", default=8, show_default=True, type=int, help="Embedded default: crops per photograph."),
        click.option("--crop-size", default=384, show_default=True, type=int, help="Embedded default: side of each crop (pixels)."),
        click.option("--num-proc", default=1, show_default=True, type=int, help="Worker processes rendering captures."),
        click.option("--seed", default=0, show_default=True, type=int),
        click.option("--out", default=None, type=click.Path(file_okay=False), help="Output folder (default: hetbench_splits/<family>-...)."),
        click.option("--name", default=None, help="Data set name in the card and manifest."),
        click.option("--overwrite", is_flag=True, help="Replace --out if it exists."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar or summary."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


@click.group()
def build() -> None:
    """Build benchmark families that render their own data.

    \b
    Examples:
      hetbench build iso-isp --stages wb,tone
      hetbench build iso-isp --stages all --raw-dir my_raws --labels labels.csv --num-proc 2
      hetbench build devices --profiles heteroswitch9 --clients 50
    """


@build.command("iso-isp")
@click.option("--stages", default="wb,tone", show_default=True, help="Stages whose Table 3 options become devices: comma list or 'all'.")
@click.option("--clients", default=None, type=int, help="Number of clients (default: one per device).")
@_isp_options
def iso_isp_cmd(stages, clients, raw_dir, labels, size, device_weights, test_fraction, crops_per_photo, crop_size, num_proc, seed, out, name, overwrite, quiet):
    """Re-render the same captures per ISP stage option: one device per Table 3 variant.

    Example: hetbench build iso-isp --stages wb,tone
    """
    from hetbench.atomic import check_out_dir
    from hetbench.builders.iso_isp import build_iso_isp

    tag = f"iso-isp-{stages.replace(',', '+')}-s{seed}"
    out_path = Path(out) if out else Path("hetbench_splits") / tag
    check_out_dir(out_path, overwrite)
    ds = build_iso_isp(stages, raw_dir, labels, size, clients, device_weights, test_fraction, seed, num_proc, crops_per_photo, crop_size, quiet)
    _publish(ds, out_path, name or tag, overwrite, quiet)


@build.command("devices")
@click.option("--profiles", default="heteroswitch9", show_default=True, help="Device profile set (manifests/devices/<name>.yaml).")
@click.option("--clients", default=None, type=int, help="Number of clients (default: 50 phones, or one per synthetic device).")
@click.option("--synthetic-color", default=None, type=int,
              help="HeteroSwitch sec. 6.5 instead: N synthetic devices (fixed random brightness/contrast/saturation/hue) over --dataset.")
@click.option("--dataset", default="builtin:digits", show_default=True, help="With --synthetic-color: any labelled image table.")
@click.option("--label-col", default=None, help="With --synthetic-color: the label column.")
@_isp_options
def devices_cmd(profiles, clients, synthetic_color, dataset, label_col, raw_dir, labels, size, device_weights, test_fraction,
                crops_per_photo, crop_size, num_proc, seed, out, name, overwrite, quiet):
    """Every client is one emulated phone: its sensor profile and its own ISP.

    \b
    Examples:
      hetbench build devices --clients 50
      hetbench build devices --synthetic-color 10 --dataset builtin:mnist5k
    """
    from hetbench.atomic import check_out_dir

    if synthetic_color is not None:
        from hetbench.builders.synthetic_color import build_synthetic_color

        if raw_dir or labels or device_weights:
            raise click.UsageError("--synthetic-color works on --dataset; it takes no --raw-dir, --labels or --device-weights")
        base = dataset.split(":", 1)[1] if dataset.startswith("builtin:") else Path(dataset.rstrip("/")).stem
        tag = f"devices-synthetic{synthetic_color}-{base}-s{seed}"
        out_path = Path(out) if out else Path("hetbench_splits") / tag
        check_out_dir(out_path, overwrite)
        size = None if size == 224 and dataset.startswith("builtin:") else size  # keep the digits' own size
        ds = build_synthetic_color(synthetic_color, dataset, label_col, clients, size, test_fraction, seed, quiet)
    else:
        from hetbench.builders.devices import build_devices

        clients = 50 if clients is None else clients
        tag = f"devices-{profiles}-n{clients}-s{seed}"
        out_path = Path(out) if out else Path("hetbench_splits") / tag
        check_out_dir(out_path, overwrite)
        ds = build_devices(profiles, raw_dir, labels, size, clients, device_weights, test_fraction, seed, num_proc, crops_per_photo, crop_size, quiet)
    _publish(ds, out_path, name or tag, overwrite, quiet)
