"""The decoded-image cache's sha256 is taken block by block (issue 27): by the decode processes as they write
their blocks, and on every core when a cached file is checked; both give the same digest, whatever the
number of processes or threads."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from hetbench.train.array_digest import array_sha256, file_sha256


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_a_file_hashed_on_any_number_of_threads_gives_the_blocks_digest(tmp_path, threads):
    rng = np.random.default_rng(0)
    header, body = b"\x93NUMPY-header", rng.bytes(10_007)
    path = tmp_path / "x.npy"
    path.write_bytes(header + body)
    blocks = [hashlib.sha256(body[a : a + 1000]).digest() for a in range(0, len(body), 1000)]
    assert file_sha256(path, len(header), 1000, threads=threads) == array_sha256(header, blocks)
    path.write_bytes(header + body[:-1] + bytes([body[-1] ^ 1]))  # one bit of the last block
    assert file_sha256(path, len(header), 1000, threads=threads) != array_sha256(header, blocks)


def test_the_decoders_digest_is_the_files_and_does_not_depend_on_the_processes(tmp_path):
    import datasets
    from PIL import Image

    from hetbench.train.cache import Decoder, decoded_images, image_source

    rng = np.random.default_rng(1)
    images = [Image.fromarray(rng.integers(0, 255, (9, 9, 3), dtype=np.uint8)) for _ in range(23)]
    ds = datasets.Dataset.from_dict({"image": images}, features=datasets.Features({"image": datasets.Image()}))
    path = tmp_path / "arrow"
    ds.save_to_disk(str(path))
    source = image_source(datasets.load_from_disk(str(path)), "image")
    assert source.files  # the workers read the Arrow files themselves
    metas = []
    for label, decoder in (("in-process", Decoder(1)), ("2 processes", Decoder(2, in_process_rows=0))):
        with decoder:
            _, meta = decoded_images(source, tmp_path / label, "d", "train", {"t": 1}, np.arange(23), 8, None, decoder,
                                     rows_per_block=4)
        npy = next((tmp_path / label).glob("*.npy"))
        header_len = npy.stat().st_size - 23 * 3 * 8 * 8
        assert meta["sha256"] == file_sha256(npy, header_len, 4 * 3 * 8 * 8)
        metas.append(meta)
    assert metas[0]["sha256"] == metas[1]["sha256"]
