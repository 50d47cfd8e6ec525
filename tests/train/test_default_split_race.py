"""Processes that start together in a fresh folder share the embedded default split: the first
builds it, the others wait and reuse it (CI's two test workers did this and one failed)."""

from __future__ import annotations

import subprocess
import sys

CODE = "from hetbench.sweep import default_split; print(default_split().as_posix())"


def test_concurrent_first_uses_of_the_default_split_all_succeed(tmp_path):
    procs = [subprocess.Popen([sys.executable, "-c", CODE], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    try:
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    assert {out.strip() for out, _ in outs} == {"hetbench_splits/digits-dirichlet-client-a0.5-n10-s0"}
    built = sum("built the embedded default" in err for _, err in outs)
    assert built == 1, [err for _, err in outs]
    assert (tmp_path / "hetbench_splits/digits-dirichlet-client-a0.5-n10-s0/hetbench.json").is_file()
    assert sorted(p.name for p in (tmp_path / "hetbench_splits").iterdir()) == ["digits-dirichlet-client-a0.5-n10-s0"]
