"""Leaderboard readings a reviewer would not challenge (issue 48, item 1): references apart and never ranked,
unsettled rows marked and never bold, group-protocol runs in their own table, and every CSV row says its split
fingerprint, seeds and engine."""

from __future__ import annotations

from leaderboard_results import FP_A, read_csv, result, write

RISING = {"round": [1, 2, 3, 4, 5, 6], "accuracy": [20.0, 40.0, 60.0, 75.0, 85.0, 95.0]}  # still climbing


def _flat(level: float) -> dict:
    return {"round": [1, 2, 3, 4, 5, 6], "accuracy": [level - 30.0, level - 1.0, level + 0.5, level, level - 0.5, level]}


def _results(folder):
    for seed in (0, 1):
        write(folder, f"central-s{seed}.json", result(algorithm="central", seed=seed, curves=_flat(97.0)))
        write(folder, f"fedavg-s{seed}.json", result(algorithm="fedavg", seed=seed, curves=_flat(80.0 + seed)))
        write(folder, f"fedprox-s{seed}.json", result(algorithm="fedprox", seed=seed, curves=_flat(70.0 + seed)))
        write(folder, f"scaffold-s{seed}.json", result(algorithm="scaffold", seed=seed, curves=RISING))
        write(folder, f"logo-s{seed}.json", result(algorithm="fedavg", seed=seed, curves=_flat(60.0),
                                                    config={"train_groups": ["pixel"]}))


def _line(md: str, label: str) -> str:
    return next(x for x in md.splitlines() if x.startswith("| ") and f" | {label} | " in x)


def test_central_is_a_reference_and_an_unsettled_row_is_marked_and_never_bold(tmp_path, run_lb):
    _results(tmp_path / "res")
    code, _, err = run_lb(tmp_path / "res", "--out", tmp_path / "lb", "--rank-by", "accuracy")
    assert code == 0, err
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    main = md.split("References (not ranked)")[0]
    assert "| central |" not in main and "| ref. | central |" in md  # the ceiling, shown apart
    assert "**" not in _line(md, "central")  # 97% is not the best of the competitors
    scaffold = _line(md, "scaffold")  # 85-95% on its last evaluations: the highest, but still climbing
    assert scaffold.startswith("| 1† | scaffold |") and "| no (+" in scaffold and "**" not in scaffold
    fedavg = _line(md, "fedavg (train_groups=all)")  # its namesake below trained on one group
    assert fedavg.startswith("| 2 | fedavg (train_groups=all) |") and "**80.33** ± 0.71" in fedavg
    assert "†: a row that had not settled" in md
    groups = md.split("Trained on some groups only")[1]
    assert "fedavg (train_groups=pixel)" in groups and "fedavg (train_groups=pixel)" not in main
    rows = {r["algorithm"]: r for r in read_csv(tmp_path / "lb" / "leaderboard.csv")}
    assert rows["central"]["role"] == "reference" and rows["central"]["rank"] == ""
    assert rows["fedavg (train_groups=pixel)"]["role"] == "groups" and rows["fedavg (train_groups=pixel)"]["rank"] == ""
    assert rows["scaffold"]["settled"] == "false" and float(rows["scaffold"]["settle_change"]) > 3
    assert rows["fedavg (train_groups=all)"]["settled"] == "true" and rows["fedavg (train_groups=all)"]["rank"] == "2"
    for r in rows.values():  # every row says where it comes from
        assert r["fingerprint"] == FP_A and r["seed_list"] == "0+1" and r["engine"] == "local"


def test_a_named_reference_is_not_ranked_and_the_rule_can_be_loosened(tmp_path, run_lb):
    _results(tmp_path / "res")
    code, _, err = run_lb(tmp_path / "res", "--out", tmp_path / "lb", "--rank-by", "accuracy", "--reference", "fedprox",
                          "--settle-evaluations", "3", "--settle-max-change", "25")
    assert code == 0, err
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    assert "| ref. | fedprox |" in md and "| ref. | central |" in md
    assert _line(md, "scaffold").startswith("| 1 | scaffold |")  # +20 points over 3 evaluations: within 25
    assert "the last 3 test accuracies moves by at most 25 points" in md
    code, _, err = run_lb(tmp_path / "res", "--out", tmp_path / "lb2", "--reference", "fedprx")
    assert code == 0 and "no result's algorithm is the reference 'fedprx'" in err


def test_a_settling_rule_out_of_range_is_one_line_and_writes_nothing(tmp_path, run_lb):
    _results(tmp_path / "res")
    for args in (("--settle-evaluations", "2"), ("--settle-max-change", "-1"), ("--settle-max-change", "x")):
        code, out, err = run_lb(tmp_path / "res", "--out", tmp_path / "lb", *args)
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "lb").exists()


def test_a_flower_run_and_a_local_run_of_one_configuration_say_which_is_which(tmp_path, run_lb):
    flower = result(algorithm="fedavg", curves=_flat(80.0), config={"engine": "flower"})
    flower["engine"] = "flower"
    write(tmp_path / "res", "f.json", flower)
    write(tmp_path / "res", "l.json", result(algorithm="fedavg", curves=_flat(80.0)))
    assert run_lb(tmp_path / "res", "--out", tmp_path / "lb")[0] == 0
    rows = {r["algorithm"]: r["engine"] for r in read_csv(tmp_path / "lb" / "leaderboard.csv")}
    assert rows == {"fedavg (engine=flower)": "flower", "fedavg (engine=local)": "local"}
