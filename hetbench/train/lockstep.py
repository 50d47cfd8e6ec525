"""Lockstep clients: several client updates of a round trained as one batched computation.

Each client update runs its algorithm's own ``client_update`` code, unchanged, in a thread of its own, on a
*slot*: a :class:`~hetbench.train.local.Workspace` whose flat parameter and buffer vectors are rows of two
stacked ``(slots, size)`` tensors. Whenever a client's :func:`~hetbench.train.local.local_sgd` needs the
loss and gradient of a mini-batch it hands the batch to the group and waits; once every client still
training is waiting (or done), the group computes all of them together with ``torch.func``:
``vmap(grad_and_value(loss))`` over the stacked parameters, each client with its own batch, its own
normalisation statistics (BatchNorm running statistics are per-slot buffers, updated in place under
``vmap``) and its own loss arguments (FedIR's class weights). Everything else in a step -- weight decay,
FedProx's proximal term, SCAFFOLD's correction, momentum, pruning masks, SWA averages, HeteroSwitch's
random ISP -- stays in the client's own code on its own row, so every algorithm whose client update is
gradient steps runs in lockstep with no code of its own. Every algorithm of hetbench declares its client
update as a local plan and trains as one stacked computation instead, with no thread per client
(:mod:`hetbench.train.stacked`); this group runs the rest: an algorithm (a plugin) whose client update is
code of its own with no plan, or a BatchNorm layer the stacked form cannot mask.

Clients that take fewer steps simply stop asking; clients whose batches have different sizes at the same
step (the short last batch of an epoch) or different loss functions are computed in separate batched
calls, so no batch is padded and batch statistics are exact. One step of ``K`` clients is then one forward
and backward pass over ``K`` stacked models instead of ``K`` small ones: the per-operation dispatch cost is
paid once. That is what a GPU needs, where one client's step is far too small to fill the device. On a
CPU the arithmetic, not the dispatch, bounds even small steps, and the batched kernels (``vmap`` turns a
convolution into a grouped one and a linear layer into ``bmm``) run no faster per client than the separate
ones: :func:`hetbench.train.client_exec.choose_client_exec` picks the mode.

Determinism: the client threads never compute a gradient themselves, and the group serves requests in
slot order once all are in, so a run gives the same bits every time; the slots a round's clients take are
fixed by their order (chunks of :func:`~hetbench.train.client_exec.lockstep_chunk` clients), not by the number of workers. Lockstep
and sequential execution differ only in the order of floating-point sums inside the batched kernels.

References
----------
.. [1] R. Frostig et al. / JAX authors, ``jax.vmap`` (automatic vectorisation), as used by JAX-based FL
   simulators to train a round's clients together; PyTorch's ``torch.func`` (functorch) provides the same
   transforms (``vmap``, ``grad``, ``functional_call``).

Examples
--------
>>> from hetbench.train.algorithms import TrainConfig, make_algorithm
>>> from hetbench.train.data import load_federated
>>> from hetbench.train.session import TrainingSession
>>> from hetbench.sweep import default_split
>>> data = load_federated(default_split(quiet=True), quiet=True)
>>> session = TrainingSession.start(data, make_algorithm("scaffold"), TrainConfig(workers=1, client_exec="lockstep"))
>>> session.pool.client_exec
'lockstep'
>>> clients = session.algorithm.select(session.run, 1)
>>> updates = list(session.pool.updates(1, clients))
>>> [u.client for u in updates] == [int(k) for k in clients], updates[0].steps > 0
(True, True)
>>> session.close()
"""

from __future__ import annotations

import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import torch
from torch import nn

from hetbench.train.device import autocast
from hetbench.train.local import Workspace

class LockstepAborted(Exception):
    """Raised in a client thread when another client of its group failed: the round stops."""


def loss_key(loss_fn: Callable[..., torch.Tensor]) -> Any:
    """What makes two clients' loss functions the same function: the function itself, or for a
    ``functools.partial`` its function and bound arguments (DapperFL's ``gamma`` and ``form``).

    Examples
    --------
    >>> import functools, operator
    >>> loss_key(functools.partial(operator.add, 1)) == loss_key(functools.partial(operator.add, 1))
    True
    """
    if isinstance(loss_fn, functools.partial):
        return (loss_fn.func, loss_fn.args, tuple(sorted(loss_fn.keywords.items())))
    return loss_fn


class LossCall(nn.Module):
    """Calls ``fn(base, *args)`` as its forward, so ``functional_call`` can run any loss (``model.features``
    included) on the base model with substituted parameters."""

    def __init__(self, base: nn.Module) -> None:
        super().__init__()
        self.base = base

    def forward(self, fn: Callable[..., torch.Tensor], *args: torch.Tensor) -> torch.Tensor:
        return fn(self.base, *args)


class LockstepGroup:
    """Slots that train clients together: stacked parameters, one batched pass per step.

    Parameters
    ----------
    data : FederatedData
        The run's data (every slot reads it).
    make_model : callable
        ``make_model()`` builds a fresh model of the run's architecture (one per slot and one base for
        ``functional_call``; their initial values are overwritten when a client loads the global model).
    capacity : int
        Slots: the most clients trained together.
    device : torch.device
        Where the stacked tensors live.
    amp : bool
        bf16 autocast of the batched forward pass (CUDA only).
    """

    def __init__(self, data, make_model: Callable[[], nn.Module], capacity: int, device: torch.device,
                 amp: bool = False) -> None:
        self.device = torch.device(device)
        self.amp = bool(amp)
        self.base = make_model().to(self.device)
        self.base.train()
        self._call = LossCall(self.base)
        self.names = [n for n, _ in self.base.named_parameters()]
        self.buffer_names = [n for n, b in self.base.named_buffers() if b.is_floating_point()]
        #: other buffers (BatchNorm's num_batches_tracked): given to every client as copies of the base's, whose
        #: in-place updates are dropped (they only matter for a cumulative average, momentum=None, which no
        #: hetbench model uses)
        self.other_buffers = {n: b for n, b in self.base.named_buffers() if not b.is_floating_point()}
        params = list(self.base.parameters())
        buffers = [b for b in self.base.buffers() if b.is_floating_point()]
        self.shapes = [tuple(p.shape) for p in params]
        self.buffer_shapes = [tuple(b.shape) for b in buffers]
        self.offsets = _offsets(params)
        self.buffer_offsets = _offsets(buffers)
        n_params = self.offsets[-1][1] if self.offsets else 0
        n_buffers = self.buffer_offsets[-1][1] if self.buffer_offsets else 0
        self.params = torch.zeros(capacity, n_params, dtype=torch.float32, device=self.device)
        # a model without float buffers keeps an empty vector on the CPU, as FlatModel does, so a client's
        # (empty) buffers add to the run's global ones on any device
        self.buffers = torch.zeros(capacity, n_buffers, dtype=torch.float32,
                                   device=self.device if n_buffers else torch.device("cpu"))
        self.spaces: list[Workspace] = []
        for k in range(capacity):
            ws = Workspace(data, make_model(), self.device, amp=amp, params=self.params[k], buffers=self.buffers[k])
            ws.lockstep, ws.slot = self, k
            self.spaces.append(ws)
        self.capacity = capacity
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)  # the group thread waits here for requests and ends
        self._events = [threading.Event() for _ in range(capacity)]  # a slot waits on its own for its reply
        # one client's own code runs at a time (between its gradient requests), so a group keeps one core busy,
        # as a sequential worker does: the run's share of the cores holds in lockstep too
        self._turn = threading.Semaphore(1)
        self._requests: dict[int, tuple] = {}
        self._replies: dict[int, tuple[float, list[torch.Tensor]]] = {}
        self._abort = False
        self._threads = ThreadPoolExecutor(capacity, thread_name_prefix="hetbench-lockstep")
        self.batched_calls = 0  # batched passes computed (for the results' timing block)
        self.client_steps = 0  # client steps they covered

    # -- client side -----------------------------------------------------------------------------
    def gradient(self, ws: Workspace, x: torch.Tensor, y: torch.Tensor, loss_fn: Callable[..., torch.Tensor],
                 loss_args: tuple[torch.Tensor, ...]) -> tuple[float, list[torch.Tensor]]:
        """The loss value and the per-parameter gradients of slot ``ws``'s model on batch (``x``, ``y``);
        blocks until the group has computed the step of every slot still training."""
        slot = ws.slot
        event = self._events[slot]
        with self._lock:
            if self._abort:
                raise LockstepAborted
            self._requests[slot] = (x, y, loss_fn, tuple(loss_args))
            self._ready.notify()
        self._turn.release()
        event.wait()
        event.clear()
        self._turn.acquire()
        with self._lock:
            if self._abort:
                raise LockstepAborted
            return self._replies.pop(slot)

    # -- group side ------------------------------------------------------------------------------
    def run(self, task: Callable[[Workspace, int], Any], clients: Sequence[int]) -> list[Any]:
        """``task(ws, client)`` for each client on slots 0, 1, ...; their gradients computed together.

        Returns the tasks' results in client order. If a task raises, the others stop at their next step
        and the error of the first failing client in client order is raised.
        """
        clients = [int(k) for k in clients]
        if len(clients) > self.capacity:
            raise ValueError(f"{len(clients)} clients for {self.capacity} lockstep slots")
        self._abort = False
        self._requests.clear()
        self._replies.clear()
        for event in self._events:
            event.clear()
        done: dict[int, tuple[bool, Any]] = {}

        def one(slot: int, client: int) -> None:
            self._turn.acquire()
            try:
                result = (True, task(self.spaces[slot], client))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                result = (False, exc)
            finally:
                self._turn.release()
            with self._lock:
                done[slot] = result
                self._ready.notify()

        for slot, client in enumerate(clients):
            self._threads.submit(one, slot, client)
        live = set(range(len(clients)))
        try:
            while live:
                with self._lock:
                    self._ready.wait_for(lambda: all(s in self._requests or s in done for s in live))
                    live -= set(done)
                    if any(not ok for ok, _ in done.values()):
                        break
                    requests = {s: self._requests.pop(s) for s in sorted(live)}
                if not requests:
                    continue
                replies = self._compute(requests)
                with self._lock:
                    self._replies.update(replies)
                for s in replies:
                    self._events[s].set()
        except BaseException:
            self._stop(live, done)
            raise
        if any(not ok for ok, _ in done.values()) or live:
            self._stop(live, done)
            failures = [done[s][1] for s in sorted(done) if not done[s][0]
                        and not isinstance(done[s][1], LockstepAborted)]
            raise failures[0] if failures else RuntimeError("lockstep clients stopped")
        return [done[s][1] for s in range(len(clients))]

    def _stop(self, live: set[int], done: dict) -> None:
        """Make every client still waiting raise :class:`LockstepAborted` and wait until all have ended."""
        with self._lock:
            self._abort = True
        for event in self._events:
            event.set()
        with self._lock:
            self._ready.wait_for(lambda: all(s in done for s in live))

    def _compute(self, requests: dict[int, tuple]) -> dict[int, tuple[float, list[torch.Tensor]]]:
        """Loss and gradient of every request, one batched call per (loss function, shapes) group."""
        groups: dict[tuple, list[int]] = {}
        for slot, (x, y, loss_fn, args) in requests.items():
            key = (loss_key(loss_fn), tuple(x.shape), tuple(y.shape), tuple(tuple(a.shape) for a in args))
            groups.setdefault(key, []).append(slot)
        replies: dict[int, tuple[float, list[torch.Tensor]]] = {}
        for slots in groups.values():
            x, y, loss_fn, args = requests[slots[0]]
            xs = torch.stack([requests[s][0] for s in slots])
            ys = torch.stack([requests[s][1] for s in slots])
            arg_stacks = tuple(torch.stack([requests[s][3][i] for s in slots]) for i in range(len(args)))
            values, grads = self._batched(slots, loss_fn, xs, ys, arg_stacks)
            for j, s in enumerate(slots):
                replies[s] = (values[j], grads[j])
            self.batched_calls += 1
            self.client_steps += len(slots)
        return replies

    def _batched(self, slots: list[int], loss_fn: Callable[..., torch.Tensor], xs: torch.Tensor, ys: torch.Tensor,
                 args: tuple[torch.Tensor, ...]) -> tuple[list[float], list[list[torch.Tensor]]]:
        """Loss values and gradients of the slots ``slots`` on their stacked batches: (one value per slot, per
        slot the list of its parameter gradients, in ``model.parameters()`` order)."""
        from torch.func import functional_call, grad_and_value, vmap

        k = len(slots)
        consecutive = slots == list(range(slots[0], slots[0] + k))  # the usual case: views, no gather
        index = torch.tensor(slots, dtype=torch.long, device=self.device)
        params = self.params[slots[0] : slots[0] + k] if consecutive else self.params.index_select(0, index)
        buffers = self.buffers[slots[0] : slots[0] + k] if consecutive or not self.buffer_names \
            else self.buffers.index_select(0, index)
        named = {n: params[:, a:b].view(k, *shape) for n, (a, b), shape in zip(self.names, self.offsets, self.shapes)}
        # separate tensors, not views of ``buffers``: under vmap and grad, in-place updates of a view do not
        # reach its base; the updated statistics are copied back below
        named_buffers = {n: buffers[:, a:b].reshape(k, *shape).clone()
                         for n, (a, b), shape in zip(self.buffer_names, self.buffer_offsets, self.buffer_shapes)}
        named_buffers.update({n: b.expand(k, *b.shape).clone() for n, b in self.other_buffers.items()})
        call = self._call

        def loss(p: dict, b: dict, x: torch.Tensor, y: torch.Tensor, *a: torch.Tensor) -> torch.Tensor:
            state = {f"base.{n}": t for n, t in p.items()}
            state.update({f"base.{n}": t for n, t in b.items()})
            return functional_call(call, state, (loss_fn, x, y, *a))

        step = vmap(grad_and_value(loss), in_dims=(0, 0, 0, 0) + (0,) * len(args), randomness="error")
        with autocast(self.device, self.amp):
            grads, values = step(named, named_buffers, xs, ys, *args)
        if self.buffer_names:  # BatchNorm's running statistics, updated in place on the gathered copies
            updated = torch.cat([named_buffers[n].reshape(k, -1) for n in self.buffer_names], dim=1)
            self.buffers.index_copy_(0, index, updated)
        # per parameter, the client's slice of the batched gradient (a view: no concatenation into rows)
        per_param = [grads[n] if grads[n].dtype == torch.float32 else grads[n].float() for n in self.names]
        return [float(v) for v in values.float().tolist()], [[g[j] for g in per_param] for j in range(k)]

    def close(self) -> None:
        """Stop the client threads."""
        self._threads.shutdown(wait=True)


def _offsets(tensors: list[torch.Tensor]) -> list[tuple[int, int]]:
    out, start = [], 0
    for t in tensors:
        out.append((start, start + t.numel()))
        start += t.numel()
    return out

