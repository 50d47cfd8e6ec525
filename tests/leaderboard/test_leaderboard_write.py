"""``hetbench leaderboard``: the output folder, written atomically, and the command's messages and errors."""

from __future__ import annotations

import pytest

from leaderboard_results import FP_B, result, write


def test_cli_writes_all_outputs(tmp_path, run_lb):
    res = tmp_path / "results"
    write(res, "iso/central_s0.json", result(algorithm="central"))
    write(res, "iso/fedavg_s0.json", result(final={"accuracy": 80.0}))
    write(res, "iso/fedavg_s1.json", result(final={"accuracy": 82.0}, seed=1))
    write(res, "digits/fedavg_s0.json", result(split="digits", fingerprint=FP_B))
    out = tmp_path / "lb"
    code, stdout, stderr = run_lb(res, "--out", out)
    assert code == 0, stderr
    assert stderr == ""
    names = sorted(p.name for p in out.iterdir())
    assert names == ["curves_digits.png", "curves_iso-isp-wb-tone.png", "leaderboard.csv", "leaderboard.html", "leaderboard.md"]
    assert len(stdout.strip().splitlines()) == 1 and str(out / "leaderboard.html") in stdout
    assert (out / "curves_digits.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "leaderboard.md").read_text()
    assert md.count("\n## ") == 2 and "group_by: device" in md and "clients: 12" in md and "model: lenet" in md and "rounds: 4" in md
    assert "Skipped" not in md
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left behind


def test_quiet_prints_nothing(tmp_path, run_lb):
    write(tmp_path / "r", "a.json", result())
    code, stdout, stderr = run_lb(tmp_path / "r", "--out", tmp_path / "lb", "--quiet")
    assert (code, stdout, stderr) == (0, "", "")


@pytest.mark.parametrize("setup", ["empty", "missing", "only_corrupt", "only_other"])
def test_no_results_is_exit_2_one_line(tmp_path, run_lb, setup):
    res = tmp_path / "results"
    if setup != "missing":
        res.mkdir()
    if setup == "only_corrupt":
        write(res, "x.json", "{")
    if setup == "only_other":
        write(res, "x.json", {"kind": "other"})
    code, stdout, stderr = run_lb(res, "--out", tmp_path / "lb")
    assert code == 2 and stdout == ""
    assert len(stderr.strip().splitlines()) == 1 and stderr.startswith("hetbench: error: ")
    assert "Traceback" not in stderr
    assert not (tmp_path / "lb").exists()


def test_unknown_rank_by_is_exit_2(tmp_path, run_lb):
    write(tmp_path / "r", "a.json", result())
    code, _, stderr = run_lb(tmp_path / "r", "--out", tmp_path / "lb", "--rank-by", "speed")
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert "speed" in stderr and "group_accuracy_variance" in stderr and "macs" in stderr
    code, _, _ = run_lb(tmp_path / "r", "--out", tmp_path / "lb", "--rank-by", "group_accuracy_variance")
    assert code == 0


def test_refuses_to_overwrite_without_flag(tmp_path, run_lb):
    res = tmp_path / "r"
    write(res, "a.json", result(final={"accuracy": 80.0}))
    out = tmp_path / "lb"
    assert run_lb(res, "--out", out)[0] == 0
    write(res, "b.json", result(algorithm="fedprox", final={"accuracy": 85.0}))
    code, _, stderr = run_lb(res, "--out", out)
    assert code == 2 and "--overwrite" in stderr and len(stderr.strip().splitlines()) == 1
    assert "fedprox" not in (out / "leaderboard.md").read_text()
    assert run_lb(res, "--out", out, "--overwrite")[0] == 0
    assert "fedprox" in (out / "leaderboard.md").read_text()


def test_out_never_replaces_the_results(tmp_path, run_lb):
    res = tmp_path / "r"
    write(res, "a.json", result())
    for out, how in ((res, "is the input"), (tmp_path, "contains the input"),
                     (res / "leaderboard", "is inside the input")):
        code, _, stderr = run_lb(res, "--out", out, "--overwrite")
        assert code == 2 and f"{how} results folder" in stderr and len(stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in res.iterdir()) == ["a.json"]
    assert run_lb(res, "--out", tmp_path / "leaderboard", "--quiet")[0] == 0


def test_more_than_twenty_skipped_files_are_counted(tmp_path, run_lb):
    res = tmp_path / "r"
    write(res, "a.json", result())
    for i in range(23):
        write(res, f"bad{i:02d}.json", "{")
    code, stdout, stderr = run_lb(res, "--out", tmp_path / "lb")
    lines = stderr.strip().splitlines()
    assert code == 0 and len(lines) == 21 and "bad19.json" in lines[19]
    assert lines[-1] == "hetbench: warning: ... and 3 more skipped files (listed in leaderboard.md)"
    assert "23 skipped" in stdout
