"""Leaderboard over ``hetbench train`` results: load, aggregate over seeds, rank, render.

Input: every ``*.json`` under a results folder (recursively) whose top-level ``"kind"`` is
``"hetbench-train-result"`` (DESIGN.md section 5: one file per split x algorithm x seed). Other JSON
files are ignored; a file that is not JSON, or a result that lacks required keys, is *skipped* and
listed.

Aggregation: one :class:`SplitTable` per (split name, split fingerprint); one :class:`Row` per
algorithm configuration (name, params, config without the seed); every metric cell is the mean and
sample standard deviation (ddof=1) over the seeds, nulls ignored.

Everything here is a pure function of its arguments except :func:`plot_curves_png` and
:func:`write_leaderboard`, which write files.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from hetbench.errors import HetbenchError

RESULT_KIND = "hetbench-train-result"
SCHEMA_VERSION = 1
CENTRAL = "central"
DEFAULT_RANK_BY = "worst_group_accuracy"


# ----------------------------------------------------------------------------------------------
# metrics

def _fmt_fixed(digits: int) -> Callable[[float], str]:
    return lambda x: f"{x:.{digits}f}"


def _fmt_count(x: float) -> str:
    """1234567 -> '1.23M'; 890 -> '890'."""
    ax = abs(x)
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if ax >= div:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.3g}" if ax < 100 else f"{x:.0f}"


def _fmt_seconds(x: float) -> str:
    return f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"


def _fmt_seconds_like(mean: float, x: float) -> str:
    """``x`` with the decimals :func:`_fmt_seconds` gives ``mean`` (a std beside its mean)."""
    return f"{x:.2f}" if abs(mean) < 10 else f"{x:.1f}"


@dataclass(frozen=True)
class Metric:
    """A leaderboard column: ``name`` (also the ``--rank-by`` value and CSV prefix), a short header,
    its direction and its number format."""

    name: str
    header: str
    higher_is_better: bool
    fmt: Callable[[float], str]
    description: str = ""

    @property
    def arrow(self) -> str:
        return "↑" if self.higher_is_better else "↓"


METRICS: tuple[Metric, ...] = (
    Metric("accuracy", "accuracy", True, _fmt_fixed(2), "test accuracy (%)"),
    Metric("client_accuracy", "client acc.", True, _fmt_fixed(2), "mean per-client accuracy (%)"),
    Metric("worst_group_accuracy", "worst group", True, _fmt_fixed(2), "accuracy of the worst group (%)"),
    Metric("group_accuracy_variance", "group var.", False, _fmt_fixed(2), "variance of group accuracies (%^2)"),
    Metric("client_accuracy_p10", "client p10", True, _fmt_fixed(2), "10th percentile of client accuracy (%)"),
    Metric("client_accuracy_p90", "client p90", True, _fmt_fixed(2), "90th percentile of client accuracy (%)"),
    Metric("relative_accuracy", "rel. acc.", True, _fmt_fixed(3), "accuracy / centralised accuracy (ratio)"),
    Metric("rounds_to_target", "rounds to target", False, _fmt_fixed(1), "rounds to reach the target accuracy"),
    Metric("wall_time_s", "wall time (s)", False, _fmt_seconds, "training wall time (s)"),
    Metric("parameters", "params/client", False, _fmt_count, "model parameters per client"),
    Metric("macs", "MACs/client", False, _fmt_count, "multiply-accumulates per client"),
)
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in METRICS)
METRIC_BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}
_FINAL_METRICS = METRIC_NAMES[:8]  # read from result["final"]

# learning curves drawn per split: (key in result["curves"], title)
CURVES: tuple[tuple[str, str], ...] = (
    ("accuracy", "test accuracy (%)"),
    ("worst_group_accuracy", "worst-group accuracy (%)"),
)


def check_rank_by(rank_by: str) -> Metric:
    """The metric named ``rank_by``, or a HetbenchError listing the valid names."""
    if rank_by not in METRIC_BY_NAME:
        raise HetbenchError(f"unknown --rank-by '{rank_by}'; choose one of: {', '.join(METRIC_NAMES)}")
    return METRIC_BY_NAME[rank_by]


# ----------------------------------------------------------------------------------------------
# loading

@dataclass
class Result:
    """One parsed result file: ``path`` relative to the results folder (POSIX), ``data`` the JSON,
    ``values`` the metric values (None when null or absent), ``seed`` from ``config.seed``."""

    path: str
    data: dict
    values: dict[str, float | None]
    seed: Any

    @property
    def split_key(self) -> tuple[str, str]:
        s = self.data["split"]
        return s["name"], s["fingerprint"]

    @property
    def algorithm(self) -> str:
        return self.data["algorithm"]["name"]

    @property
    def params(self) -> dict:
        return self.data["algorithm"].get("params") or {}

    @property
    def config(self) -> dict:
        """The run configuration without its seed."""
        return {k: v for k, v in self.data["config"].items() if k != "seed"}

    @property
    def row_key(self) -> tuple[str, str, str]:
        return self.algorithm, canonical_json(self.params), canonical_json(self.config)


@dataclass
class Skipped:
    path: str
    reason: str


@dataclass
class Loaded:
    results: list[Result]
    skipped: list[Skipped]
    ignored: int = 0  # JSON files that are not train results


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _number(x: Any, where: str) -> float | None:
    """A finite float, or None for null / NaN / inf; anything else is a malformed result."""
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"{where} is not a number")
    x = float(x)
    return x if math.isfinite(x) else None


def _per_client(data: dict, key: str) -> float | None:
    """Mean of ``clients.<key>`` when given, else ``model.<key>``."""
    clients = data.get("clients")
    per = clients.get(key) if isinstance(clients, dict) else None
    if per is not None:
        if not isinstance(per, list):
            raise ValueError(f"clients.{key} is not a list")
        vals = [v for v in (_number(v, f"clients.{key}") for v in per) if v is not None]
        if vals:
            return sum(vals) / len(vals)
    model = data.get("model")
    if isinstance(model, dict):
        return _number(model.get(key), f"model.{key}")
    return None


def parse_result(data: Any, path: str = "<result>") -> Result | None:
    """A :class:`Result` from parsed JSON; None if it is not a train result at all (other JSON);
    ValueError with the reason if it claims to be one but is malformed."""
    if not isinstance(data, dict) or data.get("kind") != RESULT_KIND:
        return None
    version = data.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise ValueError(f"schema_version {version!r} is not supported (this hetbench reads {SCHEMA_VERSION})")
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
    values: dict[str, float | None] = {m: _number(data["final"].get(m), f"final.{m}") for m in _FINAL_METRICS}
    timing = data.get("timing")
    values["wall_time_s"] = _number(timing.get("wall_time_s"), "timing.wall_time_s") if isinstance(timing, dict) else None
    values["parameters"] = _per_client(data, "parameters")
    values["macs"] = _per_client(data, "macs")
    return Result(path=path, data=data, values=values, seed=data["config"]["seed"])


def load_results(results_dir: str | Path) -> Loaded:
    """Every train result under ``results_dir`` (recursive, sorted by path). Raises HetbenchError
    if the folder is missing or holds no readable result."""
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
        key = (res.split_key, res.row_key, canonical_json(res.seed))
        if key in seen:
            skipped.append(Skipped(rel, f"duplicate of {seen[key]} (same split, configuration and seed)"))
            continue
        seen[key] = rel
        results.append(res)
    if not results:
        detail = f"; {len(skipped)} malformed file(s) skipped, e.g. {skipped[0].path}: {skipped[0].reason}" if skipped else ""
        raise HetbenchError(f"no hetbench train results (*.json with kind '{RESULT_KIND}') under '{root}'{detail}")
    return Loaded(results, skipped, ignored)


# ----------------------------------------------------------------------------------------------
# aggregation

@dataclass
class Stat:
    mean: float | None
    std: float | None  # None with fewer than two values
    n: int  # non-null values


def summarize(values: Iterable[float | None]) -> Stat:
    """Mean and sample standard deviation (ddof=1) of the non-null values."""
    vals = [v for v in values if v is not None]
    if not vals:
        return Stat(None, None, 0)
    mean = math.fsum(vals) / len(vals)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else None
    return Stat(mean, std, len(vals))


@dataclass
class Row:
    """One algorithm configuration of a split, over its seeds."""

    algorithm: str
    params: dict
    config: dict  # without the seed
    results: list[Result]
    label: str = ""
    stats: dict[str, Stat] = field(default_factory=dict)
    curves: dict[str, tuple[list[float], list[float | None]]] = field(default_factory=dict)  # key -> (rounds, mean)
    rank: int | None = None

    @property
    def seeds(self) -> list:
        return [r.seed for r in self.results]

    def mean(self, metric: str) -> float | None:
        return self.stats[metric].mean


@dataclass
class SplitTable:
    name: str
    fingerprint: str
    title: str  # the name, or "name (fingerprint[:8])" when two fingerprints share the name
    rows: list[Row]
    group_by: list[str] = field(default_factory=list)
    num_clients: list[Any] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    rounds: list[Any] = field(default_factory=list)
    rank_by: str | None = None
    reference: str | None = None  # label of the central row relative accuracy is measured against


def _fmt_value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (int, str)):
        return str(v)
    return canonical_json(v)


_MISSING = object()


def _labels(rows: list[Row]) -> None:
    """Label = algorithm name; rows sharing a name get the params/config values that differ."""
    by_name: dict[str, list[Row]] = {}
    for r in rows:
        by_name.setdefault(r.algorithm, []).append(r)
    for name, group in by_name.items():
        if len(group) == 1:
            group[0].label = name
            continue
        parts: list[list[str]] = [[] for _ in group]
        for attr in ("params", "config"):
            keys = sorted({k for r in group for k in getattr(r, attr)})
            for k in keys:
                vals = [getattr(r, attr).get(k, _MISSING) for r in group]
                if len({canonical_json(v) if v is not _MISSING else "\0missing" for v in vals}) > 1:
                    for i, v in enumerate(vals):
                        parts[i].append(f"{k}={'-' if v is _MISSING else _fmt_value(v)}")
        labels = [f"{name} ({', '.join(p)})" if p else name for p in parts]
        counts: dict[str, int] = {}
        for r, lab in zip(group, labels):  # identical text for different values (0.1 vs "0.1"): number them
            counts[lab] = counts.get(lab, 0) + 1
            r.label = lab if labels.count(lab) == 1 else f"{lab} #{counts[lab]}"


def _central_reference(rows: list[Row]) -> Row | None:
    """The central row relative accuracy is measured against: the one with the most seeds, then
    the highest mean accuracy, then the first by configuration."""
    central = [r for r in rows if r.algorithm == CENTRAL]
    if not central:
        return None

    def key(r: Row):
        accs = [x.values["accuracy"] for x in r.results if x.values["accuracy"] is not None]
        return (-len(accs), -(sum(accs) / len(accs)) if accs else math.inf, canonical_json([r.params, r.config]))

    return min(central, key=key)


def _mean_curve(results: list[Result], key: str) -> tuple[list[float], list[float | None]] | None:
    """Mean over seeds of ``curves[key]`` against ``curves.round``; None when no seed has it."""
    per_round: dict[float, list[float]] = {}
    found = False
    for res in results:
        curves = res.data.get("curves")
        if not isinstance(curves, dict):
            continue
        xs, ys = curves.get("round"), curves.get(key)
        if not isinstance(xs, list) or not isinstance(ys, list) or len(xs) != len(ys):
            continue
        for x, y in zip(xs, ys):
            try:
                xf, yf = _number(x, "round"), _number(y, key)
            except ValueError:
                continue
            if xf is None:
                continue
            per_round.setdefault(xf, [])
            if yf is not None:
                per_round[xf].append(yf)
                found = True
    if not found:
        return None
    rounds = sorted(per_round)
    return rounds, [summarize(per_round[x]).mean for x in rounds]


def _unique(values: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out


def aggregate(results: list[Result]) -> list[SplitTable]:
    """Group results into split tables and configuration rows; fill in relative accuracy from the
    central run; compute the per-metric mean/std and the mean learning curves. Rows are unranked
    (in configuration order) until :func:`rank`."""
    by_split: dict[tuple[str, str], dict[tuple, list[Result]]] = {}
    for res in results:
        by_split.setdefault(res.split_key, {}).setdefault(res.row_key, []).append(res)
    name_count: dict[str, int] = {}
    for name, _ in by_split:
        name_count[name] = name_count.get(name, 0) + 1
    tables: list[SplitTable] = []
    for (name, fp), groups in sorted(by_split.items()):
        rows = []
        for (_, _, _), rs in sorted(groups.items()):
            rs = sorted(rs, key=lambda r: (canonical_json(r.seed), r.path))
            rows.append(Row(algorithm=rs[0].algorithm, params=rs[0].params, config=rs[0].config, results=rs))
        _labels(rows)
        ref = _central_reference(rows)
        ref_acc = {canonical_json(r.seed): r.values["accuracy"] for r in ref.results} if ref else {}
        for row in rows:
            per_metric: dict[str, list[float | None]] = {m: [] for m in METRIC_NAMES}
            for res in row.results:
                vals = dict(res.values)
                if vals["relative_accuracy"] is None and vals["accuracy"] is not None:
                    c = ref_acc.get(canonical_json(res.seed))
                    if c:  # not None and not 0
                        vals["relative_accuracy"] = vals["accuracy"] / c
                for m in METRIC_NAMES:
                    per_metric[m].append(vals[m])
            row.stats = {m: summarize(v) for m, v in per_metric.items()}
            for key, _ in CURVES:
                curve = _mean_curve(row.results, key)
                if curve is not None:
                    row.curves[key] = curve
        datas = [res.data for row in rows for res in row.results]
        tables.append(SplitTable(
            name=name, fingerprint=fp, title=f"{name} ({fp[:8]})" if name_count[name] > 1 else name, rows=rows,
            group_by=_unique(d["split"].get("group_by") for d in datas),
            num_clients=_unique(d["split"].get("num_clients") for d in datas),
            models=_unique(d["config"].get("model") or (d.get("model") or {}).get("name") for d in datas),
            rounds=_unique(d["config"].get("rounds") for d in datas),
            reference=ref.label if ref else None,
        ))
    return tables


def rank(tables: list[SplitTable], rank_by: str = DEFAULT_RANK_BY) -> list[SplitTable]:
    """Sort every table's rows best first by ``rank_by`` (its direction), ties by accuracy (higher
    first) then label; rows whose rank metric is null go last with ``rank = None``. In place; returns
    ``tables``."""
    metric = check_rank_by(rank_by)
    sign = -1.0 if metric.higher_is_better else 1.0
    for t in tables:
        def key(r: Row):
            v, acc = r.mean(metric.name), r.mean("accuracy")
            return (v is None, sign * v if v is not None else 0.0, acc is None, -acc if acc is not None else 0.0, r.label)

        t.rows.sort(key=key)
        for i, r in enumerate(t.rows, 1):
            r.rank = i if r.mean(metric.name) is not None else None
        t.rank_by = metric.name
    return tables


def build(results_dir: str | Path, rank_by: str = DEFAULT_RANK_BY) -> tuple[list[SplitTable], Loaded]:
    """load_results + aggregate + rank."""
    check_rank_by(rank_by)
    loaded = load_results(results_dir)
    return rank(aggregate(loaded.results), rank_by), loaded


def best_means(table: SplitTable) -> dict[str, float]:
    """Per metric, the best mean of the table by the metric's direction. Columns where fewer than
    two rows have a value are left out (nothing to compare: nothing is bold)."""
    out = {}
    for m in METRICS:
        vals = [r.mean(m.name) for r in table.rows if r.mean(m.name) is not None]
        if len(vals) >= 2:
            out[m.name] = max(vals) if m.higher_is_better else min(vals)
    return out


def is_best(table_best: dict[str, float], metric: str, value: float | None) -> bool:
    best = table_best.get(metric)
    return best is not None and value is not None and math.isclose(value, best, rel_tol=1e-9, abs_tol=1e-12)


# ----------------------------------------------------------------------------------------------
# rendering: Markdown and CSV

DASH = "—"


def _meta_line(t: SplitTable) -> str:
    def j(vals):
        return ", ".join(_fmt_value(v) for v in vals) if vals else "?"

    parts = [f"group_by: {j(t.group_by)}", f"clients: {j(t.num_clients)}", f"model: {j(t.models)}",
             f"rounds: {j(t.rounds)}", f"fingerprint: {t.fingerprint[:12]}"]
    return " · ".join(parts)


def _rank_line(t: SplitTable) -> str:
    m = METRIC_BY_NAME[t.rank_by or DEFAULT_RANK_BY]
    s = f"Ranked by {m.name} ({'higher' if m.higher_is_better else 'lower'} is better); mean ± std over seeds."
    if t.reference:
        s += f" Relative accuracy is against {t.reference}."
    return s


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*").replace("\n", " ")


def _cell_text(m: Metric, s: Stat, bold: Callable[[str], str] | None) -> str:
    if s.mean is None:
        return DASH
    mean = m.fmt(s.mean)
    if bold is not None:
        mean = bold(mean)
    if s.std is None:
        return mean
    std = _fmt_seconds_like(s.mean, s.std) if m.fmt is _fmt_seconds else m.fmt(s.std)
    return f"{mean} ± {std}"


def render_markdown(tables: list[SplitTable], skipped: list[Skipped] | None = None) -> str:
    out = ["# hetbench leaderboard", ""]
    for t in tables:
        best = best_means(t)
        out += [f"## {_md_escape(t.title)}", "", _meta_line(t), "", _rank_line(t), ""]
        head = ["rank", "algorithm", "seeds"] + [f"{m.header} {m.arrow}" for m in METRICS]
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "|".join(["---:", ":---", "---:"] + ["---:"] * len(METRICS)) + "|")
        for r in t.rows:
            cells = [str(r.rank) if r.rank is not None else DASH, _md_escape(r.label), str(len(r.results))]
            for m in METRICS:
                s = r.stats[m.name]
                cells.append(_cell_text(m, s, (lambda x: f"**{x}**") if is_best(best, m.name, s.mean) else None))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    if skipped:
        out.append(f"Skipped files ({len(skipped)}): "
                   + "; ".join(f"`{s.path}` ({_md_escape(s.reason)})" for s in skipped))
        out.append("")
    return "\n".join(out)


def _csv_num(x: float | None) -> str:
    return "" if x is None else repr(float(x))


CSV_COLUMNS: tuple[str, ...] = (
    ("split", "fingerprint", "rank", "algorithm", "seeds")
    + tuple(f"{m}_{s}" for m in METRIC_NAMES for s in ("mean", "std"))
    + ("algorithm_name", "params", "config")
)


def render_csv(tables: list[SplitTable]) -> str:
    """Tidy CSV: one row per (split, algorithm row); empty cells for null."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    w.writeheader()
    for t in tables:
        for r in t.rows:
            rec = {"split": t.name, "fingerprint": t.fingerprint, "rank": "" if r.rank is None else r.rank,
                   "algorithm": r.label, "seeds": len(r.results), "algorithm_name": r.algorithm,
                   "params": canonical_json(r.params), "config": canonical_json(r.config)}
            for m in METRIC_NAMES:
                rec[f"{m}_mean"] = _csv_num(r.stats[m].mean)
                rec[f"{m}_std"] = _csv_num(r.stats[m].std)
            w.writerow(rec)
    return buf.getvalue()


# ----------------------------------------------------------------------------------------------
# rendering for people (hetbench.leaderboard.html): re-exported here


def render_html(tables: list[SplitTable], skipped: list[Skipped] | None = None) -> str:
    """The self-contained leaderboard.html (see :mod:`hetbench.leaderboard.html`)."""
    from hetbench.leaderboard.html import render_html as _render

    return _render(tables, skipped)


def curves_svg(table: SplitTable, key: str, title: str, width: int = 640, height: int = 340) -> str | None:
    """One split's mean learning curves as inline SVG (see :mod:`hetbench.leaderboard.html`)."""
    from hetbench.leaderboard.html import curves_svg as _svg

    return _svg(table, key, title, width, height)


def plot_curves_png(table: SplitTable, path: str | Path) -> bool:
    """One split's learning curves as a PNG (see :mod:`hetbench.leaderboard.html`)."""
    from hetbench.leaderboard.html import plot_curves_png as _png

    return _png(table, path)


# ----------------------------------------------------------------------------------------------
# writing

def safe_filename(text: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return s or "split"


@dataclass
class Written:
    out: Path
    files: list[str]  # names inside ``out``
    tables: list[SplitTable]
    loaded: Loaded


def write_leaderboard(results_dir: str | Path, out: str | Path, rank_by: str = DEFAULT_RANK_BY,
                      overwrite: bool = False) -> Written:
    """Build the leaderboard of ``results_dir`` into the folder ``out`` atomically: leaderboard.md,
    leaderboard.csv, leaderboard.html and a ``curves_<split>.png`` per split with curves."""
    from hetbench.atomic import atomic_dir, check_out_dir

    check_rank_by(rank_by)
    res, dst = Path(results_dir).resolve(), Path(out).resolve()
    if dst == res or dst in res.parents:
        raise HetbenchError(f"--out '{out}' would replace the results folder '{results_dir}'; choose another folder")
    check_out_dir(out, overwrite)  # fail before any work
    tables, loaded = build(results_dir, rank_by)
    files = ["leaderboard.md", "leaderboard.csv", "leaderboard.html"]
    with atomic_dir(out, overwrite) as tmp:
        (tmp / "leaderboard.md").write_text(render_markdown(tables, loaded.skipped), encoding="utf-8")
        (tmp / "leaderboard.csv").write_text(render_csv(tables), encoding="utf-8", newline="")
        (tmp / "leaderboard.html").write_text(render_html(tables, loaded.skipped), encoding="utf-8")
        used: set[str] = set()
        for t in tables:
            stem = base = f"curves_{safe_filename(t.title)}"
            k = 2
            while stem in used:
                stem, k = f"{base}-{k}", k + 1
            used.add(stem)
            if plot_curves_png(t, tmp / f"{stem}.png"):
                files.append(f"{stem}.png")
    return Written(Path(out), files, tables, loaded)
