"""``hetbench verify`` on mutated manifests (issue 25, item 10): every key at every depth of a real
build's ``hetbench.json`` deleted, retyped and replaced, for a plain partition build and an ``iso-isp``
build. Whatever the mutation, verify answers in one line with exit code 1 (FAILED) or 2 (CANNOT CHECK),
never a traceback (which exits 1, the code of a tampered folder). A few keys verify does not read
(:data:`UNREAD`) may still give OK."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

#: values a retype puts in place of another type's
OTHER_TYPES = [None, True, 0, -1, 2**63, 10**30, 1.5, 1e308, "", "x", "../../etc/passwd", [], ["a"], [None], {},
               {"a": 1}]
#: manifest keys verify does not read, so that a mutation of them may give OK: the version of hetbench
#: that wrote the folder and the library versions of the machine that built it (built_with) are information
#: (a newer hetbench verifies an older folder; another machine verifies this one; a FAILED line only names the
#: recorded versions that differ, whatever their shape); every other key is checked, against the folder or
#: against what re-running the recipe gives
UNREAD = (r"hetbench_version", r"built_with(\..+)?")
#: keys whose mutation may leave the recipe's meaning as it was: none (verify compares the whole recipe)
SAME_MEANING: tuple[str, ...] = ()


def _paths(obj: Any, prefix: tuple = ()) -> Iterator[tuple]:
    if prefix:
        yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _replacements(old: Any) -> list[Any]:
    """Values of ``old``'s type, none equal to it."""
    if isinstance(old, bool):
        out = [not old]
    elif isinstance(old, int):
        out = [0, -1, old + 1, 2**40]
    elif isinstance(old, float):
        out = [0.0, -1.0, old * 2 + 0.5]
    elif isinstance(old, str):
        out = ["", old[::-1], old + "x", "a" * 300]
    elif isinstance(old, list):
        out = [[], old[:1], old + old[:1], old[::-1]]
    elif isinstance(old, dict):
        out = [{}, dict(list(old.items())[:1])]
    else:
        out = ["x"]
    return [v for v in out if not (v == old and type(v) is type(old))]


def mutations(manifest: dict, per_path: int) -> Iterator[tuple[str, dict]]:
    """(description, mutated manifest): for every key and list item at every depth, a deletion and
    ``per_path - 1`` retypes and replacements, chosen deterministically."""
    for n, path in enumerate(_paths(manifest)):
        old = manifest
        for p in path:
            old = old[p]
        others = [v for v in OTHER_TYPES if type(v) is not type(old)]
        candidates = [("retype", others[(n + i) % len(others)]) for i in range(2)] + [
            ("replace", v) for v in _replacements(old)] + ([("add-key", {**old, "zz": 1})] if isinstance(old, dict) else [])
        for op, value in [("delete", None)] + candidates[: per_path - 1]:
            m = copy.deepcopy(manifest)
            parent = m
            for p in path[:-1]:
                parent = parent[p]
            if op == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
            yield f"{op} {'.'.join(map(str, path))}", m


def _key(description: str) -> str:
    return re.sub(r"\.\d+(?=\.|$)", ".N", description.split(" ", 1)[1])


def _may_pass(description: str) -> bool:
    """An unread key, one whose change may keep the meaning, or an added unknown key (ignored by design)."""
    key = _key(description)
    return description.startswith("add-key") or any(re.fullmatch(p, key) for p in UNREAD + SAME_MEANING)


def _verify_every_mutation(folder: Path, per_path: int, run_cli) -> tuple[int, list[str]]:
    path = folder / "hetbench.json"
    original = path.read_text()
    manifest = json.loads(original)
    bad, count = [], 0
    try:
        for description, mutated in mutations(manifest, per_path):
            path.write_text(json.dumps(mutated))
            count += 1
            try:
                code, out, err = run_cli("verify", folder)
            except Exception as exc:  # a traceback in-process
                bad.append(f"{description}: {type(exc).__name__}: {exc}")
                continue
            lines = (out + err).strip().splitlines()
            if "Traceback" in err or len(lines) != 1:
                bad.append(f"{description}: {len(lines)} lines: {(out + err)[-300:]!r}")
            elif code not in (1, 2) and not (code == 0 and _may_pass(description)):
                bad.append(f"{description}: exit {code}: {lines[0][:200]}")
    finally:
        path.write_text(original)
    return count, bad


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    from hetbench.cli.main import main

    root = tmp_path_factory.mktemp("mutated")
    out = {}
    for name, args in {"iid": ["partition", "iid", "--clients", "5"],
                       "iso-isp": ["build", "iso-isp", "--size", "32", "--crops-per-photo", "1", "--crop-size", "96"]}.items():
        with pytest.raises(SystemExit) as exc:
            main([*args, "--out", str(root / name), "-q"])
        assert exc.value.code == 0
        out[name] = root / name
    return out


def test_the_mutations_cover_every_depth(builds):
    manifest = json.loads((builds["iso-isp"] / "hetbench.json").read_text())
    touched = {_key(d) for d, _ in mutations(manifest, 3)}
    where = "build" if "build" in manifest["recipe"] else "partition"  # format 4, or 3 (the builder's recipe)
    assert f"recipe.{where}.params.crops_per_photo" in touched and "splits.train.column_sha256.image" in touched
    assert "client_names.N" in touched and "recipe.partition.params.weights.baseline" in touched


@pytest.mark.parametrize("build, per_path", [("iid", 5), ("iso-isp", 3)])
def test_verify_answers_every_mutated_manifest_in_one_line_without_a_traceback(build, per_path, builds, run_cli):
    count, bad = _verify_every_mutation(builds[build], per_path, run_cli)
    assert count >= 250, count
    assert not bad, f"{len(bad)} of {count} mutations:\n" + "\n".join(bad)
    code, out, _ = run_cli("verify", builds[build])
    assert code == 0 and out.startswith("OK"), out


def test_a_manifest_asking_for_a_million_crops_cannot_be_checked(builds, run_cli):
    path = builds["iso-isp"] / "hetbench.json"
    original = path.read_text()
    manifest = json.loads(original)
    (manifest["recipe"].get("build") or manifest["recipe"]["partition"])["params"]["crops_per_photo"] = 10**6
    path.write_text(json.dumps(manifest))
    try:
        code, out, err = run_cli("verify", builds["iso-isp"])
    finally:
        path.write_text(original)
    assert code == 2 and len((out + err).strip().splitlines()) == 1, out + err
    assert (out + err).strip() == "CANNOT CHECK: --crops-per-photo must be an integer between 1 and 500 (got 1000000)"
