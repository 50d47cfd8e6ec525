"""The engine layer without a cluster: option checks, the local engine's order, RAW bytes as input."""

from __future__ import annotations

import pytest
from test_ray_builds import write_raws

from hetbench.engines import EngineSpec, engine_spec, ordered_map
from hetbench.errors import HetbenchError


def test_local_engine_keeps_job_order_on_two_workers():
    items = list(range(40, 0, -1))
    assert ordered_map(str, items, None, 2) == [str(i) for i in items]


@pytest.mark.parametrize("args, needle", [
    (("dask",), "unknown engine"),
    (("ray", None, "s3"), "unknown ray_inputs"),
    (("local", "auto"), "need engine ray"),
    (("ray", "  "), "must not be empty"),
])
def test_bad_engine_options(args, needle):
    with pytest.raises(HetbenchError, match=needle):
        engine_spec(*args)


def test_engine_spec_is_not_in_params():
    assert engine_spec("ray", "auto", "object") == EngineSpec("ray", "auto", "object")


def test_a_raw_job_given_its_bytes_renders_as_the_file_does(tmp_path):
    from hetbench.builders.captures import capture_jobs
    from hetbench.isp.jobs import Render, job_files, job_with_files, run_job

    raws = write_raws(tmp_path / "raws", n=1)
    job = capture_jobs(str(raws), None, [Render("baseline", "compress=none")], 32, 0, 1, 64)[0]
    (path,) = job_files(job)
    data = open(path, "rb").read()
    moved = job_with_files(job, [data])
    (raws / "cap0.dng").rename(tmp_path / "elsewhere.dng")  # the worker must not need the path
    from_bytes = run_job(moved)
    (tmp_path / "elsewhere.dng").rename(raws / "cap0.dng")
    from_file = run_job(job)
    assert from_bytes.skipped is None and from_bytes.images == from_file.images and from_bytes.stats == from_file.stats
    assert job_files(moved) == ()
