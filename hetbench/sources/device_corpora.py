"""Real-device image corpora: public folders of photographs of the same scenes taken by several
devices (phones, or one camera under several sensor settings).

A :class:`Corpus` knows one public layout: :meth:`Corpus.scan` walks a local copy and returns one
:class:`CorpusImage` per photograph (its file, label, device and capture), and refuses a folder
that does not match the layout with one line naming the first missing or unexpected path.
:func:`read_images` then reads the files on every core (``--num-proc``), passing the encoded bytes
through untouched (or resizing them when asked), and sets the unreadable ones aside with the reason.
The corpora are registered in :data:`CORPORA` (one module each); their recipes are
``manifests/recipes/<name>.yaml`` and the builder is :mod:`hetbench.builders.real_devices`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from hetbench.errors import HetbenchError
from hetbench.png import encode_png

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")


@dataclass(frozen=True)
class CorpusImage:
    """One photograph of a corpus.

    Parameters
    ----------
    file : str
        Path relative to the corpus folder (``/``-separated).
    label : str
        Its class.
    device : str
        The device (or sensor setting) that took it.
    capture : str
        The scene: the same id under every device that photographed it, so that a test split by
        capture never shows a test scene in training.
    """

    file: str
    label: str
    device: str
    capture: str


@dataclass(frozen=True)
class Corpus:
    """A public real-device corpus: how to read its layout, and what it is.

    Parameters
    ----------
    name : str
        The recipe name (``manifests/recipes/<name>.yaml``).
    description : str
        One sentence for the dataset card.
    devices : tuple of str
        Every device of the full corpus, in the corpus's own order.
    scan : callable
        ``scan(root) -> list[CorpusImage]``, sorted by file; raises :class:`HetbenchError` naming the
        first path that breaks the layout.
    layout : str
        The layout, as the recipe documents it (for error messages).
    weights : dict
        Device -> participation weight (market share); empty: uniform.
    setting_of : callable, optional
        Device -> its capture settings, reported per device (ImageNet-ES: light, ISO, shutter, aperture).
    """

    name: str
    description: str
    devices: tuple[str, ...]
    scan: Callable[[Path], list[CorpusImage]]
    layout: str
    weights: dict[str, float] = field(default_factory=dict)
    setting_of: Callable[[str], dict] | None = None


def image_files(folder: Path) -> list[Path]:
    """Image files directly in ``folder`` (by suffix, case-insensitive), sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def check_folder(root: str | Path, layout: str) -> Path:
    """``root`` as a Path, or a :class:`HetbenchError` when it is not a folder."""
    path = Path(root).expanduser()
    if not path.is_dir():
        raise HetbenchError(f"`data_dir` '{root}' is not a folder (expected {layout})")
    return path


@dataclass
class ReadImage:
    """What :func:`read_image` made of one file: the bytes to publish, or why it was skipped."""

    data: bytes | None
    skipped: str | None = None


def read_image(job: tuple[str, int | None]) -> ReadImage:
    """Read one image file. ``size`` None: the file's own bytes, checked to decode (``PIL``'s
    ``verify``). Otherwise the image decoded, its shorter side scaled to ``size`` and the centre
    ``size`` x ``size`` square cut out (Lanczos), written as PNG. An unreadable file, or one over
    hetbench's pixel bound (:data:`hetbench.image_limits.MAX_PIXELS`, checked from its header before
    anything is decoded), gives its reason instead (one line).

    Parameters
    ----------
    job : tuple
        ``(path, size)``.

    Examples
    --------
    >>> import struct, zlib
    >>> from hetbench.sources.device_corpora import read_image
    >>> def chunk(kind, body):
    ...     return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    >>> huge = (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0))
    ...         + chunk(b"IDAT", zlib.compress(bytes(64))) + chunk(b"IEND", b""))
    >>> _ = open("huge.png", "wb").write(huge)
    >>> read_image(("huge.png", None)).skipped
    "image is too large to decode: 400,000,000 pixels, over hetbench's bound of 134,217,728 pixels per image"
    """
    from PIL import Image, UnidentifiedImageError

    from hetbench.image_limits import ImageTooLarge, open_image

    path, size = job
    try:
        data = Path(path).read_bytes()
        with open_image(data, "image") as probe:
            probe.verify()
        if size is None:
            return ReadImage(data)
        with open_image(data, "image") as img:
            img = img.convert("RGB")
            scale = size / min(img.size)
            w, h = max(size, round(img.width * scale)), max(size, round(img.height * scale))
            img = img.resize((w, h), Image.Resampling.LANCZOS)
            left, top = (w - size) // 2, (h - size) // 2
            return ReadImage(encode_png(img.crop((left, top, left + size, top + size))))
    except ImageTooLarge as exc:
        return ReadImage(None, str(exc))
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return ReadImage(None, f"unreadable image: {reason[:160]}")


def read_images(root: Path, images: Sequence[CorpusImage], size: int | None, num_proc: int = 1,
                quiet: bool = False, engine=None) -> list[ReadImage]:
    """:func:`read_image` of every image, in order, on ``num_proc`` worker processes (or ``engine``),
    with a progress bar. An image that resolves outside ``root`` (a symbolic link leading out of
    ``--data-dir``, or under a linked folder that does) is never opened: its result gives the reason
    (:func:`hetbench.roots.outside_reason`), so the builder skips and lists it as an unreadable one.

    Parameters
    ----------
    root : Path
        The corpus folder (``--data-dir``).
    images : sequence of CorpusImage
        What the corpus's ``scan`` found.
    size : int, optional
        As for :func:`read_image`.
    num_proc, quiet, engine
        Worker processes, no progress bar, the engine (:func:`hetbench.engines.open_engine`).

    Examples
    --------
    >>> import os, pathlib
    >>> from PIL import Image
    >>> from hetbench.sources.device_corpora import CorpusImage, read_images
    >>> root = pathlib.Path("corpus_example")
    >>> root.mkdir()
    >>> Image.new("RGB", (4, 4)).save(root / "a.png")
    >>> os.symlink("/etc/hostname", root / "b.png")
    >>> read = read_images(root, [CorpusImage("a.png", "x", "d", "0"), CorpusImage("b.png", "x", "d", "1")], None, quiet=True)
    >>> [r.data is not None for r in read], read[1].skipped
    ([True, False], 'a link leading outside --data-dir (not read)')
    """
    from hetbench.engines import consume, open_engine
    from hetbench.progress import progress_bar
    from hetbench.roots import inside_root, outside_reason, real_root

    real = real_root(root)
    paths = [str(Path(root) / im.file) for im in images]
    inside = [inside_root(path, real) for path in paths]
    jobs = [(path, size) for path, ok in zip(paths, inside) if ok]
    read: list[ReadImage] = []
    with progress_bar(f"reading {len(paths):,} images", len(paths), quiet) as bar:
        if jobs:
            with open_engine(engine, num_proc, len(jobs), preload=("hetbench.sources.device_corpora", "PIL.Image"),
                             quiet=quiet) as pool:
                read = consume(pool.map(read_image, jobs), bar)
        bar.update(len(paths) - len(jobs))
    done = iter(read)
    return [next(done) if ok else ReadImage(None, outside_reason("--data-dir")) for ok in inside]


#: corpus name -> the module that defines it (as ``CORPUS``), imported when the corpus is used
CORPORA = {
    "heteroswitch-phones": "hetbench.sources.heteroswitch_phones",
    "imagenet-es": "hetbench.sources.imagenet_es",
}


def corpus(name: str) -> Corpus:
    """The registered corpus ``name`` (:data:`CORPORA`), or a :class:`HetbenchError` listing them.

    Examples
    --------
    >>> corpus("imagenet-es").devices[:2]
    ('l1/param_1', 'l1/param_2')
    """
    import importlib

    if name not in CORPORA:
        raise HetbenchError(f"unknown real-device corpus '{name}'; corpora: {', '.join(sorted(CORPORA))}")
    return importlib.import_module(CORPORA[name]).CORPUS


def first_unexpected(found: Sequence[str], allowed: Callable[[str], bool]) -> str | None:
    """The first name (sorted) that ``allowed`` refuses, or None."""
    return next((n for n in sorted(found) if not allowed(n)), None)


def visible_dirs(folder: Path) -> list[Path]:
    """Sub-folders of ``folder``, hidden ones (``.name``) left out, sorted by name."""
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


__all__ = ["CORPORA", "Corpus", "CorpusImage", "ReadImage", "check_folder", "corpus", "first_unexpected", "image_files",
           "read_image", "read_images", "visible_dirs"]
