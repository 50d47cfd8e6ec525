"""The Flower side of ``bench_trainer.py``: FedAvg on a hetbench split through Flower's Simulation Runtime.

It is a plain Flower app written the way Flower's own quickstarts write one (``flwr`` >= 1.21, the
Message API): a ``ClientApp`` with ``@app.train()`` (and ``@app.query()``), a ``ServerApp`` with
``@app.main()`` running a ``flwr.serverapp.strategy.FedAvg`` subclass, started with
``flwr.simulation.run_simulation(..., backend_name="ray")``: every ClientApp call runs in a Ray actor.

What it does, and why it matches ``hetbench train --algo fedavg`` step for step
----------------------------------------------------------------------------------
* Data (every process, once; cached per process, ``flower_data.py``): ``datasets.load_dataset(split)``;
  every image decoded once to uint8 (N, 1, H, W); float = u8 / 255 normalised with the per-channel mean
  and population std of the whole train split. Client k (0-based) is the k-th smallest ``client_id`` of
  the train split and owns the train rows with that ``client_id`` in row order. A Ray actor loads the
  train split the first time it serves a message; the ServerApp (driver process) loads train (for
  mean/std) and test.
* Node -> client: the simulation gives node ``i`` the node config ``partition-id = i``; partition id ``k``
  is client ``k``. Node ids are random, so the ServerApp first sends one ``query`` message to every node
  and each ClientApp answers with its partition id and its number of training rows (this also warms the
  actors' data caches). Part of Flower's wall time, as it would be for any id-based selection.
* Round r (1-based): :class:`SelectedFedAvg` ``configure_train`` sends the global model to exactly the
  nodes of ``hetbench.train.sampling.select_uniform(seed, r, num_clients, per_round)``.
* ClientApp train: load the global weights into the model, ``local-epochs`` epochs of plain SGD (no
  momentum, no weight decay) over the client's rows in shuffled mini-batches with mean cross-entropy, reply
  with the weights and ``num-examples = n_k``. The shuffle uses the same generator as hetbench
  (``numpy.random.default_rng([seed, round, 1, client])``), so both sides see the same batches.
* Aggregation: FedAvg, weights n_k / sum n_k, server lr 1, written in hetbench's order of operations
  (``theta - sum_k (n_k/n)(theta - theta_k)`` in float32, clients in increasing order) instead of Flower's
  ``sum_k (n_k/n) theta_k``: the same update, rounded the same way as hetbench, so that with equal torch
  thread counts the two runs produce bit-identical models (Flower's own form drifts by float rounding,
  ~1e-5 after 3 rounds, which early, unstable training can turn into a point or two of accuracy).
  No federated evaluation (``fraction_evaluate=0``).
* Global model: ``torch.manual_seed(seed)`` then ``build_model(model, channels, classes, image size)``
  (``--model``: ``lenet`` for 28x28 MNIST, ``digits-cnn`` for the 8x8 digits); evaluated on every
  test row by ``evaluate_fn`` in the ServerApp every ``eval_every`` rounds and after the last round.

Run on its own: ``python benchmarks/flower_fedavg.py --split SPLIT_DIR --model lenet --json out.json``. It prints one
line per evaluation; Flower's and Ray's logs go to stderr only with ``--verbose``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np

# Runs as a script: re-enter through the importable module, so Ray pickles the ClientApp's functions by
# reference and the per-process data cache (flower_data.py) survives between messages in an actor (a function of
# ``__main__`` would be pickled by value, with a fresh copy of the module globals every call).
if __name__ == "__main__":  # pragma: no cover
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import flower_fedavg

    sys.exit(flower_fedavg.main())

os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")  # silences a Ray FutureWarning

from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MessageType, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402
from flwr.serverapp.strategy import FedAvg  # noqa: E402

from flower_data import load_split, new_model  # noqa: E402  (benchmarks/ is on sys.path, see above)

_IMPORTED_AT = time.time()  # diagnostics: when this process imported the module


# ---- ClientApp --------------------------------------------------------------------------------------
client_app = ClientApp()
_MODELS: dict[str, "torch.nn.Module"] = {}


def _client_of(context: Context) -> int:
    return int(context.node_config["partition-id"])


@client_app.query()
def client_query(msg: Message, context: Context) -> Message:
    """Tell the ServerApp which client this node is (and warm this actor's data cache)."""
    called_at = time.time()
    cfg = msg.content["config"]
    data = load_split(str(cfg["split"]))
    k = _client_of(context)
    info = MetricRecord({
        "partition-id": k, "client-id": int(data.client_ids[k]), "num-examples": int(data.client_rows[k].size),
        # diagnostics: which actor, when it imported this module, got the call and replied
        "pid": os.getpid(), "imported-at": _IMPORTED_AT, "called-at": called_at, "replied-at": time.time(),
    })
    return Message(RecordDict({"info": info}), reply_to=msg)


@client_app.train()
def client_train(msg: Message, context: Context) -> Message:
    """One client update: the global weights, ``local-epochs`` shuffled epochs of plain SGD, the weights back."""
    import torch
    import torch.nn.functional as F

    cfg = msg.content["config"]
    torch.set_num_threads(int(cfg["threads"]))
    data = load_split(str(cfg["split"]))
    k = _client_of(context)
    rnd = int(cfg["server-round"])
    key = f"{cfg['split']}|{cfg['model']}"
    if key not in _MODELS:
        _MODELS[key] = new_model(data, str(cfg["model"]))
    model = _MODELS[key]
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=float(cfg["lr"]), momentum=0.0, weight_decay=0.0)

    rows = data.client_rows[k]
    bs = int(cfg["batch-size"])
    rng = np.random.default_rng([int(cfg["seed"]), rnd, 1, k])  # hetbench's shuffle stream (round, client)
    total, steps = 0.0, 0
    for _ in range(int(cfg["local-epochs"])):
        perm = rows[rng.permutation(rows.size)]
        for i in range(0, perm.size, bs):
            idx = torch.from_numpy(perm[i : i + bs])
            loss = F.cross_entropy(model(data.x_train.index_select(0, idx)), data.y_train.index_select(0, idx))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach())
            steps += 1
    metrics = MetricRecord({"num-examples": int(rows.size), "train-loss": total / max(steps, 1)})
    return Message(RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": metrics}), reply_to=msg)


# ---- ServerApp --------------------------------------------------------------------------------------
class SelectedFedAvg(FedAvg):
    """FedAvg whose round ``r`` trains exactly ``select_uniform(seed, r, num_clients, per_round)``."""

    def __init__(self, node_of_client: dict[int, int], seed: int, per_round: int, **kwargs) -> None:
        super().__init__(fraction_evaluate=0.0, **kwargs)
        self.node_of_client = node_of_client
        self.seed = seed
        self.per_round = per_round
        self.selected: dict[int, list[int]] = {}
        self.current: ArrayRecord | None = None  # the global model sent out this round
        self.round_started: dict[int, float] = {}

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid):
        from hetbench.train.sampling import select_uniform

        self.round_started[server_round] = time.perf_counter()
        clients = select_uniform(self.seed, server_round, len(self.node_of_client), self.per_round)
        self.selected[server_round] = [int(c) for c in clients]
        config["server-round"] = server_round
        self.current = arrays
        record = RecordDict({self.arrayrecord_key: arrays, self.configrecord_key: config})
        return [
            Message(content=record, dst_node_id=self.node_of_client[int(c)], message_type=MessageType.TRAIN)
            for c in clients
        ]

    def aggregate_train(self, server_round: int, replies):
        """FedAvg, theta <- theta - sum_k (n_k / n) (theta - theta_k), in hetbench's order of operations.

        The same update as Flower's ``aggregate_arrayrecords`` (sum_k (n_k / n) theta_k), written as
        hetbench writes it (float32, clients in increasing id order), so both sides round alike and,
        with the same torch thread count, produce bit-identical models.
        """
        import torch

        valid = list(replies)
        failed = [m for m in valid if m.has_error()]
        if failed:  # a missing client would change the result: stop rather than average the others
            raise RuntimeError(f"round {server_round}: {len(failed)} ClientApp(s) failed: {failed[0].error.reason}")
        if not valid:
            return None, None
        client_of_node = {n: c for c, n in self.node_of_client.items()}
        valid.sort(key=lambda m: client_of_node[m.metadata.src_node_id])
        current = self.current.to_torch_state_dict()
        keys = [k for k, v in current.items() if v.is_floating_point()]
        theta = torch.cat([current[k].reshape(-1).float() for k in keys])
        acc = torch.zeros_like(theta)
        total = 0.0
        for msg in valid:
            local = msg.content[self.arrayrecord_key].to_torch_state_dict()
            weight = float(msg.content["metrics"][self.weighted_by_key])
            acc.add_(theta - torch.cat([local[k].reshape(-1).float() for k in keys]), alpha=weight)
            total += weight
        new = theta - 1.0 * acc.div_(total)  # server learning rate 1
        out, start = dict(current), 0
        for k in keys:
            n = current[k].numel()
            out[k] = new[start : start + n].view_as(current[k]).to(current[k].dtype).clone()
            start += n
        metrics = self.train_metrics_aggr_fn([m.content for m in valid], self.weighted_by_key)
        return ArrayRecord(out), metrics


@dataclass
class RunSpec:
    split: str
    model: str = "lenet"
    rounds: int = 20
    per_round: int = 10
    local_epochs: int = 1
    batch_size: int = 10
    lr: float = 0.05
    seed: int = 0
    eval_every: int = 5
    cpus_per_client: float = 1.0
    threads: int = 1


_RUN: dict = {}  # the spec in, the results out (the ServerApp runs in a thread of this process)


server_app = ServerApp()


def _wait_for_nodes(grid: Grid, count: int, timeout: float = 120.0) -> list[int]:
    t0 = time.perf_counter()
    while len(nodes := list(grid.get_node_ids())) < count:
        if time.perf_counter() - t0 > timeout:
            raise RuntimeError(f"only {len(nodes)} of {count} simulated nodes came up")
        time.sleep(0.05)
    return nodes


@server_app.main()
def server_main(grid: Grid, context: Context) -> None:
    import torch
    import torch.nn.functional as F

    spec: RunSpec = _RUN["spec"]
    out = _RUN["out"]
    t = out["timeline"]
    t["server_main"] = time.perf_counter()
    data = load_split(spec.split, with_test=True)
    num_clients = len(data.client_rows)
    t["server_data_loaded"] = time.perf_counter()

    # node id -> client: ask every node for its partition id (node ids are random in a simulation)
    nodes = _wait_for_nodes(grid, num_clients)
    query = RecordDict({"config": ConfigRecord({"split": spec.split})})
    msgs = [Message(content=query, dst_node_id=n, message_type=MessageType.QUERY) for n in nodes]
    replies = list(grid.send_and_receive(msgs))
    bad = [m for m in replies if m.has_error()]
    if bad:
        raise RuntimeError(f"{len(bad)} node(s) failed the query: {bad[0].error.reason}")
    node_of_client = {int(m.content["info"]["partition-id"]): m.metadata.src_node_id for m in replies}
    if sorted(node_of_client) != list(range(num_clients)):
        raise RuntimeError("the nodes' partition ids are not 0..num_clients-1")
    t["handshake_done"] = time.perf_counter()
    replied = sorted(float(m.content["info"]["replied-at"]) - _RUN["t_start_wall"] for m in replies)
    out["handshake_detail"] = sorted(
        [round(float(m.content["info"][k]) - _RUN["t_start_wall"], 3)
         for k in ("imported-at", "called-at", "replied-at")]
        for m in replies
    )[:4]
    out["actors"] = len({int(m.content["info"]["pid"]) for m in replies})
    out["handshake_replies_s"] = [round(replied[0], 3), round(replied[-1], 3)]  # first, last (from the call)

    torch.manual_seed(spec.seed)
    model = new_model(data, spec.model)
    initial = ArrayRecord(model.state_dict())

    evals: list[dict] = out["evaluations"]

    def evaluate_fn(server_round: int, arrays: ArrayRecord) -> MetricRecord | None:
        if server_round == 0 or (server_round % spec.eval_every and server_round != spec.rounds):
            return None
        t0 = time.perf_counter()
        model.load_state_dict(arrays.to_torch_state_dict())
        model.eval()
        with torch.no_grad():
            correct, loss = 0, 0.0
            for s in range(0, data.y_test.numel(), 1024):
                logits = model(data.x_test[s : s + 1024])
                y = data.y_test[s : s + 1024]
                loss += float(F.cross_entropy(logits, y, reduction="sum"))
                correct += int((logits.argmax(1) == y).sum())
        n = int(data.y_test.numel())
        rec = {"round": server_round, "accuracy": 100.0 * correct / n, "loss": loss / n,
               "elapsed_s": time.perf_counter() - _RUN["t_start"], "eval_s": time.perf_counter() - t0}
        evals.append(rec)
        if not _RUN.get("quiet"):
            print(f"  flower round {server_round:3d}: accuracy {rec['accuracy']:6.2f} %, loss {rec['loss']:.4f}",
                  flush=True)
        return MetricRecord({"accuracy": rec["accuracy"], "loss": rec["loss"]})

    strategy = SelectedFedAvg(node_of_client, seed=spec.seed, per_round=spec.per_round,
                              min_available_nodes=num_clients)
    train_config = ConfigRecord({
        "split": spec.split, "lr": spec.lr, "batch-size": spec.batch_size, "local-epochs": spec.local_epochs,
        "seed": spec.seed, "threads": spec.threads, "model": spec.model,
    })
    strategy.start(grid=grid, initial_arrays=initial, num_rounds=spec.rounds, train_config=train_config,
                   evaluate_fn=evaluate_fn)
    t["rounds_done"] = time.perf_counter()
    out["selected"] = {str(r): c for r, c in strategy.selected.items()}
    out["round_started"] = {str(r): s - _RUN["t_start"] for r, s in strategy.round_started.items()}


# ---- entry point ------------------------------------------------------------------------------------
def quiet_flower(verbose: bool) -> None:
    """Flower logs every round at INFO and warns that run_simulation is deprecated; keep errors only."""
    level = logging.DEBUG if verbose else logging.ERROR
    logging.getLogger("flwr").setLevel(level)
    if not verbose:
        warnings.filterwarnings("ignore")


def run_fedavg(spec: RunSpec, verbose: bool = False, quiet: bool = False) -> dict:
    """Run the simulation; return the evaluations, the per-round clients and a timeline (seconds from
    the call)."""
    import datasets
    from flwr.simulation import run_simulation

    datasets.disable_progress_bars()
    quiet_flower(verbose)
    num_clients = len(load_split(spec.split).client_rows)
    out: dict = {"evaluations": [], "timeline": {}}
    _RUN.clear()
    _RUN.update(spec=spec, out=out, quiet=quiet, t_start=time.perf_counter(), t_start_wall=time.time())
    backend_config = {
        "client_resources": {"num_cpus": spec.cpus_per_client, "num_gpus": 0.0},
        "init_args": {
            "num_cpus": os.cpu_count() or 1,
            "logging_level": logging.INFO if verbose else logging.ERROR,
            "log_to_driver": bool(verbose),
        },
    }
    run_simulation(server_app=server_app, client_app=client_app, num_supernodes=num_clients,
                   backend_name="ray", backend_config=backend_config, verbose_logging=verbose)
    t0 = _RUN["t_start"]
    out["timeline"] = {k: v - t0 for k, v in out["timeline"].items()}
    out["simulation_s"] = time.perf_counter() - t0
    if not out["evaluations"]:
        raise RuntimeError("the Flower simulation ended without evaluating the global model (see --verbose)")
    out["final"] = out["evaluations"][-1]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", required=True, help="a split folder built by 'hetbench partition'")
    ap.add_argument("--model", default="lenet", help="hetbench model name (default lenet; digits-cnn for 8x8 digits)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--per-round", type=int, default=10, help="clients per round (default 10)")
    ap.add_argument("--local-epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval-every", type=int, default=5)
    ap.add_argument("--cpus-per-client", type=float, default=1.0, help="Ray num_cpus per ClientApp (default 1)")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--quiet", action="store_true", help="no per-evaluation lines")
    ap.add_argument("--verbose", action="store_true", help="show Flower's and Ray's logs")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    spec = RunSpec(split=args.split, model=args.model, rounds=args.rounds, per_round=args.per_round, local_epochs=args.local_epochs,
                   batch_size=args.batch_size, lr=args.lr, seed=args.seed, eval_every=args.eval_every,
                   cpus_per_client=args.cpus_per_client, threads=max(1, int(args.cpus_per_client)))
    out = run_fedavg(spec, verbose=args.verbose, quiet=args.quiet)
    out["spec"] = spec.__dict__
    out["main_s"] = time.perf_counter() - t0
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    if not args.quiet:
        print(f"flower: final accuracy {out['final']['accuracy']:.2f} % after {spec.rounds} rounds, "
              f"simulation {out['simulation_s']:.1f} s")
    return 0
