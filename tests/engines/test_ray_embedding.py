"""The embedding step of ``partition embedding`` / ``partition semantic`` as Ray tasks: the same split."""

from __future__ import annotations

import pytest
from test_ray_builds import assert_same_folder


@pytest.mark.slow
@pytest.mark.parametrize("method, args", [
    ("embedding", ("--embedder", "hog", "--clients", "6", "--clusters", "4", "--alpha", "0.3")),
    ("semantic", ("--embedder", "pixels:8", "--clients", "4", "--pca-dim", "8")),
])
def test_embedding_step_on_ray_gives_the_same_split(method, args, ray_cluster, tmp_path, run_cli):
    common = ("partition", method, *args, "-q")
    assert run_cli(*common, "--out", tmp_path / "local")[0] == 0
    code, _, err = run_cli(*common, "--engine", "ray", "--ray-address", ray_cluster.address, "--out", tmp_path / "ray")
    assert code == 0, err
    assert_same_folder(tmp_path / "local", tmp_path / "ray")


def test_embedding_engine_is_checked_before_any_work(tmp_path, run_cli):
    code, _, err = run_cli("partition", "embedding", "--embedder", "hog", "--ray-address", "auto", "--out", tmp_path / "o")
    assert code == 2 and "--engine ray" in err and not (tmp_path / "o").exists()


def test_the_embedding_engine_is_not_in_the_recipe():
    from hetbench.engines import engine_spec
    from hetbench.partitioners import EmbeddingPartitioner, SemanticPartitioner

    for p in (EmbeddingPartitioner(embedder="hog"), SemanticPartitioner(embedder="hog")):
        before = p.params()
        p.engine = engine_spec("ray", "auto")
        assert p.params() == before and "engine" not in str(before)
