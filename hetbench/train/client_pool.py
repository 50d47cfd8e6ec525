"""Parallel client updates and evaluation for one simulated run (:class:`ClientPool`).

On the CPU, clients of a round train in worker threads, each on its own copy of the working model with one
intra-op torch thread, so an update does not depend on which worker ran it or on how many there are;
evaluation deals fixed test batches to the workers the same way. With ``--client-exec lockstep`` (the
default on a GPU) each worker trains chunks of clients together as one batched computation
(:mod:`hetbench.train.lockstep`); sequentially on a GPU, the clients train one after the other on the one
model. Concurrent runs on the machine share its cores (:class:`hetbench.cores.RunRegistration`).
"""

from __future__ import annotations

import math
import queue
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

import numpy as np
import torch

from hetbench.cores import RunRegistration, available_cores, share_of_cores
from hetbench.train.algorithms import Algorithm, RunState, TrainConfig
from hetbench.train.algorithms.base import StackedUpdates
from hetbench.train.device import check_amp
from hetbench.train.evaluate import predict_rows
from hetbench.train.flat import FlatModel
from hetbench.train.heap_trim import HeapTrim
from hetbench.train.local import Workspace
from hetbench.train.client_exec import choose_client_exec, lockstep_chunk, lockstep_refusal
from hetbench.train.lockstep import LockstepGroup
from hetbench.train.models import build_model
from hetbench.train.local_plan import activation_bytes, stacked_chunk, stacked_refusal
from hetbench.train.stacked import StackedClients
from hetbench.train.sampling import draw_numbers

EVAL_BATCH = 256  # test rows per forward pass (fewer for large images: eval_rows)
EVAL_VALUES = 256 * 3 * 32 * 32  # pixel values per forward pass at most: 256 rows up to 3x32x32 images


def eval_rows(values_per_image: int) -> int:
    """Test rows per forward pass: :data:`EVAL_BATCH`, halved until a pass holds at most :data:`EVAL_VALUES`
    pixel values (a power of two, so every split of the test rows at multiples of :data:`EVAL_BATCH` makes
    the same passes).

    Examples
    --------
    >>> eval_rows(1 * 28 * 28), eval_rows(3 * 64 * 64), eval_rows(3 * 224 * 224)
    (256, 64, 4)
    """
    rows = EVAL_BATCH
    while rows > 1 and rows * values_per_image > EVAL_VALUES:
        rows //= 2
    return rows


def default_workers() -> int:
    """Client worker threads by default: one per core this process may run on (affinity and cgroup quota)."""
    return available_cores()


def _stochastic(model: torch.nn.Module) -> bool:
    """Whether the model draws from torch's global generator in training (dropout)."""
    return any(isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules())


class ClientPool:
    """Runs a round's client updates, in parallel threads when that keeps results identical.

    Each worker thread trains on its own copy of the model (same flat layout) with one intra-op torch
    thread, so a client's update is the same whichever worker runs it and however many workers there
    are; updates come back in client order, so aggregation is order-stable too. At most ``workers``
    updates exist at a time, whatever the number of clients per round. A run with one client per round
    (centralised), with dropout (torch's global generator) or on a GPU trains in the main thread instead
    (in lockstep on a GPU: the main thread computes each chunk's batched passes while its clients' own code
    runs in threads of the chunk's group).
    Evaluation splits the test rows over the workers the same way. ``config.amp`` turns on bf16 autocast
    in every workspace (refused off CUDA). After each round and each evaluation the image pages read are
    released (:meth:`~hetbench.train.data.FederatedData.release_pages`), so resident memory does not grow
    with the split.
    """

    def __init__(self, run: RunState, model_name: str, algorithm: Algorithm, config: TrainConfig) -> None:
        self.run = run
        self.algorithm = algorithm
        data = run.data
        device = run.main_ws.device
        check_amp(device, config.amp)
        self.on_cpu = device.type == "cpu"
        per_round = 1 if algorithm.name == "central" else min(config.clients_per_round, data.num_clients)
        wanted = config.workers or default_workers()
        self.total_threads = torch.get_num_threads()
        self.stochastic = _stochastic(run.main_ws.model)
        refusal = lockstep_refusal(algorithm, per_round, self.stochastic)
        self.client_exec, self.exec_reason = choose_client_exec(config.client_exec, refusal, device)
        lockstep = self.client_exec == "lockstep"
        # in lockstep, a round's clients train as one stacked computation where the algorithm and model allow
        # (hetbench.train.stacked), else in a thread group that batches their gradient requests
        self.stacked_reason = stacked_refusal(algorithm, run.main_ws.model) if lockstep else None
        self.stacked = lockstep and self.stacked_reason is None
        if self.stacked:
            sizes = [rows.size for rows in data.client_rows]
            step_images = min(config.batch_size, int(np.median(sizes))) if sizes else config.batch_size
            self.chunk = stacked_chunk(device, per_round, max(1, step_images),
                                       activation_bytes(run.main_ws.model, data.in_channels, data.image_size))
        else:
            self.chunk = lockstep_chunk(device, per_round) if lockstep else 1
        serial = per_round <= 1 or self.stochastic or not self.on_cpu
        units = -(-per_round // self.chunk)  # lockstep: chunks of clients; sequential: clients
        self.workers = 1 if serial else max(1, min(int(wanted), units))
        # one intra-op thread per client update keeps updates identical for any number of workers. The
        # centralised run and models with dropout train serially, on config.threads intra-op threads (1 by
        # default: their bits depend on the thread count, so it may not follow the machine's load); GPU runs
        # train serially on torch's setting (the GPU does the arithmetic)
        if not serial:
            self.client_threads = 1
        elif self.on_cpu:
            self.client_threads = int(config.threads or 1)
        else:
            self.client_threads = int(config.threads or self.total_threads)
        self.cores = available_cores()
        self.adaptive = config.workers is None and self.workers > 1
        self.concurrency: list[list[int]] = []  # [first round, live runs, workers in use] at every change
        run.main_ws.amp = bool(config.amp)
        self.spaces = [run.main_ws]
        for _ in range(self.workers - 1):
            m = build_model(model_name, data.in_channels, data.num_classes, data.image_size, config.norm)
            self.spaces.append(Workspace(data, m, device, amp=bool(config.amp)))
        self.free: queue.SimpleQueue = queue.SimpleQueue()
        for w in self.spaces:
            self.free.put(w)
        self.executor = ThreadPoolExecutor(self.workers) if self.workers > 1 else None
        self.groups: list[LockstepGroup | StackedClients] = []
        if lockstep:
            def make_model() -> torch.nn.Module:
                return build_model(model_name, data.in_channels, data.num_classes, data.image_size, config.norm)

            self.groups = [StackedClients(data, make_model, device, amp=bool(config.amp)) if self.stacked
                           else LockstepGroup(data, make_model, self.chunk, device, amp=bool(config.amp))
                           for _ in range(self.workers)]
        self.free_groups: queue.SimpleQueue = queue.SimpleQueue()
        for g in self.groups:
            self.free_groups.put(g)
        self.trim = HeapTrim()
        # concurrent runs share the cores: with the default --workers, each round runs at most this run's
        # share of the cores in parallel (hetbench.cores.RunRegistration); which worker trains a client never
        # changes its update, so this follows the load freely. Registered last, once nothing can fail.
        self.registration = RunRegistration().__enter__()
        # the main thread runs on the clients' thread count until close(): its server steps are
        # element-wise and small next to the clients' work, and with every core busy training clients,
        # an OpenMP team of the main thread would only spin-wait against them (about 10% of a round of
        # small clients on 2 cores); the count is the same for any number of workers, so results are too
        torch.set_num_threads(self.client_threads)

    def _one(self, round_index: int, item: tuple[int, int]):
        ws = self.free.get()
        try:
            return self._update(ws, round_index, *item)
        finally:
            self.free.put(ws)

    def _chunk(self, round_index: int, items: list[tuple[int, int]]) -> list:
        """One chunk of clients trained in lockstep on a free group (slots take the items in order)."""
        group = self.free_groups.get()
        try:
            if self.stacked:
                return self._stacked(group, round_index, items)
            return group.run(lambda ws, i: self._update(ws, round_index, *items[i]), list(range(len(items))))
        finally:
            self.free_groups.put(group)

    def _stacked(self, engine: StackedClients, round_index: int, items: list[tuple[int, int]]) -> list:
        """A chunk's updates trained as one stacked computation: each client's local plan (its batches, drawn
        from its own random streams) is read first, then every step of every client runs at once."""
        run, algorithm = self.run, self.algorithm
        ws = self.free.get()  # the workspace the plans and updates are read under (run.rng reads its draw)
        try:
            run.bind(ws)
            plans = []
            for client, draw in items:
                ws.round, ws.client, ws.draw = round_index, client, int(draw)
                plans.append(algorithm.local_plan(run, round_index, client))
            initial = None
            if plans[0].loss_rows is not None:  # the clients' losses at the global model, for the chunk at once
                initial = engine.initial_losses(plans, run.global_params, run.global_buffers)
                for j, (client, draw) in enumerate(items):
                    ws.round, ws.client, ws.draw = round_index, client, int(draw)
                    ws.check_finite(initial[j], "initial loss")
                    plans[j] = algorithm.adjust_plan(run, round_index, client, plans[j], initial[j])
            updates = algorithm.train_stacked(run, round_index, [client for client, _ in items], plans, engine,
                                              initial)
            # a NaN or inf anywhere in a row makes its sum non-finite (as _update checks one client): one read of
            # the rows, where isfinite().all() wrote and read a mask as large (18 of 68 ms a round, 50 clients)
            finite = torch.isfinite(updates.params.sum(dim=1)).tolist()
            for j, (client, draw) in enumerate(items):  # Python floats and bools: no tensor work per client
                ws.round, ws.client, ws.draw = round_index, client, int(draw)
                ws.check_finite(updates.losses[j])
                if not finite[j]:
                    ws.check_finite(float("nan"), "model")
            return [updates]
        finally:
            ws.client, ws.draw = -1, 0
            run.bind(None)
            self.free.put(ws)

    def _update(self, ws: Workspace, round_index: int, client: int, draw: int = 0):
        """``client``'s update for ``round_index`` on workspace ``ws`` (bound to the calling thread);
        ``draw`` > 0 for a client selected more than once in the round (FedVC's virtual clients): each
        draw is an update of its own, with its own random streams (:meth:`RunState.rng`)."""
        try:
            self.run.bind(ws)
            ws.round, ws.client, ws.draw = round_index, client, int(draw)
            if self.stochastic:  # dropout draws from torch's global generator: reseed it per client update
                seed = int(self.run.rng(round_index, client, 4).integers(2**62))
                torch.default_generator.manual_seed(seed)
                if ws.device.type == "cuda":  # dropout on a GPU draws from that device's generator
                    with torch.cuda.device(ws.device):
                        torch.cuda.manual_seed(seed)
            update = self.algorithm.client_update(self.run, round_index, client)
            if not math.isfinite(float(update.params.sum())):  # a NaN or inf anywhere makes the sum non-finite
                ws.check_finite(float("nan"), "model")
            return update
        finally:
            ws.client, ws.draw = -1, 0
            self.run.bind(None)

    def updates(self, round_index: int, clients: np.ndarray, draws: Sequence[int] | None = None):
        """Yield the clients' updates in client order, one :class:`ClientUpdate` each (:meth:`round_updates`,
        a stacked chunk split into its clients' updates)."""
        for update in self.round_updates(round_index, clients, draws):
            if isinstance(update, StackedUpdates):
                yield from update.split()
            else:
                yield update

    def round_updates(self, round_index: int, clients: np.ndarray, draws: Sequence[int] | None = None):
        """Yield the clients' updates in client order: a :class:`ClientUpdate` per client, or a
        :class:`StackedUpdates` per chunk trained as one stacked computation (the round loop folds it into the
        round at once, :meth:`Algorithm.accumulate_stacked`). The work goes in units: one client each, or in
        lockstep chunks of :attr:`chunk` clients trained together; units are dealt to the workers, at most
        :meth:`active_workers` in flight, and their updates come back in order.

        A client listed twice (a selection with replacement) trains twice, as draws 0 and 1, each from
        its own random streams; ``draws`` gives the draw numbers explicitly (a Flower node, which sees one
        client of the round at a time), else they are counted along ``clients``."""
        order = [int(k) for k in clients]
        items = list(zip(order, draw_numbers(order) if draws is None else [int(d) for d in draws], strict=True))
        if self.groups:
            units = [items[i : i + self.chunk] for i in range(0, len(items), self.chunk)]
            work = self._chunk
        else:
            units = items
            work = lambda r, item: [self._one(r, item)]  # noqa: E731
        try:
            if self.executor is None:
                for unit in units:
                    yield from work(round_index, unit)
                    self.trim()
                return
            active = self.active_workers(round_index)
            pending: deque = deque()
            todo = iter(units)
            for unit in todo:
                pending.append(self.executor.submit(work, round_index, unit))
                if len(pending) >= active:
                    break
            while pending:
                done = pending.popleft().result()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append(self.executor.submit(work, round_index, nxt))
                yield from done
                self.trim()
        finally:
            self.run.data.release_pages()

    def active_workers(self, round_index: int) -> int:
        """Workers this round may keep busy: all of them with an explicit ``--workers``, else this run's
        share of the cores among the training runs live on the machine (:func:`~hetbench.cores.share_of_cores`),
        re-read every round; changes are kept in :attr:`concurrency` for the results' ``timing``."""
        if not self.adaptive:
            return self.workers
        runs = self.registration.live_runs()
        active = min(self.workers, share_of_cores(self.cores, runs))
        if not self.concurrency or self.concurrency[-1][1:] != [runs, active]:
            self.concurrency.append([int(round_index), runs, active])
        return active

    def execution(self) -> dict[str, object]:
        """How client updates run, for the results: ``clients`` (``sequential`` | ``lockstep``), ``reason``,
        and in lockstep the clients per group."""
        out: dict[str, object] = {"clients": self.client_exec, "reason": self.exec_reason}
        if self.groups:
            out["clients_per_group"] = self.chunk
            out["batched"] = "stacked" if self.stacked else f"client threads: {self.stacked_reason}"
        return out

    def lockstep_counts(self) -> dict[str, int]:
        """Batched passes the lockstep groups computed in this process and the client steps they covered
        (none when sequential); they go into the results' ``timing``, since a resumed run counts only its own."""
        if not self.groups:
            return {}
        return {"batched_passes": sum(g.batched_calls for g in self.groups),
                "client_steps": sum(g.client_steps for g in self.groups)}

    def predict(self, rows: np.ndarray | None = None, params: torch.Tensor | None = None,
                buffers: torch.Tensor | None = None) -> tuple[np.ndarray, float]:
        """One model on test rows: (correct per row, mean cross-entropy).

        ``rows``: test row indices (default: every test row, in order); ``params`` / ``buffers``: flat vectors
        of the model (default: ``run.global_params`` / ``run.global_buffers``). The rows go in fixed batches of
        ``EVAL_BATCH`` dealt out to the workers, each on the thread count client updates use, and the batch
        losses are added up in row order, so the numbers do not depend on the number of workers either. Large
        images go through in smaller passes (:func:`eval_rows`), so memory stays bounded by a few passes per
        worker."""
        run = self.run
        params = run.global_params if params is None else params
        buffers = run.global_buffers if buffers is None else buffers
        rows = np.arange(run.data.num_test) if rows is None else np.asarray(rows, dtype=np.int64)
        (correct,), total = self.predict_parts([(rows, lambda flat: flat.load(params, buffers))])
        return correct, total / max(rows.size, 1)

    def predict_parts(self, parts: Sequence[tuple[np.ndarray, Callable[[FlatModel], None]]]
                      ) -> tuple[list[np.ndarray], float]:
        """Several models, each on its own test rows: ``parts`` holds (test row indices, ``load``) pairs, where
        ``load(flat)`` puts that part's model into a workspace's :class:`~hetbench.train.flat.FlatModel` (FedBN:
        the global model with one client's normalisation layers). Returns (correct per row, one array per
        part, and the summed cross-entropy over all of them).

        Each part's rows go in fixed batches of ``EVAL_BATCH``; the batches of all parts, in part order, are
        dealt to the workers in equal contiguous shares, and a worker loads a part's model when its share
        reaches that part, so at most one model per worker exists at a time however many parts there are.
        Batches and the order the losses are added in do not depend on the number of workers."""
        data = self.run.data
        rows_of = [np.asarray(rows, dtype=np.int64) for rows, _ in parts]
        units = [(i, a) for i, rows in enumerate(rows_of) for a in range(0, rows.size, EVAL_BATCH)]
        per_pass = eval_rows(int(np.prod(data.x_test.shape[1:])))
        share = -(-len(units) // self.workers) if units else 0
        shares = [units[i * share : (i + 1) * share] for i in range(self.workers) if i * share < len(units)]

        def work(ws: Workspace, todo: list[tuple[int, int]]) -> list[tuple[np.ndarray, list[float]]]:
            out, loaded = [], None
            for i, a in todo:
                if loaded != i:
                    parts[i][1](ws.flat)
                    loaded = i
                out.append(predict_rows(ws.model, data, ws.mean, ws.std, rows_of[i][a : a + EVAL_BATCH], per_pass,
                                        ws.amp))
            return out

        self.trim()
        try:
            if self.executor is None:
                got = [r for todo in shares for r in work(self.spaces[0], todo)]
            else:
                futures = [self.executor.submit(work, ws, todo) for ws, todo in zip(self.spaces, shares)]
                got = [r for f in futures for r in f.result()]
        finally:
            data.release_pages()
            self.trim()
        total = 0.0
        pieces: list[list[np.ndarray]] = [[] for _ in parts]
        for (i, _), (correct, losses) in zip(units, got):
            pieces[i].append(correct)
            for loss in losses:
                total += loss
        return [np.concatenate(p) if p else np.zeros(0, dtype=bool) for p in pieces], total

    def close(self) -> None:
        """Stop the worker threads and give the main thread back its thread count."""
        if self.executor is not None:
            self.executor.shutdown(wait=True)
        for group in self.groups:
            group.close()
        self.registration.__exit__(None, None, None)
        torch.set_num_threads(self.total_threads)
