"""A licence for your own data (issue 48, item 2): given when the split is written, recorded in the manifest,
shown by the card, checked by verify, kept by a re-partition; bad licences refused in one line, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from raw_fixtures import shared_raw_copies

from hetbench.errors import HetbenchError
from hetbench.publish.attribution import HUB_LICENSES
from hetbench.publish.licence import GivenLicence, given_licence, licensed, manifest_licence


def _card_meta(folder: Path) -> dict:
    from huggingface_hub import metadata_load

    return metadata_load(folder / "README.md")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(HUB_LICENSES - {"other"})), st.sampled_from(["", "x", "Data: A. Person (2026)"]))
def test_every_hub_id_round_trips_through_the_manifest(lic, attribution):
    got = given_licence(lic.upper(), attribution=attribution or None)
    assert got.license == lic and manifest_licence({"licence": got.as_manifest()}) == got


@pytest.mark.parametrize("args, said", [
    (("cc-by-5.0",), "not a Hugging Face licence id (closest: cc-by-2.0, cc-by-3.0, cc-by-4.0); for a licence the "
                     "Hub does not list, give 'other' with license_name and license_link"),
    (("gibberish-licence",), "give 'other'"),
    (("other",), "other needs license_name"),
    (("other", "lab-1.0"), "other needs license_link"),
    (("other", "Lab Licence", "https://x.org/l"), "lowercase letters, digits"),
    (("other", "lab-1.0", "not a link"), "must be an http(s) URL"),
    (("other", "lab-1.0", "LICENSE.md"), "must be an http(s) URL"),  # the folder holds only what hetbench writes
    (("other", "lab-1.0", "/home/me/licence.txt"), "must be an http(s) URL"),  # no local path is published
    (("mit", "lab-1.0"), "only go with license other"),
    ((None, "lab-1.0"), "license_name needs license"),
    (("mit", None, None, "two\nlines"), "one non-empty line"),
])
def test_a_bad_licence_is_refused_in_one_line_naming_the_field(args, said):
    with pytest.raises(HetbenchError) as exc:
        given_licence(*args)
    assert said in str(exc.value) and "\n" not in str(exc.value)


def test_a_tampered_manifest_licence_is_refused():
    for entry in ({"license": "cc-by-9"}, {"licence": "mit"}, ["mit"], {"license": "mit", "license_name": 3}):
        with pytest.raises(HetbenchError, match="licence"):
            manifest_licence({"licence": entry})


def test_a_builder_called_from_python_takes_the_licence_of_the_block(tmp_path):
    from hetbench.builders.digits_domains import build_digits_domains

    with licensed(GivenLicence("cc-by-sa-4.0", attribution="Our copy")):
        out, _ = build_digits_domains(tmp_path / "dd", quiet=True, clients=4, fraction=0.02)
    assert json.loads((out / "hetbench.json").read_text())["licence"] == {"license": "cc-by-sa-4.0",
                                                                         "attribution": "Our copy"}
    assert _card_meta(out)["license"] == "cc-by-sa-4.0"
    card = (out / "README.md").read_text()
    assert "- Our copy" in card and "MNIST" in card  # the given credit first, the sources' credits kept


@pytest.mark.parametrize("command", [("build", "digits-domains", "--clients", "4", "--fraction", "0.02"),
                                     ("partition", "iid", "--clients", "4")])
def test_a_bad_licence_option_exits_2_before_anything_is_written(tmp_path, run_cli, command):
    out = tmp_path / "out"
    code, stdout, err = run_cli(*command, "--license", "cc-by-5.0", "--out", out)
    assert code == 2 and err.count("\n") == 1 and "--license 'cc-by-5.0'" in err and "--license-name" in err
    assert "Traceback" not in err and not out.exists() and stdout == ""


def test_every_command_that_writes_a_split_takes_the_licence_options():
    from hetbench.cli.build import build
    from hetbench.cli.partition import partition

    for group in (build, partition):
        for name, command in group.commands.items():
            options = {o for p in command.params for o in p.opts}
            assert {"--license", "--license-name", "--license-link", "--attribution"} <= options, f"{group.name} {name}"


@pytest.mark.slow
def test_your_own_raw_captures_published_with_their_licence_verify_and_keep_it_when_re_partitioned(tmp_path, run_cli):
    raws = shared_raw_copies(tmp_path)
    out = tmp_path / "mine"
    code, _, err = run_cli("build", "iso-isp", "--stages", "wb", "--size", "32", "--raw-dir", raws, "--out", out,
                           "--license", "other", "--license-name", "lab-raw-licence-1.0",
                           "--license-link", "https://example.org/lab-raw-licence", "--attribution",
                           "RAW captures: the Lab, 2026", "-q")
    assert code == 0, err
    meta = _card_meta(out)
    assert (meta["license"], meta["license_name"], meta["license_link"]) == (
        "other", "lab-raw-licence-1.0", "https://example.org/lab-raw-licence")
    card = (out / "README.md").read_text()
    assert "RAW captures: the Lab, 2026" in card and "does not know the licence" not in card
    assert run_cli("verify", out)[0] == 0

    # the split's fingerprint does not hold the licence: the same build without one has the same split
    plain = tmp_path / "plain"
    assert run_cli("build", "iso-isp", "--stages", "wb", "--size", "32", "--raw-dir", raws, "--out", plain, "-q")[0] == 0
    fingerprint = lambda f: json.loads((f / "hetbench.json").read_text())["split_fingerprint"]  # noqa: E731
    assert fingerprint(plain) == fingerprint(out) and _card_meta(plain)["license"] == "unknown"
    assert "give it when the split is written" in (plain / "README.md").read_text()

    again = tmp_path / "again"
    code, _, err = run_cli("partition", "dirichlet", "--dataset", out, "--clients", "2", "--out", again, "-q")
    assert code == 0, err
    assert json.loads((again / "hetbench.json").read_text())["licence"]["license_name"] == "lab-raw-licence-1.0"
    assert _card_meta(again)["license_link"] == "https://example.org/lab-raw-licence"
    assert run_cli("verify", again)[0] == 0

    card_path = out / "README.md"  # the trap the card used to set: editing the licence afterwards
    card_path.write_text(card.replace("license: other", "license: mit", 1))
    code, stdout, _ = run_cli("verify", out)
    assert code == 1 and "license" in stdout


def test_a_re_partition_cites_the_papers_of_the_build_it_re_partitions(tmp_path, run_cli):
    """A Dirichlet re-partition of a DapperFL-style domain build cites Hsu et al. (its own method) and DapperFL
    (the build's), and its card gives each split's row count in dataset_info.splits, as datasets reads it."""
    import datasets

    from hetbench.publish.citations import bibtex_keys

    build, again = tmp_path / "dd", tmp_path / "again"
    assert run_cli("build", "digits-domains", "--clients", "4", "--fraction", "0.02", "--out", build, "-q")[0] == 0
    code, _, err = run_cli("partition", "dirichlet", "--dataset", build, "--clients", "3", "--out", again, "-q")
    assert code == 0, err
    card = (again / "README.md").read_text()
    bib = card[card.index("```bibtex"):]
    keys = bibtex_keys(bib)
    assert keys[:3] == ["hsu2019measuring", "li2022federated", "jia2024dapperfl"] and keys[-1] == "hetbench", keys
    assert "the build it re-partitions (`domains`) from the next one" in card
    manifest = json.loads((again / "hetbench.json").read_text())
    splits = {s["name"]: s["num_examples"] for s in _card_meta(again)["dataset_info"]["splits"]}
    assert splits == {s: v["num_rows"] for s, v in manifest["splits"].items()}
    loaded = datasets.load_dataset(str(again))
    assert {s: loaded[s].num_rows for s in loaded} == splits
    assert run_cli("verify", again)[0] == 0


def test_the_rendered_photographs_cite_brooks_et_al_in_full():
    from hetbench.publish.attribution import card_licence
    from hetbench.publish.citations import bibtex_keys

    lic = card_licence("builtin:photos", None)
    keys = [bibtex_keys(b)[0] for b in lic.bibtex]
    assert "brooks2019unprocessing" in keys and "Brooks et al. 2019" in " ".join(lic.credits + (lic.note,))


def test_a_card_written_before_it_gave_row_counts_still_verifies(tmp_path, run_cli):
    """Folders built before cards carried dataset_info.splits verify as they did; wrong counts do not."""
    import re

    out = tmp_path / "iid"
    assert run_cli("partition", "iid", "--clients", "3", "--out", out, "-q")[0] == 0
    card = (out / "README.md").read_text()
    older = re.sub(r"  splits:\n(  - .*\n|    .*\n)*", "", card, count=1)
    assert older != card and "num_examples" not in older
    (out / "README.md").write_text(older)
    assert run_cli("verify", out)[0] == 0
    (out / "README.md").write_text(card.replace("num_examples: ", "num_examples: 1", 1))
    code, stdout, _ = run_cli("verify", out)
    assert code == 1 and "dataset_info.splits" in stdout


def test_a_licence_that_is_not_a_given_licence_is_refused_before_anything_is_written(tmp_path):
    from hetbench.partitioners import IIDPartitioner
    from hetbench.pipeline import make_split

    with pytest.raises(HetbenchError, match=r"must be a GivenLicence \(hetbench.publish.licence.given_licence\('mit'\)\)"):
        make_split("builtin:digits", IIDPartitioner(3), tmp_path / "x", quiet=True, licence="mit")
    with pytest.raises(HetbenchError, match="licence.license 'mine'"):
        make_split("builtin:digits", IIDPartitioner(3), tmp_path / "x", quiet=True, licence=GivenLicence("mine"))
    with pytest.raises(HetbenchError, match="must be a GivenLicence"):
        with licensed("cc-by-4.0"):
            pass
    assert not (tmp_path / "x").exists()


def test_relicensing_keeps_the_sources_terms_and_a_re_partition_keeps_the_makers_credit(tmp_path, run_cli):
    first, again = tmp_path / "first", tmp_path / "again"
    code, _, err = run_cli("partition", "iid", "--dataset", "builtin:mnist5k", "--clients", "3", "--out", first,
                           "--license", "cc-by-sa-4.0", "--attribution", "Curated by the Lab", "-q")
    assert code == 0, err
    card = (first / "README.md").read_text()
    assert "The source's own licence is `cc-by-sa-3.0`" in card  # what the data came under stays on the card
    code, _, err = run_cli("partition", "dirichlet", "--dataset", first, "--clients", "2", "--out", again,
                           "--license", "cc-by-sa-4.0", "-q")  # a licence again, no attribution: the maker's kept
    assert code == 0, err
    assert json.loads((again / "hetbench.json").read_text())["licence"] == {"license": "cc-by-sa-4.0",
                                                                           "attribution": "Curated by the Lab"}
    assert run_cli("verify", again)[0] == 0


def test_a_re_partition_written_before_sources_recorded_their_methods_still_verifies(tmp_path, run_cli):
    build, again = tmp_path / "dd", tmp_path / "again"
    assert run_cli("build", "digits-domains", "--clients", "4", "--fraction", "0.02", "--out", build, "-q")[0] == 0
    assert run_cli("partition", "iid", "--dataset", build, "--clients", "2", "--out", again, "-q")[0] == 0
    path = again / "hetbench.json"
    doc = json.loads(path.read_text())
    assert doc["source"].pop("methods") == ["domains"]
    path.write_text(json.dumps(doc, indent=1))
    code, stdout, _ = run_cli("verify", again)
    assert code == 0, stdout
