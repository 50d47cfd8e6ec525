"""Claim definitions: ``manifests/claims/<id>.yaml``, loaded and validated before anything runs.

A definition states the paper, the figure or table, the claim in one sentence, the protocol, the runner
that measures it with its ``quick`` and ``full`` settings (and ``smoke``: toy settings that run in seconds
and decide nothing, required of a runner that trains), and one or more checks, each naming a
measurement of the runner and the criterion (:mod:`hetbench.reproduce.criteria`) that decides its
verdict. Everything a verdict depends on is in this file, written before any run.

Keys (all required but ``notes``, and ``settle`` only for a runner that trains)::

    id: hsu-label-skew                 # the file's stem; part of the command-line interface
    paper: Hsu, Qi and Brown 2019 ...  # citation
    where: Fig. 4                      # figure or table
    claim: FedAvg accuracy falls ...   # one sentence
    protocol: ...                      # how it is measured (the settings are shown beside it)
    runner: label_skew                 # one of hetbench.reproduce.runners.RUNNERS
    settings: {quick: {...}, full: {...}, smoke: {...}}   # smoke: only where the runner trains (else quick's)
                                       # a mode may declare ``replicates: r`` (:func:`replicated_seeds`)
    checks:
      - {measure: accuracy_vs_alpha, statement: ..., criterion: {name: monotone_decreasing, ...}}
        # a check that needs data a run may lack also says which ("data: generated data")
        # where the paper reports the measure: paper: {where: Table 1, values: [1.88]} (values, one per
        # point, null where it has none, drawn beside the measurement; without them, why there are none)
    settle: {evaluations: 4, max_change: 3.0}   # claims whose runner trains (hetbench.reproduce.settling)
    notes: ...                         # optional
    paper_data: cifar10                # optional: --data cifar10=REF runs it on REF (hetbench.reproduce.paper_data)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping, Sequence

import yaml

from hetbench.errors import HetbenchError
from hetbench.reproduce.criteria import check_criterion
from hetbench.reproduce.settling import check_settle

MODES = ("quick", "full")
"""The modes whose verdicts decide something; every claim defines both."""
SMOKE = "smoke"
"""Toy settings through the same code path, in seconds: a check of the installation whose every verdict is
``no verdict`` (:data:`hetbench.reproduce.verdicts.NO_VERDICT`); a claim that trains nothing smokes with its
quick settings."""
ALL_MODES = (*MODES, SMOKE)
#: the fewest seeds a claim whose measurements vary with the seed runs with (quick and full mode, and
#: ``--seeds``): a 95% t interval from n seeds is ``t(0.975, n - 1) s / sqrt(n)`` wide on each side, and
#: t(0.975, n - 1) falls from 12.7 (n = 2) and 4.3 (n = 3) to 2.8 at n = 5, where more seeds start to pay
#: mostly through the sqrt(n)
MIN_SEEDS = 5
#: the stride of a replicated claim's extra seeds (:func:`replicated_seeds`)
REPLICATE_STRIDE = 1000
#: the most replicates a mode may declare
MAX_REPLICATES = 10


def check_seed_count(claim_id: str, seeds: Sequence[int], seeded: bool, where: str) -> None:
    """Refuse fewer than :data:`MIN_SEEDS` seeds for a claim whose measurements vary with the seed.

    Examples
    --------
    >>> from hetbench.reproduce.claims import check_seed_count
    >>> check_seed_count("hsu-label-skew", [0, 1, 2, 3, 4], True, "`seeds`")
    >>> check_seed_count("hsu-label-skew", [0, 1, 2], True, "`seeds`")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: seeds: hsu-label-skew needs at least 5 seeds for its 95% t intervals (got 3)
    """
    if seeded and len(seeds) < MIN_SEEDS:
        raise HetbenchError(f"{where}: {claim_id} needs at least {MIN_SEEDS} seeds for its 95% t intervals "
                            f"(got {len(seeds)})")


def replicated_seeds(claim_id: str, seeds: Sequence[int], replicates: int) -> list[int]:
    """The seeds a claim runs for the seed set ``seeds`` when its mode declares ``replicates: r``: every seed
    s stands for s, s + 1000, ..., s + (r - 1) x 1000, so each condition gets r x len(seeds) runs and two
    disjoint seed sets below 1000 stay disjoint (the committed quick-a and quick-b, 0-4 and 5-9).

    A claim whose paired differences are wide against its criterion's margin declares its sample size this
    way, before its runs, from a pilot's spread with seeds outside the committed sets (its yaml says which
    pilot and which rule), so ``--seeds 0,1,2,3,4`` keeps meaning one seed set for every claim.

    Parameters
    ----------
    claim_id : str
        Named in the error.
    seeds : sequence of int
        The seed set (``--seeds`` or the mode's ``seeds``).
    replicates : int
        The mode's ``replicates`` (1: the seeds as given).

    Raises
    ------
    HetbenchError
        When ``replicates`` > 1 and a seed is 1000 or more (its replicates would meet another set's seeds).

    Examples
    --------
    >>> from hetbench.reproduce.claims import replicated_seeds
    >>> replicated_seeds("x", [0, 1, 2, 3, 4], 2)
    [0, 1, 2, 3, 4, 1000, 1001, 1002, 1003, 1004]
    >>> replicated_seeds("x", [7, 1000], 1)
    [7, 1000]
    >>> replicated_seeds("x", [7, 1000], 3)
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x runs every seed s as s, s + 1000, s + 2000 (replicates: 3): its seeds must be below 1000 (got 1000)
    """
    if replicates > 1 and max(seeds, default=0) >= REPLICATE_STRIDE:
        shown = ", ".join(["s"] + [f"s + {r * REPLICATE_STRIDE}" for r in range(1, replicates)])
        raise HetbenchError(f"{claim_id} runs every seed s as {shown} (replicates: {replicates}): its seeds must "
                            f"be below {REPLICATE_STRIDE} (got {max(seeds)})")
    return [int(s) + r * REPLICATE_STRIDE for r in range(replicates) for s in seeds]


def _checked_replicates(settings: dict[str, Any], seeded: bool, where: str) -> int:
    """Take ``replicates`` out of one mode's settings and check it: 1 to :data:`MAX_REPLICATES`, only for a
    runner whose measurements vary with the seed."""
    replicates = settings.pop("replicates", 1)
    if isinstance(replicates, bool) or not isinstance(replicates, int) or not 1 <= replicates <= MAX_REPLICATES:
        raise HetbenchError(f"{where}: 'replicates' must be an integer from 1 to {MAX_REPLICATES} (got {replicates!r})")
    if replicates > 1 and not seeded:
        raise HetbenchError(f"{where}: 'replicates' is for claims whose measurements vary with the seed")
    return replicates


_TEXT_KEYS = ("paper", "where", "claim", "protocol")
_KEYS = ("id", *_TEXT_KEYS, "runner", "settings", "checks", "settle", "notes", "paper_data")


@dataclass(frozen=True)
class Check:
    """One check of a claim: the runner's measurement it reads, what it states, its declared criterion."""

    measure: str
    statement: str
    criterion: dict[str, Any]
    data: str | None = None
    """What the check measures on, in a few words ("generated data", "iNaturalist 2017"): a claim some of
    whose checks did not run says which data its verdict rests on ("reproduced on generated data only")."""
    paper: dict[str, Any] | None = None
    """Where the paper reports this measure and its numbers (:func:`check_paper`): ``{"where": ...}`` and,
    when it prints comparable ones, ``"values"``, one per point of the measurement; drawn, never decided."""


@dataclass(frozen=True)
class Claim:
    """A validated claim definition (see the module docstring for the keys)."""

    id: str
    paper: str
    where: str
    claim: str
    protocol: str
    runner: str
    settings: dict[str, dict[str, Any]]
    checks: tuple[Check, ...]
    notes: str = ""
    settle: dict[str, Any] | None = None  # how settled its training runs must be (hetbench.reproduce.settling)
    paper_data: str = ""  # the paper's data set --data may give in place of `source` (hetbench.reproduce.paper_data)


def _folder():
    return resources.files("hetbench.manifests").joinpath("claims")


def claim_ids() -> list[str]:
    """The ids of the claims shipped in ``manifests/claims/``, sorted.

    Examples
    --------
    >>> from hetbench.reproduce.claims import claim_ids
    >>> claim_ids()
    ['borazjani-thesis', 'borazjani-zeta', 'dapperfl-ablation', 'dapperfl-domains', 'dapperfl-footprint',
     'defaults-learn', 'heteroswitch-lodo', 'heteroswitch-stage-drop', 'heteroswitch-table2', 'heteroswitch-table4',
     'hsu-fedavgm', 'hsu-fedavgm-sensitivity', 'hsu-fedvc-fedir', 'hsu-geo-clients', 'hsu-label-skew',
     'scaffold-collapse']
    """
    return sorted(p.name[:-5] for p in _folder().iterdir() if p.name.endswith(".yaml"))


def check_paper(paper: Any, where: str) -> dict[str, Any]:
    """Validate a check's ``paper`` key: where the paper reports the check's measure (``where``: a table or
    figure, with the arithmetic when the number is derived) and, when it prints numbers the measure can be
    set against, ``values`` in the measure's units, one per point of the measurement (null where the paper
    gives none). Without ``values`` the check says why there is no number to draw (a figure without
    printed values, another data set).

    Examples
    --------
    >>> from hetbench.reproduce.claims import check_paper
    >>> check_paper({"values": [1.88], "where": "Table 1: 75.57 - 73.69"}, "x.yaml")
    {'where': 'Table 1: 75.57 - 73.69', 'values': [1.88]}
    >>> check_paper({"where": "Fig. 4, figure only"}, "x.yaml")
    {'where': 'Fig. 4, figure only'}
    >>> check_paper({"values": [None, "high"], "where": "Fig. 4"}, "x.yaml")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: 'values' must be a list of numbers or nulls with at least one number
    """
    if not isinstance(paper, Mapping) or "where" not in paper or set(paper) - {"values", "where"}:
        raise HetbenchError(f"{where} must have where (and optionally values)")
    if not isinstance(paper["where"], str) or not paper["where"].strip():
        raise HetbenchError(f"{where}: 'where' must be a non-empty string")
    out: dict[str, Any] = {"where": " ".join(paper["where"].split())}
    if "values" in paper:
        values = paper["values"]
        if (not isinstance(values, list)
                or not all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values)
                or all(v is None for v in values)):
            raise HetbenchError(f"{where}: 'values' must be a list of numbers or nulls with at least one number")
        out["values"] = [None if v is None else float(v) for v in values]
    return out


def parse_claim(data: Any, where: str) -> Claim:
    """Validate a claim definition read from yaml; ``where`` names it in every error.

    Raises
    ------
    HetbenchError
        For a missing or unknown key, a text that is not a string, settings without both modes, a check
        naming a measurement its runner does not make, or a bad criterion.

    Examples
    --------
    >>> from hetbench.reproduce.claims import parse_claim
    >>> parse_claim({"id": "x"}, "x.yaml")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: x.yaml: missing key 'paper'
    """
    from hetbench.reproduce.runners import RUNNERS

    if not isinstance(data, Mapping):
        raise HetbenchError(f"{where}: a claim definition is a mapping of {', '.join(_KEYS)}")
    for key in _KEYS:
        if key not in ("notes", "settle", "paper_data") and key not in data:
            raise HetbenchError(f"{where}: missing key '{key}'")
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise HetbenchError(f"{where}: unknown key '{unknown[0]}' (keys: {', '.join(_KEYS)})")
    for key in ("id", *_TEXT_KEYS):
        if not isinstance(data[key], str) or not data[key].strip():
            raise HetbenchError(f"{where}: '{key}' must be a non-empty string")
    if data["runner"] not in RUNNERS:
        raise HetbenchError(f"{where}: unknown runner '{data['runner']}'; choose one of: {', '.join(RUNNERS)}")
    runner = RUNNERS[data["runner"]]
    settings = data["settings"]
    required = ALL_MODES if runner.trains else MODES
    modes = set(settings) if isinstance(settings, Mapping) else set()
    if not isinstance(settings, Mapping) or not set(required) <= modes <= set(ALL_MODES):
        raise HetbenchError(f"{where}: 'settings' must have the modes {', '.join(required)}"
                            + (" (smoke: toy settings that train in seconds)" if runner.trains
                               else f" and may have {SMOKE}"))
    checked = {}
    for mode in ALL_MODES:
        if mode not in settings:  # a claim that trains nothing smokes with its quick settings
            checked[mode] = dict(checked["quick"])
            continue
        if not isinstance(settings[mode], Mapping):
            raise HetbenchError(f"{where}: settings.{mode} must be a mapping")
        mode_settings = dict(settings[mode])
        replicates = _checked_replicates(mode_settings, runner.seeded, f"{where}: settings.{mode}")
        checked[mode] = runner.check_settings(mode_settings, f"{where}: settings.{mode}")
        if replicates > 1:
            checked[mode]["replicates"] = replicates
        if "seeds" in checked[mode] and mode != SMOKE:
            check_seed_count(str(data["id"]), checked[mode]["seeds"], runner.seeded, f"{where}: settings.{mode}.seeds")
    checks = data["checks"]
    if not isinstance(checks, list) or not checks:
        raise HetbenchError(f"{where}: 'checks' must be a non-empty list")
    out = []
    for i, c in enumerate(checks):
        at = f"{where}: checks[{i}]"
        if not isinstance(c, Mapping) or sorted(set(c) - {"data", "paper"}) != ["criterion", "measure", "statement"]:
            raise HetbenchError(f"{at} must have exactly measure, statement and criterion "
                                "(and optionally data and paper)")
        if "data" in c and (not isinstance(c["data"], str) or not c["data"].strip()):
            raise HetbenchError(f"{at}: 'data' must be a non-empty string")
        if c["measure"] not in runner.measures:
            raise HetbenchError(f"{at}: runner '{data['runner']}' makes no measurement '{c['measure']}' "
                                f"(it makes: {', '.join(runner.measures)})")
        if not isinstance(c["statement"], str) or not c["statement"].strip():
            raise HetbenchError(f"{at}: 'statement' must be a non-empty string")
        out.append(Check(c["measure"], " ".join(c["statement"].split()), check_criterion(c["criterion"], at),
                         " ".join(c["data"].split()) if "data" in c else None,
                         check_paper(c["paper"], f"{at}.paper") if "paper" in c else None))
    settle = None
    if runner.trains:
        if "settle" not in data:
            raise HetbenchError(f"{where}: missing key 'settle' (its runner trains: how settled its runs must be, "
                                "e.g. settle: {evaluations: 4, max_change: 3.0})")
        settle = check_settle(data["settle"], where)
    elif "settle" in data:
        raise HetbenchError(f"{where}: 'settle' is for claims whose runner trains; '{data['runner']}' does not")
    paper_data = data.get("paper_data") or ""
    if paper_data:
        from hetbench.reproduce.paper_data import PAPER_DATA

        if paper_data not in PAPER_DATA:
            raise HetbenchError(f"{where}: 'paper_data' must be one of {', '.join(PAPER_DATA)} (got {paper_data!r})")
        if not all("source" in checked[mode] for mode in ALL_MODES):
            raise HetbenchError(f"{where}: 'paper_data' replaces the 'source' setting, which its runner has not")
    return Claim(
        settle=settle, paper_data=paper_data,
        id=data["id"], paper=" ".join(data["paper"].split()), where=data["where"], claim=" ".join(data["claim"].split()),
        protocol=" ".join(data["protocol"].split()), runner=data["runner"], settings=checked, checks=tuple(out),
        notes=" ".join(str(data.get("notes") or "").split()),
    )


@lru_cache(maxsize=None)
def load_claim(claim_id: str) -> Claim:
    """The validated definition of ``claim_id``.

    Raises
    ------
    HetbenchError
        For an unknown id (listing the valid ones), a file that is not valid yaml, whose ``id`` is not its
        name, or that :func:`parse_claim` refuses.

    Examples
    --------
    >>> from hetbench.reproduce.claims import load_claim
    >>> c = load_claim("dapperfl-footprint")
    >>> c.where, [k.criterion["name"] for k in c.checks]
    ('Table 5', ['within_relative', 'within_relative'])
    """
    ids = claim_ids()
    if claim_id not in ids:
        raise HetbenchError(f"unknown claim '{claim_id}'; valid claims: {', '.join(ids)}")
    where = f"manifests/claims/{claim_id}.yaml"
    try:
        data = yaml.safe_load(_folder().joinpath(f"{claim_id}.yaml").read_text())
    except yaml.YAMLError as exc:
        raise HetbenchError(f"{where}: not valid yaml: {exc}") from None
    claim = parse_claim(data, where)
    if claim.id != claim_id:
        raise HetbenchError(f"{where}: its id '{claim.id}' is not its file name")
    return claim


def select_claims(spec: str | None) -> list[str]:
    """The claim ids of ``--claims``: ``all`` (or None) or a comma list, in the order given, each once.

    Examples
    --------
    >>> from hetbench.reproduce.claims import select_claims
    >>> select_claims("hsu-geo-clients, dapperfl-footprint")
    ['hsu-geo-clients', 'dapperfl-footprint']
    >>> select_claims("hsu-fedmagic")
    Traceback (most recent call last):
    hetbench.errors.HetbenchError: unknown claim 'hsu-fedmagic'; valid claims: borazjani-thesis, borazjani-zeta, ...
    """
    ids = claim_ids()
    if spec is None or spec.strip().lower() == "all":
        return ids
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise HetbenchError(f"`claims` is empty; valid claims: {', '.join(ids)} (or all)")
    for n in names:
        if n not in ids:
            raise HetbenchError(f"unknown claim '{n}'; valid claims: {', '.join(ids)}")
    if len(set(names)) != len(names):
        raise HetbenchError(f"`claims` names a claim twice ('{spec}')")
    return names
