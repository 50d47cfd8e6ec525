"""The plan of a sweep: every run with its data view, options, result file and checkpoint, all checked
before any training, then run one after the other (:class:`Plan`).

Resuming (``--resume``): a run that left a checkpoint continues from it; a run that did not (killed
before its first checkpoint, or run without ``--checkpoint-every``) starts afresh and the announcement
says so, so a scheduler can re-run the same command line; only a checkpoint written with other options
is refused.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hetbench.errors import HetbenchError
from hetbench.sweep.default_split import default_split

if TYPE_CHECKING:
    from hetbench.train.algorithms import TrainConfig
    from hetbench.train.groups import GroupRun

@dataclass(frozen=True)
class RunResult:
    """One run of a sweep: the algorithm, the seed, where its results file is and what it holds.

    ``groups`` is the run's group tag (``train_baseline``, ``logo_usps``; None: the whole split),
    ``skipped`` says the result existed and was kept, ``resumed`` that the run continued from a checkpoint,
    ``afresh`` that ``--resume`` found no checkpoint of it, so it started at round 1.
    """

    algorithm: str
    seed: int
    path: Path
    doc: dict[str, Any]
    groups: str | None = None
    skipped: bool = False
    resumed: bool = False
    afresh: bool = False


@dataclass
class Job:
    """One run of a sweep, planned before any training."""

    algorithm: str
    seed: int
    groups: "GroupRun"
    config: "TrainConfig"
    path: Path
    checkpoint: Path
    kept: dict[str, Any] | None = None  # the existing result that is kept
    resume: bool = False
    afresh: bool = False  # --resume found no checkpoint: the run starts at round 1


def check_flower(names: list[str], config: "TrainConfig | None", resume: bool) -> None:
    """Refuse what ``--engine flower`` cannot run, before anything is read (Flower missing: exit 2)."""
    from hetbench.flower.job import require_flower

    if "central" in names:
        raise HetbenchError("`engine` flower runs federated algorithms; 'central' trains one model on the union of "
                            "the clients' data: run it with `engine` local")
    if resume or (config is not None and config.checkpoint_every):
        raise HetbenchError("`engine` flower does not write checkpoints: drop `checkpoint_every` / `resume`")
    if config is not None and config.client_exec == "lockstep":
        raise HetbenchError("`client_exec` lockstep trains a round's clients together in this process; `engine` "
                            "flower trains each client in its own ClientApp: drop `client_exec` or use `engine` local")
    require_flower(simulation=True)


class Plan:
    """Every run of a sweep with its data, options and files; checks all of them before any training."""

    engine = "local"
    flower_actors: int | None = None
    log: tuple[str, ...] = ()  # --log: the per-round sinks of every run (hetbench.train.round_log)
    store: Any = None  # hetbench reproduce's run store (sweep's ``store``)

    def __init__(self, split, names, seeds, config, hyper, algos, out: Path, protocol, quiet: bool) -> None:
        from hetbench.train.algorithms import check_models
        from hetbench.train.checkpoint import checkpoint_path
        from hetbench.train.data import load_federated
        from hetbench.train.groups import plan_group_runs
        from hetbench.train.checks import check_out, check_run
        from hetbench.train.results import result_path

        split_path = str(split) if split is not None else str(default_split(quiet))
        # the Flower engine's ClientApps read the split in their own processes: an absolute path where it is one
        self.split_path = os.path.abspath(split_path) if os.path.exists(split_path) else split_path
        check_out(out, split_path)  # a name the file system holds, not inside the split (verify would see it)
        self.data = load_federated(split_path, config.image_size, config.group_by, quiet=quiet,
                                   cache_dir=config.cache_dir)
        check_run(self.data, split_path, out)  # labels in range, a results folder that can be written
        check_models(names, config.model_for(self.data.image_size), config.norm)  # fedbn needs normalisation layers
        group_runs = plan_group_runs(self.data, config.train_groups, config.test_groups, protocol)
        self._views: dict = {}
        self.hyper, self.algos, self.quiet, self.out = hyper, algos, quiet, out
        self.jobs: list[Job] = []
        for s in seeds:
            for g in group_runs:
                cfg = dataclasses.replace(config, seed=s, train_groups=g.train_groups, test_groups=g.test_groups)
                for a in names:
                    path = _tagged(result_path(out, self.data.name, a, algos[a].params, type(algos[a]).defaults, s,
                                               fingerprint=self.data.fingerprint), g.tag, s)
                    self.jobs.append(Job(a, s, g, cfg.for_algorithm(algos[a]), path, checkpoint_path(path)))

    def view(self, groups: "GroupRun"):
        """The split restricted to ``groups`` (made on first use: it computes the training rows' statistics)."""
        from hetbench.train.groups import restrict_groups

        if groups not in self._views:
            self._views[groups] = restrict_groups(self.data, groups.train_groups, groups.test_groups)
        return self._views[groups]

    def check_existing(self, overwrite: bool, keep: bool, resume: bool) -> None:
        """Refuse, keep or replace the results that exist; with ``resume``, check every checkpoint."""
        from hetbench.train.algorithms import make_algorithm, options_for
        from hetbench.train.checkpoint import check_resumable
        from hetbench.train.results import existing_result

        taken = [j for j in self.jobs if existing_result(j.path, overwrite)]
        if taken and not (overwrite or keep):
            more = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
            raise HetbenchError(
                f"result file '{taken[0].path}' already exists{more}; pass `skip_existing` to keep existing results "
                "and run the rest, or `overwrite` to replace them"
            )
        if keep:
            for job in taken:
                job.kept = self._kept(job)
        if resume:  # the same command line can be re-run: what has a checkpoint continues, the rest starts afresh
            for job in (j for j in self.jobs if j.kept is None):
                if not job.checkpoint.is_file():
                    job.afresh = True
                    continue
                fresh = make_algorithm(job.algorithm, **options_for(job.algorithm, self.hyper))
                check_resumable(job.checkpoint, self.view(job.groups), fresh, job.config)  # other options: refused
                job.resume = True

    def _kept(self, job: Job) -> dict[str, Any]:
        """The existing result of ``job``, refused when it is unreadable or was written with other options."""
        try:
            doc = json.loads(job.path.read_text())
            accuracy = float(doc["final"]["accuracy"])
        except (OSError, ValueError, TypeError, KeyError, RecursionError) as exc:
            raise HetbenchError(
                f"existing result '{job.path}' cannot be read ({type(exc).__name__}); delete it or pass `overwrite`"
            ) from None
        want = _jsonable({**job.config.result_options(), "algorithm": self.algos[job.algorithm].params,
                          "fingerprint": self.data.fingerprint})
        have = {**doc.get("config", {}), "algorithm": doc.get("algorithm", {}).get("params"),
                "fingerprint": doc.get("split", {}).get("fingerprint"), "engine": doc.get("engine", "local")}
        want["engine"] = self.engine
        if want.get("model") == "auto":
            want.pop("model")
        diff = next((k for k in sorted(want) if have.get(k) != want[k]), None)
        if diff is not None or not math.isfinite(accuracy):
            what = "split" if diff == "fingerprint" else f"{diff} {have.get(diff)!r}, not {want.get(diff)!r}" if diff else \
                "a non-finite accuracy"
            raise HetbenchError(
                f"existing result '{job.path}' was written with other options ({what}); pass `overwrite` to replace "
                "it or choose another `out`"
            )
        return doc

    def run(self) -> list[RunResult]:
        from contextlib import ExitStack

        self._announce()
        runs = []
        central: dict[tuple, float] = {}
        with ExitStack() as self._sessions:  # --engine flower: one Flower session serves the jobs (_flower_session)
            self._session: tuple[tuple, Any] | None = None
            for job in self.jobs:
                runs.append(self._run_job(job, central))
        return runs

    def _run_job(self, job: Job, central: dict[tuple, float]) -> RunResult:
        """Train ``job`` (or take its kept result) and write its results; ``central`` collects the centralised
        runs' accuracies by (seed, groups) for the federated runs' relative accuracy."""
        from hetbench.train.algorithms import make_algorithm, options_for
        from hetbench.train.checkpoint import remove_checkpoint
        from hetbench.train.reference import reference_failure
        from hetbench.train.results import write_result

        key = (job.seed, job.groups)
        algorithm = make_algorithm(job.algorithm, **options_for(job.algorithm, self.hyper))  # fresh state per run
        identity = self._identity(job, algorithm) if self.store is not None else None
        stored = self.store.get(identity) if self.store is not None and job.kept is None else None
        if job.kept is not None:
            doc = job.kept
        elif stored is not None:  # the run store holds it (hetbench reproduce): its results, not a new run
            if "diverged" in stored:  # a run that diverged is kept as such: it diverges again, untrained
                from hetbench.train.local import TrainingDiverged

                raise TrainingDiverged(stored["diverged"])
            doc = stored
            write_result(doc, job.path)
        else:
            if self.store is not None:
                self.store.check_budget()  # --budget spent: no new run starts
            started = time.perf_counter()
            try:
                doc = self._train(job, algorithm, central.get(key))
            except Exception as exc:
                from hetbench.train.local import TrainingDiverged

                if self.store is not None and isinstance(exc, TrainingDiverged):
                    self.store.put(identity, {"diverged": str(exc)}, time.perf_counter() - started)
                raise
            if job.algorithm == "central":
                failure = reference_failure(doc)
                if failure is not None:
                    doc["final"]["reference_failure"] = failure
            write_result(doc, job.path)
            if self.store is not None:
                self.store.put(identity, doc, time.perf_counter() - started)
            remove_checkpoint(job.checkpoint)  # the result is safe: the checkpoint has done its job
        if job.algorithm == "central":
            failure = doc["final"].get("reference_failure") or reference_failure(doc)
            if failure is None:
                central[key] = doc["final"]["accuracy"]
            else:  # a diverged reference: no relative accuracy, no default target against it
                print(f"hetbench: warning: the centralised run ({job.path.name}) is no reference: {failure}; "
                      "relative accuracy and the default target are not computed against it", file=sys.stderr)
        return RunResult(job.algorithm, job.seed, job.path, doc, job.groups.tag, job.kept is not None,
                         job.resume, job.afresh)

    def _identity(self, job: Job, algorithm) -> dict[str, Any]:
        """What a run store keys ``job`` by: the split (its fingerprint, and the sha256 of its decoded pixels:
        a renderer or decoder that changes an image changes the key), the algorithm and its hyper-parameters,
        every option that changes what the run computes, the seed, the group protocol's tag and the engine."""
        return _jsonable({"split": self.data.fingerprint, "pixels": self.data.content, "algorithm": job.algorithm,
                          "params": algorithm.params, "config": job.config.result_options(), "seed": job.seed,
                          "groups": job.groups.tag, "engine": self.engine})

    def _flower_session(self, first: Any, data: Any, per_round: int) -> Any:
        """The open Flower session for a job of ``data``'s clients: the last one when it serves as many clients
        with as many actors, else a new one (the last one closed first: one Ray instance at a time)."""
        from hetbench.flower.simulation import FlowerSession, default_actors

        actors = int(self.flower_actors) if self.flower_actors else default_actors(per_round)
        key = (data.num_clients, actors)
        if self._session is None or self._session[0] != key:
            if self._session is not None:
                self._session[1].__exit__(None, None, None)
                self._session = None
            session = FlowerSession(first, data.num_clients, actors)
            self._sessions.enter_context(session)
            self._session = (key, session)
        return self._session[1]

    def _announce(self) -> None:
        if self.quiet:
            return
        for label, jobs in (("skipped {n} existing result{s}", [j for j in self.jobs if j.kept is not None]),
                            ("resuming {n} run{s} from {its} checkpoint{s}", [j for j in self.jobs if j.resume]),
                            ("starting {n} run{s} afresh: no checkpoint of {them} (a run writes one with "
                             "--checkpoint-every K)", [j for j in self.jobs if j.afresh])):
            if jobs:
                head = label.format(n=len(jobs), s="" if len(jobs) == 1 else "s", its="its" if len(jobs) == 1 else "their",
                                    them="it" if len(jobs) == 1 else "them")
                shown = ", ".join(j.path.name for j in jobs[:8]) + (", ..." if len(jobs) > 8 else "")
                print(f"{head}: {shown}", file=sys.stderr)

    def _train(self, job: Job, algorithm, central_acc: float | None) -> dict:
        from hetbench.progress import progress_bar, train_status
        from hetbench.train.round_log import RoundLog
        from hetbench.train.simulation import run_training

        label = " ".join(x for x in (algorithm.name, job.groups.tag, f"s{job.seed}") if x)
        done = [0]
        latest: dict = {}  # the last training loss and the last evaluation's accuracy, for the bar's text

        def advance(r: int, summary: dict) -> None:
            latest.update((k, summary[k]) for k in ("train_loss", "accuracy") if summary.get(k) is not None)
            bar.update(advance=r - done[0], status=train_status(latest))  # a resumed run starts past round 1
            done[0] = r
            rounds.add(r, summary)

        with progress_bar(label, job.config.rounds, quiet=self.quiet, unit="round") as bar, \
                RoundLog(self.log, job.path, self.out, self.view(job.groups).group_names,
                         job.checkpoint if job.resume else None,
                         {"algorithm": job.algorithm, **job.config.result_options(), **algorithm.params}) as rounds:
            if self.engine == "flower":
                from hetbench.flower.job import FlowerJob
                from hetbench.train.algorithms import options_for

                flower_job = FlowerJob.make(self.split_path, job.algorithm, job.config,
                                            options_for(job.algorithm, self.hyper))
                flower_job.algorithm()  # central and bad hyper-parameters: refused before a session starts
                view = self.view(job.groups)
                session = self._flower_session(flower_job, view, job.config.clients_per_round)
                return session.train(flower_job, view, central_accuracy=central_acc, on_round=advance,
                                     workers=job.config.workers)
            checkpoint = job.checkpoint if (job.config.checkpoint_every or job.resume) else None
            return run_training(self.view(job.groups), algorithm, job.config, central_accuracy=central_acc,
                                on_round=advance, checkpoint=checkpoint, resume=job.resume)


def _tagged(path: Path, tag: str | None, seed: int) -> Path:
    """``path`` (``<stem>-s<seed>.json``) with the group tag before the seed; unchanged without one."""
    if tag is None:
        return path
    suffix = f"-s{seed}.json"
    assert path.name.endswith(suffix), path
    return path.with_name(f"{path.name[: -len(suffix)]}-{tag}{suffix}")


def _jsonable(value: Any) -> Any:
    """``value`` as it reads back from a results JSON (tuples become lists, numpy scalars numbers)."""
    return json.loads(json.dumps(value, default=lambda v: v.item() if hasattr(v, "item") else str(v)))
