"""The stored sRGB tables are what colour-science's transfer functions compute, and an ISP worker
renders every Table 3 variant without importing colour-science (its import is most of a pool's start-up)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from hetbench.isp import srgb_tables


#: numpy's float64 pow/exp/log loops take another SIMD path on each CPU (AVX-512 with SVML, AVX2, the
#: baseline), each accurate to at most 4 ULP (numpy's release notes for its SVML-based loops); the
#: colour-science formulas chain a few of them, so a stored value may be that many ULP from a value
#: computed on another machine, and no more
ULP_BOUND = 8


def test_the_stored_decode_table_is_the_transfer_function_within_a_few_ulp():
    stored, computed = srgb_tables.decode_table(), srgb_tables.compute_decode_table()
    assert stored.dtype == computed.dtype == np.float64 and stored.shape == (256,)
    np.testing.assert_array_max_ulp(stored, computed, maxulp=ULP_BOUND)


def test_the_stored_encode_lut_is_the_rounded_transfer_function_away_from_ties():
    """Each entry is round(255 f(i / 65535)); only where the computed 255 f lies within the ULP bound
    of a rounding tie may a machine's own computation round the other way."""
    from hetbench.isp.transfer import srgb_encode

    stored = srgb_tables.encode_lut()
    level = 255.0 * srgb_encode(np.arange(65536, dtype=np.float64) / 65535.0)
    near_tie = np.abs(level - np.floor(level) - 0.5) <= ULP_BOUND * np.spacing(np.maximum(level, 1.0))
    assert np.array_equal(stored[~near_tie], np.rint(level[~near_tie]).astype(np.uint8))
    assert np.all((stored[near_tie] == np.floor(level[near_tie])) | (stored[near_tie] == np.ceil(level[near_tie])))


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
