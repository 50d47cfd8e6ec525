"""``hetbench leaderboard``: aggregation, ranking, rendering and the CLI, on small synthetic result
files (the leaderboard's input format, written the way ``hetbench train`` writes them)."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from hetbench import leaderboard as lb

FP_A = "3fa2" + "0" * 60
FP_B = "9c1d" + "1" * 60


def result(split="iso-isp-wb-tone", fingerprint=FP_A, algorithm="fedavg", params=None, seed=0, final=None,
           config=None, curves=None, wall_time_s=10.0, parameters=1000, client_parameters=None, macs=5000):
    cfg = {"rounds": 3, "clients_per_round": 10, "local_epochs": 1, "batch_size": 32, "lr": 0.05, "momentum": 0.0,
           "weight_decay": 0.0, "model": "lenet", "seed": seed, "eval_every": 1, "image_size": 32, "target_accuracy": None}
    cfg.update(config or {})
    fin = {"accuracy": 90.0, "client_accuracy": 89.0, "worst_group_accuracy": 85.0, "group_accuracy_variance": 4.0,
           "client_accuracy_p10": 80.0, "client_accuracy_p90": 97.0, "relative_accuracy": None, "rounds_to_target": None,
           "loss": 0.3}
    fin.update(final or {})
    if curves is None:
        acc = fin["accuracy"] if fin["accuracy"] is not None else 50.0
        curves = {"round": [1, 2, 3], "accuracy": [acc - 20, acc - 10, acc],
                  "worst_group_accuracy": [acc - 30, acc - 15, acc - 5]}
    return {
        "kind": "hetbench-train-result", "schema_version": 1, "hetbench_version": "0.1.0",
        "split": {"name": split, "path": f"demo_out/{split}", "fingerprint": fingerprint, "num_clients": 12,
                  "num_train": 1200, "num_test": 400, "group_by": "device", "groups": ["pixel", "galaxy"]},
        "algorithm": {"name": algorithm, "params": params or {}},
        "config": cfg,
        "model": {"name": "lenet", "parameters": parameters, "macs": macs},
        "curves": curves,
        "final": fin,
        "groups": {"pixel": {"accuracy": 85.0, "num_test": 200}, "galaxy": {"accuracy": 97.4, "num_test": 200}},
        "clients": {"parameters": client_parameters, "macs": None},
        "timing": {"wall_time_s": wall_time_s},
    }


def write(folder: Path, name: str, data) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.fixture
def run_lb(run_cli):
    """The real entry point (one-line errors, exit 2) with the leaderboard command registered."""
    from hetbench.cli.leaderboard import leaderboard
    from hetbench.cli.main import cli

    cli.add_command(leaderboard)
    return lambda *args: run_cli("leaderboard", *args)


def tables_of(folder: Path, rank_by: str = lb.DEFAULT_RANK_BY):
    tables, _ = lb.build(folder, rank_by)
    return tables


def row(table, label):
    return next(r for r in table.rows if r.label == label)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ----------------------------------------------------------------------------------------------
# aggregation and ranking

def test_mean_and_sample_std_over_seeds(tmp_path):
    for seed, acc in enumerate([80.0, 82.0, 84.0]):
        write(tmp_path, f"fedavg/s{seed}.json", result(seed=seed, final={"accuracy": acc}))
    write(tmp_path, "fedprox/s0.json", result(algorithm="fedprox", params={"mu": 0.1}, final={"accuracy": 70.0}))
    (t,) = tables_of(tmp_path)
    s = row(t, "fedavg").stats["accuracy"]
    assert s.n == 3 and s.mean == pytest.approx(82.0) and s.std == pytest.approx(2.0)  # ddof=1
    assert row(t, "fedavg").stats["worst_group_accuracy"].std == pytest.approx(0.0)
    one = row(t, "fedprox").stats["accuracy"]
    assert one.mean == 70.0 and one.std is None
    md = lb.render_markdown([t])
    assert "**82.00** ± 2.00" in md  # best mean bold, std plain
    fedprox_line = next(line for line in md.splitlines() if "| fedprox |" in line)
    assert "70.00" in fedprox_line and "70.00 ±" not in fedprox_line  # one seed: the mean alone
    assert len(row(t, "fedavg").results) == 3


def test_mean_curves_over_seeds(tmp_path):
    write(tmp_path, "a.json", result(seed=0, curves={"round": [1, 2], "accuracy": [10.0, 20.0]}))
    write(tmp_path, "b.json", result(seed=1, curves={"round": [1, 2], "accuracy": [30.0, None]}))
    (t,) = tables_of(tmp_path)
    rounds, mean = t.rows[0].curves["accuracy"]
    assert rounds == [1.0, 2.0] and mean == [20.0, 20.0]
    assert "worst_group_accuracy" not in t.rows[0].curves


def test_rank_direction_higher_and_lower_is_better(tmp_path):
    write(tmp_path, "a.json", result(algorithm="alpha", final={"worst_group_accuracy": 70.0, "group_accuracy_variance": 1.0}))
    write(tmp_path, "b.json", result(algorithm="beta", final={"worst_group_accuracy": 80.0, "group_accuracy_variance": 9.0}))
    write(tmp_path, "c.json", result(algorithm="gamma", final={"worst_group_accuracy": 75.0, "group_accuracy_variance": 4.0}))
    (t,) = tables_of(tmp_path)  # default: worst_group_accuracy, higher is better
    assert [r.label for r in t.rows] == ["beta", "gamma", "alpha"]
    assert [r.rank for r in t.rows] == [1, 2, 3]
    (t,) = tables_of(tmp_path, "group_accuracy_variance")  # lower is better
    assert [r.label for r in t.rows] == ["alpha", "gamma", "beta"]
    (t,) = tables_of(tmp_path, "wall_time_s")
    assert t.rank_by == "wall_time_s"


def test_ties_broken_by_accuracy_then_name(tmp_path):
    write(tmp_path, "1.json", result(algorithm="zeta", final={"worst_group_accuracy": 80.0, "accuracy": 90.0}))
    write(tmp_path, "2.json", result(algorithm="eta", final={"worst_group_accuracy": 80.0, "accuracy": 92.0}))
    write(tmp_path, "3.json", result(algorithm="beta", final={"worst_group_accuracy": 80.0, "accuracy": 90.0}))
    write(tmp_path, "4.json", result(algorithm="alpha", final={"worst_group_accuracy": 60.0, "accuracy": 99.0}))
    (t,) = tables_of(tmp_path)
    assert [r.label for r in t.rows] == ["eta", "beta", "zeta", "alpha"]
    assert [r.rank for r in t.rows] == [1, 2, 3, 4]


def test_best_mean_is_bold_in_markdown_and_html_not_csv(tmp_path):
    write(tmp_path, "a.json", result(algorithm="alpha", final={"accuracy": 91.0, "group_accuracy_variance": 2.5}, wall_time_s=30.0))
    write(tmp_path, "b.json", result(algorithm="beta", final={"accuracy": 88.0, "group_accuracy_variance": 7.5}, wall_time_s=12.0))
    tables = tables_of(tmp_path)
    md = lb.render_markdown(tables)
    alpha = next(line for line in md.splitlines() if "| alpha |" in line)
    beta = next(line for line in md.splitlines() if "| beta |" in line)
    assert "**91.00**" in alpha and "**88.00**" not in beta
    assert "**2.50**" in alpha and "**7.50**" not in beta  # variance: lower is better
    assert "**12.0**" in beta and "**30.0**" not in alpha  # wall time: lower is better
    # equal values are best together
    assert alpha.count("**85.00**") == 1 and beta.count("**85.00**") == 1
    page = lb.render_html(tables)
    assert "<b>91.00</b>" in page and "<b>88.00</b>" not in page and "<b>2.50</b>" not in page.replace("<b>2.50</b>", "", 1)
    assert "**" not in lb.render_csv(tables) and "<b>" not in lb.render_csv(tables)


def test_nulls_ignored_all_null_dash_and_null_rank_metric_last(tmp_path):
    write(tmp_path, "a0.json", result(algorithm="alpha", seed=0, final={"client_accuracy_p10": None, "worst_group_accuracy": 70.0}))
    write(tmp_path, "a1.json", result(algorithm="alpha", seed=1, final={"client_accuracy_p10": 60.0, "worst_group_accuracy": 72.0}))
    write(tmp_path, "b0.json", result(algorithm="beta", seed=0, final={"worst_group_accuracy": None, "accuracy": 99.0}))
    write(tmp_path, "c0.json", result(algorithm="gamma", seed=0, final={"worst_group_accuracy": 50.0}))
    (t,) = tables_of(tmp_path)
    assert [r.label for r in t.rows] == ["alpha", "gamma", "beta"]
    assert row(t, "beta").rank is None
    p10 = row(t, "alpha").stats["client_accuracy_p10"]
    assert p10.mean == 60.0 and p10.std is None and p10.n == 1
    assert row(t, "alpha").stats["rounds_to_target"].mean is None
    md = lb.render_markdown([t])
    beta = next(line for line in md.splitlines() if "| beta |" in line)
    assert beta.startswith("| — | beta |")
    alpha = next(line for line in md.splitlines() if "| alpha |" in line)
    assert "—" in alpha  # rounds_to_target all null
    rows = list(csv.DictReader(lb.render_csv([t]).splitlines()))
    beta_csv = next(r for r in rows if r["algorithm"] == "beta")
    assert beta_csv["rank"] == "" and beta_csv["worst_group_accuracy_mean"] == "" and beta_csv["rounds_to_target_mean"] == ""


def test_relative_accuracy_from_the_central_run_per_seed(tmp_path):
    write(tmp_path, "c0.json", result(algorithm="central", seed=0, final={"accuracy": 100.0}))
    write(tmp_path, "c1.json", result(algorithm="central", seed=1, final={"accuracy": 80.0}))
    write(tmp_path, "f0.json", result(algorithm="fedavg", seed=0, final={"accuracy": 90.0}))
    write(tmp_path, "f1.json", result(algorithm="fedavg", seed=1, final={"accuracy": 76.0}))
    write(tmp_path, "f2.json", result(algorithm="fedavg", seed=2, final={"accuracy": 50.0}))  # no central seed 2
    write(tmp_path, "p0.json", result(algorithm="fedprox", seed=0, final={"accuracy": 90.0, "relative_accuracy": 0.5}))  # given: kept
    (t,) = tables_of(tmp_path)
    rel = row(t, "fedavg").stats["relative_accuracy"]
    assert rel.n == 2 and rel.mean == pytest.approx((0.90 + 0.95) / 2)
    assert rel.std == pytest.approx(math.sqrt(2) * 0.025)
    assert row(t, "central").stats["relative_accuracy"].mean == pytest.approx(1.0)
    assert row(t, "fedprox").stats["relative_accuracy"].mean == 0.5
    assert t.reference == "central"


def test_relative_accuracy_needs_a_central_run_of_the_same_split(tmp_path):
    write(tmp_path, "c0.json", result(algorithm="central", fingerprint=FP_B, final={"accuracy": 100.0}))
    write(tmp_path, "f0.json", result(algorithm="fedavg", final={"accuracy": 90.0}))
    tables = tables_of(tmp_path)
    assert len(tables) == 2
    fedavg_table = next(t for t in tables if t.fingerprint == FP_A)
    assert fedavg_table.rows[0].stats["relative_accuracy"].mean is None


def test_two_configurations_of_one_algorithm_get_distinct_labels(tmp_path):
    write(tmp_path, "a.json", result(algorithm="fedprox", params={"mu": 0.01}))
    write(tmp_path, "b.json", result(algorithm="fedprox", params={"mu": 0.1}))
    write(tmp_path, "c.json", result(algorithm="fedprox", params={"mu": 0.1}, config={"lr": 0.01}))
    write(tmp_path, "d.json", result(algorithm="fedavg", config={"lr": 0.01}))
    write(tmp_path, "e.json", result(algorithm="fedavg", config={"lr": 0.01}, seed=1))  # same configuration, other seed
    (t,) = tables_of(tmp_path)
    labels = sorted(r.label for r in t.rows)
    assert labels == ["fedavg", "fedprox (mu=0.01, lr=0.05)", "fedprox (mu=0.1, lr=0.01)", "fedprox (mu=0.1, lr=0.05)"]
    assert len(row(t, "fedavg").results) == 2


def test_splits_are_keyed_by_name_and_fingerprint(tmp_path):
    write(tmp_path, "a.json", result(fingerprint=FP_A))
    write(tmp_path, "b.json", result(fingerprint=FP_B))
    write(tmp_path, "c.json", result(split="digits", fingerprint=FP_B))
    tables = tables_of(tmp_path)
    assert sorted(t.title for t in tables) == ["digits", "iso-isp-wb-tone (3fa20000)", "iso-isp-wb-tone (9c1d1111)"]


def test_per_client_parameters_and_macs(tmp_path):
    write(tmp_path, "a.json", result(algorithm="hetero", client_parameters=[100, 200, 300], parameters=999))
    write(tmp_path, "b.json", result(algorithm="fedavg", parameters=999))
    (t,) = tables_of(tmp_path)
    assert row(t, "hetero").stats["parameters"].mean == 200.0
    assert row(t, "fedavg").stats["parameters"].mean == 999.0
    assert row(t, "fedavg").stats["macs"].mean == 5000.0


def test_unknown_rank_by_lists_valid_names():
    with pytest.raises(lb.HetbenchError, match="worst_group_accuracy"):
        lb.check_rank_by("speed")


# ----------------------------------------------------------------------------------------------
# the command

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
    assert md.count("\n## ") == 2 and "group_by: device" in md and "clients: 12" in md and "model: lenet" in md and "rounds: 3" in md
    assert "Skipped" not in md
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left behind


def test_quiet_prints_nothing(tmp_path, run_lb):
    write(tmp_path / "r", "a.json", result())
    code, stdout, stderr = run_lb(tmp_path / "r", "--out", tmp_path / "lb", "--quiet")
    assert (code, stdout, stderr) == (0, "", "")


def test_csv_is_tidy_and_readable(tmp_path, run_lb):
    res = tmp_path / "results"
    write(res, "a.json", result(algorithm="fedavg", final={"accuracy": 80.0}))
    write(res, "b.json", result(algorithm="fedavg", final={"accuracy": 84.0}, seed=1))
    write(res, "c.json", result(algorithm="fedprox", params={"mu": 0.1}))
    write(res, "d.json", result(split="digits", fingerprint=FP_B))
    assert run_lb(res, "--out", tmp_path / "lb")[0] == 0
    rows = read_csv(tmp_path / "lb" / "leaderboard.csv")
    assert len(rows) == 3
    for col in ["split", "fingerprint", "rank", "algorithm", "seeds"] + [f"{m}_{s}" for m in lb.METRIC_NAMES for s in ("mean", "std")]:
        assert col in rows[0]
    fedavg = next(r for r in rows if r["algorithm"] == "fedavg" and r["split"] == "iso-isp-wb-tone")
    assert fedavg["fingerprint"] == FP_A and fedavg["seeds"] == "2"
    assert float(fedavg["accuracy_mean"]) == 82.0 and float(fedavg["accuracy_std"]) == pytest.approx(math.sqrt(8))
    fedprox = next(r for r in rows if r["algorithm"] == "fedprox")
    assert fedprox["accuracy_std"] == "" and json.loads(fedprox["params"]) == {"mu": 0.1}
    assert {r["rank"] for r in rows if r["split"] == "iso-isp-wb-tone"} == {"1", "2"}


def test_corrupt_and_malformed_files_are_skipped_and_listed(tmp_path, run_lb):
    res = tmp_path / "results"
    write(res, "good.json", result())
    write(res, "sub/broken.json", '{"kind": "hetbench-train-result", ')
    write(res, "no_final.json", {k: v for k, v in result().items() if k != "final"})
    write(res, "bad_type.json", result(final={"accuracy": "high"}, curves={}))
    write(res, "other.json", {"kind": "hetbench-something-else", "x": 1})  # not a result: ignored, not listed
    write(res, "list.json", [1, 2, 3])
    write(res, "notes.txt", "not json at all")
    code, stdout, stderr = run_lb(res, "--out", tmp_path / "lb")
    assert code == 0
    warnings = stderr.strip().splitlines()
    assert len(warnings) == 3 and all(w.startswith("hetbench: warning: skipped ") for w in warnings)
    assert "sub/broken.json" in stderr and "no_final.json" in stderr and "bad_type.json" in stderr
    assert "other.json" not in stderr and "list.json" not in stderr
    md = (tmp_path / "lb" / "leaderboard.md").read_text()
    footer = md.strip().splitlines()[-1]
    assert footer.startswith("Skipped files (3):") and "sub/broken.json" in footer and "no_final.json" in footer
    assert "3 skipped" in stdout
    _, loaded = lb.build(res)
    assert len(loaded.results) == 1 and len(loaded.skipped) == 3 and loaded.ignored == 2


def test_duplicate_seed_is_skipped(tmp_path):
    write(tmp_path, "a.json", result(final={"accuracy": 80.0}))
    write(tmp_path, "b.json", result(final={"accuracy": 90.0}))
    tables, loaded = lb.build(tmp_path)
    assert tables[0].rows[0].stats["accuracy"].mean == 80.0
    assert [s.path for s in loaded.skipped] == ["b.json"] and "duplicate of a.json" in loaded.skipped[0].reason


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
    for out in (res, tmp_path):
        code, _, stderr = run_lb(res, "--out", out, "--overwrite")
        assert code == 2 and "results folder" in stderr
    assert (res / "a.json").is_file()
    assert run_lb(res, "--out", res / "leaderboard", "--quiet")[0] == 0  # inside is fine: nothing there is *.json
    assert run_lb(res, "--out", res / "leaderboard", "--overwrite", "--quiet")[0] == 0


def test_html_is_self_contained_and_escaped(tmp_path):
    write(tmp_path, "a.json", result(algorithm="<script>alert(1)</script>", split="a&b"))
    write(tmp_path, "b.json", result(algorithm="fedavg", split="a&b"))
    page = lb.render_html(tables_of(tmp_path))
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert 'data-split="a&amp;b"' in page
    assert page.count("<script>") == 1  # the inline sorter only
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(", page)
    assert re.findall(r"https?://[^\"' ]+", page) == ["http://www.w3.org/2000/svg"] * page.count("<svg ")
    assert page.count("<svg ") == 2 and page.count("<polyline") == 4  # accuracy and worst group, two rows each


# ----------------------------------------------------------------------------------------------
# the page in a real browser

class _DomRows(HTMLParser):
    """table data-split -> [tr data-algorithm, ...] in document order."""

    def __init__(self):
        super().__init__()
        self.tables: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "leaderboard" in (a.get("class") or "").split():
            self.tables.append((a.get("data-split"), []))
        elif tag == "tr" and "data-algorithm" in a and self.tables:
            self.tables[-1][1].append(a["data-algorithm"])


def test_html_rows_in_rank_order_in_headless_chromium(tmp_path, run_lb):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium not installed (make test installs it)")
    res = tmp_path / "results"
    for seed in (0, 1):
        write(res, f"a{seed}.json", result(algorithm="fedavg", seed=seed, final={"worst_group_accuracy": 70.0 + seed}))
        write(res, f"b{seed}.json", result(algorithm="fedprox", params={"mu": 0.1}, seed=seed, final={"worst_group_accuracy": 80.0}))
        write(res, f"c{seed}.json", result(algorithm="fedprox", params={"mu": 0.01}, seed=seed, final={"worst_group_accuracy": 75.0}))
        write(res, f"d{seed}.json", result(algorithm="central", seed=seed, final={"worst_group_accuracy": 90.0}))
        write(res, f"e{seed}.json", result(split="digits", fingerprint=FP_B, algorithm="scaffold", seed=seed,
                                          final={"worst_group_accuracy": 60.0}))
        write(res, f"f{seed}.json", result(split="digits", fingerprint=FP_B, algorithm="fedavg", seed=seed,
                                          final={"worst_group_accuracy": 65.0}))
    out = tmp_path / "lb"
    assert run_lb(res, "--out", out, "--quiet")[0] == 0
    expected = {t.title: [r.label for r in t.rows] for t in tables_of(res)}
    assert expected["iso-isp-wb-tone"] == ["central", "fedprox (mu=0.1)", "fedprox (mu=0.01)", "fedavg"]
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", "--dump-dom", (out / "leaderboard.html").resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    parser = _DomRows()
    parser.feed(proc.stdout)
    assert len(parser.tables) == len(expected) == 2
    assert dict(parser.tables) == expected
    assert proc.stdout.count("<svg") == 4  # the inline curves were parsed as SVG elements
