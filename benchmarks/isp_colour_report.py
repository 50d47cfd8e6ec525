"""The baseline ISP and every Table 3 variant on real RAW captures: a contact sheet and the ColorChecker's
CIEDE2000.

Every RAW file in ``--raw`` (default ``../shared/data/raw``) that LibRaw reads as a CFA mosaic is rendered
at full resolution with the baseline pipeline, the paper's gray-world white balance (``wb=gray-world``)
and each Table 3 option of every stage; the thumbnails go into one contact sheet (a row per capture, a
column per pipeline). On the capture where ``colour-checker-detection`` finds an X-Rite ColorChecker, each
pipeline's mean and maximum CIEDE2000 and its exposure error on 'neutral 5'
(:mod:`hetbench.isp.colour_accuracy`) are printed and written as ``colour_accuracy.json``.

Usage::

    python benchmarks/isp_colour_report.py --out /tmp/isp-report     # about 2 minutes on 2 cores

``colour-checker-detection`` is a test dependency (``make test`` installs it); without it the contact
sheet is still drawn.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = ["baseline", "wb=gray-world", "wb=none", "wb=white-patch", "wb=camera", "tone=none",
             "tone=srgb-gamma+equalize", "gamut=none", "gamut=prophoto", "demosaic=bin", "demosaic=ahd",
             "denoise=none", "denoise=bayes-shrink", "compress=none", "compress=jpeg50"]


def detect_swatches(image: np.ndarray) -> np.ndarray | None:
    """The 24 patch colours (sRGB, [0, 1]) of the ColorChecker in ``image`` (uint8 RGB), or None."""
    try:
        import colour_checker_detection as ccd
    except ImportError:
        return None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = ccd.detect_colour_checkers_segmentation(image.astype(np.float32) / 255.0, additional_data=True)
    return np.asarray(found[0].swatch_colours, np.float64) if found else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--raw", type=Path, default=ROOT.parent / "shared" / "data" / "raw")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--thumb", type=int, default=200, help="thumbnail width (pixels)")
    args = parser.parse_args(argv)

    import cv2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hetbench.isp.colour_accuracy import chart_accuracy
    from hetbench.isp.pipeline import Pipeline, Renderer
    from hetbench.isp.raw import UnsupportedRaw, read_raw

    args.out.mkdir(parents=True, exist_ok=True)
    rows, accuracy = [], {}
    for path in sorted(p for p in args.raw.iterdir() if p.suffix.lower() in (".dng", ".kdc", ".cr2", ".nef", ".arw")):
        try:
            capture = read_raw(path)
        except UnsupportedRaw as exc:
            print(f"skipped {path.name}: {exc}", file=sys.stderr)
            continue
        start = time.perf_counter()
        renders = Renderer(size=None).render_all(capture, [Pipeline.parse("" if p == "baseline" else p)
                                                           for p in PIPELINES])
        print(f"{path.name}: {len(renders)} pipelines in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        thumbs = []
        for name, rendered in zip(PIPELINES, renders):
            img = rendered.image
            h = round(img.shape[0] * args.thumb / img.shape[1])
            thumbs.append(cv2.resize(img, (args.thumb, h), interpolation=cv2.INTER_AREA))
            swatches = detect_swatches(img) if name == "baseline" or path.name in accuracy else None
            if swatches is not None:
                acc = chart_accuracy(swatches)
                accuracy.setdefault(path.name, {})[name] = {"mean": round(acc.mean, 2), "max": round(acc.max, 2),
                                                            "neutral_5_ev": round(acc.exposure_ev, 2)}
        rows.append((path.name, thumbs))

    fig, axes = plt.subplots(len(rows), len(PIPELINES), figsize=(1.6 * len(PIPELINES), 1.5 * len(rows) + 0.6),
                             squeeze=False)
    for r, (name, thumbs) in enumerate(rows):
        for c, thumb in enumerate(thumbs):
            ax = axes[r, c]
            ax.imshow(thumb)
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(PIPELINES[c].replace("=", "=\n"), fontsize=7)
            if c == 0:
                ax.set_ylabel(name.rsplit(".", 1)[0].replace("_", "\n", 2), fontsize=6)
    fig.suptitle("Each shared RAW (rows) through hetbench's baseline ISP, the paper's gray-world WB, the camera's WB and "
                 "each Table 3 option (columns)", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.out / "contact_sheet.png", dpi=110)
    (args.out / "colour_accuracy.json").write_text(json.dumps(accuracy, indent=2) + "\n")
    for capture_name, table in accuracy.items():
        print(f"\n{capture_name}: CIEDE2000 against the reference chart (exposure normalised on neutral 5)")
        print(f"{'pipeline':28s} {'mean':>6s} {'max':>6s} {'neutral 5 (EV)':>15s}")
        for name, row in table.items():
            print(f"{name:28s} {row['mean']:6.2f} {row['max']:6.2f} {row['neutral_5_ev']:+15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
