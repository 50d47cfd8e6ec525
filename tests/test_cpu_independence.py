"""Splits, shards and manifests are byte-identical on every CPU; float training may drift, and verify
never calls that drift tampering (docs/output-contract.md, "What verify promises").

Another CPU is imitated by forcing the CPU-specific kernels of numpy, OpenBLAS, OpenCV, MKL and ATen
to other instruction sets (``OTHER_CPUS`` in tests/output_fingerprints.py: an AVX2 machine and the SSE
baseline): before this, OpenBLAS's
AVX-512 and AVX2 matrix kernels gave other synthetic-colour images, OpenCV's FMA path other ISP
renders, and ATen's kernels other task embeddings, hence other splits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetbench.exact_kmeans import GridPCA, assign, exact_kmeans, grid_bound, grid_scale, to_grid
from output_fingerprints import OTHER_CPU_VARIABLES, OTHER_CPUS, RECORD, TOOK_EFFECT, compare, versions

TESTS = Path(__file__).parent


def _hetbench(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from hetbench.cli.main import main; main()", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in OTHER_CPU_VARIABLES}
    env.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", MPLBACKEND="Agg", **extra)
    return env


def _cpu_features(text: str) -> set[str]:
    return {f.strip("*?") for f in text.split() if f.startswith("*") and not f.endswith("?")}


@pytest.mark.parametrize("cpu", sorted(OTHER_CPUS))
def test_each_imitated_cpu_takes_effect_in_every_library(cpu):
    """Every variable is spelled as its library spells it: a misspelt one is ignored and the imitation
    would test this CPU again (OpenCV ignores an unknown name with a warning)."""
    done = subprocess.run([sys.executable, "-c", TOOK_EFFECT], env=_env(**OTHER_CPUS[cpu]), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "unknown CPU feature" not in done.stderr, done.stderr
    seen = json.loads(done.stdout)
    native = json.loads(subprocess.run([sys.executable, "-c", TOOK_EFFECT], env=_env(), capture_output=True,
                                       text=True, timeout=120, check=True).stdout)
    asked = OTHER_CPUS[cpu]
    assert set(asked["NPY_DISABLE_CPU_FEATURES"].split()) & {"X86_V4"} <= set(seen["numpy_disabled"])
    if cpu == "baseline":
        assert "X86_V3" in seen["numpy_disabled"]
    disabled = {f.strip() for f in asked["OPENCV_CPU_DISABLE"].split(",")}
    assert not (_cpu_features(seen["opencv"]) & disabled), seen["opencv"]
    assert _cpu_features(seen["opencv"]) <= _cpu_features(native["opencv"])
    if native["openblas"]:
        assert seen["openblas"] == [asked["OPENBLAS_CORETYPE"]], seen["openblas"]
    expected_aten = {"avx2": "AVX2", "default": "DEFAULT"}[asked["ATEN_CPU_CAPABILITY"]]
    assert seen["aten"] == expected_aten or native["aten"] == "DEFAULT", seen["aten"]


@pytest.mark.slow
@pytest.mark.parametrize("cpu", sorted(OTHER_CPUS))
def test_every_output_is_the_recorded_one_under_another_cpus_kernels(tmp_path, cpu):
    out = tmp_path / "digests.json"
    done = subprocess.run([sys.executable, str(TESTS / "output_fingerprints.py"), "--digest", str(out)],
                          env=_env(**OTHER_CPUS[cpu]), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    now = json.loads(out.read_text())["outputs"]
    recorded = json.loads(RECORD.read_text())
    same = {lib: versions()[lib] == recorded["versions"][lib] for lib in ("pyarrow", "matplotlib")}
    problems = compare(recorded, now, same)
    assert not problems, f"outputs differ under the {cpu} CPU's kernels:\n" + "\n".join(problems)


RAW_DIR = TESTS.parents[1] / "shared" / "data" / "raw"
RAW_DIGEST = """
import hashlib, json, os, sys
import numpy as np
from hetbench.isp.pipeline import Renderer
from hetbench.isp.raw import UnsupportedRaw, read_raw
out = {}
for name in sorted(os.listdir(sys.argv[1])):
    try:
        cap = read_raw(os.path.join(sys.argv[1], name))
    except UnsupportedRaw:
        continue
    parts = [np.asarray(cap.color_matrix).tobytes(), cap.camera_to_srgb().tobytes()]
    parts += [r.image.tobytes() for r in Renderer(size=96).render_all(cap, ["", "wb=gray-world", "gamut=prophoto"])]
    out[name] = [hashlib.sha256(p).hexdigest() for p in parts]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_real_raws_read_and_render_to_the_same_bits_under_another_cpus_kernels():
    """The colour matrices read_raw derives (LibRaw's rgb_cam inverted, a Kodak's measured by least
    squares), their camera -> sRGB inverse and the renders: the same bits under another CPU's kernels
    (numpy's and LAPACK's 3 x 3 products and inverses gave other last bits before hetbench.isp.matrix3)."""
    if not RAW_DIR.is_dir():
        pytest.skip(f"the shared RAW captures are not present ({RAW_DIR})")
    runs = [subprocess.run([sys.executable, "-c", RAW_DIGEST, str(RAW_DIR)], env=env, capture_output=True, text=True,
                           timeout=600) for env in (_env(), _env(**OTHER_CPUS["baseline"]), _env(**OTHER_CPUS["avx2"]))]
    assert all(r.returncode == 0 for r in runs), "".join(r.stderr[-1500:] for r in runs)
    here, *others = (json.loads(r.stdout) for r in runs)
    for other in others:
        assert len(here) >= 4 and here == other, {k: (here[k], other.get(k)) for k in here if here[k] != other.get(k)}


def _avx2() -> bool:
    try:
        return " avx2 " in f" {Path('/proc/cpuinfo').read_text()} ".replace("\n", " ")
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not _avx2(), reason="needs a CPU with AVX2 for ATen's avx2 kernels")
def test_a_task_embedding_split_built_on_one_cpu_verifies_on_another(tmp_path):
    build = ("partition", "embedding", "--alpha", "0.5", "--clusters", "5", "--embedder", "task:1", "--out", "emb", "-q")
    made = _hetbench(*build, env=_env(ATEN_CPU_CAPABILITY="avx2"), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    other = _env(ATEN_CPU_CAPABILITY="default")
    checked = _hetbench("verify", "emb", env=other, cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.startswith("OK:"), checked.stdout + checked.stderr
    assert "--re-embed measures the drift" in checked.stdout
    drift = _hetbench("verify", "emb", "--re-embed", env=other, cwd=tmp_path)
    assert drift.returncode == 0 and drift.stdout.startswith("OK:"), drift.stdout + drift.stderr
    # ATen's default kernels train to other bits: the drift is measured and reported, not failed
    assert "re-embedding the source with 'task:1' here" in drift.stdout
    again = _hetbench(*build[:-3], "--out", "emb2", "-q", env=other, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    if (tmp_path / "emb" / "embeddings" / "train.npy").read_bytes() != (tmp_path / "emb2" / "embeddings" / "train.npy").read_bytes():
        assert "not a failure" in drift.stdout and "clusters agree on" in drift.stdout


def test_a_tampered_stored_embedding_fails_verify_naming_it(tmp_path, run_cli, monkeypatch):
    import hashlib

    monkeypatch.chdir(tmp_path)
    assert run_cli("partition", "embedding", "--clusters", "4", "--embedder", "pixels:4", "--out", "emb", "-q")[0] == 0
    path = tmp_path / "emb" / "embeddings" / "train.npy"
    x = np.load(path)
    x[:50] = x[-50:]
    np.save(path, x)
    code, out, _ = run_cli("verify", "emb")
    assert code == 1 and "embeddings/train.npy differs from its sha256" in out
    manifest = json.loads((tmp_path / "emb" / "hetbench.json").read_text())  # re-hash it: the recipe check catches it
    manifest["embeddings"]["train"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / "emb" / "hetbench.json").write_text(json.dumps(manifest))
    code, out, _ = run_cli("verify", "emb")
    assert code == 1 and out.startswith("FAILED:"), out


def test_a_folder_naming_a_users_module_runs_no_code_in_verify(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli("partition", "embedding", "--clusters", "4", "--embedder", "pixels:4", "--out", "emb", "-q")[0] == 0
    (tmp_path / "evil.py").write_text("import pathlib\ndef make():\n    pathlib.Path('ran').write_text('x')\n")
    manifest = json.loads((tmp_path / "emb" / "hetbench.json").read_text())
    manifest["recipe"]["partition"]["params"]["embedder"] = "torch:evil:make"
    (tmp_path / "emb" / "hetbench.json").write_text(json.dumps(manifest))
    code, out, err = run_cli("verify", "emb")
    assert not (tmp_path / "ran").exists()  # nothing the folder names was imported or called
    assert code == 1 and "FAILED" in out  # the recipe changed: the split fingerprint no longer matches
    for key in ("embeddings",):  # a format 3 folder (no stored embeddings) naming the module: cannot check
        manifest.pop(key)
    manifest["format"] = 3
    (tmp_path / "emb" / "hetbench.json").write_text(json.dumps(manifest))
    import shutil

    shutil.rmtree(tmp_path / "emb" / "embeddings")
    code, out, err = run_cli("verify", "emb")
    assert code == 2 and "--trust-embedder" in err and not (tmp_path / "ran").exists()


# ---- the integer-exact K-means -----------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 200), st.integers(1, 40), st.integers(1, 6), st.floats(1e-3, 1e6), st.integers(0, 2**31 - 1))
def test_grid_scores_are_exact_integers_whatever_the_summation_order(n, d, k, spread, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * spread
    q = to_grid(x, grid_scale(x))
    assert np.abs(q).max() <= grid_bound(d)
    c = q[rng.integers(n, size=min(k, n))]
    labels, dist = assign(q, c)
    qi, ci = q.astype(np.int64), c.astype(np.int64)  # exact integer arithmetic, no BLAS
    exact = (ci * ci).sum(1)[None, :] - 2 * (qi @ ci.T)
    np.testing.assert_array_equal(labels, np.argmin(exact, axis=1))
    np.testing.assert_array_equal(dist.astype(np.int64), (qi * qi).sum(1) + exact.min(1))


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["lloyd", "minibatch"]))
def test_exact_kmeans_does_not_depend_on_row_blocks_or_threads(seed, method):
    import hetbench.exact_kmeans as ek

    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(m, 1, size=(60, 5)) for m in (0, 6, 12)])
    a = exact_kmeans(x, 3, seed=seed, method=method, batch_size=32)
    old = ek._CHUNK
    try:
        ek._CHUNK = 7  # other blocks: other BLAS calls, the same integers
        b = exact_kmeans(x, 3, seed=seed, method=method, batch_size=32)
    finally:
        ek._CHUNK = old
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1].grid_centers, b[1].grid_centers)


def test_grid_pca_is_sign_fixed_and_projects_like_pca():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 8)) * np.array([9, 5, 3, 1, 0.5, 0.4, 0.3, 0.2])
    z = x - x.mean(0)
    p = GridPCA.fit(z, 3)
    comps = p.components / 2.0**20
    assert np.allclose(np.linalg.norm(comps, axis=0), 1, atol=1e-5)
    assert np.all(comps[np.argmax(np.abs(comps), axis=0), np.arange(3)] > 0)  # largest entry positive
    from sklearn.decomposition import PCA

    ref = PCA(3).fit(z).components_.T
    assert np.allclose(np.abs(comps.T @ ref).diagonal(), 1, atol=1e-4)  # the same axes


def test_a_stray_embedding_file_fails_verify(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_cli("partition", "embedding", "--clusters", "4", "--embedder", "pixels:4", "--out", "emb", "-q")[0] == 0
    np.save(tmp_path / "emb" / "embeddings" / "test.npy", np.zeros((3, 2), np.float32))
    code, out, _ = run_cli("verify", "emb")
    assert code == 1 and "file embeddings/test.npy: not in hetbench.json" in out
