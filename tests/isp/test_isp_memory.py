"""Keeping freed memory in a render worker (hetbench.isp.memory) changes where buffers come from, never a byte."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

_RENDER = """
import hashlib, sys
import numpy as np
import cv2
from hetbench.isp.memory import keep_freed_memory
from hetbench.isp.pipeline import Pipeline, Renderer, parse_stage_list, table3_variants
from hetbench.isp.profiles import load_profiles
from hetbench.isp.unprocess import unprocess
from hetbench.sources.photographs import embedded_photographs

if sys.argv[1] == "kept":
    assert keep_freed_memory()
photo = cv2.resize(dict(embedded_photographs())["astronaut"], (1200, 800), interpolation=cv2.INTER_CUBIC)
capture = unprocess(photo, load_profiles()[1], np.random.default_rng(0), "memory-test")
digest = hashlib.sha256()
for _ in range(2):  # the second render reuses what the first freed
    for r in Renderer(size=None).render_all(capture, table3_variants(parse_stage_list("wb,tone"))):
        digest.update(r.image.tobytes())
print(digest.hexdigest())
"""


def test_a_worker_that_keeps_freed_memory_renders_the_same_bytes():
    out = {mode: _run(_RENDER, mode) for mode in ("default", "kept")}
    assert out["kept"] == out["default"] and len(out["kept"]) == 64


_FAULTS = """
import resource, sys
import numpy as np
from hetbench.isp.memory import keep_freed_memory

if sys.argv[1] == "kept" and not keep_freed_memory():
    print("not glibc")
    sys.exit(0)
np.ones((3000, 4000, 3), np.float32).sum()  # the first 144 MB buffer
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    np.ones((3000, 4000, 3), np.float32).sum()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_freed_image_buffers_are_reused_without_page_faults():
    faults = {mode: _run(_FAULTS, mode) for mode in ("default", "kept")}
    if faults["kept"] == "not glibc":
        pytest.skip("the C library is not glibc: keep_freed_memory changes nothing")
    # 144 MB faulted in afresh is thousands of pages each time (4 kB pages, or 2 MB ones where transparent huge
    # pages are on); reused, next to none
    assert int(faults["kept"]) < 100 < int(faults["default"]), faults


def _run(script: str, mode: str) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.strip()
