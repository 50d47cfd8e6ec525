"""The stored sRGB tables are exactly what colour-science's transfer functions compute, and an ISP worker
renders every Table 3 variant without importing colour-science (its import is most of a pool's start-up)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from hetbench.isp import srgb_tables


def test_the_stored_tables_are_the_transfer_functions_bit_for_bit():
    assert np.array_equal(srgb_tables.encode_lut(), srgb_tables.compute_encode_lut())
    stored, computed = srgb_tables.decode_table(), srgb_tables.compute_decode_table()
    assert stored.dtype == computed.dtype and stored.tobytes() == computed.tobytes()


def test_a_worker_renders_every_variant_without_importing_colour():
    code = """
import sys, numpy as np
from hetbench.isp.jobs import CaptureJob, PhotoSource, Render, WORKER_PRELOAD, run_job
from hetbench.isp.pipeline import parse_stage_list, table3_variants
from hetbench.sources.photographs import embedded_photographs, scene_crops
for name in WORKER_PRELOAD:
    __import__(name)
scene, img = embedded_photographs()[0]
renders = tuple(Render(p.short_name, str(p)) for p in table3_variants(parse_stage_list("all")))
crop = scene_crops(img, 1, 96, np.random.default_rng(0))[0]
result = run_job(CaptureJob(0, "x", scene, PhotoSource(scene, crop), renders, 32, 0, base_profile="GalaxyS9"))
assert len(result.images) == len(renders), result
print(sorted(m for m in sys.modules if m == "colour" or m.startswith("colour.")))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
