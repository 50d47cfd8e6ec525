"""The decoded-image cache (hetbench.train.cache): decoded once, reused, kept outside the split folder,
keyed by the split's content, rebuilt with one warning when it cannot be trusted, the same bytes for any
number of decode processes, and the images the trainer always decoded."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

from hetbench.errors import HetbenchError
from hetbench.train import cache, cache_entry, decode
from hetbench.train.cache import Decoder, cache_folder, decoded_images, image_source
from hetbench.train.data import channel_stats, gather_rows, load_federated, read_rows


def _image(rng, mode: str, w: int, h: int):
    from PIL import Image

    shape = (h, w) if mode == "L" else (h, w, 3)
    return Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode if mode == "L" else "RGB")


def write_split(folder: Path, train: list, test: list, seed: int = 0) -> Path:
    """A split folder in the published layout: ``train`` / ``test`` are lists of PIL images (or None for a
    row without one); two clients, labels 0/1."""
    import datasets

    feats = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=["a", "b"]),
                               "client_id": datasets.Value("int32")})
    (folder / "data").mkdir(parents=True, exist_ok=True)
    datasets.disable_progress_bars()
    try:
        for part, images in (("train", train), ("test", test)):
            n = len(images)
            rows = {"image": images, "label": [i % 2 for i in range(n)],
                    "client_id": [i % 2 if part == "train" else -1 for i in range(n)]}
            datasets.Dataset.from_dict(rows, features=feats).to_parquet(
                str(folder / "data" / f"{part}-00000-of-00001.parquet"))
    finally:
        datasets.enable_progress_bars()
    return folder


def old_decode(images: list, size: int | None) -> np.ndarray:
    """The trainer's decoding before the cache (kept here as the reference): grayscale stays one channel
    when every image is mode L, else RGB; area interpolation to shrink, bilinear to grow."""
    import cv2

    arrays, gray = [], True
    for img in images:
        if img.mode != "L":
            gray = False
            img = img.convert("RGB")
        arrays.append(np.asarray(img))
    size = size or arrays[0].shape[0]
    out = np.empty((len(arrays), 1 if gray else 3, size, size), dtype=np.uint8)
    for i, im in enumerate(arrays):
        if im.ndim == 2 and not gray:
            im = np.repeat(im[..., None], 3, axis=2)
        if im.shape[:2] != (size, size):
            shrink = min(im.shape[:2]) > size
            im = cv2.resize(im, (size, size), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
        out[i] = im.reshape(size, size, -1).transpose(2, 0, 1)
    return out


@pytest.fixture(autouse=True)
def where(tmp_path, monkeypatch) -> Path:
    """The default cache folder, in a temporary $XDG_CACHE_HOME (no $HETBENCH_CACHE)."""
    monkeypatch.delenv("HETBENCH_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "hetbench" / "train"


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (None for a folder)."""
    return {p.relative_to(folder).as_posix(): None if p.is_dir() else p.read_bytes() for p in folder.rglob("*")}


def forge_zeros(npy: Path, resign: bool = False) -> None:
    """Zero the images of a cache entry and recompute its CRC-32s (what a checksum without a key allows);
    with ``resign`` also its sha256 and digest, where it has them (what someone who knows the format does)."""
    raw = bytearray(npy.read_bytes())
    meta_path = npy.with_name(npy.name[:-4] + ".json")
    meta = json.loads(meta_path.read_text())
    start = len(raw) - int(np.prod(meta["shape"]))
    raw[start:] = bytes(len(raw) - start)
    npy.write_bytes(bytes(raw))
    row = int(np.prod(meta["shape"][1:]))
    per = int(meta["block_rows"]) * row
    meta["block_crc32"] = [zlib.crc32(bytes(raw[a : a + per])) for a in range(start, len(raw), per)]
    if resign and "digest" in meta:
        meta["sha256"] = hashlib.sha256(bytes(raw)).hexdigest()
        meta["digest"] = cache_entry.sign_meta(meta)
    meta_path.write_text(json.dumps(meta))


@pytest.fixture
def mixed(tmp_path):
    """A split of RGB and grayscale images of several sizes (shrunk and grown to 12 px)."""
    rng = np.random.default_rng(1)
    train = [_image(rng, "L" if i % 3 == 0 else "RGB", s, s) for i, s in enumerate([16, 9, 12, 20, 7, 12] * 7)]
    test = [_image(rng, "L", s, s) for s in (12, 30, 5, 12)]
    return write_split(tmp_path / "mixed-a0.5-n2", train, test), train, test  # a name with a dot


def _files(folder: Path) -> dict[str, tuple[int, int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.stat().st_size)
            for p in folder.iterdir() if not p.name.startswith(".")}


def test_decoding_is_what_the_trainer_always_did_and_the_test_split_follows_the_train_channels(mixed):
    folder, train, test = mixed
    data = load_federated(str(folder), image_size=12)
    assert isinstance(data.x_train, np.memmap) and not data.x_train.flags.writeable
    assert np.array_equal(np.asarray(data.x_train), old_decode(train, 12))
    gray_test = old_decode(test, 12)  # all grayscale: decoded as one channel, then repeated for an RGB train split
    assert data.x_test.shape == (4, 3, 12, 12)
    assert np.array_equal(np.asarray(data.x_test), np.repeat(gray_test, 3, axis=1))
    mean, std = channel_stats(np.asarray(data.x_train), 2048)  # the statistics as they were computed before
    assert data.mean.tolist() == mean.tolist() and data.std.tolist() == std.tolist()
    assert data.num_train == 42 and data.num_test == 4 and data.in_channels == 3 and data.image_size == 12


def test_an_rgb_test_split_is_averaged_to_one_channel_for_a_grayscale_train_split(tmp_path):
    rng = np.random.default_rng(2)
    train = [_image(rng, "L", 8, 8) for _ in range(6)]
    test = [_image(rng, "RGB", 8, 8) for _ in range(3)]
    data = load_federated(str(write_split(tmp_path / "s", train, test)))
    want = old_decode(test, 8).mean(axis=1, keepdims=True).astype(np.uint8)
    assert data.x_train.shape[1] == 1 and np.array_equal(np.asarray(data.x_test), want)


def test_a_second_load_reuses_the_cache_without_decoding(mixed, where, monkeypatch):
    folder, _, _ = mixed
    first = load_federated(str(folder), image_size=12)
    before = _files(where)
    assert sorted(n.rsplit(".", 1)[1] for n in before) == ["json", "json", "npy", "npy"]

    def no_decoding(*args, **kwargs):
        raise AssertionError("decoded again")

    monkeypatch.setattr(decode, "decode_image", no_decoding)
    monkeypatch.setattr(decode, "scan_task", no_decoding)
    monkeypatch.setattr(cache, "scan_task", no_decoding)
    again = load_federated(str(folder), image_size=12)
    assert _files(where) == before  # same files: same inode, same modification time
    assert np.array_equal(np.asarray(again.x_train), np.asarray(first.x_train))
    assert again.mean.tolist() == first.mean.tolist() and again.std.tolist() == first.std.tolist()
    with pytest.raises(AssertionError, match="decoded again"):  # another image size is another cache
        load_federated(str(folder), image_size=10)


def test_the_cached_bytes_do_not_depend_on_the_number_of_decode_processes(mixed, tmp_path):
    import datasets

    folder, _, _ = mixed
    ds = datasets.load_dataset(str(folder))["train"]
    source = image_source(ds, "image")
    assert source.files and source.table is None  # workers read the Arrow files themselves
    rows = np.flatnonzero(np.arange(len(ds)) % 5 != 0)  # some rows left out, as rows without a client are
    got = {}
    for label, decoder in (("in-process", Decoder(1)), ("1 process", Decoder(1, in_process_rows=0)),
                           ("2 processes", Decoder(2, in_process_rows=0))):
        with decoder:
            x, meta = decoded_images(source, tmp_path / label, "mixed", "train", {"t": 1}, rows, 12, None, decoder,
                                     stats=True, rows_per_block=4)
        npy = next((tmp_path / label).glob("*.npy")).read_bytes()
        got[label] = (npy, meta)
    assert got["1 process"] == got["in-process"] == got["2 processes"]
    assert len(got["2 processes"][1]["block_crc32"]) == -(-rows.size // 4)  # several blocks were dealt out


def test_a_corrupt_truncated_pickled_or_mismatched_cache_is_rebuilt_with_one_warning(mixed, tmp_path):
    folder, train, _ = mixed
    want = old_decode(train, 12)
    where = tmp_path / "cache"
    load_federated(str(folder), image_size=12, cache_dir=where)
    npy = next(p for p in where.glob("*-train-*.npy"))
    meta_path = npy.with_suffix(".json")
    good_meta = meta_path.read_text()

    def damage_byte(p):
        raw = bytearray(p.read_bytes())
        raw[-7] ^= 0xFF
        p.write_bytes(bytes(raw))

    def pickled():
        np.save(npy, np.array([{"images": 0}], dtype=object), allow_pickle=True)

    damages = {
        "zeroed images with their CRC-32s recomputed": lambda: forge_zeros(npy),
        "a flipped byte": lambda: damage_byte(npy),
        "a truncated array": lambda: npy.write_bytes(npy.read_bytes()[:-100]),
        "an empty array file": lambda: npy.write_bytes(b""),
        "a pickled array": pickled,
        "a missing array": lambda: npy.unlink(),
        "a meta that is not JSON": lambda: meta_path.write_text("{not json"),
        "a meta that is not UTF-8": lambda: meta_path.write_bytes(b"\xff\xfe{"),
        "a meta of another shape": lambda: meta_path.write_text(good_meta.replace('"shape": [42,', '"shape": [41,')),
        "a meta of another identity": lambda: meta_path.write_text(good_meta.replace('"part": "train"',
                                                                                    '"part": "test"')),
        "an edited mean": lambda: meta_path.write_text(good_meta.replace('"mean": [', '"mean": [0.0, ')),
    }
    for what, damage in damages.items():
        damage()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data = load_federated(str(folder), image_size=12, cache_dir=where)
        assert np.array_equal(np.asarray(data.x_train), want), what
        assert json.loads(meta_path.read_text()) == json.loads(good_meta), what
        assert [w.category.__name__ for w in caught] == ["CacheWarning"], what  # one warning, and only one
        message = str(caught[0].message)
        assert "\n" not in message and "cannot be trusted" in message and "decoding the images again" in message
    assert not [p for p in where.iterdir() if p.name.startswith(".")]  # no temporary folder left behind
    meta_path.unlink()  # an entry without its meta, as a run killed between the two renames leaves it:
    with warnings.catch_warnings(record=True) as caught:  # not damaged, only unfinished: no warning
        warnings.simplefilter("always")
        data = load_federated(str(folder), image_size=12, cache_dir=where)
    assert not caught and np.array_equal(np.asarray(data.x_train), want)


def test_a_cache_inside_the_split_folder_is_never_read_or_written(mixed, where, tmp_path):
    folder, train, test = mixed
    load_federated(str(folder), image_size=12, cache_dir=tmp_path / "made")
    planted = folder / cache.CACHE_FOLDER  # a downloaded folder bringing zeroed images, checksums and all
    shutil.copytree(tmp_path / "made", planted)
    for npy in planted.glob("*.npy"):
        forge_zeros(npy, resign=True)
    before = tree(folder)
    data = load_federated(str(folder), image_size=12)
    assert np.array_equal(np.asarray(data.x_train), old_decode(train, 12))
    assert np.asarray(data.x_test).any()
    assert tree(folder) == before  # nothing written into the split folder
    assert len(list(where.glob("*.npy"))) == 2
    with pytest.raises(HetbenchError, match="lies inside the split folder") as info:
        load_federated(str(folder), image_size=12, cache_dir=planted)
    assert "\n" not in str(info.value)


def _partition(out: Path, seed: int = 0) -> Path:
    from hetbench.cli.main import main

    try:
        main(["partition", "iid", "--clients", "3", "--seed", str(seed), "--out", str(out), "-q"])
    except SystemExit as exc:
        assert not exc.code
    return out


def test_an_edited_split_does_not_reuse_the_cache(tmp_path, monkeypatch):
    import datasets
    import pyarrow.parquet as pq

    split = _partition(tmp_path / "digits")
    first = np.array(load_federated(str(split)).x_train)
    manifest = json.loads((split / "hetbench.json").read_text())
    (shard,) = manifest["splits"]["train"]["files"]
    table = pq.read_table(split / shard)
    images = table.column("image").to_pylist()
    table = table.set_column(table.schema.get_field_index("image"), "image",
                             pa_array(images[1:] + images[:1], table.schema.field("image").type))
    pq.write_table(table, split / shard)  # other images in the shard, the manifest as it was
    # datasets keys its own cache by the card's file patterns: a fresh one (another machine, a cleared
    # cache) reads the new images, and so must the trainer
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-fresh"))
    edited = np.array(load_federated(str(split)).x_train)
    fresh = np.array(load_federated(str(split), cache_dir=tmp_path / "fresh").x_train)
    assert np.array_equal(edited, fresh) and not np.array_equal(edited, first)
    assert np.array_equal(edited, np.concatenate([first[1:], first[:1]]))  # rows kept in the shard's order
    manifest["splits"]["train"]["file_sha256"][shard] = hashlib.sha256((split / shard).read_bytes()).hexdigest()
    manifest["splits"]["train"]["content_sha256"] = "0" * 64  # the manifest re-hashed
    (split / "hetbench.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(cache, "scan_task", _counting(cache.scan_task, calls := []))
    assert np.array_equal(np.asarray(load_federated(str(split)).x_train), fresh)
    assert calls  # another manifest: decoded again, not taken from the entry made under the old one


def _counting(fn, calls: list):
    def wrapper(*args, **kwargs):
        calls.append(1)
        return fn(*args, **kwargs)

    return wrapper


def pa_array(values: list, kind):
    import pyarrow as pa

    return pa.array(values, type=kind)


def test_new_images_at_the_same_path_are_decoded_again(tmp_path):
    rng = np.random.default_rng(3)
    first = [_image(rng, "L", 8, 8) for _ in range(4)]
    folder = write_split(tmp_path / "s", first, first[:2])
    assert np.array_equal(np.asarray(load_federated(str(folder)).x_train), old_decode(first, 8))
    second = [_image(rng, "L", 8, 8) for _ in range(4)]
    write_split(folder, second, second[:2])
    assert np.array_equal(np.asarray(load_federated(str(folder)).x_train), old_decode(second, 8))


def test_two_loads_building_the_same_cache_at_once_both_succeed(mixed, where):
    folder, train, _ = mixed
    results, errors = [], []

    def load():
        try:
            results.append(np.asarray(load_federated(str(folder), image_size=12).x_train).copy())
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=load) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 2
    assert all(np.array_equal(r, old_decode(train, 12)) for r in results)
    assert len(list(where.glob("*.npy"))) == 2 and not [p for p in where.iterdir() if p.name.startswith(".")]


def test_where_the_cache_goes(tmp_path, monkeypatch, where):
    split = tmp_path / "split"
    split.mkdir()
    assert cache_folder(str(split)) == where  # $XDG_CACHE_HOME/hetbench/train, for a folder as for a hub id
    assert cache_folder("someone/on-the-hub") == where
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/xdg")  # not absolute: ignored, as the XDG spec says
    assert cache_folder(str(split)) == Path("~/.cache/hetbench/train").expanduser()
    monkeypatch.setenv("HETBENCH_CACHE", str(tmp_path / "env"))
    assert cache_folder(str(split)) == tmp_path / "env"
    assert cache_folder(str(split), tmp_path / "given") == tmp_path / "given"
    for inside in (split, split / "sub"):
        with pytest.raises(HetbenchError, match="cache_dir .* lies inside the split folder"):
            cache_folder(str(split), inside)
    monkeypatch.setenv("HETBENCH_CACHE", str(split / ".hetbench-cache"))
    with pytest.raises(HetbenchError, match="HETBENCH_CACHE .* lies inside the split folder"):
        cache_folder(str(split))


def test_loading_leaves_the_split_folder_untouched(mixed, tmp_path, where):
    folder, _, _ = mixed
    before = tree(folder)
    load_federated(str(folder), image_size=12)
    assert tree(folder) == before and len(list(where.glob("*.npy"))) == 2
    load_federated(str(folder), image_size=12, cache_dir=tmp_path / "elsewhere")
    assert tree(folder) == before
    assert sorted(p.name.split("-")[3] for p in (tmp_path / "elsewhere").glob("mixed-a0.5-n2-*.npy")) == [
        "test", "train"]


def test_a_cache_folder_that_cannot_be_written_is_one_line_naming_cache_dir(mixed, tmp_path):
    folder, _, _ = mixed
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(HetbenchError, match="cannot write the decoded-image cache in .*; pass cache_dir") as info:
        load_federated(str(folder), image_size=12, cache_dir=blocker / "cache")
    assert "\n" not in str(info.value)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can write a read-only folder")
def test_a_read_only_split_folder_loads(mixed):  # pragma: no cover - not as root
    folder, train, _ = mixed
    folder.chmod(0o555)
    try:
        assert np.array_equal(np.asarray(load_federated(str(folder), image_size=12).x_train), old_decode(train, 12))
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("case, match", [
    ("mixed sizes", "train images have 2 different sizes; pass image_size"),
    ("not square", "train images are 8x6, not square; pass image_size"),
    ("no image", "train: row 2 has no image"),
    ("not an image", "train: row 1: cannot read the image"),
])
def test_bad_images_are_one_line(case, match, tmp_path, where):
    rng = np.random.default_rng(4)
    train = [_image(rng, "L", 8, 8) for _ in range(4)]
    if case == "mixed sizes":
        train[3] = _image(rng, "L", 9, 9)
    elif case == "not square":
        train = [_image(rng, "L", 8, 6) for _ in range(4)]
    elif case == "no image":
        train[2] = None
    folder = write_split(tmp_path / "bad", train, train[:2])
    if case == "not an image":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = folder / "data" / "train-00000-of-00001.parquet"
        table = pq.read_table(path)
        cells = table.column("image").to_pylist()
        cells[1] = {"bytes": b"not a picture", "path": None}
        table = table.set_column(0, "image", pa.array(cells, type=table.schema.field("image").type))
        pq.write_table(table, path)
    with pytest.raises(HetbenchError, match=match) as info:
        load_federated(str(folder))
    assert "\n" not in str(info.value)
    assert not list(where.glob("*.npy")) and not (folder / cache.CACHE_FOLDER).exists()  # nothing half-written


def test_batches_and_test_chunks_come_from_the_memory_map(mixed):
    folder, _, _ = mixed
    data = load_federated(str(folder), image_size=12)
    rows = np.array([40, 3, 17, 3])
    assert np.array_equal(gather_rows(data.x_train, rows).numpy(), np.asarray(data.x_train)[rows])
    assert np.array_equal(read_rows(data.x_test, 1, 3).numpy(), np.asarray(data.x_test)[1:3])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RssFile from /proc (Linux)")
def test_release_pages_gives_the_pages_read_back(tmp_path):
    def rss_file_kib() -> int:
        line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("RssFile"))
        return int(line.split()[1])

    path = tmp_path / "big.npy"
    np.save(path, np.ones((64, 1024, 1024), dtype=np.uint8))  # 64 MiB
    x = np.load(path, mmap_mode="r")
    before = rss_file_kib()
    assert int(x.sum(dtype=np.int64)) == 64 * 2**20  # every page read
    assert rss_file_kib() - before > 48 * 1024
    cache.release_pages(x[10:20])  # a view releases its whole mapping
    assert rss_file_kib() - before < 16 * 1024
    assert int(x[63].sum(dtype=np.int64)) == 2**20  # still readable


def test_a_data_set_held_in_memory_is_decoded_in_this_process(monkeypatch, tmp_path):
    import datasets

    rng = np.random.default_rng(6)
    images = [_image(rng, "RGB", 10, 10) for _ in range(9)]
    ds = datasets.Dataset.from_dict({"image": images}, features=datasets.Features({"image": datasets.Image()}))
    source = image_source(ds, "image")
    assert source.table is not None and not source.files  # no Arrow files to hand to workers

    def no_pool(*args, **kwargs):
        raise AssertionError("a pool was started")

    monkeypatch.setattr(decode, "ProcessPoolExecutor", no_pool)
    with Decoder(2, in_process_rows=0) as decoder:
        x, _ = decoded_images(source, tmp_path, "memory", "train", {}, np.arange(9), 8, None, decoder)
    assert np.array_equal(np.asarray(x), old_decode(images, 8))
