"""``hetbench reproduce``: bad input, missing data, the folder it writes and verdicts that follow from numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hetbench.reproduce.criteria import Measurement, combine, evaluate


def test_unknown_claim_lists_the_valid_ones_exit_2(run_cli, tmp_path):
    from hetbench.reproduce import claim_ids

    code, out, err = run_cli("reproduce", "--claims", "hsu-label-skew,heteroswitch-table5", "--out", tmp_path / "o")
    assert code == 2
    assert err.strip() == ("hetbench: error: unknown claim 'heteroswitch-table5'; valid claims: "
                           + ", ".join(claim_ids()))
    assert len(claim_ids()) == 16
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, message", [
    (["--seeds", "0,-1"], "--seeds must be a comma list of non-negative integers"),
    (["--seeds", "1,1"], "--seeds names a seed twice"),
    (["--device", "cuda:7", "--claims", "hsu-label-skew"], "cuda"),
    (["--threads", "0"], "--threads must be a positive number"),
    (["--seeds", "0,1,2", "--claims", "dapperfl-footprint,hsu-label-skew"],
     "--seeds: hsu-label-skew needs at least 5 seeds for its 95% t intervals (got 3)"),
    (["--seeds", "7", "--full", "--claims", "heteroswitch-table4"],
     "--seeds: heteroswitch-table4 needs at least 5 seeds for its 95% t intervals (got 1)"),
])
def test_bad_options_exit_2_before_anything_runs(run_cli, tmp_path, args, message):
    code, _, err = run_cli("reproduce", *args, "--out", tmp_path / "o")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def _check(doc, claim_id):
    return next(c for c in doc["claims"] if c["id"] == claim_id)


def test_quick_footprint_and_geo_end_to_end(run_cli, tmp_path):
    out = tmp_path / "claims"
    code, stdout, err = run_cli("reproduce", "--quick", "--claims", "dapperfl-footprint,hsu-geo-clients",
                                "--out", out)
    assert code == 0, err
    assert "dapperfl-footprint  partially reproduced" in stdout and "hsu-geo-clients" in stdout
    assert sorted(p.name for p in out.iterdir()) == ["claims.html", "claims.json", "claims.md", "plots"]
    assert sorted(p.name for p in (out / "plots").iterdir()) == ["dapperfl-footprint.png", "hsu-geo-clients.png"]
    doc = json.loads((out / "claims.json").read_text())
    assert doc["mode"] == "quick" and [c["id"] for c in doc["claims"]] == ["dapperfl-footprint", "hsu-geo-clients"]

    # every verdict is what its declared criterion gives on the recorded numbers
    for claim in doc["claims"]:
        for check in claim["checks"]:
            points = check["measurement"].get("points")
            if not points:
                assert check["verdict"] == "not run" and check["reason"]
                continue
            m = Measurement([p["samples"] for p in points], x=[p.get("x") for p in points] if "x" in points[0] else None,
                            published=[p["published"] for p in points] if "published" in points[0] else None)
            assert evaluate(m, check["criterion"]).verdict == check["verdict"]

    fp = _check(doc, "dapperfl-footprint")
    # Table 5's #Para is the mask's count; its FLOPs are (1 - rho) x dense, and the pruned network a client
    # runs is far cheaper: the FLOPs check measures that network, never the paper's arithmetic
    assert [c["verdict"] for c in fp["checks"]] == ["reproduced", "not reproduced"]
    assert [round(v, 3) for v in fp["facts"]["published_flops_over_dense_equivalent"]] == [1.003] * 4
    assert fp["verdict"] == "partially reproduced"
    params = fp["checks"][0]["measurement"]["points"]
    assert [round(p["mean"] / 1e6, 2) for p in params] == [3.93, 2.95, 1.97, 0.99]
    assert fp["checks"][0]["numbers"]["worst_relative_error"] < 0.02
    structural = [p["mean"] / 253432832 for p in fp["checks"][1]["measurement"]["points"]]
    assert [round(s, 2) for s in structural] == [0.68, 0.4, 0.19, 0.05]
    assert all(s < (1 - r) for s, r in zip(structural, (0.2, 0.4, 0.6, 0.8)))

    geo = _check(doc, "hsu-geo-clients")
    verdicts = {c["measure"]: c["verdict"] for c in geo["checks"]}
    assert verdicts["metadata"] == verdicts["inaturalist"] == "not run"
    assert "needs --metadata inat2017:train2017.json+train2017_locations.json" in geo["checks"][2]["reason"]
    slope = geo["checks"][0]["numbers"]["slope"]
    inside = -1.15 <= slope["low"] and slope["high"] <= -0.85
    assert verdicts["observations"] == ("reproduced" if inside else verdicts["observations"])
    assert geo["verdict"] == verdicts["observations"]  # checks not run do not count

    md = (out / "claims.md").read_text()
    assert "| dapperfl-footprint | Jia et al. 2024, Table 5 | **partially reproduced** |" in md
    assert "![hsu-geo-clients](plots/hsu-geo-clients.png)" in md
    html = (out / "claims.html").read_text()
    assert html.count("data:image/png;base64,") == 2 and "<script src" not in html and "href=\"http" not in html

    # a badge is never greener than its weakest check: two of three geo checks did not run, so every place
    # the verdict shows says what it rests on, and the HTML badge takes the colour of 'not run'
    said = f"{geo['verdict']} on generated data only (1 of 3 checks run)"
    assert [c.get("data") for c in geo["checks"]] == ["generated data", "the --metadata table", "iNaturalist 2017"]
    assert re.search(rf"^hsu-geo-clients +{re.escape(said)} ", stdout, re.M)
    assert f"| **{geo['verdict']}** on generated data only (1 of 3 checks run) |" in md
    assert f"## hsu-geo-clients: {said}" in md
    assert html.count(f'<span class="verdict v-not-run">{said}</span>') == 2
    assert f'<span class="verdict v-{geo["verdict"].replace(" ", "-")}">{said}' not in html
    assert '<span class="verdict v-partially-reproduced">partially reproduced</span>' in html  # all its checks ran

    # the same command again: refused without --overwrite, identical files with it
    code, _, err = run_cli("reproduce", "--claims", "dapperfl-footprint,hsu-geo-clients", "--out", out, "-q")
    assert code == 2 and "already exists; pass --overwrite" in err
    before = _without_wall_times(out)
    code, stdout, _ = run_cli("reproduce", "--claims", "dapperfl-footprint,hsu-geo-clients", "--out", out, "-q",
                              "--overwrite")
    assert code == 0 and stdout == ""
    assert _without_wall_times(out) == before


def _without_wall_times(out: Path) -> dict[str, str]:
    """The files of a reproduce output with the wall times (the only clock-dependent fields) taken out."""
    import re

    files = {p.name: p.read_text() for p in out.iterdir() if p.is_file()}
    doc = json.loads(files["claims.json"])
    assert all(c["seconds"] >= 0 for c in doc["claims"])
    for c in doc["claims"]:
        c.pop("seconds")
    files["claims.json"] = json.dumps(doc)
    files["claims.md"] = re.sub(r"\| [0-9.]+ (s|min) \||Wall time in all: [0-9.]+ min", "-", files["claims.md"])
    return files


def test_missing_inaturalist_files_are_refused_and_unreadable_ones_not_run(run_cli, tmp_path):
    """Files that do not exist: one line, exit 2, before any claim runs (issue 25: it ended 'reproduced' with
    exit 0). Files that exist but cannot be read: the checks on them are 'not run', with the reason."""
    out = tmp_path / "o"
    metadata = f"inat2017:{tmp_path}/train2017.json+{tmp_path}/train2017_locations.json"
    code, _, err = run_cli("reproduce", "--claims", "hsu-geo-clients", "--out", out, "-q", "--metadata", metadata)
    assert code == 2 and "train2017.json'" in err and err.strip().endswith("not found"), err
    assert len(err.strip().splitlines()) == 1, err
    assert not out.exists()
    for name in ("train2017.json", "train2017_locations.json"):
        (tmp_path / name).write_text("not json")
    code, _, err = run_cli("reproduce", "--claims", "hsu-geo-clients", "--out", out, "-q", "--metadata", metadata)
    assert code == 0, err
    claim = json.loads((out / "claims.json").read_text())["claims"][0]
    checks = {c["measure"]: c for c in claim["checks"]}
    assert checks["observations"]["verdict"] != "not run"
    for measure in ("metadata", "inaturalist"):
        assert checks[measure]["verdict"] == "not run"
        assert "cannot be read" in checks[measure]["reason"], checks[measure]["reason"]
    assert "not run" in (out / "claims.md").read_text()


def test_a_real_metadata_table_is_measured(run_cli, tmp_path):
    """A geo-tagged CSV through --metadata: its slope is fitted; the iNaturalist check stays not run."""
    import numpy as np

    rng = np.random.default_rng(0)
    n = 40000
    lat, lon = rng.uniform(-60, 70, n), rng.uniform(-180, 180, n)
    table = tmp_path / "obs.csv"
    table.write_text("latitude,longitude,label\n" + "\n".join(f"{a:.5f},{b:.5f},{i % 7}" for i, (a, b)
                                                             in enumerate(zip(lat, lon))) + "\n")
    out = tmp_path / "o"
    code, _, err = run_cli("reproduce", "--claims", "hsu-geo-clients", "--out", out, "-q", "--metadata", table)
    assert code == 0, err
    checks = {c["measure"]: c for c in json.loads((out / "claims.json").read_text())["claims"][0]["checks"]}
    assert checks["metadata"]["verdict"] != "not run" and "slope" in checks["metadata"]["numbers"]
    assert checks["inaturalist"]["verdict"] == "not run"
    assert "is not an inat2017: source" in checks["inaturalist"]["reason"]


def test_a_claim_whose_data_cannot_be_read_is_not_run(tmp_path):
    from hetbench.errors import HetbenchError
    from hetbench.reproduce import reproduce

    with pytest.raises(HetbenchError, match="missing.parquet' not found"):  # names nothing: refused up front
        reproduce("hsu-geo-clients", out=tmp_path / "o", quiet=True, metadata=str(tmp_path / "missing.parquet"))
    assert not (tmp_path / "o").exists()
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not parquet")
    done = reproduce("hsu-geo-clients", out=tmp_path / "o", quiet=True, metadata=str(broken))
    checks = {c["measure"]: c for c in done.doc["claims"][0]["checks"]}
    assert checks["metadata"]["verdict"] == "not run" and "broken.parquet" in checks["metadata"]["reason"]


@pytest.mark.slow
def test_label_skew_quick(tmp_path):
    """hsu-label-skew's quick settings, with fewer rounds, end to end through its runner (one seed of the
    five, which ``hetbench reproduce`` itself refuses): whatever the verdict, it is the declared criterion's on the
    numbers, and the record carries each point's interval."""
    from hetbench.reproduce.claims import load_claim
    from hetbench.reproduce.claim_run import run_claim as _run_claim
    from hetbench.reproduce.runners import Context

    import copy
    import dataclasses

    claim = load_claim("hsu-label-skew")
    quick = copy.deepcopy(claim.settings["quick"])  # its data, alphas and model; fewer rounds (seconds, not minutes)
    quick["train"].update(rounds=4, clients_per_round=5)
    quick["central"].update(rounds=2)
    claim = dataclasses.replace(claim, settings={**claim.settings, "quick": quick})
    ctx = Context(work=tmp_path / "work", runs=tmp_path / "runs", seeds=[0], mode="quick", threads=2)
    ctx.work.mkdir(parents=True)
    (tmp_path / "plots").mkdir()
    record = _run_claim(claim, "quick", [0], ctx, tmp_path / "plots")
    acc = record["checks"][0]
    assert [p["x"] for p in acc["measurement"]["points"]] == [100, 1, 0.5, 0.1, 0.05]
    assert all(p["n"] == 1 and p["low"] == p["high"] == p["mean"] for p in acc["measurement"]["points"])
    for check in record["checks"]:
        points = check["measurement"]["points"]
        m = Measurement([p["samples"] for p in points], x=[p["x"] for p in points],
                        unsettled=check["measurement"].get("unsettled"))
        assert evaluate(m, check["criterion"]).verdict == check["verdict"]
    assert record["verdict"] == combine([c["verdict"] for c in record["checks"]])
    runs = sorted(p.name for p in (tmp_path / "runs").rglob("*.json"))
    assert runs.count("fedavg-s0.json") == 5 and runs.count("central-s0.json") == 1
    assert record["facts"]["test_examples"] == 1000
    assert (tmp_path / "plots" / "hsu-label-skew.png").stat().st_size > 1000
    # every run is checked for settling; an unsettled one leaves every check inconclusive
    assert len(record["settling"]["runs"]) == 6
    if record["settling"]["unsettled"]:
        assert all(c["verdict"] == "inconclusive" for c in record["checks"])


def test_seeds_option_replaces_the_quick_seeds(run_cli, tmp_path):
    code, _, err = run_cli("reproduce", "--claims", "dapperfl-footprint", "--seeds", "3", "--out", tmp_path / "o", "-q")
    assert code == 0, err
    doc = json.loads((tmp_path / "o" / "claims.json").read_text())
    assert doc["claims"][0]["seeds"] == [3] and doc["claims"][0]["facts"]["seed"] == 3


def test_inaturalist_files_present_are_compared_with_tff(run_cli, tmp_path):
    """Small stand-ins for the iNaturalist 2017 files: the exact-count check runs (and cannot match TFF's
    counts), the slope check on a table this small is not run, with the reason."""
    import numpy as np

    rng = np.random.default_rng(1)
    n = 3000
    images = [{"id": i, "file_name": f"train_val_images/x/{i}.jpg"} for i in range(n)]
    ann = {"images": images, "annotations": [{"image_id": i, "category_id": int(i % 5)} for i in range(n)]}
    loc = [{"id": i, "lat": float(a), "lon": float(b), "user_id": i % 40}
           for i, (a, b) in enumerate(zip(rng.uniform(-50, 60, n), rng.uniform(-170, 170, n)))]
    (tmp_path / "train2017.json").write_text(json.dumps(ann))
    (tmp_path / "train2017_locations.json").write_text(json.dumps(loc))
    out = tmp_path / "o"
    code, _, err = run_cli("reproduce", "--claims", "hsu-geo-clients", "--out", out, "-q", "--metadata",
                           f"inat2017:{tmp_path}/train2017.json+{tmp_path}/train2017_locations.json")
    assert code == 0, err
    claim = json.loads((out / "claims.json").read_text())["claims"][0]
    checks = {c["measure"]: c for c in claim["checks"]}
    inat = checks["inaturalist"]
    assert [p["published"] for p in inat["measurement"]["points"]] == [3607, 1209, 369, 136, 39, 12]
    assert inat["verdict"] == "not reproduced" and inat["numbers"]["within"] < 6
    assert checks["metadata"]["verdict"] == "not run" and "3,000 rows" in checks["metadata"]["reason"]
    assert claim["verdict"] == combine([c["verdict"] for c in claim["checks"]])
