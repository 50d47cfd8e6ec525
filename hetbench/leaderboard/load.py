"""Loading: the ``hetbench train`` results of a folder, validated, with the unreadable ones listed.

Input: every ``*.json`` under a results folder (recursively) whose top-level ``"kind"`` is
``"hetbench-train-result"`` (one file per split x algorithm x seed; the format is in
``docs/output-contract.md``). Other JSON files are ignored; a file that is not JSON (or nests too
deeply to read), or a result that lacks required keys or nests more than :data:`MAX_DEPTH` levels,
is *skipped* and listed.

Schema 2 documents give each per-evaluation metric's best evaluation and the mean of its last k
evaluations in ``final.best`` / ``final.last_k``; for schema 1 documents the same figures are computed
from their ``curves`` (:func:`hetbench.train.result_stats.curve_statistics`, k = 3, their default).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hetbench.errors import HetbenchError
from hetbench.leaderboard.metrics import FINAL_METRICS, PER_EVALUATION
from hetbench.leaderboard.statistics import number, read_statistics
from hetbench.train.results import READABLE_SCHEMA_VERSIONS, RESULT_KIND, SCHEMA_VERSION  # the producer's (no torch)


def json_text(obj: Any) -> str:
    """Compact JSON with sorted keys that keeps non-ASCII characters as they are.

    The leaderboard's key for grouping and ordering configurations, and the text of the ``params``
    and ``config`` cells and of labels. Unlike :func:`hetbench.hashing.canonical_json` (a
    fingerprint's form, ASCII only) it writes ``"µ"`` rather than ``"\\u00b5"``: the leaderboard
    shows it to people.

    Parameters
    ----------
    obj : Any
        A value of plain JSON types (as read from a result file).

    Returns
    -------
    str
        ``obj`` as one line of JSON.

    Examples
    --------
    >>> from hetbench.leaderboard.load import json_text
    >>> json_text({"mu": 0.1, "name": "µ", "a": [1, None]})
    '{"a":[1,null],"mu":0.1,"name":"µ"}'
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass
class Result:
    """One parsed result file.

    Parameters
    ----------
    path : str
        The file's path relative to the results folder (POSIX).
    data : dict
        The parsed JSON.
    values : dict[str, float or None]
        Every metric's value (the final evaluation's); None when null, non-finite or absent.
    seed : Any
        The run's ``config.seed``.
    statistics : dict[str, dict[str, float or None]]
        Per statistic (``"last-k"``, ``"best"``), the per-evaluation metrics' values.
    group_values : dict[str, dict[str, dict[str, float or None]]]
        Per statistic (all three), per test group: ``{"accuracy", "drop"}`` (drop None without ``--train-groups``).
    last_k : int or None
        How many evaluations the ``last-k`` statistic averaged.

    Examples
    --------
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> r = parse_result(example_result(algorithm="fedprox", params={"mu": 0.1}, seed=1))
    >>> r.split_key, r.algorithm, r.params, r.seed
    (('digits', 'f00d'), 'fedprox', {'mu': 0.1}, 1)
    >>> r.row_key
    ('fedprox', '{"mu":0.1}', '{"engine":"local"}')
    >>> r.values_for("final")["accuracy"], r.values_for("best")["accuracy"], r.last_k
    (90.0, 90.0, 1)
    """

    path: str
    data: dict
    values: dict[str, float | None]
    seed: Any
    statistics: dict[str, dict[str, float | None]] = field(default_factory=dict)
    group_values: dict[str, dict[str, dict[str, float | None]]] = field(default_factory=dict)
    last_k: int | None = None

    def values_for(self, statistic: str) -> dict[str, float | None]:
        """Every metric's value, the per-evaluation ones as ``statistic`` of the seed's curve.

        Parameters
        ----------
        statistic : str
            ``"last-k"``, ``"best"`` or ``"final"``.

        Returns
        -------
        dict[str, float or None]
            Metric name to value.
        """
        if statistic == "final":
            return dict(self.values)
        return {**self.values, **self.statistics.get(statistic, {m: None for m in PER_EVALUATION})}

    @property
    def train_groups(self) -> list[str] | None:
        """``config.train_groups`` (the groups whose clients trained); None: every client trained."""
        tg = self.data["config"].get("train_groups")
        return [str(g) for g in tg] if isinstance(tg, list) else None

    @property
    def held_out(self) -> list[str]:
        """The split's groups not in :attr:`train_groups` (empty without ``--train-groups``)."""
        tg = self.train_groups
        if tg is None:
            return []
        split_groups = self.data["split"].get("groups")
        names = split_groups if isinstance(split_groups, list) else list(self.group_values.get("final", {}))
        return [str(g) for g in names if str(g) not in tg]

    @property
    def split_key(self) -> tuple[str, str]:
        """(split name, split fingerprint): the table this result belongs to."""
        s = self.data["split"]
        return s["name"], s["fingerprint"]

    @property
    def algorithm(self) -> str:
        """The algorithm's name."""
        return self.data["algorithm"]["name"]

    @property
    def params(self) -> dict:
        """The algorithm's parameters (``{}`` when none are given)."""
        return self.data["algorithm"].get("params") or {}

    @property
    def engine(self) -> str:
        """The engine that trained the run: the document's ``engine`` (Flower runs write it), else ``local``."""
        return str(self.data.get("engine") or self.data["config"].get("engine") or "local")

    @property
    def config(self) -> dict:
        """The run configuration without its seed, with its :attr:`engine` (a local run's document has none)."""
        return {**{k: v for k, v in self.data["config"].items() if k != "seed"}, "engine": self.engine}

    @property
    def row_key(self) -> tuple[str, str, str]:
        """(algorithm, params, config) as text: the configuration row this result belongs to."""
        return self.algorithm, json_text(self.params), json_text(self.config)


@dataclass
class Skipped:
    """A file that claims to be a result but cannot be used.

    Parameters
    ----------
    path : str
        The file's path relative to the results folder (POSIX).
    reason : str
        Why it was skipped, for people.

    Examples
    --------
    >>> from hetbench.leaderboard.load import Skipped
    >>> Skipped("a/b.json", "missing 'final'").reason
    "missing 'final'"
    """

    path: str
    reason: str


@dataclass
class Loaded:
    """What :func:`load_results` found.

    Parameters
    ----------
    results : list[Result]
        The usable results, sorted by path.
    skipped : list[Skipped]
        The files skipped, with their reasons.
    ignored : int
        JSON files that are not train results.

    Examples
    --------
    >>> from hetbench.leaderboard.load import Loaded
    >>> Loaded([], []).ignored
    0
    """

    results: list[Result]
    skipped: list[Skipped]
    ignored: int = 0


def _per_client(data: dict, key: str) -> float | None:
    """Mean of ``clients.<key>`` when given, else ``model.<key>``."""
    clients = data.get("clients")
    per = clients.get(key) if isinstance(clients, dict) else None
    if per is not None:
        if not isinstance(per, list):
            raise ValueError(f"clients.{key} is not a list")
        vals = [v for v in (number(v, f"clients.{key}") for v in per) if v is not None]
        if vals:
            return sum(vals) / len(vals)
    model = data.get("model")
    if isinstance(model, dict):
        return number(model.get(key), f"model.{key}")
    return None


#: Deeper results are skipped as malformed (real ones nest a few levels; json.dumps recurses).
MAX_DEPTH = 64


def _json_depth(obj: Any) -> int:
    """How deeply lists and objects nest in ``obj`` (0 for a plain value), without recursion."""
    depth, stack = 0, [(obj, 1)]
    while stack:
        value, level = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is not None:
            depth = max(depth, level)
            stack.extend((child, level + 1) for child in children)
    return depth


def parse_result(data: Any, path: str = "<result>") -> Result | None:
    """A :class:`Result` from a file's parsed JSON.

    Parameters
    ----------
    data : Any
        The parsed JSON.
    path : str
        The file's path relative to the results folder, kept in the result.

    Returns
    -------
    Result or None
        The result; None when ``data`` is not a train result at all (other JSON).

    Raises
    ------
    ValueError
        When ``data`` claims to be a train result but is malformed; the message is the reason.

    Examples
    --------
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import parse_result
    >>> parse_result(example_result()).values["worst_group_accuracy"]
    85.0
    >>> parse_result({"kind": "something else"}) is None
    True
    >>> parse_result({"kind": "hetbench-train-result"})
    Traceback (most recent call last):
    ...
    ValueError: missing 'split'
    """
    if not isinstance(data, dict) or data.get("kind") != RESULT_KIND:
        return None
    version = data.get("schema_version", SCHEMA_VERSION)
    if version not in READABLE_SCHEMA_VERSIONS or isinstance(version, bool):
        readable = ", ".join(map(str, READABLE_SCHEMA_VERSIONS))
        raise ValueError(f"schema_version {version!r} is not supported (this hetbench reads {readable})")
    for section in ("split", "algorithm", "config", "final"):
        if not isinstance(data.get(section), dict):
            raise ValueError(f"missing '{section}'")
    for section, key in (("split", "name"), ("split", "fingerprint"), ("algorithm", "name")):
        if not isinstance(data[section].get(key), str) or not data[section][key]:
            raise ValueError(f"missing '{section}.{key}'")
    if "seed" not in data["config"]:
        raise ValueError("missing 'config.seed'")
    if "accuracy" not in data["final"]:
        raise ValueError("missing 'final.accuracy'")
    params = data["algorithm"].get("params")
    if params is not None and not isinstance(params, dict):
        raise ValueError("'algorithm.params' is not an object")
    values: dict[str, float | None] = {m: number(data["final"].get(m), f"final.{m}") for m in FINAL_METRICS}
    timing = data.get("timing")
    values["wall_time_s"] = number(timing.get("wall_time_s"), "timing.wall_time_s") if isinstance(timing, dict) else None
    values["parameters"] = _per_client(data, "parameters")
    values["macs"] = _per_client(data, "macs")
    statistics, group_values, last_k = read_statistics(data, version)
    return Result(path=path, data=data, values=values, seed=data["config"]["seed"], statistics=statistics,
                  group_values=group_values, last_k=last_k)


def load_results(results_dir: str | Path) -> Loaded:
    """Every train result under ``results_dir``.

    Files are searched recursively and read in path order; a second result of the same split,
    configuration and seed is skipped as a duplicate of the first.

    Parameters
    ----------
    results_dir : str or Path
        The results folder.

    Returns
    -------
    Loaded
        The results, the skipped files and the count of other JSON files.

    Raises
    ------
    HetbenchError
        When the folder is missing, is not a folder, or holds no usable result.

    Examples
    --------
    >>> import json, pathlib
    >>> from hetbench.leaderboard.example_results import example_result
    >>> from hetbench.leaderboard.load import load_results
    >>> folder = pathlib.Path("results_load")
    >>> folder.mkdir()
    >>> _ = (folder / "a.json").write_text(json.dumps(example_result()))
    >>> _ = (folder / "b.json").write_text("{")
    >>> loaded = load_results(folder)
    >>> [r.path for r in loaded.results], loaded.skipped[0].path, loaded.ignored
    (['a.json'], 'b.json', 0)
    """
    root = Path(results_dir)
    if not root.exists():
        raise HetbenchError(f"results folder '{root}' does not exist")
    if not root.is_dir():
        raise HetbenchError(f"'{root}' is not a folder")
    results: list[Result] = []
    skipped: list[Skipped] = []
    ignored = 0
    seen: dict[tuple, str] = {}
    for f in sorted(root.rglob("*.json")):
        if not f.is_file():
            continue
        rel = f.relative_to(root).as_posix()
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            msg = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
            skipped.append(Skipped(rel, f"not valid JSON ({msg})"))
            continue
        except RecursionError:
            skipped.append(Skipped(rel, f"not valid JSON (nested more than {MAX_DEPTH} levels deep)"))
            continue
        except OSError as exc:
            skipped.append(Skipped(rel, f"unreadable ({exc.strerror or exc})"))
            continue
        try:
            res = parse_result(data, rel)
        except ValueError as exc:
            skipped.append(Skipped(rel, str(exc)))
            continue
        if res is None:
            ignored += 1
            continue
        if _json_depth(data) > MAX_DEPTH:
            skipped.append(Skipped(rel, f"nested more than {MAX_DEPTH} levels deep"))
            continue
        key = (res.split_key, res.row_key, json_text(res.seed))
        if key in seen:
            skipped.append(Skipped(rel, f"duplicate of {seen[key]} (same split, configuration and seed)"))
            continue
        seen[key] = rel
        results.append(res)
    if not results:
        detail = f"; {len(skipped)} malformed file(s) skipped, e.g. {skipped[0].path}: {skipped[0].reason}" if skipped else ""
        raise HetbenchError(f"no hetbench train results (*.json with kind '{RESULT_KIND}') under '{root}'{detail}")
    return Loaded(results, skipped, ignored)
