"""Fingerprints of every embedded output, so a refactor can prove it changed nothing a user sees.

Every command below runs on the embedded data (no inputs) with small settings; the digest of an
output folder is the sha256 of every file in it, keyed by its path relative to the folder. Parquet
files are also digested by content (their Arrow table with its schema metadata, as an IPC stream),
and that digest is the one compared when the installed pyarrow differs from the one that recorded
the fingerprints (pyarrow writes its version into every file; the manifest records each shard's
sha256, so it is compared without those then). PNG files are compared only under
the matplotlib version that recorded them, since another version draws other pixels. Training
results and the leaderboard CSV are compared without their wall-clock seconds and without the values of
their floats (trained numbers may differ in their last bits between CPUs): their keys, names, counts and
the place of every number.

Builds whose bits come from float training (:data:`FLOAT_TRAINED`: the task embedder trains a CNN,
whose last bits differ between CPUs, and the split follows its embeddings) are fingerprinted by what
does not depend on those bits: their file list (the split fingerprint in shard names masked), the
manifest's recipe, names and keys, and the report's keys. Everything else must be byte-identical on
every CPU: ``tests/test_cpu_independence.py`` rebuilds it all with the CPU-specific kernels of
numpy, OpenBLAS, OpenCV, MKL and ATen forced to other instruction sets (:data:`OTHER_CPUS`) and
compares with the same record.

Record (only on purpose, when an output is meant to change)::

    python tests/output_fingerprints.py --record

Digest the outputs under the current environment (what the CPU-independence test runs)::

    python tests/output_fingerprints.py --digest OUT.json
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable

RECORD = Path(__file__).with_name("data") / "output_fingerprints.json"

# name -> CLI arguments (the output folder is appended as --out)
BUILDS: dict[str, list[str]] = {
    "partition-iid": ["partition", "iid", "--clients", "10"],
    "partition-dirichlet-client": ["partition", "dirichlet", "--alpha", "0.1", "--clients", "20"],
    "partition-dirichlet-class": ["partition", "dirichlet", "--scheme", "class", "--alpha", "0.5", "--min-size", "5",
                                  "--test-split", "client"],
    "partition-shards": ["partition", "shards", "--clients", "20"],
    "partition-classes-per-client": ["partition", "classes-per-client", "--clients", "20", "--dataset", "builtin:mnist5k"],
    "partition-natural-id": ["partition", "natural-id"],
    "partition-embedding-hog": ["partition", "embedding", "--alpha", "0.1", "--clusters", "8", "--embedder", "hog"],
    "partition-embedding-task": ["partition", "embedding", "--alpha", "0.5", "--clusters", "5", "--embedder", "task:1"],
    "partition-semantic": ["partition", "semantic", "--clients", "4"],
    "partition-domains": ["partition", "domains", "--clients", "8", "--fraction", "0.05"],
    "partition-quantity": ["partition", "quantity", "--size-dist", "dirichlet", "--beta", "0.5", "--clients", "10"],
    "partition-feature-noise": ["partition", "feature-noise", "--sigma", "0.1", "--clients", "5"],
    "partition-label-noise": ["partition", "label-noise", "--rate", "0.2", "--kind", "pair", "--clients", "5"],
    "build-iso-isp": ["build", "iso-isp", "--stages", "wb,tone", "--size", "32", "--crops-per-photo", "1", "--crop-size", "96"],
    "build-devices": ["build", "devices", "--clients", "12", "--size", "32", "--crops-per-photo", "1", "--crop-size", "96"],
    "build-synthetic-color": ["build", "devices", "--synthetic-color", "3", "--clients", "6"],
    "build-geo": ["build", "geo", "--nmax", "1000"],
    "build-users": ["build", "users"],
    "build-digits-domains": ["build", "digits-domains", "--clients", "8", "--fraction", "0.05"],
}
#: builds whose bits follow float training (module notes) -> why
FLOAT_TRAINED = {
    "partition-embedding-task": "the task embedder trains a CNN: its embeddings, and so the split, differ between CPUs",
}
#: kernels of another CPU: numpy's dispatch to its SSE4.2 baseline, OpenBLAS's Sandy Bridge (AVX) kernels,
#: OpenCV and MKL without AVX, ATen's default (no vector) kernels
#: other CPUs, imitated by forcing each library's CPU-specific kernels down, spelled as each library
#: spells them (OpenCV: ``AVX512-SKX``; numpy: ``X86_V4``); :data:`TOOK_EFFECT` checks each one works
OTHER_CPUS: dict[str, dict[str, str]] = {
    # an AVX2 machine without AVX-512 (a Zen 2/3 EPYC, a Haswell...): numpy's X86_V3 path
    "avx2": {
        "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
        "OPENBLAS_CORETYPE": "Haswell",
        "OPENCV_CPU_DISABLE": "AVX512-SKX,AVX512-CLX,AVX512-ICL,AVX_VNNI",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ATEN_CPU_CAPABILITY": "avx2",
    },
    # the x86-64 baseline (SSE): numpy's baseline path
    "baseline": {
        "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
        "OPENBLAS_CORETYPE": "Nehalem",
        "OPENCV_CPU_DISABLE": "AVX512-SKX,AVX512-CLX,AVX512-ICL,AVX_VNNI,AVX2,FP16,AVX,SSE4.2,SSE4.1",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ATEN_CPU_CAPABILITY": "default",
    },
}
#: the variables any imitation sets (removed from the environment of a native run)
OTHER_CPU_VARIABLES = sorted({k for env in OTHER_CPUS.values() for k in env})
#: prints what each library runs with, to check that an imitation took effect
TOOK_EFFECT = """
import json, cv2, numpy, torch
from numpy._core._multiarray_umath import __cpu_features__
from threadpoolctl import threadpool_info
print(json.dumps({
    "numpy_disabled": sorted(k for k in ("X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR") if not __cpu_features__.get(k)),
    "opencv": cv2.getCPUFeaturesLine(),
    "openblas": sorted({str(i.get("architecture")) for i in threadpool_info() if i.get("internal_api") == "openblas"}),
    "aten": torch.backends.cpu.get_cpu_capability(),
}))
"""


# the trainer and leaderboard on one of the builds above
TRAIN_ON = "partition-dirichlet-client"
TRAIN = ["train", "--algo", "fedavg,fedprox", "--rounds", "2", "--clients-per-round", "4", "--batch-size", "16", "--seed", "0"]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _parquet_content(path: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return _sha(sink.getvalue().to_pybytes())


def _without_timing(obj: Any) -> Any:
    """A results document less its wall-clock seconds (keys ``timing`` and ``*_s``) and with every float a
    placeholder: float training may differ in its last bits between CPUs (the brief: no test depends on them
    across machines), so a trained number is fingerprinted by where it is, never by its value."""
    if isinstance(obj, dict):
        return {k: _without_timing(v) for k, v in obj.items() if k != "timing" and not k.endswith("_s")}
    if isinstance(obj, list):
        return [_without_timing(v) for v in obj]
    return "<float>" if isinstance(obj, float) else obj


def _result_content(path: Path) -> str:
    return _sha(json.dumps(_without_timing(json.loads(path.read_text())), sort_keys=True).encode())


def _leaderboard_content(path: Path) -> str:
    """The leaderboard CSV less its wall-time and settled columns (whether a trained curve settled rests on its
    floats' last bits when it lies at the rule's edge), every cell that reads as a decimal number a placeholder
    (trained numbers: :func:`_without_timing`)."""
    import csv
    import io
    import re

    rows = list(csv.reader(io.StringIO(path.read_text())))
    keep = [i for i, col in enumerate(rows[0]) if "wall_time" not in col and col != "settled"]
    decimal = re.compile(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?|nan|inf")
    cells = [[("<number>" if k and decimal.fullmatch(r[i]) and "." in r[i] else r[i]) for i in keep]
             for k, r in enumerate(rows)]
    return _sha(json.dumps(cells).encode())


def _manifest_content(path: Path) -> str:
    """The manifest less its per-shard file hashes, which depend on the pyarrow version, and less its record of
    the library versions it was built with (``built_with``: a record of the machine, not of the split)."""
    doc = json.loads(path.read_text())
    doc.pop("built_with", None)
    for info in doc.get("splits", {}).values():
        info.pop("file_sha256", None)
    return _sha(json.dumps(doc, sort_keys=True).encode())


def digest_folder(folder: Path) -> dict[str, dict[str, str]]:
    """path -> {"bytes": sha256, "content": sha256 of the content where it is version-independent}."""
    out: dict[str, dict[str, str]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        entry = {"bytes": _sha(path.read_bytes())}
        if path.suffix == ".parquet":
            entry["content"] = _parquet_content(path)
        elif path.name == "hetbench.json":
            entry["content"] = _manifest_content(path)
        out[rel] = entry
    return out


def digest_float_folder(folder: Path) -> dict[str, dict[str, str]]:
    """What a :data:`FLOAT_TRAINED` build holds whatever the CPU: its files (the split fingerprint in
    shard names masked), the manifest's recipe, names and keys, and the report's keys."""
    import re

    manifest = json.loads((folder / "hetbench.json").read_text())
    mask = manifest["split_fingerprint"][:12]
    out: dict[str, dict[str, str]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        out[re.sub(mask, "<fingerprint>", path.relative_to(folder).as_posix())] = {"present": "yes"}
    kept = {k: manifest[k] for k in ("recipe", "num_clients", "client_names", "class_names", "source", "format")}
    kept["keys"] = sorted(k for k in manifest if k != "built_with")  # a record of the machine, not of the split
    out["hetbench.json"] = {"content": _sha(json.dumps(kept, sort_keys=True).encode())}
    out["report.json"] = {"content": _sha(json.dumps(sorted(json.loads((folder / "report.json").read_text()))).encode())}
    return out


def digest_results(folder: Path) -> dict[str, dict[str, str]]:
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        out[rel] = {"content": _result_content(path)} if path.suffix == ".json" else {"bytes": _sha(path.read_bytes())}
    return out


def versions() -> dict[str, str]:
    import matplotlib
    import pyarrow

    return {"pyarrow": pyarrow.__version__, "matplotlib": matplotlib.__version__}


def build_all(root: Path, run: Callable[..., Any], names: list[str] | None = None) -> dict[str, Any]:
    """Run every build (or ``names``) inside ``root`` with ``run(*args)``; return the digests.

    Paths are relative to ``root`` (the working directory meanwhile), since results record them.
    """
    import os

    digests: dict[str, Any] = {}
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for name in names or list(BUILDS):
            run(*BUILDS[name], "--out", name, "--quiet")
            digests[name] = (digest_float_folder if name in FLOAT_TRAINED else digest_folder)(root / name)
        if names is None or TRAIN_ON in names:
            run(*TRAIN, "--split", TRAIN_ON, "--out", "results", "--quiet")
            run("leaderboard", "results", "--out", "leaderboard")
            digests["train"] = digest_results(root / "results")
            digests["leaderboard"] = {"leaderboard.csv": {"content": _leaderboard_content(root / "leaderboard" / "leaderboard.csv")}}
    finally:
        os.chdir(cwd)
    return digests


def compare(recorded: dict[str, Any], now: dict[str, Any], same: dict[str, bool]) -> list[str]:
    """Differences as lines ("<build>/<file>: ..."); empty when every output matches."""
    problems = []
    for name, files in now.items():
        want = recorded["outputs"].get(name)
        if want is None:
            problems.append(f"{name}: no recorded fingerprint")
            continue
        for rel in sorted(set(want) | set(files)):
            if rel not in files:
                problems.append(f"{name}/{rel}: missing")
            elif rel not in want:
                problems.append(f"{name}/{rel}: new file")
            elif rel.endswith(".png") and not same["matplotlib"]:
                continue
            elif rel.endswith("hetbench.json") or (rel.endswith(".parquet") and not same["pyarrow"]):
                # the manifest by content: its built_with records this machine's libraries
                if files[rel]["content"] != want[rel]["content"]:
                    problems.append(f"{name}/{rel}: content differs")
            elif files[rel] != want[rel]:
                problems.append(f"{name}/{rel}: differs")
    return problems


def _cli_run(*args: str) -> None:
    from hetbench.cli.main import main

    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"hetbench {' '.join(args)} exited {exc.code}") from None


if __name__ == "__main__":  # pragma: no cover - recording is a deliberate, manual step
    import os
    import tempfile

    if sys.argv[1:] != ["--record"] and (len(sys.argv) != 3 or sys.argv[1] != "--digest"):
        sys.exit("usage: python tests/output_fingerprints.py --record | --digest OUT.json")
    os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="hetbench-hf-"))
    os.environ["HF_DATASETS_OFFLINE"] = os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("MPLBACKEND", "Agg")
    with tempfile.TemporaryDirectory() as tmp:
        doc = {"versions": versions(), "outputs": build_all(Path(tmp), _cli_run)}
    target = RECORD if sys.argv[1] == "--record" else Path(sys.argv[2])
    target.parent.mkdir(exist_ok=True)
    target.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{'recorded' if target == RECORD else 'digested'} {len(doc['outputs'])} outputs in {target}")
