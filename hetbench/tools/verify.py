"""``hetbench verify``: does a built folder hold what its manifest and its recipe say?

The checks run in order and the first mismatch is reported in one line naming the split, file,
column and, where cheap, row:

1. the folder alone (:mod:`hetbench.tools.folder_checks`): the manifest is well formed, every
   path it names stays inside the folder, the per-client sample ids hash to ``assignment_sha256``,
   the folder and its card hold exactly the listed shards, every shard has its recorded sha256 and
   every column of every split its recorded content digest, and ``num_clients``, ``client_names``
   and ``class_names`` agree with the rows;
2. the recipe: the source, loaded again (or re-rendered by its builder), has the recorded input
   fingerprint; re-running the recipe gives the recorded partition and split fingerprints, sample
   ids, client and class names, and rows whose content digests, computed as the writer would write
   them, equal the recorded ones (this catches a source file replaced by other content).

The :class:`Verdict` says OK (exit code 0), FAILED (1: the folder does not hold what its manifest
and recipe say) or CANNOT CHECK (2: a malformed manifest, an unsafe path, a missing source).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from hetbench.errors import HetbenchError, SourceChanged
from hetbench.publish.digest import BLOCK_ROWS, first_differing_block
from hetbench.tools.folder_checks import Mismatch, SplitData, check_folder
from hetbench.contract import read_manifest, shard_paths
from hetbench.publish.manifest import client_sample_ids, sample_id_table, sample_ids_digest


@dataclass(frozen=True)
class Verdict:
    """The outcome of :func:`verify_folder`.

    Parameters
    ----------
    ok : bool
        The folder holds what its manifest and recipe say.
    message : str
        One line: ``OK: ...``, ``FAILED: ...`` or ``CANNOT CHECK: ...``.
    exit_code : int, optional
        0 OK, 1 FAILED, 2 cannot check (default: 0 if ``ok`` else 1).

    Examples
    --------
    >>> Verdict(False, "FAILED: x").exit_code, Verdict(True, "OK").exit_code
    (1, 0)
    """

    ok: bool
    message: str
    exit_code: int = -1
    #: the bad input behind a ``CANNOT CHECK`` (its parameters named in Python terms in ``message``)
    cause: HetbenchError | None = None

    def __post_init__(self) -> None:
        if self.exit_code == -1:
            object.__setattr__(self, "exit_code", 0 if self.ok else 1)

    def naming(self, flag_of: Callable[[str], str | None]) -> str:
        """The message with the cause's parameters named by ``flag_of`` (the command line's flags)."""
        return self.message if self.cause is None else f"CANNOT CHECK: {self.cause.naming(flag_of)}"


#: recipe method -> function re-running a build that renders its own rows (``hetbench.builders.rebuilders()``)
Rebuilders = Mapping[str, Callable[[dict], Any]]


#: embedders whose code is a user's (a model file or a module): verify never runs them unless trusted
USER_EMBEDDERS = ("torch", "torchscript", "onnx")
#: embedders that train a network: their bits differ between CPUs, so re-embedding measures drift
TRAINED_EMBEDDERS = ("task",)
#: a re-embedding by a deterministic embedder may differ from the stored one by float rounding only
ROUNDING = 1e-5


def embedder_of(manifest: dict) -> str | None:
    """The embedder spec of an embedding (or semantic) split's recipe, else None."""
    params = manifest.get("recipe", {}).get("partition", {}).get("params")
    spec = params.get("embedder") if isinstance(params, dict) else None
    return spec if isinstance(spec, str) else None


def rebuild(manifest: dict, dataset: str | None = None, rebuilders: Rebuilders | None = None,
            stored_embeddings: dict | None = None, trust_embedder: bool = False):
    """Re-run a manifest's recipe on its source (or on ``dataset``): returns the FederatedSplit.

    A split whose rows a builder rendered (its recipe method is in ``rebuilders``) is re-rendered by
    that builder; the layer above passes the builders in, so this module never imports them. A
    source whose input fingerprint differs from the recorded one raises :class:`SourceChanged`. An
    embedding split is re-derived from ``stored_embeddings`` (the folder's) when given; without
    them, a user's embedder (``torch:``, ``torchscript:``, ``onnx:``) is run only if
    ``trust_embedder``: nothing a folder names is imported or loaded otherwise.
    """
    from hetbench.partitioners import get_partitioner
    from hetbench.sources import load_table
    from hetbench.splits import build_split

    from hetbench.local_paths import is_local_name
    from hetbench.contract import recorded_build

    build = recorded_build(manifest)
    method = build["method"]
    builder = (rebuilders or {}).get(method)
    named = [(k, v) for k, v in (build["params"] or {}).items() if is_local_name(v)] if builder else []
    if named:
        raise HetbenchError(f"this folder was built from files of another machine ({named[0][0]} '{named[0][1]}'); verify it "
                            "there, beside its .hetbench-local.json")
    if builder is not None:  # a builder renders its own table: re-run the whole build
        return builder(manifest)
    src = manifest["source"]
    if not isinstance(dataset or src.get("dataset"), str):
        raise HetbenchError("hetbench.json is malformed: 'source.dataset' is missing; pass `dataset`")
    if dataset is None and is_local_name(src["dataset"]):
        raise HetbenchError(f"the source '{src['dataset']}' is a file of the machine that built this folder; pass "
                            "`dataset` with its path here")
    table = load_table(dataset or src["dataset"], src.get("label_col"), src.get("id_col"))
    if table.fingerprint != manifest.get("input_fingerprint"):
        raise SourceChanged(
            f"the source '{dataset or src['dataset']}' differs from the one this split was built from "
            "(input fingerprint mismatch)"
        )
    recipe = manifest["recipe"]
    part = recipe["partition"]
    partitioner = get_partitioner(part["method"], part["params"])
    spec = embedder_of(manifest)
    if stored_embeddings:
        partitioner.stored_embeddings = stored_embeddings
    elif spec is not None and spec.partition(":")[0] in USER_EMBEDDERS and not trust_embedder:
        raise HetbenchError(f"this folder stores no embeddings and its embedder '{spec}' is a user's model; verify "
                            "runs no code a folder names: pass `trust_embedder` to run it")
    return build_split(
        table,
        partitioner,
        seed=part["seed"],
        test_split=recipe["test_split"],
        test_fraction=recipe.get("test_fraction") or 0.2,
        train_split=recipe.get("train_split", "train"),
        allow_empty=bool(recipe.get("allow_empty", False)),
        count_training_rows=False,  # the recipe records the hold-out its sizes counted with
    )


def _short(value: Any) -> str:
    if isinstance(value, dict) and "bytes" in value:
        value = value["bytes"]
    if isinstance(value, (bytes, bytearray)):
        return f"{len(value):,} bytes"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _first_row(folder: Path, manifest: dict, fs, split: str, column: str, features, block: int) -> str:
    """' row N (file F): V in the folder, W rebuilt' for the first differing row of a block."""
    import pyarrow.parquet as pq

    from hetbench.publish.parquet import output_batches

    lo = block * BLOCK_ROWS
    hi = min(len(fs.outputs[split]), lo + BLOCK_ROWS)
    rebuilt = [v for t in output_batches(fs, split, features, lo, hi) for v in t.column(column).to_pylist()]
    start, folder_rows, where = 0, [], {}
    for path, rel in zip(shard_paths(folder, manifest, split), manifest["splits"][split]["files"]):
        n = pq.ParquetFile(path).metadata.num_rows
        if start + n > lo and start < hi:
            col = pq.read_table(path, columns=[column]).column(column).slice(max(lo - start, 0), hi - max(lo, start))
            where.update({start + max(lo - start, 0) + i: rel for i in range(len(col))})
            folder_rows += col.to_pylist()
        start += n
    for i, (a, b) in enumerate(zip(folder_rows, rebuilt)):
        if a != b:
            return f", row {lo + i} (file {where.get(lo + i, '?')}): {_short(a)} in the folder, {_short(b)} rebuilt"
    return f", rows {lo}-{hi - 1}"


def legacy_layout(fs, recorded: dict | None = None):
    """The split as formats 2 and 3 recorded it: a builder's method and parameters in place of the
    partitioner's in both recipes (format 4 keeps them apart: the recipe's ``build``), and a local
    path as the recipe gave it where format 4 records ``local:<name>`` (``recorded``: the folder's
    manifest, whose value is kept when it names the same file), so that their fingerprints can be
    compared.

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.sources import load_table
    >>> from hetbench.splits import build_split
    >>> fs = build_split(load_table("builtin:digits"), IIDPartitioner(2))
    >>> legacy_layout(fs) is fs
    True
    """
    import dataclasses
    import os

    build = fs.recipe.get("build")
    if not build and not fs.local_paths:
        return fs
    old_part = ((recorded or {}).get("recipe") or {}).get("partition") or {}
    old_params = old_part.get("params") if isinstance(old_part.get("params"), dict) else {}
    params = dict(build["params"]) if build else dict(fs.partition.recipe["params"])
    for key, local in fs.local_paths.items():  # recipe.build.params.x or recipe.partition.params.x
        name = key.rpartition(".")[2]
        given = old_params.get(name)
        if name in params and isinstance(given, str):
            kind, _, arg = given.partition(":")
            same = os.path.abspath(given) == local or (name == "embedder" and os.path.abspath(arg) == local)
            params[name] = given if same else params[name]
    updates = {"params": params} | ({"method": build["method"]} if build else {})
    part = fs.partition.with_recipe(**updates)
    recipe = {k: v for k, v in fs.recipe.items() if k != "build"}
    recipe["partition"] = part.recipe
    return dataclasses.replace(fs, partition=part, recipe=recipe)


def _check_recorded(manifest: dict, fs, dataset_given: bool) -> None:
    """Every other entry the manifest records equals what the re-run gives: the whole recipe (a
    builder's and its partitioner's), the source (its dataset unless ``--dataset`` named another
    copy), the dropped rows, each split's source split and row count, the sample-id row count."""
    import json

    from hetbench.local_paths import publicise
    from hetbench.publish.published_files import first_difference

    source = publicise(fs.table.source, "source")[0]
    source.pop("licence", None)  # an inherited licence is the manifest's 'licence', checked with the card
    expected: dict[str, Any] = {"recipe": fs.recipe, "dropped": fs.dropped, "source": source,
                                "splits": {s: {"source_split": r.source_split, "num_rows": len(r)} for s, r in fs.outputs.items()}}
    recorded: dict[str, Any] = {"recipe": manifest["recipe"], "dropped": manifest.get("dropped"),
                                "source": dict(manifest["source"]),
                                "splits": {s: {k: info.get(k) for k in ("source_split", "num_rows")}
                                           for s, info in manifest["splits"].items()}}
    if "methods" not in recorded["source"]:  # a re-partition written before sources recorded what made them
        expected["source"].pop("methods", None)
    if dataset_given:
        recorded["source"].pop("dataset", None)
        expected["source"] = {k: v for k, v in source.items() if k != "dataset"}
    if manifest.get("format", 2) >= 3:
        expected["sample_ids.num_rows"] = sum(len(r) for r in fs.outputs.values())
        recorded["sample_ids.num_rows"] = manifest["sample_ids"].get("num_rows")
    where = first_difference(json.loads(json.dumps(recorded)), json.loads(json.dumps(expected)))
    if where:
        raise Mismatch(f"hetbench.json's '{where}' differs from what re-running the recipe gives")


def _check_rebuilt(folder: Path, manifest: dict, fs, data: dict[str, SplitData], dataset_given: bool = False) -> list[str]:
    """The recipe re-run gives the recorded fingerprints, names and column digests; returns the
    folder's columns that the re-run cannot derive (checked against the manifest only)."""
    from hetbench.publish.parquet import output_features, split_content

    if fs.partition.fingerprint != manifest["partition_fingerprint"]:
        raise Mismatch("re-running the recipe gives a different partition (partition fingerprint mismatch)")
    if fs.fingerprint != manifest["split_fingerprint"]:
        raise Mismatch("re-running the recipe gives different splits (split fingerprint mismatch)")
    if manifest.get("format", 2) < 3:
        same_ids = client_sample_ids(fs) == manifest["sample_ids"]
    else:
        same_ids = sample_ids_digest(sample_id_table(fs)) == manifest["assignment_sha256"]
    if not same_ids:
        raise Mismatch("the manifest's per-client sample ids differ from the recomputed ones")
    for key, now in (("num_clients", fs.num_clients), ("client_names", list(fs.client_names)),
                     ("class_names", list(fs.class_names))):
        if manifest[key] != now:
            raise Mismatch(f"{key} in hetbench.json differ from the ones re-running the recipe gives")
    if set(fs.outputs) != set(manifest["splits"]):
        raise Mismatch(f"re-running the recipe gives the splits {', '.join(sorted(fs.outputs))}")
    _check_recorded(manifest, fs, dataset_given)
    features = output_features(fs)
    unchecked: set[str] = set()
    for split in fs.outputs:
        rebuilt = split_content(fs, split, features, keep_blocks=True)
        recorded = manifest["splits"][split]["column_sha256"]
        now = rebuilt.columns()
        for col in now:
            if col in recorded and recorded[col] != now[col]:
                block = first_differing_block(data[split].digest.blocks(col), rebuilt.blocks(col))
                row = _first_row(folder, manifest, fs, split, col, features, block or 0)
                raise Mismatch(f"split '{split}', column '{col}'{row} (re-running the recipe on the source gives other rows)")
        # a builder that is no rebuilder may rename source columns (same digest) or add its own
        # (S2 cells, images from --image-root): those are checked against the manifest only
        renamed = {recorded[c] for c in recorded if c not in now} & {now[c] for c in now if c not in recorded}
        lost = [c for c in now if c not in recorded and now[c] not in renamed]
        if lost:
            raise Mismatch(f"split '{split}', column '{lost[0]}': re-running the recipe gives it, the folder holds no column with its content")
        unchecked |= {c for c in recorded if c not in now and recorded[c] not in renamed}
    return sorted(unchecked)


def _re_embed(fs, manifest: dict, stored: dict, trust_embedder: bool, re_embed: bool) -> str:
    """The re-embedding check (module notes): '' or a note for the OK line; raises :class:`Mismatch`
    when a deterministic embedder gives other embeddings than the stored ones."""
    from hetbench.partitioners import get_partitioner
    from hetbench.partitioners.embedding import embed_rows
    from hetbench.publish.embeddings import embedding_drift

    spec = embedder_of(manifest)
    if not stored or spec is None:
        return ""
    kind = spec.partition(":")[0]
    trained, user = kind in TRAINED_EMBEDDERS, kind in USER_EMBEDDERS
    if user and not trust_embedder:
        return (f"; the stored embeddings were checked by digest and re-derive the partition (embedder '{spec}' is a "
                "user's model: --trust-embedder re-runs it)")
    if trained and not re_embed:
        return ("; the stored embeddings were checked by digest and re-derive the partition (the task embedder "
                "trains a network, whose bits differ between CPUs: --re-embed measures the drift here)")
    split = fs.outputs["train"].source_split
    part = manifest["recipe"]["partition"]
    again = embed_rows(fs.table, split, spec, part["params"].get("layer"))
    probe = get_partitioner(part["method"], part["params"])
    drift = embedding_drift(stored[split], again, None, None)
    if hasattr(probe, "predict_clusters") and drift["identical"] < 1:
        probe.stored_embeddings = stored
        probe.partition(fs.table, part["seed"], split)  # the stored embeddings' fit
        probe.stored_embeddings = {split: again}
        drift = embedding_drift(stored[split], again, probe.last_clusters[split], probe.predict_clusters(fs.table, split))
    if drift["identical"]:
        return f"; re-embedding the source with '{spec}' here gives the stored embeddings bit for bit"
    agree = f", clusters agree on {100 * drift['cluster_agreement']:.2f}% of rows" if "cluster_agreement" in drift else ""
    if not (trained or user) and drift["relative"] > ROUNDING:
        raise Mismatch(f"the stored embeddings of split '{split}' are not what '{spec}' gives on the source (largest "
                       f"difference {drift['max_abs_diff']:.3g}{agree})")
    why = "float training differs between CPUs" if trained else ("a model's float arithmetic differs between CPUs"
                                                                  if user else "float rounding of this CPU")
    return (f"; re-embedding the source with '{spec}' here: largest difference {drift['max_abs_diff']:.3g} "
            f"({100 * drift['relative']:.2g}% of the largest value){agree} ({why}; not a failure)")


def verify_folder(folder: str | Path, dataset: str | None = None, rebuilders: Rebuilders | None = None,
                  *, re_embed: bool = False, trust_embedder: bool = False) -> Verdict:
    """Check a built folder against its manifest and its source (module notes).

    Parameters
    ----------
    folder : path
        A folder written by :func:`hetbench.publish.publish_split`.
    dataset : str, optional
        Load the source from here instead of the manifest's ``source.dataset``.
    rebuilders : mapping, optional
        Recipe method -> function re-rendering a build (``hetbench.builders.rebuilders()``).
    re_embed : bool
        Embedding splits of a trained embedder (``task``): embed the source again and report how
        far that is from the stored embeddings (never a failure: float training differs by CPU).
    trust_embedder : bool
        Embedding splits of a user's model (``torch:``, ``torchscript:``, ``onnx:``): run it (it is
        code the folder names) and report the drift; without it the model is never loaded.

    Returns
    -------
    Verdict
        Never raises on a mismatch or on bad input: ``exit_code`` 0 OK, 1 FAILED, 2 CANNOT CHECK.

    Examples
    --------
    >>> from hetbench.partitioners import IIDPartitioner
    >>> from hetbench.pipeline import make_split
    >>> _ = make_split("builtin:digits", IIDPartitioner(4), "digits-iid-verify", quiet=True)
    >>> verify_folder("digits-iid-verify").message[:3]
    'OK:'
    >>> verify_folder("no-such-folder").exit_code
    2
    """
    from hetbench.local_paths import restore
    from hetbench.contract.embeddings import read_embeddings
    from hetbench.publish.published_files import check_card, check_files, check_report

    folder = Path(folder)
    manifest: dict = {}
    try:
        manifest = read_manifest(folder)
        data = check_folder(folder, manifest)
        check_files(folder, manifest)
        stored = read_embeddings(folder, manifest)
        local = restore(manifest, folder)  # the recipe's local inputs, from the unpublished sidecar
        try:
            fs = rebuild(local, dataset, rebuilders, stored, trust_embedder)
        except SourceChanged as exc:
            raise Mismatch(str(exc)) from exc
        fs = legacy_layout(fs, manifest) if manifest.get("format", 2) < 4 else fs  # formats 2, 3: old layout
        unchecked = _check_rebuilt(folder, manifest, fs, data, dataset is not None or manifest.get("format", 2) < 4)
        check_card(folder, fs, manifest, next(iter(data.values())).features)
        check_report(folder, fs, manifest)
        embedded = _re_embed(fs, local, stored, trust_embedder, re_embed or trust_embedder)
    except Mismatch as exc:
        from hetbench.publish.libraries import version_note

        return Verdict(False, f"FAILED: {exc}{version_note(manifest)}", 1)
    except HetbenchError as exc:
        return Verdict(False, f"CANNOT CHECK: {exc}", 2, exc)
    except OSError as exc:
        return Verdict(False, f"CANNOT CHECK: cannot read '{folder}': {exc.strerror or exc}", 2)
    n = sum(len(r) for r in fs.outputs.values())
    note = (f" ({'columns' if len(unchecked) > 1 else 'column'} {', '.join(unchecked)} checked against the manifest "
            "only: the source alone does not give them)") if unchecked else ""
    return Verdict(True, f"OK: {fs.num_clients} clients, {n:,} rows; every shard, column digest and the split "
                         f"fingerprint {fs.fingerprint[:16]} reproduced{note}{embedded}")
