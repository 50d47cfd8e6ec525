"""Streaming device builds (issue 27, item 3): each capture's images go to disk as it is rendered, never the
whole split in memory, and what is published is the same bytes as before, whatever ``--num-proc``.

The embedded builds are compared with the fingerprints the code recorded before streaming
(``tests/data/output_fingerprints.json``, :mod:`output_fingerprints`); real-device corpora are written by
the test (nothing is downloaded)."""

from __future__ import annotations

import json
import os
import tracemalloc

import numpy as np
import pytest

from output_fingerprints import BUILDS, RECORD, compare, digest_folder, versions


def _build(run_cli, where, name, num_proc):
    """``BUILDS[name]`` into ``where/name`` (the recorded output folder's name: the card holds it)."""
    where.mkdir(parents=True, exist_ok=True)
    cwd = os.getcwd()
    os.chdir(where)
    try:
        code, _, err = run_cli(*BUILDS[name], "--num-proc", num_proc, "--out", name, "--quiet")
    finally:
        os.chdir(cwd)
    assert code == 0, err
    assert not list(where.glob(".hetbench-rows-*"))  # the rendered rows went beside the output, and are gone
    return digest_folder(where / name)


@pytest.mark.parametrize("name", ["build-devices", "build-iso-isp"])
def test_one_and_two_processes_publish_the_bytes_recorded_before_streaming(name, tmp_path, run_cli):
    one = _build(run_cli, tmp_path / "np1", name, 1)
    two = _build(run_cli, tmp_path / "np2", name, 2)
    assert one == two  # every file, byte for byte
    recorded = json.loads(RECORD.read_text())
    same = {lib: versions()[lib] == recorded["versions"][lib] for lib in ("pyarrow", "matplotlib")}
    assert compare(recorded, {name: one}, same) == []


def _jpeg(path, rng, size=(18, 22)):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (*size, 3), dtype=np.uint8)).save(path, format="JPEG", quality=90)


def _phones(root):
    """Three phones x two classes x six displayed images, one of them not an image."""
    rng = np.random.default_rng(7)
    for phone in ("galaxys6", "nexus5x", "pixel2"):
        for cls in ("Timber_Wolf", "n02085620"):
            for i in range(6):
                _jpeg(root / phone / cls / f"img{i}.jpg", rng)
    (root / "pixel2" / "Timber_Wolf" / "img1.jpg").write_bytes(b"not a jpeg")
    return root


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("size", [None, "16"])
def test_real_devices_stream_the_same_bytes_with_one_or_two_processes(size, tmp_path, run_cli):
    root = _phones(tmp_path / "hs")
    outs = []
    for num_proc in (1, 2):
        out = tmp_path / f"out{num_proc}"
        code, _, err = run_cli("build", "real-devices", "--recipe", "heteroswitch-phones", "--data-dir", root,
                               "--clients", "10", "--test-fraction", "0.34", "--num-proc", num_proc, "--out", out, "-q",
                               *(["--size", size] if size else []))
        assert code == 0, err
        outs.append(_files(out))
    assert outs[0] == outs[1]
    report = json.loads(outs[0]["report.json"])
    # the unreadable image is skipped, counted and listed, its reason free of a memory address
    assert report["num_skipped"] == 1 and report["skipped"][0]["file"] == "pixel2/Timber_Wolf/img1.jpg"
    assert report["skipped"][0]["reason"].startswith("unreadable image") and "0x" not in report["skipped"][0]["reason"]


def _rows(rng, n_captures, devices):
    from hetbench.builders.device_split import empty_rows

    rows, images = empty_rows(), []
    for c in range(n_captures):
        split = rows["test" if c % 4 == 0 else "train"]
        for d in devices:
            images.append(rng.bytes(int(rng.integers(1, 4000))))
            for column, value in zip(("label", "device", "isp", "capture_id", "sample_id"),
                                     (c % 3, d, f"isp-{d}", f"cap{c}", f"cap{c}@{d}")):
                split[column].append(value)
            split["image"].append(len(images) - 1)
    return rows, images


def test_a_spilled_table_is_the_in_memory_table_buffer_for_buffer(tmp_path, monkeypatch):
    """What the shards are written from is the table ``datasets.Dataset.from_dict`` made from the images in
    memory: same schema, values, chunks and buffer sizes (the shard layout follows its byte size)."""
    import tempfile

    from hetbench.builders.device_split import device_table, spilled_table
    from hetbench.builders.row_spill import SPILL_PREFIX, RowSpill

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rows, images = _rows(np.random.default_rng(0), 40, ["a", "b", "c"])
    spill = RowSpill()
    assert [spill.add(b) for b in images] == list(range(len(images)))
    streamed = spilled_table(spill, rows, ["x", "y", "z"], {}, "d", "other")
    in_memory = {s: {c: ([images[i] for i in v] if c == "image" else v) for c, v in rows[s].items()} for s in rows}
    held = device_table(in_memory, ["x", "y", "z"], {}, "d", "other")
    for split in ("train", "test"):
        a, b = streamed.splits[split].data.table, held.splits[split].data.table
        assert a.equals(b) and a.schema.equals(b.schema, check_metadata=True)
        assert a.nbytes == b.nbytes
        for col_a, col_b in zip(a.columns, b.columns):
            assert col_a.num_chunks == col_b.num_chunks == 1
            assert [x and x.size for x in col_a.chunk(0).buffers()] == [x and x.size for x in col_b.chunk(0).buffers()]
        assert (streamed.labels[split] == held.labels[split]).all()
    assert not list(tmp_path.glob(SPILL_PREFIX + "*"))  # the folder is gone, the images stay mapped
    assert streamed.splits["train"].with_format("arrow")["image"][0].as_py()["bytes"] == images[rows["train"]["image"][0]]


def test_rendering_keeps_one_capture_in_memory_not_the_split(tmp_path, monkeypatch):
    """``rendered_table`` takes a stream of results and spills each capture as it comes: the Python memory
    it holds at its peak is a small part of the images it publishes."""
    import tempfile

    from hetbench.builders.device_split import rendered_table
    from hetbench.isp.jobs import CaptureJob, JobResult, PhotoSource

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    devices, per_image, captures = ["d0", "d1", "d2"], 200_000, 60
    jobs = [CaptureJob(i, f"c{i:02d}", f"scene{i % 3}", PhotoSource(f"c{i:02d}", np.zeros(1)), (), 32, 0)
            for i in range(captures)]
    rng = np.random.default_rng(1)

    def results():
        for j in jobs:
            if j.index == 5:
                yield JobResult(j.index, j.capture_id, j.label, [], [], skipped="unreadable")
                continue
            yield JobResult(j.index, j.capture_id, j.label, [rng.bytes(per_image) for _ in devices],
                            [{"mean": 0.0} for _ in devices])

    tracemalloc.start()
    try:
        rendered = rendered_table(jobs, results(), devices, {d: d for d in devices}, 0.2, 0, {}, "", "other")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    published = (captures - 1) * len(devices) * per_image  # 35 MB
    assert peak < published / 5, f"peak {peak / 1e6:.1f} MB of Python memory for {published / 1e6:.1f} MB of images"
    assert rendered.skipped == [{"file": "c05", "reason": "unreadable"}]
    assert rendered.captures == {"used": captures - 1, "train": 47, "test": 12}
    table = rendered.table
    assert table.num_rows("train") + table.num_rows("test") == (captures - 1) * len(devices)
    assert len(rendered.sheet) == len(devices) and len(rendered.stats) == (captures - 1) * len(devices)


def test_a_failed_build_leaves_no_spill_behind(tmp_path, monkeypatch):
    import tempfile

    from hetbench.builders.device_split import rendered_table
    from hetbench.builders.row_spill import SPILL_PREFIX
    from hetbench.errors import HetbenchError
    from hetbench.isp.jobs import CaptureJob, JobResult, PhotoSource

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    jobs = [CaptureJob(i, f"c{i}", "x", PhotoSource(f"c{i}", np.zeros(1)), (), 32, 0) for i in range(3)]
    results = (JobResult(j.index, j.capture_id, j.label, [], [], skipped="bad RAW") for j in jobs)
    with pytest.raises(HetbenchError, match="no capture could be rendered"):
        rendered_table(jobs, results, ["d"], {"d": "d"}, 0.2, 0, {}, "", "other")
    assert not list(tmp_path.glob(SPILL_PREFIX + "*"))


def test_num_proc_defaults_to_the_available_cores(run_cli, monkeypatch):
    import hetbench.cores
    from hetbench.builders.captures import capture_jobs, resolve_num_proc, run_jobs
    from hetbench.isp.jobs import Render

    assert resolve_num_proc(None) == hetbench.cores.available_cores() and resolve_num_proc(3) == 3
    for family in ("devices", "iso-isp", "real-devices"):
        code, out, _ = run_cli("build", family, "--help")
        assert code == 0 and "CPU cores this process may use" in " ".join(out.split()), family
    opened = []
    import hetbench.engines as engines

    real_open = engines.open_engine

    def spy(spec, num_proc, num_jobs, **kwargs):
        opened.append(num_proc)
        return real_open(spec, num_proc, num_jobs, **kwargs)

    monkeypatch.setattr(engines, "open_engine", spy)
    monkeypatch.setattr(hetbench.cores, "available_cores", lambda: 1)
    jobs = capture_jobs(None, None, [Render("baseline", "compress=none")], 16, 0, 1, 32)[:2]
    stream = run_jobs(jobs, quiet=True, stream=True)
    assert not opened  # a stream starts its engine on the first result asked for
    assert [r.capture_id for r in stream] == ["astronaut-00", "coffee-00"] and opened == [1]


def test_a_bad_num_proc_is_one_line_before_anything_renders(tmp_path, run_cli):
    out = tmp_path / "out"
    code, _, err = run_cli("build", "devices", "--num-proc", "0", "--size", "32", "--crops-per-photo", "1",
                           "--crop-size", "96", "--clients", "9", "--out", out)
    assert code == 2 and err.strip().splitlines() == ["hetbench: error: --num-proc must be at least 1 (got 0)"]
    assert not out.exists()


def test_a_full_disk_while_spilling_names_the_file_and_leaves_nothing(tmp_path):
    import errno

    from hetbench.builders.row_spill import RowSpill

    class Full:
        closed = False

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            self.closed = True
            raise OSError(errno.ENOSPC, "No space left on device")

    spill = RowSpill(tmp_path)
    spill._file.close()
    spill._file = Full()
    with pytest.raises(OSError) as info:
        spill.add(b"png")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(spill.folder / "images.bin")
    spill.close()  # the full disk's second error is not raised over the first
    assert list(tmp_path.iterdir()) == []
